"""Learn from the kept digits: the course's own pipeline, run on a copy of a model folder, checked, then promoted.

learn(model_dir, keep_dir) runs, as commands a user could type
(docs/teach.md, "Learning from them"), in a staging folder (STAGING in
what it prints), its stages (STAGES) said to a Watch as they begin:
  preparing  the kept digits copied as they are now (keep.KeptDigits.snapshot:
             keeps and removals made during the learn go to the next), then
             python mnist_generateds.py --train-images KEPT --train-labels KEPT.txt
                 --test-images KEPT --test-labels KEPT.txt --data-dir STAGING/data
             (all four flags, so MNIST is not rebuilt); the newest checkpoint of
             model_dir, its record (schedule.json) and an index naming it
             copied into STAGING;
  training   python mnist_backward.py (mnist_lenet5_backward.py for a LeNet-5 folder)
                 --model-dir STAGING --data-dir DATA --steps <newest step + steps>
                 --mix-records STAGING/data/mnist_train.tfrecords:SHARE --print-every <steps / 20>
             (a share of every batch from the kept digits; a loss line, so a
             progress step, every 5% of the steps);
  checking   python mnist_test.py --checkpoint BEFORE --checkpoint LEARNED
                 --data-dir DATA --data-dir STAGING/data --report-json STAGING/check.json
             the checkpoint before and the learned one on DATA's test records
             (accuracy, each digit's recall) and on the kept digits (how many
             are read right), in one process;
  promoting  the learned checkpoint copied into model_dir/learns/<n>/, then
             moved into model_dir with the index and the record in one
             folders.change (all or nothing), so a reader (the board,
             mnist_test.py) sees it whole or not at all.
When a digit's recall falls more than RECALL_DROP, or the accuracy more
than ACCURACY_DROP, the learned checkpoint is not promoted but held in
learns/<n>/, and LearnHeld says what fell: accept() puts it in service,
discard() removes it (mnist_learn.py --accept-worse, --discard; the
board's "use it anyway" and "discard"). Each learn is an entry of the
folder's one record (folders.learn_history: its settings, its check, the
trainer's options before and after it, its state); undo() takes the
last promoted learn out of service into its own learns/<n>/, redo() puts
the last undone one back: no checkpoint is ever written over. A trainer
that fails or is stopped (Ctrl-C, SIGTERM, Watch.stop) leaves model_dir
as it was, the staging folder removed and the folder's lock released. The
course scripts are run, never imported. Its settings are declared once
(OPTIONS): mnist_learn.py's flags, the board's --learn-* flags.
"""
import contextlib
import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from . import checkpoints, cli, files, folders, keep, records
from .errors import DataError

DEFAULT_STEPS = 600  # steps past the newest checkpoint (docs/teach.md, "What it gives")
RECALL_DROP = 0.02  # a digit's recall on the test records may fall this much (2 points) before a learn is held
ACCURACY_DROP = 0.005  # and the accuracy this much (0.5 points)
PROGRESS_LINES = 20  # trainer loss lines a learn asks for: a progress step every 5% of its steps
STAGES = ("preparing", "training", "checking", "promoting")
STAGING = "STAGING"  # the staging folder as a learn's lines name it (docs/teach.md's word): never a temporary path
GENERATOR = "mnist_generateds.py"
TRAINER_STEP = re.compile(r"After (\d+) training steps, loss")  # the trainer's loss line, as the course prints it

# A learn's settings, each once (cli.Options, as mnist_backward.OPTIONS): mnist_learn.py's flags, which another
# script's parser takes under a prefix (OPTIONS.prefixed("learn", "steps", "share"): --learn-steps, --learn-share).
Option = cli.ScriptOption
OPTIONS = cli.Options([
    Option("model_dir", "./model/", "the model folder to learn into", type=cli.path),
    Option("keep_dir", keep.DEFAULT_FOLDER, "the kept digits (with their label file <keep-dir>.txt beside)",
           type=cli.path),
    Option("steps", DEFAULT_STEPS, "steps to train past the newest checkpoint", minimum=1, constant="DEFAULT_STEPS"),
    Option("share", records.MIX_SHARE, "part of every batch drawn from the kept digits", above=0, below=1),
    Option("data_dir", records.DATA_DIR, "the training TFRecords (mnist_generateds.py's --data-dir); its "
           f"{records.TEST_FILE} checks the learned model", type=cli.path),
])


