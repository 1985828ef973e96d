"""The training loop's own machinery, beside mnist_backward.train_loop (one machine and a cluster alike).

mnist_backward.py holds the course's graph and its loop; this is what the
loop reaches through a few named calls, and what it carries:
  Settings, TrainGraph    one run's settings; the graph's tensors the loop runs;
  running, Run, Progress  the state of one process's part in a run (its first line, its progress bar);
  StepGuard               a step's time-out, and the errors tried again;
  crossed                 when a period is due;
  one_line_error, saved_note   the error a failed run ends with;
  finite_flags, check_loss, check_weights   a loss or weights gone NaN end the run (Diverged);
  stop_flag, PauseWatch     stop signals as a flag the loop checks; a paused process told from a stuck input;
  SummaryMeter            TensorBoard's summaries in the loop, examples per second (the summaries: mnistkit.summaries);
  resumed                 the model folder locked and checked once before a run goes on from it;
  AveragesBesideVariables the moving averages of the trainer's update, each beside its variable.
The training options (cli.Option, cli.Options) are cli.py's, and Settings
holds their values; the training files, checked whole and unchanged at each
step, are records.TrainingData. The model folder's record of its network and
of each option it trains at is folders.FOLDER_FILE (record_of), checked on
resume (check_settings).
"""
import collections
import contextlib
import dataclasses
import functools
import math
import os
import signal
import threading
import time
import types

from tf_compat import first_line, tf
from . import checkpoints, cli, folders, history, networks, places, saving
from .summaries import TRAIN_LOG_DIR, close_writer, scalar_summary
from .errors import STOP_SIGNALS, DataError, Interrupted, off_a_hung_up_terminal

STEP_TIMEOUT_MS = 60000  # a step waiting this long for a batch, while the process runs, means the input is stuck
RETRY_SECS = 1  # pause before trying a failed step again (a cluster's retried errors)


def session_config(**fields):
    """The trainer's tf.compat.v1.ConfigProto: `fields` (e.g. device_filters), with thread spinning off.

    TensorFlow's thread pools spin on an idle core before they sleep. On a
    machine whose cores the step already keeps busy, that spinning takes
    them from the step and from the queue runners' reader threads
    (ConfigProto.experimental.disable_thread_spinning; measured in
    docs/performance.md). Used by backward()'s session and a cluster
    worker's.
    """
    config = tf.ConfigProto(**fields)
    config.experimental.disable_thread_spinning = True
    return config


def epochs_at(examples, batch_size, step):
    """The whole epochs (float) of `examples` records that global_step `step` has trained at this batch size: the
    course's staircase decay counts them."""
    return step // (examples / batch_size)


def learning_rate_at(settings, examples, batch_size, step):
    """The course's staircase learning rate at global_step `step` for this batch size (float), its epochs counted from
    settings.decay_from (a learn's first step; 0 or none: the course's schedule, from step 0)."""
    since = max(0, step - (getattr(settings, "decay_from", 0) or 0))
    return settings.learning_rate_base * settings.learning_rate_decay ** epochs_at(examples, batch_size, since)


FADED = 0.01  # a learning rate decayed below this share of its base barely moves the weights in a learn's steps


def faded_rate(settings, examples, step):
    """The note (str) on its learning rate a run resuming at global_step `step` says, or None.

    With settings.decay_from (a learn's: mnist_learn.py gives its first
    step), the rate the run starts at and the course's from step 0 there.
    Else, when the course's schedule has decayed the rate below FADED of
    settings.learning_rate_base: its steps, a learn's among them, will
    barely change the weights. examples: the records per epoch (an epoch
    is examples / batch_size steps). Nothing for a run with no step to train.
    """
    if step >= settings.steps:
        return None
    rate, start = learning_rate_at(settings, examples, settings.batch_size, step), getattr(settings, "decay_from", 0)
    if start:
        course = learning_rate_at(types.SimpleNamespace(**{**vars(settings), "decay_from": 0}), examples,
                                  settings.batch_size, step)
        given = settings.phrase("decay_from", start) if hasattr(settings, "phrase") else f"--decay-from {start}"
        return (f"learning rate {rate:.2g} at step {step}: {given} counts the decay x{settings.learning_rate_decay:g} "
                f"an epoch of {examples} records from step {start} (the course's schedule, from step 0, is at "
                f"{course:.2g} here; docs/teach.md, \"The learn's learning rate\")")
    if rate >= FADED * settings.learning_rate_base:
        return None
    epochs = int(epochs_at(examples, settings.batch_size, step))
    return (f"note: at step {step} the learning rate is {rate:.2g}, {settings.learning_rate_base:g} decayed "
            f"x{settings.learning_rate_decay:g} for each of {epochs} epochs of {examples} records: the "
            f"{settings.steps - step} steps to {settings.steps} will barely change the weights (docs/teach.md, "
            "\"The learn's learning rate\")")


