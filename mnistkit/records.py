"""The TFRecord files: the record schema, file naming, verifying a file before it is read, and reading it.

One tf.train.Example per image, declared once in SCHEMA: `img_raw`, 784 raw
uint8 grayscale bytes (28x28, row-major), and `label`, int64[10] one-hot.
Everything else is made from that declaration: the writer's bytes
(mnist_generateds.record_template builds each digit's Example from it, and
mnistkit.writer puts every image's pixels between that record's head and
tail), the readers' parse features (FEATURES: the queue-runner stages at
the end of this file, mnistkit.inputs' tf.data; mnist_generateds.read_tfRecord
builds its FixedLenFeatures from SCHEMA), the whole-file check
(scan_tfrecord), and the byte offsets of the fast fixed-length reader
(template_offsets, read_fixed). Adding a feature is one more RecordFeature
in SCHEMA. A file is checked whole before training or evaluation reads it,
so bad data is one line naming the file and record, not an error inside a
queue-runner thread. What the course never had for its queue runners is
here too: what a --pipeline name means (Pipeline), reading many records per
reader op (read_many, read_fixed), the one line saying when a file
cannot take the fixed-length path (log_reader), and a second set of records
drawn into every batch (Mix, mixed: the trainer's --mix-records).
"""
import argparse
import collections
import dataclasses
import functools
import glob
import math
import os
from typing import Callable

import numpy as np

from tf_compat import LazyMapping, first_line, tf
from . import cli, formats
from .errors import DataError

DATA_DIR = "./data"  # the course's data_path
TRAIN_FILE = "mnist_train.tfrecords"  # the course's tfRecord_train
TEST_FILE = "mnist_test.tfrecords"  # the course's tfRecord_test

# ---------------------------------------------------------------- the record schema, declared once

IMAGE_SIZE = 28
IMAGE_PIXELS = IMAGE_SIZE * IMAGE_SIZE  # img_raw: 784 raw uint8 bytes, row-major
NUM_CLASSES = 10  # label: int64[10], one-hot
IMAGE_FEATURE = "img_raw"  # the feature whose bytes are the pixels (decode_raw to uint8 [784])
LABEL_FEATURE = "label"  # the feature holding the digit one-hot
LIST_KINDS = {"string": "bytes_list", "int64": "int64_list"}  # a feature's dtype -> its tf.train.Feature list


@dataclasses.dataclass(frozen=True)
class RecordFeature:
    """One feature of the records' tf.train.Example, as SCHEMA declares it.

    name: its key in the Example. dtype: "string" (a BytesList; parsed as
    tf.string) or "int64" (an Int64List; parsed as tf.int64), the two kinds
    the course's Example uses. shape: FixedLenFeature's shape, () for one
    value, (n,) for n values. value: (pixels, digit) -> the list of values
    one record holds, pixels the image's IMAGE_PIXELS bytes and digit its
    int 0-9; only IMAGE_FEATURE may depend on the pixels (the writer
    serializes one record per digit and puts each image's pixels in it).
    check: None, or (values) -> None when a read record's values (its
    protobuf list, of the declared length) are right, else what is wrong, as
    the words after the feature's name in scan_tfrecord's message.
    Raises ValueError for another dtype.
    """
    name: str
    dtype: str
    shape: tuple
    value: Callable
    check: Callable = None

    def __post_init__(self):
        if self.dtype not in LIST_KINDS:
            raise ValueError(f"RecordFeature {self.name!r}: dtype {self.dtype!r}; use one of {sorted(LIST_KINDS)}")

    @property
    def length(self):
        """Values per record (int): 1 for shape (), n for (n,)."""
        return math.prod(self.shape)

    @property
    def list_kind(self):
        """The tf.train.Feature field holding the values: "bytes_list" or "int64_list"."""
        return LIST_KINDS[self.dtype]


def one_hot(pixels, digit):
    """label's values: a list of NUM_CLASSES ints, 1 at `digit`, else 0 (the course's `labels`)."""
    labels = [0] * NUM_CLASSES
    labels[digit] = 1
    return labels


def _pixel_count_problem(values):
    return None if len(values[0]) == IMAGE_PIXELS else f"holds {len(values[0])} bytes, expected {IMAGE_PIXELS}"


