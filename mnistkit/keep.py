"""The user's kept digits: drawings and photos corrected on the board, kept in the course's JPG layout.

A kept-digits folder reads as the course's mnist_train_jpg_60000/ and
mnist_train_jpg_60000.txt do, so `python mnist_generateds.py --train-images
my_digits --train-labels my_digits.txt ...` turns it into TFRecords:
  my_digits/000001_7.jpg               28x28 8-bit grayscale JPG, stroke bright on black (MNIST's orientation)
  my_digits.txt                        one line per digit, `000001_7.jpg 7`, in the order they were kept
  my_digits/.originals/000001_7.png    the picture as drawn or sent, under its decoded format's suffix
The layout (default folder, label file, the kept input's suffix and encoder,
the name pattern) is declared once: LAYOUT. A store of another layout reads
a folder kept in an older one when its `older` lists that suffix; otherwise
it names those lines, in one line, with what to do.

The label file is read as the generator reads it (mnistkit.writer's
label_lines: blank lines, CRLF and a byte-order mark are fine). A line the
store cannot read (refused by the generator, a name the store does not give,
its file missing) is named by problem(); GET /board/kept lists the rest, and
keep and remove are refused with KeepRefused until it is fixed, so no line
the user wrote is ever rewritten. So are keeps past `most` digits (MOST).

A keep does the same file work whatever the count: the listing is read
again only when the label file changed (its inode, size and time), the
number comes from a counter file, the JPG (and the original) are written
under temporary names and renamed into place, and only then is the label
file written again with the new line at its end, under a temporary name
and renamed into place too (at MOST lines, a copy of about 200 KB). Every
file the store writes is written so (_write): a write that fails (a full
disk) is one line naming the file and the reason, and leaves the file as
it was, so the store stays readable. A keep or remove first notes the files it is about to write
or remove in a journal (PENDING_FILE); one stopped half-way (a killed
server) is finished or taken back at the next open, keep or remove, which
removes only the files that journal names: never a file the store did not
write. No existing file is written over, and numbers only grow: a removed
digit's name is never given again. Hidden names (.originals/, the lock, the
counter, the journal, temporary files) are skipped by the generator.
Threads and processes keep one at a time (a threading.Lock, and fcntl.flock
on the lock file where there is fcntl).
The board's teach routes (mnistkit/board/teach.py) serve a store to its page (docs/teach.md).
"""
import contextlib
import dataclasses
import functools
import io
import json
import os
import re
import shutil
import threading

import numpy as np
from PIL import Image

from . import files
from .errors import DataError
from .idx import JPG_QUALITY
from .images import BLANK_IMAGES, decode_image
from .records import IMAGE_SIZE, NUM_CLASSES, file_signature
from .writer import label_lines

try:
    import fcntl
except ImportError:  # Windows: one process per folder (the threading.Lock still orders its threads)
    fcntl = None


