"""The trainer's saves into a model folder: never over another run's checkpoint, whole or not at all, rotated.

Used by the trainers (mnist_backward.py, through which
mnist_lenet5_backward.py, mnistkit.training, the distributed chief), one
RunSaves a run. tf.compat.v1.train.Saver.save writes a checkpoint's
files and updates the folder's `checkpoint` index file last; around it:
- the .meta first (save_attempts), so that the index file only ever names
  a checkpoint whose files are all there;
- never over a checkpoint of another run (written: the steps this run saved
  or took over from the run it resumed, continue_rotation);
- a try refused because another process holds a file (Windows) tried again
  for files.RETRY_SECS; a save that fails (a full disk) removed whole and
  reported in one line (SaveFailed) naming the newest checkpoint there;
- --keep's rotation deletes the dropped checkpoints by their literal names
  (rotate: Saver's own deletion is by glob pattern, which finds nothing in
  a folder named like `model[1]`), and only this run's.
How a checkpoint is read back, verified and restored is
mnistkit.checkpoints'; what a model folder holds (checkpoint names, the
index file, the folder's record) is mnistkit.folders'.
"""
import dataclasses
import glob
import os
import shutil
import time

from tf_compat import disk_full, file_held, first_line, tf
from . import files
from .errors import DataError
from .folders import MODEL_NAME, checkpoint_steps, latest, name_of, prefix_of, step_of, write_folder_record

KEEP_NEVER_HOURS = 10000.0  # tf.train.Saver's default keep_checkpoint_every_n_hours, which keeps none on time


class SaveFailed(DataError):
    """A checkpoint that could not be saved (a full disk); none of its files is left. str() is the one line."""


def refused(error):
    """True for an error that says another process holds a file (Windows' sharing rules), worth a retry."""
    return isinstance(error, (PermissionError, tf.errors.PermissionDeniedError)) or file_held(error)


def remove_save(prefix):
    """Delete every file a save of `prefix` may have begun: .meta, .index, .data shards and their temporaries."""
    for path in glob.glob(glob.escape(prefix) + ".*") + glob.glob(glob.escape(prefix) + "_temp*"):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.remove(path)
            except OSError:
                pass


def save_failed(model_dir, prefix, error):
    """The SaveFailed for a save of `prefix` that failed with `error` (an OSError or TensorFlow's OpError)."""
    newest = latest(model_dir, name_of(prefix))
    newest = f"the newest checkpoint is {newest}" if newest else "no checkpoint was saved"
    if disk_full(error):
        return SaveFailed(f"{model_dir}: no space left on device while saving {os.path.basename(prefix)}; {newest}")
    return SaveFailed(f"{prefix}: cannot save checkpoint ({first_line(error)}); {newest}")


def continue_rotation(checkpoint_saver, model_dir, written, resumed_step, name=MODEL_NAME):
    """Take the model folder's checkpoints up to resumed_step into this run's --keep rotation.

    A run resumed from a checkpoint (checked to be this model's: its
    network, settings and graph) continues the rotation of the run that
    wrote it, as tf.train.Saver.recover_last_checkpoints and TF2's
    CheckpointManager do: `--keep N` then means the folder's newest N, and
    a Ctrl-C and the same command again leave no older checkpoints behind.
    written: the set of steps this run may replace (updated); the saver
    learns them oldest first, with their files' times. Those beyond the
    newest --keep are removed now (the saver drops only one per save); the
    one resumed from is the newest and stays. name: the checkpoints' (MODEL_NAME).
    """
    steps = [step for step in checkpoint_steps(model_dir, name) if step <= resumed_step]
    known = []
    for step in steps:
        prefix = prefix_of(model_dir, step, name)
        try:
            known.append((prefix, os.path.getmtime(prefix + ".index")))
        except OSError:
            continue  # a damaged or vanished checkpoint: not this run's to delete
    keep = checkpoint_saver.saver_def.max_to_keep
    if keep and len(known) > keep:
        for prefix, _ in known[:-keep]:
            remove_save(prefix)
        known = known[-keep:]
    checkpoint_saver.set_last_checkpoints_with_time(known)
    written.update(step_of(prefix) for prefix, _ in known)


class SaveAttempt:
    """One try of a save, a context manager: a tf.errors.OpError or OSError in its body is kept in .error."""

    error = None

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if isinstance(error, (tf.errors.OpError, OSError)):
            self.error = error
            return True
        return False