def _one_hot_problem(values):
    return None if sorted(values) == [0] * (NUM_CLASSES - 1) + [1] else f"{list(values)} is not one-hot"


SCHEMA = (  # the one declaration: writer, readers, the whole-file check and the fast path's offsets follow it
    RecordFeature(IMAGE_FEATURE, "string", (), lambda pixels, digit: [pixels], check=_pixel_count_problem),
    RecordFeature(LABEL_FEATURE, "int64", (NUM_CLASSES,), one_hot, check=_one_hot_problem),
)


class SchemaMapping(LazyMapping):
    """A read-only dict made by build(SCHEMA) on first use, and made again when SCHEMA is replaced.

    tf_compat.LazyMapping's, built on use so that importing this file needs
    no TensorFlow; keyed by SCHEMA, so that a test declaring one more
    feature sees it.
    """

    def __init__(self, build):
        super().__init__(functools.lru_cache(maxsize=4)(build))

    def _get(self):
        return self.build(SCHEMA)


FEATURES = SchemaMapping(lambda schema: {  # {name: tf.FixedLenFeature} for parse_example: the readers' features
    feature.name: tf.FixedLenFeature(list(feature.shape), tf.as_dtype(feature.dtype)) for feature in schema})
SHARD_SUFFIX = "-{index:05d}-of-{count:05d}"  # TensorFlow's shard naming: mnist_train-00000-of-00004.tfrecords


def example_feature(feature, values):
    """The tf.train.Feature holding `values` (a list) as the RecordFeature `feature` declares: BytesList or Int64List."""
    if feature.dtype == "string":
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def make_example(img_raw, digit):
    """The tf.train.Example of one image: each SCHEMA feature's value(img_raw, digit).

    img_raw: bytes, exactly IMAGE_PIXELS (784) uint8 grayscale pixels, row-major.
    digit: int 0-9 (stored as the one-hot int64 list `label`).
    """
    return tf.train.Example(features=tf.train.Features(feature={
        feature.name: example_feature(feature, feature.value(img_raw, digit)) for feature in SCHEMA}))


def record_template(digit):
    """(head, tail): the bytes around img_raw in the serialized record of `digit`.

    For every 784-byte img_raw, head + img_raw + tail equals
    make_example(img_raw, digit).SerializeToString(deterministic=True):
    protobuf writes a bytes field as tag, length, content, so with the length
    fixed the content never changes the bytes around it. Found by serializing
    the MARKER image (mnist_generateds.record_template does the same in the
    course's calls; tests check that the two agree). Deterministic
    serialization writes the feature map in key order; plain
    SerializeToString() (the course's) picks a map order at random per
    process with current protobuf, so its files differ from run to run.
    """
    return split_at_marker(make_example(MARKER, digit).SerializeToString(deterministic=True))


MARKER = bytes(range(256)) * 3 + bytes(range(IMAGE_PIXELS - 768))  # a 784-byte image found exactly once in its record


def split_at_marker(serialized):
    """(head, tail): the bytes of a record serialized around the MARKER image, before and after it."""
    at = serialized.index(MARKER)
    return serialized[:at], serialized[at + IMAGE_PIXELS:]


def template_offsets():
    """(image_at, label_at, length) of the writer's records under SCHEMA, or None.

    image_at: byte offset of img_raw's 784 pixels in a serialized record;
    label_at: offset of the label's 10 values, one byte each (0 or 1: a
    packed int64 list of one-hot values is 10 one-byte varints); length: the
    record's length. Found from record_template of all 10 digits: their
    heads are equal and their tails differ exactly in 10 bytes that hold the
    one-hot label. None when records are laid out otherwise: a protobuf
    version that serializes differently, or a SCHEMA with another feature
    whose value depends on the digit (then no file takes the template path,
    and log_reader says so).
    """
    return _template_offsets(SCHEMA)


@functools.lru_cache(maxsize=4)
def _template_offsets(schema):
    """template_offsets of one SCHEMA (cached per schema: ten serializations)."""
    templates = [record_template(digit) for digit in range(NUM_CLASSES)]
    heads, tails = {head for head, _ in templates}, [tail for _, tail in templates]
    if len(heads) != 1 or len({len(tail) for tail in tails}) != 1:
        return None
    differ = [i for i in range(len(tails[0])) if len({tail[i] for tail in tails}) > 1]
    if not differ or differ != list(range(differ[0], differ[0] + NUM_CLASSES)):
        return None
    start = differ[0]
    for digit, tail in enumerate(tails):
        if tail[start:start + NUM_CLASSES] != bytes(NUM_CLASSES)[:digit] + b"\x01" + bytes(NUM_CLASSES - digit - 1):
            return None
    head_length = len(heads.pop())
    return head_length, head_length + IMAGE_PIXELS + start, head_length + IMAGE_PIXELS + len(tails[0])


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


