"""Course step 1: JPG images + label files -> TFRecord files; also the reader.

Run `python mnist_generateds.py` first. It reads, per split, an image folder
and a label file whose lines are `<file name> <digit>` (the course layout,
e.g. mnist_data_jpg/mnist_train_jpg_60000/ and mnist_train_jpg_60000.txt),
and writes one tf.train.Example per image, in label-file order, to
data/mnist_train.tfrecords and data/mnist_test.tfrecords. When the JPG layout
is missing it is built first from IDX files (see mnist_idx.py). With
--shards N the training records go round-robin into N files instead,
data/mnist_train-00000-of-0000N.tfrecords ..., one or more per worker of a
distributed training (see mnist_cluster.py).

The record schema (FEATURES) is defined here once; the writer below, the
queue-runner readers below (used by mnist_backward.py and mnist_test.py) and
the tests all use it.
"""
import argparse
import collections
import contextlib
import functools
import glob
import io
import multiprocessing
import os
import signal
import sys
import tempfile
from collections import deque

import numpy as np
import simplejpeg
from PIL import Image, UnidentifiedImageError
from tqdm import tqdm

from tf_compat import LazyMapping, first_line, tf
import mnist_idx
from mnist_idx import DataError

# Course paths (defaults; all relative to the current directory).
jpg_path = "./mnist_data_jpg"
image_train_path = "./mnist_data_jpg/mnist_train_jpg_60000/"
label_train_path = "./mnist_data_jpg/mnist_train_jpg_60000.txt"
image_test_path = "./mnist_data_jpg/mnist_test_jpg_10000/"
label_test_path = "./mnist_data_jpg/mnist_test_jpg_10000.txt"
data_path = "./data"
tfRecord_train = "mnist_train.tfrecords"
tfRecord_test = "mnist_test.tfrecords"
SHARD_SUFFIX = "-{index:05d}-of-{count:05d}"  # TensorFlow's shard naming: mnist_train-00000-of-00004.tfrecords

# The record schema: one tf.train.Example per image.
IMAGE_SIZE = 28
IMAGE_PIXELS = IMAGE_SIZE * IMAGE_SIZE  # img_raw: 784 raw uint8 bytes, row-major
NUM_CLASSES = 10  # label: int64[10], one-hot
FEATURES = LazyMapping(lambda: {  # built on first use, so that importing this file needs no TensorFlow
    "img_raw": tf.FixedLenFeature([], tf.string),
    "label": tf.FixedLenFeature([NUM_CLASSES], tf.int64),
})

# Course input pipeline constants (examples, not batches).
NUM_THREADS = 2
CAPACITY = 1000
MIN_AFTER_DEQUEUE = 700
RECORDS_PER_READ = 200  # fast pipeline: records read and parsed per op run
STAGING_PREFIX = ".staging-"  # hidden name of a finished split waiting for the other
# Bit depths a 16-bit or 32-bit integer image is read as: the smallest that
# holds its brightest pixel (see to_8bit). 8: 8-bit data in a 16-bit file, as
# Image.fromarray(a.astype(np.uint16)) saves it; 12: a 12-bit sensor or scanner.
BIT_DEPTHS = (8, 12, 16)
WIDE_MODES = ("I", "I;16", "I;16B", "I;16L", "I;16N")  # Pillow's 16-bit and 32-bit integer grayscale modes
BLANK_IMAGES = tuple(bytes([value]) * IMAGE_PIXELS for value in range(256))  # img_raw of every pixel one value


# ---------------------------------------------------------------- progress

def progress_bar(quiet=False, **kwargs):
    """A tqdm progress bar on stderr, or a silent stand-in with the same methods.

    The bar is drawn only when both stdout and stderr are terminals and
    `quiet` is false: redirected or CI output must hold no carriage returns
    or bar characters. kwargs go to tqdm (total, desc, unit, initial...).
    Used by write_tfRecord here and by mnist_backward.backward.
    """
    terminal = sys.stdout.isatty() and sys.stderr.isatty()
    return tqdm(disable=quiet or not terminal, file=sys.stderr, dynamic_ncols=True, **kwargs)

# Writing: images are decoded and their records serialized in worker processes,
# CHUNK_SIZE images per task; the records are written in label-file order.
CHUNK_SIZE = 500
MAX_WORKERS = 8


# ---------------------------------------------------------------- writing

def make_example(img_raw, digit):
    """The tf.train.Example for one image.

    img_raw: bytes, exactly IMAGE_PIXELS (784) uint8 grayscale pixels, row-major.
    digit: int 0-9, stored as the one-hot int64 list `label`.
    """
    labels = [0] * NUM_CLASSES
    labels[digit] = 1
    return tf.train.Example(features=tf.train.Features(feature={
        "img_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[img_raw])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=labels)),
    }))


def read_label_file(label_path):
    """Parse a course label file into [(file name, digit, line number)].

    Lines are `<file name> <digit>`; the name may contain spaces (the digit
    is the last field). Blank lines, trailing spaces, Windows line endings
    and a UTF-8 byte-order mark are accepted. Raises DataError naming the file
    and line for anything else (missing or empty file, a line without a
    digit, a digit outside 0-9, a name listed twice).
    """
    entries, seen = [], {}
    try:
        with open(label_path, "rb") as f:
            for number, raw in enumerate(f, start=1):  # streamed: the lines are never all held at once
                try:
                    line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as e:
                    raise DataError(f"{label_path}:{number}: not UTF-8 text ({e.reason} at byte {e.start} of the line)") from None
                entry = _parse_label_line(line, label_path, number, seen)
                if entry is not None:
                    entries.append(entry)
    except FileNotFoundError:
        raise DataError(f"{label_path}: label file not found") from None
    except OSError as e:
        raise DataError(f"{label_path}: cannot read label file ({e.strerror})") from None
    if not entries:
        raise DataError(f"{label_path}: label file is empty")
    return entries


