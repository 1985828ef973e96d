"""One record schema: records.SCHEMA declares the Example once, and everything follows it.

A schema with one more feature (an int64 `source`) is declared by replacing
records.SCHEMA alone; the course's writer (write_tfRecord, record_template),
the queue-runner readers (read_tfRecord, read_many, read_fixed), tf.data's
parse (inputs.parse_batch) and the whole-file check (scan_tfrecord) must all
take it. And when a training file cannot take the fast pipeline's
fixed-length path, the trainer says so in one line naming the file.
"""
import numpy as np
import pytest
from PIL import Image

import mnist_backward
import mnist_generateds
from tf_compat import tf
import mnistkit.inputs
import mnistkit.records
from mnistkit.errors import DataError
from mnistkit.records import RecordFeature, RecordLayout

N = 12  # records in each file: a handful
DIGITS = [i % 10 for i in range(N)]
SOURCES = {  # the extra feature's value: the same in every record, or one per digit
    "constant": lambda pixels, digit: [7],
    "per digit": lambda pixels, digit: [100 + digit],
}


def pixels(i):
    """784 bytes of image i, the same as the PNG the layout holds."""
    return bytes((i * 31 + k) % 256 for k in range(mnistkit.records.IMAGE_PIXELS))


def write_layout(folder):
    """A course layout of N PNG images and its label file; returns (image folder, label file)."""
    images = folder / "images"
    images.mkdir()
    lines = []
    for i, digit in enumerate(DIGITS):
        Image.frombytes("L", (28, 28), pixels(i)).save(images / f"{i}.png")
        lines.append(f"{i}.png {digit}\n")
    (folder / "labels.txt").write_text("".join(lines))
    return str(images), str(folder / "labels.txt")


def write_tfrecord(path, layout):
    mnist_generateds.write_tfRecord(str(path), *layout, log=print, workers=1, quiet=True)
    return str(path)


def run(fetches, path):
    """Every value of the queue-runner reader fetches(path) gives in one epoch, file order: a list of sess.run results."""
    with tf.Graph().as_default():
        tensors = fetches(path)
        out = []
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while True:
                    out.append(sess.run(tensors))
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
                coord.join(threads)
    return out


def course_reader(path):
    return mnist_generateds.read_tfRecord(path, num_epochs=1, shuffle=False)


def read_many(layout):
    return lambda path: mnist_generateds.read_tfRecord(path, num_epochs=1, shuffle=False, records_per_read=5,
                                                       layout=layout)


def parsed_by_tfdata(path):
    """(parse_example's features, parse_batch's img and label) of every record, through tf.data."""
    with tf.Graph().as_default():
        serialized = tf.data.make_one_shot_iterator(tf.data.TFRecordDataset(path).batch(N)).get_next()
        fetches = (tf.parse_example(serialized, features=mnistkit.records.FEATURES),
                   mnistkit.inputs.parse_batch(serialized))
        with tf.Session() as sess:
            return sess.run(fetches)


@pytest.mark.parametrize("source", SOURCES)
def test_one_more_feature_declared_once_is_written_read_and_checked(tmp_path, monkeypatch, source):
    layout = write_layout(tmp_path)
    old_file = write_tfrecord(tmp_path / "old.tfrecords", layout)  # the course's schema
    extra = RecordFeature("source", "int64", (), SOURCES[source])
    monkeypatch.setattr(mnistkit.records, "SCHEMA", mnistkit.records.SCHEMA + (extra,))
    path = write_tfrecord(tmp_path / "mnist_train.tfrecords", layout)
    want_source = [SOURCES[source](None, digit)[0] for digit in DIGITS]
    want_label = np.eye(10, dtype=np.int64)[DIGITS]
    want_img = np.frombuffer(b"".join(pixels(i) for i in range(N)), np.uint8).reshape(N, 784)

    # The writer: each record is the Example of the declared features, as the package makes it.
    written = list(tf.io.tf_record_iterator(path))
    assert written == [mnistkit.records.make_example(pixels(i), digit).SerializeToString(deterministic=True)
                       for i, digit in enumerate(DIGITS)]
    assert [tf.train.Example.FromString(r).features.feature["source"].int64_list.value[:] for r in written] == \
        [[s] for s in want_source]
    head, tail = mnist_generateds.record_template(3)
    assert head + mnistkit.records.MARKER + tail == mnistkit.records.make_example(
        mnistkit.records.MARKER, 3).SerializeToString(deterministic=True)

    # The whole-file check takes the new schema, and refuses a file without the feature.
    count, lengths, _ = mnistkit.records.scan_tfrecord(path)
    assert count == N and len(lengths) == 1
    with pytest.raises(DataError) as refused:
        mnistkit.records.scan_tfrecord(old_file)
    assert str(refused.value) == (f"{old_file}: record 0: features ['img_raw', 'label'], "
                                  "expected ['img_raw', 'label', 'source']")

    # tf.data: parse_example with FEATURES gives the extra feature back; parse_batch the images and labels.
    features, (img, label) = parsed_by_tfdata(path)
    assert features["source"].tolist() == want_source
    np.testing.assert_array_equal(np.rint(img * 255), want_img)  # float32 in [0, 1], to_float's
    np.testing.assert_array_equal(label, want_label)

    # The queue-runner readers: the course's one record per run, many per run, fixed-length frames.
    layout_of_file = mnistkit.records.training_data(str(tmp_path)).layout
    template = source == "constant"  # a feature that changes with the digit moves the label's bytes off the template
    assert layout_of_file == RecordLayout(lengths[0], template)
    assert (mnistkit.records.template_offsets(mnistkit.records.SCHEMA) is not None) == template
    one_by_one = run(course_reader, path)
    np.testing.assert_array_equal([x for x, _ in one_by_one], want_img)
    np.testing.assert_array_equal([y for _, y in one_by_one], want_label)
    for reader_layout in (None, layout_of_file):
        batches = run(read_many(reader_layout), path)
        np.testing.assert_array_equal(np.concatenate([x for x, _ in batches]), want_img)
        np.testing.assert_array_equal(np.concatenate([y for _, y in batches]), want_label)

    # Every parsing reader takes the declared features: a file without `source` fails in each of them.
    for read in (parsed_by_tfdata, lambda p: run(course_reader, p), lambda p: run(read_many(None), p)):
        with pytest.raises(tf.errors.InvalidArgumentError, match="source"):
            read(old_file)


