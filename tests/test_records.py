"""The TFRecord files: schema, round trip, acquisition of the JPG layout."""
import gzip
import http.server
import os
import struct
import threading

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, run_script
import mnist_generateds
from tf_compat import tf
import mnistkit.idx
import mnistkit.records


def parse_all(path):
    """Every record of a TFRecord file as (img_raw bytes, label list), with the protobuf API."""
    records = []
    for serialized in tf.io.tf_record_iterator(path):
        feature = tf.train.Example.FromString(serialized).features.feature
        assert set(feature) == {"img_raw", "label"}
        records.append((feature["img_raw"].bytes_list.value[0], list(feature["label"].int64_list.value)))
    return records


def write_idx(folder, split, images, labels):
    """Write images uint8 [n, 28, 28] and labels [n] as gzip IDX files of one split."""
    image_name, label_name = mnistkit.idx.IDX_FILES[split]
    with gzip.open(os.path.join(folder, image_name), "wb") as f:
        f.write(struct.pack(">IIII", 2051, len(images), 28, 28) + images.tobytes())
    with gzip.open(os.path.join(folder, label_name), "wb") as f:
        f.write(struct.pack(">II", 2049, len(labels)) + labels.astype(np.uint8).tobytes())


def test_round_trip_bytes_equal_decoded_jpg_and_label_is_one_hot(sample_workdir):
    jpg_dir = sample_workdir / "mnist_data_jpg"
    lines = (jpg_dir / "mnist_test_jpg_2000.txt").read_text().splitlines()
    records = parse_all(str(sample_workdir / "data" / "mnist_test.tfrecords"))
    assert len(records) == len(lines) == 2000
    for line, (img_raw, label) in zip(lines[:300], records[:300]):
        name, digit = line.split()
        pixels = np.asarray(Image.open(jpg_dir / "mnist_test_jpg_2000" / name))
        assert pixels.shape == (28, 28) and pixels.dtype == np.uint8
        assert img_raw == pixels.tobytes()
        assert label == [1 if d == int(digit) else 0 for d in range(10)]


def test_the_writer_s_example_and_the_reader_s_features_are_the_package_s_schema(sample_workdir):
    # write_tfRecord's Example (the records written) and read_tfRecord's FixedLenFeatures are the
    # course's, in its scripts; the package's checks and fast readers use records.make_example and
    # records.FEATURES: the two must say the same.
    marker = mnistkit.records.MARKER
    for digit in range(10):
        head, tail = mnist_generateds.record_template(digit)
        assert head + marker + tail == mnistkit.records.make_example(marker, digit).SerializeToString(
            deterministic=True)
    with tf.Graph().as_default():
        mnist_generateds.read_tfRecord(str(sample_workdir / "data" / "mnist_test.tfrecords"))
        parse = next(op for op in tf.get_default_graph().get_operations() if op.type.startswith("ParseExample"))
        keys = next(tf.get_static_value(t) for t in parse.inputs if t.op.name.endswith("dense_keys"))
        keys = [k.decode() for k in keys]
        shapes = [tf.TensorShape(s).as_list() for s in parse.get_attr("dense_shapes")]
        dtypes = [tf.as_dtype(t) for t in parse.get_attr("Tdense")]
    features = {k: tf.FixedLenFeature(shape, dtype) for k, shape, dtype in zip(keys, shapes, dtypes)}
    assert features == dict(mnistkit.records.FEATURES)


def test_jpg_layout_is_close_to_the_idx_pixels(sample_workdir):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    records = parse_all(str(sample_workdir / "data" / "mnist_test.tfrecords"))
    decoded = np.stack([np.frombuffer(r[0], np.uint8) for r in records]).reshape(images.shape)
    assert np.abs(decoded.astype(int) - images).mean() < 1.0  # JPG at quality 100 loses almost nothing
    assert [r[1].index(1) for r in records] == labels.tolist()


def test_the_course_reader_reads_our_records_unchanged(sample_workdir):
    path = str(sample_workdir / "data" / "mnist_train.tfrecords")
    with tf.Graph().as_default():
        # The course's own read_tfRecord body, verbatim in API.
        filename_queue = tf.train.string_input_producer([path], shuffle=False)
        reader = tf.TFRecordReader()
        _, serialized_example = reader.read(filename_queue)
        features = tf.parse_single_example(serialized_example, features={
            "label": tf.FixedLenFeature([10], tf.int64),
            "img_raw": tf.FixedLenFeature([], tf.string)})
        img = tf.decode_raw(features["img_raw"], tf.uint8)
        img.set_shape([784])
        img = tf.cast(img, tf.float32) * (1. / 255)
        label = tf.cast(features["label"], tf.float32)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            first_img, first_label = sess.run([img, label])
            coord.request_stop()
            coord.join(threads)
    raw, one_hot = parse_all(path)[0]
    np.testing.assert_allclose(first_img, np.frombuffer(raw, np.uint8) / 255.0, rtol=1e-6)
    assert first_label.tolist() == one_hot


@pytest.mark.parametrize("pipeline", ["fast", "course"])
def test_training_batches_have_course_shapes_dtypes_and_ranges(sample_workdir, pipeline):
    with tf.Graph().as_default():
        img_batch, label_batch = mnist_generateds.get_tfrecord(
            200, isTrain=True, data_dir=str(sample_workdir / "data"), pipeline=pipeline)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            xs, ys = sess.run([img_batch, label_batch])
            coord.request_stop()
            coord.join(threads)
    assert xs.shape == (200, 784) and xs.dtype == np.float32
    assert ys.shape == (200, 10) and ys.dtype == np.float32
    assert xs.min() == 0.0 and xs.max() == 1.0
    assert (ys.sum(axis=1) == 1).all() and set(np.unique(ys)) == {0.0, 1.0}
    # Shuffling is checked where it can fail, on numbered records: test_speed_paths.py.


