"""Writing TFRecord files: label files and image folders in, tf.train.Example records out.

mnist_generateds.write_tfRecord is the course's step; this is its
machinery: parsing the label file, decoding images in worker processes,
streaming the serialized records to TFRecordWriters under temporary names,
and staging the splits so that all of them appear, or none.
"""
import contextlib
import multiprocessing
import os
import signal
import sys
import tempfile
from collections import deque

from tf_compat import message_of, tf
from . import cli, files, folders, formats
from .errors import DataError
from .images import check_not_blank, load_image
from .records import NUM_CLASSES, is_record_header, output_files, shard_files

# Writing: images are decoded and their records serialized in worker processes,
# CHUNK_SIZE images per task; the records are written in label-file order.
CHUNK_SIZE = 500
MAX_WORKERS = 8
POOL_POLL_SECS = 1.0  # how often a wait for the decoding processes' work looks for one of them gone (collected)
SAVE_AS_UTF8 = "save the label file as UTF-8 (Notepad: Save As, Encoding UTF-8)"
STAGING_PREFIX = ".staging-"  # hidden name of a finished split waiting for the other


def read_label_file(label_path):
    """Parse a course label file into [(file name, digit, line number)].

    Lines are `<file name> <digit>`; the name may contain spaces (the digit
    is the last field). Blank lines, trailing spaces, Windows line endings
    and a UTF-8 byte-order mark are accepted. Raises DataError naming the file
    and line for anything else (missing or empty file, a line without a
    digit, a digit outside 0-9, a name listed twice), and naming what the
    path is when it is no text: a folder, an image, a TFRecord file (formats.describe).
    """
    entries = []
    kind = "a folder" if os.path.isdir(label_path) else \
        os.path.isfile(label_path) and formats.describe(formats.read_head(label_path), is_record_header)
    if kind:  # a picture or the images' folder given for the label file: not read as text (`UTF-16 text`, EISDIR)
        raise DataError(f"{label_path}: {kind}, not a label file; give the text file of `<file name> <digit>` lines "
                        "(the images' folder goes to --train-images or --test-images)")
    try:
        with open(label_path, "rb") as f:
            for number, entry in label_lines(f, label_path):  # streamed: the lines are never all held at once
                if isinstance(entry, DataError):
                    raise entry
                if entry is not None:
                    entries.append((*entry, number))
    except FileNotFoundError:
        meant = cli.did_you_mean(label_path, os.path.isfile)  # a typo: the file beside it with a close name
        raise DataError(f"{label_path}: label file not found" + (f"; {meant}" if meant else "")) from None
    except OSError as e:
        raise DataError(f"{label_path}: cannot read label file ({e.strerror})") from None
    if not entries:
        raise DataError(f"{label_path}: label file is empty")
    return entries


def label_lines(f, label_path):
    """Each line of a label file as the generator reads it: yields (line number, entry), streamed.

    f: the label file opened in binary; entry: (name, digit) for a line the
    generator reads, None for a blank one, or the DataError (one line, naming
    label_path and the line) the generator refuses that line with. The one
    reading of a label file, for the generator (read_label_file) and the
    board's kept digits (mnistkit.keep), which lists the lines it can read.
    """
    seen = {}
    for number, raw in enumerate(f, start=1):
        if b"\0" in raw or (number == 1 and raw.startswith((b"\xff\xfe", b"\xfe\xff"))):
            why = "NUL bytes" if b"\0" in raw else "a UTF-16 byte-order mark"
            yield number, DataError(f"{label_path}:{number}: UTF-16 or UTF-32 text (Notepad's \"Unicode\": the line "
                                    f"has {why}), not UTF-8: {SAVE_AS_UTF8}")
            continue
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as e:
            yield number, DataError(f"{label_path}:{number}: not UTF-8 text ({e.reason} at byte {e.start} of the line)"
                                    f"{as_gbk(raw)}: {SAVE_AS_UTF8}")
            continue
        try:
            yield number, _parse_label_line(line, label_path, number, seen)
        except DataError as e:
            yield number, e


