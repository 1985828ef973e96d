"""The fast paths give what the course's paths give: the same records, the same batches' content.

Speed itself is measured by bench/bench.py, never asserted here.
"""
import io
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, wait_limit
import mnist_generateds
from mnistkit.errors import DataError
from tf_compat import tf

sys.path.insert(0, os.path.join(ROOT, "bench"))
import course_baseline  # noqa: E402
import mnistkit.idx
import mnistkit.images
import mnistkit.writer
import mnistkit.records


def records(path):
    return list(tf.io.tf_record_iterator(str(path)))


def test_records_equal_the_course_loops_record_for_record(sample_workdir, tmp_path, monkeypatch):
    jpg = sample_workdir / "mnist_data_jpg"
    images, labels = str(jpg / "mnist_test_jpg_2000") + os.sep, str(jpg / "mnist_test_jpg_2000.txt")
    assert course_baseline.write_tfRecord(str(tmp_path / "course.tfrecords"), images, labels) == 2000
    theirs = records(tmp_path / "course.tfrecords")
    # Deterministic re-serialization only fixes the order of the two features in the map,
    # which the course's SerializeToString() picks at random per process.
    expected = [tf.train.Example.FromString(r).SerializeToString(deterministic=True) for r in theirs]
    assert len(set(expected)) > 1990  # real, different images (a few digits may repeat)

    monkeypatch.setattr(mnistkit.writer, "CHUNK_SIZE", 7)  # many chunks and a short last one
    for workers in (1, 2):
        out = tmp_path / f"ours{workers}.tfrecords"
        assert mnist_generateds.write_tfRecord(str(out), images, labels, log=print, workers=workers) == 2000
        assert records(out) == expected
    assert sorted(os.listdir(tmp_path)) == ["course.tfrecords", "ours1.tfrecords", "ours2.tfrecords"]
    # The CLI in another process (default workers, default chunks) wrote the very same bytes.
    assert (sample_workdir / "data" / "mnist_test.tfrecords").read_bytes() == (tmp_path / "ours2.tfrecords").read_bytes()


def sample_images():
    """Real digits and high-frequency noise, uint8 [n, 28, 28]."""
    digits, _ = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    noise = np.random.default_rng(0).integers(0, 256, (10, 28, 28), dtype=np.uint8)
    return np.concatenate([digits[:30], noise])


def jpeg_bytes(pixels, mode="L", size=None, **options):
    img = Image.fromarray(pixels, mode="L").convert(mode)
    if size:
        img = img.resize(size)
    buffer = io.BytesIO()
    img.save(buffer, "JPEG", **options)
    return buffer.getvalue()


@pytest.mark.parametrize("options", [
    dict(quality=100), dict(quality=75), dict(quality=30, optimize=True), dict(quality=90, progressive=True)])
def test_fast_jpeg_decoder_gives_pillows_pixels(options):
    for pixels in sample_images():
        data = jpeg_bytes(pixels, **options)
        fast = mnistkit.images.decode_gray_jpeg(data)
        assert fast is not None
        assert fast == Image.open(io.BytesIO(data)).tobytes()


