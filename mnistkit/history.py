"""Training kept for playback: a few snapshots of the moving-average weights spread over a run, and their scores.

mnist_backward.py --history N (default HISTORY, 0: none) keeps N
snapshots of the run in <model folder>/history/ (FOLDER), apart from the
checkpoints that --keep rotates: the `checkpoint` index file never names
one, so resume, a learn's undo and the exporter see the folder as before.

  planned(target, n, every)  the global_steps a run of target steps snapshots at
  Snapshots                  the trainer's chief: due(step), save(sess, step), the oldest thinned out past n
  listed(model_dir)          the snapshots there, oldest first: [(global_step, prefix)]
  record_accuracy, accuracies   mnist_test.py's score of each checkpoint, in the folder's record

A snapshot holds what the evaluator and the app restore and nothing else:
each trainable variable's moving average, under its checkpoint name
(`w1/ExponentialMovingAverage`), and global_step. tf.train.ExponentialMovingAverage's
variables_to_restore() restores it into forward()'s graph, as mnist_test.py
does with a checkpoint; the board's playback reads it with NumPy
(mnistkit.board.playback). The 784-500-10 network's snapshot is 1.6 MB:
20 of them 32 MB (docs/inside.md).

A snapshot is written under a hidden temporary name (tf.train.Saver with
write_state=False: no index file anywhere), its .data renamed into place
before its .index, so that a reader never sees half of one.
"""
import glob
import math
import os
import re

import tf_compat

from . import files, folders
from .errors import DataError
from .networks import EMA_SUFFIX

HISTORY = 20  # snapshots a run keeps by default (mnist_backward.py --history)
FOLDER = folders.HISTORY_FOLDER  # <model folder>/history/<MODEL_NAME>-<global_step>.index, .data-00000-of-00001
ACCURACY = folders.ACCURACY  # the folder record's {global_step (str): test accuracy} (mnist_test.py writes it)
SNAPSHOT_FILE = re.compile(r"(?P<name>.+)-(?P<step>\d+)\.index$")


def folder_of(model_dir):
    """<model_dir>/history (str)."""
    return os.path.join(model_dir, FOLDER)


def planned(target, n, every=None):
    """The global_steps (sorted ints > 0) a run to global_step `target` takes its n snapshots at.

    The steps nearest the fractions 1/n, 2/n, ..., 1 of `target`; when the
    run saves a checkpoint every `every` steps and that is at most target/n,
    each is moved to the nearest save's step, so that a snapshot has the
    checkpoint mnist_test.py scored beside it (its accuracy). The last is
    always `target`. Fewer than n when steps coincide (target < n).
    """
    if n <= 0 or target <= 0:
        return []
    steps = {max(1, round(target * k / n)) for k in range(1, n + 1)}
    if every and every * n <= target:
        steps = {min(target, max(every, round(s / every) * every)) for s in steps}
    return sorted(steps | {target})


def listed(model_dir, name=None):
    """The snapshots in <model_dir>/history, oldest first: [(global_step, prefix)]; [] when there are none.

    name: the checkpoints' name (a trainer's MODEL_NAME); None: any. Only a
    snapshot whose .index is there counts (it is renamed into place last).
    """
    found = []
    for entry in files.listing(folder_of(model_dir)):
        match = SNAPSHOT_FILE.match(entry)
        if match and not entry.startswith(".") and (name is None or match.group("name") == name):
            found.append((int(match.group("step")), os.path.join(folder_of(model_dir), entry[:-len(".index")])))
    return sorted(found)


def remove(prefix):
    """Delete a snapshot's files, its .index first (a reader then no longer lists it)."""
    for path in [prefix + ".index"] + sorted(glob.glob(glob.escape(prefix) + ".*")):
        files.discard(path)


def thinned(steps, n):
    """The steps (sorted ints) to remove from `steps` (sorted) so that n remain, evenly spread: each time the one
    whose going leaves the smallest gap between its neighbours; the first and the newest always stay."""
    steps, gone = list(steps), []
    while len(steps) > max(n, 2):
        i = min(range(1, len(steps) - 1), key=lambda i: (steps[i + 1] - steps[i - 1], steps[i]))
        gone.append(steps.pop(i))
    if n == 1 and len(steps) == 2:
        gone.append(steps.pop(0))
    return sorted(gone)