def save_attempts(sess, checkpoint_saver, model_dir, step, written, name=MODEL_NAME):
    """The tries of one save at global_step `step`: SaveAttempts, in whose body the caller saves.

    The body is the course's `checkpoint_saver.save(sess, <model_dir>/<name>,
    global_step=step, write_meta_graph=False)`, name the trainer's MODEL_NAME. Around it: a checkpoint of
    that step that this run did not write is never overwritten (DataError,
    before the first try); each try writes the .meta first, so that the
    `checkpoint` index, which Saver.save updates last, only ever names a
    checkpoint whose files are all there; after a try that worked, the
    files of the checkpoints the Saver's max_to_keep dropped are deleted
    (rotate). A try refused because another process holds a file (Windows:
    an evaluator or TensorBoard reading the index while TensorFlow renames
    over it) is followed by another for files.RETRY_SECS. A save that fails
    (a full disk, a folder gone read-only, a refusal that lasts) leaves
    none of its files and raises SaveFailed naming the newest checkpoint
    that is there, e.g. `model: no space left on device while saving
    mnist_model-1500; the newest checkpoint is model/mnist_model-1000`.
    written: set of the steps this run saved, updated here.
    """
    prefix = prefix_of(model_dir, step, name)
    if step not in written and step in checkpoint_steps(model_dir, name):
        raise DataError(f"{prefix}: a checkpoint of another run is already there; not overwriting it "
                        f"(move it away or use another --model-dir)")
    written.add(step)
    deadline = time.monotonic() + files.RETRY_SECS
    while True:
        attempt, kept = SaveAttempt(), list(checkpoint_saver.last_checkpoints)
        with attempt, sess.graph.as_default():
            checkpoint_saver.export_meta_graph(prefix + ".meta")
        if attempt.error is None:
            yield attempt
        if attempt.error is None:
            rotate(checkpoint_saver, kept, written)
            return
        if refused(attempt.error) and time.monotonic() < deadline:
            time.sleep(0.1)  # Windows: a reader holds the index file; TensorFlow's rename over it waits
            continue
        written.discard(step)
        remove_save(prefix)
        raise save_failed(model_dir, prefix, attempt.error) from None


def rotate(checkpoint_saver, before, written):
    """Delete the files of this run's checkpoints that Saver.save's max_to_keep rotation dropped (prefixes).

    before: checkpoint_saver.last_checkpoints before the save. Saver deletes
    them by glob pattern, which finds nothing in a folder named like
    `model[1]`: --keep would keep every checkpoint. Deleted here by their
    literal names, and only what the rotation meant to delete: checkpoints
    of this run (written, steps) dropped by max_to_keep. A Saver that keeps
    one checkpoint every N hours (keep_checkpoint_every_n_hours) drops such
    a checkpoint from its list but means to keep its files, so with that
    option on nothing is deleted here. Where Saver did delete them, nothing
    is left to do.
    """
    if checkpoint_saver.saver_def.keep_checkpoint_every_n_hours < KEEP_NEVER_HOURS:
        return
    for prefix in set(before) - set(checkpoint_saver.last_checkpoints):
        if step_of(prefix) in written:
            remove_save(prefix)


@dataclasses.dataclass
class RunSaves:
    """The checkpoints one training run writes into model_dir with its tf.train.Saver `saver`, and the steps it saved.

    attempts(sess, step) are the tries of one save (save_attempts), never
    over a checkpoint of another run; `written` is the set of steps this
    run saved or took over from the run it resumed (continue_rotation), the
    only ones it may replace or (through the Saver's max_to_keep) rotate
    away. record: a function returning (network, records per epoch,
    {option name: value}) (cli.Options.record), called before the run's
    first save, whose answer is written into the folder's FOLDER_FILE
    (write_folder_record), so that a folder holding a checkpoint says which
    network it holds and how it was trained; None writes none. A resumed
    run continues the rotation of the checkpoint it restored, once that is
    checked to be the same model (network, settings, graph):
    continue_rotation. name: the checkpoints' (the trainer's MODEL_NAME):
    <model_dir>/<name>-<step>. history: the run's history.Snapshots (--history), or None.
    """

    saver: object
    model_dir: str
    record: object
    name: str = MODEL_NAME
    written: set = dataclasses.field(default_factory=set)
    history: object = None

    def attempts(self, sess, step):
        """The tries of a save at global_step `step` (save_attempts), for the caller's saver.save in each."""
        if self.record is not None:
            write_folder_record(self.model_dir, *self.record())
            self.record = None
        return save_attempts(sess, self.saver, self.model_dir, step, self.written, self.name)

    def prefix(self, step):
        """The prefix of this run's checkpoint at global_step `step`: <model_dir>/<name>-<step>."""
        return prefix_of(self.model_dir, step, self.name)

    def continue_rotation(self, resumed_step):
        """Take the folder's checkpoints up to resumed_step into this run's rotation (module's continue_rotation)."""
        continue_rotation(self.saver, self.model_dir, self.written, resumed_step, self.name)


def older_checkpoints_note(model_dir, keep, written, name=MODEL_NAME):
    """A note on the checkpoints in model_dir that this run did not write, or None when --keep covers all.

    written: the steps this run saved (RunSaves.written). --keep rotates
    only this run's own checkpoints, so that a run never deletes work it
    did not do; the note says how many others there are, their size and
    how to remove them.
    """
    older = [s for s in checkpoint_steps(model_dir, name) if s not in written]
    if not older or len(older) + min(len(written), keep) <= keep:
        return None
    size = sum(os.path.getsize(p) for s in older for p in glob.glob(glob.escape(prefix_of(model_dir, s, name)) + ".*"))
    return (f"note: {model_dir} also holds {len(older)} checkpoint(s) of earlier runs "
            f"(steps {older[0]} to {older[-1]}, {size / 1e6:.1f} MB), which --keep leaves alone; "
            f"delete {prefix_of(model_dir, '<step>', name)}.* files you no longer need")
