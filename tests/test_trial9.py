"""A new user's stumbles of trial 9, each by kind: docs/tests.md, "Trial 9's stumbles (test_trial9.py)".

a. A model folder the trainer cannot write, another run's under way in it, is said at once, before TensorFlow's
   import (seconds), not after it and the graph.
b. An undo, a redo or a discard with nothing to act on is said at once, before the newest checkpoint is looked up
   (TensorFlow reads the `checkpoint` index).
c. A history snapshot that cannot be saved says why (`no space left on device`), not `Graph execution error:`.
d. A label file that is no text (a picture, a TFRecord file) or a folder is said to be what it is, not read as
   UTF-16 text or refused with `(Is a directory)`.
e. mnist_generateds.py's --data-dir naming a file is said to be a file, not `cannot write output folder (File
   exists)`.
f. A --data-dir that is a model folder is said to be one, not told to have TFRecords written into it.
g. A mistyped option is offered the option meant, never an unrelated one that only shares the dashes (`--once`
   for the trainer was offered `--job_name`, `--steps` for the evaluator `--help`).
"""
import os
import subprocess
import sys
import types

import pytest

from conftest import run_main, tree_digests
from test_cli import run_traced, tensorflow_modules
from test_trial7 import folder_of
from mnistkit import folders, history, networks
from mnistkit.errors import DataError


@pytest.mark.quick
def test_a_model_folder_another_trainer_writes_is_refused_before_tensorflow(tmp_path):
    """Fails before the fix: the line came after TensorFlow's import and the graph (12 s on a busy 2-core machine;
    here, without ./data, the missing records were said instead)."""
    (tmp_path / "model").mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        (tmp_path / "model" / folders.LOCK_FILE).write_text(
            f"{other.pid}\ntraining\npython mnist_backward.py --steps 400\n", encoding="utf-8")
        result, imported = run_traced("mnist_backward.py", "--steps", "10", cwd=tmp_path)
    finally:
        other.kill()
        other.wait()
    assert result.returncode == 1, result.stderr
    assert result.stderr == (f"error: ./model/: `python mnist_backward.py --steps 400` (pid {other.pid}, training) "
                             "is writing this folder; wait for it or use another --model-dir\n")
    assert tensorflow_modules(imported) == []