class LearnFailed(DataError):
    """A learn whose generator, trainer or check did not end well; the model folder is as it was. str(): one line."""


class LearnStopped(LearnFailed):
    """A learn ended by Watch.stop() (the board stopping); the model folder is as it was."""


class LearnHeld(DataError):
    """A learn whose checkpoint was not promoted: a digit's recall or the accuracy fell past the limits. str(): one
    line saying what fell and how to accept or discard it; entry: its learn history entry (state "held")."""

    def __init__(self, message, entry):
        super().__init__(message)
        self.entry = entry


class Watch:
    """A learn as its caller follows it and stops it (the board's Learning, mnist_learn.py).

    out(line): each line the learn and its scripts print, the staging
    folder named STAGING; progress(stage, step, steps): as each of STAGES
    begins, and at each step the trainer reports (step, steps: the
    global_steps; None outside training). stop(): ends the script running
    now (SIGTERM) and makes the learn raise LearnStopped once it has
    cleaned up (the staging folder removed, the lock released, the model
    folder as it was); thread-safe.
    """

    def __init__(self, out=print, progress=None):
        self.out, self.progress = out, progress or (lambda stage, step, steps: None)
        self.named, self.stage, self.steps = [], None, None  # named: [(a path, the name lines give it)]
        self.stopping, self.lock, self.child = threading.Event(), threading.Lock(), None

    def name(self, path, shown):
        """Lines say `shown` for `path` (a folder of the learn's own: the kept digits' snapshot, the staging)."""
        self.named.append((path, shown))

    def shown(self, line):
        """line with the learn's own folders named as the user knows them (name)."""
        for path, shown in self.named:
            line = line.replace(path, shown)
        return line

    def say(self, line):
        """One line: printed (out), and a trainer's loss line a step of the training stage."""
        self.out(self.shown(line))
        found = TRAINER_STEP.match(line) if self.stage == "training" else None
        if found:
            self.progress("training", int(found.group(1)), self.steps)

    def begin(self, stage, step=None, steps=None):
        """A stage begins (one of STAGES)."""
        self.stage, self.steps = stage, steps
        self.progress(stage, step, steps)

    def stop(self, kill=False):
        """Stop the learn: SIGTERM to the script running now (kill: SIGKILL, for one that does not end)."""
        with self.lock:
            self.stopping.set()
            if self.child is not None and self.child.poll() is None:
                self.child.kill() if kill else self.child.terminate()


@dataclasses.dataclass
class Plan:
    """One learn's settings: OPTIONS' (model_dir, keep_dir, steps, share, data_dir), the trainer's extra flags,
    whether a checkpoint that made things worse is promoted anyway, and where the course scripts are."""
    model_dir: str
    keep_dir: object
    steps: int = DEFAULT_STEPS
    data_dir: str = records.DATA_DIR
    share: float = records.MIX_SHARE
    script_dir: str = cli.REPO_DIR
    trainer_args: tuple = ()
    accept_worse: bool = False


def learn(model_dir, keep_dir, steps=DEFAULT_STEPS, data_dir=records.DATA_DIR, share=records.MIX_SHARE,
          trainer_args=(), accept_worse=False, watch=None):
    """Train model_dir's newest checkpoint `steps` more steps with the kept digits mixed in, check it, promote it;
    returns the learned checkpoint's prefix in model_dir.

    keep_dir: the kept digits, a folder in the course's JPG layout with its
    label file (or its keep.KeptDigits store); data_dir: the training
    TFRecords (a folder, file or pattern), its folder's test records the
    check's; share: the part of every batch drawn from the kept digits (0 <
    share < 1). trainer_args: more flags for the trainer (e.g.
    ("--learning-rate-base", "0.01")). accept_worse: promote even when the
    check finds it worse. watch: a Watch, which hears each line and stage
    and may stop the learn (None: lines printed).
    Raises DataError when model_dir is gone or holds no checkpoint, a
    learn waits there for a choice, or the kept digits are none or
    unreadable; LearnFailed when a script fails, LearnStopped after
    watch.stop(), KeyboardInterrupt after a Ctrl-C (model_dir unchanged
    each time); LearnHeld when the learned checkpoint made things worse
    (it waits in learns/<n>/).
    """
    plan = Plan(model_dir, keep_dir, steps, data_dir, share, trainer_args=tuple(trainer_args),
                accept_worse=accept_worse)
    watch = watch or Watch()
    with one_at_a_time(model_dir):  # before anything is read: a trainer writing the folder refuses this learn
        return _learn(plan, watch)


