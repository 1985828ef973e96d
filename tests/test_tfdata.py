"""--pipeline tfdata: the same training through tf.data, tested equal to the queue runners.

The same records, each once per epoch with its label (one file, shards, a
pattern); a shuffle at least as good by test_speed_paths' measures; the
same accuracy after 2,000 steps; checkpoints that resume with either
pipeline; the same evaluation to the last digit; the same one-line errors.
docs/migrating.md compares the two pipelines call by call.
"""
import os
import shutil

import numpy as np
import pytest

from conftest import TRAIN_STEPS
from test_errors import bad_example, bytes_feature, error_line, good_record, int_feature, write_records
import mnist_backward
import mnist_forward
import mnist_generateds
import mnist_test
import mnistkit.inputs
import mnistkit.records
import mnistkit.summaries
from mnistkit.errors import DataError
from tf_compat import tf

BATCH = mnist_backward.BATCH_SIZE


def settings(data_dir, pipeline, model_dir="model", steps=1):
    return mnist_backward.settings_for(mnist_forward, steps=steps, batch_size=BATCH, data_dir=str(data_dir),
                                       model_dir=str(model_dir), pipeline=pipeline)


def training_batches(data_dir, pipeline, count):
    """Pixels uint8 [count * BATCH, 784] and digits [count * BATCH] of the first `count` batches of the
    trainer's own graph (mnist_backward.build_graph) for `pipeline`."""
    data = mnistkit.records.training_data(str(data_dir))
    with tf.Graph().as_default():
        graph = mnist_backward.build_graph(settings(data_dir, pipeline), data)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            batches = [sess.run([graph.img_batch, graph.label_batch]) for _ in range(count)]
            coord.request_stop()
            coord.join(threads)
    xs = np.concatenate([b[0] for b in batches])
    ys = np.concatenate([b[1] for b in batches])
    assert ((ys == 0) | (ys == 1)).all() and (ys.sum(axis=1) == 1).all()
    return np.rint(xs * 255).astype(np.uint8), ys.argmax(axis=1)


# ---------------------------------------------------------------- every record once per epoch