def schedule_jump(settings, trained, examples, step):
    """Why a resume at another batch size than `trained` is refused (--batch-size's cli.Option.why).

    The learning rate decays once per epoch of examples / batch_size steps,
    counted in global_step, so at another batch size the resumed step
    `step` would have another learning rate at once.
    """
    before, after = (learning_rate_at(settings, examples, batch, step) for batch in (trained, settings.batch_size))
    return (f"would move its learning rate from {before:.3g} to {after:.3g} at once (the schedule decays once per "
            "epoch of steps)")


def record_of(settings, examples):
    """What saving.RunSaves writes into the model folder's record: (network, records per epoch,
    {option name: value} of every flag option, cli.Options.record)."""
    return settings.net.NETWORK, examples, settings.options.record(settings)


Resumed = collections.namedtuple("Resumed", "prefix stored saves")
Resumed.__doc__ = """What a run goes on from (resumed): the checkpoint's `prefix` and its tensors read whole ({name: array}),
both None for a fresh start; `saves`, the saving.RunSaves of the run's checkpoints."""


def not_for_training(settings):
    """The DataError of a --model-dir no checkpoint may be written into (an export: places.export_given; a model
    folder's own history/ or learns/: places.part_given; another network's folder with no checkpoint:
    folders.another_network), or None."""
    return (places.export_given(settings.model_dir, "--model-dir") or places.part_given(settings.model_dir)
            or folders.another_network(settings.model_dir, settings.net.NETWORK, settings.model_name))


@contextlib.contextmanager
def resumed(settings, examples, saver, var_list, state=None):
    """Around a run that trains into settings.model_dir: the folder locked and checked once; yields a Resumed.

    The folder is made when missing and locked for the block (folders.writing:
    a second trainer, or a learn, is refused in one line naming this run),
    listed once (its folders.Survey; state: the `checkpoint` index file as
    the course's tf.train.get_checkpoint_state read it) and its record read
    once (folders.folder_record). A fresh start (no checkpoint named
    settings.model_name) yields Resumed(None, None, saves). Else, in this
    order: the newest checkpoint is read whole (even when the index file is
    missing, damaged or names a path that is gone: said through
    settings.log; a damaged one names the newest intact one:
    checkpoints.read_or_hint); it must hold settings.net's network
    (networks.check_network: the record's network, else the one its
    variables tell); when it will train (its step below settings.steps),
    each option whose value differs from the record's does what it declares
    (check_settings), before the variables are compared, so that a changed
    setting is named as itself; and its tensors must fit var_list, {name in
    checkpoint: variable} of the graph about to train
    (checkpoints.check_variables: a checkpoint of another graph). The run's
    saves (saving.RunSaves with `saver`, the graph's tf.train.Saver)
    then continue the --keep rotation of the checkpoint resumed from.
    examples: the records per epoch, for a refusal's reason. Raises
    DataError naming what is wrong and what to do (as folders.writing and
    not_for_training: an export, another network's folder); nothing changes.
    """
    saves = saving.RunSaves(saver, settings.model_dir, functools.partial(record_of, settings, examples),
                                 name=settings.model_name)  # the record: what the run trains with, at its first save
    misplaced = not_for_training(settings)
    if misplaced is not None:
        raise misplaced
    with folders.writing(settings.model_dir, "training", settings.model_name, settings.net.NETWORK, settings.log,
                         state) as found:
        prefix = found.newest
        if prefix is None:
            saves.history = snapshots(settings, 0)
            yield Resumed(None, None, saves)
            return
        stored = checkpoints.read_or_hint(settings.model_dir, prefix)
        note = index_note(settings.model_dir, found, prefix)
        if note:
            settings.log(note)
        unreadable = folders.keep_unreadable_record(settings.model_dir)
        if unreadable:  # said before the training that will replace it
            settings.log(f"note: {unreadable[1].split('; it holds', 1)[0]}; a copy is kept as {unreadable[0]} (its "
                         "learn history is there) and a new record is written")
        record, step = folders.folder_record(settings.model_dir), folders.step_of(prefix)
        networks.check_network(prefix, folders.folder_network(settings.model_dir, stored, record),
                               settings.net.NETWORK)
        if step < settings.steps:  # a setting matters only for the steps it trains
            check_settings(settings, record, examples, step)
            faded = faded_rate(settings, examples, step)
            if faded:
                settings.log(faded)
        try:
            checkpoints.check_variables(prefix, stored, var_list)
        except checkpoints.CourseOriginal:  # its line says what to do
            raise
        except DataError as e:
            raise DataError(f"{e}; use another {settings.advice('model_dir')}") from None
        saves.continue_rotation(step)  # the same model: --keep rotates its checkpoints too
        saves.history = snapshots(settings, step)
        yield Resumed(prefix, stored, saves)


