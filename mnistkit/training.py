"""The training graph's parts and the one step loop, for one machine and for a cluster worker alike.

mnist_backward.backward() is the course's step 2 and reads as the course
does; this is what it shares with mnist_lenet5_backward.py and with the
distributed workers (mnistkit.distributed):
  Settings      what one run is: network, schedule, data, bookkeeping;
  training_data the TFRecord files checked whole, their record counts;
  train_ops     loss (cross entropy + L2), decayed learning rate, moving
                averages, the train op and TensorBoard summaries;
  run_steps     the step loop: progress bar, the course's loss lines, summaries,
                a checkpoint every save_every steps, a stop flag set by signals;
  Role          what differs on a cluster: who saves and summarizes, which step
                errors are tried again, how messages are prefixed.
"""
import dataclasses
import functools
import glob
import json
import os
import signal
import threading
import time
from typing import Callable

from tf_compat import first_line, tf
from . import checkpoints, files, inputs, records
from .errors import STOP_SIGNALS, DataError
from .networks import LOSSES_COLLECTION

STEP_TIMEOUT_MS = 60000  # a step waiting this long for a batch, while the process runs, means the input is stuck
TICK_SECS = 0.5  # the pause watch's period
LATE_SECS = 2.0  # a tick this late means the process was stopped (Ctrl-Z, a debugger, a suspended laptop) or starved
TRAIN_LOG_DIR = "train"  # TensorBoard run, inside the model folder
RETRY_SECS = 1  # pause before trying a failed step again (a cluster's retried errors)


@dataclasses.dataclass
class Settings:
    """One training run: the network and its schedule, the data, and the run's bookkeeping.

    net: the network's forward module (forward(x, regularizer, train),
    INPUT_NODE, OUTPUT_NODE, NETWORK). The schedule is the course's:
    learning_rate_base decayed by learning_rate_decay once per epoch
    (staircase), L2 weight `regularizer`, moving averages with
    moving_average_decay. steps: the target global_step. Every
    save_every steps a checkpoint (the newest `keep` kept), every
    summary_every steps TensorBoard summaries, every print_every steps the
    course's loss line through `log`. pipeline: "fast" or "course"
    (mnist_generateds.get_tfrecord), or "tfdata" (inputs.tfdata_batches).
    quiet: no progress bar.
    """
    net: object
    steps: int
    batch_size: int
    learning_rate_base: float
    learning_rate_decay: float
    regularizer: float
    moving_average_decay: float
    data_dir: str
    model_dir: str
    pipeline: str = "fast"
    save_every: int = 1000
    keep: int = 5
    summary_every: int = 100
    print_every: int = 1000
    quiet: bool = False
    log: Callable = print


@dataclasses.dataclass
class TrainingData:
    """The training files, checked: {path: record count}, a description for messages, their RecordLayout.

    examples: the record count of the whole training set, one epoch (also
    when `counts` holds only a distributed worker's own files).
    """
    counts: dict
    where: str
    layout: object
    examples: int
    signatures: dict = dataclasses.field(default_factory=dict)  # {path: file_signature} when checked

    @property
    def files(self):
        return list(self.counts)

    def for_worker(self, files):
        """The same data, read from `files` only (a worker's shards); examples stays the whole set's."""
        return TrainingData({f: self.counts[f] for f in files}, ", ".join(files), self.layout, self.examples,
                            {f: self.signatures[f] for f in files if f in self.signatures})

    def check_unchanged(self):
        """Raise DataError when a training file is no longer the one checked (rewritten or replaced since)."""
        for path, signature in self.signatures.items():
            if file_signature(path) != signature:
                raise DataError(f"{path}: the training file changed while training (rewritten by "
                                "mnist_generateds.py?); run the trainer again to train on the new file")