@pytest.mark.long
def test_generator_cli_uses_bundled_sample_and_a_rerun_finds_it(tmp_path):
    first = run_script("mnist_generateds.py", "--no-download", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "source: MNIST sample bundled" in first.stdout
    # The path is true from where the user stands (tmp_path), not relative to the repository.
    bundled = first.stdout.split("source: MNIST sample bundled in ", 1)[1].splitlines()[0]
    assert os.path.isabs(bundled) and os.path.samefile(bundled, os.path.join(ROOT, "data", "mnist_sample"))
    assert "wrote 8000 train records" in first.stdout and "wrote 2000 test records" in first.stdout
    jpg = tmp_path / "mnist_data_jpg"
    assert sorted(p.name for p in jpg.iterdir()) == [
        "SOURCE.txt", "mnist_test_jpg_2000", "mnist_test_jpg_2000.txt", "mnist_train_jpg_8000", "mnist_train_jpg_8000.txt"]
    assert len(list((jpg / "mnist_train_jpg_8000").iterdir())) == 8000
    assert first.stderr == ""  # TensorFlow's own log lines are silenced

    second = run_script("mnist_generateds.py", "--no-download", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "writing" not in second.stdout  # the layout was found, not rebuilt
    assert "source: MNIST sample bundled" in second.stdout


def test_generator_builds_layout_from_idx_dir_and_names_folders_by_real_count(tmp_path):
    rng = np.random.default_rng(0)
    idx = tmp_path / "idx"
    idx.mkdir()
    write_idx(idx, "train", rng.integers(0, 256, (300, 28, 28), dtype=np.uint8), np.arange(300) % 10)
    write_idx(idx, "test", rng.integers(0, 256, (70, 28, 28), dtype=np.uint8), np.arange(70) % 10)
    work = tmp_path / "work"
    work.mkdir()
    result = run_script("mnist_generateds.py", "--idx-dir", str(idx), cwd=work)
    assert result.returncode == 0, result.stderr
    assert f"source: IDX files in {idx}" in result.stdout
    assert (work / "mnist_data_jpg" / "mnist_train_jpg_300.txt").read_text().splitlines()[:2] == ["0_0.jpg 0", "1_1.jpg 1"]
    assert len(parse_all(str(work / "data" / "mnist_train.tfrecords"))) == 300
    assert [r[1].index(1) for r in parse_all(str(work / "data" / "mnist_test.tfrecords"))] == list(np.arange(70) % 10)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_folder(tmp_path):
    """A loopback HTTP server over a folder; yields (folder, base URL)."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: _Handler(*a, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_download_checks_sha256_and_keeps_no_bad_file(http_folder, tmp_path):
    folder, url = http_folder
    for name in mnistkit.idx.MNIST_SHA256:
        (folder / name).write_bytes(b"not the official file")
    dest = tmp_path / "dest"
    messages = []
    assert mnistkit.idx.download_mnist(str(dest), mirrors=(url,), log=messages.append) is False
    assert "does not match the official" in messages[0]
    assert list(dest.iterdir()) == []


def test_download_accepts_files_whose_sha256_matches(http_folder, tmp_path, monkeypatch):
    folder, url = http_folder
    hashes = {}
    for name in mnistkit.idx.MNIST_SHA256:
        (folder / name).write_bytes((mnistkit.idx.BUNDLED_DIR + "/" + name).encode())
        hashes[name] = mnistkit.idx.sha256_of(str(folder / name))
    monkeypatch.setattr(mnistkit.idx, "MNIST_SHA256", hashes)
    dest = tmp_path / "dest"
    assert mnistkit.idx.download_mnist(str(dest), mirrors=("http://127.0.0.1:9/", url), log=lambda m: None)
    assert sorted(p.name for p in dest.iterdir()) == sorted(hashes)


def test_real_mnist_files_in_shared_have_the_official_sha256():
    shared = os.path.join(ROOT, "..", "shared", "data", "mnist")
    if not os.path.isdir(shared):
        pytest.skip("../shared/data/mnist is not beside this repository")
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        assert mnistkit.idx.sha256_of(os.path.join(shared, name)) == mnistkit.idx.MNIST_SHA256[name]
    images, labels = mnistkit.idx.read_idx_split(shared, "test")
    assert images.shape == (10000, 28, 28) and labels[:5].tolist() == [7, 2, 1, 0, 4]


# not quick: over 2 s a run (make test runs it), so make test-quick keeps under a minute
def test_read_examples_gives_each_records_pixels_and_digit_in_order(tmp_path):
    # The not-a-digit reference and the board's mistakes read the test digits so; each label is its one-hot's 1
    rng = np.random.default_rng(5)
    pixels = rng.integers(0, 256, (12, mnistkit.records.IMAGE_PIXELS), dtype=np.uint8)
    digits = rng.integers(0, 10, 12)
    paths = [str(tmp_path / "a.tfrecords"), str(tmp_path / "b.tfrecords")]
    for path, rows in zip(paths, (slice(0, 5), slice(5, 12))):
        with tf.io.TFRecordWriter(path) as writer:
            for image, digit in zip(pixels[rows], digits[rows]):
                writer.write(mnistkit.records.make_example(image.tobytes(), int(digit)).SerializeToString())
    images, labels = mnistkit.records.read_examples(paths)
    assert images.dtype == np.uint8 and labels.dtype == np.int64
    np.testing.assert_array_equal(images, pixels)
    np.testing.assert_array_equal(labels, digits)
