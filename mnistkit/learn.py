"""Learn from the kept digits: the course's own pipeline, run on a copy of a model folder, promoted when it ends well.

learn(model_dir, keep_dir) runs, as commands a user could type
(docs/teach.md, "Learning from them"):
  1. python mnist_generateds.py --train-images KEEP --train-labels KEEP.txt
         --test-images KEEP --test-labels KEEP.txt --data-dir STAGING/data
     (the kept digits as TFRecords; all four flags, so MNIST is not rebuilt);
  2. the newest checkpoint of model_dir, its folder record (schedule.json)
     and a `checkpoint` index naming it, copied into STAGING;
  3. python mnist_backward.py (mnist_lenet5_backward.py for a LeNet-5 folder)
         --model-dir STAGING --data-dir DATA
         --mix-records STAGING/data/mnist_train.tfrecords:SHARE --steps <newest step + steps>
     a share of every batch from the kept digits (records.mixed);
  4. only when the trainer exits 0, promote(): the new checkpoint's files
     copied into model_dir, its .data first, its .index and the `checkpoint`
     index file last, each under a temporary name and renamed, so that a
     reader of the folder (the board, mnist_test.py) sees it whole or not at
     all. Promotion only adds files: the checkpoint from before stays, and
     RECORD_FILE notes both, for undo().
A trainer that fails (a diverged run exits 1) or is stopped (Ctrl-C: it saves
in STAGING) leaves model_dir as it was. undo(model_dir) moves the last
promoted checkpoint into model_dir/UNDONE_FOLDER and names the one from
before in the index again. The course scripts are run, never imported.
Its settings are declared once (OPTIONS): mnist_learn.py's flags, the command
line of learn() and undo().
"""
import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from . import checkpoints, cli, files, folders, keep, records
from .errors import DataError

DEFAULT_STEPS = 600  # steps past the newest checkpoint (docs/teach.md, "What it gives")
RECORD_FILE = "learned.json"  # in the model folder: [{"before": "mnist_model-2000", "after": "mnist_model-2300"}, ...]
UNDONE_FOLDER = "undone"  # undo() moves the checkpoint it takes back here, not away
GENERATOR = "mnist_generateds.py"

# A learn's settings, each once (cli.Options, as mnist_backward.OPTIONS): mnist_learn.py's flags, which another
# script's parser takes under a prefix (OPTIONS.prefixed("learn", "steps", "share"): --learn-steps, --learn-share).
Option = cli.ScriptOption
OPTIONS = cli.Options([
    Option("model_dir", "./model/", "the model folder to learn into", type=cli.path),
    Option("keep_dir", keep.DEFAULT_FOLDER, "the kept digits (with their label file <keep-dir>.txt beside)",
           type=cli.path),
    Option("steps", DEFAULT_STEPS, "steps to train past the newest checkpoint", minimum=1, constant="DEFAULT_STEPS"),
    Option("share", records.MIX_SHARE, "part of every batch drawn from the kept digits", above=0, below=1),
    Option("data_dir", records.DATA_DIR, "the training TFRecords (mnist_generateds.py's --data-dir)", type=cli.path),
])


class LearnFailed(DataError):
    """A learn whose generator or trainer did not end well; the model folder is as it was. str(): one line."""


def learn(model_dir, keep_dir, steps=DEFAULT_STEPS, data_dir=records.DATA_DIR, share=records.MIX_SHARE,
          script_dir=cli.REPO_DIR, out=print, trainer_args=()):
    """Train model_dir's newest checkpoint `steps` more steps with keep_dir's digits mixed in; returns its new prefix.

    keep_dir: a folder in the course's JPG layout with its label file
    keep_dir + ".txt" (mnistkit.keep's). data_dir: the training TFRecords
    (a folder, file or pattern). share: the part of every batch drawn from
    the kept digits (0 < share < 1). script_dir: where the course scripts
    are. out(line): each line the generator and the trainer print, as they
    print it. trainer_args: more flags for the trainer (e.g.
    ("--learning-rate-base", "0.01")). Raises DataError when model_dir holds
    no checkpoint or the kept digits have no label file; LearnFailed when
    the generator or the trainer fails (model_dir unchanged); KeyboardInterrupt
    after a Ctrl-C, once the trainer has stopped (model_dir unchanged).
    """
    with one_at_a_time(model_dir):  # before anything is read: a trainer writing the folder refuses this learn
        return _learn(model_dir, keep_dir, steps, data_dir, share, script_dir, out, trainer_args)