def file_signature(path):
    """(inode, size, mtime ns) of a file, or None when it is gone: what tells a rewritten file from the one checked."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def training_data(data_dir):
    """The TrainingData of a folder, file or pattern (records.tfrecord_files), every file checked whole.

    Each file passes records.scan_tfrecord; the layout
    (records.record_layout) tells the fast pipeline whether it may read
    fixed-length frames. Raises DataError on missing or bad data.
    """
    paths = records.tfrecord_files(data_dir)
    signatures = {f: file_signature(f) for f in paths}  # before the scan: a change during it shows too
    scans = {f: records.scan_tfrecord(f) for f in paths}
    where = paths[0] if len(paths) == 1 else f"{len(paths)} files {paths[0]} ... {paths[-1]}"
    layout = records.record_layout({f: lengths for f, (_, lengths) in scans.items()})
    counts = {f: count for f, (count, _) in scans.items()}
    return TrainingData(counts, where, layout, sum(counts.values()), signatures)


# ---------------------------------------------------------------- the graph

@dataclasses.dataclass
class TrainGraph:
    """The tensors and ops the step loop runs (see train_ops)."""
    x: object
    y_: object
    img_batch: object
    label_batch: object
    loss: object
    learning_rate: object
    global_step: object
    train_op: object
    step_after: object
    summary: object
    optimizer: object


def network_input(img_batch, label_batch, settings):
    """(x, y_) the network reads: placeholders fed with fetched batches ("course"), or the batches ("fast").

    The course fetched each batch with sess.run and fed it back through
    feed_dict; the fast pipeline wires the batch tensors into the network.
    """
    if settings.pipeline == "course":
        return (tf.placeholder(tf.float32, [None, settings.net.INPUT_NODE]),
                tf.placeholder(tf.float32, [None, settings.net.OUTPUT_NODE]))
    return img_batch, label_batch


def train_ops(x, y_, y, batches, settings, examples, sync_replicas=None, queue_fill=True):
    """The course's backward pass over logits y: loss, schedule, moving averages, train op; a TrainGraph.

    x, y_: the network's input and one-hot labels float32 [batch, 784] and
    [batch, 10]; y: its logits [batch, 10]; batches: (img_batch,
    label_batch) from the input pipeline. examples: the training record
    count; one epoch is examples / batch_size steps, the learning rate's
    decay period. sync_replicas: None, or (replicas_to_aggregate,
    total_num_replicas) for tf.compat.v1.train.SyncReplicasOptimizer.
    queue_fill: add the shuffle queue's fill to the summaries (the queue
    runners' pipelines have one; tf.data's graph has no queue, and no
    counterpart is added: see docs/migrating.md).
    """
    global_step = tf.train.get_or_create_global_step()
    cem = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(logits=y, labels=tf.argmax(y_, 1)))
    regularization = tf.add_n(tf.get_collection(LOSSES_COLLECTION))
    loss = cem + regularization
    learning_rate = tf.train.exponential_decay(settings.learning_rate_base, global_step,
                                               examples / settings.batch_size, settings.learning_rate_decay,
                                               staircase=True)
    train_op, optimizer = minimize(loss, learning_rate, global_step, settings.moving_average_decay, sync_replicas)
    with tf.control_dependencies([train_op]):
        step_after = global_step.read_value()  # the step number this update produced
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))
    scalars = [tf.summary.scalar("loss", loss), tf.summary.scalar("cross_entropy", cem),
               tf.summary.scalar("regularization_loss", regularization),
               tf.summary.scalar("learning_rate", learning_rate), tf.summary.scalar("accuracy", accuracy)]
    if queue_fill:
        queue = inputs.shuffle_queue()
        # shuffle_batch's own summary measures only the part above min_after_dequeue; this is the whole queue.
        fill = tf.cast(queue.size(), tf.float32) / queue.queue_ref.op.get_attr("capacity")
        scalars.append(tf.summary.scalar("shuffle_queue_fill", fill))
    return TrainGraph(x, y_, *batches, loss, learning_rate, global_step, train_op, step_after,
                      tf.summary.merge(scalars), optimizer)


def minimize(loss, learning_rate, global_step, moving_average_decay, sync_replicas=None):
    """(train_op, optimizer): one gradient-descent step, then the moving averages of every trainable variable.

    Source: the course's GradientDescentOptimizer and
    ExponentialMovingAverage, grouped into one no_op named "train". With
    sync_replicas the optimizer is a SyncReplicasOptimizer, whose chief
    queue runner applies the averaged gradients and then the moving
    averages, so both advance once per aggregated step, as on one machine.
    """
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    ema = tf.train.ExponentialMovingAverage(moving_average_decay, global_step)
    if sync_replicas is not None:
        replicas_to_aggregate, total_num_replicas = sync_replicas
        optimizer = tf.train.SyncReplicasOptimizer(
            optimizer, replicas_to_aggregate=replicas_to_aggregate, total_num_replicas=total_num_replicas,
            variable_averages=AveragesBesideVariables(ema), variables_to_average=tf.trainable_variables())
        return optimizer.minimize(loss, global_step=global_step), optimizer
    train_step = optimizer.minimize(loss, global_step=global_step)
    ema_ops = averages_beside_variables(ema, tf.trainable_variables())
    with tf.control_dependencies([train_step, *ema_ops]):
        return tf.no_op(name="train"), optimizer


def averages_beside_variables(ema, var_list):
    """ema.apply for each variable of var_list on that variable's device; the list of update ops.

    On a cluster each average lives beside its variable on a parameter
    server (ExponentialMovingAverage creates it there), and so does its
    update: the weights need not travel for it. On one machine every device
    is the same.
    """
    ops = []
    for var in var_list:
        with tf.device(var.device):
            ops.append(ema.apply([var]))
    return ops


class AveragesBesideVariables:
    """An ExponentialMovingAverage for SyncReplicasOptimizer's variable_averages: apply() updates each
    average beside its variable (averages_beside_variables), not all on global_step's parameter server."""

    def __init__(self, ema):
        self.ema = ema

    def apply(self, var_list):
        """One op updating the averages of var_list (tf.train.ExponentialMovingAverage.apply)."""
        return tf.group(*averages_beside_variables(self.ema, var_list))


