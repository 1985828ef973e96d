"""The folders the scripts write, one writer each, and what a model folder holds.

One writer per folder: FolderLock, a hidden file LOCK_FILE naming the
process that writes the folder (its PID and command line). The generator
takes it on its JPG and data folders; on a model folder the trainer (on a
cluster, its chief), a learn (mnistkit.learn: mnist_learn.py and the
board) take it, so that a second writer is refused in one line naming the
first; readers (mnist_test.py, the app, the board's predictions) take none.
The exporter takes it on its export folder, for its commit only
(mnistkit.export; docs/deploy.md says why).

A model folder, written here and read through these functions alone:
  <name>-<step>.index, .data-NNNNN-of-NNNNN, .meta   a checkpoint, <name> a trainer's MODEL_NAME
        (prefix_of, name_of, step_of; checkpoint_steps, survey, latest; older: the one V1 file <name>-<step>)
  checkpoint      the index file naming the newest checkpoints (indexed_prefix, indexed_names; write_index),
                  TensorFlow's CheckpointState as its text format
  schedule.json   FOLDER_FILE, the folder's record: its network, records per epoch and each option trained at
                  (folder_record, folder_network; write_folder_record), its learns (LEARNS, REDO: read and
                  checked by mnistkit.promotion.learn_history; an earlier version's learned.json is still read), and the
                  test accuracy of each checkpoint mnist_test.py scored (ACCURACY: mnistkit.history)
  schedule.json.unreadable   a copy of a record no one could read (hand-edited, cut short), made aside before
                  a trainer wrote a new one (keep_unreadable_record; .unreadable-2, ... for other bytes): the
                  learn history a person can still read there
  history/        the snapshots --history keeps for playback, apart from the index file (mnistkit.history)
  learns/<n>/     the checkpoint of learn n while it is not in service (held for a choice, or undone)
  .mnist.lock     LOCK_FILE, while a process writes the folder
  train/, eval/   TensorBoard's (mnistkit.training, mnist_test.py)
change() moves checkpoint files and rewrites the index file and the
record all at once, or not at all (a learn's promote, undo and redo).
What a trainer clears before it writes (writing) and the names its
graph's variables have in a checkpoint (checkpoint_variables,
check_graph) are here too; reading a checkpoint whole, verified, and
restoring it, is mnistkit.checkpoints'; the trainer's saves (RunSaves)
are mnistkit.saving's.
"""
import collections
import contextlib
import dataclasses
import glob
import json
import os
import re
import shlex
import shutil
import sys
import time
import types

import tf_compat
from tf_compat import saved_as, tf
from . import cli, files, networks
from .errors import DataError

MODEL_NAME = "mnist_model"  # the course's MODEL_NAME: <folder>/mnist_model-<global_step>, unless a trainer says otherwise
INDEX_FILE = "checkpoint"  # tf.train.Saver's index of the newest checkpoints
V2_SUFFIX = r"(\.index|\.meta|\.data-\d{5}-of-\d{5})"  # a V2 checkpoint's files: <prefix>.index, .meta, .data-*
# A file of a V2 checkpoint of any name: <name>-<global_step>.index, .meta or .data-NNNNN-of-NNNNN.
ANY_CHECKPOINT_FILE = re.compile(r"(?P<name>.+)-(?P<step>\d+)" + V2_SUFFIX + "$")
# A file of a checkpoint named %s (re.escape'd: a trainer's MODEL_NAME): <name>-<step> with a V2 suffix, or
# alone (the one file of the V1 format); groups `name` and `step`. checkpoint_steps fills in its name.
CHECKPOINT_FILE_OF = r"(?P<name>%s)-(?P<step>\d+)" + V2_SUFFIX + "?$"
CHECKPOINT_FILE = re.compile(CHECKPOINT_FILE_OF % re.escape(MODEL_NAME))  # a file of the course's own name's checkpoints
FOLDER_FILE = "schedule.json"  # the folder's record: its network's declaration, the epoch and each option trained at
LEARNS, REDO = "learns", "redo"  # the record's learn history (mnistkit.learn's entries) and the learns a redo takes
ACCURACY = "accuracy"  # the record's test accuracy of each checkpoint scored, {global_step: accuracy} (mnistkit.history)
HISTORY_FOLDER = "history"  # <model folder>/history/: the --history snapshots (mnistkit.history), no model of its own
LEARNS_FOLDER = "learns"  # <model folder>/learns/<n>/: learn n's checkpoint while it is out of service
OLDER_LEARNS_FILE = "learned.json"  # an earlier version's learn history: [{"before": name, "after": name}, ...]

