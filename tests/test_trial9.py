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
h. Pictures named to the app of which none opens as a picture (a text file, a file that only ends in .png) are
   said without loading the model (TensorFlow's import: 5 to 9 s), as missing ones were; with one that opens, a
   model that cannot be loaded is still said first.
i. A picture sent to the board's picture routes as a form (curl -F) or as curl -d's form text is told how to send
   the picture's bytes, not only `not an image file`; in zh too.
j. A port taken by another board is said before the model loads, not after TensorFlow's import.
k. The generator's decoding processes end at SIGTERM (the pool's end), never raise the parent's Stopped in a
   worker, which once left one blocked for ever on the task queue's lock and the generator waiting for it.
l. mnist_export.py's --export-dir naming a file (a .tflite it wrote, a picture) is said to be a file at once, not
   `cannot write the export (Not a directory)` after the model's load.
m. `mnist_test.py --once` on a folder without a checkpoint file says so before the test records are read whole
   (TensorFlow's import), as it says a folder that is not there.
"""
import json
import subprocess
import sys
import types

import pytest

from conftest import ROOT, copy_into, run_main, shown, tree_digests, wait_limit
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


@pytest.mark.quick
def test_pictures_of_which_none_can_be_read_are_said_without_loading_the_model(tmp_path):
    """Fails before the fix: the model was loaded, TensorFlow imported (5 to 9 s), before `notes.txt: not an image
    file`; only pictures that were not there at all skipped the load."""
    folder_of(tmp_path / "model", networks.MLP)
    (tmp_path / "notes.txt").write_text("my digits\n")
    (tmp_path / "fake.png").write_text("not a picture")
    result, imported = run_traced("mnist_app.py", "notes.txt", "fake.png", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr.splitlines() == ["error: notes.txt: not an image file", "error: fake.png: not an image file"]
    assert tensorflow_modules(imported) == []


@pytest.mark.quick
def test_a_model_that_cannot_be_loaded_is_still_said_first_when_a_picture_opens(tmp_path):
    """A guard of the fix above: a picture that opens (blank here, refused once read) loads the model before any
    picture is read, as before, so a damaged checkpoint is said first, in one line, and ends the run (exit 1)."""
    from PIL import Image
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mnist_model-1.index").write_bytes(b"garbage")
    (tmp_path / "model" / "mnist_model-1.data-00000-of-00001").write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("my digits\n")
    Image.new("L", (100, 100), 255).save(tmp_path / "blank.png")
    done = run_main("mnist_app.py", "notes.txt", "blank.png", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ./model/mnist_model-1: checkpoint is damaged"), lines


def form_of(picture):
    """(body, content type) of a multipart form holding `picture` (bytes) as its field `file`, as curl -F sends it."""
    bound = "----trial9"
    body = (f"--{bound}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"seven.png\"\r\n"
            "Content-Type: image/png\r\n\r\n").encode() + picture + f"\r\n--{bound}--\r\n".encode()
    return body, f"multipart/form-data; boundary={bound}".encode()


@pytest.mark.quick
@pytest.mark.parametrize("route", ["/board/predict", "/board/inside"])  # /board/why, /board/playback alike
def test_a_picture_sent_as_a_form_is_told_how_to_send_its_bytes(route, tmp_path):
    """Fails before the fix: `picture: not an image file` for a picture that is one, sent in a form (curl -F),
    where the routes take its bytes."""
    import mnist_app
    from test_board_learn import board_on
    from test_board_routes import OWN_HOST, Asked
    from test_board_zh import ZH, words_left
    board, served = board_on(tmp_path / "model", tmp_path)
    served.model.prepare = lambda data, name: mnist_app.prepared_pixels(data, name=name)  # the app's, as served
    body, kind = form_of(b"\x89PNG\r\n\x1a\n")
    answer = Asked(board, "POST", route, body, headers=(OWN_HOST, ZH, (b"content-type", kind)))
    found = json.loads(answer.body)
    send = "curl --data-binary @photo.jpg -H X-Filename:photo.jpg http://127.0.0.1:8501" + route
    assert (answer.status, found["error"]) == (400, f"POST {route} takes a picture's own bytes, not a form holding it "
                                                    f"(curl -F); send the file itself as the body: {send}")
    assert found["zh"] == (f"POST {route} 接收的是图片本身的字节，不是装着图片的表单（curl -F）；请把文件本身作为请求体发送："
                           f"{send}")
    assert words_left(found["zh"], send, f"POST {route}", "curl -F") == []


@pytest.mark.quick
def test_a_picture_curl_d_sent_as_form_text_is_told_how_to_send_its_bytes(tmp_path):
    """Fails before the fix: `picture: not an image file` alone, for a picture curl -d sent with its line ends
    dropped (application/x-www-form-urlencoded)."""
    import mnist_app
    from test_board_learn import board_on
    from test_board_routes import OWN_HOST, Asked
    board, served = board_on(tmp_path / "model", tmp_path)
    served.model.prepare = lambda data, name: mnist_app.prepared_pixels(data, name=name)
    answer = Asked(board, "POST", "/board/predict", b"\x89PNG\x1a broken",
                   headers=(OWN_HOST, (b"content-type", b"application/x-www-form-urlencoded")))
    assert answer.status == 400
    assert answer.error().startswith("picture: ") and answer.error().endswith(
        " (curl -d sent it as form text, its line ends dropped); send the file itself as the body: curl --data-binary "
        "@photo.jpg -H X-Filename:photo.jpg http://127.0.0.1:8501/board/predict"), answer.error()


@pytest.mark.quick
@pytest.mark.parametrize("body", [b"not a picture", b"\x89PNG\r\n\x1a\n broken", b"\xff\xd8\xff\nbroken"])
def test_bytes_that_are_no_picture_stripped_of_line_ends_get_no_curl_hint(body, tmp_path):
    """urllib's POST says application/x-www-form-urlencoded too, its bytes whole: text, or a picture whose line
    ends are there, is no picture curl -d cut. Fails before formats.line_ends_dropped: the curl -d hint."""
    import mnist_app
    from test_board_learn import board_on
    from test_board_routes import OWN_HOST, Asked
    board, served = board_on(tmp_path / "model", tmp_path)
    served.model.prepare = lambda data, name: mnist_app.prepared_pixels(data, name=name)
    answer = Asked(board, "POST", "/board/predict", body,
                   headers=(OWN_HOST, (b"content-type", b"application/x-www-form-urlencoded")))
    assert answer.status == 400 and answer.error().startswith("picture: ") and "curl" not in answer.error(), \
        answer.error()


@pytest.mark.quick
def test_a_port_taken_is_said_before_the_model_loads(tmp_path):
    """Fails before the fix: a second `mnist_app.py --serve` loaded the model first (TensorFlow's import), then said
    `cannot listen there (Address already in use)`: 5 s on a busy 2-core machine."""
    import socket
    folder_of(tmp_path / "model", networks.MLP)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        result, imported = run_traced("mnist_app.py", "--serve", "--port", str(port), cwd=tmp_path)
    finally:
        taken.close()
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr == (f"error: 127.0.0.1:{port}: cannot listen there (Address already in use); give another "
                             "--port\n")
    assert tensorflow_modules(imported) == []


DECODING_SIGNALS = """
import signal
from mnistkit import errors, writer

def stopped(signum, frame):
    raise errors.Stopped(signum)

def dispositions():
    return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, signal.getsignal(signal.SIGINT) == signal.SIG_IGN

if writer.start_method() == "fork":
    signal.signal(signal.SIGTERM, stopped)
    with writer.decoding_pool(2) as pool:
        print(*pool.apply(dispositions))
else:
    print("spawn")
"""  # a process of its own: forked from the test's process, whose threads (servers' workers) may hold locks, a worker hung


@pytest.mark.quick
def test_the_decoding_processes_end_at_sigterm_whatever_the_parents_handler():
    """Fails before the fix: the workers kept the parent's SIGTERM handler (fork), which raises Stopped: at the
    pool's end (Pool.terminate's SIGTERM) a worker raised it (a `Stopped: 15` traceback), and one whose handler
    ran just before it blocked on the task queue's lock waited for ever, and `mnist_generateds.py --workers 100`
    with it (all records written, 11 minutes, until that worker was killed)."""
    result = subprocess.run([sys.executable, "-c", DECODING_SIGNALS], cwd=ROOT, capture_output=True, text=True,
                            encoding="utf-8", timeout=wait_limit(120))
    assert result.returncode == 0, result.stderr
    if result.stdout == "spawn\n":
        pytest.skip("spawned workers start with the default handlers")
    assert result.stdout == "True True\n", result.stderr


@pytest.mark.quick
@pytest.mark.parametrize("given", ["export/mnist.tflite", "seven.png"])
def test_an_export_dir_that_is_a_file_is_said_to_be_one(given, tmp_path):
    """Fails before the fix: the checkpoint was read and the export begun (TensorFlow's import), then `seven.png:
    cannot write the export (Not a directory); choose another folder with --export-dir`."""
    folder_of(tmp_path / "model", networks.MLP)
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "mnist.tflite").write_bytes(b"TFL3")
    (tmp_path / "seven.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    before = tree_digests(tmp_path)
    result, imported = run_traced("mnist_export.py", "--export-dir", given, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr == (f"error: {given} is a file, not a folder: --export-dir names the folder the exports are "
                             "written into (the default is export)\n")
    assert tensorflow_modules(imported) == []
    assert tree_digests(tmp_path) == before


@pytest.mark.quick
def test_the_evaluator_says_a_folder_without_checkpoints_before_reading_the_records(sample_workdir, tmp_path):
    """Fails before the fix: the test records were read whole first (TensorFlow's import, 4.5 s on a busy
    machine), then `empty: no checkpoint found`; a folder not there was said at once."""
    copy_into(str(tmp_path), str(sample_workdir), "data")
    (tmp_path / "empty").mkdir()
    result, imported = run_traced("mnist_test.py", "--once", "--model-dir", "empty", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr == ("error: empty: no checkpoint found; train first with "
                             f"`python {shown('mnist_backward.py')} --model-dir empty`\n")
    assert tensorflow_modules(imported) == []
