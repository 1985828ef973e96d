"""Files written so that nothing half-written is ever left: temporary names, atomic renames.

Used by the generator (TFRecord files, the JPG layout), the evaluator's
report, the app's --show-input and a model folder's writers
(mnistkit.folders, which also holds the one-writer lock of a folder).
"""
import os
import tempfile
import time

from tf_compat import disk_full, first_line  # no TensorFlow: that module imports it on first use only
from .errors import DataError

NO_SPACE = "no space left on device"  # what every line about a write that filled the disk says


def why_not(error):
    """Why a write failed, as a line says it (str): NO_SPACE for a full disk (ENOSPC, or TensorFlow's words for
    it: tf_compat.disk_full), else the system's words (strerror: `Permission denied`), else the error's first
    line."""
    if disk_full(error):
        return NO_SPACE
    return getattr(error, "strerror", None) or first_line(error)


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


def a_file_as_folder(path, flag, written, hint=""):
    """The DataError for an output folder `path` (str) named by `flag` that is a file, else None: said before the
    work, not as os.makedirs' `(File exists)` or `(Not a directory)` after it. written: what goes into the folder;
    hint: the rest of the line (` (its folder: --data-dir data)`)."""
    if not os.path.exists(path) or os.path.isdir(path):
        return None
    return DataError(f"{path} is a file, not a folder: {flag} names the folder {written} are written into{hint}")


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
    tmp = prepared(path, write, what)
    try:
        replace(tmp, path)
    except BaseException as e:  # a refused rename, Ctrl-C: the temporary goes
        discard(tmp)
        if isinstance(e, OSError):
            raise DataError(f"{path}: cannot write {what} ({why_not(e)})") from None
        raise


def prepared(path, write, what="report"):
    """A hidden temporary file beside `path` holding what write(tmp_path) wrote, not yet renamed: its path (str).

    For writes that must all land or none (a learn's promote: the record
    and the index file after the checkpoint's files): the caller renames
    it over `path` (replace) or discards it. Raises DataError naming path
    (and `what` it is) when the folder cannot be made or written; nothing
    is left then.
    """
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        os.close(fd)
        write(tmp)
        public_mode(tmp)
        return tmp
    except BaseException as e:  # a full disk, Ctrl-C: the temporary goes
        if tmp is not None:
            discard(tmp)
        if isinstance(e, OSError):
            raise DataError(f"{path}: cannot write {what} ({why_not(e)})") from None
        raise


def text_writer(text):
    """A write(tmp) for write_atomically and prepared that writes `text` (UTF-8) into tmp."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return write
