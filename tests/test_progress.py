"""Watching training: progress bars on a terminal only, and TensorBoard summaries for train and eval."""
import glob
import math
import os
import re
import select
import struct
import subprocess
import sys
import time

import pytest

from conftest import ROOT, ended, wait_limit
import mnist_backward
import mnist_test
from tf_compat import tf
import mnistkit.summaries

COURSE_LINE = re.compile(r"After (\d+) training steps, loss on training batch is [0-9.e+-]+\.")


def run_in_terminal(script, *args, cwd):
    """Run a script with stdout and stderr on a pseudo-terminal 120 columns wide; returns (status, output).

    POSIX only (pty, termios): skips the test elsewhere.
    """
    fcntl, pty, termios = (pytest.importorskip(name, reason="pseudo-terminals are POSIX-only")
                           for name in ("fcntl", "pty", "termios"))
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, script), *args], cwd=cwd,
                               stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    limit = wait_limit(300)
    chunks, deadline = [], time.monotonic() + limit
    try:
        while select.select([master], [], [], max(0, deadline - time.monotonic()))[0]:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    if process.poll() is None and time.monotonic() >= deadline:
        process.kill()
        process.wait()
        raise AssertionError(f"timed out after {limit:.0f} s waiting for {script} in a terminal to end")
    ended(process, f"{script} after its terminal closed")
    return process.returncode, b"".join(chunks).decode("utf-8", "replace")


def test_training_bar_shows_count_rate_time_left_loss_and_learning_rate(sample_workdir, tmp_path):
    status, output = run_in_terminal("mnist_backward.py", "--steps", "300", "--batch-size", "20",
                                     "--data-dir", str(sample_workdir / "data"), cwd=tmp_path)
    assert status == 0, output
    bars = re.findall(r"training: +\d+%\|[^|]*\| *(\d+)/300 \[\d\d:\d\d<\d\d:\d\d, +[0-9.]+step/s, "
                      r"loss=[0-9.e+-]+, lr=0\.\d+\]", output)
    assert len(bars) >= 2 and bars[-1] == "300"
    # The course's line stays, on a line of its own above the bar.
    lines = [segment for line in output.split("\r\n") for segment in line.split("\r")]
    assert [int(m.group(1)) for m in map(COURSE_LINE.fullmatch, lines) if m] == [1]


def test_generation_bar_counts_images(sample_workdir, tmp_path):
    jpg = sample_workdir / "mnist_data_jpg"
    paths = []
    for split, count in (("train", 300), ("test", 100)):  # a part of the sample: the bar, not the data, is tested
        lines = (jpg / f"mnist_{split}_jpg_{'8000' if split == 'train' else '2000'}.txt").read_text().splitlines()
        (tmp_path / f"{split}.txt").write_text("\n".join(lines[:count]) + "\n")
        folder = jpg / f"mnist_{split}_jpg_{'8000' if split == 'train' else '2000'}"
        paths += [f"--{split}-images", str(folder), f"--{split}-labels", f"{split}.txt"]
    status, output = run_in_terminal("mnist_generateds.py", *paths, "--data-dir", "data", cwd=tmp_path)
    assert status == 0, output
    assert re.search(r"mnist_train\.tfrecords: 100%\|[^|]*\| 300/300 \[\d\d:\d\d<00:00, +[0-9.]+img/s\]", output)
    assert re.search(r"mnist_test\.tfrecords: 100%\|[^|]*\| 100/100 ", output)
    assert "wrote 300 train records" in output


@pytest.mark.long
def test_no_bar_when_output_is_not_a_terminal_or_quiet(trained_workdir, tmp_path):
    # The shared 2,000-step training ran with stdout and stderr piped, as in CI.
    stdout = (trained_workdir / "backward.stdout").read_text()
    assert (trained_workdir / "backward.stderr").read_text() == "" and "\r" not in stdout
    lines = stdout.splitlines()
    assert [int(COURSE_LINE.fullmatch(line).group(1)) for line in lines[1:-1]] == [1, 1000, 2000]
    assert lines[-1] == "done at step 2000; checkpoint saved to ./model/mnist_model-2000"

    status, output = run_in_terminal("mnist_backward.py", "--quiet", "--steps", "300", "--batch-size", "10",
                                     "--data-dir", str(trained_workdir / "data"), cwd=tmp_path)
    assert status == 0, output
    assert "step/s" not in output and "%|" not in output
    assert output.replace("\r\n", "\n").count("\r") == 0  # a terminal turns \n into \r\n; nothing else
    assert COURSE_LINE.fullmatch(output.splitlines()[1].rstrip("\r"))
    assert output.splitlines()[-1].rstrip("\r") == "done at step 300; checkpoint saved to ./model/mnist_model-300"