def index_note(model_dir, found, prefix):
    """The note said when the checkpoint resumed from (prefix) is not the `checkpoint` index file's (found:
    folders.writing's answer): the index missing or naming files not there, or an older checkpoint; else None."""
    if found.indexed is None or folders.name_of(found.indexed) != found.name or \
            folders.checkpoint_format(found.indexed) is None:
        return (f"note: {os.path.join(model_dir, folders.INDEX_FILE)} is missing or names files that are not there; "
                f"resuming from the newest checkpoint files, {prefix}")
    if found.indexed != prefix:
        return (f"note: {prefix} is newer than {found.indexed}, the newest in the `checkpoint` index file; "
                "resuming from it")
    return None


def snapshots(settings, start):
    """The history.Snapshots of a run from global_step `start` (settings.history of them), or None for none."""
    if not getattr(settings, "history", 0):
        return None
    return history.Snapshots(tf, settings.model_dir, settings.model_name, settings.history, settings.steps,
                             settings.save_every, start, settings.log)


def snapshot(sess, run, settings):
    """The step loop's history snapshot at the step run.progress is at (run.saves.history's save). One that cannot
    be written is said once and the run goes on without more: the checkpoints are the run's work, not these."""
    try:
        run.saves.history.save(sess, run.progress.step)
    except DataError as e:
        with run.bar.external_write_mode():
            settings.log(f"warning: {e}; no more history snapshots this run")
        run.saves.history = None


def check_settings(settings, record, examples, step):
    """Check this run's settings against the model folder's record (folders.folder_record), resuming at `step`.

    Each option whose value differs from the recorded one does what it
    declares (cli.Option.resume): "refuse" raises DataError
    (`<model folder>: this model was trained at --batch-size 200; resuming
    at 5000 would ...; give --batch-size 200, or another --model-dir for a
    new model`); "note" logs `note: --learning-rate-base 0.7 (this folder
    was trained at 0.1); going on with 0.7`; each names the option as the
    user set it (Settings.named: an edited constant with its file, a
    backward() keyword); "free" is not compared. An
    option the record lacks (a folder of an earlier version) is not
    compared. examples: the records per epoch, for a refusal's reason.
    """
    for option, trained, given in settings.options.changed(settings, record):
        name = option.name
        if option.resume == "note":
            settings.log(f"note: {settings.phrase(name, given)} (this folder was trained at {trained}); going on "
                         f"with {given}")
            continue
        why = "would change how it trains"
        if option.why:
            with contextlib.suppress(TypeError, ValueError, ArithmeticError):  # a hand-edited record's value
                why = option.why(settings, trained, examples, step)
        edited = settings.named(name) != settings.advice(name)  # a constant edited in its file
        now, trained_at = (f"{given} ({settings.named(name)})" if edited else given), settings.phrase(name, trained)
        raise DataError(f"{settings.model_dir}: this model was trained at {trained_at.split(' in ')[0]}; resuming at "
                        f"{now} {why}; {settings.give(name, trained)}, or {'give ' if edited else ''}another "
                        f"{settings.advice('model_dir')} for a new model")


