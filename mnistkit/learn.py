"""Learn from the kept digits: the course's own pipeline, run on a copy of a model folder, checked, then promoted.

learn(model_dir, keep_dir) runs, as commands a user could type
(docs/teach.md, "Learning from them"), in a staging folder (STAGING
below), its stages (STAGES) said to a Watch as they begin:
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
                 --decay-from <newest step>
             (a share of every batch from the kept digits; a loss line, so a
             progress step, every 5% of the steps; the learning rate's decay
             counted from the learn's first step: rate_flags);
  checking   python mnist_test.py --checkpoint BEFORE --checkpoint LEARNED
                 --data-dir DATA --data-dir STAGING/data --report-json STAGING/check.json
             the checkpoint before and the learned one on DATA's test records
             (accuracy, each digit's recall) and on the kept digits (how many
             are read right), in one process;
  promoting  the learned checkpoint copied into model_dir/learns/<n>/, then
             moved into model_dir with the index and the record in one
             folders.change (all or nothing), so a reader (the board,
             mnist_test.py) sees it whole or not at all.
When the check finds a digit's recall or precision, or the accuracy,
fallen past promotion's limits (promotion.judge), the learned checkpoint
is held in learns/<n>/ and LearnHeld says what fell. Holding, accepting,
discarding, undo and redo, the folder's lock and what the model in
service knows of the kept digits are mnistkit.promotion's; each learn is
an entry of the folder's one record (promotion.learn_history: its
settings, its check, the trainer's options before and after it, its
state). While a script prints nothing, a line each TICK_SECS says what
the learn does (Watch.tick). A trainer that fails or is stopped (Ctrl-C, SIGTERM, Watch.stop) leaves model_dir
as it was, the staging folder removed and the folder's lock released. The
course scripts are run, never imported. Its settings are declared once
(OPTIONS): mnist_learn.py's flags, the board's --learn-* flags, both
read into one Plan (Plan.of) that goes whole to learn().
"""
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

import tf_compat

from . import checkpoints, cli, files, folders, keep, promotion, records, tether
from .errors import DataError

DEFAULT_STEPS = 600  # steps past the newest checkpoint (docs/teach.md, "What it gives")
PROGRESS_LINES = 20  # trainer loss lines a learn asks for: a progress step every 5% of its steps
STAGES = ("preparing", "training", "checking", "promoting")
STAGING = "STAGING"  # the staging folder as a learn's lines name it (docs/teach.md's word): never a temporary path
# A staging folder's name in the temporary folder: this prefix, the learn's PID, "-", tempfile's letters (leftovers)
STAGING_PREFIX = "mnist-learn-"
STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"(\d+)-[a-z0-9_]+")
GENERATOR = "mnist_generateds.py"
# What lines say for a path in the staging that no name() covers, and the clauses never printed when they name one:
# a file said to be saved or reported there, which the learn's end removes (issue 53's stumble: "SIGTERM: ...;
# checkpoint saved to STAGING/..." then the staging removed; "report: STAGING/check.json" gone at the end).
STAGED = "the learn's working folder"
LEARNED = "the learned checkpoint"
SAVED_THERE = re.compile(r"\bsaved\b|^\s*report: ")
# the evaluator's line of one checkpoint on one set of test records (mnist_test.py's score_each), and what a learn's
# lines say for it when those records are the kept digits: a count of them read right, never a "test accuracy"
SCORED = re.compile(r"After (?P<step>\d+) training steps, test accuracy = (?P<accuracy>\S+) \((?P<checkpoint>.+), "
                    r"(?P<records>[^,()]+)\)$")
KEPT_SCORE = "After {step} training steps, your kept digits: {right} of {count} read right ({checkpoint})"
# the trainer's loss line, as the course prints it, and its last line: the step it has reached
TRAINER_STEP = re.compile(r"After (\d+) training steps, loss|done at step (\d+); ")

