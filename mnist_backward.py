"""Course step 2: train the 784-500-10 network from data/mnist_train.tfrecords.

Run after mnist_generateds.py. Batches come from tf.compat.v1 queue runners
(string_input_producer -> TFRecordReader -> parse -> shuffle_batch, 2
threads) started under a Coordinator around the step loop. The course's
schedule: exponentially decayed learning rate (x0.99 per epoch, staircase),
L2 regularization, moving averages of all trainable variables (which
mnist_test.py and mnist_app.py restore), a checkpoint every 1,000 steps.
A run resumes from the latest checkpoint in the model folder and trains until
global_step reaches --steps. Ctrl-C or SIGTERM saves a checkpoint and exits.
On a terminal a progress bar shows the step, rate, time left, loss and
learning rate; TensorBoard summaries go to <model folder>/train
(`tensorboard --logdir model` shows them beside mnist_test.py's eval/).

With --job_name ps|worker, --task_index, --ps_hosts and --worker_hosts the
same graph trains on TensorFlow's distributed runtime instead, one process
per task (see mnist_distributed.py; mnist_cluster.py starts such a cluster
on one machine).
"""
import argparse
import glob
import os
import shutil
import signal
import sys
import time

from tf_compat import tf
import mnist_checkpoint
import mnist_forward
import mnist_generateds
from mnist_idx import DataError

BATCH_SIZE = 200
LEARNING_RATE_BASE = 0.1
LEARNING_RATE_DECAY = 0.99
REGULARIZER = 0.0001
STEPS = 50000
MOVING_AVERAGE_DECAY = 0.99
MODEL_SAVE_PATH = "./model/"
MODEL_NAME = mnist_checkpoint.MODEL_NAME  # "mnist_model": checkpoints are <model folder>/mnist_model-<global_step>
SAVE_EVERY = 1000  # steps between checkpoints
KEEP_CHECKPOINTS = 5  # newest checkpoints kept (tf.train.Saver's max_to_keep)
PRINT_EVERY = 1000  # steps between the course's loss lines
STEP_TIMEOUT_MS = 60000  # a step waiting this long for a batch means the input is stuck
SUMMARY_EVERY = 100  # steps between TensorBoard summaries; every step would slow training
TRAIN_LOG_DIR = "train"  # TensorBoard run, inside the model folder
STARTUP_TIMEOUT_SECS = 300  # distributed: wait this long for the parameter servers and the chief


