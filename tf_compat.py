"""TensorFlow's v1 graph API, imported once and quietly, for every script here.

The course was written for TensorFlow 1.x. On TensorFlow 2.x its API lives on
as `tf.compat.v1`; graph mode must be switched on before any op is built.

TensorFlow prints C++ info lines (oneDNN, absl) while it loads, and Python
deprecation warnings for every queue-runner call the course uses. Both drown
the course's own output, so they are silenced unless the command line holds
`--verbose` (checked here, before argparse runs, because the C++ logs are
written during the import itself).

`import tensorflow` also imports Keras 3 eagerly (only to register Keras
optimizers for SavedModel), and Keras pulls in matplotlib and rich (TensorFlow
imports h5py itself).
Nothing here uses Keras, so its import is blocked before TensorFlow loads:
TensorFlow catches the ImportError, exactly as when Keras is not installed.
That saves memory and start-up time for every script (docs/performance.md).

TensorFlow is imported on first use, not when this module is: `tf` is a
stand-in module whose first attribute access (`tf.Graph`, `tf.errors`, ...)
imports tensorflow.compat.v1 and switches graph mode on. So `--help`, a flag
error or a missing data file costs no TensorFlow import (about 3 s): the scripts
build their argparse parsers (`build_parser()`) and check their flags before
any graph is built. Module-level tables that hold TensorFlow objects are
built on first use as well (`LazyMapping`).

Usage: `from tf_compat import tf`; `first_line(error)` quotes a TensorFlow
error in the one-line messages every script prints; `not_a_script(...)` is
the whole command line of a module that is imported, not run.
"""
import contextlib
import dataclasses
import errno
import importlib
import logging
import os
import re
import signal
import sys
import threading
import types
import warnings
from collections.abc import Mapping
from typing import Callable

VERBOSE = "--verbose" in sys.argv[1:]
QUIET = "--quiet" in sys.argv[1:]  # a script's --quiet: no progress bar, nor LOADING_LINE
STOP_SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGBREAK", "SIGHUP")  # as mnistkit.errors.STOP_SIGNALS (no mnistkit import
# here); one the process ignores (SIGHUP under nohup) stays ignored (holding_signals)
MAX_MESSAGE = 200  # characters of a TensorFlow error message quoted in ours
HELD_STOP_SECS = 1.0  # a stop signal held during TensorFlow's import ends the process this long after (holding_signals)
_STDERR_SAVED = []  # the real stderr's descriptor while _load mutes fd 2, for _end_now's line
UNUSED_PACKAGES = ("keras",)  # imported by TensorFlow's __init__ but not needed by tf.compat.v1 graphs


def writes():
    """Whether the running script writes files (a trainer's checkpoints), for the stop line's `; nothing saved`:
    mnistkit.startup.saves, the one rule (mnist_app.py predicting pictures saves nothing), once the script has
    imported it, as every script run does first; True in a process that has not (a script's module imported)."""
    started = sys.modules.get("mnistkit.startup")
    return started is None or started.saves()


