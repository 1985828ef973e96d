"""The training loop's own machinery, beside mnist_backward.train_loop (one machine and a cluster alike).

mnist_backward.py holds the course's graph and its loop; this is what the
loop reaches through a few named calls, and what it carries:
  Settings, TrainingData  one run's settings; its TFRecord files, checked
                          whole (training_data) and unchanged at each step;
  Run, Progress           the state of one process's part in a run;
  StepGuard               a step's time-out, and the errors tried again;
  progress_bar, crossed   the progress bar, and when a period is due;
  one_line_error, saved_note   the error a failed run ends with.
TensorBoard is in summaries.py, stop signals and pauses in signals.py,
schedule.json in schedule.py.
"""
import contextlib
import dataclasses
import functools
import math
import os
import time
from typing import Callable

from tf_compat import first_line, tf
from . import files, records
from .errors import DataError
from .signals import pause_watch

STEP_TIMEOUT_MS = 60000  # a step waiting this long for a batch, while the process runs, means the input is stuck
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
    course's loss line through `log`. pipeline: an inputs.Pipeline
    ("fast" or "course": mnist_generateds.get_tfrecord; "tfdata":
    inputs.tfdata_batches).
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
    pipeline: object
    save_every: int
    keep: int
    summary_every: int
    print_every: int
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
    saver: object  # the tf.train.Saver of the checkpoints (built last: it saves every variable)
    finite: object = None  # bool [len(finite_names)]: each variable finite (finite_flags), read before each save
    finite_names: tuple = ()


def device():
    """Where the training steps run, for the trainer's first line: "GPU:0" when TensorFlow sees a GPU, else "CPU".

    TensorFlow places each op with a GPU kernel on the first GPU; the
    queue-runner readers and shuffle_batch have only CPU kernels, so the
    input pipeline runs on the CPU either way.
    """
    return "GPU:0" if tf.config.list_physical_devices("GPU") else "CPU"


# ---------------------------------------------------------------- the loop

@dataclasses.dataclass
class Run:
    """One process's part in a training run, as the step loop sees it (mnist_backward.train_loop).

    data: the TrainingData read, checked unchanged at every step (and
    `where`, for messages); saves: the checkpoints.RunSaves of this run's
    checkpoints; stop: the StopFlag; progress: its Progress; writer: the
    chief's summary FileWriter, or None; worker: None on one machine, a
    cluster worker's distributed.Worker.
    """
    data: object
    saves: object
    stop: object
    progress: object
    writer: object = None
    worker: object = None

    @property
    def chief(self):
        """Saves checkpoints and writes summaries: the one machine, or worker 0 of a cluster."""
        return self.worker is None or self.worker.is_chief


@dataclasses.dataclass
class Progress:
    """Where a run is: global_step now, the step of its newest checkpoint, steps this process ran."""
    step: int
    saved_step: int
    local_steps: int = 0


def step_options(timeout_ms=None):
    """The tf.RunOptions of a session run that may wait at most timeout_ms (default STEP_TIMEOUT_MS, read now)."""
    return _run_options(STEP_TIMEOUT_MS if timeout_ms is None else timeout_ms)


@functools.lru_cache(maxsize=None)
def _run_options(timeout_ms):
    return tf.RunOptions(timeout_in_ms=timeout_ms)


class StepGuard:
    """Around one training step's session runs: the errors after which the step is simply tried again.

    `with guard:` swallows (a) a step's tf.errors.DeadlineExceededError when
    the process itself was paused for most of the wait (PauseWatch: Ctrl-Z,
    a debugger, a suspended laptop), with a note through `log`, and (b) the
    errors of `retried`, {error class: (most in a row, word for the log
    line)} (a cluster's aborted or failed steps), up to their limit in a
    row, after RETRY_SECS. Anything else, and the last of too many in a
    row, goes through. me: the log lines' prefix ("worker 1: "). `options`:
    the RunOptions (STEP_TIMEOUT_MS) each run of the step takes.
    """

    def __init__(self, retried, me="", log=print):
        self.retried, self.me, self.log = dict(retried), me, log
        self.in_a_row = {kind: 0 for kind in self.retried}
        self.watch = pause_watch()

    def __enter__(self):
        self.options = step_options()
        self.started, self.paused_before = time.monotonic(), self.watch.paused
        return self

    def __exit__(self, kind, error, traceback):
        if error is None:
            for k in self.in_a_row:
                self.in_a_row[k] = 0
            return False
        if isinstance(error, tf.errors.DeadlineExceededError):
            paused = self.watch.paused - self.paused_before
            if time.monotonic() - self.started - paused >= STEP_TIMEOUT_MS / 1000:
                return False  # it waited the whole time while running: the input is stuck
            self.log(f"{self.me}note: this process was paused for {paused:.0f} s; going on with the step")
            return True
        retried = next((k for k in self.retried if isinstance(error, k)), None)
        if retried is None:
            return False
        limit, what = self.retried[retried]
        self.in_a_row[retried] += 1
        if self.in_a_row[retried] >= limit:
            return False
        self.log(f"{self.me}step {what} ({first_line(error)}); trying again")
        time.sleep(RETRY_SECS)
        return True