def _parse_label_line(line, label_path, number, seen):
    """(name, digit, number) for one label-file line, None for a blank one; DataError otherwise."""
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
    return name, int(digit), number


def decode_gray_jpeg(data):
    """Pixels of a 28x28 grayscale JPEG as IMAGE_PIXELS bytes, or None for any other file.

    data: the file's bytes. simplejpeg calls libjpeg-turbo, the library
    Pillow decodes JPEG with, with the same (accurate integer) inverse DCT,
    so the pixels are Pillow's, byte for byte; it does so at a third of
    Pillow's per-image cost, which for 28x28 images is mostly Python. Anything
    else (colour, another size, not a JPEG, damaged) gives None and is left
    to Pillow, which converts or reports it.
    """
    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
        if colorspace != "Gray" or (width, height) != (IMAGE_SIZE, IMAGE_SIZE):
            return None
        return simplejpeg.decode_jpeg(data, colorspace="GRAY", fastdct=False, strict=True).tobytes()
    except ValueError:
        return None


def to_8bit(img):
    """An 8-bit grayscale ("L") PIL image of a 16-bit or 32-bit integer one (WIDE_MODES).

    The bit depth is inferred from the brightest pixel: the smallest of
    BIT_DEPTHS (8, 12, 16) whose range holds it. Values are scaled by
    255 / (2**depth - 1) and rounded: an image whose values are all <= 255
    (8-bit data saved in a 16-bit file) is taken as it is, one up to 4095
    (12-bit) is scaled by 255/4095, anything brighter by 255/65535 (full
    16-bit). Values below 0 or above 65535 (mode "I" is signed 32-bit) are
    clipped first. Images of other modes are returned unchanged. The one
    rule for the generator (load_image) and the app (mnist_app.load_picture).
    """
    if img.mode not in WIDE_MODES:
        return img
    values = np.clip(np.asarray(img, dtype=np.int64), 0, 2 ** BIT_DEPTHS[-1] - 1)
    top = int(values.max()) if values.size else 0
    depth = next(bits for bits in BIT_DEPTHS if top < 2 ** bits)
    if depth > 8:
        values = np.round(values * (255 / (2 ** depth - 1)))
    return Image.fromarray(values.astype(np.uint8), mode="L")


def load_image(img_path):
    """Pixels of one course image as (bytes, note).

    Returns exactly IMAGE_PIXELS uint8 bytes (28x28 8-bit grayscale,
    row-major) and a note: None, or the original mode when a colour, palette,
    16-bit or transparent image was converted to 8-bit grayscale (16-bit and
    32-bit integer images by to_8bit, the others by Pillow's convert("L")).
    Grayscale JPEGs are decoded by decode_gray_jpeg, everything else by Pillow.
    Raises DataError naming the file when it is missing, not an image, or
    not 28x28.
    """
    try:
        with open(img_path, "rb", buffering=0) as f:  # unbuffered: fewer system calls per small file
            data = f.read()
    except FileNotFoundError:
        raise DataError(f"{img_path}: image file not found") from None
    except OSError as e:
        raise DataError(f"{img_path}: cannot read image ({e.strerror})") from None
    pixels = decode_gray_jpeg(data)
    if pixels is not None:
        return pixels, None
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            note = None if img.mode == "L" else img.mode
            if img.size != (IMAGE_SIZE, IMAGE_SIZE):
                raise DataError(f"{img_path}: image is {img.size[0]}x{img.size[1]}, expected {IMAGE_SIZE}x{IMAGE_SIZE}")
            img = to_8bit(img)
            if img.mode != "L":
                img = img.convert("L")
            return img.tobytes(), note
    except UnidentifiedImageError:
        raise DataError(f"{img_path}: not an image file") from None
    except OSError as e:
        raise DataError(f"{img_path}: cannot read image ({e})") from None


def record_template(digit):
    """(head, tail): the bytes around img_raw in the serialized record of `digit`.

    For every 784-byte img_raw, head + img_raw + tail equals
    make_example(img_raw, digit).SerializeToString(deterministic=True):
    protobuf writes a bytes field as tag, length, content, so with the length
    fixed the content never changes the bytes around it. Found by serializing
    a marker image, so the schema stays in make_example. Deterministic
    serialization writes the feature map in key order; plain
    SerializeToString() (the course's) picks a map order at random per
    process with current protobuf, so its files differ from run to run.
    """
    marker = bytes(range(256)) * 3 + bytes(range(IMAGE_PIXELS - 768))
    serialized = make_example(marker, digit).SerializeToString(deterministic=True)
    at = serialized.index(marker)
    return serialized[:at], serialized[at + IMAGE_PIXELS:]


