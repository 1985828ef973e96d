"""Course step 1: JPG images + label files -> TFRecord files; and the course's reader of them.

Run `python mnist_generateds.py` first. It reads, per split, an image folder
and a label file whose lines are `<file name> <digit>` (the course layout,
e.g. mnist_data_jpg/mnist_train_jpg_60000/ and mnist_train_jpg_60000.txt),
and writes one tf.train.Example per image, in label-file order, to
data/mnist_train.tfrecords and data/mnist_test.tfrecords. When the JPG layout
is missing it is built first from IDX files (see mnistkit/idx.py). With
--shards N the training records go round-robin into N files instead,
data/mnist_train-00000-of-0000N.tfrecords ..., one or more per worker of a
distributed training (see mnist_cluster.py).

Reading order, as in the course: write_tfRecord() with the tf.train.Example
of each record (record_template), read_tfRecord() with its FixedLenFeatures,
generate_tfRecord() writing both splits, and get_tfRecord() (also named
get_tfrecord), the shuffled batches mnist_backward.py trains on. The
Example's features (img_raw, label) are declared once, in
mnistkit/records.py's SCHEMA: record_template and read_tfRecord build the
course's Feature and FixedLenFeature calls from it. The writing machinery
(label files, decoding processes, temporary files) is in mnistkit/writer.py;
the checks of a written file and the many-records-per-op queue-runner stages
are in mnistkit/records.py.
"""

if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401  (importing it makes Ctrl-C end the process in one line)

import contextlib
import os
import sys

from tf_compat import tf
from mnistkit import cli, idx, records, writer
from mnistkit.errors import DataError

# Course paths (defaults; all relative to the current directory).
jpg_path = "./mnist_data_jpg"
image_train_path = "./mnist_data_jpg/mnist_train_jpg_60000/"
label_train_path = "./mnist_data_jpg/mnist_train_jpg_60000.txt"
image_test_path = "./mnist_data_jpg/mnist_test_jpg_10000/"
label_test_path = "./mnist_data_jpg/mnist_test_jpg_10000.txt"
data_path = records.DATA_DIR  # "./data"
tfRecord_train = "mnist_train.tfrecords"  # records.TRAIN_FILE; the trainers, the evaluators and the exporter read these
tfRecord_test = "mnist_test.tfrecords"  # records.TEST_FILE


# ---------------------------------------------------------------- writing

def write_tfRecord(tfRecordName, image_path, label_path, log=print, workers=None, quiet=False, num_shards=1):
    """Write one split's TFRecord file(s) from its image folder and label file; returns the record count.

    One tf.train.Example per label-file line (record_template), the same
    Examples as the course's one-image-at-a-time loop writes, serialized
    deterministically. num_shards 1 writes tfRecordName in line order; n > 1
    writes the n files records.output_files(tfRecordName, n) instead,
    record k going to shard k % n. Images are decoded by `workers`
    processes (default: writer.default_workers()). Nothing is renamed into
    place until every record is written (writer.TemporaryOutputs), so an
    interrupted run never leaves a truncated file in place of a good one.
    A progress bar counts the images on a terminal. Raises DataError naming
    the file (and line) on bad input or a failed write, or when there are
    fewer records than shards.
    """
    entries = writer.read_label_file(label_path)  # [(file name, digit, line number)]
    if num_shards > len(entries):
        raise DataError(f"{label_path}: {len(entries)} records cannot fill {num_shards} shards; use fewer --shards")
    writer.check_image_folder(image_path, label_path, entries, log)
    workers = writer.pool_size(workers, len(entries))
    templates = [record_template(digit) for digit in range(records.NUM_CLASSES)]
    converted, k = [], 0
    # The pool starts before the writers open, so that no decoding process holds a writer's buffer.
    with writer.TemporaryOutputs(tfRecordName, num_shards) as tmps, writer.decoding_pool(workers) as pool, \
            contextlib.ExitStack() as stack:
        tf_writers = [stack.enter_context(tf.io.TFRecordWriter(tmp)) for tmp in tmps]
        bar = stack.enter_context(cli.progress_bar(quiet, total=len(entries), unit="img",
                                                     desc=os.path.basename(tfRecordName)))
        # The course's img.tobytes() and Example per image happen in writer.encode_images, in `workers`
        # processes: each image's 784 bytes go between its digit's template head and tail.
        for serialized, notes in writer.encoded_chunks(pool, workers, image_path, entries, templates, label_path):
            converted += notes
            for example in serialized:
                tf_writers[k % num_shards].write(example)
                k += 1
            bar.update(len(serialized))
    if converted:
        name, mode = converted[0]
        log(f"warning: {len(converted)} images were not 8-bit grayscale and were converted (e.g. {name!r}, mode {mode})")
    return len(entries)