def test_a_feature_of_another_kind_is_refused_where_an_example_is_made(tmp_path, monkeypatch):
    assert {feature.dtype for feature in mnistkit.records.SCHEMA} <= set(mnistkit.records.LIST_KINDS)
    path = write_records(tmp_path / "mnist_train.tfrecords", writer_record)
    monkeypatch.setattr(mnistkit.records, "SCHEMA", mnistkit.records.SCHEMA + (
        RecordFeature("weight", "float32", (), lambda pixels, digit: [1.0]),))
    message = "RecordFeature 'weight': dtype 'float32'; use one of \\['int64', 'string'\\]"
    with pytest.raises(ValueError, match=message):
        mnistkit.records.make_example(pixels(0), 0)
    with pytest.raises(ValueError, match=message):  # the whole-file check, before it reads a record
        mnistkit.records.scan_tfrecord(path)


# ---------------------------------------------------------------- the fast path: one line when a file cannot take it

def split_record(i, digit):
    """Record i's Example in two Features messages that a parser merges: 2 bytes longer than the writer's."""
    feature = mnistkit.records.make_example(pixels(i), digit).features.feature
    return b"".join(tf.train.Example(features=tf.train.Features(feature={name: feature[name]})).SerializeToString()
                    for name in ("img_raw", "label"))


def swapped_record(i, digit):
    """Record i with label before img_raw: the writer's length, another layout."""
    feature = mnistkit.records.make_example(pixels(i), digit).features.feature
    writer = mnistkit.records.make_example(pixels(i), digit).SerializeToString(deterministic=True)
    parts = [tf.train.Features(feature={name: feature[name]}).SerializeToString() for name in ("label", "img_raw")]
    return writer[:3] + parts[0] + parts[1]


def writer_record(i, digit):
    return mnistkit.records.make_example(pixels(i), digit).SerializeToString(deterministic=True)


def write_records(path, make):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i, digit in enumerate(DIGITS):
            writer.write(make(i, digit))
    return str(path)


def notes(data_dir, pipeline):
    lines = []
    mnistkit.records.training_data(str(data_dir), pipeline=pipeline, log=lines.append)
    return lines


def test_the_fast_pipeline_names_the_file_it_cannot_read_at_fixed_offsets(tmp_path):
    writer = write_records(tmp_path / "mnist_train-00000-of-00002.tfrecords", writer_record)
    mixed = write_records(tmp_path / "mnist_train-00001-of-00002.tfrecords",
                          lambda i, digit: (split_record if i == 5 else writer_record)(i, digit))
    assert notes(tmp_path, "fast") == [f"note: {mixed}: its records have 2 different lengths (833 to 835 bytes); "
                                       "--pipeline fast reads the training files with TFRecordReader instead of "
                                       "fixed-length frames"]
    assert notes(tmp_path, "course") == notes(tmp_path, "tfdata") == []  # they parse every record anyway
    write_records(mixed, split_record)  # one length per file, two lengths in all
    assert notes(tmp_path, "fast") == [f"note: {mixed}: its records are 835 bytes long, {writer}'s 833; "
                                       "--pipeline fast reads the training files with TFRecordReader instead of "
                                       "fixed-length frames"]
    write_records(mixed, swapped_record)
    assert notes(tmp_path, "fast") == [f"note: {mixed}: its records are not laid out as mnist_generateds.py writes "
                                       "them (another feature order or schema); --pipeline fast parses each "
                                       "fixed-length record instead of slicing pixels and label at fixed offsets"]
    write_records(mixed, writer_record)
    assert notes(tmp_path, "fast") == []


def test_the_trainer_says_once_which_reader_the_fast_pipeline_takes(tmp_path):
    path = write_records(tmp_path / "mnist_train.tfrecords",
                         lambda i, digit: (split_record if i == 5 else writer_record)(i, digit))
    log = []
    mnist_backward.backward(steps=1, batch_size=4, data_dir=str(tmp_path), model_dir=str(tmp_path / "model"),
                            log=log.append, quiet=True)
    assert [line for line in log if line.startswith("note: ")] == [
        f"note: {path}: its records have 2 different lengths (833 to 835 bytes); --pipeline fast reads the "
        "training files with TFRecordReader instead of fixed-length frames"]