def build_graph(batch_size, train_examples, data_dir, pipeline, train_files=None, sync_replicas=None, layout=None,
                inputs=None, net=mnist_forward, learning_rate_base=LEARNING_RATE_BASE):
    """Everything training runs: input pipeline, network, loss, optimizer, moving averages.

    train_examples (int) is the real record count: one epoch is
    train_examples / batch_size steps, the learning rate's decay period.
    Returns a dict of the tensors and ops the loop uses, among them
    `summary`, the merged TensorBoard scalars of the batch just trained. In
    the "course" pipeline the network reads placeholders x, y_ fed from
    fetched batches, as the course did; in "fast" it reads the batch tensors
    directly.
    train_files: list of TFRecord files read instead of data_dir's (a
    distributed worker's own shards).
    sync_replicas: None, or (replicas_to_aggregate, total_num_replicas) to
    wrap the optimizer in tf.compat.v1.train.SyncReplicasOptimizer; the dict
    then also holds "optimizer" (for its chief queue runner and tokens).
    layout: the training files' RecordLayout (train_files_and_examples), for
    the fast pipeline's fixed-length reads; None reads with TFRecordReader.
    inputs: (img_batch, label_batch) tensors to train on instead of the
    queue-runner pipeline's (bench/bench.py's tf.data row), with pipeline
    "fast"; the summaries then lack shuffle_queue_fill.
    net: the network's forward module (mnist_forward, or mnist_lenet5_forward
    with its learning_rate_base, the decayed rate's start).
    """
    if inputs is None:
        img_batch, label_batch = mnist_generateds.get_tfrecord(batch_size, isTrain=True, data_dir=data_dir,
                                                               pipeline=pipeline, files=train_files, layout=layout)
    else:
        img_batch, label_batch = inputs
    if pipeline == "course":
        x = tf.placeholder(tf.float32, [None, net.INPUT_NODE])
        y_ = tf.placeholder(tf.float32, [None, net.OUTPUT_NODE])
    else:
        x, y_ = img_batch, label_batch
    y = net.forward(x, REGULARIZER, train=True)
    global_step = tf.train.get_or_create_global_step()

    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(logits=y, labels=tf.argmax(y_, 1))
    cem = tf.reduce_mean(ce)
    regularization = tf.add_n(tf.get_collection(mnist_forward.LOSSES_COLLECTION))
    loss = cem + regularization

    learning_rate = tf.train.exponential_decay(
        learning_rate_base, global_step, train_examples / batch_size, LEARNING_RATE_DECAY, staircase=True)
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    ema = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    if sync_replicas is None:
        train_step = optimizer.minimize(loss, global_step=global_step)
        # Each average is updated where its variable lives: on a cluster, on
        # its parameter server, so the weights need not travel to a worker.
        ema_ops = []
        for var in tf.trainable_variables():
            with tf.device(var.device):
                ema_ops.append(ema.apply([var]))
        with tf.control_dependencies([train_step, *ema_ops]):
            train_op = tf.no_op(name="train")
    else:
        # A worker's train op only pushes its gradients and waits for a token;
        # the chief's queue runner applies their average and then the moving
        # averages, so both advance once per aggregated step, as on one machine.
        replicas_to_aggregate, total_num_replicas = sync_replicas
        optimizer = tf.train.SyncReplicasOptimizer(
            optimizer, replicas_to_aggregate=replicas_to_aggregate, total_num_replicas=total_num_replicas,
            variable_averages=ema, variables_to_average=tf.trainable_variables())
        train_op = optimizer.minimize(loss, global_step=global_step)
    with tf.control_dependencies([train_op]):
        step_after = global_step.read_value()  # the step number this update produced

    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))
    scalars = [
        tf.summary.scalar("loss", loss),
        tf.summary.scalar("cross_entropy", cem),
        tf.summary.scalar("regularization_loss", regularization),
        tf.summary.scalar("learning_rate", learning_rate),
        tf.summary.scalar("accuracy", accuracy),
    ]
    if inputs is None:
        queue = shuffle_queue()
        # shuffle_batch's own summary measures only the part above min_after_dequeue; this is the whole queue.
        queue_fill = tf.cast(queue.size(), tf.float32) / queue.queue_ref.op.get_attr("capacity")
        scalars.append(tf.summary.scalar("shuffle_queue_fill", queue_fill))
    summary = tf.summary.merge(scalars)
    return dict(x=x, y_=y_, img_batch=img_batch, label_batch=label_batch, loss=loss,
                learning_rate=learning_rate, global_step=global_step, train_op=train_op,
                step_after=step_after, summary=summary, optimizer=optimizer)


def shuffle_queue():
    """The RandomShuffleQueue that tf.compat.v1.train.shuffle_batch made in this graph.

    Found through the graph's queue runners; its size() op and `capacity`
    attribute give the fill fraction that TensorBoard shows.
    """
    for runner in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS):
        if runner.queue.queue_ref.op.type == "RandomShuffleQueueV2":
            return runner.queue
    raise ValueError("no shuffle_batch queue in this graph")


def scalar_summary(tag, value):
    """A tf.Summary holding one scalar measured outside the graph (e.g. examples/s)."""
    return tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=float(value))])


class Interrupted(Exception):
    """Training stopped by SIGINT/SIGTERM after saving a checkpoint.

    signum: the signal's number; str(): where the checkpoint was saved.
    """

    def __init__(self, signum, message):
        super().__init__(message)
        self.signum = signum


class StopFlag:
    """Turns SIGINT/SIGTERM into a flag the step loop checks, so it can save first.

    A second Ctrl-C while the flag is set raises KeyboardInterrupt as usual.
    """

    def __init__(self):
        self.signal = None
        self._previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signal.Signals(signum)

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def prepare_model_dir(model_dir, log=print):
    """Create model_dir if needed and clear what killed saves left; DataError if unusable."""
    try:
        os.makedirs(model_dir, exist_ok=True)
        remove_unfinished_checkpoints(model_dir, log)
    except OSError as e:
        raise DataError(f"{model_dir}: cannot use model folder ({e.strerror})") from None
    if not os.access(model_dir, os.W_OK):
        raise DataError(f"{model_dir}: model folder is not writable; choose another with --model-dir")


def train_files_and_examples(data_dir):
    """({file: record count}, description for messages, RecordLayout or None) of the training data.

    data_dir: a folder, file or pattern (see mnist_generateds.tfrecord_files);
    every file is checked whole (mnist_generateds.scan_tfrecord). The
    layout (mnist_generateds.record_layout) tells the fast pipeline whether
    it may read fixed-length frames. Raises DataError on missing or bad data.
    """
    files = mnist_generateds.tfrecord_files(data_dir)
    scans = {f: mnist_generateds.scan_tfrecord(f) for f in files}
    where = files[0] if len(files) == 1 else f"{len(files)} files {files[0]} ... {files[-1]}"
    layout = mnist_generateds.record_layout({f: lengths for f, (_, lengths) in scans.items()})
    return {f: count for f, (count, _) in scans.items()}, where, layout