class Settings(types.SimpleNamespace):
    """One training run's settings: every Option of the trainer by its name, and the trainer's fixed schedule.

    Built by mnist_backward.settings_for. options: the trainer's cli.Options
    (what the model folder records and checks on resume:
    record_of, check_settings). net: the network's forward module
    (forward(x, regularizer, train), INPUT_NODE, OUTPUT_NODE, NETWORK).
    The schedule is the course's: learning_rate_base decayed by
    learning_rate_decay once per epoch (staircase), L2 weight
    `regularizer`, moving averages with moving_average_decay; a loss line
    every print_every steps through `log`. steps: the target global_step;
    pipeline: an records.Pipeline name, resolved by records.pipeline_of.
    model_name: the trainer's MODEL_NAME, its checkpoints' name
    (<model_dir>/<model_name>-<global_step>); train_file: the training
    file's name in a data_dir folder (mnist_generateds.tfRecord_train).
    given: how each option got its value, {name: "flag" (typed on the
    command line), "keyword" (given to backward()), "constant" (the
    trainer script's constant, in the file `script`) or "default"};
    command_line: the run's options came from a command line. Messages
    name an option as the user set it (named, phrase, give) and tell
    what to give as they would (advice).
    """

    def _how(self, name):
        """(the Option `name`, how it got its value: see given)."""
        return next(o for o in self.options if o.name == name), getattr(self, "given", {}).get(name, "default")

    def advice(self, name):
        """Option `name` as a message tells the user to give it: its --flag on a command line, else backward()'s
        keyword."""
        option, _ = self._how(name)
        return option.flag_name if getattr(self, "command_line", True) else name

    def named(self, name):
        """Option `name` as a message names its value, the way the user set it: `BATCH_SIZE in mnist_backward.py`
        for an edited constant, else advice(name) (the --flag typed, or backward()'s keyword)."""
        option, how = self._how(name)
        return f"{option.constant} in {self.script}" if how == "constant" else self.advice(name)

    def phrase(self, name, value):
        """Option `name` at `value` as a message says it: `--batch-size 200`, `batch_size=200` (backward()'s
        keyword), `BATCH_SIZE = 200 in mnist_backward.py` (an edited constant)."""
        option, how = self._how(name)
        if how == "constant":
            return f"{option.constant} = {value!r} in {self.script}"
        return f"{option.flag_name} {value}" if getattr(self, "command_line", True) else f"{name}={value!r}"

    def give(self, name, value):
        """What to do to set option `name` to `value`, where the user set it: `give --batch-size 200`, `give
        batch_size=200`, `set BATCH_SIZE = 200 in mnist_backward.py`."""
        _, how = self._how(name)
        return ("set " if how == "constant" else "give ") + self.phrase(name, value)


@dataclasses.dataclass
class AveragesBesideVariables:
    """The moving averages `ema` (a tf.train.ExponentialMovingAverage) applied beside each variable.

    apply(var_list) is ema.apply for each variable under tf.device(its
    device), where its average lives: on a cluster the update of a weight's
    average then runs on that weight's parameter server, instead of its
    value and its average crossing to a worker and back every step. A
    cluster's SyncReplicasOptimizer (its variable_averages:
    mnistkit.distributed.sync_optimizer) applies the averages through it;
    the trainer's update (mnistkit.steps.step_and_averages) makes the
    shadows through it and updates them itself, or applies it after the
    step for optimizers other than plain gradient descent.
    Source: tf.train.ExponentialMovingAverage.apply.
    """
    ema: object

    def apply(self, var_list):
        """One op updating the moving average of each variable in var_list, beside the variable."""
        updates = []
        for var in var_list:
            with tf.device(var.device):
                updates.append(self.ema.apply([var]))
        return tf.group(*updates)

    def make_shadows(self, var_list):
        """Each variable's shadow (ema.average(var)) made beside it if it has none yet, with nothing run.

        ema.apply makes a shadow together with its update op; that op is left unused."""
        for var in var_list:
            if self.ema.average(var) is None:
                with tf.device(var.device):
                    self.ema.apply([var])


@dataclasses.dataclass
class TrainGraph:
    """The tensors and ops of the course's graph that the step loop runs (mnist_backward.build_graph makes it)."""
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
    loop: object = None  # at --steps-per-run above 1: mnistkit.steps.steps_loop's StepsLoop, run instead of train_op


# ---------------------------------------------------------------- the loop

