"""The network, the training loop, resume and evaluation, on the bundled sample (the app: test_app.py)."""

import numpy as np
import pytest

from conftest import TRAIN_STEPS, run_main, run_script, shown
import mnist_backward
import mnist_forward
import mnist_test
from tf_compat import tf


def test_forward_gives_logits_and_course_l2_terms():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        y = mnist_forward.forward(x, 0.0001)
        assert y.shape.as_list() == [None, 10]
        losses = tf.get_collection(mnist_forward.LOSSES_COLLECTION)
        assert len(losses) == 2
        weights = [v for v in tf.trainable_variables() if v.op.name in ("w1", "w2")]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = sess.run(y, {x: np.zeros((3, 784), np.float32)})
            l2, ws = sess.run([losses, weights])
    assert out.shape == (3, 10)
    np.testing.assert_allclose(out, 0.0, atol=1e-6)  # zero input, zero biases
    for term, w in zip(l2, ws):
        np.testing.assert_allclose(term, 0.0001 * (w ** 2).sum() / 2, rtol=1e-4)
        assert np.abs(w).max() <= 0.2 + 1e-6  # truncated normal: within 2 stddev


def test_short_training_reaches_course_accuracy(trained_workdir):
    ckpt = tf.train.latest_checkpoint(str(trained_workdir / "model"))
    assert ckpt.endswith(f"mnist_model-{TRAIN_STEPS}")
    step, accuracy, count = mnist_test.evaluate(ckpt, str(trained_workdir / "data" / "mnist_test.tfrecords"))
    assert step == TRAIN_STEPS and count == 2000
    # 20 fresh runs (2 threads, unseeded): 0.9265 to 0.9340, mean 0.930, sd 0.002.
    # Without the hidden layer (logits straight from the 784 inputs), 5 runs: 0.8955 to 0.9005.
    # 0.915 is 7.7 sd below the network's mean and 9 sd above the hidden-layer-less one's (sd 0.002).
    assert accuracy >= 0.915


def test_evaluation_scores_every_record_once_whatever_the_batch(trained_workdir):
    ckpt = tf.train.latest_checkpoint(str(trained_workdir / "model"))
    path = str(trained_workdir / "data" / "mnist_test.tfrecords")
    results = {batch: mnist_test.evaluate(ckpt, path, batch_size=batch) for batch in (1000, 300, 7)}
    assert {r[2] for r in results.values()} == {2000}
    assert len({r[1] for r in results.values()}) == 1

    # The same accuracy computed independently in NumPy from the shadow weights.
    weights = {n: tf.train.load_variable(ckpt, n + "/ExponentialMovingAverage") for n in ("w1", "b1", "w2", "b2")}
    xs, ys = [], []
    for serialized in tf.io.tf_record_iterator(path):
        feature = tf.train.Example.FromString(serialized).features.feature
        xs.append(np.frombuffer(feature["img_raw"].bytes_list.value[0], np.uint8) / 255.0)
        ys.append(np.argmax(feature["label"].int64_list.value))
    hidden = np.maximum(np.array(xs) @ weights["w1"] + weights["b1"], 0)
    expected = np.mean(np.argmax(hidden @ weights["w2"] + weights["b2"], 1) == np.array(ys))
    assert results[1000][1] == pytest.approx(expected, abs=1 / 2000)


def test_test_script_once_prints_course_line(trained_copy):
    result = run_main("mnist_test.py", "--once", cwd=trained_copy)  # a copy: the evaluator writes model/eval
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"After {TRAIN_STEPS} training steps, test accuracy = 0.")
    assert result.stderr == ""


def test_test_script_once_without_checkpoint_fails_clearly(sample_workdir, tmp_path):
    result = run_main("mnist_test.py", "--once", "--model-dir", str(tmp_path / "none"),
                      "--data-dir", str(sample_workdir / "data"), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (f"error: {tmp_path / 'none'}: no such folder; give the "
                                     "folder that holds the checkpoints")  # not there: named so, not one to train
    (tmp_path / "none").mkdir()
    result = run_main("mnist_test.py", "--once", "--model-dir", str(tmp_path / "none"),
                      "--data-dir", str(sample_workdir / "data"), cwd=tmp_path)
    assert result.stderr.strip() == (f"error: {tmp_path / 'none'}: no checkpoint found; train first with "
                                     f"`python {shown('mnist_backward.py')} --model-dir {tmp_path / 'none'} "
                                     f"--data-dir {sample_workdir / 'data'}`")


def test_resume_continues_global_step(sample_workdir, tmp_path):
    data = str(sample_workdir / "data")
    model = str(tmp_path / "model")
    assert mnist_backward.backward(steps=30, data_dir=data, model_dir=model, log=lambda m: None) == 30
    w1_before = tf.train.load_variable(tf.train.latest_checkpoint(model), "w1")
    with tf.Graph().as_default():
        lines = []
        assert mnist_backward.backward(steps=50, data_dir=data, model_dir=model, log=lines.append) == 50
    assert "resuming from" in lines[0] and lines[0].endswith("mnist_model-30; target global_step 50; running on CPU")
    ckpt = tf.train.latest_checkpoint(model)
    assert ckpt.endswith("mnist_model-50")
    assert tf.train.load_variable(ckpt, "global_step") == 50
    assert not np.array_equal(tf.train.load_variable(ckpt, "w1"), w1_before)
    with tf.Graph().as_default():
        lines = []
        assert mnist_backward.backward(steps=40, data_dir=data, model_dir=model, log=lines.append) == 50
    assert lines[1] == "global_step 50 already reaches the target; raise steps to train further"  # the keyword
    assert tf.train.latest_checkpoint(model) == ckpt


def test_course_pipeline_trains_too(sample_workdir, tmp_path):
    with tf.Graph().as_default():
        lines = []
        step = mnist_backward.backward(steps=20, data_dir=str(sample_workdir / "data"),
                                       model_dir=str(tmp_path), pipeline="course", log=lines.append)
    assert step == 20
    assert lines[1].startswith("After 1 training steps, loss on training batch is ")
    assert float(lines[1].split()[-1].rstrip(".")) > 0


@pytest.mark.parametrize("script", ["mnist_generateds.py", "mnist_backward.py", "mnist_test.py", "mnist_app.py"])
def test_every_script_has_help(script, tmp_path):
    result = run_script(script, "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: ") and "--verbose" in result.stdout