def events(folder):
    """Every scalar in a TensorBoard run folder: {tag: {step: value}}, plus the kinds of other events."""
    scalars, kinds = {}, set()
    for path in sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*"))):
        for event in tf.train.summary_iterator(path):
            kinds.add(event.WhichOneof("what"))
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    return scalars, kinds


def test_trainer_and_evaluator_write_tensorboard_summaries(sample_workdir, tmp_path):
    data, model = str(sample_workdir / "data"), tmp_path / "model"
    batch = 100
    with tf.Graph().as_default():
        mnist_backward.backward(steps=30, batch_size=batch, data_dir=data, model_dir=str(model),
                                log=lambda m: None, summary_every=10)
    scalars, kinds = events(model / mnistkit.summaries.TRAIN_LOG_DIR)
    assert set(scalars) == {"loss", "cross_entropy", "regularization_loss", "learning_rate", "accuracy",
                            "shuffle_queue_fill", "examples_per_sec"}
    assert {tag: sorted(steps) for tag, steps in scalars.items()} == {tag: [10, 20, 30] for tag in scalars}
    assert "graph_def" in kinds  # the Graphs tab
    for step in (10, 20, 30):
        assert scalars["loss"][step] == pytest.approx(
            scalars["cross_entropy"][step] + scalars["regularization_loss"][step], rel=1e-5)
        epochs = math.floor(step * batch / 8000)
        assert scalars["learning_rate"][step] == pytest.approx(0.1 * 0.99 ** epochs, rel=1e-6)
        correct = scalars["accuracy"][step] * batch
        assert correct == pytest.approx(round(correct), abs=1e-3) and 0 < correct <= batch
        assert 0 <= scalars["shuffle_queue_fill"][step] <= 1
        assert scalars["examples_per_sec"][step] > 0
    # The loss falls. Each value is one batch's, so noisy: 40 runs on the bundled sample gave
    # 1.18 (sd 0.07) at step 10 and 0.63 (sd 0.08) at step 30, a fall of 0.56 (sd 0.10, least 0.39 of 40);
    # 0.2 is 3.7 sd below that mean. Training that does not learn keeps the fall near 0.
    assert scalars["cross_entropy"][30] < scalars["cross_entropy"][10] - 0.2, scalars["cross_entropy"]
    assert max(scalars["shuffle_queue_fill"].values()) > 0

    # mnist_test.py: test accuracy at the checkpoint's global_step, in the sibling run folder.
    step, accuracy, _ = mnist_test.test(str(model), data, once=True, log=lambda m: None)
    scalars, _ = events(model / mnist_test.EVAL_LOG_DIR)
    assert scalars == {"accuracy": {30: pytest.approx(accuracy)}} and step == 30

    # What `tensorboard --logdir model` shows: both runs, accuracy in each.
    multiplexer = pytest.importorskip("tensorboard.backend.event_processing.event_multiplexer")
    runs = multiplexer.EventMultiplexer()
    runs.AddRunsFromDirectory(str(model))
    runs.Reload()
    assert set(runs.Runs()) == {"train", "eval"}
    assert [e.step for e in runs.Scalars("eval", "accuracy")] == [30]
    assert [e.step for e in runs.Scalars("train", "accuracy")] == [10, 20, 30]


def test_course_pipeline_writes_the_same_summaries(sample_workdir, tmp_path):
    with tf.Graph().as_default():
        mnist_backward.backward(steps=10, batch_size=50, data_dir=str(sample_workdir / "data"),
                                model_dir=str(tmp_path), pipeline="course", log=lambda m: None, summary_every=5)
    scalars, _ = events(tmp_path / mnistkit.summaries.TRAIN_LOG_DIR)
    assert len(scalars) == 7 and all(sorted(steps) == [5, 10] for steps in scalars.values())
    assert scalars["loss"][10] == pytest.approx(scalars["cross_entropy"][10] + scalars["regularization_loss"][10],
                                                rel=1e-5)