def resume_checkpoint(model_dir, log=print):
    """The checkpoint training resumes from, read whole: (prefix, {name: array}), or (None, None).

    The newest checkpoint files in model_dir (mnist_checkpoint.latest), even
    when the `checkpoint` index file is missing, damaged or names a path
    that is gone (a moved or copied folder); `log` says so when the index
    did not lead to them. Raises DataError naming the checkpoint when it is
    damaged, with the newest intact one in the hint: training never starts
    from scratch over checkpoint files, nor saves over them.
    """
    prefix = mnist_checkpoint.latest(model_dir)
    if prefix is None:
        return None, None
    try:
        stored = mnist_checkpoint.read_checkpoint(prefix)
    except mnist_checkpoint.CheckpointDamaged as e:
        raise DataError(f"{e}; {mnist_checkpoint.damaged_hint(model_dir, prefix)}") from None
    indexed = mnist_checkpoint.indexed_prefix(model_dir)
    if indexed is None or not os.path.exists(indexed + ".index"):
        log(f"note: {os.path.join(model_dir, mnist_checkpoint.INDEX_FILE)} is missing or names files that are "
            f"not there; resuming from the newest checkpoint files, {prefix}")
    elif indexed != prefix:
        log(f"note: {prefix} is newer than {indexed}, the newest in the `checkpoint` index file; resuming from it")
    return prefix, stored


def restore_or_init(sess, model_dir, log=print, net=mnist_forward):
    """Initialise the variables, then restore the newest checkpoint in model_dir if any.

    Returns the restored checkpoint prefix or None. Raises DataError when the
    checkpoint is damaged, holds another network than `net`
    (mnist_forward.check_network) or does not fit this graph.
    """
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    ckpt, stored = resume_checkpoint(model_dir, log)
    if ckpt is None:
        return None
    mnist_forward.check_network(ckpt, stored, net, "TRAIN_SCRIPT")
    try:
        mnist_checkpoint.restore(sess, {v.op.name: v for v in tf.global_variables()}, ckpt, stored)
    except DataError as e:  # a checkpoint of another graph: it was read whole, so nothing else is left
        raise DataError(f"{e}; use another --model-dir") from None
    return ckpt


def remove_unfinished_checkpoints(model_dir, log=print):
    """Delete what a killed Saver.save left in model_dir: `<prefix>_temp` folders and unfinished saves.

    mnist_checkpoint.save writes a checkpoint's .meta, then tf.train.Saver
    writes into such a folder, renames the .index and .data files into place
    and only then updates the `checkpoint` index file; a kill on the way
    leaves files that no reader uses (see mnist_checkpoint.unfinished_saves)
    and that this run would otherwise have to save over.
    """
    for name in os.listdir(model_dir):
        path = os.path.join(model_dir, name)
        if name.startswith(MODEL_NAME + "-") and name.endswith("_temp") and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
    for prefix in mnist_checkpoint.unfinished_saves(model_dir):
        for path in glob.glob(glob.escape(prefix) + ".*"):
            os.remove(path)
        log(f"removed {prefix}.*, a save that did not finish (not in the `checkpoint` index file, and no .index or no .meta)")


def backward(steps=STEPS, batch_size=BATCH_SIZE, data_dir=mnist_generateds.data_path,
             model_dir=MODEL_SAVE_PATH, pipeline="fast", save_every=SAVE_EVERY,
             keep=KEEP_CHECKPOINTS, log=print, quiet=False, summary_every=SUMMARY_EVERY,
             net=mnist_forward, learning_rate_base=LEARNING_RATE_BASE):
    """Train until global_step reaches `steps`; returns the final global_step.

    Reads data_dir/mnist_train.tfrecords (or its shards; data_dir may also
    be a file or a pattern, see mnist_generateds.tfrecord_files), writes checkpoints
    model_dir/mnist_model-<global_step> every `save_every` steps (keeping the
    newest `keep`), at the end and on SIGINT/SIGTERM, after which it raises
    Interrupted. Writes TensorBoard summaries to model_dir/train every
    `summary_every` steps: loss, cross_entropy, regularization_loss,
    learning_rate, accuracy (training batch, training weights),
    shuffle_queue_fill (size / capacity of shuffle_batch's queue) and
    examples_per_sec (wall clock since the previous summary). A progress bar
    runs on a terminal unless `quiet` (see mnist_generateds.progress_bar).
    Raises DataError on bad input (missing or corrupted TFRecord file,
    unwritable model folder, damaged checkpoint or one of another graph, a
    failing reader thread). Builds its graph in a new tf.Graph, so that it can
    be called again in the same process (a notebook cell run twice).
    net: the network's forward module; mnist_lenet5_backward.backward trains
    mnist_lenet5_forward's with its own learning_rate_base and defaults.
    """
    with tf.Graph().as_default():
        return _backward(steps, batch_size, data_dir, model_dir, pipeline, save_every, keep, log, quiet,
                         summary_every, net, learning_rate_base)