def tfrecord_files(source=DATA_DIR, isTrain=True, name=None):
    """The TFRecord files that a folder, a file or a file pattern names, sorted by name.

    A folder gives its complete shard set mnist_train-NNNNN-of-NNNNN.tfrecords
    (see shard_name) when it has one, else its mnist_train.tfrecords
    (mnist_test.tfrecords when not isTrain; `name` instead when given: the
    generator's tfRecord_train or tfRecord_test); a pattern such as
    "data/mnist_train-*" gives the files it matches (glob), unless a file or
    folder of that very name is there: a name such as `data[1]` is read
    literally first. Returns a non-empty list of paths. Raises DataError naming the source when
    nothing matches or a folder's shard set is incomplete.
    """
    if os.path.isdir(source):
        single = os.path.join(source, name or (TRAIN_FILE if isTrain else TEST_FILE))
        shards = shard_files(single)
        if not shards:
            if not os.path.isfile(single):
                raise DataError(f"{single}: TFRecord file not found; run `{generate_command(source)}` first")
            return [single]
        if shards != output_files(single, len(shards)):  # a complete set of N is exactly N names -of-N
            raise DataError(f"{source}: incomplete or mixed shard set ({len(shards)} files named "
                            f"{os.path.basename(shards[0])} ...); rerun `{generate_command(source, '--shards', 'N')}`")
        return shards
    if os.path.isfile(source):  # a file that is there is read as named, even with glob characters in its name
        return [source]
    if glob.has_magic(source):
        files = sorted(p for p in glob.glob(source) if os.path.isfile(p))
        if not files:
            raise DataError(f"{source}: no TFRecord file matches this pattern")
        return files
    raise no_data(source)


def generate_command(data_dir, *args):
    """The generator's command line that writes data_dir's TFRecord files: `--data-dir` kept when not ./data."""
    return cli.command("mnist_generateds.py", *cli.kept("--data-dir", data_dir, DATA_DIR), *args)


def folder_of(tfRecord_path):
    """The folder (str) a TFRecord file is in, "." for a bare file name."""
    return os.path.dirname(tfRecord_path) or os.curdir


def no_data(source):
    """The DataError for a --data-dir that is neither a folder nor a file (trainer's and evaluator's wording)."""
    return DataError(f"{source}: no such folder or TFRecord file; run `{generate_command(source)}` first")


RECORD_FRAME_BYTES = 16  # TFRecord framing around each record: uint64 length, its CRC, the data's CRC
RECORD_HEADER_BYTES = 12  # the part of the framing before the record: uint64 length, its CRC
LAYOUT_CHUNK = 4096  # records per block when template_layout compares a file with the template


