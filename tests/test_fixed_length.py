"""The fast pipeline's fixed-length reads give exactly the records of the files, or fall back.

mnistkit.records.read_many reads TFRecord frames with FixedLengthRecordReader
when every record has one length, and slices pixels and label out of the
bytes when every record is the writer's template; otherwise it parses, or
reads with TFRecordReader. Each case is built here on purpose: the writer's
records, the same records with the two features in the other map order (same
length, other layout), and a mix of lengths.
"""
import numpy as np
import pytest

import mnist_backward
import mnist_forward
import mnist_generateds
from mnistkit.records import RecordLayout
from tf_compat import tf
import mnistkit.inputs
import mnistkit.records
import mnistkit.training
from mnistkit.errors import DataError

N = 1000
LENGTH = 833  # the writer's records: 24 bytes before the pixels, 25 after


def numbered(i):
    """Pixels of record i: i in the first two bytes, then a pattern that differs per record."""
    return bytes([i >> 8, i & 255]) + bytes((i + k) % 256 for k in range(mnistkit.records.IMAGE_PIXELS - 2))


def writer_record(i, digit):
    return mnistkit.records.make_example(numbered(i), digit).SerializeToString(deterministic=True)


def swapped_record(i, digit):
    """The same tf.train.Example and length, with label before img_raw (as the course's writer may order them)."""
    feature = mnistkit.records.make_example(numbered(i), digit).features.feature
    parts = [tf.train.Features(feature={name: feature[name]}).SerializeToString() for name in ("label", "img_raw")]
    record = writer_record(i, digit)[:3] + parts[0] + parts[1]  # the Example's header: the same 830-byte Features
    assert len(record) == LENGTH and record != writer_record(i, digit)
    return record


def split_record(i, digit):
    """The same tf.train.Example in two Features messages that a parser merges: 835 bytes."""
    feature = mnistkit.records.make_example(numbered(i), digit).features.feature
    return b"".join(tf.train.Example(features=tf.train.Features(feature={name: feature[name]})).SerializeToString()
                    for name in ("img_raw", "label"))


def write(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return str(path)


LABELS = np.random.default_rng(3).integers(0, 10, N)
KINDS = {
    "writer": lambda i: writer_record(i, LABELS[i]),
    "swapped": lambda i: swapped_record(i, LABELS[i]),
    "mixed": lambda i: (split_record if i % 7 == 3 else writer_record)(i, LABELS[i]),
}
# name: (record kind of each shard, expected layout)
CASES = {
    "writer": (["writer"], RecordLayout(LENGTH, True)),
    "swapped": (["swapped"], RecordLayout(LENGTH, False)),
    "mixed lengths": (["mixed"], None),
    "3 writer shards": (["writer"] * 3, RecordLayout(LENGTH, True)),
    "shards, one swapped": (["writer", "swapped", "writer"], RecordLayout(LENGTH, False)),
    "shards, one mixed": (["writer", "writer", "mixed"], None),
}


def make_files(folder, kinds):
    """Write the records 0..N-1 round-robin into one file per kind; returns the paths."""
    count = len(kinds)
    return [write(folder / f"mnist_train-{s:05d}-of-{count:05d}.tfrecords",
                  [KINDS[kind](i) for i in range(s, N, count)]) for s, kind in enumerate(kinds)]


def read_epochs(paths, layout, epochs, records_per_read=97):
    """(record index, label) of every example read_tfRecord gives in `epochs` epochs, in order."""
    with tf.Graph().as_default() as graph:
        img, label = mnist_generateds.read_tfRecord(paths, num_epochs=epochs, shuffle=False,
                                                    records_per_read=records_per_read, layout=layout)
        ops = {op.type for op in graph.get_operations()}
        images, labels = [], []
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while True:
                    xs, ys = sess.run([img, label])
                    images.append(xs)
                    labels.append(ys)
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads)
    xs, ys = np.concatenate(images), np.concatenate(labels)
    index = xs[:, 0].astype(int) * 256 + xs[:, 1]
    assert all(xs[k].tobytes() == numbered(i) for k, i in enumerate(index))  # every pixel of every record
    assert ys.shape == (len(xs), 10) and ((ys == 0) | (ys == 1)).all()
    return index, ys.argmax(axis=1), ops