def record_template(digit):
    """(head, tail): the bytes around img_raw in the serialized tf.train.Example of an image of `digit`.

    The course's Example, one feature per records.SCHEMA entry: `img_raw`,
    the image's 784 uint8 bytes (BytesList), and `label`, the digit one-hot
    (Int64List of 10). Built here once per digit around a marker image
    (records.MARKER): protobuf writes a bytes field as tag, length, content,
    so for every 784-byte image head + img_raw + tail is its Example's
    serialization, which the writer puts together without a protobuf per
    image. Deterministic serialization writes the feature map in key order;
    the course's plain SerializeToString() picks a map order at random per
    process with current protobuf, so its files differ from run to run.
    """
    values = {feature.name: feature.value(records.MARKER, digit) for feature in records.SCHEMA}
    example = tf.train.Example(features=tf.train.Features(feature={
        feature.name: tf.train.Feature(bytes_list=tf.train.BytesList(value=values[feature.name]))  # img_raw
        if feature.dtype == "string" else
        tf.train.Feature(int64_list=tf.train.Int64List(value=values[feature.name]))  # label: the digit one-hot
        for feature in records.SCHEMA}))
    return records.split_at_marker(example.SerializeToString(deterministic=True))


# ---------------------------------------------------------------- reading, and the course's two steps

def read_tfRecord(tfRecord_path, num_epochs=None, shuffle=True, records_per_read=None, layout=None):
    """Course reader stage: filename queue -> TFRecordReader -> parse -> decode.

    tfRecord_path: one file (str), or a list of files (shards) that the
    filename queue cycles through (in a new random order each epoch when
    `shuffle`). Source: the course's read_tfRecord on tf.compat.v1's
    string_input_producer, TFRecordReader and parse_single_example.
    Returns (img, label):
      records_per_read None (the course): one example per run,
        img uint8 [784], label int64 [10];
      records_per_read n: up to n examples per run (records.read_many, with
        `layout` a records.RecordLayout for fixed-length reads),
        img uint8 [k, 784], label [k, 10], k <= n.
    num_epochs None loops forever; 1 reads every record once (needs local
    variables initialised). Converting to float happens after batching,
    where it is cheaper (records.to_float).
    """
    paths = [tfRecord_path] if isinstance(tfRecord_path, str) else list(tfRecord_path)
    filename_queue = tf.train.string_input_producer(paths, num_epochs=num_epochs, shuffle=shuffle)
    if records_per_read is not None:
        return records.read_many(filename_queue, records_per_read, layout)
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.parse_single_example(serialized_example, features={  # the features records.SCHEMA declares
        feature.name: tf.FixedLenFeature(feature.shape, tf.string) if feature.dtype == "string"  # img_raw: 784 bytes
        else tf.FixedLenFeature(feature.shape, tf.int64)  # label: one-hot, 10 classes
        for feature in records.SCHEMA})
    img = tf.decode_raw(features["img_raw"], tf.uint8)
    img.set_shape([records.IMAGE_PIXELS])
    # The course casts both to float32 here; get_tfRecord casts the batch instead, once per batch, and the
    # shuffle queue holds bytes: a quarter of the memory.
    return img, features["label"]