# ---------------------------------------------------------------- one writer per folder

LOCK_FILE = ".mnist.lock"  # hidden: in a folder a process is writing: its PID, what it does, its command line
LOCK_WRITE_SECS = 3.0  # a lock file still without a PID this long after it was made is a stopped writer's
# A process that started this long after its PID's lock file or staging folder was last written is not their owner
# but another given the PID again (pid_alive's since): more than a clock's step or rounding, far less than the time
# Linux takes to hand out its 32,768 PIDs (pid_max) once more, even during a test run (docs/tests.md).
PID_REUSED_SECS = 30.0
COMMAND_CHARS = 200  # of the command line a lock file names


@dataclasses.dataclass
class FolderLock:
    """Exclusive writing in one folder: `with FolderLock(folder, "--model-dir", "training"):`.

    The lock is a hidden file LOCK_FILE in the folder (which must exist),
    created exclusively (O_EXCL), holding this process's PID, `what` it
    does and its command line; it is removed on exit. A lock whose process
    is gone (killed) is taken over silently. When a live process holds it,
    DataError names that process and what to do, in one line:
    ``model: `python mnist_backward.py --steps 8000` (pid 1234, training)
    is writing this folder; wait for it or use another --model-dir``
    (instead: the flag that gives another folder). wait: seconds to wait for such a
    process to let go first (an export's short commit), else none. Works
    alike on POSIX and Windows (no fcntl).
    """
    folder: str
    instead: str
    what: str = ""
    wait: float = 0.0

    def __enter__(self):
        path, deadline, takeovers = os.path.join(self.folder, LOCK_FILE), time.monotonic() + self.wait, 0
        while True:
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    self._take_over(path)
                except DataError:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.05)
                    continue
                takeovers += 1
                if takeovers < 3:
                    continue
                raise DataError(f"{self.folder}: cannot take the folder's lock {path}; remove it if no "
                                "other process writes this folder") from None
            # The command line of this process, on one line, about as its user typed it (python mnist_backward.py ...).
            script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
            command = " ".join(shlex.join((["python"] if script.endswith(".py") else []) + [script, *sys.argv[1:]])
                               .split("\n"))
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(f"{os.getpid()}\n{self.what}\n{command[:COMMAND_CHARS]}\n")
            except OSError:  # a full disk: no lock file is left behind; the caller names what it was writing
                files.remove(path)
                raise
            tf_compat.holding_file(path)  # removed even when the process ends at once (tf_compat.end_at_once)
            return self

    def _take_over(self, path):
        """Remove the lock file `path` of a process that is gone; DataError when a live one holds it.

        Our own PID in it is a run of ours that ended (a container starts
        every run as PID 1), never another owner. A lock without a readable
        PID is one whose writer was stopped between creating it and writing
        the PID: stale once LOCK_WRITE_SECS old, waited for until then.
        """
        deadline = time.monotonic() + LOCK_WRITE_SECS
        while True:
            owner = lock_owner(path)
            if owner is not None or not os.path.exists(path):
                break
            try:
                age = time.time() - os.path.getmtime(path)
            except OSError:
                break
            if age >= LOCK_WRITE_SECS or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        held = held_by(self.folder, self.instead, owner)
        if held:
            raise held from None
        files.remove(path)  # left by a process that is gone

    def __exit__(self, *exc):
        path = os.path.join(self.folder, LOCK_FILE)
        if lock_owner(path) == os.getpid():
            files.remove(path)
        tf_compat.holding_file(path, held=False)


def held_by(folder, instead, owner=None):
    """The DataError naming the live process (other than this one) that holds folder's lock, or None.

    owner: the PID its lock file holds (lock_owner), read here when None. The line names that process's command
    and what it does, and what to do: ``model: `python mnist_backward.py --steps 8000` (pid 1234, training) is
    writing this folder; wait for it or use another --model-dir`` (instead: the flag that gives another folder).
    """
    path = os.path.join(folder, LOCK_FILE)
    owner = lock_owner(path) if owner is None else owner
    if owner is None or owner == os.getpid() or not pid_alive(owner, since=modified(path)):
        return None
    what, command = lock_holder(path)
    holder = f"`{command}` ({', '.join(filter(None, (f'pid {owner}', what)))})" if command else \
        f"another process (pid {owner})"  # a lock file written before it named its command
    return DataError(f"{folder}: {holder} is writing this folder; wait for it or use another {instead}")


def lock_owner(path):
    """The PID (int > 0) written in a lock file, or None when it is missing, empty or holds no PID."""
    try:
        with open(path, encoding="utf-8") as f:
            pid = int(f.readline().strip())
    except (OSError, ValueError):
        return None
    return pid if pid > 0 else None


