"""The user's kept digits: drawings and photos corrected on the board, kept as the course's JPG layout.

A kept-digits folder reads as the course's mnist_train_jpg_60000/ and
mnist_train_jpg_60000.txt do, so `python mnist_generateds.py --train-images
my_digits --train-labels my_digits.txt ...` turns it into TFRecords:
  my_digits/000001_7.jpg               28x28 8-bit grayscale JPG, stroke bright on black (MNIST's orientation)
  my_digits.txt                        one line per digit, `000001_7.jpg 7`, in the order they were kept
  my_digits/.originals/000001_7.png    the picture as drawn or sent, to prepare again later
Hidden names (.originals/, the lock, the counter, temporary files) are
skipped by the generator. Numbers only grow: a removed digit's name is
never given again. Every file is written under a temporary name and
renamed into place, the label file last and whole, so a stopped keep
leaves the layout as it was; threads and processes keep one at a time
(a threading.Lock, and fcntl.flock on the lock file where there is fcntl).
The board's teach routes (mnistkit/board/teach.py) serve a store to its page (docs/teach.md).
"""
import contextlib
import io
import os
import re
import threading

import numpy as np
from PIL import Image

from . import files
from .errors import DataError
from .idx import JPG_QUALITY
from .images import decode_gray_jpeg
from .records import IMAGE_PIXELS, IMAGE_SIZE, NUM_CLASSES

try:
    import fcntl
except ImportError:  # Windows: one process per folder (the threading.Lock still orders its threads)
    fcntl = None

DEFAULT_FOLDER = "my_digits"
STEM = re.compile(r"(\d{6,})_(\d)")  # 000017_9: the number, then the digit, as the course's <i>_<digit>
NAME = re.compile(STEM.pattern + r"\.jpg")  # a kept JPG's name
ORIGINALS = ".originals"
LOCK_FILE, COUNTER_FILE = ".keep.lock", ".keep.next"
SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,5}")  # an original keeps its picture's suffix when it is this plain


class NotKept(KeyError):
    """A name the store does not list (the board's routes answer 404)."""