def device():
    """Where the training steps run, for the trainer's first line: "GPU:0" when TensorFlow sees a GPU, else "CPU".

    TensorFlow places each op with a GPU kernel on the first GPU; the
    queue-runner readers and shuffle_batch have only CPU kernels, so the
    input pipeline runs on the CPU either way.
    """
    return "GPU:0" if tf.config.list_physical_devices("GPU") else "CPU"


def scalar_summary(tag, value):
    """A tf.Summary holding one scalar measured outside the graph (e.g. examples/s)."""
    return tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=float(value))])


def summary_writer(model_dir, graph=None):
    """The tf.summary.FileWriter of <model_dir>/train; graph: written into the events (a run's first)."""
    return tf.summary.FileWriter(os.path.join(model_dir, TRAIN_LOG_DIR), graph)


def close_writer(writer, log=print):
    """Close a summary FileWriter; an events file it could not write (a full disk) is removed, with a warning.

    TensorFlow's events writer reports a failed write only in its C++ log,
    so an empty events file is how a failure shows.
    """
    try:
        path = writer.event_writer._ev_writer.FileName()
        path = path.decode() if isinstance(path, bytes) else path
    except AttributeError:  # another TensorFlow's writer: nothing to check
        path = None
    try:
        writer.close()
    except (tf.errors.OpError, OSError):
        pass
    try:
        if path and os.path.getsize(path) == 0:
            os.remove(path)
            log(f"warning: {os.path.dirname(path)}: no TensorBoard summaries written (the disk may be full)")
    except OSError:
        pass


# ---------------------------------------------------------------- the loop

class StopFlag:
    """Turns SIGINT/SIGTERM (and Windows' SIGBREAK, Ctrl-Break) into a flag the step loop checks, so it can save first.

    A second Ctrl-C while the flag is set raises KeyboardInterrupt as usual.
    """

    def __init__(self):
        self.signal = None
        self._previous = {}

    def __enter__(self):
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signal.Signals(signum)

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