@pytest.mark.parametrize("case", CASES)
def test_fast_reads_give_every_record_once_per_epoch_with_its_label(tmp_path, case):
    kinds, expected = CASES[case]
    paths = make_files(tmp_path, kinds)
    data = mnistkit.records.training_data(str(tmp_path / "mnist_train-*"))  # the files, as a pattern
    assert data.files == paths and data.examples == N
    layout = data.layout
    assert layout == expected
    index, digits, ops = read_epochs(paths, layout, epochs=2)
    # Shards are read file after file: the records of shard s are s, s + n, s + 2n, ...
    one_epoch = np.concatenate([np.arange(s, N, len(paths)) for s in range(len(paths))])
    assert index.tolist() == one_epoch.tolist() * 2
    assert (digits == LABELS[index]).all()
    reader = "TFRecordReaderV2" if layout is None else "FixedLengthRecordReaderV2"
    assert reader in ops and ({"TFRecordReaderV2", "FixedLengthRecordReaderV2"} - {reader}).isdisjoint(ops)
    assert ("ParseExampleV2" in ops) == (layout is None or not layout.template)


def test_fixed_length_frames_parse_the_writers_records_too(tmp_path):
    # The parsing branch of read_many's fixed-length reads, on records the template branch would read: the same examples.
    paths = make_files(tmp_path, ["writer", "writer"])
    parsed = read_epochs(paths, RecordLayout(LENGTH, False), epochs=1, records_per_read=200)
    sliced = read_epochs(paths, RecordLayout(LENGTH, True), epochs=1, records_per_read=200)
    assert parsed[0].tolist() == sliced[0].tolist() and parsed[1].tolist() == sliced[1].tolist()
    assert "ParseExampleV2" in parsed[2] and "ParseExampleV2" not in sliced[2]


def test_the_scan_checks_every_record_against_the_template_and_the_label_bytes(tmp_path):
    records = [writer_record(i, LABELS[i]) for i in range(300)]
    assert mnistkit.records.scan_tfrecord(write(tmp_path / "good.tfrecords", records)) == (300, (LENGTH,), True)
    odd = records[:]
    odd[250] = swapped_record(250, LABELS[250])
    assert mnistkit.records.scan_tfrecord(write(tmp_path / "swapped.tfrecords", odd)) == (300, (LENGTH,), False)
    # Bytes of the template's shape whose label is not one-hot: the record's check refuses them.
    head, tail = mnist_generateds.record_template(0)
    for label in (bytes(10), b"\x02" + bytes(9), b"\x01\x01" + bytes(8)):
        odd[250] = head + numbered(250) + tail[:-10] + label
        assert len(odd[250]) == LENGTH
        with pytest.raises(DataError, match="label.tfrecords: record 250: label "):
            mnistkit.records.scan_tfrecord(write(tmp_path / "label.tfrecords", odd))


def test_the_offsets_are_those_of_the_writers_records():
    image_at, label_at, length, _ = mnistkit.records.template_offsets(mnistkit.records.SCHEMA)
    for digit in range(10):
        record = writer_record(517, digit)
        assert len(record) == length == LENGTH
        assert record[image_at:image_at + 784] == numbered(517)
        assert list(record[label_at:label_at + 10]) == [int(d == digit) for d in range(10)]


def test_training_reads_the_fast_layout_and_the_course_pipeline_keeps_its_reader(sample_workdir):
    data = mnistkit.records.training_data(str(sample_workdir / "data"))
    assert list(data.counts.values()) == [8000] and data.layout == RecordLayout(LENGTH, True)
    for pipeline, reader, parses in (("fast", "FixedLengthRecordReaderV2", False),
                                     ("course", "TFRecordReaderV2", True)):  # the course's parse_single_example
        with tf.Graph().as_default() as graph:
            settings = mnist_backward.settings_for(mnist_forward, steps=1, batch_size=200,
                                                   data_dir=str(sample_workdir / "data"), model_dir="model",
                                                   pipeline=pipeline)
            mnist_backward.build_graph(settings, data)
            ops = [op.type for op in graph.get_operations()]
        assert [op for op in ops if op.endswith("ReaderV2")] == [reader]
        assert ("ParseExampleV2" in ops) == parses