def generate_tfRecord(args=None, log=print):
    """Write both splits' TFRecord files into args.data_dir (default: build_parser()'s defaults).

    The JPG layout comes from course_splits. With args.shards N > 1 the
    training split is written as N shards; the test split is always one
    file, read whole by mnist_test.py. Both splits appear together or not at
    all, and files of the other form (the single training file, or shards of
    another count) are removed once the new ones are in place
    (writer.Staging). Raises DataError as write_tfRecord does.
    """
    args = build_parser().parse_args([]) if args is None else args
    with writer.Staging(args.data_dir, log) as staging:  # data_dir locked: one generator writes there at a time
        splits, source = course_splits(args, log)
        log(f"source: {source}")
        images, labels = splits["train"]
        count = write_tfRecord(staging.path(tfRecord_train), images, labels, log=log, workers=args.workers,
                               quiet=args.quiet, num_shards=args.shards)
        staging.add("train", tfRecord_train, count, args.shards)
        images, labels = splits["test"]
        count = write_tfRecord(staging.path(tfRecord_test), images, labels, log=log, workers=args.workers,
                               quiet=args.quiet)  # one file: evaluation reads the test split whole
        staging.add("test", tfRecord_test, count, 1)


def course_splits(args, log=print):
    """({"train": (image folder, label file), "test": (...)}, where they came from) for generate_tfRecord.

    The four --train/--test flags when given (all four); else the course's
    own JPG files in --jpg-dir (idx.course_layout) when they are there;
    else the layout idx.build_jpg_layout finds or builds (from --idx-dir, a
    download, or the bundled sample). Raises DataError when only some of
    the four flags are given, no layout can be had, or --jpg-dir is not
    there but a folder named close to it holds one (idx.mistyped).
    """
    splits = {"train": (args.train_images, args.train_labels), "test": (args.test_images, args.test_labels)}
    if any(p is not None for pair in splits.values() for p in pair):
        missing = [f"--{split}-{kind}" for split, pair in splits.items() for kind, p in zip(("images", "labels"), pair)
                   if p is None]
        if missing:
            raise DataError(f"give all four of --train-images, --train-labels, --test-images and --test-labels "
                            f"(missing: {', '.join(missing)})")
        return splits, given_source(splits)
    typo = idx.mistyped(args.jpg_dir)
    if typo is not None:
        raise typo
    course = idx.course_layout(args.jpg_dir) if args.idx_dir is None else None
    if course is not None:
        return course, "the course's JPG files in " + args.jpg_dir
    layout = idx.build_jpg_layout(args.jpg_dir, args.idx_dir, download=not args.no_download, log=log)
    return {split: layout[split] for split in ("train", "test")}, layout["source"]


def given_source(splits):
    """What the source line says of the folders the four --train/--test flags gave (splits: {"train": (image folder,
    label file), "test": ...}): their names, so that it reads the same wherever it is shown (a learn's page, which
    has no command line): `my_digits (labels my_digits.txt) for train and test`, else each split's."""
    if splits["train"] == splits["test"]:
        return "{} (labels {}) for train and test".format(*splits["train"])
    return ", ".join("{} (labels {}) for {}".format(*splits[split], split) for split in ("train", "test"))