@pytest.mark.quick
@pytest.mark.parametrize("flag, line", [
    ("--undo", "model/schedule.json: no learn to undo"),
    ("--redo", "model: no undone learn to redo"),
    ("--discard", "model: no learned checkpoint waits for a choice"),
])
def test_nothing_to_undo_redo_or_discard_is_said_before_tensorflow(flag, line, tmp_path):
    """Fails before the fix: the newest checkpoint was looked up first, its `checkpoint` index read with TensorFlow
    (5 to 6 s), before the refusal."""
    folder_of(tmp_path / "model", networks.MLP)
    (tmp_path / "model" / "checkpoint").write_text('model_checkpoint_path: "mnist_model-2000"\n')
    before = tree_digests(tmp_path)
    result, imported = run_traced("mnist_learn.py", flag, "--model-dir", "model", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (1, f"error: {line}\n")
    assert tensorflow_modules(imported) == []
    assert tree_digests(tmp_path) == before


class FakeOpError(Exception):
    """Stands for tf.errors.OpError: TensorFlow's message of a save on a full disk, its first line a banner."""


@pytest.mark.quick
@pytest.mark.parametrize("message, why", [
    ("Graph execution error:\n\nDetected at node 'save/SaveV2' defined at ...\nNode: 'save/SaveV2'\n"
     "history/.mnist_model-5.tmp_temp/part-00000-of-00001.data-00000-of-00001.tempstate1; No space left on device\n"
     "\t [[{{node save/SaveV2}}]]", "no space left on device"),
    ("Graph execution error:\n\nhistory: Permission denied", "history: Permission denied"),
])
def test_a_history_snapshot_that_cannot_be_saved_says_why(message, why, tmp_path):
    """Fails before the fix: `cannot save the history snapshot (Graph execution error:)`, the first line of
    TensorFlow's message, a banner that says nothing."""
    class Saver:
        def save(self, *args, **kwargs):
            raise FakeOpError(message)
    snapshots = history.Snapshots.__new__(history.Snapshots)
    snapshots.tf = types.SimpleNamespace(errors=types.SimpleNamespace(OpError=FakeOpError))
    snapshots.folder, snapshots.name, snapshots.saver, snapshots.plan = str(tmp_path / "history"), "mnist_model", \
        Saver(), [5, 10]
    with pytest.raises(DataError) as raised:
        snapshots.save(None, 5)
    assert str(raised.value) == f"{tmp_path / 'history' / 'mnist_model-5'}: cannot save the history snapshot ({why})"


def course_layout(work):
    """work/train/, work/test/ (one white 28x28 JPG each, 0_5.jpg and 0_7.jpg) and their label files train.txt and
    test.txt."""
    from PIL import Image
    for split, digit in (("train", 5), ("test", 7)):
        (work / split).mkdir()
        Image.new("L", (28, 28), 255).save(work / split / f"0_{digit}.jpg")
        (work / f"{split}.txt").write_text(f"0_{digit}.jpg {digit}\n")


@pytest.mark.quick
@pytest.mark.parametrize("labels, line", [
    ("train/0_5.jpg", "train/0_5.jpg: a JPEG image, not a label file"),  # UTF-16 or UTF-32 text, NUL bytes
    ("train", "train: a folder, not a label file"),  # --train-images and --train-labels swapped: (Is a directory)
])
def test_a_label_file_that_is_no_text_is_said_to_be_what_it_is(labels, line, tmp_path):
    """Fails before the fix: a picture given as the label file was `train/0_5.jpg:1: UTF-16 or UTF-32 text
    (Notepad's "Unicode": the line has NUL bytes), not UTF-8: save the label file as UTF-8`, and a folder
    `train: cannot read label file (Is a directory)`."""
    course_layout(tmp_path)
    before = tree_digests(tmp_path)
    done = run_main("mnist_generateds.py", "--train-images", "train", "--train-labels", labels, "--test-images",
                    "test", "--test-labels", "test.txt", "--data-dir", "out", "--quiet", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr == (f"error: {line}; give the text file of `<file name> <digit>` lines (the images' folder "
                           "goes to --train-images or --test-images)\n")
    assert tree_digests(tmp_path) == before


@pytest.mark.quick
def test_a_data_dir_that_is_a_file_is_said_to_be_one(tmp_path):
    """Fails before the fix: `out/mnist_train.tfrecords: cannot write output folder (File exists)`."""
    course_layout(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mnist_train.tfrecords").write_bytes(b"")
    before = tree_digests(tmp_path)
    done = run_main("mnist_generateds.py", "--train-images", "train", "--train-labels", "train.txt", "--test-images",
                    "test", "--test-labels", "test.txt", "--data-dir", "out/mnist_train.tfrecords", "--quiet",
                    cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ("error: out/mnist_train.tfrecords is a file, not a folder: --data-dir names the folder the "
                           "TFRecord files are written into (its folder: --data-dir out)\n")
    assert tree_digests(tmp_path) == before


@pytest.mark.quick
@pytest.mark.parametrize("script, args", [
    ("mnist_backward.py", ["--steps", "10", "--model-dir", "other"]),
    ("mnist_test.py", ["--once"]),
])
def test_a_data_dir_that_is_a_model_folder_is_said_to_be_one(script, args, tmp_path):
    """Fails before the fix: `model/mnist_train.tfrecords: TFRecord file not found; run `python
    mnist_generateds.py --data-dir model` first`, a command that writes the records into the model folder."""
    folder_of(tmp_path / "model", networks.MLP)
    before = tree_digests(tmp_path)
    result, imported = run_traced(script, "--data-dir", "model", *args, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ("error: model holds checkpoints, not TFRecord files: it is a model folder (--model-dir "
                             "model); give --data-dir the folder of the TFRecord files (default ./data)\n")
    assert tensorflow_modules(imported) == []
    assert tree_digests(tmp_path) == before


@pytest.mark.quick
@pytest.mark.parametrize("script, typed, line", [
    ("mnist_backward.py", ["--once"], "unknown option --once; --help lists the options"),  # was: --job_name
    ("mnist_test.py", ["--steps", "5"], "unknown option --steps; --help lists the options"),  # was: --help
    ("mnist_backward.py", ["--model_dir", "m"], "unknown option --model_dir; did you mean --model-dir?"),
    ("mnist_app.py", ["--port8501"], "unknown option --port8501; did you mean --port?"),
])
def test_a_mistyped_option_is_offered_only_an_option_close_to_it(script, typed, line, tmp_path):
    """Fails before the fix: the options were compared with their dashes, which every one has: `--once` was close
    enough to the trainer's --job_name, `--steps` to the evaluator's --help."""
    done = run_main(script, *typed, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, f"{script}: error: {line}\n")