@dataclasses.dataclass(frozen=True)
class Layout:
    """How digits are kept, declared once (LAYOUT): what the store writes and reads, and what the tests name.

    folder: the default folder (the app's and the learn's --keep-dir);
    labels: the label file's suffix, added to the folder's path (my_digits
    -> my_digits.txt, as the course's mnist_train_jpg_60000.txt beside its
    folder); suffix, format, options: a kept input's file suffix and its
    encoder (Pillow's format name and save options); number: the digits of a
    name's number (000017_9: the course's <index>_<digit>, padded); older:
    the suffixes of earlier layouts' inputs, still listed, shown, learned
    and removed. Changing the kept format is a change of suffix, format and
    options here (and `older`, so that folders kept before are still read).
    """
    folder: str = "my_digits"
    labels: str = ".txt"
    suffix: str = ".jpg"
    format: str = "JPEG"
    options: tuple = (("quality", JPG_QUALITY),)  # the course's JPGs' quality (mnistkit.idx, as mnist_data_jpg's)
    number: int = 6
    older: tuple = ()

    @functools.cached_property
    def stem(self):
        """The pattern of a kept name's stem: its number (group 1) and its digit (group 2), 000017_9."""
        return re.compile(rf"(\d{{{self.number},}})_(\d)")

    def name(self, number, digit):
        """The name a digit is kept under: name(17, 9) -> '000017_9.jpg'."""
        return f"{number:0{self.number}d}_{digit}{self.suffix}"

    def parse(self, name):
        """(number, digit) of a kept input's name, in this layout or an older one; None for any other name."""
        stem, suffix = os.path.splitext(name)
        found = self.stem.fullmatch(stem)
        if not found or (suffix != self.suffix and suffix not in self.older):
            return None
        return int(found.group(1)), int(found.group(2))

    def encode(self, pixels):
        """The kept file's bytes of uint8 [28, 28] pixels (stroke bright on black), 8-bit grayscale.

        Raises ValueError for another shape or dtype, and for pixels whose
        file the generator would read as blank (every pixel one value,
        images.decode_image and its BLANK_IMAGES), which it refuses.
        """
        pixels = np.asarray(pixels)
        if pixels.dtype != np.uint8 or pixels.shape != (IMAGE_SIZE, IMAGE_SIZE):
            raise ValueError(f"the input must be uint8 [{IMAGE_SIZE}, {IMAGE_SIZE}], not {pixels.dtype} "
                             f"{list(pixels.shape)}")
        out = io.BytesIO()
        Image.fromarray(pixels, mode="L").save(out, format=self.format, **dict(self.options))
        raw, _ = decode_image(out.getvalue(), f"a kept {self.suffix}")
        if raw == BLANK_IMAGES[raw[0]]:
            raise ValueError(f"the input is blank (every pixel is {raw[0]}): there is no digit to keep")
        return out.getvalue()


LAYOUT = Layout()
DEFAULT_FOLDER = LAYOUT.folder  # --keep-dir's default (mnist_app.py, mnistkit.learn)
ORIGINALS = ".originals"
LOCK_FILE, COUNTER_FILE, PENDING_FILE = ".keep.lock", ".keep.next", ".keep.pending"
MOST = 10_000  # kept digits at most (docs/teach.md): a learn's generator reads them all, the page pages through them
# An original's suffix, by the format Pillow decoded it as; another format takes Pillow's first extension for it.
ORIGINAL_SUFFIXES = {"JPEG": ".jpg", "MPO": ".jpg", "PNG": ".png", "GIF": ".gif", "BMP": ".bmp", "TIFF": ".tif",
                     "WEBP": ".webp", "HEIF": ".heic", "AVIF": ".avif"}


class NotKept(KeyError):
    """A name the store does not list (the board's routes answer 404)."""


class KeepRefused(DataError):
    """A keep or remove refused until the user acts: a label line the store cannot read, or MOST digits kept
    (the board answers 409 with its line)."""


@dataclasses.dataclass
class Listing:
    """The label file as the store last read it.

    stamp: its (inode, bytes, mtime ns) when read, None when absent;
    entries: [(name, digit)] the store can read, in label-file order;
    index: name -> position in entries; unreadable: [(line number,
    message)] of the lines it cannot read; mentioned: every name a line
    gives, read or not; newline: the file ends with a line break (or is
    empty), so a line appended needs none before it; content: its bytes
    (a keep writes them again with its line, without reading them again).
    """
    stamp: tuple = None
    entries: list = dataclasses.field(default_factory=list)
    index: dict = dataclasses.field(default_factory=dict)
    unreadable: list = dataclasses.field(default_factory=list)
    mentioned: set = dataclasses.field(default_factory=set)
    newline: bool = True
    content: bytes = b""