def _learn(model_dir, keep_dir, steps, data_dir, share, script_dir, out, trainer_args):
    before = checkpoints.latest(model_dir)
    if before is None:
        raise DataError(f"{model_dir}: no checkpoint to learn from; train one first "
                        f"(`{cli.command('mnist_backward.py', '--model-dir', model_dir)}`)")
    labels = os.path.normpath(keep_dir) + ".txt"
    if not os.path.isfile(labels):
        raise DataError(f"{labels}: no kept digits (label file not found); keep some on the board first")
    network = checkpoints.folder_network(model_dir) or checkpoints.folder_network(
        model_dir, checkpoints.read_checkpoint(before))
    if network is None:
        raise DataError(f"{before}: holds no network this project knows; learn needs a folder its trainers wrote")
    target = checkpoints.step_of(before) + steps
    with tempfile.TemporaryDirectory(prefix="mnist-learn-") as staging:
        kept = os.path.join(staging, "data")
        run([script(GENERATOR, script_dir), "--train-images", keep_dir, "--train-labels", labels,
             "--test-images", keep_dir, "--test-labels", labels, "--data-dir", kept, "--workers", "1", "--quiet"],
            out, f"the kept digits were not turned into TFRecords; {model_dir} is unchanged")
        stage(before, staging)
        batch = folders.folder_record(model_dir).get("batch_size")
        run([script(network.train_script, script_dir), "--model-dir", staging, "--data-dir", data_dir,
             "--mix-records", f"{os.path.join(kept, records.TRAIN_FILE)}:{share}", "--steps", str(target), "--quiet",
             *(["--batch-size", str(batch)] if isinstance(batch, int) else []), *trainer_args],
            out, f"nothing learned; {model_dir} is unchanged")
        learned = checkpoints.latest(staging)
        if learned is None or checkpoints.step_of(learned) != target:
            raise LearnFailed(f"{network.train_script} ended without a checkpoint at step {target}; "
                              f"{model_dir} is unchanged")
        after = promote(learned, model_dir, before)
    out(f"learned: {after} (from {before}); go back with `{cli.command('mnist_learn.py', '--undo', '--model-dir', model_dir)}`")
    return after


_learning, _learning_lock = set(), threading.Lock()  # the model folders a learn of this process works on