def as_gbk(raw):
    """'; as GBK it reads '<line>'' for a label line's bytes (bytes) that read as Chinese text in GBK (GB18030, a
    Chinese Windows' encoding for text files), else ''."""
    try:
        line = raw.decode("gb18030").strip()
    except UnicodeDecodeError:
        return ""
    return f"; as GBK it reads {line!r}" if any("\u2e80" <= c <= "\u9fff" for c in line) else ""


def misread_as_utf8(name):
    """The name a label line's GBK bytes gave before UTF-8 read them as other characters ('ͼƬ 1.png' was
    '图片 1.png'), or None when the name's bytes are not such GBK text (str)."""
    try:
        as_gbk_name = name.encode("utf-8").decode("gb18030")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None
    return as_gbk_name if as_gbk_name != name and any("\u2e80" <= c <= "\u9fff" for c in as_gbk_name) else None


def _parse_label_line(line, label_path, number, seen):
    """(name, digit) for one label-file line, None for a blank one; DataError otherwise."""
    line = line.strip()
    if not line:
        return None
    fields = line.rsplit(None, 1)
    if len(fields) != 2:
        raise DataError(f"{label_path}:{number}: expected '<file name> <digit>', found {line!r}")
    name, digit = fields
    if not (digit.isdigit() and int(digit) < NUM_CLASSES):
        raise DataError(f"{label_path}:{number}: label {digit!r} is not a digit 0-9")
    if name in seen:
        raise DataError(f"{label_path}:{number}: {name!r} is listed again (first on line {seen[name]})")
    seen[name] = number
    return name, int(digit)


def encode_images(image_path, batch, templates, label_path=""):
    """Decode a list of images and serialize their records, in order.

    batch: [(file name, digit, label-file line number)]; templates: the
    (head, tail) around the pixels of each digit's record, 0-9
    (mnist_generateds.record_template, from records.SCHEMA); label_path: the label file, for
    messages. Returns (records, converted): the serialized tf.train.Example
    of each image (bytes), and [(file name, original mode)] for the images
    that load_image converted. Raises DataError from load_image, and for a
    blank image (every pixel one value, see check_not_blank). Runs in the
    decoding processes, so it touches no TensorFlow.
    """
    records, converted = [], []
    for name, digit, number in batch:
        img_path = os.path.join(image_path, name)
        img_raw, note = load_image(img_path)
        check_not_blank(img_raw, img_path, f"{label_path}:{number}")
        if note:
            converted.append((name, note))
        head, tail = templates[digit]
        records.append(head + img_raw + tail)
    return records, converted


def default_workers():
    """Decoding processes to use: the CPUs this process may run on, at most MAX_WORKERS.

    1 (decode here) on 2 CPUs or fewer, and off Linux: handing chunks to
    workers costs CPU of its own, and the parent still writes every record,
    so on 2 cores a pool pays only while the second core is idle
    (docs/performance.md has the figures, bench/bench.py measures them).
    """
    if not hasattr(os, "sched_getaffinity"):  # Windows and macOS: spawned processes cost more to start
        return 1
    cpus = len(os.sched_getaffinity(0))
    return 1 if cpus <= 2 else min(MAX_WORKERS, cpus)