class KeptDigits:
    """The kept-digits folder `folder` (default: layout.folder) and its label file folder + layout.labels.

    layout: a Layout (LAYOUT); most: the digits it keeps at most. Opening
    checks the folder (check) and finishes or takes back a keep a stopped
    server left half-done; raises DataError as check does.
    """

    def __init__(self, folder=None, layout=LAYOUT, most=MOST):
        self.layout, self.most = layout, most
        self.folder = os.path.normpath(folder or layout.folder)
        self.labels = self.folder + layout.labels
        self._lock, self._read = threading.RLock(), None  # RLock: a keep reads the listing too
        self.check()

    def _refuse(self, what):
        return DataError(f"{self.folder}: {what}; move it away or keep digits in another folder")

    def _folder_meant(self):
        """(the keep folder, what self.folder is in it) when self.folder is a file of a keep folder beside or above
        it: its label file (my_digits.txt: the folder my_digits beside it) or a kept picture (my_digits/000001_7.jpg,
        my_digits.txt beside the folder); None for any other file."""
        stem, parent = self.folder[:-len(self.layout.labels)], os.path.dirname(os.path.abspath(self.folder))
        if self.folder.endswith(self.layout.labels) and os.path.isdir(stem):
            return stem, "the label file"
        if self.layout.parse(os.path.basename(self.folder)) and os.path.isfile(parent + self.layout.labels):
            return parent if os.path.isabs(self.folder) else os.path.relpath(parent), "a kept digit's picture"
        return None

    def check(self):
        """Raise DataError (one line: the folder, what is wrong, what to do) unless the store can use the folder.

        Refused: a path that is not a folder (the label file or a kept
        picture of a keep folder: named, with the --keep-dir meant) or cannot be written (nor
        made), a visible file no label line names that is not of the
        layout's naming. A label file with lines the store cannot read is
        not refused: problem() names them.
        """
        if os.path.exists(self.folder) and not os.path.isdir(self.folder):
            meant = self._folder_meant()
            if meant:  # the label file or a kept picture given for the folder: never "move it away"
                raise DataError(f"{self.folder}: is {meant[1]} of the keep folder {meant[0]}, not a folder; give "
                                f"--keep-dir {meant[0]}")
            raise self._refuse("is not a folder")
        for path in (self.folder, os.path.dirname(os.path.abspath(self.labels))):  # the label file's folder too
            while not os.path.exists(path):
                path = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(path):
                raise self._refuse(f"cannot be made: {path} is a file")
            if not os.access(path, os.W_OK | os.X_OK):
                raise self._refuse(f"cannot be written: {path} is read-only")
        if os.path.isdir(self.folder):
            with self._locked():
                self._tidy()
        listing = self._listing()
        foreign = sorted(name for name in _visible(self.folder)
                         if name not in listing.mentioned and self.layout.parse(name) is None)
        if foreign:
            raise self._refuse(f"holds {foreign[0]!r}, which the keep store did not write")

    # ------------------------------------------------------------ reading

    def entries(self):
        """[(name, digit)] the store can read, in label-file order; [] before the first keep."""
        return list(self._listing().entries)

    def count(self):
        """How many digits are kept (int); KeepRefused when the label file has a line the store cannot read
        (a learn would fail on it)."""
        listing = self._listing()
        if listing.unreadable:
            raise KeepRefused(self._problem(listing, "learn"))
        return len(listing.entries)

    def page(self, before=None, limit=100):
        """(count, [(name, digit)] newest first, more): the `limit` digits kept last, or the `limit` kept just
        before the listed name `before`; more: whether older ones are left. NotKept for a `before` not listed."""
        listing = self._listing()
        end = len(listing.entries) if before is None else listing.index.get(before)
        if end is None:
            raise NotKept(before)
        start = max(0, end - limit)
        return len(listing.entries), listing.entries[start:end][::-1], start > 0

    def problem(self, doing="keep"):
        """None, or one line naming the first label line the store cannot read, how many more, and the fix."""
        listing = self._listing()
        return self._problem(listing, doing) if listing.unreadable else None

    def unreadable(self):
        """[message] of each label line the store cannot read, in file order (each names the file and line)."""
        return [message for _, message in self._listing().unreadable]

    def read(self, name):
        """The kept file's bytes of a listed name; NotKept for any other name (no other path is ever opened)."""
        if name not in self._listing().index:
            raise NotKept(name)
        try:
            with open(os.path.join(self.folder, name), "rb") as f:
                return f.read()
        except FileNotFoundError:  # removed meanwhile
            raise NotKept(name) from None

    def snapshot(self, into):
        """The kept digits as they are now, copied into the folder `into` in the store's layout (a folder, its label
        file beside it): (that folder, its label file, the count). A learn works on such a copy.

        Taken under the store's lock: a keep or removal waits for it, and
        one made after it is not in the copy (it goes to the next learn).
        Files are hard-linked where they can be (the store never writes over
        a file), else copied. Raises KeepRefused for a label line the store
        cannot read, DataError naming the folder when the copy cannot be
        made.
        """
        with self._locked():
            listing = self._ready("learn")
            folder = os.path.join(into, os.path.basename(self.folder))
            try:
                os.makedirs(folder)
                for name, _ in listing.entries:
                    source, target = os.path.join(self.folder, name), os.path.join(folder, name)
                    try:
                        os.link(source, target)
                    except OSError:  # another file system, or one without links
                        shutil.copyfile(source, target)
                _write(folder + self.layout.labels, "".join(f"{name} {digit}\n" for name, digit in listing.entries
                                                            ).encode(), "the snapshot's label file")
            except OSError as e:
                raise DataError(f"{self.folder}: cannot copy the kept digits for a learn ({files.why_not(e)})") \
                    from None
            return folder, folder + self.layout.labels, len(listing.entries)

    # ------------------------------------------------------------ writing

    def keep(self, pixels, digit, original=None, original_format=None):
        """Keep one digit; returns its entry and the count after it (name, digit, count): ("000017_9.jpg", 9, 17).

        pixels: uint8 [28, 28], stroke bright on black (the app's
        prepared_pixels); digit: int 0-9; original: the picture's bytes, read
        as a picture of Pillow's `original_format` ("PNG", "JPEG", ...), whose
        suffix it is kept under (ORIGINAL_SUFFIXES), or None. Raises
        ValueError for bad arguments or a blank input (the generator refuses
        one), KeepRefused for a label line the store cannot read or MOST
        digits kept, DataError naming the file that cannot be written
        (nothing of this keep is left then).
        """
        data = self.layout.encode(pixels)
        if isinstance(digit, bool) or not isinstance(digit, (int, np.integer)) or not 0 <= digit < NUM_CLASSES:
            raise ValueError(f"digit {digit!r} is not a digit 0-9")
        digit = int(digit)
        suffix = None if original is None else original_suffix(original_format)
        with self._locked():
            listing = self._ready("keep")
            if len(listing.entries) >= self.most:
                raise KeepRefused(f"{self.folder}: {self.most:,} digits are kept, the most a keep folder holds; "
                                  "remove some (x on the page) or keep in another folder (--keep-dir)")
            name, paths = self._new_paths(digit, suffix)
            line = ("" if listing.newline else "\n") + f"{name} {digit}\n"
            at = listing.stamp[1] if listing.stamp else 0
            self._note({"keep": name, "line": line, "at": at, "files": [self._relative(p) for p in paths]})
            try:
                if original is not None:
                    _write(paths[1], original)
                _write(paths[0], data)  # the label line only after the file it names
                self._append(line, at)
            except BaseException:
                self._read = None
                for path in paths:
                    files.discard(path)
                files.discard(self._path(PENDING_FILE))
                raise
            listing.index[name] = len(listing.entries)
            listing.entries.append((name, digit))
            listing.mentioned.add(name)
            listing.stamp, listing.newline = file_signature(self.labels), True
            listing.content = listing.content[:at] + line.encode()
            files.remove(self._path(PENDING_FILE))
            return name, digit, len(listing.entries)

    def remove(self, name):
        """Remove a kept digit: its line, its file, its original; returns the count left. NotKept for a name not
        listed; KeepRefused and DataError as keep."""
        with self._locked():
            listing = self._ready("remove")
            if name not in listing.index:
                raise NotKept(name)
            paths = [os.path.join(self.folder, name)] + self._originals_of(name)
            self._note({"remove": name, "files": [self._relative(p) for p in paths]})
            self._read = None
            left = [entry for entry in listing.entries if entry[0] != name]
            self._write_labels(left)
            for path in paths:
                files.remove(path)
            files.remove(self._path(PENDING_FILE))
            return len(left)

    # ------------------------------------------------------------ the folder's own files

    def _path(self, *parts):
        return os.path.join(self.folder, *parts)

    def _relative(self, path):
        return os.path.relpath(path, self.folder).replace(os.sep, "/")

    def _listing(self):
        """The Listing of the label file, read again only when the file changed since it was last read."""
        with self._lock:
            if self._read is None or self._read.stamp != file_signature(self.labels):
                self._read = self._read_labels()
            return self._read

    def _read_labels(self):
        """A new Listing: each line as the generator reads it, then as the store does (name, digit, file)."""
        listing = Listing()
        try:
            with open(self.labels, "rb") as f:
                info = os.fstat(f.fileno())
                listing.stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
                listing.content = f.read()
            for number, entry in label_lines(io.BytesIO(listing.content), self.labels):
                why = self._unreadable(entry, listing)
                if why is not None:
                    listing.unreadable.append((number, why if isinstance(entry, DataError)
                                               else f"{self.labels}:{number}: {why}"))
                elif entry is not None:
                    listing.index[entry[0]] = len(listing.entries)
                    listing.entries.append(entry)
            listing.newline = listing.content.endswith(b"\n") or not listing.content
        except FileNotFoundError:
            pass
        except OSError as e:
            raise self._refuse(f"cannot read {self.labels} ({e.strerror})") from None
        return listing

    def _unreadable(self, entry, listing):
        """Why the store cannot read one label line (entry: label_lines'), or None when it can (or it is blank);
        the generator's own line (naming the file and line) for one the generator refuses."""
        if isinstance(entry, DataError):
            return str(entry)
        if entry is None:
            return None
        name, digit = entry
        listing.mentioned.add(name)
        found = self.layout.parse(name)
        stem = self.layout.stem.fullmatch(os.path.splitext(name)[0])
        if found is None and stem:
            return (f"{name!r} is of a layout this store does not keep ({os.path.splitext(name)[1]}, it keeps "
                    f"{self.layout.suffix}): the generator reads it as it is; keep in a new --keep-dir")
        if found is None:
            return f"{name!r} is not a name the keep store gives ({self.layout.name(1, 7)!r})"
        if found[1] != digit:
            return f"{name!r} is labelled {digit}, not the {found[1]} of its name"
        if not os.path.isfile(os.path.join(self.folder, name)):
            return f"{name} is not in {self.folder}"
        return None

    def _problem(self, listing, doing):
        number, message = listing.unreadable[0]
        more = len(listing.unreadable) - 1
        return (f"{message}; correct or delete line {number} of {self.labels}, then {doing} again"
                + (f" ({more} more line{'s' if more > 1 else ''} cannot be read)" if more else ""))

    def _ready(self, doing):
        """With the folder locked: what a stopped keep left tidied, the Listing; KeepRefused for a line the store
        cannot read."""
        self._tidy()
        listing = self._listing()
        if listing.unreadable:
            raise KeepRefused(self._problem(listing, doing))
        return listing

    @contextlib.contextmanager
    def _locked(self):
        """Hold the folder (made when missing) for this thread and process alone."""
        with self._lock:
            try:
                os.makedirs(self.folder, exist_ok=True)
                lock = open(self._path(LOCK_FILE), "ab")  # never written: only held
            except OSError as e:
                raise self._refuse(f"cannot be written ({e.strerror})") from None
            with lock:
                if fcntl is not None:
                    fcntl.flock(lock, fcntl.LOCK_EX)  # let go when the file closes, or the process dies
                yield

    def _new_paths(self, digit, suffix):
        """(name, [its file's path, its original's path when suffix]) for the next number, counted: above the
        counter (or, without one, every name there), at paths where no file is."""
        try:
            with open(self._path(COUNTER_FILE), "rb") as f:
                number = int(f.read().strip())
        except (OSError, ValueError):  # new, or lost: the names there count
            names = _visible(self.folder) + _visible(self._path(ORIGINALS))
            found = (self.layout.stem.match(name) for name in names)
            number = max([1] + [int(match.group(1)) + 1 for match in found if match])
        while True:
            name = self.layout.name(number, digit)
            paths = [self._path(name)] + ([self._path(ORIGINALS, stem_of(name) + suffix)] if suffix else [])
            if not any(os.path.lexists(path) for path in paths):
                break
            number += 1
        # Written before the digit's files: a stopped keep's number stays used.
        _write(self._path(COUNTER_FILE), f"{number + 1}\n".encode(), "the keep counter")
        return name, paths

    def _originals_of(self, name):
        """The paths of a kept name's originals (any suffix an earlier version gave them)."""
        stem = stem_of(name)
        return [self._path(ORIGINALS, other) for other in files.listing(self._path(ORIGINALS))
                if stem_of(other) == stem and not other.startswith(".")]

    def _note(self, record):
        """Write the journal: what this keep or remove is about to write or remove (the next _tidy's guide)."""
        _write(self._path(PENDING_FILE), json.dumps(record, ensure_ascii=True).encode(), "the keep journal")

    def _tidy(self):
        """With the folder locked: a keep or remove a stopped process left half-done (its journal) finished or
        taken back. Only files the journal names, and their temporaries, are removed."""
        try:
            with open(self._path(PENDING_FILE), "rb") as f:
                record = json.loads(f.read())
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            record = {}
        self._read = None
        paths = [self._path(*part.split("/")) for part in record.get("files", ()) if self._own(part)]
        taken_back = not self._appended(record) if "keep" in record else "remove" in record
        listed = {stem_of(name) for name in self._listing().index}
        for path in paths if taken_back else ():
            if stem_of(os.path.basename(path)) not in listed:  # a digit the label file lists keeps its files
                files.remove(path)
        for path in paths + [self.labels, self._path(COUNTER_FILE), self._path(PENDING_FILE)]:
            folder, base = os.path.split(path)
            for name in files.listing(folder):  # files.write_atomically's temporaries of these files
                if name.startswith("." + base + ".") and name.endswith(".tmp"):
                    files.remove(os.path.join(folder, name))
        files.remove(self._path(PENDING_FILE))
        self._read = None

    def _own(self, part):
        """Whether a journal's path (relative, '/') is one the store writes: a kept name, or an original's."""
        parts = part.split("/")
        if len(parts) == 1:
            return self.layout.parse(parts[0]) is not None
        return (len(parts) == 2 and parts[0] == ORIGINALS and not parts[1].startswith(".")
                and self.layout.stem.fullmatch(stem_of(parts[1])) is not None)

    def _appended(self, record):
        """Whether a stopped keep's label line is in the label file; a line cut short at its end is cut off."""
        line, at = record.get("line", "").encode(), record.get("at", 0)
        try:
            with open(self.labels, "rb") as f:
                content = f.read()
        except FileNotFoundError:
            return False
        except OSError as e:
            raise self._refuse(f"cannot read {self.labels} ({e.strerror})") from None
        tail = content[at:at + len(line)]
        if tail == line:
            return True
        if at < len(content) < at + len(line) and line.startswith(tail):
            _write(self.labels, content[:at], "the label file")  # an append cut (by an earlier version): as before it
            return False
        if len(content) == at:
            return False
        return record.get("keep") in self._listing().index  # changed by hand since: its lines say

    def _append(self, line, at):
        """Add one label line: the label file's first `at` bytes (as last read) and the line written under a
        temporary name and renamed into place (a failed write leaves the file as it was); DataError naming the
        label file and the reason."""
        listing = self._listing()
        _write(self.labels, listing.content[:at] + line.encode(), "the label file")

    def _write_labels(self, entries):
        _write(self.labels, "".join(f"{name} {digit}\n" for name, digit in entries).encode(), "the label file")


def original_suffix(format_name):
    """The suffix an original decoded as Pillow's `format_name` is kept under; ValueError for no picture format."""
    suffix = ORIGINAL_SUFFIXES.get(format_name)
    if suffix is None:
        known = sorted(ext for ext, name in Image.registered_extensions().items() if name == format_name)
        if not known:
            raise ValueError(f"the original is not a picture ({format_name!r} is no picture format)")
        suffix = known[0]
    return suffix


def stem_of(name):
    """A kept file's name without its suffix: '000017_9.jpg' -> '000017_9'."""
    return os.path.splitext(name)[0]


def _visible(folder):
    """The names in folder that do not start with a dot (those the generator reads); [] when it is missing."""
    return [name for name in files.listing(folder) if not name.startswith(".")]


def _write(path, data, what="a kept digit's file"):
    """Write bytes to path under a temporary name, renamed into place: every file the store writes (the label
    file, the kept pictures, the counter, the journal, a snapshot's labels). DataError naming path, `what` it is
    and the reason when it fails (one line); the file is then as it was."""
    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)
    files.write_atomically(path, write, what=what)