def get_tfRecord(num, isTrain=True, data_dir=data_path, pipeline="fast", files=None, layout=None, once=False):
    """Shuffled batches from data_dir's TFRecord file(s) (course step); also named get_tfrecord, as the course calls it.

    data_dir: a folder, file or pattern (see records.tfrecord_files); `files`,
    a list of TFRecord files, is read instead when given (a distributed
    worker's own shards). Returns img_batch float32 [num, 784] in [0, 1] and
    label_batch float32 [num, 10] one-hot, drawn by
    tf.compat.v1.train.shuffle_batch with 2 threads, capacity 1000 and
    min_after_dequeue 700 examples (capacity is raised to
    min_after_dequeue + num when num is larger, so a big batch cannot
    deadlock the queue). pipeline "course" parses one example per reader
    op, as the course did; "fast" reads and parses records.RECORDS_PER_READ
    records per op and enqueues them together (enqueue_many), which keeps
    the same queue semantics in examples. layout: the files'
    records.RecordLayout, for the fast pipeline's fixed-length reads; None
    reads with TFRecordReader. The course pipeline ignores it.

    once (evaluation): every record exactly once instead, in file order,
    in batches of up to num (tf.train.batch, allow_smaller_final_batch:
    img_batch [k, 784], label_batch [k, 10], k <= num), num records per
    read; after the last batch the queue raises tf.errors.OutOfRangeError.
    Needs tf.local_variables_initializer() (the epoch counter).
    """
    path = files or records.tfrecord_files(data_dir, isTrain, tfRecord_train if isTrain else tfRecord_test)
    if isinstance(pipeline, str):  # a --pipeline word, as the course's calls and mnist_test.py give it
        pipeline = records.pipeline_of(pipeline)
    if once:  # differs from the course's one shuffle_batch draw, which repeats some records and misses others
        img, label = read_tfRecord(path, num_epochs=1, shuffle=False, records_per_read=num)
        img_batch, label_batch = tf.train.batch([img, label], batch_size=num, num_threads=1, capacity=2 * num,
                                                enqueue_many=True, allow_smaller_final_batch=True)
        return records.to_float(img_batch, label_batch)
    many = pipeline.records_per_read is not None
    img, label = read_tfRecord(path, records_per_read=pipeline.records_per_read, layout=layout if many else None)
    img_batch, label_batch = tf.train.shuffle_batch(
        [img, label], batch_size=num,
        num_threads=records.NUM_THREADS,  # 2
        capacity=max(records.CAPACITY, records.MIN_AFTER_DEQUEUE + num),  # 1000, or room for one batch above 700
        min_after_dequeue=records.MIN_AFTER_DEQUEUE,  # 700
        enqueue_many=many)
    return records.to_float(img_batch, label_batch)


get_tfrecord = get_tfRecord  # the course's generateds spells it get_tfRecord; its backward and test, get_tfrecord


# ---------------------------------------------------------------- command line

# Each option of the command line once (cli.Options, as mnist_backward.OPTIONS): flag, default, help and bounds.
Option = cli.ScriptOption
OPTIONS = cli.Options([
    Option("train_images", None, f"training image folder (course: {image_train_path})", type=cli.plain_path),
    Option("train_labels", None, f"training label file (course: {label_train_path})", type=cli.plain_path),
    Option("test_images", None, f"test image folder (course: {image_test_path})", type=cli.plain_path),
    Option("test_labels", None, f"test label file (course: {label_test_path})", type=cli.plain_path),
    Option("jpg_dir", jpg_path, "where the JPG layout is found or built", type=cli.plain_path),
    Option("idx_dir", None, "build the JPG layout from the 4 MNIST-format IDX files in this folder", type=cli.plain_path),
    Option("no_download", False, "do not try to download the official MNIST"),
    Option("data_dir", data_path, "output folder for the TFRecord files", type=cli.path),
    Option("workers", None, "processes decoding images (1: decode in this process, one image at a time; none "
           f"given: one per CPU this process may run on, at most {writer.MAX_WORKERS}, and 1 on 2 CPUs or fewer)",
           type=int, minimum=1),
    Option("shards", 1, "split the training records round-robin into this many files "
           "mnist_train-00000-of-0000N.tfrecords ... (for distributed training)", minimum=1),
    Option("quiet", False, "no progress bar (there is none when output is not a terminal)"),
])


def build_parser():
    """The command line's argparse parser (OPTIONS' flags, --verbose); building it imports no TensorFlow (fast
    --help and flag errors)."""
    parser = cli.new_parser(__doc__)
    OPTIONS.add_to(parser, sys.modules[__name__])
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines")
    return parser


def main(argv=None):
    """The command line of mnist_generateds.py: generate_tfRecord() with the flags' values; returns the exit status."""
    parser = build_parser()
    args = OPTIONS.check(parser.parse_args(cli.arguments(argv)), sys.modules[__name__], parser.error)
    status = cli.exit_status(lambda: generate_tfRecord(args), interrupted="stopped; no TFRecord file written")
    if status == 0:
        print("write tfrecord successful")
    return status


if __name__ == "__main__":
    sys.exit(main())