@dataclasses.dataclass
class Role:
    """What the step loop does differently on a cluster worker than on one machine.

    saver, writer: the chief's tf.train.Saver and summary FileWriter (None
    on other workers). is_chief: saves checkpoints and writes summaries.
    me: prefix of log lines ("worker 1: "), empty on one machine.
    retried: {error class: (most in a row, word for the log line)}, the
    step errors tried again. announce_first: print the course's loss line
    after this process's first step too.
    """
    saver: object = None
    writer: object = None
    is_chief: bool = True
    me: str = ""
    retried: dict = dataclasses.field(default_factory=dict)
    announce_first: bool = False
    data: object = None  # the TrainingData read: checked unchanged at every step
    written: set = dataclasses.field(default_factory=set)  # steps saved by this run: the only ones it may replace


@dataclasses.dataclass
class Progress:
    """Where a run is: global_step now, the step of its newest checkpoint, steps this process ran."""
    step: int
    saved_step: int
    local_steps: int = 0


def run_steps(sess, graph, settings, role, stop, coord, progress):
    """Train until global_step reaches settings.steps, a stop signal, or the Coordinator stops.

    progress (a Progress) is updated after each step. Each step's global_step
    is the one its update produced (other workers move it too), so a
    summary, a loss line or a checkpoint is due when a multiple of its
    period lies between the previous step and this one (crossed).
    Raises TensorFlow's errors as they come (a step's time-out as
    tf.errors.DeadlineExceededError), after role.retried's tries.
    """
    fetches = [graph.train_op, graph.loss, graph.step_after, graph.learning_rate]
    bar = files.progress_bar(settings.quiet or bool(role.me), total=settings.steps,  # no bar on a cluster task
                             initial=progress.step, desc="training", unit="step")
    meter = None  # (time, step) of the previous summary, for examples/s
    last_summary, in_a_row = progress.step, {kind: 0 for kind in role.retried}
    try:
        while progress.step < settings.steps and not stop.signal and not coord.should_stop():
            previous = progress.step
            summarize = role.is_chief and crossed(last_summary, previous + 1, settings.summary_every)
            out = run_step(sess, graph, fetches + [graph.summary] if summarize else fetches, settings, role, in_a_row)
            if out is None:
                continue  # a retried step
            if role.data is not None:
                role.data.check_unchanged()
            _, loss_value, step, learning_rate = out[:4]
            progress.step, progress.local_steps = step, progress.local_steps + 1
            bar.update(step - previous)
            bar.set_postfix(loss=f"{loss_value:.3g}", lr=f"{learning_rate:.3g}", refresh=False)
            if summarize:
                meter, last_summary = write_summaries(role.writer, out[4], step, meter, settings.batch_size), step
            elif meter is None:
                meter = (time.monotonic(), step)  # after the first step: queue warm-up is not a rate
            if crossed(previous, step, settings.print_every) or step == 1 or (
                    role.announce_first and progress.local_steps == 1):
                with bar.external_write_mode():
                    settings.log("After %d training steps, loss on training batch is %g." % (step, loss_value))
            if role.is_chief and crossed(progress.saved_step, step, settings.save_every):
                progress.saved_step = save(sess, graph, settings, role)
    finally:
        bar.close()