def holding_signals(work, *args):
    """work(*args)'s result, with Ctrl-C, SIGTERM and Ctrl-Break held back while it runs and delivered after.

    TensorFlow's import (several seconds) passes through code that catches
    every exception, KeyboardInterrupt included: a Ctrl-C raised inside it
    is lost, or leaves a half-imported TensorFlow that fails on the next
    use. Held here, the signal reaches the script's own handler (a
    KeyboardInterrupt, a trainer's stop flag) once the import is done; a
    signal the process ignores stays ignored. An import still running
    HELD_STOP_SECS after the signal (a loaded machine takes 10 s and more)
    does not make the user wait: the process ends then, `SIGINT: stopped
    while TensorFlow was imported; nothing saved` (without `; nothing saved` where writes() is False), status 128 + the
    signal's number (nothing is written before TensorFlow is there; a
    folder's lock a script took before it is removed: end_at_once);
    the signal is heard at once, also inside a long C call (_watch_signals).
    Off the main thread (where handlers cannot be set) work runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        return work(*args)
    held, previous, done, ending = [], {}, threading.Event(), threading.Lock()

    def end_unless_done(signum):
        if not done.wait(HELD_STOP_SECS):
            with ending:
                if not done.is_set():
                    _end_now(signum, "stopped while TensorFlow was imported" + ("; nothing saved" if writes() else ""))

    def hold(signum, frame):
        held.append(signum)

    for name in STOP_SIGNAL_NAMES:
        if hasattr(signal, name):
            sig = getattr(signal, name)
            previous[sig] = signal.signal(sig, hold)
    watching = _watch_signals(lambda signum: previous.get(signum) not in (signal.SIG_IGN, None) and end_unless_done(
        signum))
    try:
        return work(*args)
    finally:
        with ending:
            done.set()
        watching()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(held):  # each held signal once, in the order they came
            if previous[signum] not in (signal.SIG_IGN, None):
                signal.raise_signal(signum)


def _watch_signals(heard):
    """Call heard(signum) on a thread of its own for each signal that comes, as soon as it comes; returns the
    function that ends the watch.

    Python runs a signal's handler in the main thread, between two of its
    bytecodes: not while a C call runs there (a shared library being
    loaded, for seconds on a loaded machine). Python's C-level handler
    writes the signal's number to the wakeup fd (signal.set_wakeup_fd) at
    once, which the thread reads. POSIX only (elsewhere: no watch).
    """
    if os.name == "nt":
        return lambda: None
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        before = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # not the main thread of the main interpreter
        os.close(read)
        os.close(write)
        return lambda: None

    def watch():
        try:
            while True:
                data = os.read(read, 1)
                if not data:
                    return
                heard(data[0])
        finally:
            os.close(read)
    threading.Thread(target=watch, name="signal-watch", daemon=True).start()

    def stop():
        signal.set_wakeup_fd(before)
        os.close(write)  # the thread reads the end of the pipe, and ends
    return stop


def own_line(target=None):
    """"\n" when `target` (a file descriptor, or a stream; None: sys.stderr) is a terminal, else "": what a stop's
    line starts with, so that it stands on a line of its own after the `^C` the terminal echoed, while a log or a
    pipe gets no blank line before it. The rule of every stop line (export.end_stopped, _end_now; mnistkit.startup
    and mnistkit.cli.own_line, which do not import this module, say it the same way)."""
    target = sys.stderr if target is None else target
    try:
        return "\n" if (os.isatty(target) if isinstance(target, int) else target.isatty()) else ""
    except (AttributeError, OSError, ValueError):  # no stream, or a closed one
        return ""


def _end_now(signum, said):
    """End the process at once with status 128 + signum after the line `<SIGNAL>: said` on stderr (fd 2 itself:
    sys.stderr may be muted at that moment)."""
    target = _STDERR_SAVED[0] if _STDERR_SAVED else 2
    line = f"{own_line(target)}{signal.Signals(signum).name}: {said}\n".encode()
    try:
        os.write(target, line)
    except OSError:
        pass
    end_at_once(128 + signum)


_HELD_FILES = set()  # files this process holds (its folders' lock files): gone when it ends at once too


def holding_file(path, held=True):
    """Note that this process holds the file `path` (a folder's lock: mnistkit.folders.FolderLock), so that
    end_at_once removes it; held=False when it let go of it (removed it)."""
    (_HELD_FILES.add if held else _HELD_FILES.discard)(os.path.abspath(path))


_MADE_FOLDERS = []  # folders this process made for its output, deepest first: removed when still empty at the end


def holding_folders(paths, held=True):
    """Note that this process made the folders `paths` (deepest first: files.missing_folders), so that end_at_once
    removes those that are still empty; held=False once the run has removed them or put something there."""
    for path in map(os.path.abspath, paths):
        if held:
            _MADE_FOLDERS.append(path)
        elif path in _MADE_FOLDERS:
            _MADE_FOLDERS.remove(path)


_HELD_GROUPS = set()  # process groups of this process's children (a learn's course script): killed when it ends at once


def holding_group(pgid, held=True):
    """Note that this process started the process group `pgid` (a learn's course script, in a group of its own that
    a terminal's Ctrl-C does not reach), so that end_at_once kills it (SIGKILL); held=False once it has ended."""
    (_HELD_GROUPS.add if held else _HELD_GROUPS.discard)(pgid)


def end_at_once(status):
    """os._exit(status) once the files this process holds (holding_file) are removed, and then the folders it made
    that are empty (holding_folders), its children's process groups killed (holding_group): a process that ends
    at once (a second Ctrl-C, a stop during TensorFlow's import, a cluster's time-out) leaves no lock of its own
    behind, no empty model folder, and no learn's script running on."""
    for path in list(_HELD_FILES):
        try:
            os.remove(path)
        except OSError:
            pass
    for pgid in list(_HELD_GROUPS):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    for path in list(_MADE_FOLDERS):
        try:
            os.rmdir(path)
        except OSError:
            pass
    os._exit(status)


def end(status):
    """End the process with exit status `status` (int), as sys.exit(status) does, but never by an abort (SIGABRT).

    While a daemon thread still runs (the drawing board's: its request workers, the map of the test digits
    reading the test records through TensorFlow or importing it, a model run the shutdown's grace cut), stdout
    and stderr are flushed and the process ends with end_at_once(status), without the interpreter's finalization.
    Python 3.11 (the project's) finalizes by ending each daemon thread with pthread_exit when it next takes the
    GIL; a thread then inside TensorFlow's C++ (tf.io.tf_record_iterator's GetNext, a noexcept pybind11 function
    that takes the GIL back before it returns) turns that into `terminate called after throwing an instance of
    ''`, `FATAL: exception not rethrown` and SIGABRT (status -6, 134 in a shell) instead of `status`: such a
    thread cannot be joined within the shutdown's grace (TensorFlow's import alone takes seconds), so it is not
    waited for. Without such a thread it is sys.exit(status), whose finalization flushes and runs atexit as
    usual. Raises SystemExit then; never returns.
    """
    others = [t for t in threading.enumerate() if t.daemon and t.is_alive() and t is not threading.current_thread()]
    if not others:
        sys.exit(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a reader gone (`| head`), a closed or absent stream
            pass
    end_at_once(status)


LOADING_LINE = "loading TensorFlow ..."  # what a terminal shows while TensorFlow imports (seconds), then erased


def loading_line(text):
    """Write `text` at the start of the terminal's line, the cursor back at its start (`\\r`), and return True, when
    stdout and stderr are both terminals (cli.progress_bar's rule: a log or a pipe gets no such line); else False.
    A command that would otherwise be silent for the seconds of TensorFlow's import (an undo, a refusal of a
    checkpoint that holds NaN) shows what it is doing within the first second."""
    try:
        if not (sys.stdout.isatty() and sys.stderr.isatty()):
            return False
        sys.stderr.write(f"\r{text}\r")
        sys.stderr.flush()
        return True
    except (AttributeError, OSError, ValueError):  # no stream (pythonw), or a closed one
        return False


def _load():
    """Import tensorflow.compat.v1 and switch graph mode on; returns the module.

    First `import keras` is made to raise ImportError (UNUSED_PACKAGES),
    unless something imported Keras already. Unless --verbose, stderr is
    muted at the file-descriptor level during the import (the C++ messages
    printed before absl's logging starts ignore TF_CPP_MIN_LOG_LEVEL) and
    restored afterwards, also when the import raises, so that its traceback
    is seen; then TensorFlow's own log lines and warnings are silenced.
    Stop signals that come during the import are held (holding_signals).
    Meanwhile a terminal shows LOADING_LINE (loading_line), erased after it (not with --quiet).
    """
    for name in UNUSED_PACKAGES:
        sys.modules.setdefault(name, None)
    saved = None
    shown = not (VERBOSE or QUIET) and loading_line(LOADING_LINE)
    if not VERBOSE:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # C++ errors too: every failure we meet is said in one line
        saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        _STDERR_SAVED.append(saved)
    try:
        tf_v1 = holding_signals(importlib.import_module, "tensorflow.compat.v1")
    finally:
        if saved is not None:
            _STDERR_SAVED.clear()
            os.dup2(saved, 2)
            os.close(saved)
        if shown:
            loading_line(" " * len(LOADING_LINE))  # erased: the script's own lines follow on a clean line
    if not VERBOSE:
        # Every failure we meet is said in our own one line; TensorFlow's ERROR
        # logs (e.g. "Object was never used" blocks after a failed start) would bury it.
        tf_v1.logging.set_verbosity(tf_v1.logging.FATAL)
        logging.getLogger("tensorflow").setLevel(logging.CRITICAL)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
    tf_v1.disable_eager_execution()
    return tf_v1


class _LazyTF(types.ModuleType):
    """tensorflow.compat.v1, imported by _load() when the first attribute is read.

    Each attribute read is kept in the stand-in's own namespace, so only the
    first read of a name goes through __getattr__. A lock makes two threads'
    first reads import once (the muting of fd 2 must not interleave).
    """
    _lock = threading.Lock()

    def __getattr__(self, name):
        if name.startswith("_"):  # no import for a probe: copy and pickle read dunders, pytest's collection reads
            raise AttributeError(name)  # _mock_name of every name in a test module (TensorFlow has no such API)
        with self._lock:
            module = self.__dict__.get("_module")
            if module is None:
                module = self.__dict__["_module"] = _load()
        value = getattr(module, name)
        setattr(self, name, value)
        return value


@dataclasses.dataclass(eq=False, repr=False)
class LazyMapping(Mapping):
    """A read-only dict built by `build()` on first use (for tables keyed or valued by TensorFlow objects)."""
    build: Callable
    _table: dict = None

    def _get(self):
        if self._table is None:
            self._table = dict(self.build())
        return self._table

    def __getitem__(self, key):
        return self._get()[key]

    def __iter__(self):
        return iter(self._get())

    def __len__(self):
        return len(self._get())

    def __repr__(self):
        return repr(self._get())


def import_tensorflow():
    """Import TensorFlow now instead of at the first use of `tf`; returns tensorflow.compat.v1.

    For measurements whose baseline is a process with TensorFlow loaded
    (resident memory above the import, time after it) and for tests of
    what the import brings in.
    """
    tf.Graph  # the first attribute read imports it
    return tf.__dict__["_module"]


def not_a_script(module_file, what, instead, argv=None):
    """The command line of a module meant to be imported: say what it is and what to run instead.

    module_file: the module's __file__; what, instead: one line each.
    `--help` or `-h` prints both lines on stdout and returns 0; any other
    invocation (none, or other arguments) prints them on stderr and returns
    2, argparse's status for a command line that cannot run, since nothing
    was done. TensorFlow is not imported.
    """
    argv = sys.argv[1:] if argv is None else argv
    name = os.path.basename(module_file)
    wants_help = any(arg in ("-h", "--help") for arg in argv)
    print(f"{name}: {what}\nnot a script to run: {instead}", file=sys.stdout if wants_help else sys.stderr)
    return 0 if wants_help else 2


tf = _LazyTF("tf", "tensorflow.compat.v1, imported on first attribute access (see tf_compat)")


# What tf.data writes before the error of a function it maps (the function, the iterator), and what
# parse_example writes before a record's error (the record's name, which ours have not).
DATASET_FUNCTION = re.compile(r"^(?:Error in user-defined function passed to \S+ transformation with iterator: \S+: )?"
                              r"(?:Name: <unknown>, )?")


def first_line(error):
    """A TensorFlow error's message in one line: where it happened and what, for a one-line report.

    "Graph execution error:\\n\\nFrom /job:ps/replica:0/task:0:\\nSocket closed\\n..." becomes
    "/job:ps/replica:0/task:0: Socket closed"; cut to MAX_MESSAGE characters.
    An error raised in the session's own run (a tf.data iterator's) first
    says where its op was built ("Detected at node 'X' defined at ...",
    the stack, "Node: 'X'"); that part is left out for the cause after it,
    and so is what tf.data puts before an error of a dataset's function
    ("Error in user-defined function passed to ... transformation with
    iterator: Iterator::...: ") and parse_example before a record's
    ("Name: <unknown>, "): the cause reads the same whichever pipeline
    parsed the record.
    A quote mark without its partner (TensorFlow's record reader writes
    "truncated record at 999273' failed with ...") is left out
    (see balance_quotes), so the line can sit inside our own parentheses.
    """
    lines = [line.strip() for line in (getattr(error, "message", None) or str(error)).splitlines()]
    lines = [line for line in lines if line and not line.startswith("Graph execution error")
             and line.strip("=-") != ""]  # banners of "=====" lines carry nothing
    if lines and lines[0].startswith("Detected at node"):
        node = next((i for i, line in enumerate(lines) if line.startswith("Node: ")), None)
        if node is not None:
            lines = lines[node + 1:]
    if not lines:
        return type(error).__name__
    line = lines[0][len("From "):] + " " + lines[1] if lines[0].startswith("From ") and len(lines) > 1 else lines[0]
    line = DATASET_FUNCTION.sub("", line, count=1)
    line = balance_quotes(line)
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 3] + "..."


def balance_quotes(text):
    """text without the single quotes that have no partner; apostrophes (can't, file's) are kept.

    A quote between two letters or digits is an apostrophe. Any other quote
    opens a quotation when it follows the start, a space or an opening
    bracket, and closes one otherwise; a closing quote with no open
    quotation, and an opening one never closed, are dropped.
    """
    stray, opened = [], None
    for i, char in enumerate(text):
        if char != "'":
            continue
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        if before.isalnum() and after.isalnum():
            continue
        if before.isspace() or before in "([{<:=,":
            if opened is not None:
                stray.append(opened)
            opened = i
        elif opened is None:
            stray.append(i)
        else:
            opened = None
    if opened is not None:
        stray.append(opened)
    return "".join(char for i, char in enumerate(text) if i not in stray)

# ---------------------------------------------------------------- TensorFlow's wording and private fields
# Every place where our behaviour hangs on the text of a TensorFlow message or on a private attribute is
# here, and each is pinned by tests/test_tf_compat.py: a TensorFlow that words one otherwise fails there,
# not in a user's run.

CUT_SHORT = ("Read less bytes", "out of range")  # reading a tensor past the end of a .data file
CHECKSUM = "Checksum does not match"  # a tensor whose CRC32C differs from the .index's
FILE_HELD = ("Access is denied", "being used by another process")  # Windows: another process holds the file
DISK_FULL = "No space left on device"  # TensorFlow's text for ENOSPC (its OpError has no errno)
# Where a gRPC error names the task it reached for: "ipv4:127.0.0.1:2222", "ipv6:[::1]:2222".
TASK_ADDRESS = re.compile(r"ipv[46]:\[?([^\s,;)\]]+?)\]?:(\d+)\b")
ITERATOR_OPS = ("IteratorGetNext", "IteratorGetNextSync")  # the ops that hand out a tf.data batch
# An error's last line naming the iterator it came through: "[[IteratorGetNext]]", "[[{{node IteratorGetNext_1}}]]".
ITERATOR_LINE = re.compile(r"\[\[(?:\{\{node )?IteratorGetNext(?:Sync)?(?:_\d+)?(?:\}\})?\]\]")


def message_of(error):
    """The whole text of an exception: a TensorFlow OpError's `message`, else str()."""
    return getattr(error, "message", None) or str(error)


def tensor_read_problem(error):
    """"cut short" or "checksum" for an error reading a checkpoint tensor (CheckpointReader.get_tensor), else None."""
    message = first_line(error)
    if CUT_SHORT[0] in message or CUT_SHORT[1] in message.lower():
        return "cut short"
    if CHECKSUM in message:
        return "checksum"
    return None


def file_held(error):
    """True when an error's text says another process holds the file (Windows' sharing rules)."""
    message = message_of(error)
    return any(text in message for text in FILE_HELD)


def disk_full(error):
    """True when an OSError or TensorFlow error says the disk is full."""
    return getattr(error, "errno", None) == errno.ENOSPC or DISK_FULL in message_of(error)


def task_addresses(error):
    """The HOST:PORT addresses a gRPC error says it reached for, in order (a list of str)."""
    return [":".join(found) for found in TASK_ADDRESS.findall(message_of(error))]


def from_iterator(error):
    """True when a TensorFlow error came from a tf.data iterator's get_next.

    Its op is the iterator's own (a reading error), or, for an error inside
    a function the dataset maps, TensorFlow finds no op and names the
    iterator in the message's last line.
    """
    op = getattr(error, "op", None)
    if op is not None:
        return op.type in ITERATOR_OPS
    return any(ITERATOR_LINE.fullmatch(line.strip()) for line in message_of(error).splitlines())


def events_file(writer):
    """The events file a tf.summary.FileWriter writes (str), or None where TensorFlow's writer hides it.

    Read from the writer's private C++ events writer: TensorFlow reports a
    failed write only in its C++ log, so an empty events file is how a
    failure shows (summaries.close_writer).
    """
    try:
        path = writer.event_writer._ev_writer.FileName()
    except AttributeError:
        return None
    return path.decode() if isinstance(path, bytes) else path


def saved_as(variable):
    """(name, full shape as a list) under which tf.train.Saver saves a variable.

    A part of a partitioned variable (tf.compat.v1.get_variable with a
    partitioner: `fc1_w/part_0`) is saved as a slice of the whole one
    (`fc1_w`, its full shape), as its private _save_slice_info says; any
    other variable under its op name and its own shape.
    """
    info = getattr(variable, "_save_slice_info", None)
    if info is None:
        return variable.op.name, variable.shape.as_list()
    return info.full_name, list(info.full_shape)


@contextlib.contextmanager
def uncached(variables):
    """Ops built in the block read each of `variables` afresh, not through the read the variable caches.

    A variable made with a caching_device (a cluster's weights:
    mnistkit.distributed.place_variables) hands every use the one read it
    keeps in its private _cached_value, which a session run makes once.
    Inside a tf.while_loop that read would be the run's first value at
    every step; built in this block, each use (the moving averages' update
    of mnistkit.steps.steps_loop's steps) reads the variable at its own
    step. Variables without a cached read are left as they are.
    """
    cached = [(v, v._cached_value) for v in variables if getattr(v, "_cached_value", None) is not None]
    try:
        for variable, _ in cached:
            variable._cached_value = None
        yield
    finally:
        for variable, value in cached:
            variable._cached_value = value


if __name__ == "__main__":
    from mnistkit.cli import command
    sys.exit(not_a_script(__file__, "imports TensorFlow's v1 graph API quietly for the other scripts",
                          "run " + ", ".join(f"`{command(script)}`" for script in
                                             ("mnist_generateds.py", "mnist_backward.py", "mnist_test.py"))
                          + f" or `{command('mnist_app.py')}`"))