def _backward(steps, batch_size, data_dir, model_dir, pipeline, save_every, keep, log, quiet, summary_every,
              net, learning_rate_base):
    counts, train_path, layout = train_files_and_examples(data_dir)
    train_examples = sum(counts.values())
    prepare_model_dir(model_dir, log)
    graph = build_graph(batch_size, train_examples, data_dir, pipeline, list(counts), layout=layout,
                        net=net, learning_rate_base=learning_rate_base)
    saver = mnist_checkpoint.saver(keep)
    written = set()  # steps of the checkpoints this run saved: the only ones it may replace or rotate away
    run_options = tf.RunOptions(timeout_in_ms=STEP_TIMEOUT_MS)
    fetches = [graph["train_op"], graph["loss"], graph["step_after"], graph["learning_rate"]]

    with tf.Session() as sess, StopFlag() as stop:
        restored = restore_or_init(sess, model_dir, log, net)
        step = saved_step = first_step = sess.run(graph["global_step"])
        log(f"training on {train_examples} records from {train_path}"
            + (f", resuming from {restored}" if restored else "") + f"; target global_step {steps}")
        if step >= steps:
            log(f"global_step {step} already reaches the target; raise --steps to train further")
        # The graph goes into the first run's events only; a resumed run has the same one.
        writer = tf.summary.FileWriter(os.path.join(model_dir, TRAIN_LOG_DIR), None if restored else sess.graph)
        bar = mnist_generateds.progress_bar(quiet, total=steps, initial=step, desc="training", unit="step")
        meter = None  # (time, step) of the previous summary, for examples/s
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while step < steps and not stop.signal and not coord.should_stop():
                summarize = (step + 1) % summary_every == 0
                step_fetches = fetches + [graph["summary"]] if summarize else fetches
                if pipeline == "course":
                    xs, ys = sess.run([graph["img_batch"], graph["label_batch"]], options=run_options)
                    out = sess.run(step_fetches, feed_dict={graph["x"]: xs, graph["y_"]: ys})
                else:
                    out = sess.run(step_fetches, options=run_options)
                _, loss_value, new_step, learning_rate = out[:4]
                bar.update(new_step - step)
                step = new_step
                bar.set_postfix(loss=f"{loss_value:.3g}", lr=f"{learning_rate:.3g}", refresh=False)
                if summarize:
                    writer.add_summary(out[4], step)
                    now = time.monotonic()
                    if meter is not None:
                        rate = (step - meter[1]) * batch_size / (now - meter[0])
                        writer.add_summary(scalar_summary("examples_per_sec", rate), step)
                    meter = (now, step)
                elif meter is None:
                    meter = (time.monotonic(), step)  # after the first step: queue warm-up is not a rate
                if step == 1 or step % PRINT_EVERY == 0:
                    with bar.external_write_mode():
                        log("After %d training steps, loss on training batch is %g." % (step, loss_value))
                if step % save_every == 0:
                    mnist_checkpoint.save(sess, saver, model_dir, step, written)
                    saved_step = step
        except (tf.errors.OutOfRangeError, tf.errors.CancelledError) as e:
            coord.request_stop(e)  # the reader's own error, if any, is re-raised by join below
        except tf.errors.DeadlineExceededError:
            raise DataError(f"{train_path}: no training batch arrived within {STEP_TIMEOUT_MS // 1000} s") from None
        finally:
            bar.close()
            writer.close()
            mnist_generateds.stop_queue_runners(coord, threads, train_path)
        path = mnist_checkpoint.prefix_of(model_dir, step)
        if step != saved_step or restored is None:
            path = mnist_checkpoint.save(sess, saver, model_dir, step, written)
    if stop.signal:
        raise Interrupted(stop.signal, f"{stop.signal.name}: stopped at step {step}; checkpoint saved to {path}")
    if step > first_step:  # the course's lines come only every PRINT_EVERY steps: say where the run ended
        log(f"done at step {step}; checkpoint saved to {path}")
    return step