@contextlib.contextmanager
def progress_bar(settings, run):
    """The training progress bar (files.progress_bar) from run.progress.step to settings.steps; none on a cluster."""
    bar = files.progress_bar(settings.quiet or run.worker is not None, total=settings.steps,
                             initial=run.progress.step, desc="training", unit="step")
    try:
        yield bar
    finally:
        bar.close()


def crossed(before, after, every):
    """True when a multiple of `every` lies in (before, after]."""
    return after // every > before // every


class Diverged(DataError):
    """A training whose loss or weights became NaN or infinite; the run saves nothing more and ends."""


def finite_flags(variables):
    """(names, bool tensor [len(names)]): whether each floating-point variable holds only finite values.

    Each flag is computed beside its variable (on a cluster, on its
    parameter server), so a check before a save reads one boolean per
    variable, not the weights. Source: the idea of TensorFlow's
    NanTensorHook, applied to the weights a checkpoint would hold.
    """
    names, flags = [], []
    for var in variables:
        if var.dtype.base_dtype.is_floating:
            with tf.device(var.device):
                flags.append(tf.reduce_all(tf.math.is_finite(var)))
            names.append(var.op.name)
    return tuple(names), tf.stack(flags) if flags else tf.constant([], tf.bool)


def check_loss(loss_value, step, learning_rate, settings, where):
    """Raise Diverged when the loss the loop fetched at `step` is NaN or infinite (it costs no extra read)."""
    if not math.isfinite(loss_value):
        raise diverged(f"the loss is {loss_value}", step, learning_rate, settings, where)


def check_weights(flags, names, step, learning_rate, settings, where):
    """Raise Diverged, before a save at `step`, when a variable holds a NaN or an infinity (flags: finite_flags')."""
    bad = [name for name, ok in zip(names, flags) if not ok]
    if bad:
        raise diverged(f"{bad[0]!r} holds NaN or infinite values", step, learning_rate, settings, where)


def diverged(what, step, learning_rate, settings, where):
    """The one-line Diverged for a training gone non-finite at `step`: what happened, what to try, what was kept."""
    from . import checkpoints  # checkpoints imports nothing of the loop's
    newest = checkpoints.latest(settings.model_dir) if settings.model_dir else None
    kept = f"nothing non-finite was saved; the newest checkpoint is {newest}" if newest else "no checkpoint was saved"
    return Diverged(f"step {step}: {what} (learning rate {learning_rate:g}): the training diverged; "
                    f"lower LEARNING_RATE_BASE in {settings.net.NETWORK.train_script}, or check the training "
                    f"data ({where}); {kept}")


def one_line_error(error, where):
    """The error a training run ends with for `error`: TensorFlow's errors as a one-line DataError naming `where`.

    A stuck input (a step's tf.errors.DeadlineExceededError) or any other
    TensorFlow error becomes a DataError naming `where` (the training
    files); other errors (a DataError such as inputs.pipeline_failed, a
    closed output pipe, a bug) stay as they are.
    """
    if isinstance(error, tf.errors.DeadlineExceededError):
        return DataError(f"{where}: no training batch arrived within {STEP_TIMEOUT_MS // 1000} s")
    if isinstance(error, tf.errors.OpError):
        return DataError(f"{where}: training failed ({first_line(error)})")
    return error


def saved_note(error, saved):
    """`error` with "; checkpoint saved to <saved>" when it is a DataError and a checkpoint was saved on the way out."""
    if saved and isinstance(error, DataError):
        return DataError(f"{error}; checkpoint saved to {saved}")
    return error


