"""Files written so that nothing half-written is ever left: temporary names, atomic renames; progress bars.

Used by the generator (TFRecord files, the JPG layout), the evaluator's
report and the app's --show-input.
"""
import os
import sys
import tempfile

from tqdm import tqdm

from .errors import DataError

def public_mode(path):
    """Give a file made by tempfile.mkstemp/mkdtemp (0600/0700) the usual umask-based mode."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~umask)


def remove(path):
    """Delete a file; one that is already gone is fine."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def progress_bar(quiet=False, **kwargs):
    """A tqdm progress bar on stderr, or a silent stand-in with the same methods.

    The bar is drawn only when both stdout and stderr are terminals and
    `quiet` is false: redirected or CI output must hold no carriage returns
    or bar characters. kwargs go to tqdm (total, desc, unit, initial...).
    """
    terminal = sys.stdout.isatty() and sys.stderr.isatty()
    return tqdm(disable=quiet or not terminal, file=sys.stderr, dynamic_ncols=True, **kwargs)


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
    """Call write(tmp_path), then rename tmp_path to path: no half-written report.

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
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)
        raise DataError(f"{path}: cannot write {what} ({e.strerror or e})") from None