def scan_tfrecord(tfRecord_path):
    """Check every record of a TFRecord file against SCHEMA; return (count, lengths).

    count: int, the number of records. lengths: sorted tuple of the distinct
    serialized record lengths in bytes, without the 16 bytes of framing (one
    length when every record has the same size, as write_tfRecord's do).

    Reads the file once in Python, so that bad data fails before training
    starts, with the file and record index in the message, instead of inside
    a queue-runner thread. Checks each record's CRCs
    (tf.io.tf_record_iterator), that it is a tf.train.Example holding
    exactly the features of SCHEMA with their kinds and lengths, and passing
    each feature's own check (img_raw IMAGE_PIXELS bytes, label one-hot),
    and that the file ends exactly where its last record ends: TensorFlow's
    readers take a partial last record (an interrupted copy) for the end of
    the file and would silently use the records before it. A record cut
    inside its header or its data is reported as cut short; one that is
    whole but fails its CRC as corrupted. Raises DataError when the file is
    missing, empty, not a TFRecord file, corrupted, cut short, or a record
    is malformed.
    """
    if not os.path.isfile(tfRecord_path):
        raise DataError(f"{tfRecord_path}: TFRecord file not found; run `{generate_command(folder_of(tfRecord_path))}` first")
    count = end = 0
    lengths = set()
    size = os.path.getsize(tfRecord_path)
    schema = SCHEMA  # as it is now, for the whole file
    try:
        for serialized in tf.io.tf_record_iterator(tfRecord_path):
            _check_example(serialized, tfRecord_path, count, schema)
            count += 1
            end += len(serialized) + RECORD_FRAME_BYTES
            lengths.add(len(serialized))
    except tf.errors.OpError as e:
        if _runs_past_end(tfRecord_path, end, size):
            raise _cut_short(tfRecord_path, count, end, size) from None
        if count == 0:
            named = not_a_tfrecord(tfRecord_path)
            if named is not None:
                raise named from None
        raise DataError(f"{tfRecord_path}: record {count}: corrupted or not a TFRecord file ({first_line(e)}); "
                        f"rerun `{generate_command(folder_of(tfRecord_path))}`") from None
    if size != end:  # the reader stops without an error when a record's 12-byte header is cut
        raise _cut_short(tfRecord_path, count, end, size)
    if count == 0:
        raise DataError(f"{tfRecord_path}: TFRecord file holds no records; rerun `{generate_command(folder_of(tfRecord_path))}`")
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


def is_record_header(data):
    """True when bytes start with a TFRecord record header: a uint64 length and its masked CRC-32C (12 bytes)."""
    return len(data) >= RECORD_HEADER_BYTES and masked_crc32c(data[:8]) == int.from_bytes(data[8:12], "little")


def not_a_tfrecord(tfRecord_path):
    """The DataError naming what a file that fails at its first record is, or None when formats cannot tell.

    A GZIP- or ZLIB-compressed TFRecord file (TFRecordOptions' compression,
    as some data sets ship) is named with how to decompress it; an IDX file
    (MNIST's download), a zip, HDF5, NumPy or image file as what it is.
    """
    kind = formats.describe(formats.read_head(tfRecord_path), is_record_header)
    generate = f"`{generate_command(folder_of(tfRecord_path))}`"
    if kind in (None, "a TFRecord file"):
        return None
    if kind == "a GZIP-compressed TFRecord file":
        return DataError(f"{tfRecord_path}: GZIP-compressed TFRecord file; the readers here take uncompressed ones: "
                         f"decompress it first (`gzip -dc {tfRecord_path} > plain.tfrecords`), or rerun {generate}")
    if kind == "a ZLIB-compressed TFRecord file":
        return DataError(f"{tfRecord_path}: ZLIB-compressed TFRecord file; the readers here take uncompressed ones: "
                         f"decompress it first (Python's zlib.decompress), or rerun {generate}")
    if "IDX file" in kind:
        return DataError(f"{tfRecord_path}: {kind}, not a TFRecord file; make TFRecord files from the folder "
                         f"of the 4 IDX files with `{generate_command(folder_of(tfRecord_path), '--idx-dir', 'FOLDER')}`")
    return DataError(f"{tfRecord_path}: {kind}, not a TFRecord file; rerun {generate}")


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
                     f"`{generate_command(folder_of(tfRecord_path))}`")


def check_tfrecord(tfRecord_path):
    """The record count (int) of a TFRecord file, after scan_tfrecord has checked all of it.

    Raises DataError as scan_tfrecord does.
    """
    return scan_tfrecord(tfRecord_path)[0]


def _check_example(serialized, path, index, schema):
    """Raise DataError unless one serialized record fits `schema` (a SCHEMA; see scan_tfrecord)."""
    where = f"{path}: record {index}"
    try:
        feature = tf.train.Example.FromString(serialized).features.feature
    except Exception:  # protobuf's DecodeError has no stable import path across versions
        raise DataError(f"{where}: not a tf.train.Example") from None
    names = [declared.name for declared in schema]
    if set(feature) != set(names):
        raise DataError(f"{where}: features {sorted(feature)}, expected {sorted(names)}")
    for declared in schema:
        kind = declared.list_kind
        values = getattr(feature[declared.name], kind).value
        if feature[declared.name].WhichOneof("kind") != kind or len(values) != declared.length:
            raise DataError(f"{where}: feature {declared.name!r} must hold {declared.length} value(s) in its {kind}")
    for declared in schema:
        problem = declared.check and declared.check(getattr(feature[declared.name], declared.list_kind).value)
        if problem:
            raise DataError(f"{where}: {declared.name} {problem}")