def lock_holder(path):
    """(what it does, its command line) as a lock file tells them: str each, "" when it says none (older lock files)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
    except OSError:
        return "", ""
    return (lines[1].strip() if len(lines) > 1 else ""), (lines[2].strip() if len(lines) > 2 else "")


def pid_alive(pid, since=None):
    """True when a process with this PID runs (POSIX: signal 0; Windows: OpenProcess and its exit code).

    False for a PID <= 0: os.kill(0 or -1, 0) would ask about a whole
    process group, or every process we may signal, and say yes.
    since: when the process sought was known to run (time.time() s: its
    lock file's or staging folder's modification time, `modified`); a
    process with the PID that started PID_REUSED_SECS or more after it is
    another one, given the PID after the first had ended (Linux, where
    process_start can say; a killed trainer's lock was otherwise held by
    whatever process got its PID next), so False.
    """
    if pid <= 0:
        return False
    if since is not None:
        started = process_start(pid)
        if started is not None and started - since >= PID_REUSED_SECS:
            return False
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process on Windows
        import ctypes
        kernel32 = ctypes.windll.kernel32
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        try:
            return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def process_start(pid):
    """When process (or thread) `pid` started, as time.time() s (float), from Linux's /proc (its stat's starttime
    after boot, against /proc/uptime); None where that cannot be read (not Linux, no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])  # field 22; the fields after the name from 3
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def modified(path):
    """The modification time of `path` (time.time() s, float), None when it cannot be had (gone meanwhile)."""
    try:
        return os.path.getmtime(path)
    except OSError:
        return None


# ---------------------------------------------------------------- a model folder's checkpoints and its index file


def prefix_of(model_dir, step, name=MODEL_NAME):
    """The checkpoint prefix <model_dir>/<name>-<step> (str), e.g. model/mnist_model-2000."""
    return os.path.join(model_dir, f"{name}-{step}")


def name_of(prefix):
    """The name (a trainer's MODEL_NAME) in a checkpoint prefix, e.g. "mnist_model" for model/mnist_model-2000."""
    return os.path.basename(prefix).rsplit("-", 1)[0]


def step_of(prefix):
    """The global_step (int) in a checkpoint prefix's name, e.g. 2000 for model/mnist_model-2000."""
    return int(prefix.rsplit("-", 1)[1])


def checkpoint_steps(model_dir, name=MODEL_NAME, entries=None):
    """The global_steps (sorted ints) of the checkpoints named `name` whose files are in model_dir, whole or not.

    Any of a checkpoint's files (.index, .data-*, .meta, or the one file of
    the V1 format) counts, so that a checkpoint that lost its .index is
    still seen, and reported damaged instead of being passed over.
    entries: model_dir's listing, when the caller has made it (survey).
    """
    try:
        names = os.listdir(model_dir) if entries is None else entries
    except OSError:
        return []
    pattern = re.compile(CHECKPOINT_FILE_OF % re.escape(name))  # re's cache compiles it once
    return sorted({int(m.group("step")) for m in map(pattern.match, names) if m})


def has_checkpoints(folder):
    """True when folder holds a file of a checkpoint (of any name, or the course's V1 file), whole or not."""
    try:
        return any(ANY_CHECKPOINT_FILE.match(name) or CHECKPOINT_FILE.match(name) for name in os.listdir(folder))
    except OSError:
        return False


def checkpoint_names(model_dir):
    """The names (a set of str) of the V2 checkpoints whose files are in model_dir: {"mnist_model"}, or more."""
    try:
        names = os.listdir(model_dir)
    except OSError:
        return set()
    return {m.group("name") for m in map(ANY_CHECKPOINT_FILE.match, names) if m}


def checkpoint_name(model_dir, default=MODEL_NAME, state=None):
    """The name of model_dir's checkpoints, for a reader: the one its `checkpoint` index file names (as the
    course's tf.train.get_checkpoint_state tells it), else the one name of the checkpoint files there, else
    `default` (the MODEL_NAME of the trainer that writes the folder). state: see indexed_prefix."""
    names = checkpoint_names(model_dir)
    if not names:
        return default  # no V2 checkpoint files (nor TensorFlow's import to read the index file)
    indexed = indexed_prefix(model_dir, state)
    if indexed is not None:
        return name_of(indexed)
    return names.pop() if len(names) == 1 else default


