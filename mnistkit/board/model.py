"""What the board answers with (Model), and the Follower that keeps it the newest model of --model-dir.

The newest model answers, as TF Serving serves the newest version of its
base path: a Follower looks at --model-dir every POLL_SECS and swaps a
newer checkpoint, export version or .tflite in (Model.current) without a
restart. A refused one (damaged, half-written, NaN, unreadable) is said
once on stderr and the model answering goes on; it is looked at again when
its files change, or RETRY_SECS after it was refused, whichever comes
first (TF Serving retries a failed version too). A checkpoint's version is
its global_step.

The Follower's states, per poll: nothing changed (the files' sizes and
times, and no refusal due for a retry): nothing read; changed, and the
newest is the one served or a refused one: nothing loaded; newer, but
written less than SETTLE_SECS ago: left for the next poll (a copy being
written); newer and settled: loaded on the polling thread while the old
one answers, then swapped in (the `swapped` condition is notified) or
refused.
"""
import glob
import os
import re
import sys
import threading
import time

from .. import checkpoints, deployed, export, files, layers
from ..errors import DataError
from ..folders import CHECKPOINT_FILE, INDEX_FILE

PREPARED_AT_ONCE = 2  # pictures prepared at the same time; more wait (each may take up to ~200 MB: mnistkit.pictures)
POLL_SECS = 2.0  # how often the server looks for a newer model in --model-dir (stat calls only)
SETTLE_SECS = 1.0  # a newer model whose files changed more recently is left for the next look (being copied)
RETRY_SECS = 30.0  # a refused model whose files did not change is tried again after this long (a permission fixed)


class Model:
    """What the server answers with: a predictor and what it is.

    predictor: predict(float32 [n, 784] in [0, 1]) -> float32 [n, 10],
    thread-safe, with `network` (networks.Network), `source` (its path)
    and `inside` (its layers: mnistkit.layers), which is `inside` here too
    (a predictor without one: layers.Refused, saying so).
    prepare(data, name): a picture's bytes -> uint8 [28, 28], the network's
    input x 255 (the app's prepared_pixels), read from memory; raises
    DataError naming the picture as `name`. At most PREPARED_AT_ONCE
    pictures are prepared at a time (`preparing`, page.read_picture; pass the
    semaphore of the Model this one follows, so the limit holds across
    them). version: TF Serving's, an integer that grows: an export's
    version, a checkpoint's global_step.

    `current` is the Model answering now: this one, until a Follower puts
    a newer one there. A request reads it once (one attribute read: the
    table's Call.model) and uses what it read to the end, so an answer being
    computed finishes on the model it began with, which is not closed under
    it (an old predictor goes when its last request lets go of it).
    """

    def __init__(self, predictor, prepare, preparing=None):
        self.predictor, self.prepare = predictor, prepare
        self.inside = getattr(predictor, "inside", None) or layers.Refused(
            f"{predictor.source}: this model shows no layers")
        self.preparing = preparing or threading.BoundedSemaphore(PREPARED_AT_ONCE)
        self.name = predictor.network.export_name  # as mnist_export.py names its folder: mnist, mnist_lenet5, ...
        self.form = ("LiteRT" if isinstance(predictor, deployed.LiteRTModel)
                     else "SavedModel" if isinstance(predictor, deployed.SavedModelModel) else "checkpoint")
        self.global_step = global_step_of(predictor)
        self.version = (saved_model_version(predictor.source) if self.form == "SavedModel"
                        else record_version(predictor) if self.form == "LiteRT" else self.global_step or 1)
        self.current = self

    def describe(self):
        """The page's model line as a dict: name, network, global_step (None when unknown), form, source, version."""
        return {"name": self.name, "network": self.predictor.network.label, "global_step": self.global_step,
                "form": self.form, "source": str(self.predictor.source), "version": self.version}

    def taken(self):
        """The line said when this model starts answering: `now serving SOURCE (version V, global_step S)`."""
        said = [] if self.form == "checkpoint" else [f"version {self.version}"]
        said += [] if self.global_step is None else [f"global_step {self.global_step}"]
        return f"now serving {self.predictor.source}" + (f" ({', '.join(said)})" if said else "")


