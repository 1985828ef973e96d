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
import contextlib
import glob
import os
import sys
import tempfile

import numpy as np
from PIL import Image, UnidentifiedImageError

from tf_compat import tf
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
FEATURES = {
    "img_raw": tf.FixedLenFeature([], tf.string),
    "label": tf.FixedLenFeature([NUM_CLASSES], tf.int64),
}

# Course input pipeline constants (examples, not batches).
NUM_THREADS = 2
CAPACITY = 1000
MIN_AFTER_DEQUEUE = 700
RECORDS_PER_READ = 200  # fast pipeline: records read and parsed per op run


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
    try:
        with open(label_path, encoding="utf-8-sig") as f:
            text = f.read()
    except FileNotFoundError:
        raise DataError(f"{label_path}: label file not found") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{label_path}: not a UTF-8 text file ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise DataError(f"{label_path}: cannot read label file ({e.strerror})") from None
    entries, seen = [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        name, _, digit = line.rpartition(" ")
        name = name.strip()
        if not name:
            raise DataError(f"{label_path}:{number}: expected '<file name> <digit>', found {line!r}")
        if not (digit.isdigit() and int(digit) < NUM_CLASSES):
            raise DataError(f"{label_path}:{number}: label {digit!r} is not a digit 0-9")
        if name in seen:
            raise DataError(f"{label_path}:{number}: {name!r} is listed again (first on line {seen[name]})")
        seen[name] = number
        entries.append((name, int(digit), number))
    if not entries:
        raise DataError(f"{label_path}: label file is empty")
    return entries


def load_image(img_path):
    """Pixels of one course image as (bytes, note).

    Returns exactly IMAGE_PIXELS uint8 bytes (28x28 8-bit grayscale,
    row-major) and a note: None, or the original mode when a colour, palette,
    16-bit or transparent image was converted to 8-bit grayscale.
    Raises DataError naming the file when it is missing, not an image, or
    not 28x28.
    """
    try:
        with Image.open(img_path) as img:
            img.load()
            note = None if img.mode == "L" else img.mode
            if img.size != (IMAGE_SIZE, IMAGE_SIZE):
                raise DataError(f"{img_path}: image is {img.size[0]}x{img.size[1]}, expected {IMAGE_SIZE}x{IMAGE_SIZE}")
            if img.mode.startswith("I;16") or img.mode == "I":
                pixels = (np.asarray(img, dtype=np.uint32) >> 8).astype(np.uint8)
                return pixels.tobytes(), note
            if img.mode != "L":
                img = img.convert("L")
            return img.tobytes(), note
    except FileNotFoundError:
        raise DataError(f"{img_path}: image file not found") from None
    except UnidentifiedImageError:
        raise DataError(f"{img_path}: not an image file") from None
    except OSError as e:
        raise DataError(f"{img_path}: cannot read image ({e})") from None


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


def write_tfRecord(tfRecordName, image_path, label_path, log=print, num_shards=1):
    """Write one split's TFRecord file(s) from its image folder and label file.

    One tf.train.Example per label-file line (schema: FEATURES). num_shards 1
    writes tfRecordName in line order; num_shards n > 1 writes n shards
    shard_name(tfRecordName, i, n) instead, record k going to shard k % n
    (round-robin, so shard sizes differ by at most one record), and removes
    the single file and shards of another count left from earlier runs.
    Each file is written under a temporary name in the same folder and
    renamed only when complete, so an interrupted run never leaves a
    truncated file in place of a good one. Returns the number of records
    written. Raises DataError naming the file (and line) on bad input or a
    failed write, or when there are fewer records than shards.
    """
    entries = read_label_file(label_path)
    if num_shards > len(entries):
        raise DataError(f"{label_path}: {len(entries)} records cannot fill {num_shards} shards; use fewer --shards")
    listed = {name for name, _, _ in entries}
    try:
        present = set(os.listdir(image_path))
    except OSError as e:
        raise DataError(f"{image_path}: cannot list image folder ({e.strerror})") from None
    for name, _, number in entries:
        if name not in present:
            raise DataError(f"{label_path}:{number}: image {name!r} not found in {image_path}")
    extra = sorted(n for n in present - listed if not n.startswith("."))
    if extra:
        log(f"warning: {len(extra)} files in {image_path} have no line in {label_path} and are skipped (e.g. {extra[0]!r})")

    outputs = [tfRecordName] if num_shards == 1 else [shard_name(tfRecordName, i, num_shards) for i in range(num_shards)]
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
    converted = []
    try:
        with contextlib.ExitStack() as stack:
            writers = [stack.enter_context(tf.io.TFRecordWriter(tmp)) for tmp in tmps]
            for k, (name, digit, number) in enumerate(entries):
                img_raw, note = load_image(os.path.join(image_path, name))
                if note:
                    converted.append((name, note))
                writers[k % num_shards].write(make_example(img_raw, digit).SerializeToString())
        for tmp, out in zip(tmps, outputs):
            os.replace(tmp, out)
    except BaseException as e:
        for tmp in tmps:
            mnist_idx._remove(tmp)
        if isinstance(e, (tf.errors.OpError, OSError)):
            raise DataError(f"{tfRecordName}: write failed ({getattr(e, 'message', None) or e})") from None
        raise
    # A folder holds one form of a split, so readers never mix two generations.
    stale = [old for old in [tfRecordName] + shard_files(tfRecordName) if old not in outputs and os.path.exists(old)]
    for old in stale:
        os.remove(old)
    if stale:
        log(f"removed {len(stale)} file(s) of an earlier run ({stale[0]}"
            + (" ..." if len(stale) > 1 else "") + f"), replaced by {len(outputs)} file(s)")
    if converted:
        name, mode = converted[0]
        log(f"warning: {len(converted)} images were not 8-bit grayscale and were converted (e.g. {name!r}, mode {mode})")
    return len(entries)


def generate(args, log=print):
    """Resolve the JPG layout (building it when missing) and write both TFRecord files."""
    splits = {"train": (args.train_images, args.train_labels), "test": (args.test_images, args.test_labels)}
    explicit = any(p is not None for pair in splits.values() for p in pair)
    default_exists = os.path.isdir(image_train_path) and os.path.isfile(label_train_path)
    if explicit:
        for split, (images, labels) in splits.items():
            if images is None or labels is None:
                raise DataError(f"--{split}-images and --{split}-labels must be given together with the other split's paths")
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
    for split, (images, labels) in splits.items():
        out = os.path.join(args.data_dir, tfRecord_train if split == "train" else tfRecord_test)
        # Only training is split among workers; evaluation reads the one test file.
        num_shards = args.shards if split == "train" else 1
        count = write_tfRecord(out, images, labels, log=log, num_shards=num_shards)
        if num_shards == 1:
            log(f"wrote {count} {split} records to {out}")
        else:
            log(f"wrote {count} {split} records round-robin to {num_shards} shards "
                f"{shard_name(out, 0, num_shards)} ... {shard_name(out, num_shards - 1, num_shards)}")


# ---------------------------------------------------------------- reading

def read_tfRecord(tfRecord_path, num_epochs=None, shuffle=True, records_per_read=None):
    """Course reader stage: filename queue -> TFRecordReader -> parse -> decode.

    tfRecord_path: one file (str), or a list of files (shards) that the
    filename queue cycles through (in a new random order each epoch when
    `shuffle`).

    Source: the course's read_tfRecord on tf.compat.v1's
    string_input_producer, TFRecordReader and parse_single_example /
    parse_example. Returns (img, label):
      records_per_read None (the course): one example per run,
        img uint8 [784], label int64 [10];
      records_per_read n: up to n examples per run (TFRecordReader.read_up_to
        and one parse_example), img uint8 [k, 784], label int64 [k, 10], k <= n.
    num_epochs None loops forever; 1 reads every record once (needs local
    variables initialised). Converting to float happens after batching,
    where it is cheaper (see to_float).
    """
    paths = [tfRecord_path] if isinstance(tfRecord_path, str) else list(tfRecord_path)
    filename_queue = tf.train.string_input_producer(paths, num_epochs=num_epochs, shuffle=shuffle)
    reader = tf.TFRecordReader()
    if records_per_read is None:
        _, serialized = reader.read(filename_queue)
        features = tf.parse_single_example(serialized, features=FEATURES)
        img = tf.decode_raw(features["img_raw"], tf.uint8)
        img.set_shape([IMAGE_PIXELS])
    else:
        _, serialized = reader.read_up_to(filename_queue, records_per_read)
        features = tf.parse_example(serialized, features=FEATURES)
        img = tf.reshape(tf.decode_raw(features["img_raw"], tf.uint8), [-1, IMAGE_PIXELS])
    return img, features["label"]


def to_float(img, label):
    """img uint8 [..., 784] -> float32 in [0, 1]; label int64 one-hot -> float32."""
    return tf.cast(img, tf.float32) * (1.0 / 255), tf.cast(label, tf.float32)


def get_tfrecord(num, isTrain=True, data_dir=data_path, pipeline="fast", files=None):
    """Shuffled training batches from data_dir's TFRecord file (course step).

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
    the same queue semantics in examples.
    """
    path = files or tfrecord_files(data_dir, isTrain)
    capacity = max(CAPACITY, MIN_AFTER_DEQUEUE + num)
    many = pipeline == "fast"
    img, label = read_tfRecord(path, records_per_read=RECORDS_PER_READ if many else None)
    img_batch, label_batch = tf.train.shuffle_batch(
        [img, label], batch_size=num, num_threads=NUM_THREADS, capacity=capacity,
        min_after_dequeue=MIN_AFTER_DEQUEUE, enqueue_many=many)
    return to_float(img_batch, label_batch)


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
        counts = {int(os.path.splitext(p)[0].rsplit("-of-", 1)[1]) for p in shards}
        expected = [shard_name(single, i, max(counts)) for i in range(max(counts))]
        if len(counts) > 1 or shards != expected:
            raise DataError(f"{source}: incomplete or mixed shard set ({len(shards)} files named "
                            f"{os.path.basename(shards[0])} ...); rerun `python mnist_generateds.py --shards N`")
        return shards
    if glob.has_magic(source):
        files = sorted(p for p in glob.glob(source) if os.path.isfile(p))
        if not files:
            raise DataError(f"{source}: no TFRecord file matches this pattern")
        return files
    if not os.path.isfile(source):
        raise DataError(f"{source}: no such folder or TFRecord file; run `python mnist_generateds.py` first")
    return [source]


def count_records(tfRecord_path):
    """Number of records in a TFRecord file, checking every record's CRC.

    Raises DataError naming the file (and the record index) when it is
    missing, empty, not a TFRecord file, or corrupted.
    """
    if not os.path.isfile(tfRecord_path):
        raise DataError(f"{tfRecord_path}: TFRecord file not found; run `python mnist_generateds.py` first")
    count = 0
    try:
        for _ in tf.io.tf_record_iterator(tfRecord_path):
            count += 1
    except tf.errors.OpError as e:
        raise DataError(f"{tfRecord_path}: record {count}: corrupted or not a TFRecord file ({e.message})") from None
    if count == 0:
        raise DataError(f"{tfRecord_path}: TFRecord file holds no records; rerun `python mnist_generateds.py`")
    return count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--train-images", help=f"training image folder (course: {image_train_path})")
    parser.add_argument("--train-labels", help=f"training label file (course: {label_train_path})")
    parser.add_argument("--test-images", help=f"test image folder (course: {image_test_path})")
    parser.add_argument("--test-labels", help=f"test label file (course: {label_test_path})")
    parser.add_argument("--jpg-dir", default=jpg_path, help="where the JPG layout is found or built")
    parser.add_argument("--idx-dir", help="build the JPG layout from the 4 MNIST-format IDX files in this folder")
    parser.add_argument("--no-download", action="store_true", help="do not try to download the official MNIST")
    parser.add_argument("--data-dir", default=data_path, help="output folder for the TFRecord files")
    parser.add_argument("--shards", type=int, default=1,
                        help="split the training records round-robin into this many files "
                             "mnist_train-00000-of-0000N.tfrecords ... (for distributed training)")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    args = parser.parse_args(argv)
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
