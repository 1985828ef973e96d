"""Guards of the trainer and of the checkpoint readers that a deliberate breakage showed untested.

Each test fails when its guard is weakened: one NaN or infinite element in a
checkpoint (the check's `.all()` made `.any()`), a trainer option at its
minimum minus one (a `minimum=` dropped), an infinite loss (a check for NaN
only), and a last update that overflows while its loss was still finite (the
weight check before a save taken out).
"""
import math
import os
import re

import numpy as np
import pytest
from PIL import Image

from conftest import new_saver, run_main, save_checkpoint, tree_digests
from test_cli import run_traced, tensorflow_modules
import mnist_app
import mnist_backward
import mnist_export
import mnist_forward
import mnist_test
from mnistkit import checkpoints, training
from tf_compat import tf

# ---------------------------------------------------------------- one non-finite element in a checkpoint

POISONED = "w1/ExponentialMovingAverage"  # the shadow weights the evaluator, the app and the exporter read
POISONED_SIZE = 784 * 500


def write_checkpoint(model_dir, step, name, index, value):
    """A checkpoint of the 784-500-10 network (weights, moving averages, global_step) at `step`, saved as the
    trainer saves it, finite except element `index` (flat) of variable `name`, which holds `value`."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, mnist_forward.INPUT_NODE])
        mnist_forward.forward(x, None)
        tf.Variable(step, trainable=False, name="global_step", dtype=tf.int64)
        ema_op = tf.train.ExponentialMovingAverage(0.99).apply(tf.trainable_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ema_op)
            (var,) = [v for v in tf.global_variables() if v.op.name == name]
            flat = sess.run(var).reshape(-1)
            flat[index] = value
            sess.run(var.assign(flat.reshape(var.shape.as_list())))
            save_checkpoint(sess, new_saver(5), str(model_dir), step, set())
    prefix = checkpoints.prefix_of(str(model_dir), step)
    stored = checkpoints.read_checkpoint(prefix)
    bad = [n for n in stored if stored[n].dtype.kind == "f" and not np.isfinite(stored[n]).all()]
    assert bad == [name] and np.isfinite(stored[name]).sum() == POISONED_SIZE - 1  # one element, the rest normal
    return prefix


@pytest.mark.parametrize("value", [np.nan, np.inf], ids=["nan", "inf"])
def test_one_non_finite_weight_is_refused_by_the_evaluator_the_app_and_the_exporter(sample_workdir, tmp_path,
                                                                                   capsys, value):
    model, export_dir, data = tmp_path / "model", tmp_path / "export", str(sample_workdir / "data")
    prefix = write_checkpoint(model, 600, POISONED, 12345, value)
    expected = (f"error: {prefix}: checkpoint holds non-finite values ({POISONED!r}: 1 of {POISONED_SIZE} are NaN "
                f"or infinite), so its training diverged; use an earlier checkpoint, or train again with a lower "
                f"LEARNING_RATE_BASE")
    picture = tmp_path / "seven.png"
    Image.new("L", (28, 28), 255).save(picture)
    before = tree_digests(tmp_path)
    runs = {"evaluator": lambda: mnist_test.main(["--model-dir", str(model), "--data-dir", data, "--once"]),
            "app": lambda: mnist_app.main(["--model-dir", str(model), str(picture)]),
            "exporter": lambda: mnist_export.main(["--model-dir", str(model), "--export-dir", str(export_dir),
                                                   "--data-dir", data])}
    for name, run in runs.items():
        capsys.readouterr()
        assert run() == 1, name
        out, err = capsys.readouterr()
        assert err.splitlines()[-1] == expected, (name, err)
        assert "accuracy" not in out and "prediction" not in out, (name, out)
    assert tree_digests(tmp_path) == before  # nothing scored into eval/, nothing exported
    assert not export_dir.exists()


# ---------------------------------------------------------------- each option's minimum, before TensorFlow

BELOW_MINIMUM = {"steps": "-1", "batch_size": "0", "save_every": "0", "keep": "0", "print_every": "0", "summary_every": "0",
                 "steps_per_run": "0", "history": "-1", "decay_from": "-1"}


def test_the_cases_below_cover_every_option_with_a_minimum():
    assert {o.name for o in mnist_backward.OPTIONS if o.minimum is not None} == set(BELOW_MINIMUM)


@pytest.mark.parametrize("name", sorted(BELOW_MINIMUM))
def test_a_trainer_option_below_its_minimum_is_refused_before_tensorflow(name, tmp_path):
    flag = "--" + name.replace("_", "-")
    minimum = int(BELOW_MINIMUM[name]) + 1
    result, imported = run_traced("mnist_backward.py", flag, BELOW_MINIMUM[name], cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == f"mnist_backward.py: error: {flag} must be >= {minimum}\n"  # one line, no usage
    assert tensorflow_modules(imported) == []
    assert os.listdir(tmp_path) == []  # no model folder made, nothing trained


@pytest.mark.quick
@pytest.mark.parametrize("name", sorted(BELOW_MINIMUM))
def test_a_backward_keyword_below_its_minimum_is_one_value_error_naming_it(name, tmp_path):
    value, minimum = int(BELOW_MINIMUM[name]), int(BELOW_MINIMUM[name]) + 1
    with pytest.raises(ValueError) as raised:
        mnist_backward.backward(**{name: value}, model_dir=str(tmp_path / "model"))  # as a notebook calls it
    assert str(raised.value) == f"{name} must be >= {minimum}, not {value}"
    assert os.listdir(tmp_path) == []


@pytest.mark.quick
@pytest.mark.parametrize("script, args, message", [
    ("mnist_test.py", ["--interval", "nan", "--once"], "argument --interval: nan is out of range: give a number > 0"),
    ("mnist_test.py", ["--interval", "inf"], "argument --interval: inf is out of range: give a number > 0"),
    ("mnist_lenet5_test.py", ["--interval", "0"], "argument --interval: 0 is out of range: give a number > 0"),
    ("mnist_test.py", ["--interval", "soon"], "argument --interval: 'soon' is not a number"),
    ("mnist_app.py", ["--threshold", "256", "a.jpg"], "--threshold must be from 0 to 255"),
    ("mnist_app.py", ["--threshold", "-1"], "--threshold must be from 0 to 255"),
    ("mnist_app.py", ["--threshold", "127.5"], "argument --threshold: invalid int value: '127.5'"),
    ("mnist_backward.py", ["--startup-timeout", "-5"], "argument --startup-timeout: -5 is out of range: give a number > 0"),
    ("mnist_backward.py", ["--learning-rate-base", "0"], "--learning-rate-base must be a finite number > 0"),
    ("mnist_backward.py", ["--learning-rate-base", "inf"], "--learning-rate-base must be a finite number > 0"),
    ("mnist_lenet5_backward.py", ["--learning-rate-base", "nan"], "--learning-rate-base must be a finite number > 0"),
])
def test_a_number_flag_out_of_range_nan_or_infinite_is_a_usage_error(script, args, message, tmp_path):
    # Refused as the flag is read (exit 2, argparse's one line), never a traceback later (time.sleep(-1))
    result = run_main(script, *args, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines()[-1].endswith(f": error: {message}"), result.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.quick
@pytest.mark.parametrize("value", [-0.1, 0.0, float("nan"), float("inf")])
def test_a_learning_rate_not_above_zero_or_not_finite_is_one_value_error(value, tmp_path):
    with pytest.raises(ValueError) as raised:
        mnist_backward.backward(learning_rate_base=value, model_dir=str(tmp_path / "model"))
    assert str(raised.value) == f"learning_rate_base must be a finite number > 0, not {value!r}"
    assert os.listdir(tmp_path) == []


@pytest.mark.quick
@pytest.mark.parametrize("constant, value, wanted", [("LEARNING_RATE_BASE", -0.1, "a finite number > 0"),
                                                     ("LEARNING_RATE_BASE", float("nan"), "a finite number > 0"),
                                                     ("BATCH_SIZE", 0, ">= 1")])
def test_an_edited_constant_out_of_range_is_named_as_the_constant(constant, value, wanted, tmp_path, monkeypatch):
    # A student edits the constant at the top of mnist_backward.py: the message names it there, not a flag
    # the student never typed; the same without the command line, from backward().
    monkeypatch.setattr(mnist_backward, constant, value)
    monkeypatch.chdir(tmp_path)
    result = run_main("mnist_backward.py", "--steps", "1", cwd=tmp_path)
    assert result.returncode == 2
    # argparse's usage error (its program name is the process's own here), the constant in the message
    assert result.stderr.splitlines()[-1].endswith(f": error: {constant} in mnist_backward.py must be {wanted}, "
                                                   f"not {value!r}")
    with pytest.raises(ValueError) as raised:
        mnist_backward.backward(steps=1)
    assert str(raised.value) == f"{constant} in mnist_backward.py must be {wanted}, not {value!r}"
    assert os.listdir(tmp_path) == []


@pytest.mark.quick
@pytest.mark.parametrize("interval", [-1, 0, float("nan"), float("inf")])
def test_an_evaluator_interval_not_above_zero_is_one_line_before_any_work(interval, tmp_path, monkeypatch):
    # TEST_INTERVAL_SECS edited at the top of mnist_test.py (the flag itself is refused by argparse, test_cli)
    monkeypatch.setattr(mnist_test, "TEST_INTERVAL_SECS", interval)
    result = run_main("mnist_test.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"error: the interval (--interval, TEST_INTERVAL_SECS) must be a finite number of "
                             f"seconds > 0, not {interval!r}\n")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- a loss that is not finite

@pytest.mark.quick
@pytest.mark.parametrize("loss", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_a_nan_or_infinite_loss_stops_the_training(loss):
    settings = mnist_backward.settings_for(mnist_forward, steps=10, data_dir="data", model_dir="", log=None)
    with pytest.raises(training.Diverged) as raised:
        training.check_loss(loss, 7, 0.1, settings, "data/mnist_train.tfrecords")
    assert str(raised.value) == (f"step 7: the loss is {loss} (learning rate 0.1): the training diverged; lower "
                                 "LEARNING_RATE_BASE in mnist_backward.py, or check the training data "
                                 "(data/mnist_train.tfrecords); no checkpoint was saved")
    training.check_loss(1e30, 7, 0.1, settings, "x")  # large but finite: training goes on


@pytest.mark.quick
def test_the_diverged_line_names_the_rate_as_backward_was_given_it():
    settings = mnist_backward.settings_for(mnist_forward, steps=10, data_dir="data", model_dir="", log=None,
                                           learning_rate_base=5.0)
    with pytest.raises(training.Diverged) as raised:
        training.check_loss(math.nan, 7, 5.0, settings, "data/mnist_train.tfrecords")
    assert "the training diverged; lower learning_rate_base, or check the training data" in str(raised.value)


# ---------------------------------------------------------------- an update that overflows after a finite loss

@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # 1e39 made float32
def test_a_last_update_that_overflows_after_a_finite_loss_saves_nothing(sample_workdir, tmp_path):
    data = str(sample_workdir / "data")
    good = run_main("mnist_backward.py", "--steps", "1", "--data-dir", data, "--model-dir", "model", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    saved = {name: digest for name, digest in tree_digests(tmp_path / "model").items() if "/" not in name}
    assert set(saved) >= {"checkpoint", "mnist_model-1.index"}
    # A rate beyond float32 (inf): step 2's loss is computed from step 1's good weights, then the update
    # makes them infinite or NaN; the check before the save at the run's end stops it.
    bad = run_main("mnist_backward.py", "--steps", "2", "--learning-rate-base", "1e39", "--data-dir", data,
                   "--model-dir", "model", cwd=tmp_path)
    assert bad.returncode == 1, bad.stderr
    line = bad.stderr.strip()
    assert "\n" not in line, bad.stderr
    assert re.fullmatch(r"error: step 2: '\S+' holds NaN or infinite values \(learning rate inf\): the training "
                        r"diverged; lower --learning-rate-base, or check the training data "
                        r"\(\S+\); nothing non-finite was saved; the newest checkpoint is model/mnist_model-1",
                        line), line
    after = {name: digest for name, digest in tree_digests(tmp_path / "model").items() if "/" not in name}
    assert after == saved  # no checkpoint file added or changed
    assert checkpoints.latest(str(tmp_path / "model")).endswith("mnist_model-1")
