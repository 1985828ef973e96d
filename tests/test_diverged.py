"""A training that diverges: the trainers stop at the first non-finite loss and never save NaN
weights; the evaluator, the app and the exporter refuse a checkpoint that holds them, in one line."""
import os
import re
import subprocess
import sys
import time
import types

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, tree_digests, new_saver, save_checkpoint, wait_limit
import mnist_app
import mnist_backward
import mnist_cluster
import mnist_export
import mnist_forward
import mnist_lenet5_forward
import mnist_lenet5_test
import mnist_test
from mnistkit import checkpoints, training
from tf_compat import tf

HUGE_RATE = 1e6  # LEARNING_RATE_BASE that makes either network's loss non-finite (nan or inf) within a few steps
TRAINERS = {"mlp": mnist_forward, "lenet5": mnist_lenet5_forward}  # the forward module each trainer passes
DIVERGED = (r"^error: step (\d+): the loss is (?:nan|inf|-inf) \(learning rate [0-9.e+]+\): the training diverged; lower "
            r"(--learning-rate-base|LEARNING_RATE_BASE in \S+|learning_rate_base), or check the training data \((\S+)\); "
            r"(.*)$")  # the rate named as it was given: the flag, the constant in its file, backward()'s keyword


def train(data_dir, model_dir, network, rate, *flags):
    """mnist_backward.main (mnist_lenet5_backward's with network "lenet5") with --learning-rate-base `rate`."""
    return mnist_backward.main(["--data-dir", str(data_dir), "--model-dir", str(model_dir), "--quiet",
                                "--learning-rate-base", str(rate), *flags], TRAINERS[network])


def all_finite(model_dir):
    """{checkpoint prefix: True when every tensor is finite} of every checkpoint in model_dir."""
    found = {}
    for step in checkpoints.checkpoint_steps(str(model_dir)):
        prefix = checkpoints.prefix_of(str(model_dir), step)
        found[prefix] = checkpoints.first_non_finite(checkpoints.read_checkpoint(prefix)) is None
    return found


@pytest.mark.long
@pytest.mark.parametrize("network, pipeline", [("mlp", "fast"), ("mlp", "tfdata"), ("lenet5", "fast"),
                                               ("lenet5", "tfdata")])
def test_a_diverging_training_stops_at_the_first_nan_loss_and_keeps_the_last_good_checkpoint(
        sample_workdir, tmp_path, capsys, network, pipeline):
    model, data = tmp_path / "model", sample_workdir / "data"
    assert train(data, model, network, 0.001, "--steps", "3", "--pipeline", pipeline) == 0
    good = {p: checkpoints.signature(p) for p in all_finite(model)}
    capsys.readouterr()
    status = train(data, model, network, HUGE_RATE, "--steps", "400", "--save-every", "1", "--pipeline", pipeline)
    err = capsys.readouterr().err
    assert status == 1
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    match = re.match(DIVERGED, lines[0])
    assert match, lines[0]
    step, named, where, kept = match.groups()
    assert named == "--learning-rate-base"  # the flag this run was given
    assert where == os.path.join(str(data), "mnist_train.tfrecords")
    newest = checkpoints.latest(str(model))
    assert kept == f"nothing non-finite was saved; the newest checkpoint is {newest}"
    assert checkpoints.step_of(newest) == int(step) - 1  # saved every step up to the one that went NaN
    assert all(all_finite(model).values())  # no checkpoint ever holds a NaN
    for prefix, signature in good.items():  # the good ones of before, untouched
        assert checkpoints.signature(prefix) == signature


def test_a_training_that_diverges_before_its_first_save_saves_nothing(sample_workdir, tmp_path, capsys):
    model = tmp_path / "model"
    assert train(sample_workdir / "data", model, "mlp", HUGE_RATE, "--steps", "400") == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.match(DIVERGED, line) and line.endswith("; no checkpoint was saved"), line
    assert checkpoints.checkpoint_steps(str(model)) == []


@pytest.mark.quick
def test_the_weights_are_checked_in_one_read_before_a_save():
    with tf.Graph().as_default():
        a = tf.Variable([1.0, 2.0], name="a")
        b = tf.Variable([1.0, np.inf], name="b")
        c = tf.Variable([np.nan], name="c")
        steps = tf.Variable(3, dtype=tf.int64, name="steps")
        names, flags = training.finite_flags([a, b, c, steps])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(flags)
    assert names == ("a", "b", "c") and values.tolist() == [True, False, False]
    settings = mnist_backward.settings_for(mnist_forward, steps=10, batch_size=10, learning_rate_base=50.0,
                                           data_dir="data", model_dir="", log=None)
    with pytest.raises(training.Diverged) as raised:
        training.check_weights(values, names, 1000, 50.0, settings, "data/mnist_train.tfrecords")
    assert str(raised.value) == ("step 1000: 'b' holds NaN or infinite values (learning rate 50): the training "
                                 "diverged; lower learning_rate_base, or check the training data "
                                 "(data/mnist_train.tfrecords); no checkpoint was saved")  # the keyword it was given
    training.check_weights([True, True], ("a", "b"), 1000, 50.0, settings, "x")  # finite: no error