RecordLayout = collections.namedtuple("RecordLayout", "length template")


RecordLayout.__doc__ = """How the fast pipeline reads a set of TFRecord files (see layout_and_note).

length: int, the serialized length in bytes of every record of every file
(without framing). template: bool, every record is the writer's template
(record_template) around its pixels, so pixels and label sit at the byte
offsets of template_offsets.
"""


def layout_and_note(lengths_by_file):
    """(the RecordLayout the fast pipeline may read these files with, or None for TFRecordReader; note).

    lengths_by_file: {path: lengths} for every file to be read, the lengths
    as scan_tfrecord returned them (it must have checked the files: their
    CRCs are not read again). The layout is None when the records do not
    all have one length; otherwise its template is true when
    template_layout holds for every file. note: None when the files take the template path (or read_fixed's
    fastest, slicing), else one line (str) naming the first file that keeps
    the fast pipeline off it and saying what it reads with instead:
    TFRecordReader when record lengths differ (within the file, or from the
    first file's), parsing each fixed-length record when the lengths agree
    but the layout is not the writer's. Printed by log_reader.
    """
    paths = list(lengths_by_file)
    distinct = set().union(*lengths_by_file.values())
    if len(distinct) != 1:
        path = next((p for p in paths if len(lengths_by_file[p]) > 1), None)
        if path is not None:
            lengths = lengths_by_file[path]
            why = f"its records have {len(lengths)} different lengths ({lengths[0]} to {lengths[-1]} bytes)"
        else:
            path = next(p for p in paths if lengths_by_file[p] != lengths_by_file[paths[0]])
            why = f"its records are {lengths_by_file[path][0]} bytes long, {paths[0]}'s {lengths_by_file[paths[0]][0]}"
        return None, (f"note: {path}: {why}; --pipeline fast reads the training files with TFRecordReader "
                      "instead of fixed-length frames")
    length, = distinct
    odd = next((p for p in paths if not template_layout(p, length)), None)
    if odd is None:
        return RecordLayout(length, True), None
    return RecordLayout(length, False), (
        f"note: {odd}: its records are not laid out as mnist_generateds.py writes them (another feature order or "
        "schema); --pipeline fast parses each fixed-length record instead of slicing pixels and label at fixed offsets")