def test_fast_jpeg_decoder_leaves_other_files_to_pillow():
    pixels = sample_images()[0]
    png = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(png, "PNG")
    gray = jpeg_bytes(pixels)
    for data in (jpeg_bytes(pixels, mode="RGB"), jpeg_bytes(pixels, size=(30, 28)), png.getvalue(),
                 gray[:len(gray) // 2], b""):
        assert mnistkit.images.decode_gray_jpeg(data) is None


def write_layout(folder, files):
    """An image folder and label file from {name: (bytes, digit)}; returns (image folder, label file)."""
    images = folder / "images"
    images.mkdir()
    for name, (data, _) in files.items():
        (images / name).write_bytes(data)
    label_file = folder / "labels.txt"
    label_file.write_text("".join(f"{name} {digit}\n" for name, (_, digit) in files.items()))
    return str(images) + os.sep, str(label_file)


def test_workers_convert_other_images_as_pillow_does(tmp_path, monkeypatch):
    pixels = sample_images()
    png16 = io.BytesIO()
    Image.fromarray(pixels[2].astype(np.uint16) * 257).save(png16, "PNG")
    rgb_jpeg = jpeg_bytes(pixels[1], mode="RGB")
    files = {"a.jpg": (jpeg_bytes(pixels[0]), 7), "b.jpg": (rgb_jpeg, 2), "c.png": (png16.getvalue(), 1),
             "d.jpg": (jpeg_bytes(pixels[3], progressive=True), 0), "e.jpg": (jpeg_bytes(pixels[4]), 9)}
    images, labels = write_layout(tmp_path, files)
    monkeypatch.setattr(mnistkit.writer, "CHUNK_SIZE", 2)
    messages = []
    out = tmp_path / "out.tfrecords"
    assert mnist_generateds.write_tfRecord(str(out), images, labels, log=messages.append, workers=2) == 5
    assert messages == ["warning: 2 images were not 8-bit grayscale and were converted (e.g. 'b.jpg', mode RGB)"]
    expected_pixels = [Image.open(io.BytesIO(files["a.jpg"][0])).tobytes(),
                       Image.open(io.BytesIO(rgb_jpeg)).convert("L").tobytes(),
                       pixels[2].tobytes(),  # 16-bit: scaled by 255/65535 (mnistkit.images.to_8bit)
                       Image.open(io.BytesIO(files["d.jpg"][0])).tobytes(),
                       Image.open(io.BytesIO(files["e.jpg"][0])).tobytes()]
    digits = [digit for _, digit in files.values()]
    assert records(out) == [mnistkit.records.make_example(p, d).SerializeToString(deterministic=True)
                            for p, d in zip(expected_pixels, digits)]


def test_a_bad_image_in_a_worker_stops_the_write_and_leaves_nothing(tmp_path, monkeypatch):
    pixels = sample_images()
    files = {f"{i}.jpg": (jpeg_bytes(pixels[i]), i % 10) for i in range(30)}
    files["17.jpg"] = (b"not an image at all", 7)
    files["25.jpg"] = (b"nor this", 5)
    images, labels = write_layout(tmp_path, files)
    monkeypatch.setattr(mnistkit.writer, "CHUNK_SIZE", 4)
    out_dir = tmp_path / "out"
    with pytest.raises(DataError) as error:
        mnist_generateds.write_tfRecord(str(out_dir / "x.tfrecords"), images, labels, log=print, workers=2)
    assert str(error.value) == f"{images}17.jpg: not an image file"  # the first bad one in label order
    assert list(out_dir.iterdir()) == []


N_RECORDS = 4000


@pytest.fixture(scope="module")
def numbered_records(tmp_path_factory):
    """A TFRecord file whose record i has i in its first two pixels, and random labels; yields (data dir, labels)."""
    data = tmp_path_factory.mktemp("numbered")
    labels = np.random.default_rng(1).integers(0, 10, N_RECORDS)
    with tf.io.TFRecordWriter(str(data / mnist_generateds.tfRecord_train)) as writer:
        for i, digit in enumerate(labels):
            raw = bytes([i >> 8, i & 255]) + bytes(mnistkit.records.IMAGE_PIXELS - 2)
            writer.write(mnistkit.records.make_example(raw, int(digit)).SerializeToString(deterministic=True))
    return str(data), labels


def draw(data_dir, pipeline, examples, layout=None):
    """Record indices and labels of the first `examples` examples from get_tfrecord's batches of 200."""
    with tf.Graph().as_default():
        img_batch, label_batch = mnist_generateds.get_tfrecord(200, isTrain=True, data_dir=data_dir, pipeline=pipeline,
                                                               layout=layout)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            batches = [sess.run([img_batch, label_batch]) for _ in range(examples // 200)]
            coord.request_stop()
            coord.join(threads)
    xs = np.concatenate([b[0] for b in batches])
    ys = np.concatenate([b[1] for b in batches])
    high, low = np.rint(xs[:, 0] * 255).astype(int), np.rint(xs[:, 1] * 255).astype(int)
    assert (xs[:, 2:] == 0).all()
    return high * 256 + low, ys


def test_fast_and_course_batches_have_the_same_content_and_shuffle_at_least_as_well(numbered_records):
    data_dir, labels = numbered_records
    count, _, _ = mnistkit.records.scan_tfrecord(os.path.join(data_dir, mnist_generateds.tfRecord_train))
    template = mnistkit.records.training_data(data_dir).layout
    assert count == N_RECORDS and template == (833, True)
    # The fast pipeline with each of its readers: TFRecordReader, fixed-length frames parsed, or sliced.
    readers = {"course": ("course", None), "fast": ("fast", None),
               "fast, fixed-length parsed": ("fast", template._replace(template=False)),
               "fast, fixed-length sliced": ("fast", template)}
    epochs = 5
    displacement = {}
    for name, (pipeline, layout) in readers.items():
        index, ys = draw(data_dir, pipeline, epochs * N_RECORDS, layout)
        assert (ys.sum(axis=1) == 1).all()
        assert (ys.argmax(axis=1) == labels[index]).all()  # every example carries its own record's label
        counts = np.bincount(index, minlength=N_RECORDS)
        # Five epochs: each record five times, give or take the examples still in the queue
        # at either end (a random shuffle queue can keep an example for a long while).
        assert counts.min() >= 3 and counts.max() <= 7
        assert np.mean(counts == epochs) > 0.8
        np.testing.assert_allclose(np.bincount(ys.argmax(axis=1), minlength=10) / len(ys),
                                   np.bincount(labels, minlength=10) / N_RECORDS, atol=0.01)
        # How far each example lands from its place in the file's order: the shuffle's reach.
        order = np.arange(len(index))
        stream_position = index + N_RECORDS * np.rint((order - index) / N_RECORDS)
        displacement[name] = np.abs(stream_position - order).mean()
        assert np.mean(np.diff(index) == 1) < 0.01  # neighbours in a batch are not neighbours in the file
    assert displacement["course"] > 300  # min_after_dequeue 700: examples wander hundreds of places
    assert min(displacement.values()) >= 0.9 * displacement["course"]


@pytest.mark.long
def test_benchmark_harness_runs_on_small_settings(sample_workdir, tmp_path):
    import bench
    data_dir = str(sample_workdir / "data")
    pipe = bench.bench_pipeline(data_dir, repeats=1, seconds=0.2)
    rates, cpu = bench.bench_training(data_dir, repeats=1, every=20, intervals=1, train_repeats=2, work=str(tmp_path))
    assert set(pipe) == {"course", "project"} and all(len(v) == 1 and v[0] > 0 for v in pipe.values())
    assert list(rates) == list(cpu) == ["course", "project", "in-memory", "tf.data", "Keras"]
    # The course's slow loop runs in the first `repeats` rounds only; the others in every round.
    assert [len(rates[k]) for k in rates] == [len(cpu[k]) for k in cpu] == [1, 2, 2, 2, 2]
    assert all(v > 0 for values in [*rates.values(), *cpu.values()] for v in values)
    assert list(tmp_path.iterdir()) == []  # the arrays handed to the Keras process are gone
    test_path, train_path = (str(sample_workdir / "data" / name)
                             for name in (mnist_generateds.tfRecord_test, mnist_generateds.tfRecord_train))
    assert bench.same_examples(test_path, test_path) == (2000, 2000)
    assert bench.same_examples(train_path, test_path) == (0, 8000)


def test_benchmark_table_gives_ratios_verdicts_and_the_spread_of_single_runs():
    import bench
    mb = 1 << 20
    gen = {"rates": {"course": [9000.0], "project": [36000.0]}, "cpu": {"course": [1e-4], "project": [2.5e-5]},
           "peaks": {"course": [478 * mb], "project": [520 * mb]}, "base": 474 * mb, "identical": (60000, 60000)}
    pipe = {"course": [20000.0], "project": [240000.0]}
    rates = {"course": [80.0, 70.0, 90.0], "project": [250.0, 270.0, 240.0, 300.0, 290.0],
             "in-memory": [300.0, 280.0, 320.0, 290.0, 320.0], "tf.data": [240.0, 280.0, 160.0, 290.0, 300.0],
             "Keras": [150.0, 140.0, 160.0, 145.0, 155.0]}
    cpu = {"course": [19.0], "project": [6.5], "in-memory": [5.2], "tf.data": [6.1], "Keras": [7.3]}
    latency = [{"seconds": 0.4, "accuracy": 0.9, "count": 10000}]
    cells = [line[2:-2].split(" | ") for line in bench.table(gen, pipe, (rates, cpu), latency, (200.0, 50000), False,
                                                           "info").splitlines() if line.startswith("| ")]
    assert {len(row) for row in cells} == {7}
    rows = {row[0]: row for row in cells}
    assert rows["figure"] == ["figure", "course", "project", "in-memory", "other", "ratio", "target"]
    # Pairs 250/300 270/280 240/320 300/290 290/320: 0.83 0.96 0.75 1.03 0.91, median 0.91 (the ratio of
    # the medians, 270/300, would be 0.90): met. Project 270 is 3.38x the course's 80.
    training = rows["3 training at batch 200, steps/s"]
    assert training[1:4] == ["80.0", "270.0", "300.0"]
    assert training[5] == "0.91x in-memory (median of 5 pairs; single pairs 0.75-1.03), 3.38x course"
    assert training[6] == ">= 0.90x in-memory: met"
    tf_data = rows["3 --pipeline tfdata (the product's tf.data path), steps/s (CPU ms/step)"]
    # tf.data / in-memory: 0.80 1.00 0.50 1.00 0.94; project / tf.data: 1.04 0.96 1.50 1.03 0.97.
    assert tf_data[4:6] == ["280.0 (6.1)", "0.94x in-memory (median of 5 pairs; single pairs 0.50-1.00); "
                                           "project / tf.data: 1.03"]
    keras = rows["3 other: Keras model.fit from NumPy arrays, steps/s (CPU ms/step)"]
    # project / Keras: 1.67 1.93 1.50 2.07 1.87.
    assert keras[4:6] == ["150.0 (7.3)", "0.50x in-memory; project / Keras: 1.87"]
    assert rows["1 generation, images/s"][5:7] == ["4.00x course", ">= 3x: met"]
    assert rows["1 peak resident memory, MB"][6].startswith("<= 500: **not met**")
    assert rows["2 input pipeline, examples/s"][5] == "12.00x course"
    rates["project"][1] = 250.0  # pairs 0.83 0.89 0.75 1.03 0.91: median 0.89
    rows = [line for line in bench.table(gen, pipe, (rates, cpu), latency, (200.0, 50000), False, "").splitlines()
            if line.startswith("| 3 training at")]
    assert rows[0].endswith(" | >= 0.90x in-memory: **not met** |")


@pytest.mark.long
def test_scripts_keep_tensorflow_from_importing_keras(tmp_path):
    # Keras is what lifts a TensorFlow process above 500 MB resident; every script must work without it.
    probe = ("import sys, mnist_generateds, mnist_backward, mnist_test, mnist_app, tf_compat; "
             "tf_compat.import_tensorflow(); "  # tf is imported on first use: make it happen here
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('keras', 'matplotlib') "
             "and sys.modules[m] is not None))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                            timeout=wait_limit(120))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