def encode_images(image_path, batch, templates, label_path=""):
    """Decode a list of images and serialize their records, in order.

    batch: [(file name, digit, label-file line number)]; templates:
    [record_template(d) for d in 0-9]; label_path: the label file, for
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


def check_not_blank(img_raw, img_path, line):
    """Raise DataError naming img_path and its label-file `line` when every pixel of img_raw is one value.

    img_raw: IMAGE_PIXELS bytes. Such an image (a scan of empty paper, a
    16-bit image flattened by a wrong scaling) holds no digit, yet would
    train as one. Comparing with the blank image of the first pixel's value
    is one memcmp that stops at the first other pixel: about 0.08 us per
    image (bytes.count took 1.2 us), against the generator's ~23 us.
    """
    if img_raw == BLANK_IMAGES[img_raw[0]]:
        raise DataError(f"{img_path}: blank image, every pixel is {img_raw[0]} (listed on {line}); "
                        "replace the image or remove its line")


def default_workers():
    """Decoding processes to use: the CPUs this process may run on, at most MAX_WORKERS.

    1 (decode here) on 2 CPUs or fewer, and off Linux. Handing chunks to
    workers costs about 10 us of CPU per image on top of the ~24 us of
    decoding and writing it (the parent still writes every record); on 2
    cores that pays only while the second core is idle, and on a busy
    machine the pool was 1.5x slower than decoding here (bench/bench.py).
    """
    if not sys.platform.startswith("linux"):
        return 1
    cpus = len(os.sched_getaffinity(0))
    return 1 if cpus <= 2 else min(MAX_WORKERS, cpus)


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled once, by the parent


def decoding_pool(workers):
    """A fork-started multiprocessing.Pool of `workers` processes, or a null context for 1.

    Forking after TensorFlow's import is safe for what the children do: they
    run only encode_images (Pillow, NumPy, bytes), never a TensorFlow op, and
    leave by os._exit, so no TensorFlow state or lock is used or torn down in
    them. The pool is made before the TFRecordWriter opens, so no child holds
    its buffer. Ctrl-C is ignored in the children and handled by the parent,
    whose `with` block terminates the pool.
    """
    if workers <= 1:
        return contextlib.nullcontext()
    return multiprocessing.get_context("fork").Pool(workers, initializer=_ignore_sigint)


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
    for chunk in chunks:
        pending.append(pool.apply_async(encode_images, (image_path, chunk, templates, label_path)))
        if len(pending) >= 2 * workers:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


def shard_name(tfRecordName, index, num_shards):
    """Path of shard `index` (from 0) of `num_shards`, in TensorFlow's shard naming.

    shard_name("data/mnist_train.tfrecords", 0, 4) is
    "data/mnist_train-00000-of-00004.tfrecords".
    """
    stem, ext = os.path.splitext(tfRecordName)
    return stem + SHARD_SUFFIX.format(index=index, count=num_shards) + ext


def shard_files(tfRecordName):
    """Existing shard files of tfRecordName (any shard count), sorted by name."""
    stem, ext = os.path.splitext(tfRecordName)
    digits = "[0-9]" * 5
    return sorted(glob.glob(glob.escape(stem) + f"-{digits}-of-{digits}" + ext))


def output_files(tfRecordName, num_shards=1):
    """The files write_tfRecord writes: [tfRecordName], or its num_shards shard names."""
    if num_shards == 1:
        return [tfRecordName]
    return [shard_name(tfRecordName, i, num_shards) for i in range(num_shards)]


def write_tfRecord(tfRecordName, image_path, label_path, log=print, workers=None, quiet=False, num_shards=1):
    """Write one split's TFRecord file(s) from its image folder and label file.

    One tf.train.Example per label-file line (schema: FEATURES), the same
    Examples as the course's one-image-at-a-time loop writes, serialized
    deterministically (see record_template). num_shards 1 writes
    tfRecordName in line order; num_shards n > 1 writes the n files
    output_files(tfRecordName, n) instead, record k going to shard k % n
    (round-robin: shard sizes differ by at most one record). Images
    are decoded by `workers` processes (default: default_workers(); 1 decodes
    here) in chunks, and the records streamed to the writer. The file is
    written under a temporary name in the same folder and renamed only when
    all are complete, so an interrupted run never leaves a truncated file in
    place of a good one. A progress bar counts the images on a terminal (see
    progress_bar). Returns the number of records written.
    Raises DataError naming the file (and line) on bad input or a failed
    write, or when there are fewer records than shards.
    """
    entries = read_label_file(label_path)
    if num_shards > len(entries):
        raise DataError(f"{label_path}: {len(entries)} records cannot fill {num_shards} shards; use fewer --shards")
    listed = {name for name, _, _ in entries}
    found, extra = 0, []
    try:
        with os.scandir(image_path) as folder:  # streamed: 60,000 names are not held a second time
            for item in folder:
                if item.name in listed:
                    found += 1
                elif not item.name.startswith("."):
                    extra.append(item.name)
    except OSError as e:
        raise DataError(f"{image_path}: cannot list image folder ({e.strerror})") from None
    if found < len(entries):
        for name, _, number in entries:
            if not os.path.isfile(os.path.join(image_path, name)):
                hint = f" (or the line has {len(name.split()) + 1} fields; expected '<file name> <digit>')" if " " in name else ""
                raise DataError(f"{label_path}:{number}: image {name!r} not found in {image_path}{hint}")
    del listed
    if extra:
        log(f"warning: {len(extra)} files in {image_path} have no line in {label_path} and are skipped (e.g. {min(extra)!r})")

    outputs = output_files(tfRecordName, num_shards)
    out_dir = os.path.dirname(os.path.abspath(tfRecordName))
    tmps = []
    try:
        os.makedirs(out_dir, exist_ok=True)
        for out in outputs:
            fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(out) + ".", suffix=".tmp", dir=out_dir)
            os.close(fd)
            tmps.append(tmp)
            mnist_idx.public_mode(tmp)
    except OSError as e:
        for tmp in tmps:
            mnist_idx._remove(tmp)
        raise DataError(f"{out_dir}: cannot write output folder ({e.strerror})") from None
    templates = [record_template(digit) for digit in range(NUM_CLASSES)]
    if workers is None:
        workers = default_workers()
    workers = min(workers, -(-len(entries) // CHUNK_SIZE))  # no idle processes for a small split
    converted = []
    try:
        with contextlib.ExitStack() as stack:
            pool = stack.enter_context(decoding_pool(workers))  # forked before the writers open
            writers = [stack.enter_context(tf.io.TFRecordWriter(tmp)) for tmp in tmps]
            bar = stack.enter_context(progress_bar(quiet, total=len(entries), desc=os.path.basename(tfRecordName), unit="img"))
            k = 0
            for records, notes in encoded_chunks(pool, workers, image_path, entries, templates, label_path):
                converted += notes
                for record in records:
                    writers[k % num_shards].write(record)
                    k += 1
                bar.update(len(records))
        for tmp, out in zip(tmps, outputs):
            os.replace(tmp, out)
    except BaseException as e:
        for tmp in tmps:
            mnist_idx._remove(tmp)
        if isinstance(e, (tf.errors.OpError, OSError)):
            raise DataError(f"{tfRecordName}: write failed ({getattr(e, 'message', None) or e})") from None
        raise
    if converted:
        name, mode = converted[0]
        log(f"warning: {len(converted)} images were not 8-bit grayscale and were converted (e.g. {name!r}, mode {mode})")
    return len(entries)


def generate(args, log=print):
    """Resolve the JPG layout (building it when missing) and write both TFRecord files.

    With args.shards N > 1 the training split is written as N shards (see
    write_tfRecord); the test split is always one file, read whole by
    mnist_test.py. Files of the other form (the single training file, or
    shards of another count) are removed once the new ones are in place, so
    a folder never holds two generations of one split.
    """
    splits = {"train": (args.train_images, args.train_labels), "test": (args.test_images, args.test_labels)}
    explicit = any(p is not None for pair in splits.values() for p in pair)
    default_exists = os.path.isdir(image_train_path) and os.path.isfile(label_train_path)
    if explicit:
        missing = [f"--{split}-{kind}" for split, pair in splits.items() for kind, p in zip(("images", "labels"), pair) if p is None]
        if missing:
            raise DataError(f"give all four of --train-images, --train-labels, --test-images and --test-labels "
                            f"(missing: {', '.join(missing)})")
        source = "the folders given on the command line"
    elif (args.idx_dir is None and default_exists and args.jpg_dir == jpg_path
          and mnist_idx.read_manifest(jpg_path) is None):
        splits = {"train": (image_train_path, label_train_path), "test": (image_test_path, label_test_path)}
        source = "the course's JPG files in " + jpg_path
    else:
        layout = mnist_idx.build_jpg_layout(args.jpg_dir, args.idx_dir, download=not args.no_download, log=log)
        splits = {split: layout[split] for split in ("train", "test")}
        source = layout["source"]
    log(f"source: {source}")
    remove_stale_temporaries(args.data_dir)
    # All files or none: each split is written under hidden staging names
    # first, and all are renamed only once every split is complete.
    staged = []
    new_folders = missing_folders(args.data_dir)
    done = False
    try:
        for split, (images, labels) in splits.items():
            out = os.path.join(args.data_dir, tfRecord_train if split == "train" else tfRecord_test)
            staging = os.path.join(args.data_dir, STAGING_PREFIX + os.path.basename(out))
            num_shards = args.shards if split == "train" else 1  # evaluation reads the one test file
            count = write_tfRecord(staging, images, labels, log=log, workers=args.workers, quiet=args.quiet,
                                   num_shards=num_shards)
            staged.append((split, out, count, list(zip(output_files(staging, num_shards), output_files(out, num_shards)))))
        for split, out, count, renames in staged:
            for staging, final in renames:
                os.replace(staging, final)
            remove_other_forms(out, [final for _, final in renames], log)
            if len(renames) == 1:
                log(f"wrote {count} {split} records to {out}")
            else:
                log(f"wrote {count} {split} records round-robin to {len(renames)} shards "
                    f"{renames[0][1]} ... {renames[-1][1]}")
        done = True
    finally:
        for _, _, _, renames in staged:
            for staging, _ in renames:
                mnist_idx._remove(staging)
        if not done:
            remove_empty_folders(new_folders)


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


def remove_other_forms(tfRecordName, outputs, log=print):
    """Delete tfRecordName and its shards of any count, except `outputs` (the files just written)."""
    stale = [old for old in [tfRecordName] + shard_files(tfRecordName) if old not in outputs and os.path.exists(old)]
    for old in stale:
        mnist_idx._remove(old)
    if stale:
        log(f"removed {len(stale)} file(s) of an earlier run ({os.path.basename(stale[0])}"
            + (" ..." if len(stale) > 1 else "") + f"), replaced by {len(outputs)} file(s)")


def remove_stale_temporaries(data_dir):
    """Delete temporary TFRecord files a killed earlier run left in data_dir."""
    if not os.path.isdir(data_dir):
        return
    for name in os.listdir(data_dir):
        if name.startswith(".") and ".tfrecords" in name and (name.startswith(STAGING_PREFIX) or name.endswith(".tmp")):
            mnist_idx._remove(os.path.join(data_dir, name))


# ---------------------------------------------------------------- reading

def read_tfRecord(tfRecord_path, num_epochs=None, shuffle=True, records_per_read=None, layout=None):
    """Course reader stage: filename queue -> TFRecordReader -> parse -> decode.

    tfRecord_path: one file (str), or a list of files (shards) that the
    filename queue cycles through (in a new random order each epoch when
    `shuffle`).

    Source: the course's read_tfRecord on tf.compat.v1's
    string_input_producer, TFRecordReader and parse_single_example /
    parse_example. Returns (img, label):
      records_per_read None (the course): one example per run,
        img uint8 [784], label int64 [10];
      records_per_read n: up to n examples per run (read_up_to and one
        parse_example), img uint8 [k, 784], label int64 [k, 10] (uint8 when
        layout.template), k <= n.
    layout: None reads with TFRecordReader; a RecordLayout (see
    record_layout) reads with FixedLengthRecordReader instead, and with
    layout.template slices pixels and label out of the bytes without
    parse_example (see read_fixed). Only with records_per_read.
    num_epochs None loops forever; 1 reads every record once (needs local
    variables initialised). Converting to float happens after batching,
    where it is cheaper (see to_float).
    """
    paths = [tfRecord_path] if isinstance(tfRecord_path, str) else list(tfRecord_path)
    filename_queue = tf.train.string_input_producer(paths, num_epochs=num_epochs, shuffle=shuffle)
    if records_per_read is None:
        _, serialized = tf.TFRecordReader().read(filename_queue)
        features = tf.parse_single_example(serialized, features=FEATURES)
        img = tf.decode_raw(features["img_raw"], tf.uint8)
        img.set_shape([IMAGE_PIXELS])
        return img, features["label"]
    if layout is not None:
        return read_fixed(filename_queue, records_per_read, layout)
    _, serialized = tf.TFRecordReader().read_up_to(filename_queue, records_per_read)
    features = tf.parse_example(serialized, features=FEATURES)
    img = tf.reshape(tf.decode_raw(features["img_raw"], tf.uint8), [-1, IMAGE_PIXELS])
    return img, features["label"]


def read_fixed(filename_queue, records_per_read, layout):
    """Up to records_per_read examples per run from files of equal-length records.

    Source: tf.compat.v1.FixedLengthRecordReader (the TF1 CIFAR-10 reader),
    which reads through a buffer, where TFRecordReader makes two unbuffered
    reads per record (bench/bench.py, README "Performance"). Each TFRecord
    frame (uint64 length, its CRC, the record, the record's CRC) is read as
    one fixed-length value of layout.length + RECORD_FRAME_BYTES bytes, and
    the CRCs are not checked here. That loses nothing: layout comes from
    record_layout, whose files scan_tfrecord read whole just before,
    checking every CRC and that each file ends exactly at its last record,
    so the frames line up. Without layout.template the record is cut out
    of its frame (tf.strings.substr) and parsed with parse_example; with it,
    every record is the writer's template (see template_offsets), so img
    is a slice of the frame's bytes and label the 10 one-hot bytes at their
    fixed offset. Returns img uint8 [k, 784] and label int64 [k, 10] (uint8
    with layout.template), k <= records_per_read. The check holds for the
    files as they were at start-up: a file replaced by records of another
    layout while training runs is misread (TFRecordReader would read it
    unchecked, too).
    """
    # No CRC check in this reader: scan_tfrecord verified every CRC of these files before training.
    reader = tf.FixedLengthRecordReader(record_bytes=layout.length + RECORD_FRAME_BYTES)
    _, frames = reader.read_up_to(filename_queue, records_per_read)
    if not layout.template:
        serialized = tf.strings.substr(frames, RECORD_HEADER_BYTES, layout.length)
        features = tf.parse_example(serialized, features=FEATURES)
        return tf.reshape(tf.decode_raw(features["img_raw"], tf.uint8), [-1, IMAGE_PIXELS]), features["label"]
    image_at, label_at = (RECORD_HEADER_BYTES + at for at in template_offsets()[:2])
    frame_bytes = tf.decode_raw(frames, tf.uint8)
    frame_bytes.set_shape([None, layout.length + RECORD_FRAME_BYTES])  # the reader's values all have this length
    return (frame_bytes[:, image_at:image_at + IMAGE_PIXELS],
            frame_bytes[:, label_at:label_at + NUM_CLASSES])


def to_float(img, label):
    """img uint8 [..., 784] -> float32 in [0, 1]; label int64 one-hot -> float32."""
    return tf.cast(img, tf.float32) * (1.0 / 255), tf.cast(label, tf.float32)


def get_tfrecord(num, isTrain=True, data_dir=data_path, pipeline="fast", files=None, layout=None):
    """Shuffled training batches from data_dir's TFRecord file(s) (course step).

    data_dir: a folder, file or pattern (see tfrecord_files); `files`, a
    list of TFRecord files, is read instead when given (a distributed
    worker's own shards).

    Returns img_batch float32 [num, 784] in [0, 1] and label_batch float32
    [num, 10] one-hot, drawn by tf.compat.v1.train.shuffle_batch with 2
    threads, capacity 1000 and min_after_dequeue 700 examples (capacity is
    raised to min_after_dequeue + num when num is larger, so a big batch
    cannot deadlock the queue). pipeline "course" parses one example per
    reader op, as the course did; "fast" reads and parses RECORDS_PER_READ
    records per op and enqueues them together (enqueue_many), which keeps
    the same queue semantics in examples. layout: the files' RecordLayout
    from record_layout (after scan_tfrecord), for the fast pipeline's
    fixed-length reads; None (unknown, or records of different lengths)
    reads with TFRecordReader. The course pipeline ignores it.
    """
    path = files or tfrecord_files(data_dir, isTrain)
    capacity = max(CAPACITY, MIN_AFTER_DEQUEUE + num)
    many = pipeline == "fast"
    img, label = read_tfRecord(path, records_per_read=RECORDS_PER_READ if many else None,
                               layout=layout if many else None)
    img_batch, label_batch = tf.train.shuffle_batch(
        [img, label], batch_size=num, num_threads=NUM_THREADS, capacity=capacity,
        min_after_dequeue=MIN_AFTER_DEQUEUE, enqueue_many=many)
    return to_float(img_batch, label_batch)


def tfrecord_files(source=data_path, isTrain=True):
    """The TFRecord files that a folder, a file or a file pattern names, sorted by name.

    A folder gives its complete shard set mnist_train-NNNNN-of-NNNNN.tfrecords
    (see shard_name) when it has one, else its mnist_train.tfrecords
    (mnist_test.tfrecords when not isTrain); a pattern such as
    "data/mnist_train-*" gives the files it matches (glob). Returns a
    non-empty list of paths. Raises DataError naming the source when
    nothing matches or a folder's shard set is incomplete.
    """
    if os.path.isdir(source):
        single = os.path.join(source, tfRecord_train if isTrain else tfRecord_test)
        shards = shard_files(single)
        if not shards:
            if not os.path.isfile(single):
                raise DataError(f"{single}: TFRecord file not found; run `python mnist_generateds.py` first")
            return [single]
        if shards != output_files(single, len(shards)):  # a complete set of N is exactly N names -of-N
            raise DataError(f"{source}: incomplete or mixed shard set ({len(shards)} files named "
                            f"{os.path.basename(shards[0])} ...); rerun `python mnist_generateds.py --shards N`")
        return shards
    if glob.has_magic(source):
        files = sorted(p for p in glob.glob(source) if os.path.isfile(p))
        if not files:
            raise DataError(f"{source}: no TFRecord file matches this pattern")
        return files
    if not os.path.isfile(source):
        raise no_data(source)
    return [source]


def no_data(source):
    """The DataError for a --data-dir that is neither a folder nor a file (trainer's and evaluator's wording)."""
    return DataError(f"{source}: no such folder or TFRecord file; run `python mnist_generateds.py` first")


def get_tfrecord_once(num, tfRecord_path):
    """Every record of a TFRecord file exactly once, in batches of up to `num`.

    Unlike the course's test input (one shuffle_batch draw, which repeats some
    records and misses others), this reads the file for one epoch in order,
    and the last batch holds what is left (allow_smaller_final_batch). After
    the last batch the queue raises tf.errors.OutOfRangeError. Returns
    img_batch float32 [k, 784] in [0, 1], label_batch float32 [k, 10], k <= num.
    Needs tf.local_variables_initializer() (the epoch counter).
    """
    img, label = read_tfRecord(tfRecord_path, num_epochs=1, shuffle=False, records_per_read=num)
    img_batch, label_batch = tf.train.batch(
        [img, label], batch_size=num, num_threads=1, capacity=2 * num,
        enqueue_many=True, allow_smaller_final_batch=True)
    return to_float(img_batch, label_batch)


def stop_queue_runners(coord, threads, tfRecord_path, passthrough=()):
    """Stop the queue runners of a Coordinator and wait for their threads (course step).

    coord.join re-raises the first error a queue-runner thread reported,
    which is the real cause behind a main thread's closed-queue error; it is
    raised as DataError naming tfRecord_path, with TensorFlow's first line
    (tf_compat.first_line). Errors of the classes in `passthrough` are
    re-raised as they are (a distributed worker's lost parameter server).
    Threads get 5 s to finish.
    """
    coord.request_stop()
    try:
        coord.join(threads, stop_grace_period_secs=5)
    except passthrough:
        raise
    except tf.errors.OpError as e:
        raise DataError(f"{tfRecord_path}: input pipeline failed: {first_line(e)}") from None


_LIST_KIND = LazyMapping(lambda: {tf.string: "bytes_list", tf.int64: "int64_list", tf.float32: "float_list"})


RECORD_FRAME_BYTES = 16  # TFRecord framing around each record: uint64 length, its CRC, the data's CRC
RECORD_HEADER_BYTES = 12  # the part of the framing before the record: uint64 length, its CRC
LAYOUT_CHUNK = 4096  # records per block when template_layout compares a file with the template


def scan_tfrecord(tfRecord_path):
    """Check every record of a TFRecord file against FEATURES; return (count, lengths).

    count: int, the number of records. lengths: sorted tuple of the distinct
    serialized record lengths in bytes, without the 16 bytes of framing (one
    length when every record has the same size, as write_tfRecord's do).

    Reads the file once in Python (about 0.3 s for 60,000 records), so that
    bad data fails before training starts, with the file and record index
    in the message, instead of inside a queue-runner thread. Checks each
    record's CRCs (tf.io.tf_record_iterator), that it is a tf.train.Example
    holding exactly the features of FEATURES with their types and lengths,
    that img_raw is IMAGE_PIXELS bytes and that label is one-hot, and that
    the file ends exactly where its last record ends: TensorFlow's readers
    take a partial last record (an interrupted copy) for the end of the
    file and would silently use the records before it. A record cut inside
    its header or its data is reported as cut short; one that is whole but
    fails its CRC as corrupted. Raises DataError when
    the file is missing, empty, not a TFRecord file, corrupted, cut short,
    or a record is malformed.
    """
    if not os.path.isfile(tfRecord_path):
        raise DataError(f"{tfRecord_path}: TFRecord file not found; run `python mnist_generateds.py` first")
    count = end = 0
    lengths = set()
    size = os.path.getsize(tfRecord_path)
    try:
        for serialized in tf.io.tf_record_iterator(tfRecord_path):
            _check_example(serialized, tfRecord_path, count)
            count += 1
            end += len(serialized) + RECORD_FRAME_BYTES
            lengths.add(len(serialized))
    except tf.errors.OpError as e:
        if _runs_past_end(tfRecord_path, end, size):
            raise _cut_short(tfRecord_path, count, end, size) from None
        raise DataError(f"{tfRecord_path}: record {count}: corrupted or not a TFRecord file ({first_line(e)}); "
                        "rerun `python mnist_generateds.py`") from None
    if size != end:  # the reader stops without an error when a record's 12-byte header is cut
        raise _cut_short(tfRecord_path, count, end, size)
    if count == 0:
        raise DataError(f"{tfRecord_path}: TFRecord file holds no records; rerun `python mnist_generateds.py`")
    return count, tuple(sorted(lengths))


def _runs_past_end(tfRecord_path, offset, size):
    """True when the record framed at byte `offset` has a valid header but more bytes than the file has left.

    A TFRecord record is: uint64 length (little-endian), the masked CRC-32C
    of those 8 bytes, `length` bytes of data, the masked CRC-32C of the data
    (RECORD_FRAME_BYTES of framing in all). A header cut short counts as
    running past the end; one whose CRC fails does not (the file is
    corrupted or not TFRecord at all, and its length means nothing).
    """
    if size - offset < 12:
        return size > offset
    with open(tfRecord_path, "rb") as f:
        f.seek(offset)
        header = f.read(12)
    if masked_crc32c(header[:8]) != int.from_bytes(header[8:], "little"):
        return False
    return offset + int.from_bytes(header[:8], "little") + RECORD_FRAME_BYTES > size


def masked_crc32c(data):
    """The TFRecord format's checksum of `data` (bytes): CRC-32C (Castagnoli), rotated and offset.

    Source: TensorFlow's tsl/lib/hash/crc32c.h (Mask). Bitwise, for the 8
    bytes of a record header only; TensorFlow checks the records themselves.
    """
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _cut_short(tfRecord_path, count, end, size):
    """The DataError for a file that ends inside record `count`, which starts at byte `end`."""
    return DataError(f"{tfRecord_path}: record {count} at byte {end} is cut short (file truncated?): "
                     f"{size - end} byte(s) after the last whole record; copy the file again or rerun "
                     "`python mnist_generateds.py`")


def check_tfrecord(tfRecord_path):
    """The record count (int) of a TFRecord file, after scan_tfrecord has checked all of it.

    Raises DataError as scan_tfrecord does.
    """
    return scan_tfrecord(tfRecord_path)[0]


RecordLayout = collections.namedtuple("RecordLayout", "length template")
RecordLayout.__doc__ = """How the fast pipeline reads a set of TFRecord files (see record_layout).

length: int, the serialized length in bytes of every record of every file
(without framing). template: bool, every record is the writer's template
(record_template) around its pixels, so pixels and label sit at the byte
offsets of template_offsets.
"""


def record_layout(lengths_by_file):
    """The RecordLayout the fast pipeline may read these files with, or None for TFRecordReader.

    lengths_by_file: {path: lengths} for every file to be read, the lengths
    as scan_tfrecord returned them (it must have checked the files: their
    CRCs are not read again). None when the records do not all have one
    length; otherwise template is true when template_layout holds for every file.
    """
    distinct = set().union(*lengths_by_file.values())
    if len(distinct) != 1:
        return None
    length, = distinct
    return RecordLayout(length, all(template_layout(path, length) for path in lengths_by_file))


@functools.lru_cache(maxsize=None)
def template_offsets():
    """(image_at, label_at, length) of the writer's records, or None.

    image_at: byte offset of img_raw's 784 pixels in a serialized record;
    label_at: offset of the label's 10 values, one byte each (0 or 1: a
    packed int64 list of one-hot values is 10 one-byte varints); length: the
    record's length. Found from record_template of all 10 digits: their
    heads are equal and their tails differ exactly in 10 bytes that hold the
    one-hot label. None when a protobuf version lays records out otherwise
    (then no file takes the template path).
    """
    templates = [record_template(digit) for digit in range(NUM_CLASSES)]
    heads, tails = {head for head, _ in templates}, [tail for _, tail in templates]
    if len(heads) != 1 or len({len(tail) for tail in tails}) != 1:
        return None
    differ = [i for i in range(len(tails[0])) if len({tail[i] for tail in tails}) > 1]
    if not differ:
        return None
    start = differ[0]
    for digit, tail in enumerate(tails):
        if tail[start:start + NUM_CLASSES] != bytes(NUM_CLASSES)[:digit] + b"\x01" + bytes(NUM_CLASSES - digit - 1):
            return None
    head_length = len(heads.pop())
    return head_length, head_length + IMAGE_PIXELS + start, head_length + IMAGE_PIXELS + len(tails[0])


def template_layout(tfRecord_path, length):
    """True when every record of a checked TFRecord file is the writer's template around its pixels.

    That is: each record is `length` bytes long, equals record_template's
    bytes everywhere but the pixels and the label's 10 bytes, and those 10
    bytes are one-hot (0 or 1, one 1). Then the pixels and the label can be
    read at template_offsets without parsing (read_fixed), whoever wrote the
    file. Records serialized with another map order (the course's
    SerializeToString() may put label before img_raw) have the same length
    but not this layout. Reads the file in blocks of LAYOUT_CHUNK records
    with NumPy (about 40 ms for 60,000 records); the file must have passed
    scan_tfrecord with this one record length. Raises DataError when it
    cannot be read.
    """
    offsets = template_offsets()
    if offsets is None or length != offsets[2]:
        return False
    image_at, label_at, _ = offsets
    head, tail = record_template(0)
    template = np.frombuffer(head + bytes(IMAGE_PIXELS) + tail, np.uint8)
    fixed = np.ones(length, bool)
    fixed[image_at:image_at + IMAGE_PIXELS] = fixed[label_at:label_at + NUM_CLASSES] = False
    frame = length + RECORD_FRAME_BYTES
    try:
        with open(tfRecord_path, "rb") as f:
            while block := f.read(LAYOUT_CHUNK * frame):
                if len(block) % frame:
                    return False
                records = np.frombuffer(block, np.uint8).reshape(-1, frame)[:, RECORD_HEADER_BYTES:RECORD_HEADER_BYTES + length]
                label = records[:, label_at:label_at + NUM_CLASSES]
                if not ((records[:, fixed] == template[fixed]).all() and (label <= 1).all()
                        and (label.sum(axis=1) == 1).all()):
                    return False
    except OSError as e:
        raise DataError(f"{tfRecord_path}: cannot read TFRecord file ({e.strerror})") from None
    return True


def _check_example(serialized, path, index):
    """Raise DataError unless one serialized record fits the schema (see check_tfrecord)."""
    where = f"{path}: record {index}"
    try:
        feature = tf.train.Example.FromString(serialized).features.feature
    except Exception:  # protobuf's DecodeError has no stable import path across versions
        raise DataError(f"{where}: not a tf.train.Example") from None
    if set(feature) != set(FEATURES):
        raise DataError(f"{where}: features {sorted(feature)}, expected {sorted(FEATURES)}")
    for name, spec in FEATURES.items():
        kind = _LIST_KIND[spec.dtype]
        values = getattr(feature[name], kind).value
        want = int(np.prod(spec.shape)) if spec.shape else 1
        if feature[name].WhichOneof("kind") != kind or len(values) != want:
            raise DataError(f"{where}: feature {name!r} must hold {want} value(s) in its {kind}")
    if len(feature["img_raw"].bytes_list.value[0]) != IMAGE_PIXELS:
        raise DataError(f"{where}: img_raw holds {len(feature['img_raw'].bytes_list.value[0])} bytes, expected {IMAGE_PIXELS}")
    label = list(feature["label"].int64_list.value)
    if sorted(label) != [0] * (NUM_CLASSES - 1) + [1]:
        raise DataError(f"{where}: label {label} is not one-hot")


def build_parser():
    """The command line's argparse parser; building it imports no TensorFlow (fast --help and flag errors)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--train-images", help=f"training image folder (course: {image_train_path})")
    parser.add_argument("--train-labels", help=f"training label file (course: {label_train_path})")
    parser.add_argument("--test-images", help=f"test image folder (course: {image_test_path})")
    parser.add_argument("--test-labels", help=f"test label file (course: {label_test_path})")
    parser.add_argument("--jpg-dir", default=jpg_path, help="where the JPG layout is found or built")
    parser.add_argument("--idx-dir", help="build the JPG layout from the 4 MNIST-format IDX files in this folder")
    parser.add_argument("--no-download", action="store_true", help="do not try to download the official MNIST")
    parser.add_argument("--data-dir", default=data_path, help="output folder for the TFRecord files")
    parser.add_argument("--workers", type=int, default=default_workers(),
                        help="processes decoding images (1: decode in this process, one image at a time)")
    parser.add_argument("--shards", type=int, default=1,
                        help="split the training records round-robin into this many files "
                             "mnist_train-00000-of-0000N.tfrecords ... (for distributed training)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (there is none when output is not a terminal)")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    if args.shards < 1:
        parser.error("--shards must be >= 1")
    try:
        generate(args)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("write tfrecord successful")
    return 0


if __name__ == "__main__":
    sys.exit(main())