def checkpoint_format(prefix):
    """"V2" when prefix.index is there, "V1" when the single V1-format file `prefix` is, else None.

    V2 (TensorFlow's default since 1.x): <prefix>.index and .data-NNNNN-of-NNNNN
    files. V1 (tf.train.Saver(write_version=SaverDef.V1), and TensorFlow
    before the V2 default): all tensors in the one file <prefix>.
    """
    if os.path.exists(prefix + ".index"):
        return "V2"
    return "V1" if os.path.isfile(prefix) else None


def typed_prefix(path):
    """The checkpoint prefix (str) a typed path means: a V2 checkpoint's own file (model/mnist_model-2000.index,
    .meta or .data-00000-of-00001, as tab-completion gives) stands for its prefix when that prefix's .index is
    there; any other path is returned as it is (a prefix, a V1 checkpoint's one file, or a path not there)."""
    stripped = re.sub(V2_SUFFIX + "$", "", path)
    return stripped if stripped != path and os.path.exists(stripped + ".index") else path


def checkpoint_path(text):
    """The argparse type of a checkpoint flag (mnist_test.py --checkpoint): str -> str, cli.path's path as the
    prefix it means (typed_prefix: a checkpoint's .index/.meta/.data file stands for its prefix)."""
    return typed_prefix(cli.path(text))


Survey = collections.namedtuple("Survey", "model_dir name entries steps indexed unfinished newest")
Survey.__doc__ = """What a model folder holds for checkpoints named `name`, from one listing and one read of its index.

entries: the folder's file and folder names (sorted; [] when it cannot be
listed); steps: checkpoint_steps'; indexed: the checkpoint the index file
names, as a path in model_dir, or None (indexed_prefix); unfinished: the
prefixes of saves that never finished (see survey); newest: the prefix of
the newest checkpoint among the rest, or None (what latest() returns)."""


def survey(model_dir, name=MODEL_NAME, state=None):
    """The Survey of model_dir for checkpoints named `name`: one listing of it, and its index file read once.

    Found from the checkpoint files that are there, whatever the `checkpoint`
    index file says (it may be missing, damaged, or name a folder that was
    moved). Unfinished saves: the index file is the last thing a save
    changes (the trainer's save writes the .meta, then tf.train.Saver
    renames the .data and .index into place and names the checkpoint in
    the index), except that Saver.save on its own writes the .meta after
    the index. Files of a step newer than the one the index names, without
    their .index or .meta, are therefore a save still running (mnist_test.py
    beside the trainer) or a save that was killed (the trainer at start-up).
    A newer step with both is a whole checkpoint whose index update was
    lost, and counts. None is unfinished when the index file does not lead
    to a checkpoint of this name: then nothing can be told apart, and every
    checkpoint counts. state: the index as tf.train.get_checkpoint_state
    read it, when the caller has (the trainer: the course's call).
    """
    try:
        entries = sorted(os.listdir(model_dir))
    except OSError:
        entries = []
    steps = checkpoint_steps(model_dir, name, entries)
    if not steps:  # no checkpoint files: nothing unfinished (nor TensorFlow's import to read the index file)
        return Survey(model_dir, name, entries, steps, None, [], None)
    indexed = indexed_prefix(model_dir, state)
    unfinished = []
    if indexed is not None and name_of(indexed) == name and checkpoint_format(indexed) is not None:
        unfinished = [prefix_of(model_dir, s, name) for s in steps
                      if s > step_of(indexed) and not _whole(prefix_of(model_dir, s, name))]
    whole = [s for s in steps if prefix_of(model_dir, s, name) not in unfinished]
    return Survey(model_dir, name, entries, steps, indexed, unfinished,
                  prefix_of(model_dir, whole[-1], name) if whole else None)


def latest(model_dir, name=MODEL_NAME):
    """The prefix (str) of the newest checkpoint named `name` (a trainer's MODEL_NAME) in model_dir, or None.

    From one listing of the folder (survey): with two, a save that began
    between them could be missing from the first (so not unfinished) and be
    taken from the second before its .index is there. Saves that did not
    finish are passed over. The checkpoint is not verified here: see
    checkpoints.read_checkpoint.
    """
    return survey(model_dir, name).newest


def _whole(prefix):
    """True when a checkpoint's files say its save finished: .index and .meta (V2), or the V1 file."""
    return os.path.isfile(prefix) or all(os.path.exists(prefix + ext) for ext in (".index", ".meta"))