@contextlib.contextmanager
def one_at_a_time(model_dir):
    """Around a learn or an undo of model_dir: one at a time, across threads (the board's) and processes.

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


def run(command, out, failed):
    """Run a course script (command[0]) with this Python, each line it prints (stdout and stderr) given to out.

    Raises LearnFailed ("<script> exited with status N (<its last line, up
    to a semicolon>); <failed>") when it exits otherwise than with 0. On Ctrl-C (the script, in the same process group, got it too
    and saves) waits for it to end, then raises KeyboardInterrupt.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    last = ""
    with subprocess.Popen([sys.executable, *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="backslashreplace", env=env) as child:
        try:
            for line in child.stdout:
                last = line.rstrip("\n") or last
                out(line.rstrip("\n"))
        except KeyboardInterrupt:
            rest, _ = child.communicate()  # the trainer saves in the staging folder, then ends
            for line in rest.splitlines():
                out(line)
            raise
        status = child.wait()
    if status != 0:
        name, signum = os.path.basename(command[0]), -status if status < 0 else status - 128
        why = f"stopped by {signal.Signals(signum).name}" if signum in set(signal.Signals) else \
            f"exited with status {status}"
        said = last.strip().removeprefix("error: ").split(";")[0]  # a one-line error's first part: what happened
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


def promote(learned, model_dir, before):
    """Copy the checkpoint `learned` into model_dir as its newest, beside `before`; returns its prefix there.

    Each file is copied under a temporary name and renamed into place: the
    .data shards first, then the .meta and the .index (checkpoints.latest
    takes a checkpoint only when both are there), RECORD_FILE, and the
    `checkpoint` index file last. Raises DataError when model_dir cannot
    be written.
    """
    name = os.path.basename(learned)
    order = sorted(glob.glob(glob.escape(learned) + ".*"), key=lambda p: (p.endswith(".index"), p.endswith(".meta")))
    try:
        for path in order:
            files.write_atomically(os.path.join(model_dir, os.path.basename(path)),
                                   lambda tmp, path=path: shutil.copyfile(path, tmp), what="a learned checkpoint file")
        history = learned_record(model_dir) + [{"before": os.path.basename(before), "after": name}]
        write_record(model_dir, history)
        names = [n for n in folders.indexed_names(model_dir) if n != name] or [os.path.basename(before)]
        folders.write_index(model_dir, name, names + [name])
    except OSError as e:
        raise DataError(f"{model_dir}: cannot add the learned checkpoint ({e.strerror or e})") from None
    return os.path.join(model_dir, name)


def text_writer(text):
    """A write(tmp) for files.write_atomically that writes `text` (UTF-8) into tmp."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return write


def learned_record(model_dir):
    """RECORD_FILE's list of {"before": name, "after": name}, oldest first; [] when none or unreadable."""
    try:
        with open(os.path.join(model_dir, RECORD_FILE), encoding="utf-8") as f:
            history = json.load(f)
    except (OSError, ValueError):
        return []
    return history if isinstance(history, list) else []


def write_record(model_dir, history):
    """Write RECORD_FILE (atomically), or remove it when history is empty."""
    path = os.path.join(model_dir, RECORD_FILE)
    if not history:
        files.remove(path)
        return
    files.write_atomically(path, text_writer(json.dumps(history, indent=1) + "\n"), what="the learn record")


def undo(model_dir, out=print):
    """Go back to the checkpoint before the last learn: its checkpoint moved to model_dir/UNDONE_FOLDER; returns
    the prefix in use again.

    Raises DataError when no learn is recorded, or when the newest
    checkpoint is no longer the learned one (trained further since) or the
    one from before is gone: nothing is changed then.
    """
    with one_at_a_time(model_dir):
        return _undo(model_dir, out)


def _undo(model_dir, out):
    history = learned_record(model_dir)
    if not history:
        raise DataError(f"{os.path.join(model_dir, RECORD_FILE)}: no learn to undo")
    last = history[-1]
    after, before = os.path.join(model_dir, last["after"]), os.path.join(model_dir, last["before"])
    newest = checkpoints.latest(model_dir)
    if newest != after:
        raise DataError(f"{model_dir}: its newest checkpoint is {newest}, not {after} that the last learn added; "
                        "nothing undone (move the newer checkpoint files away first)")
    if checkpoints.checkpoint_format(before) is None:
        raise DataError(f"{before}: the checkpoint from before the learn is gone; nothing undone")
    moved = os.path.join(model_dir, UNDONE_FOLDER)
    os.makedirs(moved, exist_ok=True)
    for path in sorted(glob.glob(glob.escape(after) + ".*"), key=lambda p: not p.endswith(".index")):
        files.replace(path, os.path.join(moved, os.path.basename(path)))  # the .index first: no longer whole
    folders.write_index(model_dir, last["before"],
                        [n for n in folders.indexed_names(model_dir) if n != last["after"]] or [last["before"]])
    write_record(model_dir, history[:-1])
    out(f"back to {before}; the learned checkpoint is in {moved}")
    return before