def build_parser(net=mnist_forward, batch_size=BATCH_SIZE, learning_rate_base=LEARNING_RATE_BASE,
                 model_dir=MODEL_SAVE_PATH, doc=__doc__):
    """The command line's argparse parser; building it imports no TensorFlow (fast --help and flag errors).

    Also mnist_lenet5_backward.py's, with its network and defaults: net,
    learning_rate_base (see build_graph); batch_size, model_dir (the
    defaults of --batch-size and --model-dir); doc, the script's docstring,
    whose first paragraph is the --help description.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0], allow_abbrev=False,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.set_defaults(net=net, learning_rate_base=learning_rate_base)  # for a cluster task too
    parser.add_argument("--steps", type=int, default=STEPS, help="train until global_step reaches this")
    parser.add_argument("--batch-size", type=int, default=batch_size, help="examples per training step")
    parser.add_argument("--data-dir", default=mnist_generateds.data_path,
                        help="folder holding mnist_train.tfrecords or its shards, or a file pattern such as "
                             "'data/mnist_train-*'")
    parser.add_argument("--model-dir", default=model_dir, help="checkpoint folder (read to resume, written)")
    parser.add_argument("--pipeline", choices=("fast", "course"), default="fast",
                        help="fast: many records per reader op, batches wired into the network; "
                             "course: one record per op, batches fetched and fed back by feed_dict")
    parser.add_argument("--save-every", type=int, default=SAVE_EVERY, help="steps between checkpoints")
    parser.add_argument("--keep", type=int, default=KEEP_CHECKPOINTS, help="newest checkpoints to keep")
    parser.add_argument("--summary-every", type=int, default=SUMMARY_EVERY,
                        help=f"steps between TensorBoard summaries (in <model-dir>/{TRAIN_LOG_DIR})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (there is none when output is not a terminal)")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    cluster = parser.add_argument_group("distributed training (TensorFlow's gRPC runtime; see mnist_cluster.py)")
    cluster.add_argument("--job_name", "--job-name", choices=("ps", "worker"),
                         help="this process's job: parameter server or worker (none: train on this machine alone)")
    cluster.add_argument("--task_index", "--task-index", type=int, default=0,
                         help="this process's index in its job; worker 0 is the chief")
    cluster.add_argument("--ps_hosts", "--ps-hosts", help="parameter servers, HOST:PORT,HOST:PORT,...")
    cluster.add_argument("--worker_hosts", "--worker-hosts", help="workers, HOST:PORT,HOST:PORT,...")
    cluster.add_argument("--sync_replicas", "--sync-replicas", action="store_true",
                         help="aggregate one gradient per worker per update (SyncReplicasOptimizer) "
                              "instead of asynchronous updates")
    cluster.add_argument("--startup-timeout", type=float, default=STARTUP_TIMEOUT_SECS,
                         help="seconds to wait for the parameter servers and the chief before giving up")
    return parser


def main(argv=None, **network):
    """The command line of mnist_backward.py; with `network` (build_parser's keywords), of another network's
    trainer (mnist_lenet5_backward.py). Returns the exit status."""
    parser = build_parser(**network)
    args = parser.parse_args(argv)
    if args.steps < 0 or min(args.batch_size, args.save_every, args.keep, args.summary_every) < 1:
        parser.error("--steps must be >= 0; --batch-size, --save-every, --keep and --summary-every >= 1")
    if args.job_name or args.ps_hosts or args.worker_hosts:
        import mnist_distributed  # only a cluster task needs it; it imports this module for the graph
        return mnist_distributed.main(args, parser)
    return exit_status(lambda: backward(args.steps, args.batch_size, args.data_dir, args.model_dir, args.pipeline,
                                        args.save_every, args.keep, quiet=args.quiet,
                                        summary_every=args.summary_every, net=args.net,
                                        learning_rate_base=args.learning_rate_base))


def exit_status(train, errors=(DataError,), who=""):
    """Run train() and map its end to the process's exit status, printing one line for a failure.

    0 when it returns; 1 with `error: ...` for one of `errors`; 128 + signal
    number when stopped by SIGINT/SIGTERM (Interrupted, or Ctrl-C before
    training started). `who` prefixes the Ctrl-C line (a cluster task's name).
    """
    try:
        train()
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Interrupted as e:
        print(e, file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        print(f"{who}interrupted before training started; nothing saved", file=sys.stderr)
        return 128 + signal.SIGINT
    return 0


if __name__ == "__main__":
    sys.exit(main())
