"""Course step 2: train the network of mnist_forward.py (784-500-10 in the course) from data/mnist_train.tfrecords.

Run after mnist_generateds.py. Batches come from tf.compat.v1 queue runners (string_input_producer ->
TFRecordReader -> parse -> shuffle_batch, 2 threads) under a Coordinator; --pipeline tfdata: tf.data's
(docs/migrating.md). The course's schedule: a learning rate decayed x0.99 per epoch, L2 regularization, moving
averages (which mnist_test.py and mnist_app.py restore), a checkpoint every 1,000 steps. A run resumes from the
model folder's latest checkpoint and trains until global_step reaches --steps; Ctrl-C or SIGTERM saves and exits.
TensorBoard summaries go to <model folder>/train. --steps-per-run K: K steps a sess.run (mnistkit.steps);
--job_name, --task_index, --ps_hosts, --worker_hosts: the same graph and loop on TensorFlow's distributed runtime
(mnistkit/distributed.py; mnist_cluster.py starts such a cluster on one machine).

Reading order, as in the course: the constants (edit one and it takes
effect: --help shows it, and the scripts that read this file's follow it);
build_graph() (get_tfrecord -> forward -> loss with the 'losses' collection,
exponential_decay, GradientDescentOptimizer, ExponentialMovingAverage, the
update, the Saver); backward() (Session, restore, then train_loop():
Coordinator and queue runners, the step loop with its sess.run, loss lines
and saves, request_stop and join); the last checkpoint.
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import functools
import os
import sys

from tf_compat import tf
import mnist_forward
import mnist_generateds
from mnistkit import (checkpoints, cli, folders, history, inputs, networks, places, records, saving, steps, summaries,
                      training)
from mnistkit.networks import LOSSES_COLLECTION

BATCH_SIZE = 200  # examples per step (--batch-size)
LEARNING_RATE_BASE = 0.1  # the learning rate before its decay (--learning-rate-base)
LEARNING_RATE_DECAY = 0.99  # per epoch, staircase
REGULARIZER = 0.0001  # L2 weight
STEPS = 50000  # the target global_step (--steps)
MOVING_AVERAGE_DECAY = 0.99
MODEL_SAVE_PATH = "./model/"  # --model-dir; mnist_test.py, mnist_app.py and mnist_export.py read it too
MODEL_NAME = "mnist_model"  # checkpoints are <model folder>/<MODEL_NAME>-<global_step>
SAVE_EVERY = 1000  # steps between checkpoints
KEEP_CHECKPOINTS = 5  # newest checkpoints of this run kept (tf.train.Saver's max_to_keep)
HISTORY = history.HISTORY  # snapshots kept for playback in <model folder>/history, spread over the run (--history)
PRINT_EVERY = 1000  # steps between the course's loss lines
SUMMARY_EVERY = 100  # steps between TensorBoard summaries; every step would slow training
STARTUP_TIMEOUT_SECS = 300  # distributed: wait this long for the parameter servers and the chief

# Each training option once: its keyword and --flag, default and help (build_parser, backward()'s keywords, Settings);
# a `constant` default is that constant of the trainer script, read when used. Each flag's value goes into the model
# folder's record; `resume`: what a resume at another value does (docs/design.md, "The settings record").
Option = cli.Option
OPTIONS = cli.Options([
    Option("steps", STEPS, "train until global_step reaches this", minimum=0, constant="STEPS", resume="free"),
    Option("batch_size", BATCH_SIZE, "examples per training step", minimum=1, constant="BATCH_SIZE",
           resume="refuse", why=training.schedule_jump),
    Option("data_dir", mnist_generateds.data_path, f"folder holding {mnist_generateds.tfRecord_train} or its shards, "
           "or a file pattern such as 'data/mnist_train-*'", type=cli.path, resume="free"),
    Option("model_dir", MODEL_SAVE_PATH, "checkpoint folder (read to resume, written)", type=cli.path,
           constant="MODEL_SAVE_PATH", resume="free"),
    Option("pipeline", "fast", "fast: queue runners, many records per reader op, batches wired into the network; "
           "course: queue runners, one record per op, batches fetched and fed back by feed_dict; "
           "tfdata: tf.data instead of queue runners (docs/migrating.md)", choices=tuple(records.PIPELINES),
           resolve=records.PIPELINES, resume="free"),
    Option("save_every", SAVE_EVERY, "steps between checkpoints", minimum=1, constant="SAVE_EVERY", resume="free"),
    Option("keep", KEEP_CHECKPOINTS, "newest checkpoints kept", minimum=1, constant="KEEP_CHECKPOINTS", resume="free"),
    Option("history", HISTORY, f"snapshots of the moving averages kept for the board's playback, spread over the "
           f"run, in <model-dir>/{history.FOLDER} apart from --keep's checkpoints; 0: none", minimum=0,
           constant="HISTORY", resume="free"),
    Option("log", print, flag=False, resume="free"),
    Option("quiet", False, "no progress bar (there is none when output is not a terminal)", resume="free"),
    Option("print_every", PRINT_EVERY, "steps between loss lines", minimum=1, constant="PRINT_EVERY", resume="free"),
    Option("summary_every", SUMMARY_EVERY, f"steps between TensorBoard summaries (in <model-dir>/"
           f"{summaries.TRAIN_LOG_DIR})", minimum=1, constant="SUMMARY_EVERY", resume="free"),
    Option("learning_rate_base", LEARNING_RATE_BASE, "the learning rate before its decay", type=float, above=0,
           constant="LEARNING_RATE_BASE", resume="note"),
    Option("decay_from", 0, "the global_step the learning rate's decay counts its epochs from: the rate is "
           "--learning-rate-base there (0: the course's schedule; mnist_learn.py gives the step a learn starts from, "
           "docs/teach.md)", minimum=0, resume="free"),
    Option("mix_records", None, f"PATH[:SHARE]: draw SHARE (default {records.MIX_SHARE}) of every batch from the "
           "TFRecords of PATH (a folder, file or pattern), e.g. your kept digits (docs/teach.md)",
           type=records.mix_of, resolve=records.mix_of, resume="free"),
    Option("steps_per_run", 1, "training steps in one session run (a tf.while_loop, each step dequeuing its own "
           "batch; loss lines, checkpoints and stops come at the first run boundary at or after their step); "
           "1: the course's loop", minimum=1, resume="free"),
])


# The trainer's fixed schedule, no option: {Settings attribute: the trainer script's constant}.
SCHEDULE = {"learning_rate_decay": "LEARNING_RATE_DECAY", "regularizer": "REGULARIZER",
            "moving_average_decay": "MOVING_AVERAGE_DECAY", "model_name": "MODEL_NAME"}


def settings_for(net, *args, constants=None, error=None, typed=None, values=None, **options):
    """The training.Settings of backward(*args, **options) for net, or of a command line's flag values (options).

    OPTIONS' values, bound, checked and resolved (cli.Options.bind: TypeError for an unknown keyword; a value out
    of range calls error(message), argparse's parser.error, else raises ValueError), with SCHEDULE and the training
    file's name. constants: the trainer script's module, whose constants (read now) are the defaults (None: this
    file's). typed: the flags a command line typed (cli.Options.typed), None for backward()'s keywords; how each
    value came is kept (Settings.given) for messages; values: main's OPTIONS.bind of those flags, bound already.
    --steps-per-run above 1 with --pipeline course (fed from Python, one batch a run) is refused the same way.
    """
    constants = constants or sys.modules[__name__]
    given = set(typed if typed is not None else [o.name for o in OPTIONS][:len(args)] + list(options))
    settings = training.Settings(
        net=net, options=OPTIONS, **(values or OPTIONS.bind(args, options, constants, error)),
        **{name: getattr(constants, constant, globals()[constant]) for name, constant in SCHEDULE.items()},
        train_file=mnist_generateds.tfRecord_train, command_line=typed is not None,
        script=os.path.basename(getattr(constants, "__file__", "") or "the trainer script"),
        given={o.name: ("flag" if typed is not None else "keyword") if o.name in given else
               "constant" if o.constant and hasattr(constants, o.constant) else "default" for o in OPTIONS})
    if settings.steps_per_run > 1 and settings.pipeline.fed:
        message = training.in_graph_only(settings, f"{settings.phrase('pipeline', 'course')} (which feeds each batch "
                                                   "from Python)")
        if error is None:
            raise ValueError(message)
        error(message)
    return settings


def build_graph(settings, data, sync_replicas=None):
    """The course's graph: get_tfrecord -> forward -> loss, learning rate, the update; a training.TrainGraph.

    The batches: training_batches'. data: records.training_data's. sync_replicas:
    None, or (replicas_to_aggregate, total_num_replicas) for SyncReplicasOptimizer.
    One function, update, builds the update (optimizer step, global_step += 1,
    the moving averages of the weights it makes: steps.step_and_averages) of the single step and of each step of
    steps.steps_loop (graph.loop at --steps-per-run above 1, run instead of
    train_op). DataError: NETWORK names a variable forward() lacks (check_graph).
    """
    (img_batch, label_batch), next_batch = training_batches(settings, data)
    if settings.pipeline.fed:  # the course's placeholders, fed the fetched batch by feed_dict (run_step)
        x = tf.placeholder(tf.float32, [None, settings.net.INPUT_NODE])
        y_ = tf.placeholder(tf.float32, [None, settings.net.OUTPUT_NODE])
    else:  # differs from the course: the batch tensors feed the network directly, without a trip through Python
        x, y_ = img_batch, label_batch
    y = settings.net.forward(x, settings.regularizer, train=True)
    folders.check_graph(settings.net.NETWORK)
    # The course's step counter, int64 under TensorFlow's own name and key (tf.train.global_step, clusters find it).
    global_step = tf.Variable(0, trainable=False, name="global_step", dtype=tf.int64,
                              collections=[tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.GLOBAL_STEP])

    def loss_and_rate(y, y_, step, l2_terms=None):  # the course's loss and learning rate; also steps_loop's steps'
        ce = tf.nn.sparse_softmax_cross_entropy_with_logits(logits=y, labels=tf.argmax(y_, 1))
        cem = tf.reduce_mean(ce)
        regularization = tf.add_n(tf.get_collection(LOSSES_COLLECTION) if l2_terms is None else l2_terms)
        if settings.decay_from:  # differs from the course: a learn's decay counts from its own first step (teach.md)
            step = tf.maximum(step - settings.decay_from, 0)
        # One epoch, examples / batch_size steps, is the decay period (the course's train_num_examples / BATCH_SIZE).
        learning_rate = tf.train.exponential_decay(settings.learning_rate_base, step,
                                                   data.examples / settings.batch_size, settings.learning_rate_decay,
                                                   staircase=True)
        return cem + regularization, cem, regularization, learning_rate
    loss, cem, regularization, learning_rate = loss_and_rate(y, y_, global_step)
    building = {}  # differs from the course: a callable rate, so that each of steps_loop's steps takes its own
    optimizer = tf.train.GradientDescentOptimizer(lambda: building["learning_rate"])
    ema = tf.train.ExponentialMovingAverage(settings.moving_average_decay, global_step)
    if sync_replicas:  # a cluster's aggregated updates: its chief applies them, then the moving averages
        from mnistkit import distributed
        optimizer = distributed.sync_optimizer(optimizer, ema, sync_replicas)

    def update(loss, learning_rate, var_list=None):  # the training update: the single step's, steps_loop's steps'
        building["learning_rate"] = learning_rate
        if sync_replicas:
            return optimizer.minimize(loss, global_step=global_step, var_list=var_list)
        grads = optimizer.compute_gradients(loss, var_list=var_list)
        # The averages of the weights this step made, each beside its variable, without waiting for the whole step.
        update_op = steps.step_and_averages(optimizer, training.AveragesBesideVariables(ema),
                                            settings.moving_average_decay, grads, learning_rate, global_step)
        with tf.control_dependencies([update_op]):
            return tf.no_op(name="train")
    train_op = update(loss, learning_rate)
    with tf.control_dependencies([train_op]):
        step_after = global_step.read_value()  # the step number this update produced (others move it too)
    # On the same variables (same checkpoint); its summary first, to keep the summaries' tags whatever the K.
    loop = steps.steps_loop(settings, loss_and_rate, update, next_batch, global_step) if (
        settings.steps_per_run > 1) else None
    summary = summaries.summaries(loss, cem, regularization, learning_rate, y, y_,
                                 queue_fill=settings.pipeline.queue_runners)
    finite_names, finite = training.finite_flags(tf.global_variables())  # checked before each save
    # Relative paths in the `checkpoint` index keep a moved model folder readable; --keep rotates only this run's.
    saver = tf.train.Saver(max_to_keep=settings.keep, save_relative_paths=True)
    return training.TrainGraph(x, y_, img_batch, label_batch, loss, learning_rate, global_step, train_op,
                               step_after, summary, optimizer, saver, finite, finite_names, loop)


def training_batches(settings, data):
    """((img_batch, label_batch), next_batch) of settings.batch_size examples: batch_source's, or with
    --mix-records a share of each batch from its files through a second such chain (records.mixed)."""
    if settings.mix_records:
        return records.mixed(functools.partial(batch_source, settings, data), settings.batch_size,
                             settings.mix_records, settings.log, data.mix_files)
    return batch_source(settings, data, settings.batch_size)


def batch_source(settings, data, num, files=None):
    """((img_batch, label_batch), next_batch) of settings.pipeline: num examples a batch, from `files` or data's.

    img_batch float32 [num, 784] in [0, 1], label_batch float32 [num, 10] one-hot. "fast" and "course": the
    course's get_tfrecord (queue runners) over data.files; "tfdata": inputs.tfdata_iterator, the same batches
    through tf.data (docs/migrating.md). files: --mix-records' (records.mixed), read as the course reads.
    next_batch() makes new batch tensors from the same queue or iterator: one per step of steps.steps_loop.
    """
    if not settings.pipeline.queue_runners:
        iterator = inputs.tfdata_iterator(files or data.files, num)
        return iterator.get_next(), iterator.get_next
    batch = mnist_generateds.get_tfrecord(num, isTrain=True, pipeline="course" if files else settings.pipeline,
                                          files=files or data.files, layout=data.layout)
    queue = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[-1].queue  # shuffle_batch's, added after its producer's

    def next_batch():
        return records.to_float(*queue.dequeue_many(num))
    return batch, next_batch


def backward(*args, net=mnist_forward, constants=None, settings=None, **options):
    """Train until global_step reaches `steps`; returns the final global_step.

    The keywords are OPTIONS' (steps, batch_size, data_dir, model_dir, ...),
    each defaulting to the trainer script's constant (STEPS, BATCH_SIZE,
    MODEL_SAVE_PATH, ...) as it is when called. net: the network's forward
    module; constants: the trainer script's module (None: this file).
    settings: a training.Settings made already (main()'s), used instead.
    Reads data_dir's training TFRecords (records.tfrecord_files); saves
    model_dir/<MODEL_NAME>-<global_step> every `save_every` steps (the
    newest `keep` kept), at the end and on SIGINT/SIGTERM, after which it
    raises errors.Interrupted; TensorBoard summaries go to model_dir/train.
    Raises DataError on bad input (a missing or corrupted TFRecord file, a
    model folder another process writes or that cannot be written, a
    damaged checkpoint or one of another graph, a failing reader thread);
    TypeError for an unknown keyword, ValueError for a value out of range.
    Builds a new tf.Graph, so it can run again in one process (a notebook).
    """
    settings = settings or settings_for(net, *args, constants=constants, **options)
    # Every file checked whole first; a file the fast pipeline cannot read at fixed offsets is said in one line.
    data = records.training_data(settings.data_dir, settings.train_file, settings.pipeline, settings.log,
                                 settings.mix_records)
    with tf.Graph().as_default():
        graph = build_graph(settings, data)
        with tf.Session(config=training.session_config()) as sess:
            init_op = [tf.global_variables_initializer(), tf.local_variables_initializer()]
            sess.run(init_op)
            try:  # the course's `checkpoint` index file; one of binary junk raises, and then the files alone count
                ckpt = tf.train.get_checkpoint_state(settings.model_dir)
            except (tf.errors.OpError, ValueError):
                ckpt = None
            # Differs from the course's restore of ckpt.model_checkpoint_path: the folder is locked (one writer) and
            # checked once; the newest checkpoint files are taken even when the index is lost or stale (said so),
            # read whole and checked against the folder's network and settings and the graph first.
            var_list = {v.op.name: v for v in tf.global_variables()}
            with training.resumed(settings, data.examples, graph.saver, var_list, ckpt) as resumed:
                restored = resumed.prefix
                if restored:
                    with checkpoints.restoring(restored, var_list, resumed.stored) as path:  # errors one line
                        graph.saver.restore(sess, path)
                first_step = int(sess.run(graph.global_step))
                # Its first line; the graph goes into the first run's events only (a resumed run has the same one).
                with training.running(settings, data, resumed.saves, first_step, restored,
                                      graph=None if restored else sess.graph) as run:
                    try:
                        train_loop(sess, graph, settings, run)
                    except Exception as e:  # a stuck or failing input, a full disk: one line, after saving the steps
                        error = training.one_line_error(e, data.where)
                        if not isinstance(error, (saving.SaveFailed, training.Diverged)):  # NaN weights unsaved
                            error = training.saved_note(error, training.save_if_possible(
                                run, lambda: save_last(sess, graph, settings, run, restored=True)))
                        raise error from None
                    save_last(sess, graph, settings, run, restored)
    return training.finish(settings, run, first_step)


def train_loop(sess, graph, settings, run):
    """The step loop, between starting and joining the queue runners; for one machine and a cluster worker alike.

    Trains until global_step reaches settings.steps, a stop signal
    (run.stop) or a stopped Coordinator. Differs from the course's `for i in
    range(STEPS)`: --steps is a target global_step, so a resumed run trains
    only the steps still to do; and as other workers move global_step too,
    a loss line or a checkpoint is due when a multiple of its period lies
    between the previous step and this one (training.crossed). Only the
    chief (run.chief) saves. run.worker: None on one machine; on a cluster,
    the distributed.Worker whose hooks start and stop the synchronous
    updates.
    """
    worker, loop = run.worker, graph.loop
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    fetches = loop.fetches if loop else [graph.train_op, graph.loss, graph.step_after, graph.learning_rate]
    summary = loop.summary if loop else graph.summary
    try:
        if worker:
            worker.started(sess)  # the chief's synchronous-update queue runner
        while run.progress.step < settings.steps and not run.stop.signal and not coord.should_stop():
            previous = run.progress.step
            feed = {loop.count: min(settings.steps_per_run, settings.steps - previous)} if loop else None
            out = run_step(sess, graph, fetches + [summary] if run.meter.due else fetches, settings, run.guard, feed)
            if out is None:
                continue  # a step to try again
            joined = worker and run.progress.local_steps == 0  # a worker says when it joined
            step, loss_value = run.took(out, loop, settings)  # NaN loss: Diverged here
            if training.crossed(previous, step, settings.print_every) or previous == 0 or joined:
                with run.bar.external_write_mode():
                    settings.log("After %d training steps, loss on training batch is %g." % (step, loss_value))
            if run.chief and training.crossed(run.progress.saved_step, step, settings.save_every):
                run.progress.saved_step = save(sess, graph, run, settings)
            if run.chief and run.saves.history and run.saves.history.due(step):  # the chief's, at --history's steps only
                training.snapshot(sess, run, settings)
    except tf.errors.OpError as e:
        if inputs.iterator_failed(e):  # tf.data reads in the step itself, not in a reader thread
            raise inputs.pipeline_failed(run.data.where, e) from None
        if not isinstance(e, (tf.errors.OutOfRangeError, tf.errors.CancelledError)):
            raise
        # A closed queue: a failing reader's own error is re-raised by join below (none, on a cluster, when the
        # chief closed its synchronous updates' token queue at the end).
        coord.request_stop(worker.closed_queue_error(e) if worker else e)
    finally:
        if worker:
            worker.stopping()  # the chief's token queue closed: the other workers' synchronous training is over
        coord.request_stop()
        try:  # join re-raises a reader thread's error: the real cause behind a closed queue
            coord.join(threads, stop_grace_period_secs=records.JOIN_GRACE_SECS)
        except tuple(run.guard.retried):
            raise  # a cluster's lost parameter server, as it is
        except tf.errors.OpError as e:
            raise inputs.pipeline_failed(run.data.where, e) from None


def run_step(sess, graph, fetches, settings, guard, feed=None):
    """One session run's fetched values (one training step, or steps_loop's count of them: feed), or None when
    `guard` (training.StepGuard) let it be tried again."""
    with guard:
        if settings.pipeline.fed:  # the course fetches a batch, then feeds it back by feed_dict
            xs, ys = sess.run([graph.img_batch, graph.label_batch], options=guard.options)
            return sess.run(fetches, feed_dict={graph.x: xs, graph.y_: ys}, options=guard.options)
        return sess.run(fetches, feed_dict=feed, options=guard.options)
    return None


def save(sess, graph, run, settings):
    """The course's saver.save at the global_step read now; returns that step.

    The same read tells whether every variable is finite: a training that
    diverged raises training.Diverged and saves nothing. run.saves.attempts
    (saving.save_attempts) adds what the course never had: no save over
    another run's checkpoint, the .meta first, tries again while another
    process holds a file, a failed save removed whole (SaveFailed).
    """
    step, finite, learning_rate = sess.run([graph.global_step, graph.finite, graph.learning_rate],
                                           options=run.guard.options)
    step = int(step)
    training.check_weights(finite, graph.finite_names, step, learning_rate, settings, run.data.where)
    for attempt in run.saves.attempts(sess, step):
        with attempt:
            graph.saver.save(sess, os.path.join(run.saves.model_dir, settings.model_name), global_step=step,
                             write_meta_graph=False)  # the attempt wrote the .meta before
    return step


def save_last(sess, graph, settings, run, restored):
    """After the loop: the chief saves the steps not yet saved (or a first checkpoint); returns global_step.
    restored: the checkpoint the run started from, or None (then even a run of no steps saves)."""
    progress = run.progress
    progress.step = max(progress.step, int(sess.run(graph.global_step, options=run.guard.options)))
    if run.chief and (progress.step != progress.saved_step or restored is None):
        progress.saved_step = save(sess, graph, run, settings)
    return progress.step


def build_parser(net=mnist_forward, doc=__doc__, constants=None):
    """The command line's argparse parser; building it imports no TensorFlow (fast --help and flag errors).

    Its training flags are OPTIONS', their defaults the constants of the trainer script's module `constants` as
    they are now (None: this file; mnist_lenet5_backward.py passes itself and LeNet-5's forward module as net),
    then the cluster's flags. doc: the script's docstring (its first paragraph is the --help description).
    """
    parser = cli.new_parser(doc)
    parser.set_defaults(net=net)  # for a cluster task too
    OPTIONS.add_to(parser, constants or sys.modules[__name__])
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
    cluster.add_argument("--startup-timeout", type=cli.bounded(float, 0, above=True), default=STARTUP_TIMEOUT_SECS,
                         help="seconds to wait for the parameter servers and the chief before giving up")
    return parser


def main(argv=None, net=mnist_forward, doc=__doc__, constants=None):
    """The command line of mnist_backward.py; with net (a forward module), doc and constants (the script's
    module), of another network's trainer (mnist_lenet5_backward.py). Returns the exit status."""
    parser = build_parser(net, doc, constants)
    args = parser.parse_args(cli.arguments(argv))
    if args.steps_per_run > 1 and args.sync_replicas:  # a cluster's flag, not a setting: refused here
        parser.error(training.in_graph_only(args, "--sync_replicas (SyncReplicasOptimizer aggregates one step per "
                                         "session run)"))
    # The flags' settings; a value out of its range is a usage error (parser.error, exit 2).
    flags = {o.name: getattr(args, o.name) for o in OPTIONS if o.flag}
    values = OPTIONS.bind((), flags, constants or sys.modules[__name__], parser.error)
    settings = functools.partial(settings_for, args.net, constants=constants, error=parser.error, values=values,
                                 typed=OPTIONS.typed(parser, cli.arguments(argv)))
    # A typed --model-dir not there, its name close to a model folder beside it (`modle` by `model`): a typo that
    # would silently train a new model from scratch; refused, with the way to start a new one there (mkdir).
    typo = "model_dir" in OPTIONS.typed(parser, cli.arguments(argv)) and checkpoints.new_folder_typo(args.model_dir)
    if typo:
        return cli.refused(typo)  # bad input (exit 1), as a --model-dir not there is to every script
    # `--model-dir data` (or data/model): checkpoints among the training data; refused before TensorFlow's import,
    # on every task of a cluster too
    into_data = checkpoints.into_data(args.model_dir, networks.default_folder(args.net.NETWORK))
    if into_data:
        return cli.refused(into_data)
    if args.job_name or args.ps_hosts or args.worker_hosts:
        from mnistkit import distributed  # only a cluster task needs it
        return distributed.main(args, parser, settings(), sys.modules[__name__])
    name = getattr(constants or sys.modules[__name__], "MODEL_NAME", MODEL_NAME)

    def work():
        # Another network's folder, told by its record, a model folder's own history/ or learns/ (model/history:
        # the model folder named), and a folder it cannot write (read-only, or another run's under way) are said
        # before TensorFlow's import (seconds)
        checkpoints.recorded_elsewhere(args.model_dir, args.net.NETWORK, "train_script", name)
        places.refuse_part(args.model_dir)
        folders.check_writable(args.model_dir)
        given = settings()
        records.looked_up(given.data_dir, given.train_file, given.mix_records)  # a path not there said first
        reached = training.reached(given)  # the folder at --steps already: said at once, without TensorFlow
        for line in reached:
            given.log(line)
        if not reached:
            backward(settings=given)
    return cli.exit_status(work, interrupted="interrupted before training started; nothing saved")


if __name__ == "__main__":
    sys.exit(main())