@dataclasses.dataclass
class Run:
    """One process's part in a training run, as the step loop sees it (mnist_backward.train_loop); see running().

    data: the records.TrainingData read, checked unchanged at every step
    (and `where`, for messages); saves: the saving.RunSaves of this
    run's checkpoints; stop: the stop_flag; progress: its Progress; worker:
    None on one machine, a cluster worker's distributed.Worker; chief: this
    process saves checkpoints and writes summaries (the one machine, or
    worker 0 of a cluster); writer: the chief's summary FileWriter, or
    None; guard: the StepGuard each step runs in; meter: the SummaryMeter;
    bar: the progress bar (cli.progress_bar).
    """
    data: object
    saves: object
    stop: object
    progress: object
    worker: object = None
    chief: bool = True
    writer: object = None
    guard: object = None
    meter: object = None
    bar: object = None
    first_loss: float = None  # the loss of this process's first step, which grown_loss compares with
    warned: bool = False  # grown_loss has been said

    def grown_loss(self, loss_value, step, learning_rate, settings):
        """The one warning line (str) for a finite loss grown LOSS_GROWTH times above this run's first loss (a
        learning rate too high, which may never reach NaN), said once a run; else None."""
        if self.first_loss is None:
            self.first_loss = loss_value
        if self.warned or not loss_value > LOSS_GROWTH * max(self.first_loss, 1e-12):
            return None
        self.warned = True
        return (f"warning: step {step}: the loss is {loss_value:.3g}, {loss_value / self.first_loss:.3g} times its "
                f"first {self.first_loss:.3g} (learning rate {learning_rate:g}): the training is diverging; lower "
                f"{settings.named('learning_rate_base')}")

    def took(self, out, loop, settings):
        """After a session run of the step loop that fetched `out` ([the train op's output or the steps run, loss,
        global_step after, learning rate, (summary)]; loop: the graph's StepsLoop or None): the training files
        checked unchanged, the loss checked finite (Diverged), the progress, its bar and the summaries moved on.
        Returns (global_step, loss)."""
        self.data.check_unchanged()
        ran, loss_value, step, learning_rate = out[:4]
        check_loss(loss_value, step, learning_rate, settings, self.data.where)  # NaN: stop here
        grown = self.grown_loss(loss_value, step, learning_rate, settings)
        if grown:
            with self.bar.external_write_mode():
                settings.log(grown)
        summary = out[4] if len(out) > 4 else None
        self.bar.update(step - self.progress.step)
        self.bar.set_postfix(loss=f"{loss_value:.3g}", lr=f"{learning_rate:.3g}", refresh=False)
        self.progress.step = step
        self.progress.local_steps += ran if loop else 1  # the loop's first fetch: the steps it ran
        self.meter.add(summary, step)
        return step, loss_value


def at_target(settings, step):
    """The line for a run whose global_step `step` reaches settings.steps already: nothing to train, and how to."""
    return f"global_step {step} already reaches the target; raise {settings.named('steps')} to train further"


def reached(settings):
    """The lines (list of str) of a run on one machine with nothing to train, told before TensorFlow's import (which
    takes seconds): settings.model_dir's newest checkpoint named settings.model_name, by its file name
    (folders.checkpoint_steps), reaches settings.steps already; [] otherwise (a fresh folder, or steps to train).
    The checkpoint itself is read by a run that trains it."""
    steps = folders.checkpoint_steps(settings.model_dir, settings.model_name)
    if not steps or steps[-1] < settings.steps:
        return []
    prefix = folders.prefix_of(settings.model_dir, steps[-1], settings.model_name)
    return [f"{prefix} is the newest checkpoint; target global_step {settings.steps}", at_target(settings, steps[-1])]


@contextlib.contextmanager
def running(settings, data, saves, step, restored=None, worker=None, graph=None):
    """The Run of this process from global_step `step`, with what its step loop needs; a context manager.

    On one machine it first says what it trains on, from where (restored:
    the checkpoint resumed, or None), to which global_step and on which
    device, and when `step` reaches settings.steps already, what to raise
    (a cluster worker says its own line: distributed.worker_steps). Inside
    it, SIGINT and SIGTERM set run.stop (stop_flag) instead of raising, so
    that the loop saves first; the chief writes TensorBoard summaries into
    <model folder>/train (graph: written into the events, a fresh run's)
    and closes them at the end; the progress bar, from global_step `step`
    to settings.steps, runs on a terminal (not on a cluster). saves: the
    saving.RunSaves; worker: a cluster worker's distributed.Worker, or
    None on one machine.
    """
    if worker is None:
        # "GPU:0" when TensorFlow sees a GPU: it places each op with a GPU kernel there; the queue-runner readers
        # and shuffle_batch have only CPU kernels, so the input pipeline runs on the CPU either way.
        device = "GPU:0" if tf.config.list_physical_devices("GPU") else "CPU"
        settings.log(f"training on {data.examples} records from {data.where}"
                     + (f", resuming from {restored}" if restored else "")
                     + f"; target global_step {settings.steps}; running on {device}")
        if step >= settings.steps:
            settings.log(at_target(settings, step))
    with stop_flag() as stop:
        run = Run(data, saves, stop, Progress(step=step, saved_step=step), worker=worker,
                  chief=worker is None or worker.is_chief)
        if run.chief:
            run.writer = tf.summary.FileWriter(os.path.join(settings.model_dir, TRAIN_LOG_DIR), graph)
        run.guard = StepGuard(worker.retried if worker else {}, worker.log_prefix if worker else "", settings.log)
        run.meter = SummaryMeter(run.writer, settings.summary_every, settings.batch_size, step,
                                 settings.steps_per_run)
        bar = cli.progress_bar(settings.quiet or worker is not None, total=settings.steps, initial=step,
                               desc="training", unit="step")
        try:
            with contextlib.closing(bar) as run.bar:
                yield run
        finally:
            if run.writer is not None:
                close_writer(run.writer, settings.log)