def run_step(sess, graph, fetches, settings, role, in_a_row):
    """One training step's fetched values, or None when it failed and is to be tried again.

    The "course" pipeline fetches a batch and feeds it back, as the course
    did; the fast one runs the step on the pipeline's batch directly. Each
    run waits at most STEP_TIMEOUT_MS. A step failing with one of
    role.retried's errors is tried again up to its limit in a row (in_a_row
    counts them, reset by a step that works); the last one is raised.
    """
    options = step_options(STEP_TIMEOUT_MS)
    watch = pause_watch()
    started, paused_before = time.monotonic(), watch.paused
    try:
        if settings.pipeline == "course":
            xs, ys = sess.run([graph.img_batch, graph.label_batch], options=options)
            out = sess.run(fetches, feed_dict={graph.x: xs, graph.y_: ys}, options=options)
        else:
            out = sess.run(fetches, options=options)
    except tf.errors.DeadlineExceededError:
        paused = watch.paused - paused_before
        if time.monotonic() - started - paused >= STEP_TIMEOUT_MS / 1000:
            raise  # it waited the whole time while running: the input is stuck
        settings.log(f"{role.me}note: this process was paused for {paused:.0f} s; going on with the step")
        return None
    except tuple(role.retried) as e:
        kind = next(k for k in role.retried if isinstance(e, k))
        limit, what = role.retried[kind]
        in_a_row[kind] += 1
        if in_a_row[kind] >= limit:
            raise
        settings.log(f"{role.me}step {what} ({first_line(e)}); trying again")
        time.sleep(RETRY_SECS)
        return None
    for kind in in_a_row:
        in_a_row[kind] = 0
    return out


@functools.lru_cache(maxsize=None)
def step_options(timeout_ms):
    """The tf.RunOptions of a session run that may wait at most timeout_ms (STEP_TIMEOUT_MS), made once per value."""
    return tf.RunOptions(timeout_in_ms=timeout_ms)


class PauseWatch:
    """Adds up the time this process did not run: a thread ticks every TICK_SECS and counts late ticks.

    A tick more than LATE_SECS late means the whole process was stopped
    (Ctrl-Z, SIGSTOP, a debugger, a suspended laptop) or starved of CPU;
    `paused` is the total of those delays in seconds. Both the monotonic
    and the wall clock are read, so that a suspend, which only the wall
    clock counts, is seen too.
    """

    def __init__(self):
        self.paused = 0.0
        thread = threading.Thread(target=self._run, name="pause-watch", daemon=True)
        thread.start()

    def _run(self):
        last = (time.monotonic(), time.time())
        while True:
            time.sleep(TICK_SECS)
            now = (time.monotonic(), time.time())
            late = max(now[0] - last[0], now[1] - last[1]) - TICK_SECS
            if late > LATE_SECS:
                self.paused += late
            last = now


_watch = []


def pause_watch():
    """The process's one PauseWatch, started on first use."""
    if not _watch:
        _watch.append(PauseWatch())
    return _watch[0]


def write_summaries(writer, summary, step, meter, batch_size):
    """Write a step's merged summary and examples_per_sec since `meter` (time, step); returns the new meter."""
    writer.add_summary(summary, step)
    now = time.monotonic()
    if meter is not None:
        rate = (step - meter[1]) * batch_size / max(now - meter[0], 1e-9)  # on a cluster: all workers together
        writer.add_summary(scalar_summary("examples_per_sec", rate), step)
    return now, step


def save(sess, graph, settings, role):
    """Save a checkpoint named for the global_step it holds (checkpoints.save); returns that step.

    The step is read here: on a cluster other workers keep updating while
    the chief saves. Never saves over a checkpoint of another run.
    """
    step = int(sess.run(graph.global_step, options=step_options(STEP_TIMEOUT_MS)))
    checkpoints.save(sess, role.saver, settings.model_dir, step, role.written)
    return step


def save_last(sess, graph, settings, role, progress, restored):
    """After the loop: the chief saves the steps not yet saved (or a first checkpoint); returns global_step.

    restored: the checkpoint the run started from, or None (then even a run
    of no steps saves, so that its folder holds a checkpoint).
    """
    progress.step = max(progress.step, int(sess.run(graph.global_step, options=step_options(STEP_TIMEOUT_MS))))
    if role.is_chief and (progress.step != progress.saved_step or restored is None):
        progress.saved_step = save(sess, graph, settings, role)
    return progress.step


def crossed(before, after, every):
    """True when a multiple of `every` lies in (before, after]."""
    return after // every > before // every