# A learn's settings, each once (cli.Options, as mnist_backward.OPTIONS): mnist_learn.py's flags, which another
# script's parser takes under a prefix (OPTIONS.prefixed("learn", "steps", "share"): --learn-steps, --learn-share).
Option = cli.ScriptOption
OPTIONS = cli.Options([
    Option("model_dir", "./model/", "the model folder to learn into", type=cli.path),
    Option("keep_dir", keep.DEFAULT_FOLDER, "the kept digits (with their label file <keep-dir>.txt beside)",
           type=cli.plain_path),
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


# Each script runs tethered to this process (tether.py): killed with SIGKILL, the learn takes its script with it.
TETHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tether.py")
KILL = getattr(signal, "SIGKILL", None)  # Watch.stop(kill=True), signal_script: none on Windows (kill() there)
STOP_GRACE_SECS = 30  # a script told to stop (Ctrl-C, SIGTERM) may take this long to save and end; then SIGKILL
TICK_SECS = 5  # a learn that prints nothing this long says what it is doing, how long, and the time left if known
DOING = {  # what a learn is doing, by key (Watch.doing; the page's words for each are in board.js, zh and en)
    "copying": "copying the kept digits", "generating": "turning the kept digits into TFRecords",
    "starting": "starting the trainer (loading TensorFlow, restoring the checkpoint)", "training": "training",
    "checking": "scoring the checkpoints before and after on the test records", "promoting": "putting it in service"}


class Watch:
    """A learn as its caller follows it and stops it (the board's Learning, mnist_learn.py).

    out(line): each line the learn and its scripts print, as shown() says
    it (no path inside the staging folder, which the learn's end removes:
    a clause saying a file was saved there is left out); progress(stage, step, steps): as each of STAGES
    begins, and at each step the trainer reports (step, steps: the
    global_steps; None while preparing, the learned checkpoint's while
    checking and promoting). stop(): ends the script running
    now (SIGTERM) and makes the learn raise LearnStopped once it has
    cleaned up (the staging folder removed, the lock released, the model
    folder as it was); thread-safe. While a script prints nothing for
    TICK_SECS, a line says what the learn is doing (DOING), for how long,
    and the time left once the trainer's steps give a rate (tick; the
    board's page shows `where()`).
    """

    def __init__(self, out=print, progress=None, clock=time.monotonic):
        self.out, self.progress = out, progress or (lambda stage, step, steps: None)
        self.named, self.stage, self.steps = [], None, None  # named: [(a path, the name lines give it)]
        self.kept_records = None  # (the kept digits' test records, their count): scored as a count (kept_scored)
        self.staging = None  # the staging folder (temporary)
        self.held = None  # the model folder's lock file the learn holds (run's tether removes it if we are killed)
        self.stopping, self.lock, self.child = threading.Event(), threading.Lock(), None
        self.clock, self.what, self.started, self.heard = clock, None, clock(), clock()
        self.step, self.timed = None, None  # the trainer's last step; timed: (first step seen, its time)

    def name(self, path, shown):
        """Lines say `shown` for `path` (a folder or file of the learn's own: the kept digits' snapshot, the
        checkpoints in the staging); the first named first."""
        self.named.append((path, shown))

    def kept_scored(self, records_path, count):
        """The evaluator's test records `records_path` are the `count` kept digits: its line scoring a checkpoint on
        them says how many were read right (KEPT_SCORE: `your kept digits: 5 of 5 read right`), not a test
        accuracy, which reads as the test set's."""
        self.kept_records = (records_path, count)

    def temporary(self, staging):
        """`staging` is the learn's staging folder, removed when the learn ends: a line never names a path inside
        it (shown), since none is there afterwards; after the paths name()d, any other one reads STAGED."""
        self.staging = staging

    def holding(self, lock):
        """The learn holds the model folder's lock file `lock` (a path): a script of it whose learn's process is gone
        (killed with SIGKILL) removes it with the staging folder (TETHER)."""
        self.held = lock

    def shown(self, line):
        """line as printed: a clause saying a file was saved or reported into the staging dropped, the staging
        path cut from one saying what was written there, the learn's own paths named as the user knows them
        (name), any other path in the staging called STAGED, a score on the kept digits a count of them read right
        (kept_scored); "" when nothing is left (not printed)."""
        scored = SCORED.match(line) if self.kept_records else None
        if scored and scored["records"] == self.kept_records[0]:
            count = self.kept_records[1]
            line = KEPT_SCORE.format(step=scored["step"], right=round(float(scored["accuracy"]) * count), count=count,
                                     checkpoint=scored["checkpoint"])
        staging = self.staging
        if staging:
            inside = re.escape(staging) + r"(?:[/\\][^\s,;():]*)?"
            kept = []
            for clause in line.split("; "):
                if re.search(inside, clause) and SAVED_THERE.search(clause):
                    continue  # "checkpoint saved to STAGING/...", "report: STAGING/check.json": gone at the end
                kept.append(re.sub(r" (?:to|into|in) " + inside + r"(?=$|[,;)])", "", clause))
            line = "; ".join(kept)
        for path, shown in self.named:
            line = line.replace(path, shown)
        return re.sub(inside, STAGED, line) if staging else line

    def say(self, line):
        """One line: printed (out) as shown() says it (not at all when nothing is left), and a trainer's loss line
        a step of the training stage."""
        self.heard = self.clock()
        shown = self.shown(line)
        if shown or not line:
            self.out(shown)
        found = TRAINER_STEP.match(line) if self.stage == "training" else None
        if found:
            self.step = int(found.group(1) or found.group(2))
            if self.timed is None:
                self.timed = (self.step, self.clock())
            self.what = "training"
            self.progress("training", self.step, self.steps)

    def begin(self, stage, step=None, steps=None):
        """A stage begins (one of STAGES)."""
        self.stage, self.steps, self.step, self.timed = stage, steps, step, None
        self.what, self.started = {"training": "starting"}.get(stage, stage), self.clock()
        self.progress(stage, step, steps)

    def doing(self, what):
        """What the stage does now: a key of DOING."""
        self.what, self.started = what, self.clock()

    def where(self):
        """(doing: a key of DOING or None, seconds it has taken, seconds left or None when no rate is known yet)."""
        now, left = self.clock(), None
        if self.what == "training" and self.timed and self.step is not None and self.steps and \
                self.step > self.timed[0]:
            left = (now - self.timed[1]) / (self.step - self.timed[0]) * max(0, self.steps - self.step)
        return self.what, now - self.started, left

    def tick(self):
        """A line saying what the learn does (where()), when no line came for TICK_SECS; True when one was said."""
        if self.clock() - self.heard < TICK_SECS or self.what is None:
            return False
        what, taken, left = self.where()
        self.heard = self.clock()
        self.out(f"{self.stage}: {DOING.get(what, what)} ({taken:.0f} s"
                 + (f", about {left:.0f} s left)" if left is not None else ")"))
        return True

    def stop(self, kill=False):
        """Stop the learn: SIGTERM to the script running now and the processes it started (kill: SIGKILL, for one
        that does not end; signal_script)."""
        with self.lock:
            self.stopping.set()
            if self.child is not None and self.child.poll() is None:
                signal_script(self.child, KILL if kill else signal.SIGTERM)


@dataclasses.dataclass
class Plan:
    """One learn's settings, the one object that goes from a caller (mnist_learn.py, the board's teach.Learning) to
    learn(): each of OPTIONS' (model_dir, keep_dir, steps, share, data_dir), the trainer's extra flags, whether a
    checkpoint that made things worse is promoted anyway, and where the course scripts are.

    keep_dir: a folder (str) or its keep.KeptDigits store. Built from parsed
    flags by Plan.of(args) (mnist_learn.py) or Plan.of(args, "learn")
    (mnist_app.py --serve's --learn-steps, ...): a setting added to OPTIONS
    reaches learn() with no caller changed.
    """
    model_dir: str = "./model/"
    keep_dir: object = keep.DEFAULT_FOLDER
    steps: int = DEFAULT_STEPS
    data_dir: str = records.DATA_DIR
    share: float = records.MIX_SHARE
    script_dir: str = cli.REPO_DIR
    trainer_args: tuple = ()
    accept_worse: bool = False

    @classmethod
    def of(cls, args, prefix=None, **more):
        """The Plan of parsed flags `args` (an argparse Namespace, after OPTIONS.check): each of OPTIONS' values,
        read as `<prefix>_<name>` with a prefix (another script's parser: OPTIONS.prefixed); those args lacks keep
        their defaults; `more` sets the rest (model_dir, keep_dir, trainer_args, accept_worse, ...)."""
        values = {o.name: getattr(args, f"{prefix}_{o.name}" if prefix else o.name) for o in OPTIONS
                  if hasattr(args, f"{prefix}_{o.name}" if prefix else o.name)}
        return cls(**{**values, **more})

    def to(self, model_dir, keep_dir):
        """This plan for another model folder and keep store (the board's: the folder it serves when learning)."""
        return dataclasses.replace(self, model_dir=model_dir, keep_dir=keep_dir)


assert {o.name for o in OPTIONS} <= {f.name for f in dataclasses.fields(Plan)}, "each of OPTIONS is a Plan field"


def learn(plan, keep_dir=None, steps=None, data_dir=None, share=None, trainer_args=None, accept_worse=None,
          watch=None):
    """Train plan.model_dir's newest checkpoint plan.steps more steps with the kept digits mixed in, check it,
    promote it; returns the learned checkpoint's prefix in the model folder.

    plan: a Plan (mnist_learn.py's and the board's one object). For a
    notebook, a model folder's path with the Plan's fields as keywords
    (learn("model", "my_digits", steps=100)) builds one. plan.keep_dir:
    the kept digits, a folder in the course's JPG layout with its label
    file (or its keep.KeptDigits store); data_dir: the training TFRecords
    (a folder, file or pattern), its folder's test records the check's;
    share: the part of every batch drawn from the kept digits (0 < share
    < 1); trainer_args: more flags for the trainer (e.g.
    ("--learning-rate-base", "0.01")); accept_worse: promote even when the
    check finds it worse. watch: a Watch, which hears each line and stage
    and may stop the learn (None: lines printed).
    Raises DataError when the model folder is gone or holds no checkpoint,
    a learn waits there for a choice, data_dir names no training records
    (records.tfrecord_files: a typo is asked about), or the kept digits are none or
    unreadable; LearnFailed when a script fails, LearnStopped after
    watch.stop(), KeyboardInterrupt after a Ctrl-C (the model folder
    unchanged each time); LearnHeld when the learned checkpoint made things
    worse (it waits in learns/<n>/).
    """
    if not isinstance(plan, Plan):
        given = {"keep_dir": keep_dir, "steps": steps, "data_dir": data_dir, "share": share,
                 "trainer_args": None if trainer_args is None else tuple(trainer_args), "accept_worse": accept_worse}
        plan = Plan(plan, **{k: v for k, v in given.items() if v is not None})
    watch = watch or Watch()
    # before anything is read: a trainer writing the folder refuses this learn
    with promotion.one_at_a_time(plan.model_dir):
        watch.holding(os.path.join(plan.model_dir, folders.LOCK_FILE))
        return _learn(plan, watch)


def _learn(plan, watch):
    model_dir = plan.model_dir
    # What the command line names is looked up first: a mistyped folder is said before the model is read
    # (checkpoints.latest imports TensorFlow, seconds).
    if not os.path.isdir(model_dir):
        raise promotion.gone(model_dir)
    # strict: a record a learn would rewrite, losing the learns it holds, is named before any training
    held = [entry for entry in promotion.learn_history(model_dir, strict=True)[0] if entry.get("state") == "held"]
    if held:
        raise DataError(f"{model_dir}: learn {held[-1]['learn']}'s checkpoint waits for your choice; "
                        f"{promotion.choices(model_dir)}, then learn again")
    store = plan.keep_dir if isinstance(plan.keep_dir, keep.KeptDigits) else keep.KeptDigits(plan.keep_dir)
    if not os.path.isfile(store.labels):
        raise no_kept(store)
    records.tfrecord_files(plan.data_dir)  # a mistyped --data-dir: the trainer's one line, before any stage runs
    before = checkpoints.latest(model_dir)
    if before is None:
        there = checkpoints.holds_instead(model_dir)
        raise DataError(f"{model_dir}: no checkpoint to learn from{f', {there}' if there else ''}; train one first "
                        f"(`{cli.command(checkpoints.trainer_of(model_dir), '--model-dir', model_dir)}`)")
    network = checkpoints.folder_network(model_dir) or checkpoints.folder_network(
        model_dir, checkpoints.read_checkpoint(before))
    if network is None:
        raise checkpoints.course_original(before, checkpoints.read_checkpoint(before)) or DataError(
            f"{before}: holds no network this project knows; learn needs a folder its trainers wrote")
    target = checkpoints.step_of(before) + plan.steps
    with tempfile.TemporaryDirectory(prefix=f"{STAGING_PREFIX}{os.getpid()}-") as staging:  # leftovers' name
        snapshot = os.path.join(staging, "kept", os.path.basename(store.folder))  # keep.KeptDigits.snapshot's
        watch.name(snapshot, store.folder)
        watch.name(os.path.join(staging, os.path.basename(before)), before)  # its copy: the same checkpoint
        watch.temporary(staging)
        watch.begin("preparing")
        kept_data, kept = prepare(plan, store, staging, watch)
        count = len(kept)
        stage(before, staging)
        watch.begin("training", checkpoints.step_of(before), target)
        batch = folders.folder_record(model_dir).get("batch_size")
        run([script(network.train_script, plan.script_dir), "--model-dir", staging, "--data-dir", plan.data_dir,
             "--mix-records", f"{os.path.join(kept_data, records.TRAIN_FILE)}:{plan.share}", "--steps", str(target),
             "--print-every", str(max(1, plan.steps // PROGRESS_LINES)), "--quiet", "--history", "0",
             *(["--batch-size", str(batch)] if isinstance(batch, int) else []),
             *rate_flags(before), *plan.trainer_args],
            watch, f"nothing learned; {model_dir} is unchanged")
        learned = checkpoints.latest(staging)
        if learned is None or checkpoints.step_of(learned) != target:
            raise LearnFailed(f"{network.train_script} ended without a checkpoint at step {target}; "
                              f"{model_dir} is unchanged")
        watch.name(learned, LEARNED)  # gone with the staging: its lines call it what it is
        watch.begin("checking", target, target)  # the step the learned checkpoint holds, as its lines say
        found = check(plan, network, before, learned, kept_data, watch, count)
        watch.begin("promoting", target, target)
        entry = {"before": os.path.basename(before), "after": os.path.basename(learned), "check": found,
                 "settings": {"steps": plan.steps, "share": plan.share, "data_dir": plan.data_dir,
                              "keep_dir": store.folder, "kept": count, "trainer_args": list(plan.trainer_args),
                              "known": promotion.known_of(store, kept, model_dir, snapshot)},
                 "options": {"after": unstaged(trainer_options(folders.folder_record(staging)), staging, model_dir)}}
        after = promote(learned, plan, entry, watch)
    watch.say(f"learned: {after} (from {before}); go back with "
              f"`{cli.command('mnist_learn.py', '--undo', '--model-dir', model_dir)}`")
    return after


def nothing_new(plan, again="give --again", unknown=None):
    """The line (str) saying that plan.model_dir's model in service learned every digit kept in plan.keep_dir
    already, none kept, removed or relabelled since (promotion.unknown: 0 beside a learn promoted from this store),
    so that a learn would only train on the same digits again; None otherwise, and when the folder or the store
    cannot say (learn() then says what is wrong). mnist_learn.py says it and trains nothing, unless --again; the
    board's POST /board/learn refuses with it (409), unless ?again=1. again: how to learn anyway, in the line's
    words (the board's: its query). unknown: promotion.unknown's count for this folder and store when the caller
    has it already (the board's status counts it for the page), else None: counted here."""
    try:  # a store or folder that cannot be used: learn() says why, in its one line
        store = plan.keep_dir if isinstance(plan.keep_dir, keep.KeptDigits) else keep.KeptDigits(plan.keep_dir)
        if not os.path.isdir(plan.model_dir) or not os.path.isfile(store.labels):
            return None
        count = store.count()
        unknown = promotion.unknown(plan.model_dir, store) if unknown is None else unknown
        serving = [e for e in promotion.learn_history(plan.model_dir)[0] if e.get("state") == "promoted"]
    except (DataError, OSError):
        return None
    if unknown != 0 or not count or not serving:
        return None
    return (f"nothing new to learn: the model in service ({os.path.join(plan.model_dir, serving[-1]['after'])}, "
            f"learn {serving[-1].get('learn')}) learned {'the 1 digit' if count == 1 else f'all {count} digits'} kept "
            f"in {store.folder}, and none was "
            f"kept, removed or relabelled since; keep more digits (or correct some), or {again} to train on "
            f"them once more")


def leftovers(model_dirs=(), ours=False):
    """Remove what a learn whose process was killed (SIGKILL) between two of its scripts left behind, when no
    script's tether (TETHER) was there to remove it: staging folders in the temporary folder (tempfile.gettempdir())
    named for a PID that runs no more, and the lock file of each folder of model_dirs whose process is gone (any
    writer's: FolderLock would take it over silently). ours: this process's PID is gone too (no learn of its own
    runs yet: a board starting, mnist_learn.py); else its staging folders stay. Returns a line for each removed
    (str: `note: removed ...`, naming the path and the PID), [] when there was none; never raises (a folder that
    cannot be listed or removed is left as it is).
    """
    lines, me, temp = [], os.getpid(), tempfile.gettempdir()

    def gone(pid, path):  # path: the staging folder or lock file, whose time tells a PID given again (pid_alive)
        return ours if pid == me else not folders.pid_alive(pid, since=folders.modified(path))
    for name in sorted(files.listing(temp)):
        found = STAGING_NAME.fullmatch(name)
        path = os.path.join(temp, name)
        if found is None or os.path.islink(path) or not os.path.isdir(path) or not gone(int(found.group(1)), path):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            lines.append(f"note: removed {path}, the staging folder of a learn whose process (pid {found.group(1)}) "
                         "is gone")
    for model_dir in dict.fromkeys(model_dirs):
        lock = os.path.join(model_dir, folders.LOCK_FILE)
        owner = folders.lock_owner(lock)
        if owner is None or not gone(owner, lock):  # none, or one being written (FolderLock waits for its PID)
            continue
        what, command = folders.lock_holder(lock)
        try:
            files.remove(lock)
        except OSError:  # a read-only folder: FolderLock names it when a writer comes
            continue
        if not os.path.exists(lock):
            holder = ", ".join(filter(None, (f"`{command}`" if command else "", f"pid {owner}", what)))
            lines.append(f"note: removed {lock}, the lock of a process that is gone ({holder})")
    return lines


def rate_flags(before):
    """The trainer flags that set a learn's learning rate (the one place it is chosen): the decay counted from the
    learn's first step, the step of the checkpoint `before`, so every learn starts at the trainer's
    LEARNING_RATE_BASE and decays x0.99 an epoch from there, however long the model trained before (the course's
    schedule, counted from step 0, leaves 3.5e-7 after 50,000 steps on the bundled sample: docs/teach.md, "The
    learn's learning rate"). The trainer records it (--decay-from) with the learn's options; a learn's own trainer
    flags come after it (`-- --decay-from 0`: the course's schedule)."""
    return ["--decay-from", str(checkpoints.step_of(before))]


def prepare(plan, store, staging, watch):
    """The preparing stage: the kept digits' snapshot in STAGING/kept, written as TFRecords into STAGING/data by
    the generator; returns (that data folder, the snapshot's [(name, digit)]). Warns when all are one digit."""
    found = os.path.isfile(store.labels)  # before the snapshot, which would make the keep folder
    watch.doing("copying")
    folder, labels, count = store.snapshot(os.path.join(staging, "kept")) if found else (None, None, 0)
    if not count:
        raise no_kept(store)
    with open(labels, encoding="utf-8") as f:
        kept = [(name, int(digit)) for name, digit in (line.split() for line in f if line.strip())]
    watch.say(f"learning from {count} kept digit{'s' * (count != 1)} of {store.folder} into {plan.model_dir}")
    warning = one_digit(kept)
    if warning:
        watch.say(f"warning: {warning}")
    watch.doing("generating")
    data = os.path.join(staging, "data")
    run([script(GENERATOR, plan.script_dir), "--train-images", folder, "--train-labels", labels, "--test-images",
         folder, "--test-labels", labels, "--data-dir", data, "--workers", "1", "--quiet"],
        watch, f"the kept digits were not turned into TFRecords; {plan.model_dir} is unchanged")
    return data, kept


def no_kept(store):
    """The DataError for a keep store (keep.KeptDigits) with no kept digit: its label file empty or not there; a
    folder that is not there with a folder of a close name beside it is a typo (`my_digit` for my_digits), named
    as a mistyped --model-dir is (checkpoints.not_there: cli.did_you_mean)."""
    found = os.path.isfile(store.labels)
    meant = "" if found or os.path.isdir(store.folder) else cli.did_you_mean(
        store.folder, close=checkpoints.close_folders(store.folder))
    if meant:
        return DataError(f"{store.folder}: no such folder; {meant}")
    return DataError(f"{store.labels}: no kept digits{'' if found else ' (label file not found)'}; keep some on "
                     "the board first")


def one_digit(kept):
    """The warning for kept digits [(name, digit)] that are all one digit (None otherwise, or for none): a learn on
    them alone can make the network call other digits that one (the check holds it when their precision falls)."""
    digits = {digit for _, digit in kept}
    if len(digits) != 1:
        return None
    (digit,) = digits
    return (f"all {len(kept)} kept digits are {digit}s: learning on one digit only can make the network call other "
            f"digits {digit}; keep some of the other digits too (the check holds a learn that does)")


def script(name, script_dir):
    """The path of the course script `name` in script_dir (else where cli.script_file finds it)."""
    path = os.path.join(script_dir, name)
    return path if os.path.isfile(path) else cli.script_file(name)


def run(command, watch, failed):
    """Run a course script (command[0]) with this Python, each line it prints (stdout and stderr) given to watch.say.

    Raises LearnFailed ("<script> exited with status N (<its last line, up
    to a semicolon>); <failed>") when it exits otherwise than with 0;
    LearnStopped after watch.stop(). The script runs in a process group of
    its own (signal_script), its stdin the null device, tethered to this
    process (TETHER: a pipe only this process holds, whose end of file
    tells the tether this process is gone: it stops the script as
    watch.stop() does and removes the staging folder and the lock
    (watch.staging, watch.held), as this process can no longer). On Ctrl-C or
    SIGTERM to this process (KeyboardInterrupt) the script gets the same (forwarded: SIGINT for a Ctrl-C) and
    ends (a trainer saves in the staging folder), killed after
    STOP_GRACE_SECS (stopped_output); then KeyboardInterrupt goes on.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}  # read back as utf-8, whatever the locale
    with watch.lock:
        if watch.stopping.is_set():
            raise LearnStopped(f"stopped; {failed.rsplit('; ', 1)[-1]}")
        tethered, tether = os.pipe()  # not inherited: ours the only end, closed once the script has ended
        try:
            child = watch.child = subprocess.Popen(
                [sys.executable, TETHER, *tether_flags(watch), "--", sys.executable, *command], stdin=tethered,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8",
                errors="backslashreplace", env=env, start_new_session=os.name == "posix")  # signal_script's group
        except BaseException:
            os.close(tether)
            raise
        finally:
            os.close(tethered)
        child.tether = tether  # signal_script's words where there are no process groups
        if os.name == "posix":
            tf_compat.holding_group(child.pid)  # killed if this process ends at once (the board's second Ctrl-C)
    try:
        return _follow(child, command, watch, failed)
    finally:
        tf_compat.holding_group(child.pid, held=False)
        os.close(tether)


def tether_flags(watch):
    """TETHER's flags for a script of the learn `watch` follows: what to remove when this process is gone."""
    return [*(["--staging", watch.staging] if watch.staging else []),
            *(["--lock", watch.held] if watch.held else []), "--parent", str(os.getpid()),
            "--grace", str(STOP_GRACE_SECS)]


def _follow(child, command, watch, failed):
    """run()'s part once the script has started: its lines to watch.say until it ends; raises as run() says."""
    last = ""
    done = threading.Event()

    def ticking():  # while the script runs: a line each TICK_SECS it says nothing (Watch.tick)
        while not done.wait(1):
            watch.tick()
    ticker = threading.Thread(target=ticking, name="learn-tick", daemon=True)
    ticker.start()
    with child:
        try:
            for line in child.stdout:
                last = line.rstrip("\n") if watch.shown(line.rstrip("\n")) else last  # a line not left out
                watch.say(line.rstrip("\n"))
        except KeyboardInterrupt as stop:
            for line in stopped_output(child, signum=forwarded(stop)).splitlines():
                watch.say(line)
            raise
        finally:
            done.set()
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


def forwarded(stop):
    """The signal a learn stopped by `stop` (a KeyboardInterrupt: a Ctrl-C's, or errors.Stopped's with its signum)
    sends its script: SIGINT for a Ctrl-C, so that the script's line names what the user did (`SIGINT: stopped at
    step 8312`, not a SIGTERM they never sent), SIGTERM for the others (a kill, a hung-up terminal)."""
    return signal.SIGINT if getattr(stop, "signum", signal.SIGINT) == signal.SIGINT else signal.SIGTERM


def stopped_output(child, grace=None, signum=signal.SIGTERM):
    """What a script stopped by Ctrl-C or SIGTERM prints until it ends (str): `signum` now (forwarded: the script is
    in a process group of its own, which a terminal's Ctrl-C does not reach), SIGKILL once `grace` seconds (None:
    STOP_GRACE_SECS) have passed (a script deaf to SIGTERM) or at a second Ctrl-C, each to the script and the
    processes it started (signal_script), so that the learn's end (its staging and lock removed) never waits on
    it, or on a process of its holding its output, for ever."""
    if child.poll() is None:
        signal_script(child, signum)
    try:
        return child.communicate(timeout=STOP_GRACE_SECS if grace is None else grace)[0] or ""
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        signal_script(child, KILL)
        return child.communicate()[0] or ""


def signal_script(child, signum):
    """Send `signum` to a course script run() started and to every process it started (its process group, its
    own: start_new_session), so that no process of it outlives the learn holding its output pipe, which the
    learn reads to its end. Where there are no process groups (Windows) the script's tether (TETHER) is told, which
    ends the script alone."""
    if os.name == "posix":
        try:
            os.killpg(child.pid, signum)
        except (ProcessLookupError, PermissionError):  # the group is gone already
            pass
    elif child.poll() is None:
        try:
            os.write(child.tether, tether.KILL if signum == KILL else tether.STOP)
        except OSError:  # it has just ended
            pass


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


def check(plan, network, before, learned, kept_data, watch, count):
    """The checking stage: the checkpoints `before` and `learned` scored by the network's evaluator on the test
    records of plan.data_dir (when it has them) and on the `count` kept digits (kept_data: their TFRecords' folder),
    in one run. Returns the check:

    {"test": {"records": path, "count": n, "accuracy": [before, after],
    "recall": [[before, after] of each digit, None where undefined],
    "precision": likewise} or None (no test records: said in a line),
    "kept": {"count": k, "right": [before, after]}, "fell": [what fell past
    the limits (judge): {"digit": d or None for the accuracy, "before",
    "after", and "measure": "precision" for a precision}]}.
    """
    tests = test_folder(plan.data_dir)
    if tests is None:
        watch.say(f"warning: no {records.TEST_FILE} beside {plan.data_dir}: the learned checkpoint is checked on your "
                  "digits only")
    report = os.path.join(os.path.dirname(learned), "check.json")  # in the staging folder
    watch.kept_scored(os.path.join(kept_data, records.TEST_FILE), count)
    run([script(network.test_script, plan.script_dir), "--checkpoint", before, "--checkpoint", learned,
         *[flag for folder in filter(None, (tests, kept_data)) for flag in ("--data-dir", folder)],
         "--report-json", report], watch, f"the learned checkpoint could not be checked; {plan.model_dir} is unchanged")
    with open(report, encoding="utf-8") as f:
        scored = json.load(f)  # [before on tests, before on kept, learned on tests, learned on kept]; no tests: 2
    width = 2 if tests else 1
    mine = [scored[width - 1], scored[2 * width - 1]]
    found = {"test": None, "kept": {"count": mine[0]["records"], "right": [r["correct"] for r in mine]}, "fell": []}
    if tests:
        found["test"], found["fell"] = promotion.judge(scored[0], scored[width])
        found["test"]["records"] = os.path.join(tests, records.TEST_FILE)
    watch.say("checked: " + promotion.summary(found))
    for line in per_digit_lines(found["test"]):
        watch.say(line)
    return found


UNDEFINED = {"recall": "not in the test records", "precision": "read as no test record"}  # why a value is None


def per_digit_lines(test):
    """The check's lines of each digit's recall and precision before -> after (test: the check's "test", or None:
    none), a digit whose value is undefined before or after (judge's None) named with why: `recall of each digit,
    before -> after: 0 0.976->0.976, ..., 8 0.848->0.853; 9: not in the test records (not checked)`."""
    lines = []
    for measure in promotion.MEASURES if test else ():
        pairs = test[measure]
        undefined = [str(d) for d, pair in enumerate(pairs) if not pair]
        lines.append(f"{measure} of each digit, before -> after: " + ", ".join(
            f"{d} {pair[0]:.3f}->{pair[1]:.3f}" for d, pair in enumerate(pairs) if pair)
            + (f"; {', '.join(undefined)}: {UNDEFINED[measure]} (not checked)" if undefined else ""))
    return lines


# ---------------------------------------------------------------- promoting: the learned checkpoint into the folder


def trainer_options(record):
    """The trainer's options in a folder record: all but the network, its records and the learn history."""
    return {k: v for k, v in record.items() if k not in ("network", "records", folders.LEARNS, folders.REDO)}


def unstaged(value, staging, model_dir):
    """value (the staging trainer's options) with model_dir for its model_dir and STAGING for the staging folder in
    any other text: a record never names a temporary folder."""
    if isinstance(value, dict):
        return {k: model_dir if k == "model_dir" else unstaged(v, staging, model_dir) for k, v in value.items()}
    return value.replace(staging, STAGING) if isinstance(value, str) else value


def promote(learned, plan, entry, watch):
    """Copy the checkpoint `learned` into model_dir/learns/<n>/ as learn n, then put it in service (held instead,
    raising LearnHeld, when the check says it made things worse and plan.accept_worse is not set); its prefix.

    A failure at any point (a full disk, a signal) leaves model_dir as it
    was: the copy is removed, folders.change puts back what it moved.
    """
    model_dir = plan.model_dir
    if not os.path.isdir(model_dir):
        raise LearnFailed(f"{promotion.gone(model_dir)}; the learned checkpoint was not kept")
    record = folders.folder_record(model_dir, strict=True)
    learns, redo = promotion.learn_history(model_dir, record, strict=True)
    number = 1 + max([e.get("learn", 0) for e in learns if isinstance(e.get("learn"), int)] +
                     [int(n) for n in files.listing(os.path.join(model_dir, folders.LEARNS_FOLDER)) if n.isdecimal()]
                     + [0])
    folder = promotion.learns_folder(model_dir, number)
    made = files.missing_folders(folder)
    try:
        os.makedirs(folder)
        for path in glob.glob(glob.escape(learned) + ".*"):
            shutil.copyfile(path, os.path.join(folder, os.path.basename(path)))
        entry.update(learn=number, changed=time.time(), files=sorted(files.listing(folder)))
        entry["options"]["before"] = trainer_options(record)
        worse = bool(entry["check"]["fell"]) and not plan.accept_worse
        if worse:
            entry["state"] = "held"
            folders.change(model_dir, record={**record, folders.LEARNS: learns + [entry], folders.REDO: redo})
        else:
            promotion.bring_in(model_dir, record, learns + [entry], entry)
    except BaseException as e:
        shutil.rmtree(folder, ignore_errors=True)
        files.remove_empty_folders(made)
        if isinstance(e, OSError):
            raise DataError(f"{model_dir}: cannot add the learned checkpoint ({files.why_not(e)}); it is as it "
                            "was") from None
        raise
    if worse:
        raise LearnHeld(f"not promoted: {promotion.fell(entry['check'])}, past the limits "
                        f"({100 * promotion.RECALL_DROP:g} points for a digit, {100 * promotion.ACCURACY_DROP:g} in "
                        f"all); it waits in {folder}: {promotion.choices(model_dir)}", entry)
    return os.path.join(model_dir, entry["after"])