def in_graph_only(settings, other):
    """The one line refusing --steps-per-run above 1 with `other`, a setting that needs one step per session run
    (settings: a Settings, whose messages name its options as the user gave them, or parsed flags)."""
    if not isinstance(settings, Settings):  # the command line's flags themselves
        return (f"--steps-per-run {settings.steps_per_run} runs its steps inside the graph: it cannot go with "
                f"{other}; give --steps-per-run 1")
    return (f"{settings.phrase('steps_per_run', settings.steps_per_run)} runs its steps inside the graph: it cannot "
            f"go with {other}; {settings.give('steps_per_run', 1)}")


def save_if_possible(run, save_last):
    """On a failure: the chief saves the steps done since its last checkpoint (save_last(), the trainer's); that
    checkpoint's prefix, or None when none was due or the session or the disk cannot save any more."""
    if not run.chief:
        return None
    before = run.progress.saved_step
    try:
        saved = save_last() != before
    except (DataError, tf.errors.OpError):
        return None
    return run.saves.prefix(run.progress.saved_step) if saved else None


def finish(settings, run, first_step):
    """After the last save: Interrupted after a stop signal; else the closing lines. Returns the final global_step."""
    step, path = run.progress.step, run.saves.prefix(run.progress.saved_step)
    if run.stop.signal:
        raise Interrupted(run.stop.signal, f"{run.stop.signal.name}: stopped at step {step}; checkpoint saved to {path}")
    if step > first_step:  # the course's lines come only every PRINT_EVERY steps: say where it ended
        settings.log(f"done at step {step}; checkpoint saved to {path}")
    note = saving.older_checkpoints_note(settings.model_dir, settings.keep, run.saves.written, settings.model_name)
    if note:
        settings.log(note)
    return step


@dataclasses.dataclass
class Progress:
    """Where a run is: global_step now, the step of its newest checkpoint, steps this process ran."""
    step: int
    saved_step: int
    local_steps: int = 0


class StepGuard:
    """Around one training step's session runs: the errors after which the step is simply tried again.

    `with guard:` swallows (a) a step's tf.errors.DeadlineExceededError when
    the process itself was paused for most of the wait (PauseWatch: Ctrl-Z,
    a debugger, a suspended laptop), with a note through `log`, and (b) the
    errors of `retried`, {error class: (most in a row, word for the log
    line)} (a cluster's aborted or failed steps), up to their limit in a
    row, after RETRY_SECS. Anything else, and the last of too many in a
    row, goes through. me: the log lines' prefix ("worker 1: "). `options`:
    the tf.RunOptions each session run of the step (and the run's saves)
    takes: at most STEP_TIMEOUT_MS, as it is when the guard is made. The
    first guard starts the process's PAUSE_WATCH.
    """

    def __init__(self, retried, me="", log=print):
        self.retried, self.me, self.log = dict(retried), me, log
        self.in_a_row = {kind: 0 for kind in self.retried}
        self.options = tf.RunOptions(timeout_in_ms=STEP_TIMEOUT_MS)
        if PAUSE_WATCH.ident is None:  # not started yet
            PAUSE_WATCH.start()

    def __enter__(self):
        self.started, self.paused_before = time.monotonic(), PAUSE_WATCH.paused
        return self

    def __exit__(self, kind, error, traceback):
        if error is None:
            for k in self.in_a_row:
                self.in_a_row[k] = 0
            return False
        if isinstance(error, tf.errors.DeadlineExceededError):
            paused = PAUSE_WATCH.paused - self.paused_before
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