def failed(error, sess, graph, settings, role, progress, where):
    """The error a training run ends with for `error`, after saving the steps not yet saved.

    A stuck input (a step's tf.errors.DeadlineExceededError) or any other
    TensorFlow error becomes a one-line DataError naming `where` (the
    training files); other errors (a DataError such as
    inputs.pipeline_failed, a closed output pipe) stay as they are. Unless
    the error is a failed save, the chief first saves a checkpoint of the
    steps done since the last one, if the session still can, and a
    DataError's message says where.
    """
    if isinstance(error, tf.errors.DeadlineExceededError):
        error = DataError(f"{where}: no training batch arrived within {STEP_TIMEOUT_MS // 1000} s")
    elif isinstance(error, tf.errors.OpError):
        error = DataError(f"{where}: training failed ({first_line(error)})")
    if isinstance(error, checkpoints.SaveFailed) or not role.is_chief:
        return error
    try:
        before = progress.saved_step
        saved = save_last(sess, graph, settings, role, progress, restored=True) != before
    except (DataError, tf.errors.OpError):
        return error  # the session or the disk cannot save: the error as it is
    if saved and isinstance(error, DataError):
        return DataError(f"{error}; checkpoint saved to {checkpoints.prefix_of(settings.model_dir, progress.saved_step)}")
    return error  # anything else (a closed output pipe, a bug) is raised as it is, the steps saved


SCHEDULE_FILE = "schedule.json"  # in the model folder: the batch size and epoch its checkpoints were trained with


def check_schedule(settings, examples, resumed_step=None):
    """Refuse to resume at another batch size than the model's; then record this run's in SCHEDULE_FILE.

    The learning rate decays once per epoch of examples / batch_size steps,
    counted in global_step, so resuming at another batch size would jump the
    schedule at once. resumed_step: the global_step of the checkpoint resumed from, or None
    for a fresh start (then nothing is compared). Raises DataError naming
    the model folder, the flag and both learning rates. A folder without
    the file (written by an earlier version) is not checked.
    """
    path = os.path.join(settings.model_dir, SCHEDULE_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
        trained = int(stored["batch_size"])
    except (OSError, ValueError, KeyError, TypeError):
        trained = None
    if resumed_step is not None and trained not in (None, settings.batch_size):
        before, after = (learning_rate_at(settings, examples, batch, resumed_step)
                         for batch in (trained, settings.batch_size))
        raise DataError(f"{settings.model_dir}: this model was trained at --batch-size {trained}; resuming at "
                        f"{settings.batch_size} would move its learning rate from {before:.3g} to {after:.3g} at "
                        f"once (the schedule decays once per epoch of steps); give --batch-size {trained}, or "
                        "another --model-dir for a new model")

    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"batch_size": settings.batch_size, "records": examples}, f)
            f.write("\n")
    files.write_atomically(path, write, what="the training schedule")


def older_checkpoints_note(settings, role):
    """A note on the checkpoints in the model folder that this run did not write, or None when --keep covers all.

    --keep rotates only this run's own checkpoints, so that a run never
    deletes work it did not do; the note says how many others there are,
    their size and how to remove them.
    """
    older = [s for s in checkpoints.checkpoint_steps(settings.model_dir) if s not in role.written]
    if not older or len(older) + min(len(role.written), settings.keep) <= settings.keep:
        return None
    size = sum(os.path.getsize(p) for s in older
               for p in glob.glob(glob.escape(checkpoints.prefix_of(settings.model_dir, s)) + ".*"))
    return (f"note: {settings.model_dir} also holds {len(older)} checkpoint(s) of earlier runs "
            f"(steps {older[0]} to {older[-1]}, {size / 1e6:.1f} MB), which --keep leaves alone; "
            f"delete {checkpoints.prefix_of(settings.model_dir, '<step>')}.* files you no longer need")


def learning_rate_at(settings, examples, batch_size, step):
    """The course's staircase learning rate at global_step `step` for this batch size (float)."""
    return settings.learning_rate_base * settings.learning_rate_decay ** (step // (examples / batch_size))