def template_layout(tfRecord_path, length):
    """True when every record of a checked TFRecord file is the writer's template around its pixels.

    That is: each record is `length` bytes long, equals record_template's
    bytes everywhere but the pixels and the label's 10 bytes, and those 10
    bytes are one-hot (0 or 1, one 1). Then the pixels and the label can be
    read at template_offsets without parsing (read_fixed), whoever wrote the
    file. Records serialized with another map order (the course's
    SerializeToString() may put label before img_raw) have the same length
    but not this layout. Reads the file in blocks of LAYOUT_CHUNK records
    with NumPy, fast beside the scan that came first; the file must have passed
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


# ---------------------------------------------------------------- the training files, checked

@dataclasses.dataclass
class TrainingData:
    """The training files, checked: {path: record count}, a description for messages, their RecordLayout.

    examples: the record count of the whole training set, one epoch (also
    when `counts` holds only a distributed worker's own files).
    """
    counts: dict
    where: str
    layout: object
    examples: int
    note: str = None  # one line when the fast pipeline cannot take its fastest path (layout_and_note), else None
    signatures: dict = dataclasses.field(default_factory=dict)  # {path: file_signature} when checked
    files: list = dataclasses.field(init=False)  # the paths, in counts' order

    def __post_init__(self):
        self.files = list(self.counts)

    def for_worker(self, files):
        """The same data, read from `files` only (a worker's shards); examples stays the whole set's."""
        return TrainingData({f: self.counts[f] for f in files}, ", ".join(files), self.layout, self.examples,
                            self.note, {f: self.signatures[f] for f in files if f in self.signatures})

    def check_unchanged(self):
        """Raise DataError when a training file is no longer the one checked (rewritten or replaced since)."""
        for path, signature in self.signatures.items():
            if file_signature(path) != signature:
                raise DataError(f"{path}: the training file changed while training (rewritten by "
                                "mnist_generateds.py?); run the trainer again to train on the new file")


def file_signature(path):
    """(inode, size, mtime ns) of a file, or None when it is gone: what tells a rewritten file from the one checked."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def training_data(data_dir, name=TRAIN_FILE):
    """The TrainingData of a folder, file or pattern (tfrecord_files; name: a folder's training file's), every
    file checked whole.

    Each file passes scan_tfrecord; the layout (layout_and_note) tells the
    fast pipeline whether it may read fixed-length frames, and its note
    says so in one line when it may not. Raises DataError
    on missing or bad data.
    """
    paths = tfrecord_files(data_dir, True, name)
    signatures = {f: file_signature(f) for f in paths}  # before the scan: a change during it shows too
    scans = {f: scan_tfrecord(f) for f in paths}
    where = paths[0] if len(paths) == 1 else f"{len(paths)} files {paths[0]} ... {paths[-1]}"
    layout, note = layout_and_note({f: lengths for f, (_, lengths) in scans.items()})
    counts = {f: count for f, (count, _) in scans.items()}
    return TrainingData(counts, where, layout, sum(counts.values()), note, signatures)


def log_reader(data, pipeline, log=print):
    """Log data.note (one line) when `pipeline` is one that reads data.layout (--pipeline fast), else nothing.

    data: a TrainingData; pipeline: a Pipeline or its name. The note names
    the first file whose records cannot take the fixed-length path and the
    reader used instead; the course and tf.data pipelines parse every record
    anyway.
    """
    if data.note is not None and pipeline_of(pipeline).records_per_read is not None:
        log(data.note)


# ---------------------------------------------------------------- reading them through queue runners

# The course's shuffle_batch (examples, not batches); also the size of tf.data's shuffle buffer.
NUM_THREADS = 2
CAPACITY = 1000
MIN_AFTER_DEQUEUE = 700
JOIN_GRACE_SECS = 5  # a queue-runner thread gets this long to finish after request_stop
RECORDS_PER_READ = 200  # fast pipeline: records read and parsed per op run


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """What a --pipeline name means, decided once (PIPELINES) and asked by what it changes.

    records_per_read: records each reader op reads (None: one, the
    course's); fed: batches fetched by sess.run and fed back by feed_dict
    (the course's) rather than wired into the network; queue_runners: the
    batches come from queue runners under a Coordinator (else tf.data).
    """
    name: str
    records_per_read: object
    fed: bool
    queue_runners: bool


PIPELINES = {pipeline.name: pipeline for pipeline in (
    Pipeline("fast", RECORDS_PER_READ, fed=False, queue_runners=True),
    Pipeline("course", None, fed=True, queue_runners=True),
    Pipeline("tfdata", None, fed=False, queue_runners=False),
)}


def pipeline_of(pipeline):
    """The Pipeline of a --pipeline name (or a Pipeline itself); KeyError for an unknown name."""
    return pipeline if isinstance(pipeline, Pipeline) else PIPELINES[pipeline]


def read_fixed(filename_queue, records_per_read, layout):
    """Up to records_per_read examples per run from files of equal-length records.

    Source: tf.compat.v1.FixedLengthRecordReader (the TF1 CIFAR-10 reader),
    which reads through a buffer, where TFRecordReader makes two unbuffered
    reads per record (bench/bench.py, README "Performance"). Each TFRecord
    frame (uint64 length, its CRC, the record, the record's CRC) is read as
    one fixed-length value of layout.length + RECORD_FRAME_BYTES bytes, and
    the CRCs are not checked here. That loses nothing: layout comes from
    layout_and_note, whose files scan_tfrecord read whole just before,
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
        return image_and_label(tf.parse_example(serialized, features=FEATURES))
    image_at, label_at = (RECORD_HEADER_BYTES + at for at in template_offsets()[:2])
    frame_bytes = tf.decode_raw(frames, tf.uint8)
    frame_bytes.set_shape([None, layout.length + RECORD_FRAME_BYTES])  # the reader's values all have this length
    return (frame_bytes[:, image_at:image_at + IMAGE_PIXELS],
            frame_bytes[:, label_at:label_at + NUM_CLASSES])


def to_float(img, label):
    """img uint8 [..., 784] -> float32 in [0, 1]; label int64 one-hot -> float32."""
    return tf.cast(img, tf.float32) * (1.0 / 255), tf.cast(label, tf.float32)


def read_many(filename_queue, records_per_read, layout=None):
    """Up to records_per_read examples per run of the reader op: img uint8 [k, 784], label [k, 10], k <= n.

    Source: tf.compat.v1.TFRecordReader.read_up_to and one parse_example for
    the whole batch of records (label int64); with a RecordLayout (see
    layout_and_note) FixedLengthRecordReader instead (read_fixed;
    label uint8 when layout.template). The fast pipeline's reader stage.
    """
    if layout is not None:
        return read_fixed(filename_queue, records_per_read, layout)
    _, serialized = tf.TFRecordReader().read_up_to(filename_queue, records_per_read)
    return image_and_label(tf.parse_example(serialized, features=FEATURES))


def image_and_label(features):
    """parse_example's features of k records (FEATURES) -> img uint8 [k, 784], label int64 [k, 10]."""
    return tf.reshape(tf.decode_raw(features[IMAGE_FEATURE], tf.uint8), [-1, IMAGE_PIXELS]), features[LABEL_FEATURE]


# ---------------------------------------------------------------- a second source in every batch (--mix-records)

MIX_SHARE = 0.25  # --mix-records PATH alone: a quarter of each batch from PATH


@dataclasses.dataclass(frozen=True)
class Mix:
    """A second set of TFRecord files drawn into every training batch: `share` of its examples come from `source`.

    source: a folder, file or pattern (tfrecord_files); share: a float in
    (0, 1). The trainer's --mix-records PATH[:SHARE] (mix_of).
    """
    source: str
    share: float = MIX_SHARE

    def examples(self, batch_size):
        """Examples of a batch of batch_size drawn from source (int): share of it, rounded, at least 1, at most
        batch_size - 1 (so both sources are in every batch)."""
        return min(batch_size - 1, max(1, round(batch_size * self.share)))


def mix_of(text):
    """The Mix of a --mix-records value "PATH" or "PATH:SHARE" (a Mix or None passes as it is).

    A last ":<number>" is the share, else the whole text is the path (so
    C:\\data is a path). Raises argparse.ArgumentTypeError (argparse prints
    it as a usage error) when the share is not a number strictly between 0 and 1.
    """
    if text is None or isinstance(text, Mix):
        return text
    path, _, share = text.rpartition(":")
    try:
        share = float(share) if path else None
    except ValueError:
        share = None
    if share is None:
        return Mix(cli.path(text))
    if not 0 < share < 1:
        raise argparse.ArgumentTypeError(f"--mix-records {text}: the share after ':' must be between 0 and 1, "
                                         f"e.g. {path}:{MIX_SHARE}")
    return Mix(cli.path(path), share)


def mixed(batches, batch_size, mix, log=print):
    """The training batches with mix's share drawn from its files: ((img_batch, label_batch), next_batch).

    batches(num, files=None) -> ((img_batch float32 [num, 784], label_batch
    float32 [num, 10]), next_batch): the trainer's pipeline over its own
    training files (files None) or over `files`, each call its own chain
    (for queue runners: string_input_producer -> reader -> parse ->
    shuffle_batch); next_batch() makes another batch from that chain. With
    a Mix, the first batch_size - k examples come from the training files
    and the last k = mix.examples(batch_size) from mix.source,
    concatenated, so a small set counts for its share of every step
    whatever the size of the large one; the next_batch returned
    concatenates both chains' next batches the same way. mix's files are
    checked whole first (scan_tfrecord); `log` says how often each of
    their records comes. Raises DataError on missing or bad mix files.
    """
    files = tfrecord_files(mix.source)
    count = sum(check_tfrecord(f) for f in files)
    k = mix.examples(batch_size)
    log(f"mixing {k} of every {batch_size} examples from the {count} records of {mix.source} "
        f"(each about {k / count:.2g} times a step)")
    (own, own_next), (other, other_next) = batches(batch_size - k), batches(k, files)

    def next_batch():
        return concatenated(own_next(), other_next())
    return concatenated(own, other), next_batch


def concatenated(own, other):
    """Two (img, label) batches as one: own's examples first, then other's."""
    return tf.concat([own[0], other[0]], 0), tf.concat([own[1], other[1]], 0)
