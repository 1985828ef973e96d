"""Files written so that nothing half-written is ever left: temporary names, atomic renames.

Used by the generator (TFRecord files, the JPG layout), the evaluator's
report and the app's --show-input.
"""
import os
import tempfile
import time

from .errors import DataError

def public_mode(path):
    """Give a file made by tempfile.mkstemp/mkdtemp (0600/0700) the usual umask-based mode."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~umask)


RETRY_SECS = 3.0  # how long a rename or delete refused with PermissionError is tried again (Windows)


def retrying(operation, *paths):
    """operation(*paths), tried again for up to RETRY_SECS while it fails with PermissionError.

    On Windows a file another process holds open (mnist_test.py or
    TensorBoard reading a folder, a virus scanner, an editor) cannot be
    renamed over or deleted for a moment. Raises DataError naming the last
    path when the refusal lasts; other OSErrors are raised as they are.
    """
    deadline = time.monotonic() + RETRY_SECS
    while True:
        try:
            return operation(*paths)
        except PermissionError as e:
            if time.monotonic() >= deadline:
                raise DataError(f"{paths[-1]}: cannot replace or remove it: another program holds it open "
                                f"({e.strerror}); close that program and run again") from None
            time.sleep(0.05)


def replace(src, dst):
    """os.replace(src, dst) (atomic on POSIX and Windows), tried again while Windows refuses it (retrying)."""
    retrying(os.replace, src, dst)


def remove(path):
    """Delete a file, tried again while Windows refuses it (retrying); one that is already gone is fine."""
    try:
        retrying(os.remove, path)
    except FileNotFoundError:
        pass


def discard(path):
    """Remove a temporary file after a failure; one still held open is left for the next run's clean-up."""
    try:
        remove(path)
    except DataError:
        pass


def listing(folder):
    """os.listdir(folder), or [] when it cannot be listed (missing, not a folder, not readable)."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


def missing_folders(path):
    """The folders of `path` that do not exist yet (path itself and its missing parents), deepest first."""
    missing = []
    path = os.path.abspath(path)
    while not os.path.exists(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def remove_empty_folders(folders):
    """Remove each of `folders` (deepest first) that is empty, stopping at the first that is not.

    A failed run takes back the output folders it created, so it leaves
    nothing that was not there before.
    """
    for folder in folders:
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            continue
        except OSError:
            return


def write_atomically(path, write, what="report"):
    """Call write(tmp_path), then rename tmp_path to path: no half-written file.

    Raises DataError naming path (and `what` it is) when the folder cannot be made or written.
    """
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        os.close(fd)
        write(tmp)
        public_mode(tmp)
        replace(tmp, path)
    except BaseException as e:  # a full disk, a refused rename, Ctrl-C: the temporary goes
        if tmp is not None:
            discard(tmp)
        if isinstance(e, OSError):
            raise DataError(f"{path}: cannot write {what} ({e.strerror or e})") from None
        raise


LOCK_FILE = ".mnist.lock"  # hidden: in a folder a process is writing, holding that process's PID
LOCK_WRITE_SECS = 3.0  # a lock file still without a PID this long after it was made is a stopped writer's


class FolderLock:
    """Exclusive writing in one folder: `with FolderLock(folder, "mnist_generateds.py"):`.

    The lock is a hidden file LOCK_FILE created exclusively (O_EXCL) and
    holding the owner's PID; it is removed on exit. A lock whose process is
    gone (killed) is taken over. Raises DataError naming the folder and the
    other process when a live one holds it. Works alike on POSIX and
    Windows (no fcntl).
    """

    def __init__(self, folder, who):
        self.path, self.folder, self.who = os.path.join(folder, LOCK_FILE), folder, who

    def __enter__(self):
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._take_over()
                continue
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(f"{os.getpid()}\n")
            except OSError:  # a full disk: no lock file is left behind; the caller names what it was writing
                remove(self.path)
                raise
            return self
        raise DataError(f"{self.folder}: cannot take the folder's lock {self.path}; remove it if no other "
                        f"{self.who} runs")

    def _take_over(self):
        """Remove the lock file of a process that is gone; DataError when a live one holds it.

        Our own PID in it is a run of ours that ended (a container starts
        every run as PID 1), never another owner. A lock without a readable
        PID is one whose writer was stopped between creating it and writing
        the PID: stale once LOCK_WRITE_SECS old, waited for until then.
        """
        deadline = time.monotonic() + LOCK_WRITE_SECS
        while True:
            owner = lock_owner(self.path)
            if owner is not None or not os.path.exists(self.path):
                break
            try:
                age = time.time() - os.path.getmtime(self.path)
            except OSError:
                break
            if age >= LOCK_WRITE_SECS or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if owner is not None and owner != os.getpid() and pid_alive(owner):
            raise DataError(f"{self.folder}: another {self.who} (pid {owner}) is writing here; wait until "
                            "it ends, or use another folder") from None
        remove(self.path)  # left by a process that is gone

    def __exit__(self, *exc):
        if lock_owner(self.path) == os.getpid():
            remove(self.path)


def lock_owner(path):
    """The PID (int > 0) written in a lock file, or None when it is missing, empty or holds no PID."""
    try:
        with open(path) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return pid if pid > 0 else None


def pid_alive(pid):
    """True when a process with this PID runs (POSIX: signal 0; Windows: OpenProcess and its exit code).

    False for a PID <= 0: os.kill(0 or -1, 0) would ask about a whole
    process group, or every process we may signal, and say yes.
    """
    if pid <= 0:
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