def indexed_prefix(model_dir, state=None):
    """The checkpoint the `checkpoint` index file names, as a path in model_dir, or None.

    The index may hold a path that is gone (the folder was moved or copied
    with absolute paths in it): only its file name, <name>-<step> of any
    name, is used, in model_dir.
    None when the index is missing or unreadable. state: the index as
    tf.train.get_checkpoint_state(model_dir) returned it, when the caller
    read it already.
    """
    state = state or index_state(model_dir)
    if state is None or not state.model_checkpoint_path:
        return None
    name = os.path.basename(state.model_checkpoint_path.replace("\\", "/"))
    return os.path.join(model_dir, name) if re.fullmatch(r".+-\d+", name) else None


def indexed_names(model_dir):
    """The checkpoint names (file names, not paths) model_dir's index file lists, oldest first; [] when none."""
    state = index_state(model_dir)
    return [os.path.basename(p.replace("\\", "/")) for p in state.all_model_checkpoint_paths] if state else []


INDEX_LINE = re.compile(r'(\w+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|[-+0-9.eE]+)')  # `name: "text"` or `name: 1.7e9`
INDEX_PATHS = ("model_checkpoint_path", "all_model_checkpoint_paths")  # its text fields; the others are timestamps


def index_state(model_dir):
    """model_dir's `checkpoint` index file as TensorFlow reads it (tf.train.get_checkpoint_state), read without
    TensorFlow (whose import takes seconds): an object with model_checkpoint_path (str) and
    all_model_checkpoint_paths (list of str), each path joined to model_dir when relative, as TensorFlow gives
    them; None when the file is missing, names no checkpoint, or is damaged (binary junk, a cut text protobuf, a
    field a CheckpointState does not have). The text protobuf's escapes (\\", \\\\, \\ooo, \\xHH) are read back."""
    try:
        with open(os.path.join(model_dir, INDEX_FILE), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    found = {name: [] for name in INDEX_PATHS}
    for line in filter(None, (line.strip() for line in lines)):
        match = INDEX_LINE.fullmatch(line)
        if match is None or (match.group(2) is None) == (match.group(1) in INDEX_PATHS) or match.group(1) not in (
                *INDEX_PATHS, "last_preserved_timestamp", "all_model_checkpoint_timestamps"):
            return None
        if match.group(2) is not None:
            path = unescaped(match.group(2))
            if path is None:
                return None
            found[match.group(1)].append(path if os.path.isabs(path) else os.path.join(model_dir, path))
    if not found["model_checkpoint_path"]:
        return None
    return types.SimpleNamespace(model_checkpoint_path=found["model_checkpoint_path"][-1],
                                 all_model_checkpoint_paths=found["all_model_checkpoint_paths"])


def unescaped(text):
    """A text protobuf string's content `text` (str, between its quotes) with its C escapes read back; None when its
    bytes are no UTF-8."""
    simple = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v"}

    def byte(match):
        code = match.group(1)
        if code[:1] in b"xX" and len(code) > 1:
            return bytes([int(code[1:], 16)])
        if code[:1].isdigit():
            return bytes([int(code, 8) & 0xFF])
        return simple.get(code, code)
    try:
        return re.sub(rb"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", byte, text.encode("utf-8")).decode("utf-8")
    except UnicodeDecodeError:
        return None


def write_index(model_dir, newest, names):
    """Rewrite model_dir's `checkpoint` index file (atomically) to name `newest` among `names` (oldest first).

    The names are file names in model_dir (<name>-<step>), written relative,
    as the trainer's Saver writes them (save_relative_paths). Raises
    DataError when model_dir cannot be written.
    """
    files.write_atomically(os.path.join(model_dir, INDEX_FILE), files.text_writer(index_text(model_dir, newest, names)),
                           what="the checkpoint index")


def index_text(model_dir, newest, names):
    """The `checkpoint` index file's text naming `newest` among `names` (file names in model_dir, oldest first):
    TensorFlow's CheckpointState (tf.train.generate_checkpoint_state_proto) in its text format, what
    tf.train.get_checkpoint_state reads."""
    from google.protobuf import text_format  # TensorFlow's own writer of the index file uses it
    state = tf.train.generate_checkpoint_state_proto(os.path.abspath(model_dir), newest, list(names))  # abs: kept as is
    return text_format.MessageToString(state)


# ---------------------------------------------------------------- the folder's record


def folder_record(model_dir, strict=False):
    """model_dir's FOLDER_FILE as a dict; {} when it is missing, or unreadable (a folder of an earlier version).

    Read as UTF-8, a byte-order mark (an editor's) let through. strict: an
    unreadable record (not JSON, cut short, not an object, unreadable
    bytes) raises DataError naming the file and where it fails, for those
    that are about to change the learn history it holds (a learn, undo,
    redo, accept, discard): rewriting it would lose that history.
    """
    path = os.path.join(model_dir, FOLDER_FILE)
    try:
        with open(path, encoding="utf-8-sig") as f:
            record = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        if not strict:
            return {}
        why = (f"not JSON ({e.msg} at line {e.lineno} column {e.colno})" if isinstance(e, json.JSONDecodeError)
               else f"unreadable ({getattr(e, 'strerror', None) or e})")
        raise DataError(f"{path}: the model folder's record is {why}; it holds the folder's learns: correct it "
                        "(or put back a copy) and try again; nothing changed") from None
    if isinstance(record, dict):
        return record
    if strict:
        raise DataError(f"{path}: the model folder's record is a JSON {type(record).__name__}, not an object; it "
                        "holds the folder's learns: correct it (or put back a copy) and try again; nothing changed")
    return {}


def folder_network(model_dir, names=None, record=None):
    """The networks.Network model_dir holds: the one FOLDER_FILE records, else networks.guess(names), else None.

    record: model_dir's record as folder_record read it, when the caller has."""
    record = (folder_record(model_dir) if record is None else record).get("network")
    if isinstance(record, dict):
        try:
            return networks.from_record(record)
        except DataError:  # a declaration of another version
            pass
    return networks.guess(names) if names is not None else None


def another_network(model_dir, network, name=MODEL_NAME):
    """The DataError for a trainer of `network` given model_dir when it holds no checkpoint named `name` and its
    record names another network (that network's checkpoints deleted by hand, the record left): that network's
    trainer named, nothing written (training would put the trainer's own network there, over the record). None
    otherwise."""
    started_by = folder_network(model_dir)
    if started_by is None or started_by.train_script == network.train_script or latest(model_dir, name):
        return None
    return DataError(f"{model_dir}: {started_by.name}'s folder (its {FOLDER_FILE}), with no checkpoint; train it "
                     f"with `{networks.command(started_by, 'train_script', model_dir)}`, or give another --model-dir "
                     f"(or delete {os.path.join(model_dir, FOLDER_FILE)} to start anew there)")


def files_network(model_dir):
    """The networks.Network whose variables a checkpoint left in model_dir or a folder inside it holds (history/,
    learns/<n>/: networks.guess of its .index's names, newest name first), or None: what the files of a folder
    without a record (or checkpoints still to read) show of the network, for a hint's trainer."""
    indexes = [path for pattern in ("*.index", os.path.join("*", "*.index"), os.path.join("*", "*", "*.index"))
               for path in sorted(glob.glob(os.path.join(glob.escape(model_dir), pattern)), reverse=True)]
    for index in indexes:
        try:
            names = [name for name, _ in tf.train.list_variables(index[:-len(".index")])]
        except (tf.errors.OpError, ValueError):  # cut short, not a checkpoint's
            continue
        found = networks.guess(names)
        if found is not None:
            return found
    return None


def write_folder_record(model_dir, network, examples, settings):
    """Record in model_dir's FOLDER_FILE the network it holds, the records of its epoch and the settings it trains
    at: {"network": networks.to_record(network), "records": examples, <option name>: <value>, ...}.

    settings: {option name: JSON value} (cli.Options.record), at the top
    level where "batch_size" always was (mnistkit.learn reads it), so that
    a record without the other options is read and checked alike. The
    learn history the record holds (LEARNS, REDO) and the scores mnist_test.py recorded (ACCURACY) are kept.
    """
    keep_unreadable_record(model_dir)  # a record no one can read is copied aside, not lost, before it is replaced
    kept = {key: value for key, value in folder_record(model_dir).items() if key in (LEARNS, REDO, ACCURACY)}
    record = {"network": networks.to_record(network), "records": examples, **settings, **kept}
    files.write_atomically(os.path.join(model_dir, FOLDER_FILE), files.text_writer(record_text(record)),
                           what="the model folder's record")


def keep_unreadable_record(model_dir):
    """When model_dir's FOLDER_FILE is there but cannot be read (folder_record's strict: a hand edit, a file cut
    short), copy it to FOLDER_FILE.unreadable (.unreadable-2, ... when that holds other bytes) so that a trainer
    writing a new record loses none of the learn history a person can still read in it: (the copy's path, why it
    cannot be read), or None when the record reads (or is missing)."""
    path = os.path.join(model_dir, FOLDER_FILE)
    try:
        folder_record(model_dir, strict=True)
        return None
    except DataError as e:
        why = str(e)
    with open(path, "rb") as f:
        data = f.read()
    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)
    for n in range(1, 1000):
        aside = f"{path}.unreadable" + (f"-{n}" if n > 1 else "")
        if not os.path.exists(aside):
            files.write_atomically(aside, write, what="a copy of the model folder's record")
            return aside, why
        with open(aside, "rb") as f:
            if f.read() == data:
                return aside, why
    return None