def _worker_signals():
    """A decoding process's signals: Ctrl-C ignored (handled once, by the parent), SIGTERM back to its default.

    The parent's SIGTERM handler (mnistkit.cli's, inherited by fork) raises Stopped; in a worker, at the pool's
    end (Pool.terminate sends SIGTERM), a handler that ran just before the worker blocked on the task queue's lock
    left it there for ever, and the generator waited for it (seen with --workers 100 on a busy machine: all
    records written, the run never ending, a `Stopped: 15` traceback of another worker). SIG_DFL ends it at once.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def start_method():
    """How the decoding processes start: "fork" on Linux, "spawn" elsewhere (and where fork is missing).

    Windows has no fork, and on macOS forking a process that imported
    TensorFlow is unsafe (its frameworks are not fork-safe), so both spawn:
    each child starts a fresh Python and imports this module (not
    TensorFlow: tf_compat imports it only on first use).
    """
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def decoding_pool(workers):
    """A multiprocessing.Pool of `workers` processes (start_method), or a null context for 1.

    Forking after TensorFlow's import is safe for what the children do: they
    run only encode_images (Pillow, NumPy, bytes), never a TensorFlow op, and
    leave by os._exit, so no TensorFlow state or lock is used or torn down in
    them. The pool is made before the TFRecordWriter opens, so no child holds
    its buffer. Ctrl-C is ignored in the children and handled by the parent,
    whose `with` block terminates the pool (SIGTERM: its default in the children, _worker_signals).
    """
    if workers <= 1:
        return contextlib.nullcontext()
    return multiprocessing.get_context(start_method()).Pool(workers, initializer=_worker_signals)


def encoded_chunks(pool, workers, image_path, entries, templates, label_path=""):
    """Yield encode_images results for consecutive CHUNK_SIZE slices of entries, in order.

    entries: [(file name, digit, line number)] of label_path (read_label_file).

    With a pool of `workers` processes, at most 2 tasks per process are in
    flight, so memory stays bounded whatever the number of images; without
    one, chunks are encoded here. An error raised in a worker is re-raised here, for the first bad
    image in label-file order.
    """
    chunks = (entries[i:i + CHUNK_SIZE] for i in range(0, len(entries), CHUNK_SIZE))
    if pool is None:
        for chunk in chunks:
            yield encode_images(image_path, chunk, templates, label_path)
        return
    pending = deque()
    started = {child.pid for child in multiprocessing.active_children() if "PoolWorker" in child.name}  # pool's
    for chunk in chunks:
        pending.append(pool.apply_async(encode_images, (image_path, chunk, templates, label_path)))
        if len(pending) >= 2 * workers:
            yield collected(pending.popleft(), started)
    while pending:
        yield collected(pending.popleft(), started)


def collected(result, started, every=POOL_POLL_SECS):
    """result.get() (a pool's AsyncResult), asked every `every` seconds whether each decoding process of `started`
    (pids) is still there: a pool replaces a process that was killed (the out-of-memory killer, a kill -9), and the
    chunk it held never comes, so that get() alone would wait for ever (CPython's bpo-22393). Raises DataError
    naming the process gone."""
    while True:
        try:
            return result.get(every)
        except multiprocessing.TimeoutError:
            gone = started - {child.pid for child in multiprocessing.active_children()}
            if gone:
                raise DataError(f"a decoding process (pid {min(gone)}) ended before its images were done (killed? "
                                "out of memory?); nothing written: run again, or with --workers 1") from None


def remove_stale_temporaries(data_dir, pid=None):
    """Delete the temporary TFRecord files in data_dir: all of them, or only those of process `pid`.

    All: for the holder of the folder's lock (Staging), when no other
    generator can be writing there, so what is left was left by a killed
    run. One pid: what this process made, whatever moment it was stopped at
    (temporary_outputs puts the PID in each name).
    """
    if not os.path.isdir(data_dir):
        return
    for name in os.listdir(data_dir):
        if not (name.startswith(".") and ".tfrecords" in name):
            continue
        if pid is None and (name.startswith(STAGING_PREFIX) or name.endswith(".tmp")):
            files.remove(os.path.join(data_dir, name))
        elif pid is not None and name.endswith(".tmp") and f".{pid}." in name:
            files.remove(os.path.join(data_dir, name))


def check_image_folder(image_path, label_path, entries, log=print):
    """Raise DataError for the first listed image missing from image_path; warn about unlisted files.

    An image_path that is not there is named with the folder a typo meant (cli.did_you_mean: `jpg/train: image
    folder not found; did you mean jpgs/train?`).
    entries: read_label_file(label_path). The folder is listed once and
    streamed, so 60,000 names are not held a second time; hidden files are
    ignored.
    """
    listed = {name for name, _, _ in entries}
    found, extra = 0, []
    try:
        with os.scandir(image_path) as folder:
            for item in folder:
                if item.name in listed:
                    found += 1
                elif not item.name.startswith("."):
                    extra.append(item.name)
    except FileNotFoundError:
        meant = cli.did_you_mean(image_path)  # a typo, in its name or a folder on the way: the folder meant
        raise DataError(f"{image_path}: image folder not found" + (f"; {meant}" if meant else "")) from None
    except OSError as e:
        raise DataError(f"{image_path}: cannot list image folder ({e.strerror})") from None
    if found < len(entries):
        for name, _, number in entries:
            if not os.path.isfile(os.path.join(image_path, name)):
                hint = f" (or the line has {len(name.split()) + 1} fields; expected '<file name> <digit>')" if " " in name else ""
                gbk = misread_as_utf8(name)
                if gbk is not None and os.path.isfile(os.path.join(image_path, gbk)):
                    hint = f"; the file is GBK text, in which the line names {gbk!r}, which is there: {SAVE_AS_UTF8}"
                raise DataError(f"{label_path}:{number}: image {name!r} not found in {image_path}{hint}")
    if extra:
        log(f"warning: {len(extra)} files in {image_path} have no line in {label_path} and are skipped (e.g. {min(extra)!r})")


def temporary_outputs(outputs, tmps):
    """Make one hidden temporary file beside each of `outputs` (paths), appending each to `tmps` at once.

    The names hold this process's PID (`.mnist_train.tfrecords.<pid>.<random>.tmp`),
    so that a run stopped at any moment can find and remove its own
    (remove_stale_temporaries). Raises DataError naming the folder when it
    cannot be made or written.
    """
    out_dir = os.path.dirname(os.path.abspath(outputs[0]))
    try:
        os.makedirs(out_dir, exist_ok=True)
        for out in outputs:
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(out)}.{os.getpid()}.", suffix=".tmp", dir=out_dir)
            tmps.append(tmp)
            os.close(fd)
            files.public_mode(tmp)
    except OSError as e:
        raise DataError(f"{out_dir}: cannot write output folder ({e.strerror})") from None


class TemporaryOutputs:
    """The output files of one split, written under temporary names and renamed into place only when all are done.

    `with TemporaryOutputs(tfRecordName, num_shards) as tmps:` gives one
    hidden temporary path per output (records.output_files: tfRecordName,
    or its num_shards shards), beside it; write them inside the block. On a
    normal exit each is renamed over its output; on any exception, and on
    Ctrl-C, all are removed, and a failed write (TensorFlow's OpError, an
    OSError) becomes a DataError naming tfRecordName. So an interrupted run
    never leaves a truncated file in place of a good one.
    """

    def __init__(self, tfRecordName, num_shards=1):
        self.name, self.outputs, self.tmps = tfRecordName, output_files(tfRecordName, num_shards), []

    def __enter__(self):
        try:
            temporary_outputs(self.outputs, self.tmps)
        except BaseException:
            self._discard()
            raise
        return list(self.tmps)

    def __exit__(self, kind, error, traceback):
        if error is None:
            try:
                for tmp, out in zip(self.tmps, self.outputs):
                    files.replace(tmp, out)
                return False
            except BaseException as e:
                error = e
        self._discard()
        if isinstance(error, (tf.errors.OpError, OSError)):  # named as the file it becomes, not its staging name
            folder, name = os.path.split(self.name)
            shown = os.path.join(folder, name[len(STAGING_PREFIX):] if name.startswith(STAGING_PREFIX) else name)
            full = files.why_not(error) == files.NO_SPACE  # the temporary's name in the system's words said nothing
            raise DataError(f"{shown}: write failed ({files.NO_SPACE if full else message_of(error)})") from None
        if traceback is None:  # a failed rename: raised here, as the block's own errors are by returning False
            raise error
        return False

    def _discard(self):
        for tmp in self.tmps:
            files.discard(tmp)


def pool_size(workers, count):
    """Decoding processes for `count` images: `workers` (default_workers() when None), no more than chunks."""
    workers = default_workers() if workers is None else workers
    return min(workers, -(-count // CHUNK_SIZE))  # no idle processes for a small split


class Staging:
    """Both splits appear in data_dir together, or neither: write under hidden names, rename all at the end.

    `with Staging(data_dir, log) as staging:` then for each split
    staging.path(name) is where to write it (a hidden name) and
    staging.add(split, name, count, num_shards) records what was written.
    On a clean exit every staged file is renamed to its final name, files of
    the other form (the single file, or shards of another count) are
    removed, and one line per split is logged. On any error the staged files
    and the folders this run created are removed. The folder is locked
    (folders.FolderLock) for the whole time, so a second generator on it
    stops with one line instead of deleting this one's files; under the
    lock, temporaries of earlier, killed runs are removed on entry.
    """

    def __init__(self, data_dir, log=print):
        self.data_dir, self.log, self.staged = data_dir, log, []
        self.lock = folders.FolderLock(data_dir, "--data-dir")

    def __enter__(self):
        folder = os.path.dirname(self.data_dir)
        a_file = files.a_file_as_folder(self.data_dir, "--data-dir", "the TFRecord files",
                                        f" (its folder: --data-dir {cli.quoted(folder)})" if folder else "")
        if a_file is not None:
            raise a_file
        self.new_folders = files.missing_folders(self.data_dir)
        try:
            os.makedirs(self.data_dir, exist_ok=True)
            self.lock.__enter__()
        except BaseException as e:
            files.remove_empty_folders(self.new_folders)
            if isinstance(e, OSError):
                raise DataError(f"{self.data_dir}: cannot write output folder ({e.strerror})") from None
            raise
        remove_stale_temporaries(self.data_dir)
        return self

    def path(self, name):
        """The hidden staging path for output file `name` (e.g. mnist_train.tfrecords)."""
        return os.path.join(self.data_dir, STAGING_PREFIX + name)

    def add(self, split, name, count, num_shards=1):
        """Record that `count` records of `split` were written to path(name), in num_shards files."""
        out = os.path.join(self.data_dir, name)
        self.staged.append((split, out, count, list(zip(output_files(self.path(name), num_shards),
                                                         output_files(out, num_shards)))))

    def __exit__(self, kind, error, traceback):
        done = False
        try:
            if kind is None:
                self._publish()
                done = True
        finally:
            for _, _, _, renames in self.staged:
                for staging, _ in renames:
                    files.remove(staging)
            remove_stale_temporaries(self.data_dir, os.getpid())  # whatever moment a stop came at
            self.lock.__exit__()
            if not done:
                files.remove_empty_folders(self.new_folders)

    def _publish(self):
        """Put every staged file in place, all or none: the files there before are set aside first.

        Each file of an earlier run under a split's names (the single file
        and shards of any count) is renamed to a hidden `.staging-old-` name,
        then each staged file to its final name. A failure on the way (a
        refused rename, Ctrl-C) undoes what was done: the new files go and
        the old ones come back, so the folder never holds one new split
        beside an old one. The old files are deleted only once all new ones
        are in place.
        """
        moves = [(staging, final) for _, _, _, renames in self.staged for staging, final in renames]
        earlier = {out: [p for p in [out] + shard_files(out) if os.path.exists(p)] for _, out, _, _ in self.staged}
        aside, placed = [], []
        try:
            for path in (p for paths in earlier.values() for p in paths):
                backup = os.path.join(self.data_dir, STAGING_PREFIX + "old-" + os.path.basename(path))
                files.replace(path, backup)
                aside.append((backup, path))
            for staging, final in moves:
                files.replace(staging, final)
                placed.append(final)
        except BaseException:
            _undo(placed, aside)
            raise
        for backup, _ in aside:
            files.discard(backup)
        for split, out, count, renames in self.staged:
            finals = [final for _, final in renames]
            stale = [p for p in earlier[out] if p not in finals]
            if stale:
                self.log(f"removed {len(stale)} file(s) of an earlier run ({os.path.basename(stale[0])}"
                         + (" ..." if len(stale) > 1 else "") + f"), replaced by {len(finals)} file(s)")
            if len(renames) == 1:
                self.log(f"wrote {count} {split} records to {out}")
            else:
                self.log(f"wrote {count} {split} records round-robin to {len(renames)} shards "
                         f"{renames[0][1]} ... {renames[-1][1]}")


def _undo(placed, aside):
    """Take back a publish that failed half-way: remove the new files `placed`, rename each (backup, path) back."""
    for final in placed:
        files.discard(final)
    for backup, path in aside:
        try:
            files.replace(backup, path)
        except (OSError, DataError):  # left under its hidden name; the error being raised says what failed
            pass