def averaged_variables(tf, graph=None):
    """The variables a snapshot saves: each moving average (its name ends in networks.EMA_SUFFIX) and global_step.

    A list, so that tf.train.Saver saves a cluster's split parts as one variable, as the trainer's Saver does."""
    graph = graph or tf.get_default_graph()
    with graph.as_default():
        chosen = [v for v in tf.global_variables() if v.op.name.endswith(EMA_SUFFIX)]
        step = tf.train.get_global_step()
    return chosen + ([step] if step is not None else [])


class Snapshots:
    """The snapshots one training run keeps in <model_dir>/history: at most `n`, spread over the run.

    Made by training.resumed (the chief only) before the graph is
    finalized: it builds its tf.train.Saver of averaged_variables. start:
    the global_step the run starts from; at 0 (a fresh start) the
    snapshots there are an earlier run's and go now, said through `log`
    (a resume from an older checkpoint keeps the newer ones: a snapshot of
    the same step is written over, the others thinned). The run snapshots at
    planned(target, n, every) past start; a resumed run goes on with the
    spread of the snapshots it finds, and past n the older ones are thinned
    (thinned). due(step) is one comparison, for the step loop; save(sess,
    step) writes one (DataError when it cannot: the run goes on without it
    is the caller's choice).
    """

    def __init__(self, tf, model_dir, name, n, target, every, start, log=print):
        self.tf, self.folder, self.name, self.n, self.log = tf, folder_of(model_dir), name, n, log
        self.saver = tf.train.Saver(averaged_variables(tf), max_to_keep=None, save_relative_paths=True)
        gone = listed(model_dir, name) if start == 0 else []  # a fresh start: any snapshot there is another run's
        for _, prefix in gone:
            remove(prefix)
        if gone:
            log(f"removed {len(gone)} history snapshot(s) of an earlier run from {self.folder}")
        self.plan = [s for s in planned(target, n, every) if s > start]
        self.next = self.plan[0] if self.plan else math.inf

    def due(self, step):
        """Whether global_step `step` reached the next planned snapshot."""
        return step >= self.next

    def save(self, sess, step):
        """Write the snapshot of global_step `step` (the session's averages now), then thin the folder to n.
        Returns its prefix. Raises DataError when it cannot be written (nothing half-written is left)."""
        self.next = next((s for s in self.plan if s > step), math.inf)
        prefix = os.path.join(self.folder, f"{self.name}-{step}")
        tmp = os.path.join(self.folder, f".{self.name}-{step}.{os.getpid()}.tmp")
        try:
            os.makedirs(self.folder, exist_ok=True)
            self.saver.save(sess, tmp, write_meta_graph=False, write_state=False)
            data = sorted(glob.glob(glob.escape(tmp) + ".data-*"))
            remove(prefix)  # one of this step from a run that stopped before its checkpoint
            for path in data + [tmp + ".index"]:
                files.replace(path, prefix + path[len(tmp):])
        except (self.tf.errors.OpError, OSError) as e:
            remove(tmp)
            why = "no space left on device" if tf_compat.disk_full(e) else tf_compat.first_line(e)
            raise DataError(f"{prefix}: cannot save the history snapshot ({why})") from None
        kept = listed(os.path.dirname(self.folder), self.name)
        for gone in thinned([s for s, _ in kept], self.n):
            remove(dict(kept)[gone])
        return prefix


def accuracies(model_dir, record=None):
    """{global_step (int): test accuracy (float)} that mnist_test.py recorded in model_dir's record."""
    record = folders.folder_record(model_dir) if record is None else record
    scores = record.get(ACCURACY)
    found = {}
    for step, value in (scores.items() if isinstance(scores, dict) else ()):
        if str(step).isdecimal() and isinstance(value, (int, float)) and math.isfinite(value):
            found[int(step)] = float(value)
    return found


def record_accuracy(model_dir, step, accuracy):
    """Record in model_dir's record (folders.FOLDER_FILE, written whole: files.write_atomically) that the checkpoint
    of global_step `step` scores `accuracy` on the test set. A folder without a record gets none (an earlier
    version's: nothing else is known of it). Raises DataError when the record cannot be written."""
    record = folders.folder_record(model_dir)
    if not record:
        return False
    scores = record.get(ACCURACY) if isinstance(record.get(ACCURACY), dict) else {}
    scores[str(int(step))] = round(float(accuracy), 6)
    record[ACCURACY] = dict(sorted(scores.items(), key=lambda item: int(item[0]) if item[0].isdecimal() else 0))
    files.write_atomically(os.path.join(model_dir, folders.FOLDER_FILE), files.text_writer(folders.record_text(record)),
                           what="the model folder's record")
    return True
