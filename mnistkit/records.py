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
(template_offsets, read_many). Adding a feature is one more RecordFeature
in SCHEMA. A file is checked whole before training or evaluation reads it,
so bad data is one line naming the file and record, not an error inside a
queue-runner thread. What the course never had for its queue runners is
here too: what a --pipeline name means (Pipeline), reading many records per
reader op (read_many), the one line saying when a file
cannot take the fixed-length path (training_data says so), and a second set of records
drawn into every batch (Mix, mixed: the trainer's --mix-records).
"""
import argparse
import collections
import dataclasses
import functools
import glob
import math
import os
import re
from typing import Callable

import numpy as np

from tf_compat import LazyMapping, first_line, tf
from . import cli, folders, formats
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
    the course's Example uses (LIST_KINDS; make_example refuses another).
    shape: FixedLenFeature's shape, () for one value, (n,) for n values.
    value: (pixels, digit) -> the list of values one record holds, pixels
    the image's IMAGE_PIXELS bytes and digit its int 0-9; only
    IMAGE_FEATURE may depend on the pixels (the writer serializes one record
    per digit and puts each image's pixels in it). check: None, or (values)
    -> None when a read record's values (its protobuf list, of the declared
    length) are right, else what is wrong, as the words after the feature's
    name in scan_tfrecord's message.
    """
    name: str
    dtype: str
    shape: tuple
    value: Callable
    check: Callable = None


SCHEMA = (  # the one declaration: writer, readers, the whole-file check and the fast path's offsets follow it
    RecordFeature(IMAGE_FEATURE, "string", (), lambda pixels, digit: [pixels],
                  check=lambda values: None if len(values[0]) == IMAGE_PIXELS
                  else f"holds {len(values[0])} bytes, expected {IMAGE_PIXELS}"),
    RecordFeature(LABEL_FEATURE, "int64", (NUM_CLASSES,),  # the course's `labels`: 1 at the digit, else 0
                  lambda pixels, digit: [int(k == digit) for k in range(NUM_CLASSES)],
                  check=lambda values: None if sorted(values) == [0] * (NUM_CLASSES - 1) + [1]
                  else f"{list(values)} is not one-hot"),
)


class SchemaMapping(LazyMapping):
    """A read-only dict made by build(SCHEMA) on use: build is cached per schema, so a replaced SCHEMA is seen.

    tf_compat.LazyMapping's, built on use so that importing this file needs
    no TensorFlow; keyed by SCHEMA, so that a test declaring one more
    feature sees it.
    """

    def _get(self):
        return self.build(SCHEMA)


@functools.lru_cache(maxsize=4)
def parse_features(schema):
    """{name: tf.FixedLenFeature} of a SCHEMA, for parse_example (FEATURES: the current SCHEMA's)."""
    return {feature.name: tf.FixedLenFeature(list(feature.shape), tf.as_dtype(feature.dtype)) for feature in schema}


FEATURES = SchemaMapping(parse_features)  # {name: tf.FixedLenFeature} for parse_example: the readers' features
SHARD_SUFFIX = "-{index:05d}-of-{count:05d}"  # TensorFlow's shard naming: mnist_train-00000-of-00004.tfrecords


def make_example(img_raw, digit, schema=None):
    """The tf.train.Example of one image: each SCHEMA feature's value(img_raw, digit), in its LIST_KINDS list.

    img_raw: bytes, exactly IMAGE_PIXELS (784) uint8 grayscale pixels, row-major.
    digit: int 0-9 (stored as the one-hot int64 list `label`). schema: the
    features, SCHEMA when None. Raises ValueError for a feature of a dtype
    not in LIST_KINDS.
    """
    example = tf.train.Example()
    for feature in schema or SCHEMA:
        if feature.dtype not in LIST_KINDS:
            raise ValueError(f"RecordFeature {feature.name!r}: dtype {feature.dtype!r}; use one of {sorted(LIST_KINDS)}")
        getattr(example.features.feature[feature.name], LIST_KINDS[feature.dtype]).value.extend(
            feature.value(img_raw, digit))
    return example


MARKER = bytes(range(256)) * 3 + bytes(range(IMAGE_PIXELS - 768))  # a 784-byte image found exactly once in its record


def split_at_marker(serialized):
    """(head, tail): the bytes of a record serialized around the MARKER image, before and after it."""
    at = serialized.index(MARKER)
    return serialized[:at], serialized[at + IMAGE_PIXELS:]


RecordTemplate = collections.namedtuple("RecordTemplate", "image_at label_at length outside")


@functools.lru_cache(maxsize=4)
def template_offsets(schema):
    """The RecordTemplate of the writer's records under `schema` (records.SCHEMA), or None.

    image_at: byte offset of img_raw's 784 pixels in a serialized record;
    label_at: offset of the label's 10 values, one byte each (0 or 1: a
    packed int64 list of one-hot values is 10 one-byte varints), after the
    pixels; length: the record's length; outside: the record's bytes without
    those two slots, the same in every record. Found from make_example of the
    MARKER image for all 10 digits, serialized deterministically (in key
    order, as the writer's): they are equal but for 10 bytes that hold the
    one-hot label (protobuf writes a bytes field as tag, length, content, so
    with the length fixed the content never changes the bytes around it).
    None when records are laid out otherwise: a protobuf version that
    serializes differently, or a schema with another feature whose value
    depends on the digit (then no file takes the template path, and
    training_data says so). Cached per schema: ten serializations.
    """
    records = [make_example(MARKER, digit, schema).SerializeToString(deterministic=True)
               for digit in range(NUM_CLASSES)]
    if len({len(record) for record in records}) != 1:
        return None
    differ = [i for i in range(len(records[0])) if len({record[i] for record in records}) > 1]
    image_at, label_at = records[0].index(MARKER), differ[0] if differ else 0
    if differ != list(range(label_at, label_at + NUM_CLASSES)) or label_at < image_at + IMAGE_PIXELS or any(
            record[label_at:label_at + NUM_CLASSES] != bytes(k == digit for k in range(NUM_CLASSES))
            for digit, record in enumerate(records)):
        return None
    record = records[0]
    outside = record[:image_at] + record[image_at + IMAGE_PIXELS:label_at] + record[label_at + NUM_CLASSES:]
    return RecordTemplate(image_at, label_at, len(record), outside)


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
                raise model_folder_given(source) or DataError(f"{single}: TFRecord file not found; run "
                                                              f"`{generate_command(source)}` first")
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


def test_records_given(paths):
    """Raise DataError when a trainer's --data-dir names the test records (paths: tfrecord_files' list; a file
    mnist_test.tfrecords or one of its shards, given as a file or a pattern): a model trained on them scores its own
    training data in mnist_test.py. The line names the file and the training records beside it to give instead."""
    stem, ext = os.path.splitext(TEST_FILE)
    test = next((p for p in paths if re.fullmatch(re.escape(stem) + r"(-\d{5}-of-\d{5})?" + re.escape(ext),
                                                   os.path.basename(p))), None)
    if test is not None:
        raise DataError(f"{test}: these are the test records, which mnist_test.py scores the model on; train on "
                        f"the training records: --data-dir {cli.quoted(folder_of(test))} (its {TRAIN_FILE})")


def model_folder_given(source):
    """The DataError for a --data-dir that is a model folder (it holds checkpoints: `--data-dir model` for
    `--model-dir model`), or None: the generator's command writing TFRecords into it is no answer there."""
    if not folders.has_checkpoints(source):
        return None
    return DataError(f"{source} holds checkpoints, not TFRecord files: it is a model folder (--model-dir "
                     f"{cli.quoted(source)}); give --data-dir the folder of the TFRecord files (default {DATA_DIR})")


def generate_command(data_dir, *args):
    """The generator's command line that writes data_dir's TFRecord files: `--data-dir` kept when not ./data."""
    return cli.command("mnist_generateds.py", *cli.kept("--data-dir", data_dir, DATA_DIR), *args)


def folder_of(tfRecord_path):
    """The folder (str) a TFRecord file is in, "." for a bare file name."""
    return os.path.dirname(tfRecord_path) or os.curdir


def no_data(source):
    """The DataError for a --data-dir that is neither a folder nor a file (trainer's and evaluator's wording): a
    typo (`dta`) beside a folder or file of TFRecords with a close name is asked about (`did you mean data?`, as a
    mistyped --model-dir is: mistyped_data), else the generator's command that writes it is given."""
    return mistyped_data(source) or DataError(f"{source}: no such folder or TFRecord file; run "
                                              f"`{generate_command(source)}` first")


def mistyped_data(source):
    """The DataError for a --data-dir not there whose name is close to a folder or file of TFRecords beside it
    (`dta: no such folder or TFRecord file; did you mean data?`), else None (there, a pattern that matches, or no
    close name: the exporter then calibrates on the bundled sample)."""
    if os.path.exists(source) or glob.has_magic(source) and glob.glob(source):
        return None

    def holds_records(path):
        if os.path.isdir(path):
            return any(os.path.isfile(os.path.join(path, name)) or shard_files(os.path.join(path, name))
                       for name in (TRAIN_FILE, TEST_FILE))
        return path.endswith(".tfrecords") and os.path.isfile(path)
    meant = cli.did_you_mean(source, holds_records)
    return DataError(f"{source}: no such folder or TFRecord file; {meant}") if meant else None


RECORD_FRAME_BYTES = 16  # TFRecord framing around each record: uint64 length, its CRC, the data's CRC
RECORD_HEADER_BYTES = 12  # the part of the framing before the record: uint64 length, its CRC


def scan_tfrecord(tfRecord_path):
    """Check every record of a TFRecord file against SCHEMA; return (count, lengths, template).

    count: int, the number of records. lengths: sorted tuple of the distinct
    serialized record lengths in bytes, without the 16 bytes of framing (one
    length when every record has the same size, as write_tfRecord's do).
    template: True when every record is the writer's template around its
    pixels (template_offsets: its bytes but for pixels and label), so that
    read_many may slice them at fixed offsets; records in another map order
    (the course's SerializeToString() may put label before img_raw) have the
    same length but not this layout.

    Reads the file once in Python, so that bad data fails before training
    starts, with the file and record index in the message, instead of inside
    a queue-runner thread. Checks each record's CRCs
    (tf.io.tf_record_iterator), that it is a tf.train.Example holding
    exactly the features of SCHEMA with their kinds and lengths, and passing
    each feature's own check (img_raw IMAGE_PIXELS bytes, label one-hot),
    and that the file ends exactly where its last record ends (_read_error).
    Raises DataError when the file is missing, empty, not a TFRecord file,
    corrupted, cut short, or a record is malformed.
    """
    if not os.path.isfile(tfRecord_path):
        raise DataError(f"{tfRecord_path}: TFRecord file not found; run `{generate_command(folder_of(tfRecord_path))}` first")
    count = end = 0
    lengths = set()
    size = os.path.getsize(tfRecord_path)
    schema = SCHEMA  # as it is now, for the whole file
    template = template_offsets(schema)
    fits = template is not None
    names = sorted(declared.name for declared in schema)
    kinds = {declared.name: (LIST_KINDS[declared.dtype], math.prod(declared.shape)) for declared in schema}
    try:
        for serialized in tf.io.tf_record_iterator(tfRecord_path):
            where = f"{tfRecord_path}: record {count}"
            try:
                feature = tf.train.Example.FromString(serialized).features.feature
            except Exception:  # protobuf's DecodeError has no stable import path across versions
                raise DataError(f"{where}: not a tf.train.Example") from None
            if sorted(feature) != names:
                raise DataError(f"{where}: features {sorted(feature)}, expected {names}")
            for name, (kind, length) in kinds.items():
                if feature[name].WhichOneof("kind") != kind or len(getattr(feature[name], kind).value) != length:
                    raise DataError(f"{where}: feature {name!r} must hold {length} value(s) in its {kind}")
            for declared in schema:
                values = getattr(feature[declared.name], kinds[declared.name][0]).value
                problem = declared.check and declared.check(values)
                if problem:
                    raise DataError(f"{where}: {declared.name} {problem}")
            fits = fits and len(serialized) == template.length and template.outside == (
                serialized[:template.image_at] + serialized[template.image_at + IMAGE_PIXELS:template.label_at]
                + serialized[template.label_at + NUM_CLASSES:])  # the label's bytes: its values, one-hot as checked
            count += 1
            end += len(serialized) + RECORD_FRAME_BYTES
            lengths.add(len(serialized))
    except tf.errors.OpError as e:
        raise _read_error(tfRecord_path, count, end, size, e) from None
    if size != end:  # the reader stops without an error when a record's 12-byte header is cut
        raise _cut_short(tfRecord_path, count, end, size)
    if count == 0:
        raise DataError(f"{tfRecord_path}: TFRecord file holds no records; rerun `{generate_command(folder_of(tfRecord_path))}`")
    return count, tuple(sorted(lengths)), fits


def _read_error(tfRecord_path, count, end, size, error):
    """The DataError for a file whose record `count`, at byte `end` of `size`, failed to read with `error`.

    TensorFlow's readers take a partial last record (an interrupted copy)
    for the end of the file and would silently use the records before it:
    a record cut inside its header or its data is reported as cut short;
    one that is whole but fails its CRC as corrupted; a file that fails at
    its first record as what it is, when formats can tell (not_a_tfrecord).
    """
    if _runs_past_end(tfRecord_path, end, size):
        return _cut_short(tfRecord_path, count, end, size)
    named = not_a_tfrecord(tfRecord_path) if count == 0 else None
    if named is not None:
        return named
    return DataError(f"{tfRecord_path}: record {count}: corrupted or not a TFRecord file ({first_line(error)}); "
                     f"rerun `{generate_command(folder_of(tfRecord_path))}`")


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
        gunzip = f"gzip -dc {cli.quoted(tfRecord_path)} > plain.tfrecords"
        return DataError(f"{tfRecord_path}: GZIP-compressed TFRecord file; the readers here take uncompressed ones: "
                         f"decompress it first (`{gunzip}`), or rerun {generate}")
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


def read_examples(tfRecord_paths):
    """(images uint8 [n, 784], digits int64 [n]) of every record of the TFRecord files, in order, each file checked
    whole first (check_tfrecord): the board's test set (mnistkit.board.mistakes). Raises DataError as
    scan_tfrecord does. Source: tf.io.tf_record_iterator, tf.train.Example."""
    images, digits = [], []
    for path in tfRecord_paths:
        check_tfrecord(path)
        for serialized in tf.io.tf_record_iterator(path):
            feature = tf.train.Example.FromString(serialized).features.feature
            images.append(feature[IMAGE_FEATURE].bytes_list.value[0])
            digits.append(list(feature[LABEL_FEATURE].int64_list.value).index(1))  # one-hot: checked by the scan
    return np.frombuffer(b"".join(images), np.uint8).reshape(-1, IMAGE_PIXELS), np.array(digits, np.int64)


RecordLayout = collections.namedtuple("RecordLayout", "length template")


RecordLayout.__doc__ = """How the fast pipeline reads a set of TFRecord files (training_data's, read_many's).

length: int, the serialized length in bytes of every record of every file
(without framing). template: bool, every record is the writer's template
around its pixels (scan_tfrecord's template), so pixels and label sit at
the byte offsets of template_offsets.
"""


# ---------------------------------------------------------------- the training files, checked

@dataclasses.dataclass
class TrainingData:
    """The training files, checked: {path: record count}, a description for messages, their RecordLayout.

    examples: the record count of the whole training set, one epoch (also
    when `counts` holds only a distributed worker's own files).
    """
    files: list  # the paths, in reading order (the keys of counts)
    counts: dict
    where: str
    layout: object  # a RecordLayout, or None: TFRecordReader
    examples: int
    note: str = None  # one line when the fast pipeline cannot take its fastest path (training_data), else None
    signatures: dict = dataclasses.field(default_factory=dict)  # {path: file_signature} when checked
    mix_files: list = dataclasses.field(default_factory=list)  # --mix-records' files when looked up (training_data)

    def for_worker(self, files):
        """The same data, read from `files` only (a worker's shards); examples stays the whole set's."""
        return TrainingData(list(files), {f: self.counts[f] for f in files}, ", ".join(files), self.layout,
                            self.examples, self.note, {f: self.signatures[f] for f in files if f in self.signatures},
                            self.mix_files)

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


def looked_up(data_dir, name=TRAIN_FILE, mix=None):
    """(the training files of data_dir, the files of the --mix-records `mix`), each list found by tfrecord_files and
    none of them read: a trainer's data looked up (DataError for a path not there, or the test records given to
    train on), also by a trainer that then has nothing to train (training.reached)."""
    paths = tfrecord_files(data_dir, True, name)
    if (name or TRAIN_FILE) != TEST_FILE:
        test_records_given(paths)
    return paths, tfrecord_files(mix.source) if mix is not None else []


def training_data(data_dir, name=TRAIN_FILE, pipeline=None, log=print, mix=None):
    """The TrainingData of a folder, file or pattern (tfrecord_files; name: a folder's training file's), every
    file checked whole by scan_tfrecord; its note said through `log` when `pipeline` (a Pipeline or its name;
    None: no reader yet) is one that reads data.layout (--pipeline fast), as a trainer starts. mix: the
    trainer's --mix-records (a Mix, or None), whose files are looked up (mix_files) before any file is read
    whole, so that a mistyped one is said before TensorFlow's import (scan_tfrecord's).

    Its layout tells the fast pipeline how it may read the files: None
    (TFRecordReader) when their records do not all have one length, else a
    RecordLayout whose template is true when every file's records are the
    writer's template (scan_tfrecord). Its note: None when the files take the
    template path (read_many's fastest, slicing), else one line (str) naming
    the first file that keeps the fast pipeline off it and saying what it
    reads with instead: TFRecordReader when record lengths differ (within
    the file, or from the first file's), parsing each fixed-length record
    when the lengths agree but the layout is not the writer's; the course
    and tf.data pipelines parse every record anyway, so it is said only for
    one that reads the layout. Raises DataError on missing or bad data.
    """
    paths, mix_files = looked_up(data_dir, name, mix)
    signatures = {f: file_signature(f) for f in paths}  # before the scan: a change during it shows too
    scans = {f: scan_tfrecord(f) for f in paths}  # {path: (count, lengths, template)}
    where = paths[0] if len(paths) == 1 else f"{len(paths)} files {paths[0]} ... {paths[-1]}"
    counts = {f: count for f, (count, _, _) in scans.items()}
    lengths = {f: scan[1] for f, scan in scans.items()}
    layout, note = RecordLayout(lengths[paths[0]][0], True), None
    uneven = next((f for f in paths if len(lengths[f]) > 1), None)
    other = next((f for f in paths if lengths[f] != lengths[paths[0]]), None)
    odd = next((f for f in paths if not scans[f][2]), None)
    if uneven is not None or other is not None:
        why = (f"its records have {len(lengths[uneven])} different lengths ({lengths[uneven][0]} to "
               f"{lengths[uneven][-1]} bytes)" if uneven is not None else
               f"its records are {lengths[other][0]} bytes long, {paths[0]}'s {lengths[paths[0]][0]}")
        layout, note = None, (f"note: {uneven or other}: {why}; --pipeline fast reads the training files with "
                              "TFRecordReader instead of fixed-length frames")
    elif odd is not None:
        layout, note = layout._replace(template=False), (
            f"note: {odd}: its records are not laid out as mnist_generateds.py writes them (another feature order "
            "or schema); --pipeline fast parses each fixed-length record instead of slicing pixels and label at "
            "fixed offsets")
    if note is not None and pipeline is not None and pipeline_of(pipeline).records_per_read is not None:
        log(note)
    return TrainingData(paths, counts, where, layout, sum(counts.values()), note, signatures, mix_files)


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


def to_float(img, label):
    """img uint8 [..., 784] -> float32 in [0, 1]; label int64 one-hot -> float32."""
    return tf.cast(img, tf.float32) * (1.0 / 255), tf.cast(label, tf.float32)


def read_many(filename_queue, records_per_read, layout=None):
    """Up to records_per_read examples per run of the reader op: img uint8 [k, 784], label [k, 10], k <= n.

    The fast pipeline's reader stage. Without a layout: TFRecordReader's
    read_up_to and one parse_example for the whole batch of records (label
    int64). With a RecordLayout (training_data's): FixedLengthRecordReader
    (the TF1 CIFAR-10 reader), which reads through a buffer, where
    TFRecordReader makes two unbuffered reads per record (bench/bench.py,
    README "Performance"). Each TFRecord frame (uint64 length, its CRC, the
    record, the record's CRC) is read as one fixed-length value of
    layout.length + RECORD_FRAME_BYTES bytes, and the CRCs are not checked
    here. That loses nothing: the layout comes from training_data, whose
    files scan_tfrecord read whole just before, checking every CRC and that
    each file ends exactly at its last record, so the frames line up.
    Without layout.template the record is cut out of its frame
    (tf.strings.substr) and parsed with parse_example; with it, every record
    is the writer's template (see template_offsets), so img is a slice of
    the frame's bytes and label the 10 one-hot bytes at their fixed offset
    (label uint8). The check holds for the files as they were at start-up: a
    file replaced by records of another layout while training runs is
    misread (TFRecordReader would read it unchecked, too).
    """
    if layout is None:
        _, serialized = tf.TFRecordReader().read_up_to(filename_queue, records_per_read)
        return image_and_label(tf.parse_example(serialized, features=FEATURES))
    # No CRC check in this reader: scan_tfrecord verified every CRC of these files before training.
    reader = tf.FixedLengthRecordReader(record_bytes=layout.length + RECORD_FRAME_BYTES)
    _, frames = reader.read_up_to(filename_queue, records_per_read)
    if not layout.template:
        serialized = tf.strings.substr(frames, RECORD_HEADER_BYTES, layout.length)
        return image_and_label(tf.parse_example(serialized, features=FEATURES))
    template = template_offsets(SCHEMA)
    image_at, label_at = RECORD_HEADER_BYTES + template.image_at, RECORD_HEADER_BYTES + template.label_at
    frame_bytes = tf.decode_raw(frames, tf.uint8)
    frame_bytes.set_shape([None, layout.length + RECORD_FRAME_BYTES])  # the reader's values all have this length
    return (frame_bytes[:, image_at:image_at + IMAGE_PIXELS],
            frame_bytes[:, label_at:label_at + NUM_CLASSES])


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


def mixed(batches, batch_size, mix, log=print, files=None):
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
    their records comes. files: mix.source's files when looked up already (training_data's mix_files).
    Raises DataError on missing or bad mix files.
    """
    files = files or tfrecord_files(mix.source)
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