def crossed(before, after, every):
    """True when a multiple of `every` lies in (before, after]."""
    return after // every > before // every


# A finite loss this many times its run's first is said once (Run.grown_loss): the course's network from scratch
# starts near 2.3 plus its L2 term and falls; a rate far too high (--learning-rate-base 50) climbs to 1e8 and more.
LOSS_GROWTH = 1000


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
    newest = folders.latest(settings.model_dir, settings.model_name) if settings.model_dir else None
    kept = f"nothing non-finite was saved; the newest checkpoint is {newest}" if newest else "no checkpoint was saved"
    return Diverged(f"step {step}: {what} (learning rate {learning_rate:g}): the training diverged; "
                    f"lower {settings.named('learning_rate_base')}, or check the training data ({where}); {kept}")


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


# ---------------------------------------------------------------- stop signals and pauses

TICK_SECS = 0.5  # the pause watch's period
LATE_SECS = 2.0  # a tick this late means the process was stopped (Ctrl-Z, a debugger, a suspended laptop) or starved


@contextlib.contextmanager
def stop_flag():
    """Turns SIGINT/SIGTERM/SIGHUP (and Windows' SIGBREAK, Ctrl-Break) into a flag the step loop checks, so it can
    save first.

    Yields the flag: its `signal` is None, then the signal.Signals that
    came; the handlers before are put back on exit. A second Ctrl-C while
    the flag is set raises KeyboardInterrupt as usual.
    """
    flag = types.SimpleNamespace(signal=None)

    def handle(signum, frame):
        off_a_hung_up_terminal(signum)
        if flag.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        flag.signal = signal.Signals(signum)

    previous = {}
    try:
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, handle)
        yield flag
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class PauseWatch(threading.Thread):
    """Adds up the time this process did not run: a thread ticks every TICK_SECS and counts late ticks.

    A tick more than LATE_SECS late means the whole process was stopped
    (Ctrl-Z, SIGSTOP, a debugger, a suspended laptop) or starved of CPU;
    `paused` is the total of those delays in seconds. Both the monotonic
    and the wall clock are read, so that a suspend, which only the wall
    clock counts, is seen too. The process has one, PAUSE_WATCH, started
    by the first StepGuard.
    """

    paused = 0.0

    def run(self):
        last = (time.monotonic(), time.time())
        while True:
            time.sleep(TICK_SECS)
            now = (time.monotonic(), time.time())
            late = max(now[0] - last[0], now[1] - last[1]) - TICK_SECS
            if late > LATE_SECS:
                self.paused += late
            last = now


PAUSE_WATCH = PauseWatch(name="pause-watch", daemon=True)


# ---------------------------------------------------------------- TensorBoard

class SummaryMeter:
    """The chief's TensorBoard summaries in the step loop: when one is due, and examples_per_sec between them.

    writer: the summary FileWriter, or None (no summaries: not the chief).
    `due`: a summary is due in the next run (every `every` steps, counted
    from global_step `step`); add(summary, step) after each step writes a
    fetched merged summary (None: none was fetched) and the examples per
    second since the previous one (batch_size examples per step; on a
    cluster, all workers together), then decides `due` for the run after,
    which ends steps_per_run steps on (mnist_backward's --steps-per-run).
    The first step only starts the clock: queue warm-up is not a rate.
    """

    def __init__(self, writer, every, batch_size, step, steps_per_run=1):
        self.writer, self.every, self.batch_size, self.ahead = writer, every, batch_size, steps_per_run
        self.last, self.clock = step, None  # the step of the previous summary; (time, step) it was written at
        self.due = writer is not None and crossed(step, step + steps_per_run, every)

    def add(self, summary, step):
        if summary is None:
            if self.clock is None:
                self.clock = (time.monotonic(), step)
        else:
            self.writer.add_summary(summary, step)
            now = time.monotonic()
            if self.clock is not None:
                rate = (step - self.clock[1]) * self.batch_size / max(now - self.clock[0], 1e-9)
                self.writer.add_summary(scalar_summary("examples_per_sec", rate), step)
            self.clock, self.last = (now, step), step
        self.due = self.writer is not None and crossed(self.last, step + self.ahead, self.every)