def record_text(record):
    """FOLDER_FILE's text of a record (a dict): JSON, one item a line, its paths in their own letters (a person
    reads it: cli.readable_json)."""
    return cli.readable_json(record, "utf-8", indent=1) + "\n"


def change(model_dir, moves=(), index=None, record=None):
    """Change model_dir all at once or not at all: move checkpoint files, rewrite its index file and its record.

    moves: [(from, to)] file paths on model_dir's file system, renamed in
    order (a checkpoint's .index last when it comes into the folder, first
    when it leaves, so that no reader takes it half there); index: (newest,
    names) for write_index; record: the whole record (a dict) for
    FOLDER_FILE; the older OLDER_LEARNS_FILE goes once the record holds
    LEARNS. The index and the record are written to temporary files first
    (where a full disk fails), the ones they replace kept aside by a hard
    link, then everything is renamed: a failure anywhere, Ctrl-C included,
    renames back what was moved and leaves the index and record as they
    were. A file where a move would go is never written over. Raises
    DataError naming what could not be done; nothing is changed then.
    """
    for _, target in moves:
        if os.path.lexists(target):
            raise DataError(f"{target}: a file is there already; nothing changed (move it away first)")
    writes = []
    if record is not None:
        writes.append((os.path.join(model_dir, FOLDER_FILE), record_text(record), "the model folder's record"))
    if index is not None:
        writes.append((os.path.join(model_dir, INDEX_FILE), index_text(model_dir, *index), "the checkpoint index"))
    prepared, kept, moved = [], [], []
    try:
        for path, text, what in writes:
            prepared.append((files.prepared(path, files.text_writer(text), what), path))
            kept.append((_aside(path), path))
        for source, target in moves:
            os.rename(source, target)
            moved.append((source, target))
        for tmp, path in prepared:
            files.replace(tmp, path)
    except BaseException as e:
        for aside, path in kept:  # the record and the index as they were, by rename: no room needed
            os.replace(aside, path) if aside else files.discard(path)
        for source, target in reversed(moved):
            os.rename(target, source)
        if isinstance(e, OSError):
            raise DataError(f"{model_dir}: cannot change the model folder ({files.why_not(e)}); it is as it was") \
                from None
        raise
    finally:
        for tmp, _ in prepared:
            files.discard(tmp)
        for aside, _ in kept:
            if aside:
                files.discard(aside)
    if record is not None and LEARNS in record:
        files.remove(os.path.join(model_dir, OLDER_LEARNS_FILE))