class KeptDigits:
    """The kept-digits folder `folder` and its label file folder + ".txt" (absent until the first keep).

    Opening checks the folder (check); raises DataError as check does.
    """

    def __init__(self, folder=DEFAULT_FOLDER):
        self.folder = os.path.normpath(folder)
        self.labels = self.folder + ".txt"
        self._lock = threading.Lock()
        self.check()

    def _refuse(self, what):
        return DataError(f"{self.folder}: {what}; move it away or keep digits in another folder")

    def check(self):
        """Raise DataError (one line: the folder, what is wrong, what to do) unless the store can use the folder.

        Refused: a path that is not a folder or cannot be written (nor made),
        a label file with lines of another naming than NAME's, a listed JPG
        that is missing, files the store did not write.
        """
        if os.path.exists(self.folder) and not os.path.isdir(self.folder):
            raise self._refuse("is not a folder")
        for path in (self.folder, os.path.dirname(os.path.abspath(self.labels))):  # the label file's folder too
            while not os.path.exists(path):
                path = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(path):
                raise self._refuse(f"cannot be made: {path} is a file")
            if not os.access(path, os.W_OK | os.X_OK):
                raise self._refuse(f"cannot be written: {path} is read-only")
        listed = {name for name, _ in self.entries()}
        present = set(_visible(self.folder))
        missing = sorted(listed - present)
        if missing:
            raise self._refuse(f"{self.labels} lists {missing[0]} but the file is missing")
        foreign = sorted(name for name in present - listed if not NAME.fullmatch(name))  # unlisted of ours: tidied
        if foreign:
            raise self._refuse(f"holds {foreign[0]!r}, which the keep store did not write")

    def entries(self):
        """[(name, digit)] in label-file order; [] before the first keep. DataError for a line not of the store."""
        try:
            with open(self.labels, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise self._refuse(f"cannot read {self.labels} ({e.strerror})") from None
        entries, seen = [], set()
        for number, line in enumerate(lines, start=1):
            name, _, digit = line.partition(" ")
            found = NAME.fullmatch(name)
            if not found or digit != found.group(2) or name in seen:
                raise self._refuse(f"{self.labels}:{number}: {line[:60]!r} is not a line the keep store writes "
                                   "('000001_7.jpg 7', each name once)")
            entries.append((name, int(digit)))
            seen.add(name)
        return entries

    def count(self):
        """How many digits are kept (int)."""
        return len(self.entries())

    def keep(self, pixels, digit, original=None, original_name=None):
        """Keep one digit; returns its entry (name, digit), e.g. ("000017_9.jpg", 9).

        pixels: uint8 [28, 28], stroke bright on black (the app's
        prepared_pixels); digit: int 0-9; original: the picture's bytes or
        None; original_name: its file name, whose suffix the original keeps
        (".bin" when it has none). Raises ValueError for bad arguments or a
        blank input (the generator refuses one), DataError naming the file
        that cannot be written (nothing of this keep is left then).
        """
        jpg = jpg_bytes(pixels)
        if isinstance(digit, bool) or not isinstance(digit, (int, np.integer)) or not 0 <= digit < NUM_CLASSES:
            raise ValueError(f"digit {digit!r} is not a digit 0-9")
        suffix = os.path.splitext(original_name or "")[1]
        suffix = suffix.lower() if SUFFIX.fullmatch(suffix) else ".bin"
        with self._locked():
            name = f"{self._take_number():06d}_{digit}.jpg"  # before tidying: a stopped keep's number stays used
            entries = self._tidy()
            written = [os.path.join(self.folder, name)]
            try:
                if original is not None:
                    written.append(os.path.join(self.folder, ORIGINALS, name[:-4] + suffix))
                    _write(written[-1], original)
                _write(written[0], jpg)
                self._write_labels(entries + [(name, int(digit))])
            except BaseException:
                for path in written:
                    files.discard(path)
                raise
        return name, int(digit)

    def remove(self, name):
        """Remove a kept digit: its line, its JPG, its original. NotKept for a name not listed; DataError as keep."""
        with self._locked():
            entries = self._tidy()
            if name not in {kept for kept, _ in entries}:
                raise NotKept(name)
            self._write_labels([entry for entry in entries if entry[0] != name])
            self._tidy()

    def jpg(self, name):
        """The JPG's bytes of a listed name; NotKept for any other name (no other path is ever opened)."""
        if name not in {kept for kept, _ in self.entries()}:
            raise NotKept(name)
        try:
            with open(os.path.join(self.folder, name), "rb") as f:
                return f.read()
        except FileNotFoundError:  # removed meanwhile
            raise NotKept(name) from None

    @contextlib.contextmanager
    def _locked(self):
        """Hold the folder (made when missing) for this thread and process alone."""
        with self._lock:
            try:
                os.makedirs(self.folder, exist_ok=True)
                lock = open(os.path.join(self.folder, LOCK_FILE), "a")
            except OSError as e:
                raise self._refuse(f"cannot be written ({e.strerror})") from None
            with lock:
                if fcntl is not None:
                    fcntl.flock(lock, fcntl.LOCK_EX)  # let go when the file closes, or the process dies
                yield

    def _take_number(self):
        """The next number (int): above the counter and every name there, so none is given twice; counted."""
        names = _visible(self.folder) + _visible(os.path.join(self.folder, ORIGINALS))
        try:
            with open(os.path.join(self.folder, COUNTER_FILE)) as f:
                number = int(f.read().strip())
        except (OSError, ValueError):
            number = 1
        number = max([number] + [int(found.group(1)) + 1 for found in map(STEM.match, names) if found])
        _write(os.path.join(self.folder, COUNTER_FILE), f"{number + 1}\n".encode())
        return number

    def _tidy(self):
        """Remove what a stopped keep or remove left: files of unlisted names, temporary files. Returns entries().

        Called with the folder locked: no other store is writing there.
        """
        entries = self.entries()
        stems = {name[:-4] for name, _ in entries}
        parent = os.path.dirname(os.path.abspath(self.labels))
        places = [(self.folder, "."), (os.path.join(self.folder, ORIGINALS), "."),
                  (parent, "." + os.path.basename(self.labels) + ".")]  # files.write_atomically's temporary names
        for folder, temporary in places:
            for name in files.listing(folder):
                stem = os.path.splitext(name)[0]
                orphan = folder != parent and STEM.fullmatch(stem) and stem not in stems
                if orphan or (name.startswith(temporary) and name.endswith(".tmp")):
                    files.remove(os.path.join(folder, name))
        return entries

    def _write_labels(self, entries):
        _write(self.labels, "".join(f"{name} {digit}\n" for name, digit in entries).encode())


def _visible(folder):
    """The names in folder that do not start with a dot (those the generator reads); [] when it is missing."""
    return [name for name in files.listing(folder) if not name.startswith(".")]


def _write(path, data):
    """Write bytes to path under a temporary name, renamed into place; DataError naming path when it fails."""
    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)
    files.write_atomically(path, write, what="a kept digit's file")


def jpg_bytes(pixels):
    """The course's JPG of uint8 [28, 28] pixels: 8-bit grayscale, quality idx.JPG_QUALITY (as mnist_data_jpg's).

    Raises ValueError for another shape or dtype, and for pixels whose JPG
    is blank (every pixel one value), which the generator refuses.
    """
    pixels = np.asarray(pixels)
    if pixels.dtype != np.uint8 or pixels.shape != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"the input must be uint8 [{IMAGE_SIZE}, {IMAGE_SIZE}], not {pixels.dtype} {list(pixels.shape)}")
    out = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(out, format="JPEG", quality=JPG_QUALITY)
    decoded = decode_gray_jpeg(out.getvalue())
    if decoded.count(decoded[:1]) == IMAGE_PIXELS:
        raise ValueError(f"the input is blank (every pixel is {decoded[0]}): there is no digit to keep")
    return out.getvalue()
