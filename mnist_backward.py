"""Course step 2: train the 784-500-10 network from data/mnist_train.tfrecords.

Run after mnist_generateds.py. Batches come from tf.compat.v1 queue runners
(string_input_producer -> TFRecordReader -> parse -> shuffle_batch, 2
threads) started under a Coordinator around the step loop; with --pipeline
tfdata, tf.data gives the same batches (docs/migrating.md). The course's
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
per task (see mnistkit/distributed.py; mnist_cluster.py starts such a cluster
on one machine).

Reading order: the constants, then backward(): build_graph() (get_tfrecord ->
forward -> loss, learning rate, moving averages), the Coordinator around
mnistkit.training.run_steps, the last checkpoint.
"""
import sys

from tf_compat import tf
import mnist_forward
import mnist_generateds
from mnistkit import checkpoints, cli, inputs, training
from mnistkit.errors import Interrupted, exit_status

BATCH_SIZE = 200
LEARNING_RATE_BASE = 0.1
LEARNING_RATE_DECAY = 0.99
REGULARIZER = 0.0001
STEPS = 50000
MOVING_AVERAGE_DECAY = 0.99
MODEL_SAVE_PATH = "./model/"
MODEL_NAME = checkpoints.MODEL_NAME  # "mnist_model": checkpoints are <model folder>/mnist_model-<global_step>
SAVE_EVERY = 1000  # steps between checkpoints
KEEP_CHECKPOINTS = 5  # newest checkpoints of this run kept (tf.train.Saver's max_to_keep)
PRINT_EVERY = 1000  # steps between the course's loss lines
SUMMARY_EVERY = 100  # steps between TensorBoard summaries; every step would slow training
PIPELINES = ("fast", "course", "tfdata")  # --pipeline: the input pipeline (mnist_generateds.get_tfrecord, tf.data)
STARTUP_TIMEOUT_SECS = 300  # distributed: wait this long for the parameter servers and the chief


def backward(steps=STEPS, batch_size=BATCH_SIZE, data_dir=mnist_generateds.data_path,
             model_dir=MODEL_SAVE_PATH, pipeline="fast", save_every=SAVE_EVERY,
             keep=KEEP_CHECKPOINTS, log=print, quiet=False, summary_every=SUMMARY_EVERY,
             net=mnist_forward, learning_rate_base=LEARNING_RATE_BASE):
    """Train until global_step reaches `steps`; returns the final global_step.

    Reads data_dir/mnist_train.tfrecords (or its shards; data_dir may also
    be a file or a pattern, see mnistkit.records.tfrecord_files), writes
    checkpoints model_dir/mnist_model-<global_step> every `save_every` steps
    (keeping the newest `keep` of this run), at the end and on
    SIGINT/SIGTERM, after which it raises mnistkit.errors.Interrupted.
    Writes TensorBoard summaries to model_dir/train every `summary_every`
    steps: loss, cross_entropy, regularization_loss, learning_rate, accuracy
    (training batch, training weights), shuffle_queue_fill (size / capacity
    of shuffle_batch's queue; not with pipeline "tfdata", which has no
    queue) and examples_per_sec. A progress bar runs on a terminal unless
    `quiet`. Raises DataError on bad input (missing or
    corrupted TFRecord file, unwritable model folder, damaged checkpoint or
    one of another graph, a failing reader thread). Builds its graph in a
    new tf.Graph, so that it can be called again in the same process (a
    notebook cell run twice). net: the network's forward module;
    mnist_lenet5_backward.backward trains mnist_lenet5_forward's with its
    own learning_rate_base and defaults.
    """
    return train(settings_for(net, steps, batch_size, learning_rate_base, data_dir, model_dir, pipeline=pipeline,
                              save_every=save_every, keep=keep, summary_every=summary_every, quiet=quiet, log=log))


def settings_for(net, steps, batch_size, learning_rate_base, data_dir, model_dir, **bookkeeping):
    """The training.Settings of a run with this file's schedule (decay, L2, moving averages, loss lines)."""
    return training.Settings(net=net, steps=steps, batch_size=batch_size, learning_rate_base=learning_rate_base,
                             learning_rate_decay=LEARNING_RATE_DECAY, regularizer=REGULARIZER,
                             moving_average_decay=MOVING_AVERAGE_DECAY, data_dir=data_dir, model_dir=model_dir,
                             print_every=PRINT_EVERY, **bookkeeping)


def build_graph(settings, data, sync_replicas=None):
    """The course's graph: get_tfrecord -> forward -> loss, schedule, moving averages; a training.TrainGraph.

    With settings.pipeline "tfdata" the batches come from
    inputs.tfdata_batches instead of get_tfrecord; the rest of the graph,
    and so the checkpoint's variables, are the same. data:
    training.training_data's TrainingData (the files, their record count,
    the layout the fast pipeline reads). sync_replicas: see
    training.train_ops (a distributed run's SyncReplicasOptimizer).
    """
    if settings.pipeline == "tfdata":  # the queue runners' successor (docs/migrating.md)
        img_batch, label_batch = inputs.tfdata_batches(data.files, settings.batch_size)
    else:
        img_batch, label_batch = mnist_generateds.get_tfrecord(settings.batch_size, isTrain=True,
                                                               pipeline=settings.pipeline, files=data.files,
                                                               layout=data.layout)
    x, y_ = training.network_input(img_batch, label_batch, settings)
    y = settings.net.forward(x, settings.regularizer, train=True)
    return training.train_ops(x, y_, y, (img_batch, label_batch), settings, data.examples, sync_replicas,
                              queue_fill=settings.pipeline != "tfdata")