def _aside(path):
    """A hard link to the file `path` under a hidden temporary name beside it (a copy where links are refused), or
    None when there is no such file: what change() puts back after a failure."""
    if not os.path.exists(path):
        return None
    aside = f"{os.path.join(os.path.dirname(path), '.' + os.path.basename(path))}.{os.getpid()}.aside"
    files.discard(aside)
    try:
        os.link(path, aside)
    except OSError:
        shutil.copy2(path, aside)
    return aside


# ---------------------------------------------------------------- what a trainer clears


@contextlib.contextmanager
def writing(model_dir, what, name=MODEL_NAME, network=None, log=print, state=None):
    """Around a trainer's run in model_dir: the folder made when missing, locked, listed once and cleared; yields
    its Survey. A folder it made that the run leaves empty (a cluster's chief that gave up or was stopped before
    its first save) is removed again, also when the process ends at once (tf_compat.holding_folders).

    what: what the run does, for the line refusing a second writer
    ("training"): the FolderLock on model_dir, held for the block. Under
    it, one listing (survey: name, the checkpoints' name, a trainer's
    MODEL_NAME; state, the index file as the caller read it), then:
    a trainer writes and resumes only checkpoints of its own name, so that
    a folder never holds two series that readers would take for one: a
    folder holding checkpoints of another name (ANY_CHECKPOINT_FILE) is
    refused, naming the constant to set to resume them (network: the one
    trained, whose train_script holds MODEL_NAME). Then what a killed
    Saver.save left is deleted: `<name>-<step>_temp` folders, and the
    unfinished saves (each said through `log`). The trainer's save writes a
    checkpoint's .meta, then tf.train.Saver writes into such a folder,
    renames the .index and .data files into place and only then updates the
    `checkpoint` index file; a kill on the way leaves files that no reader
    uses and that this run would otherwise have to save over; under the
    lock, no other writer's save is taken for one. Raises DataError when
    the folder cannot be made or written (choose another --model-dir), when
    another live process writes it, for checkpoints of another name, and
    for files that cannot be removed.
    """
    made = files.missing_folders(model_dir)
    try:
        os.makedirs(model_dir, exist_ok=True)
    except OSError as e:
        raise DataError(f"{model_dir}: cannot use model folder ({e.strerror})") from None
    tf_compat.holding_folders(made)  # a run that ends before its first save (a cluster's time-out) leaves none
    try:
        with _writing(model_dir, what, name, network, log, state) as found:
            yield found
    finally:
        tf_compat.holding_folders(made, held=False)
        files.remove_empty_folders(made)