def _learn(plan, watch):
    model_dir = plan.model_dir
    before = checkpoints.latest(model_dir)
    if before is None:
        raise gone(model_dir) if not os.path.isdir(model_dir) else DataError(
            f"{model_dir}: no checkpoint to learn from; train one first "
            f"(`{cli.command('mnist_backward.py', '--model-dir', model_dir)}`)")
    held = [entry for entry in folders.learn_history(model_dir)[0] if entry.get("state") == "held"]
    if held:
        raise DataError(f"{model_dir}: learn {held[-1]['learn']}'s checkpoint waits for your choice; "
                        f"{choices(model_dir)}, then learn again")
    store = plan.keep_dir if isinstance(plan.keep_dir, keep.KeptDigits) else keep.KeptDigits(plan.keep_dir)
    network = checkpoints.folder_network(model_dir) or checkpoints.folder_network(
        model_dir, checkpoints.read_checkpoint(before))
    if network is None:
        raise DataError(f"{before}: holds no network this project knows; learn needs a folder its trainers wrote")
    target = checkpoints.step_of(before) + plan.steps
    with tempfile.TemporaryDirectory(prefix="mnist-learn-") as staging:
        watch.name(os.path.join(staging, "kept", os.path.basename(store.folder)), store.folder)
        watch.name(staging, STAGING)
        watch.begin("preparing")
        kept_data, count = prepare(plan, store, staging, watch)
        stage(before, staging)
        watch.begin("training", checkpoints.step_of(before), target)
        batch = folders.folder_record(model_dir).get("batch_size")
        run([script(network.train_script, plan.script_dir), "--model-dir", staging, "--data-dir", plan.data_dir,
             "--mix-records", f"{os.path.join(kept_data, records.TRAIN_FILE)}:{plan.share}", "--steps", str(target),
             "--print-every", str(max(1, plan.steps // PROGRESS_LINES)), "--quiet",
             *(["--batch-size", str(batch)] if isinstance(batch, int) else []), *plan.trainer_args],
            watch, f"nothing learned; {model_dir} is unchanged")
        learned = checkpoints.latest(staging)
        if learned is None or checkpoints.step_of(learned) != target:
            raise LearnFailed(f"{network.train_script} ended without a checkpoint at step {target}; "
                              f"{model_dir} is unchanged")
        watch.begin("checking")
        found = check(plan, network, before, learned, kept_data, watch)
        watch.begin("promoting")
        entry = {"before": os.path.basename(before), "after": os.path.basename(learned), "check": found,
                 "settings": {"steps": plan.steps, "share": plan.share, "data_dir": plan.data_dir,
                              "keep_dir": store.folder, "kept": count, "trainer_args": list(plan.trainer_args)},
                 "options": {"after": unstaged(trainer_options(folders.folder_record(staging)), staging, model_dir)}}
        after = promote(learned, plan, entry, watch)
    watch.say(f"learned: {after} (from {before}); go back with "
              f"`{cli.command('mnist_learn.py', '--undo', '--model-dir', model_dir)}`")
    return after


def prepare(plan, store, staging, watch):
    """The preparing stage: the kept digits' snapshot in STAGING/kept, written as TFRecords into STAGING/data by
    the generator; returns (that data folder, how many digits)."""
    found = os.path.isfile(store.labels)  # before the snapshot, which would make the keep folder
    folder, labels, count = store.snapshot(os.path.join(staging, "kept")) if found else (None, None, 0)
    if not count:
        raise DataError(f"{store.labels}: no kept digits{'' if found else ' (label file not found)'}; keep some on "
                        "the board first")
    watch.say(f"learning from {count} kept digit{'s' * (count != 1)} of {store.folder} into {plan.model_dir}")
    data = os.path.join(staging, "data")
    run([script(GENERATOR, plan.script_dir), "--train-images", folder, "--train-labels", labels, "--test-images",
         folder, "--test-labels", labels, "--data-dir", data, "--workers", "1", "--quiet"],
        watch, f"the kept digits were not turned into TFRecords; {plan.model_dir} is unchanged")
    return data, count


def gone(model_dir):
    """The DataError of a model folder that is not there (deleted or moved, or never made), or is a file."""
    if os.path.isfile(model_dir):  # a picture or a label file given as --model-dir: no folder to train into there
        return checkpoints.a_file(model_dir, "mnist_learn.py")
    return DataError(f"{model_dir}: the model folder is not there (not trained yet, or gone: deleted or moved?); "
                     f"nothing to learn from: train one (`{cli.command('mnist_backward.py', '--model-dir', model_dir)}`)"
                     " or give another --model-dir")


_learning, _learning_lock = set(), threading.Lock()  # the model folders a learn of this process works on


@contextlib.contextmanager
def one_at_a_time(model_dir):
    """Around a learn, an undo, a redo, an accept or a discard of model_dir: one at a time, across threads (the
    board's) and processes.

    Processes: the one-writer lock of model_dir (folders.FolderLock) that
    the trainer takes too, so that a learn and a trainer never write one
    folder at once; removed at the end. Raises DataError naming the folder,
    and the process that writes it, when another holds it.
    """
    key = os.path.realpath(model_dir)
    with _learning_lock:
        if key in _learning:
            raise DataError(f"{model_dir}: another learn is working on this model folder; wait until it ends")
        _learning.add(key)
    try:
        # A folder that is not there has no writer to wait for (and nothing to learn from: learn() says so).
        with folders.FolderLock(model_dir, "--model-dir", "a learn") if os.path.isdir(model_dir) else \
                contextlib.nullcontext():
            yield
    finally:
        with _learning_lock:
            _learning.discard(key)


def script(name, script_dir):
    """The path of the course script `name` in script_dir (else where cli.script_file finds it)."""
    path = os.path.join(script_dir, name)
    return path if os.path.isfile(path) else cli.script_file(name)


def run(command, watch, failed):
    """Run a course script (command[0]) with this Python, each line it prints (stdout and stderr) given to watch.say.

    Raises LearnFailed ("<script> exited with status N (<its last line, up
    to a semicolon>); <failed>") when it exits otherwise than with 0;
    LearnStopped after watch.stop(). On Ctrl-C or SIGTERM to this process
    (KeyboardInterrupt) the script, which a signal to the process group
    reached too, or else SIGTERM now, ends (a trainer saves in the staging
    folder); then KeyboardInterrupt goes on.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}  # read back as utf-8, whatever the locale
    last = ""
    with watch.lock:
        if watch.stopping.is_set():
            raise LearnStopped(f"stopped; {failed.rsplit('; ', 1)[-1]}")
        child = watch.child = subprocess.Popen([sys.executable, *command], stdout=subprocess.PIPE,
                                               stderr=subprocess.STDOUT, text=True, encoding="utf-8", errors="backslashreplace", env=env)
    with child:
        try:
            for line in child.stdout:
                last = line.rstrip("\n") or last
                watch.say(line.rstrip("\n"))
        except KeyboardInterrupt:
            if child.poll() is None:
                child.terminate()  # a signal to this process alone: its script stops too
            rest, _ = child.communicate()
            for line in rest.splitlines():
                watch.say(line)
            raise
        finally:
            with watch.lock:
                watch.child = None
        status = child.wait()
    if watch.stopping.is_set():
        raise LearnStopped(f"stopped; {failed.rsplit('; ', 1)[-1]}")
    if status != 0:
        name, signum = os.path.basename(command[0]), -status if status < 0 else status - 128
        why = f"stopped by {signal.Signals(signum).name}" if signum in set(signal.Signals) else \
            f"exited with status {status}"
        said = watch.shown(last.strip().removeprefix("error: ").split(";")[0])  # a one-line error's first part
        raise LearnFailed(f"{name} {why} ({said}); {failed}")


def stage(before, staging):
    """Copy the checkpoint `before` (its files), its folder's record and an index naming it into `staging`."""
    model_dir = os.path.dirname(before) or os.curdir
    for path in glob.glob(glob.escape(before) + ".*"):
        shutil.copy2(path, staging)
    record = os.path.join(model_dir, folders.FOLDER_FILE)
    if os.path.isfile(record):
        shutil.copy2(record, staging)
    name = os.path.basename(before)
    folders.write_index(staging, name, [name])


# ---------------------------------------------------------------- the check


def test_folder(data_dir):
    """The folder whose test records go with the training records data_dir (a folder, a file or a pattern), or
    None when it holds no records.TEST_FILE."""
    folder = data_dir if os.path.isdir(data_dir) else os.path.dirname(data_dir) or os.curdir
    return folder if os.path.isfile(os.path.join(folder, records.TEST_FILE)) else None


def check(plan, network, before, learned, kept_data, watch):
    """The checking stage: the checkpoints `before` and `learned` scored by the network's evaluator on the test
    records of plan.data_dir (when it has them) and on the kept digits, in one run. Returns the check:

    {"test": {"records": path, "count": n, "accuracy": [before, after],
    "recall": [[before, after] of each digit, None where the test records
    hold none of it]} or None (no test records: said in a line),
    "kept": {"count": k, "right": [before, after]}, "fell": [what fell past
    the limits: {"digit": d or None for the accuracy, "before", "after"}]}.
    """
    tests = test_folder(plan.data_dir)
    if tests is None:
        watch.say(f"warning: no {records.TEST_FILE} beside {plan.data_dir}: the learned checkpoint is checked on your "
                  "digits only")
    report = os.path.join(os.path.dirname(learned), "check.json")  # in the staging folder
    run([script(network.test_script, plan.script_dir), "--checkpoint", before, "--checkpoint", learned,
         *[flag for folder in filter(None, (tests, kept_data)) for flag in ("--data-dir", folder)],
         "--report-json", report], watch, f"the learned checkpoint could not be checked; {plan.model_dir} is unchanged")
    with open(report, encoding="utf-8") as f:
        scored = json.load(f)  # [before on tests, before on kept, learned on tests, learned on kept]; no tests: 2
    width = 2 if tests else 1
    mine = [scored[width - 1], scored[2 * width - 1]]
    found = {"test": None, "kept": {"count": mine[0]["records"], "right": [r["correct"] for r in mine]}, "fell": []}
    if tests:
        test = [scored[0], scored[width]]
        recall = [[a["recall"], b["recall"]] for a, b in zip(test[0]["per_digit"], test[1]["per_digit"])]
        found["test"] = {"records": os.path.join(tests, records.TEST_FILE), "count": test[0]["records"],
                         "accuracy": [r["accuracy"] for r in test],
                         "recall": [pair if None not in pair else None for pair in recall]}
        found["fell"] = [{"digit": d, "before": pair[0], "after": pair[1]} for d, pair in enumerate(
            found["test"]["recall"]) if pair and pair[0] - pair[1] > RECALL_DROP + 1e-9]
        if test[0]["accuracy"] - test[1]["accuracy"] > ACCURACY_DROP + 1e-9:
            found["fell"].insert(0, {"digit": None, "before": test[0]["accuracy"], "after": test[1]["accuracy"]})
    watch.say("checked: " + summary(found))
    if found["test"]:
        watch.say("recall of each digit, before -> after: " + ", ".join(
            f"{d} {pair[0]:.3f}->{pair[1]:.3f}" for d, pair in enumerate(found["test"]["recall"]) if pair))
    return found


def summary(found):
    """A check in one line: `MNIST 0.9381 → 0.9386; digit 8 recall 0.951 → 0.938; your digits 23/30 → 30/30` (the
    digit whose recall fell most; `no digit's recall fell` when none did)."""
    parts, test = [], found["test"]
    if test:
        parts.append(f"MNIST {test['accuracy'][0]:.4f} → {test['accuracy'][1]:.4f}")
        moved = [(pair[1] - pair[0], d, pair) for d, pair in enumerate(test["recall"]) if pair]
        change, digit, pair = min(moved) if moved else (0, None, None)
        parts.append(f"digit {digit} recall {pair[0]:.3f} → {pair[1]:.3f}" if change < 0 else "no digit's recall fell")
    kept = found["kept"]
    parts.append(f"your digits {kept['right'][0]}/{kept['count']} → {kept['right'][1]}/{kept['count']}")
    return "; ".join(parts)


def fell(found):
    """What fell past the limits, in words: `digit 8's recall fell 0.951 → 0.921 (-3.0 points)`, joined by "and"."""
    return " and ".join(
        (f"the test accuracy fell {f['before']:.4f} → {f['after']:.4f}" if f["digit"] is None else
         f"digit {f['digit']}'s recall fell {f['before']:.3f} → {f['after']:.3f}")
        + f" ({100 * (f['after'] - f['before']):+.1f} points)" for f in found["fell"])


# ---------------------------------------------------------------- the folder's learns: promote, accept, undo, redo


def trainer_options(record):
    """The trainer's options in a folder record: all but the network, its records and the learn history."""
    return {k: v for k, v in record.items() if k not in ("network", "records", folders.LEARNS, folders.REDO)}


def unstaged(value, staging, model_dir):
    """value (the staging trainer's options) with model_dir for its model_dir and STAGING for the staging folder in
    any other text: a record never names a temporary folder."""
    if isinstance(value, dict):
        return {k: model_dir if k == "model_dir" else unstaged(v, staging, model_dir) for k, v in value.items()}
    return value.replace(staging, STAGING) if isinstance(value, str) else value


def learns_folder(model_dir, number):
    """<model_dir>/learns/<number>: learn `number`'s checkpoint while it is out of service."""
    return os.path.join(model_dir, folders.LEARNS_FOLDER, str(number))


def moves(prefix, folder, coming):
    """[(from, to)] moving a checkpoint's files (prefix.*) into `folder`: the .index last when they come into the
    model folder (coming), first when they leave it (no reader takes a checkpoint half there)."""
    paths = sorted(glob.glob(glob.escape(prefix) + ".*"), key=lambda p: (p.endswith(".index"), p.endswith(".meta")))
    return [(p, os.path.join(folder, os.path.basename(p))) for p in (paths if coming else paths[::-1])]


def promote(learned, plan, entry, watch):
    """Copy the checkpoint `learned` into model_dir/learns/<n>/ as learn n, then put it in service (held instead,
    raising LearnHeld, when the check says it made things worse and plan.accept_worse is not set); its prefix.

    A failure at any point (a full disk, a signal) leaves model_dir as it
    was: the copy is removed, folders.change puts back what it moved.
    """
    model_dir = plan.model_dir
    if not os.path.isdir(model_dir):
        raise LearnFailed(f"{gone(model_dir)}; the learned checkpoint was not kept")
    record = folders.folder_record(model_dir)
    learns, redo = folders.learn_history(model_dir, record)
    number = 1 + max([e.get("learn", 0) for e in learns if isinstance(e.get("learn"), int)] +
                     [int(n) for n in files.listing(os.path.join(model_dir, folders.LEARNS_FOLDER)) if n.isdecimal()]
                     + [0])
    folder = learns_folder(model_dir, number)
    made = files.missing_folders(folder)
    try:
        os.makedirs(folder)
        for path in glob.glob(glob.escape(learned) + ".*"):
            shutil.copyfile(path, os.path.join(folder, os.path.basename(path)))
        entry.update(learn=number, changed=time.time())
        entry["options"]["before"] = trainer_options(record)
        worse = bool(entry["check"]["fell"]) and not plan.accept_worse
        if worse:
            entry["state"] = "held"
            folders.change(model_dir, record={**record, folders.LEARNS: learns + [entry], folders.REDO: redo})
        else:
            bring_in(model_dir, record, learns + [entry], entry)
    except BaseException as e:
        shutil.rmtree(folder, ignore_errors=True)
        files.remove_empty_folders(made)
        if isinstance(e, OSError):
            raise DataError(f"{model_dir}: cannot add the learned checkpoint ({e.strerror or e}); it is as it "
                            "was") from None
        raise
    if worse:
        raise LearnHeld(f"not promoted: {fell(entry['check'])}, past the limits ({100 * RECALL_DROP:g} points for a "
                        f"digit, {100 * ACCURACY_DROP:g} in all); it waits in {folder}: {choices(model_dir)}", entry)
    return os.path.join(model_dir, entry["after"])


def choices(model_dir):
    """What to do with a held learn, as commands: `use it anyway with ..., or discard it with ...`."""
    return (f"use it anyway with `{cli.command('mnist_learn.py', '--accept-worse', '--model-dir', model_dir)}`, or "
            f"discard it with `{cli.command('mnist_learn.py', '--discard', '--model-dir', model_dir)}`")


def bring_in(model_dir, record, learns, entry, redo=()):
    """Put learn `entry`'s checkpoint, in its learns/<n>/, in service: its files moved into model_dir, the index
    naming it newest, the record holding `learns` with the entry promoted, the trainer's options after it and
    `redo` the learns left to redo (none after a new learn or an accept: they end what could be redone). All or
    nothing (folders.change)."""
    folder = learns_folder(model_dir, entry["learn"])
    names = [n for n in folders.indexed_names(model_dir) if n != entry["after"]] or [entry["before"]]
    entry.update(state="promoted", changed=time.time())
    record = {**record, **entry.get("options", {}).get("after", {}), folders.LEARNS: learns, folders.REDO: list(redo)}
    folders.change(model_dir, moves(os.path.join(folder, entry["after"]), model_dir, coming=True),
                   index=(entry["after"], names + [entry["after"]]), record=record)
    files.remove_empty_folders([folder, os.path.dirname(folder)])


@contextlib.contextmanager
def history(model_dir):
    """Around an undo, a redo, an accept or a discard: the folder held (one_at_a_time), and (record, learns,
    redo, the newest checkpoint's name or None) read; DataError when the folder is gone."""
    with one_at_a_time(model_dir):
        if not os.path.isdir(model_dir):
            raise gone(model_dir)
        record = folders.folder_record(model_dir)
        learns, redo = folders.learn_history(model_dir, record)
        newest = checkpoints.latest(model_dir)
        yield record, learns, redo, newest and os.path.basename(newest)


def undo(model_dir, out=print):
    """Take the last promoted learn out of service: its checkpoint moved into learns/<n>/ (a folder of its own), the
    one from before named newest again; returns the prefix in use again.

    Raises DataError when no learn is recorded, when the newest checkpoint
    is not one a learn promoted (trained further since), or the one from
    before is gone: nothing is changed then.
    """
    with history(model_dir) as (record, learns, redo, newest):
        if not learns:
            raise DataError(f"{os.path.join(model_dir, folders.FOLDER_FILE)}: no learn to undo")
        entry = next((e for e in reversed(learns) if e.get("state") == "promoted" and e["after"] == newest), None)
        if entry is None and not any(e.get("state") == "promoted" for e in learns):
            raise DataError(f"{model_dir}: no learn to undo (each one here is undone, held or discarded)")
        if entry is None:
            raise DataError(f"{model_dir}: its newest checkpoint is {newest}, not one a learn added; nothing undone "
                            "(move the newer checkpoint files away first)")
        before = os.path.join(model_dir, entry["before"])
        if checkpoints.checkpoint_format(before) is None:
            raise DataError(f"{before}: the checkpoint from before the learn is gone; nothing undone")
        number = entry.setdefault("learn", 1 + max(e.get("learn", 0) for e in learns))
        folder = learns_folder(model_dir, number)
        os.makedirs(folder, exist_ok=True)
        entry.update(state="undone", changed=time.time())
        names = [n for n in folders.indexed_names(model_dir) if n != entry["after"]] or [entry["before"]]
        try:
            folders.change(model_dir, moves(os.path.join(model_dir, entry["after"]), folder, coming=False),
                           index=(entry["before"], names),
                           record={**record, **entry.get("options", {}).get("before", {}), folders.LEARNS: learns,
                                   folders.REDO: redo + [number]})
        except BaseException:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
            raise
    out(f"back to {before}; the learned checkpoint is in {folder} "
        f"(`{cli.command('mnist_learn.py', '--redo', '--model-dir', model_dir)}` puts it back)")
    return before


def redo(model_dir, out=print):
    """Put the learn the last undo took back in service again; returns its prefix. Raises DataError when there is
    none, or when the newest checkpoint is no longer the one it was learned from: nothing is changed then."""
    with history(model_dir) as (record, learns, redo_list, newest):
        entry = next((e for e in learns if redo_list and e.get("learn") == redo_list[-1]), None)
        if entry is None:
            raise DataError(f"{model_dir}: no undone learn to redo")
        if entry["before"] != newest:
            raise DataError(f"{model_dir}: its newest checkpoint is {newest}, not {entry['before']} that learn "
                            f"{entry['learn']} started from; nothing redone")
        bring_in(model_dir, record, learns, entry, redo_list[:-1])
    after = os.path.join(model_dir, entry["after"])
    out(f"learned: {after} again (from {os.path.join(model_dir, entry['before'])}); go back with "
        f"`{cli.command('mnist_learn.py', '--undo', '--model-dir', model_dir)}`")
    return after


def held_entry(learns, model_dir):
    """The learn that waits for a choice (state "held"); DataError when none does."""
    entry = next((e for e in reversed(learns) if e.get("state") == "held"), None)
    if entry is None:
        raise DataError(f"{model_dir}: no learned checkpoint waits for a choice")
    return entry


def accept(model_dir, out=print):
    """Put the held learn's checkpoint in service anyway (mnist_learn.py --accept-worse, the page's "use it
    anyway"); returns its prefix. DataError when none is held, or the folder moved on since it was learned."""
    with history(model_dir) as (record, learns, _, newest):
        entry = held_entry(learns, model_dir)
        if entry["before"] != newest:
            raise DataError(f"{model_dir}: its newest checkpoint is now {newest}, not {entry['before']} that learn "
                            f"{entry['learn']} started from; discard it and learn again")
        bring_in(model_dir, record, learns, entry)
    after = os.path.join(model_dir, entry["after"])
    out(f"learned: {after} (from {os.path.join(model_dir, entry['before'])}), though {fell(entry['check'])}; go "
        f"back with `{cli.command('mnist_learn.py', '--undo', '--model-dir', model_dir)}`")
    return after


def discard(model_dir, out=print):
    """Remove the held learn's checkpoint (mnist_learn.py --discard, the page's "discard"); the record keeps the
    learn as discarded. DataError when none is held."""
    with history(model_dir) as (record, learns, redo_list, _):
        entry = held_entry(learns, model_dir)
        entry.update(state="discarded", changed=time.time())
        folders.change(model_dir, record={**record, folders.LEARNS: learns, folders.REDO: redo_list})
        shutil.rmtree(learns_folder(model_dir, entry["learn"]), ignore_errors=True)
        files.remove_empty_folders([os.path.join(model_dir, folders.LEARNS_FOLDER)])
    out(f"discarded learn {entry['learn']}'s checkpoint {entry['after']}; {model_dir} goes on with {entry['before']}")


def standing(model_dir):
    """Where model_dir's learns stand (None: a model without a folder), for the board's page: {"last": the learn
    changed last (its entry) or None, "undo": whether undo() would do something, "redo": whether redo() would,
    "held": the held learn or None}."""
    learns, redo_list = folders.learn_history(model_dir) if model_dir else ([], [])
    if not learns:
        return {"last": None, "undo": False, "redo": False, "held": None}
    newest = checkpoints.latest(model_dir)
    newest = newest and os.path.basename(newest)
    last = max(enumerate(learns), key=lambda item: (item[1].get("changed", 0), item[0]))[1]
    nxt = next((e for e in learns if redo_list and e.get("learn") == redo_list[-1]), None)
    return {"last": last, "undo": any(e.get("state") == "promoted" and e["after"] == newest for e in learns),
            "redo": nxt is not None and nxt["before"] == newest,
            "held": next((e for e in reversed(learns) if e.get("state") == "held"), None)}