def train(settings):
    """backward() for a training.Settings: one machine, queue runners under a Coordinator; the final global_step.

    With pipeline "tfdata" there are no queue runners to start (the
    Coordinator then has no thread), and a reading error fails the step
    itself: it is turned into the same one-line DataError
    (inputs.pipeline_failed) as a reader thread's.
    """
    log = settings.log
    data = training.training_data(settings.data_dir)  # every file checked whole before the graph is built
    checkpoints.prepare_model_dir(settings.model_dir, log)
    with tf.Graph().as_default():
        graph = build_graph(settings, data)
        role = training.Role(saver=checkpoints.saver(settings.keep), data=data)
        with tf.Session() as sess, training.StopFlag() as stop:
            restored = checkpoints.restore_or_init(sess, settings.model_dir, settings.net.NETWORK, log)
            first_step = int(sess.run(graph.global_step))
            training.check_schedule(settings, data.examples, first_step if restored else None)
            progress = training.Progress(step=first_step, saved_step=first_step)
            log(f"training on {data.examples} records from {data.where}"
                + (f", resuming from {restored}" if restored else "") + f"; target global_step {settings.steps}"
                + f"; running on {training.device()}")
            if first_step >= settings.steps:
                log(f"global_step {first_step} already reaches the target; raise --steps to train further")
            # The graph goes into the first run's events only; a resumed run has the same one.
            role.writer = training.summary_writer(settings.model_dir, None if restored else sess.graph)
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                try:
                    training.run_steps(sess, graph, settings, role, stop, coord, progress)
                except tf.errors.OpError as e:
                    if inputs.iterator_failed(e):  # tf.data reads in the step itself, not in a reader thread
                        raise inputs.pipeline_failed(data.where, e) from None
                    if not isinstance(e, (tf.errors.OutOfRangeError, tf.errors.CancelledError)):
                        raise
                    coord.request_stop(e)  # a closed queue: the reader's own error, if any, is re-raised by join
                finally:
                    training.close_writer(role.writer, log)
                    inputs.stop_queue_runners(coord, threads, data.where)
            except Exception as e:  # a stuck or failing input, a full disk: one line, the steps saved if possible
                raise training.failed(e, sess, graph, settings, role, progress, data.where) from None
            step = training.save_last(sess, graph, settings, role, progress, restored)
    path = checkpoints.prefix_of(settings.model_dir, progress.saved_step)
    if stop.signal:
        raise Interrupted(stop.signal, f"{stop.signal.name}: stopped at step {step}; checkpoint saved to {path}")
    if step > first_step:  # the course's lines come only every PRINT_EVERY steps: say where the run ended
        log(f"done at step {step}; checkpoint saved to {path}")
    note = training.older_checkpoints_note(settings, role)
    if note:
        log(note)
    return step


def build_parser(net=mnist_forward, batch_size=BATCH_SIZE, learning_rate_base=LEARNING_RATE_BASE,
                 model_dir=MODEL_SAVE_PATH, doc=__doc__):
    """The command line's argparse parser; building it imports no TensorFlow (fast --help and flag errors).

    Also mnist_lenet5_backward.py's, with its network and defaults: net,
    learning_rate_base (see build_graph); batch_size, model_dir (the
    defaults of --batch-size and --model-dir); doc, the script's docstring,
    whose first paragraph is the --help description.
    """
    parser = cli.new_parser(doc)
    parser.set_defaults(net=net, learning_rate_base=learning_rate_base)  # for a cluster task too
    parser.add_argument("--steps", type=int, default=STEPS, help="train until global_step reaches this")
    parser.add_argument("--batch-size", type=int, default=batch_size, help="examples per training step")
    parser.add_argument("--data-dir", type=cli.path, default=mnist_generateds.data_path,
                        help="folder holding mnist_train.tfrecords or its shards, or a file pattern such as "
                             "'data/mnist_train-*'")
    parser.add_argument("--model-dir", type=cli.path, default=model_dir, help="checkpoint folder (read to resume, written)")
    parser.add_argument("--pipeline", choices=PIPELINES, default="fast",
                        help="fast: queue runners, many records per reader op, batches wired into the network; "
                             "course: queue runners, one record per op, batches fetched and fed back by feed_dict; "
                             "tfdata: tf.data instead of queue runners (docs/migrating.md)")
    parser.add_argument("--save-every", type=int, default=SAVE_EVERY, help="steps between checkpoints")
    parser.add_argument("--keep", type=int, default=KEEP_CHECKPOINTS, help="newest checkpoints to keep")
    parser.add_argument("--summary-every", type=int, default=SUMMARY_EVERY,
                        help=f"steps between TensorBoard summaries (in <model-dir>/{training.TRAIN_LOG_DIR})")
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
    args = parser.parse_args(cli.arguments(argv))
    if args.steps < 0 or min(args.batch_size, args.save_every, args.keep, args.summary_every) < 1:
        parser.error("--steps must be >= 0; --batch-size, --save-every, --keep and --summary-every >= 1")
    settings = settings_for(args.net, args.steps, args.batch_size, args.learning_rate_base, args.data_dir,
                            args.model_dir, pipeline=args.pipeline, save_every=args.save_every, keep=args.keep,
                            summary_every=args.summary_every, quiet=args.quiet)
    if args.job_name or args.ps_hosts or args.worker_hosts:
        from mnistkit import distributed  # only a cluster task needs it
        return distributed.main(args, parser, settings, build_graph)
    return exit_status(lambda: train(settings), interrupted="interrupted before training started; nothing saved")


if __name__ == "__main__":
    sys.exit(main())