def check_writable(model_dir):
    """Raise DataError when the model folder model_dir, if there, cannot be written: read-only, or written by another
    live process (held_by). writing() checks it again under the lock; a trainer calls it before TensorFlow's
    import too, so that the line comes at once, not after the seconds of that import and of building the graph."""
    if os.path.isdir(model_dir) and not os.access(model_dir, os.W_OK):
        raise DataError(f"{model_dir}: model folder is not writable; choose another with --model-dir")
    held = held_by(model_dir, "--model-dir")
    if held:
        raise held


@contextlib.contextmanager
def _writing(model_dir, what, name, network, log, state):
    """writing's block once the folder is there: checked, locked, listed and cleared; yields its Survey."""
    check_writable(model_dir)
    with FolderLock(model_dir, "--model-dir", what):
        found = survey(model_dir, name, state)
        others = sorted({m.group("name") for m in map(ANY_CHECKPOINT_FILE.match, found.entries) if m} - {name})
        if others:
            raise DataError(f"{model_dir}: its checkpoints are named {others[0]}-<step>, not {name}-<step>; set "
                            f"MODEL_NAME = {others[0]!r} in {network.train_script} to resume them, or use another "
                            "--model-dir")
        try:
            for entry in found.entries:
                path = os.path.join(model_dir, entry)
                if entry.startswith(name + "-") and entry.endswith("_temp") and os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
            for prefix in found.unfinished:
                for path in glob.glob(glob.escape(prefix) + ".*"):
                    os.remove(path)
                log(f"removed {prefix}.*, a save that did not finish (not in the `checkpoint` index file, and no "
                    ".index or no .meta)")
        except OSError as e:
            raise DataError(f"{model_dir}: cannot use model folder ({e.strerror})") from None
        yield found


# ---------------------------------------------------------------- the graph's variables as a checkpoint names them


Whole = collections.namedtuple("Whole", "shape parts")
Whole.__doc__ = """A partitioned variable as a checkpoint holds it: its full `shape` (tf.TensorShape), its `parts`."""


def checkpoint_variables(variables):
    """{name in checkpoint: variable} for the variables tf.train.Saver saves, e.g. tf.global_variables().

    The parts of a partitioned variable (tf.compat.v1.get_variable with a
    partitioner: `fc1_w/part_0`, `fc1_w/part_1`, and their moving averages)
    are saved by tf.train.Saver as one variable of the full shape under
    the unpartitioned name (`fc1_w`); they come as one Whole here, so
    that check_variables compares a cluster's graph with checkpoints of one
    machine. Every other variable comes under its op name.
    """
    found = {}
    for var in variables:
        name, shape = saved_as(var)
        if name == var.op.name:
            found[name] = var
        else:
            found.setdefault(name, Whole(tf.TensorShape(shape), [])).parts.append(var)
    return found


def check_graph(network):
    """Raise DataError when a network's declaration names a variable (in variables or split) that the default
    graph's trainable variables lack, as checkpoint_variables names them (a cluster's split parts count as
    their whole).

    Called once the forward module's forward() has built the graph, before a
    step runs (mnist_backward.build_graph, mnist_test.evaluate), as
    check_variables checks a checkpoint against the graph: a misspelt split
    would otherwise not be split, and a misspelt variable would be recorded
    in the model folder. The message names the declaration, the names it
    lacks and the graph's, e.g. `mnist_deep_forward.NETWORK names split
    'W1', which the graph of mnist_deep_forward.forward lacks (its
    variables: b1, b2, w1, w2); correct the declaration`.
    """
    names = {saved_as(var)[0] for var in tf.trainable_variables()}  # as checkpoint_variables names them
    lacked = [f"{field} {name!r}" for field in ("variables", "split")
              for name in getattr(network, field) if name not in names]
    if lacked:
        raise DataError(f"{network.forward}.NETWORK names {', '.join(lacked)}, which the graph of "
                        f"{network.forward}.forward lacks (its variables: {', '.join(sorted(names)) or 'none'}); "
                        f"correct the declaration")