def test_every_record_comes_once_per_epoch_with_its_label(sample_workdir, sharded_data):
    single = sample_workdir / "data"
    digit_of = {}
    for serialized in tf.io.tf_record_iterator(str(single / mnist_generateds.tfRecord_train)):
        feature = tf.train.Example.FromString(serialized).features.feature
        digit_of[feature["img_raw"].bytes_list.value[0]] = list(feature["label"].int64_list.value).index(1)
    n = len(digit_of)
    assert n == 8000  # every training image of the sample is a different picture: it identifies its record
    pattern = str(sharded_data / "mnist_train-*")
    shards = mnistkit.records.tfrecord_files(str(sharded_data))
    assert len(shards) == 4 and mnistkit.records.tfrecord_files(pattern) == shards
    epochs = 2
    for data_dir in (single, sharded_data, pattern):
        pixels, digits = training_batches(data_dir, "tfdata", epochs * n // BATCH)
        keys = [row.tobytes() for row in pixels]
        assert [digit_of[k] for k in keys] == digits.tolist(), data_dir  # each example with its own label
        for epoch in range(epochs):  # each epoch of the stream: every record exactly once
            seen = keys[epoch * n:(epoch + 1) * n]
            repeated, missing = len(seen) - len(set(seen)), len(set(digit_of) - set(seen))
            assert (repeated, missing) == (0, 0), (data_dir, epoch)
        assert keys[:n] != keys[n:], data_dir  # shuffled anew each epoch


# ---------------------------------------------------------------- shuffle quality

N_NUMBERED = 4000


def numbered_file(folder):
    """A training file whose record i holds i in its first two pixels (random labels), as test_speed_paths'."""
    labels = np.random.default_rng(1).integers(0, 10, N_NUMBERED)
    path = folder / mnist_generateds.tfRecord_train
    write_records(path, [mnistkit.records.make_example(bytes([i >> 8, i & 255]) + bytes(782), int(d))
                         .SerializeToString(deterministic=True) for i, d in enumerate(labels)])
    return labels


def test_the_shuffle_is_at_least_as_good_as_the_queue_runners(tmp_path, summary_line):
    labels = numbered_file(tmp_path)
    epochs = 5
    displacement, neighbours = {}, {}
    for pipeline in ("course", "fast", "tfdata"):
        pixels, digits = training_batches(tmp_path, pipeline, epochs * N_NUMBERED // BATCH)
        index = pixels[:, 0].astype(int) * 256 + pixels[:, 1]
        assert (digits == labels[index]).all()
        counts = np.bincount(index, minlength=N_NUMBERED)
        if pipeline == "tfdata":
            assert (counts == epochs).all()  # exact epochs (the queue's overlap by what it holds)
        # test_speed_paths' two measures: next-in-file neighbours side by side in a batch, and how far
        # each example lands from its place in the file's order (the shuffle's reach).
        neighbours[pipeline] = np.mean(np.diff(index.reshape(-1, BATCH), axis=1) == 1)
        order = np.arange(len(index))
        stream_position = index + N_NUMBERED * np.rint((order - index) / N_NUMBERED)
        displacement[pipeline] = np.abs(stream_position - order).mean()
    summary_line("shuffle, mean displacement (next-in-file neighbours in a batch): " + ", ".join(
        f"{p} {displacement[p]:.0f} ({neighbours[p]:.4f})" for p in displacement))
    # 6 runs each (2 loaded cores): course 479-492, fast 573-591, tfdata 590-599;
    # neighbours 0.0003-0.0011 in all three (chance in a full random order: 0.0003). A tf.data buffer of
    # min_after_dequeue (700) alone reaches only 452: shuffle_buffer is the queue's capacity (1000).
    assert max(neighbours.values()) < 0.01
    assert displacement["tfdata"] >= displacement["course"]
    assert displacement["tfdata"] >= 0.97 * displacement["fast"]


@pytest.mark.parametrize("batch_size", [200, 1500])
def test_the_shuffle_buffer_is_the_queues_capacity(sample_workdir, batch_size):
    with tf.Graph().as_default():
        mnist_generateds.get_tfrecord(batch_size, data_dir=str(sample_workdir / "data"))
        capacity = mnistkit.summaries.shuffle_queue_runner().queue.queue_ref.op.get_attr("capacity")
    assert mnistkit.inputs.shuffle_buffer(batch_size) == capacity == max(1000, 700 + batch_size)


# ---------------------------------------------------------------- training, resuming, evaluating

@pytest.fixture(scope="module")
def tfdata_model(sample_workdir, tmp_path_factory):
    """A model trained for TRAIN_STEPS steps by `mnist_backward.py --pipeline tfdata` (in this process)."""
    model = tmp_path_factory.mktemp("tfdata") / "model"
    status = mnist_backward.main(["--steps", str(TRAIN_STEPS), "--pipeline", "tfdata", "--quiet",
                                  "--data-dir", str(sample_workdir / "data"), "--model-dir", str(model)])
    assert status == 0
    return model


def test_tfdata_training_reaches_the_queue_runners_accuracy(tfdata_model, sample_workdir):
    ckpt = tf.train.latest_checkpoint(str(tfdata_model))
    assert ckpt.endswith(f"mnist_model-{TRAIN_STEPS}")
    step, accuracy, count = mnist_test.evaluate(ckpt, str(sample_workdir / "data" / "mnist_test.tfrecords"),
                                                pipeline="tfdata")
    assert (step, count) == (TRAIN_STEPS, 2000)
    # 16 fresh runs of --pipeline tfdata (2 loaded cores, unseeded): 0.926 to 0.9345, mean 0.930,
    # sd 0.003; 6 runs of the queue runners (fast) beside them: 0.929 to 0.933, mean 0.9305, sd 0.0015;
    # test_training's 20 queue runs: 0.9265 to 0.9340, mean 0.930, sd 0.002. Its bound, 0.915, is 5 sd
    # below the tf.data mean here too.
    assert accuracy >= 0.915


def test_checkpoints_hold_the_same_variables_and_resume_with_the_other_pipeline(tfdata_model, trained_workdir,
                                                                               tmp_path):
    queue_ckpt = tf.train.latest_checkpoint(str(trained_workdir / "model"))
    tfdata_ckpt = tf.train.latest_checkpoint(str(tfdata_model))
    names = tf.train.list_variables(queue_ckpt)
    assert names == tf.train.list_variables(tfdata_ckpt)  # names and shapes: no iterator, no epoch counter
    assert not [n for n, _ in names if "epochs" in n or "Iterator" in n or "input_producer" in n]
    data = str(trained_workdir / "data")
    for source, other in ((trained_workdir / "model", "tfdata"), (tfdata_model, "fast")):
        model = tmp_path / other
        shutil.copytree(source, model)
        lines = []
        with tf.Graph().as_default():
            step = mnist_backward.backward(steps=TRAIN_STEPS + 10, data_dir=data, model_dir=str(model),
                                           pipeline=other, log=lines.append, quiet=True)
        assert step == TRAIN_STEPS + 10
        assert lines[0].endswith(f"resuming from {model / 'mnist_model'}-{TRAIN_STEPS}; "
                                 f"target global_step {TRAIN_STEPS + 10}; running on CPU")
        ckpt = tf.train.latest_checkpoint(str(model))
        assert ckpt.endswith(f"mnist_model-{TRAIN_STEPS + 10}")
        assert tf.train.list_variables(ckpt) == names
        assert tf.train.load_variable(ckpt, "global_step") == TRAIN_STEPS + 10


def test_evaluation_gives_the_same_scores_with_both_pipelines(tfdata_model, trained_workdir):
    test_file = str(trained_workdir / "data" / "mnist_test.tfrecords")
    for model in (trained_workdir / "model", tfdata_model):  # trained with the queue runners, with tf.data
        ckpt = tf.train.latest_checkpoint(str(model))
        queue = mnist_test.evaluate(ckpt, test_file, details=True)
        tfdata = mnist_test.evaluate(ckpt, test_file, details=True, pipeline="tfdata")
        assert queue[:3] == tfdata[:3] and queue[0] == TRAIN_STEPS and queue[2] == 2000
        for key in ("labels", "probabilities", "pixels"):  # record by record, in file order
            np.testing.assert_array_equal(queue[3][key], tfdata[3][key])
        assert mnist_test.evaluate(ckpt, test_file, batch_size=7, pipeline="tfdata") == queue[:3]


# ---------------------------------------------------------------- bad input: the same one-liners

FRAME = len(good_record()) + mnistkit.records.RECORD_FRAME_BYTES


def damage(path, kind):
    """Damage a 10-record file of good_record()s in record 3: cut, corrupted, foreign (not TFRecord), or
    other_schema (a TFRecord file of other Examples); or empty it."""
    if kind == "cut":
        with open(path, "r+b") as f:
            f.truncate(3 * FRAME + 112)
    elif kind == "corrupted":
        raw = bytearray(path.read_bytes())
        raw[3 * FRAME + 112] ^= 0xFF
        path.write_bytes(bytes(raw))
    elif kind == "foreign":
        path.write_bytes(b"PK\x03\x04 a zip file, say" * 50)
    elif kind == "other_schema":
        write_records(path, [good_record()] * 3 + [bad_example(image=bytes_feature(bytes(784)),
                                                               label=int_feature([0] * 10))] * 7)
    else:
        path.write_bytes(b"")


def data_folder(tmp_path, name=mnist_generateds.tfRecord_train):
    data = tmp_path / "data"
    data.mkdir(parents=True, exist_ok=True)
    write_records(data / name, [good_record(d % 10) for d in range(10)])
    return data


@pytest.mark.parametrize("kind", ["cut", "corrupted", "foreign"])
def test_files_bad_before_training_give_the_same_line_with_both_pipelines(tmp_path, capsys, kind):
    data = data_folder(tmp_path)
    damage(data / mnist_generateds.tfRecord_train, kind)
    lines = {}
    said = "a zip archive" if kind == "foreign" else "record "  # a zip is named from its first bytes
    for pipeline in ("fast", "course", "tfdata"):
        assert mnist_backward.main(["--steps", "5", "--pipeline", pipeline, "--data-dir", str(data),
                                    "--model-dir", str(tmp_path / "model")]) == 1
        lines[pipeline] = error_line(capsys)
    assert lines["tfdata"] == lines["fast"] == lines["course"]
    assert lines["tfdata"].startswith(f"error: {data / mnist_generateds.tfRecord_train}: {said}")
    test_data = data_folder(tmp_path / "t", mnist_generateds.tfRecord_test)
    damage(test_data / mnist_generateds.tfRecord_test, kind)
    # a folder of checkpoint files (one that is not there, or holds none, is said first, without TensorFlow)
    (tmp_path / "listed").mkdir()
    (tmp_path / "listed" / "mnist_model-1.index").write_bytes(b"")
    for pipeline in ("fast", "tfdata"):  # the evaluator checks its file before any checkpoint is read
        assert mnist_test.main(["--once", "--pipeline", pipeline, "--data-dir", str(test_data),
                                "--model-dir", str(tmp_path / "listed")]) == 1
        lines[pipeline] = error_line(capsys)
    assert lines["tfdata"] == lines["fast"]
    assert lines["tfdata"].startswith(f"error: {test_data / mnist_generateds.tfRecord_test}: {said}")


def train_on_data_damaged_after_the_check(tmp_path, monkeypatch, kind, pipeline):
    """The DataError message of a run whose training file is damaged right after training_data checked it."""
    data = data_folder(tmp_path / pipeline)
    checked = mnistkit.records.training_data

    def check_then_damage(data_dir, *name):
        found = checked(data_dir, *name)
        damage(data / mnist_generateds.tfRecord_train, kind)  # another program rewriting the file
        return found

    monkeypatch.setattr(mnistkit.records, "training_data", check_then_damage)
    with tf.Graph().as_default(), pytest.raises(DataError) as error:
        mnist_backward.backward(steps=50, batch_size=4, data_dir=str(data), model_dir=str(tmp_path / pipeline / "m"),
                                pipeline=pipeline, log=lambda m: None, quiet=True)
    assert not os.path.exists(tmp_path / pipeline / "m" / "checkpoint")
    return str(error.value).replace(str(tmp_path / pipeline), "DATA")


@pytest.mark.parametrize("kind,cause", [
    ("cut", f"truncated record at {3 * FRAME} failed with Read less bytes than requested"),
    ("corrupted", f"corrupted record at {3 * FRAME + 12}"),
    ("foreign", "corrupted record at 0 (Is this even a TFRecord file?)"),
    ("other_schema", "Feature: img_raw (data type: string) is required but could not be found."),
])
def test_files_damaged_during_training_give_the_same_line_with_both_pipelines(tmp_path, monkeypatch, kind, cause):
    # The course pipeline reads with TFRecordReader, which checks every CRC as tf.data does; the fast one
    # reads these files' fixed-length frames unchecked (mnistkit.records.read_many), so it is not compared.
    messages = {p: train_on_data_damaged_after_the_check(tmp_path, monkeypatch, kind, p) for p in ("course", "tfdata")}
    assert messages["tfdata"] == messages["course"] == f"DATA/data/mnist_train.tfrecords: input pipeline failed: {cause}"


def test_a_file_emptied_during_training_ends_tfdata_at_once_with_one_line(tmp_path, monkeypatch):
    # The queue runners wait for a batch until the step's time-out (test_promises_run); tf.data's endless
    # stream ends when an epoch finds no record, which it says at once.
    assert train_on_data_damaged_after_the_check(tmp_path, monkeypatch, "empty", "tfdata") == (
        "DATA/data/mnist_train.tfrecords: input pipeline failed: no record left to read "
        "(was the data changed after it was checked?)")


@pytest.mark.parametrize("kind", ["cut", "corrupted", "other_schema"])
def test_a_test_file_damaged_during_evaluation_gives_the_same_line_with_both_pipelines(tfdata_model, tmp_path,
                                                                                       kind):
    path = data_folder(tmp_path, mnist_generateds.tfRecord_test) / mnist_generateds.tfRecord_test
    damage(path, kind)  # evaluate() reads it unchecked: test() checks the file before
    ckpt = tf.train.latest_checkpoint(str(tfdata_model))
    messages = {}
    for pipeline in ("fast", "tfdata"):
        with pytest.raises(DataError) as error:
            mnist_test.evaluate(ckpt, str(path), batch_size=2, pipeline=pipeline)
        messages[pipeline] = str(error.value)
    assert messages["tfdata"] == messages["fast"]
    assert messages["tfdata"].startswith(f"{path}: input pipeline failed: ") and "\n" not in messages["tfdata"]