CHIEF = """
import sys
sys.path.insert(0, {root!r})
import mnist_backward
sys.exit(mnist_backward.main(sys.argv[1:] + ["--learning-rate-base", "{rate}"]))
"""


@pytest.mark.long
@pytest.mark.skipif(os.name != "posix", reason="the cluster's tasks are stopped with POSIX signals")
def test_a_clusters_chief_stops_at_the_first_nan_loss_and_saves_no_nan(sample_workdir, tmp_path):
    ps_host, worker_host = (f"127.0.0.1:{port}" for port in mnist_cluster.free_ports(2))
    hosts = ["--ps_hosts", ps_host, "--worker_hosts", worker_host]
    ps = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_backward.py"), "--job_name", "ps", *hosts],
                          cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        chief = subprocess.run([sys.executable, "-c", CHIEF.format(root=ROOT, rate=HUGE_RATE), "--job_name",
                                "worker", "--task_index", "0", *hosts, "--steps", "400", "--save-every", "1",
                                "--data-dir", str(sample_workdir / "data"), "--model-dir", "model"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=wait_limit(240))
    finally:
        ps.kill()
        ps.wait()
    assert chief.returncode == 1, chief.stderr
    line = chief.stderr.strip().splitlines()[-1]
    assert re.match(DIVERGED, line), chief.stderr
    assert all(all_finite(tmp_path / "model").values())


# ---------------------------------------------------------------- a checkpoint holding NaN

FORWARD = {"mlp": mnist_forward, "lenet5": mnist_lenet5_forward}


def write_checkpoint(model_dir, net, step, bad=()):
    """A checkpoint of `net` (weights, moving averages, global_step) at `step`, the variables in `bad` all NaN."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, net.INPUT_NODE])
        net.forward(x, None, train=False)
        global_step = tf.Variable(step, trainable=False, name="global_step", dtype=tf.int64)
        ema_op = tf.train.ExponentialMovingAverage(0.99).apply(tf.trainable_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ema_op)
            for var in tf.global_variables():
                if var.op.name in bad:
                    sess.run(var.assign(tf.fill(tf.shape(var), np.float32(np.nan))))
            save_checkpoint(sess, new_saver(5), str(model_dir), step, set())
    return checkpoints.prefix_of(str(model_dir), step)


def refusal(prefix, name, count):
    return (f"error: {prefix}: checkpoint holds non-finite values ({name!r}: {count} of {count} are NaN or "
            f"infinite), so its training diverged; use an earlier checkpoint, or train again with a lower "
            f"LEARNING_RATE_BASE")


BAD = {"mlp": ("w2", "w2/ExponentialMovingAverage", 5000), "lenet5": ("fc2_w", "fc2_w/ExponentialMovingAverage", 5120)}


@pytest.mark.parametrize("network", ["mlp", "lenet5"])
def test_the_evaluator_the_app_and_the_exporter_refuse_a_nan_checkpoint_in_one_line(
        sample_workdir, tmp_path, capsys, network):
    model, export_dir = tmp_path / "model", tmp_path / "export"
    first, *_ = BAD[network]
    prefix = write_checkpoint(model, FORWARD[network], 600, bad=BAD[network][:2])
    expected = refusal(prefix, first, BAD[network][2])
    picture = tmp_path / "seven.png"
    Image.new("L", (28, 28), 255).save(picture)
    before = tree_digests(tmp_path)
    test_main = mnist_lenet5_test.main if network == "lenet5" else mnist_test.main
    runs = {"evaluator": lambda: test_main(["--model-dir", str(model), "--data-dir", str(sample_workdir / "data"),
                                            "--once"]),
            "app": lambda: mnist_app.main(["--model-dir", str(model), str(picture)]),
            "exporter": lambda: mnist_export.main(["--model-dir", str(model), "--export-dir", str(export_dir),
                                                   "--data-dir", str(sample_workdir / "data")])}
    for name, run in runs.items():
        capsys.readouterr()
        assert run() == 1, name
        out, err = capsys.readouterr()
        assert err.splitlines()[-1] == expected, (name, err)
        assert "accuracy" not in out and "prediction" not in out
    assert tree_digests(tmp_path) == before  # no export written, the checkpoint as it was
    assert not export_dir.exists()


def test_the_evaluators_watch_skips_a_nan_checkpoint_and_scores_the_next(sample_workdir, tmp_path, capsys,
                                                                        monkeypatch):
    model = tmp_path / "model"
    prefix = write_checkpoint(model, mnist_forward, 600, bad=("b1/ExponentialMovingAverage",))
    sleeps, lines = [], []

    class Scored(Exception):
        pass

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 1:  # after the NaN checkpoint's line: the trainer writes a good one
            write_checkpoint(model, mnist_forward, 700)

    def log(line):
        lines.append(line)
        if line.startswith("After"):
            raise Scored

    monkeypatch.setattr(mnist_test, "time", types.SimpleNamespace(sleep=sleep))  # the watch's waits, not TF's
    with pytest.raises(Scored):
        mnist_test.test(str(model), str(sample_workdir / "data"), interval=5, log=log)
    err = capsys.readouterr().err
    assert err.splitlines() == [refusal(prefix, "b1/ExponentialMovingAverage", 500)
                                + "; waiting for the next checkpoint"]
    assert lines[-1].startswith("After 700 training steps, test accuracy = ")