def saved_model_version(path):
    """The version (int) a SavedModel version folder is named by, export/mnist/3 -> 3; 1 when not a number."""
    name = os.path.basename(os.path.normpath(str(path)))
    return int(name) if name.isdecimal() else 1


def record_version(predictor):
    """The export version (int) a .tflite file's export record names (mnist_export.py's run); 1 without one."""
    version = (getattr(predictor, "record", None) or {}).get("version")
    return int(version) if str(version).isdecimal() else 1


def global_step_of(predictor):
    """The training step (int) the predictor's weights are from, or None when it does not say.

    A predictor's own `global_step` when it has one; an export's, from
    its export record (mnist_export.py writes the checkpoint's there); else
    the number a checkpoint's path ends with (model/mnist_model-2000 ->
    2000), which is how the course's saver.save(..., global_step=) names it.
    """
    step = getattr(predictor, "global_step", None) or (getattr(predictor, "record", None) or {}).get("global_step")
    if step is not None:
        return int(step)
    found = re.search(r"-(\d+)$", str(predictor.source))
    return int(found.group(1)) if found and not deployed.is_exported(str(predictor.source)) else None


class Follower:
    """Keeps `model.current` (a Model) the newest model --model-dir holds, as TF Serving follows its base path.

    load(): the predictor of the newest model at `path` (the app's
    load_predictor(--model-dir)), raising DataError when it is refused.
    What is followed, by path: a checkpoint folder's newest checkpoint
    (checkpoints.latest: the `checkpoint` index and the files that are
    there), an export base path's newest version (deployed.newest_version),
    a version folder or a .tflite file changed in place (a .tflite whose
    bytes are the same is kept). poll() (start(): every POLL_SECS on a
    thread of its own) stats the files, no reading while nothing changed;
    the module's docstring has its states. A newer model goes into
    `current` and `out` gets Model.taken's line; a refused one is said once
    on `err` (default stderr), and tried again when its files change or
    `retry` seconds (of `clock`) after it was refused. `swapped` (a
    threading.Condition) is notified at each swap: wait_until waits on it.
    """

    def __init__(self, model, load, path, out=print, err=None, retry=RETRY_SECS, clock=time.monotonic):
        self.model, self.load, self.path, self.out, self.err = model, load, str(path), out, err
        self.retry, self.clock = retry, clock
        if export.is_tflite(self.path) or os.path.isfile(
                os.path.join(self.path, deployed.SAVED_MODEL_FILE)):
            self.stamp_of, self.newest = self.own_files, lambda: self.path
        elif model.form == "SavedModel":
            self.stamp_of, self.newest = self.version_files, lambda: deployed.newest_version(self.path)
        else:
            self.stamp_of, self.newest = self.checkpoint_files, lambda: checkpoints.latest(self.path)
        self.stamp = self.stamp_of()
        source = str(model.current.predictor.source)
        self.served, self.refused, self.warned = (source, files_state(source)), {}, set()
        self.stopped, self.swapped, self.polling = threading.Event(), threading.Condition(), threading.Lock()

    def own_files(self):
        """The .tflite file's or version folder's (bytes, mtime ns)."""
        return files_state(self.path)

    def version_files(self):
        """The base path's version folders, each with its saved_model.pb's (bytes, mtime ns)."""
        return tuple((name, stat_of(os.path.join(self.path, name, deployed.SAVED_MODEL_FILE)))
                     for name in sorted(files.listing(self.path)) if name.isdecimal())

    def checkpoint_files(self):
        """The folder's `checkpoint` index and checkpoint files, each with its (bytes, mtime ns)."""
        return tuple((name, stat_of(os.path.join(self.path, name))) for name in sorted(files.listing(self.path))
                     if name == INDEX_FILE or CHECKPOINT_FILE.match(name))

    def start(self, interval=POLL_SECS):
        """poll() every `interval` seconds on a daemon thread, until stop(); returns the thread."""
        def follow():
            while not self.stopped.wait(interval):
                self.poll()
        thread = threading.Thread(target=follow, name="board-follower", daemon=True)
        thread.start()
        return thread

    def stop(self):
        """End start()'s polling after the poll under way (the server stops), and wait_until's waits."""
        self.stopped.set()
        with self.swapped:
            self.swapped.notify_all()

    def wait_until(self, answering, timeout):
        """Wait until answering(model.current) is true, woken at each swap; returns it (False after `timeout` s, or
        once stop() was called)."""
        with self.swapped:
            return self.swapped.wait_for(lambda: answering(self.model.current) or self.stopped.is_set(), timeout) \
                and answering(self.model.current)

    def poll(self):
        """One look at the path: returns True when a newer model was taken into `model.current`. Never raises:
        what goes wrong is one line on stderr, said again only when the files change."""
        with self.polling:
            stamp, now = self.stamp_of(), self.clock()
            due = [state for state, when in self.refused.items() if now - when >= self.retry]
            if stamp == self.stamp and not due:
                return False
            for state in due:
                del self.refused[state]
            try:
                return self.take_newest(stamp)
            except Exception as e:  # noqa: BLE001  (any: the server goes on with the model it has)
                self.stamp = stamp
                self.say_refused(e)
                return False

    def take_newest(self, stamp):
        """poll()'s work once the files' `stamp` changed: the newest model loaded and swapped in (True), or not."""
        newest = self.newest()
        state = None if newest is None else (str(newest), files_state(newest))
        if state is None or state == self.served or state in self.refused:
            self.stamp = stamp
            return False
        youngest = max((mtime for _, _, mtime in state[1]), default=0) / 1e9
        if 0 <= time.time() - youngest < SETTLE_SECS:
            return False  # being written, maybe: the stamp is not kept, so the next poll looks again
        self.stamp = stamp
        try:
            predictor = self.load()
        except Exception as e:  # noqa: BLE001  (DataError, and whatever a half-written file makes a loader raise)
            self.refused[state] = self.clock()
            if state not in self.warned:
                self.warned.add(state)
                self.say_refused(e)
            return False
        return self.swap(predictor, state)

    def swap(self, predictor, state):
        """Put a Model of `predictor` (loaded for the files' `state`) into model.current; False when it is the same
        .tflite's bytes again."""
        old = self.model.current
        source = str(predictor.source)
        self.served = state if source == state[0] else (source, files_state(source))
        content = getattr(predictor, "content", None)
        if content is not None and content == getattr(old.predictor, "content", None):
            return False  # a .tflite touched or copied over with the same bytes
        with self.swapped:
            self.model.current = Model(predictor, old.prepare, old.preparing)
            self.swapped.notify_all()
        self.out(self.model.current.taken())
        sys.stdout.flush()
        return True

    def say_refused(self, error):
        """One line on stderr: what was refused, and what goes on answering."""
        line = " ".join(str(error).split()) if isinstance(error, DataError) else \
            " ".join(f"{type(error).__name__}: {error}".split())[:300]
        print(f"warning: {line}; still {self.model.current.taken()[4:]}", file=self.err or sys.stderr, flush=True)


def files_state(path):
    """(name, bytes, mtime ns) of each file of a model (sorted tuple): what tells one state of it from another.

    path: a file (.tflite), a folder (a SavedModel version: the files within
    it) or a checkpoint prefix (its .index, .data-* and .meta).
    """
    path = str(path)
    if os.path.isdir(path):
        found = [os.path.join(top, name) for top, _, names in os.walk(path) for name in names]
    else:
        found = [path] if os.path.isfile(path) else glob.glob(glob.escape(path) + ".*")
    entries = ((os.path.relpath(file, os.path.dirname(path)), *stat_of(file)) for file in found)
    return tuple(sorted(entry for entry in entries if entry[1] is not None))


def stat_of(path):
    """(bytes, mtime ns) of a file, or (None, None) when it is not there."""
    try:
        info = os.stat(path)
    except OSError:
        return None, None
    return info.st_size, info.st_mtime_ns
