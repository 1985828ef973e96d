"""A new user's stumbles of trial 8, each by kind: docs/tests.md, "Trial 8's stumbles (test_trial8.py)".

a. A hint that sends the user to another script is a command that runs as pasted: `python SCRIPT`, with the
   user's --model-dir when it is not that script's default folder (the scripts are not executable).
b. A folder given to the app that holds no pictures says what it holds instead (a model, folders of pictures), and a
   folder typed where one picture is asked is said to be one.
c. A checkpoint the course's own TF1 code wrote (unnamed variables) is said to be one, with what to do, by every
   script that reads a checkpoint.
d. The progress bar is drawn on a terminal that reports no size (a pseudo-terminal made without one).
e. A checkpoint named that is not there is said with the checkpoints its folder holds.
f. --show-input never writes over a file that is no input it wrote: the picture it reads, or a picture the flag
   swallowed (`--show-input seven.png` for `--show-input seen seven.png`).
g. The app's --model-dir is looked up before the course's first prompt, not after its answer.
h. A TF Serving request of 28x28 pictures, not flattened, is told how to flatten them.
i. A board route mistyped (`/board/lern`) is answered 404 with the route meant.
j. README.zh-CN.md names every script README.md's table names.
k. --idx-dir reads the IDX files unzipped and under Kaggle's names too, and a folder without them is said as one.
"""
import json
import os
import shlex

import numpy as np
import pytest

from conftest import copy_into, run_main, wait_limit
from mnistkit import cli, folders, networks
from mnistkit.errors import DataError
from test_trial7 import folder_of


@pytest.mark.quick
@pytest.mark.parametrize("script, args, folder, network, named", [
    ("mnist_test.py", ["--once", "--model-dir", "runs/lenet"], "runs/lenet", networks.LENET5,
     ["mnist_lenet5_test.py", "--model-dir", "runs/lenet"]),
    ("mnist_test.py", ["--once", "--model-dir", "model_lenet5"], "model_lenet5", networks.LENET5,
     ["mnist_lenet5_test.py"]),
    ("mnist_lenet5_backward.py", ["--model-dir", "mine", "--steps", "5"], "mine", networks.MLP,
     ["mnist_backward.py", "--model-dir", "mine"]),
])
def test_another_networks_script_is_named_as_a_command_that_runs(tmp_path, script, args, folder, network, named):
    """Fails before the fix: the line said `use /path/to/mnist_lenet5_test.py, or another --model-dir`, a path
    that the shell refuses to run (Permission denied, exit 126: the scripts are not executable), and without the
    --model-dir it was given, so the evaluator it names would score ./model_lenet5/ instead."""
    (tmp_path / "runs").mkdir()
    folder_of(tmp_path / folder, network)
    done = run_main(script, *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    hint = done.stderr.split("; use `", 1)[1].split("`, or another --model-dir", 1)[0]
    words = shlex.split(hint)
    assert words[0] == "python" and words[1] == cli.script_path(named[0], str(tmp_path)).strip("'")
    assert words[2:] == named[1:]


@pytest.mark.quick
def test_a_folder_another_networks_trainer_started_names_its_trainer_as_a_command(sample_workdir, tmp_path):
    """Fails before the fix: `train it with /path/to/mnist_lenet5_backward.py, or give another --model-dir`, no
    command (exit 126 as pasted) and without the folder, which the trainer would not have trained."""
    (tmp_path / "started").mkdir()
    (tmp_path / "started" / folders.FOLDER_FILE).write_text(
        json.dumps({"network": networks.to_record(networks.LENET5)}), encoding="utf-8")
    done = run_main("mnist_backward.py", "--model-dir", "started", "--data-dir", str(sample_workdir / "data"),
                    "--steps", "1", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    hint = done.stderr.split("train it with `", 1)[1].split("`, or give another --model-dir", 1)[0]
    assert shlex.split(hint) == ["python", cli.script_path("mnist_lenet5_backward.py", str(tmp_path)).strip("'"),
                                 "--model-dir", "started"]


def a_picture(path):
    """A 28x28 picture file at path (white): what a folder of pictures holds; never read here."""
    from PIL import Image
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("L", (28, 28), 255).save(path)


@pytest.mark.quick
@pytest.mark.parametrize("folder, files, says", [
    ("model", ["mnist_model-2000.index", "checkpoint"],
     "model: no picture files in this folder; it holds checkpoints: a model is given with --model-dir model, the "
     "pictures after it"),
    ("export", ["mnist.tflite"],
     "export: no picture files in this folder; it holds exports: a model is given with --model-dir "
     "export/mnist.tflite, the pictures after it"),
    ("mnist_data_jpg", ["mnist_test_jpg_2000/0_7.png", "mnist_train_jpg_8000/0_5.png", "mnist_test_jpg_2000.txt"],
     "mnist_data_jpg: no picture files in this folder; its folders mnist_data_jpg/mnist_test_jpg_2000 and "
     "mnist_data_jpg/mnist_train_jpg_8000 hold pictures: name one (a folder's own pictures are read, not its "
     "folders')"),
    ("notes", ["a.txt"], "notes: no picture files in this folder"),
])
def test_a_folder_of_no_pictures_says_what_it_holds_instead(tmp_path, monkeypatch, folder, files, says):
    """Fails before the fix: `mnist_app.py model` (the model folder where --model-dir was meant) and `mnist_app.py
    mnist_data_jpg` (the course's data, its pictures one folder down) both said only `no picture files in this
    folder`."""
    from mnistkit import images
    monkeypatch.chdir(tmp_path)
    for name in files:
        path = tmp_path / folder / name
        if name.endswith(".png"):
            a_picture(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
    with pytest.raises(DataError) as said:
        images.picture_paths([folder])
    assert str(said.value) == says


@pytest.mark.quick
def test_a_folder_typed_at_the_prompt_is_said_to_be_a_folder(tmp_path, monkeypatch):
    """Fails before the fix: a folder typed at the course's prompt `the path of test picture:` said `model: cannot
    read image ([Errno 21] Is a directory: 'model')`."""
    from mnistkit import pictures
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model").mkdir()
    with pytest.raises(DataError) as said:
        pictures.load_picture("model")
    line = str(said.value)
    assert line.startswith("model: is a folder, not a picture: give one picture's file here (") and "Errno" not in line
    assert line.endswith(f"`{cli.command('mnist_app.py', 'model')}`)")


COURSE_SHAPES = {"MLP": [[784, 500], [500], [500, 10], [10]],
                 "LENET5": [[5, 5, 1, 32], [32], [5, 5, 32, 64], [64], [3136, 512], [512], [512, 10], [10]]}


def course_original_checkpoint(folder, network):
    """A checkpoint as the course's own TF1 code writes one: get_weight's and get_bias's unnamed tf.Variables in
    forward()'s order, global_step = tf.Variable(0, trainable=False), the moving averages, tf.train.Saver()."""
    from tf_compat import tf
    folder.mkdir(parents=True)
    with tf.Graph().as_default():
        for shape in COURSE_SHAPES[network]:
            tf.Variable(tf.zeros(shape))
        step = tf.Variable(1234, trainable=False)
        averages = tf.train.ExponentialMovingAverage(0.99, step).apply(tf.trainable_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(averages)
            tf.train.Saver().save(sess, str(folder / "mnist_model"), global_step=step)


@pytest.mark.quick
@pytest.mark.parametrize("network", ["MLP", "LENET5"])
def test_the_courses_original_checkpoint_is_named_as_such(network):
    """The count of unnamed variables tells the course's network; this project's names, or a mix, are none."""
    names = [f"Variable{'' if i == 0 else f'_{i}'}" for i in range(len(COURSE_SHAPES[network]) + 1)]
    names += [name + networks.EMA_SUFFIX for name in names[:-1]]
    assert networks.course_original(names) == getattr(networks, network)
    assert networks.course_original(["w1", "b1", "w2", "b2", "global_step"]) is None
    assert networks.course_original(names[:3]) is None
    assert networks.course_original(names + ["w1"]) is None


@pytest.mark.parametrize("script, args", [
    ("mnist_test.py", ["--once"]),
    ("mnist_app.py", ["seven.png"]),
    ("mnist_backward.py", ["--steps", "1300"]),
    ("mnist_learn.py", []),
])
def test_a_checkpoint_of_the_courses_own_code_is_said_to_be_one(sample_workdir, tmp_path, script, args):
    """Fails before the fix: a student's model/ trained with the course's own code said `checkpoint of another
    graph: it has no variable 'b1/ExponentialMovingAverage'` (the same graph, its variables unnamed), the trainer
    the same with `'b1'`, and a learn `holds no network this project knows`."""
    course_original_checkpoint(tmp_path / "model", "MLP")
    copy_into(str(tmp_path), str(sample_workdir), "data")
    a_picture(tmp_path / "seven.png")
    (tmp_path / "my_digits").mkdir()
    a_picture(tmp_path / "my_digits" / "000001_7.jpg")
    (tmp_path / "my_digits.txt").write_text("000001_7.jpg 7\n")
    done = run_main(script, *args, cwd=tmp_path)
    trainer = cli.script_path("mnist_backward.py", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "error: ./model/mnist_model-1234: a checkpoint of the course's original code (the 784-500-10 network), "
        "whose variables have no names ('Variable', 'Variable_1', ...); this project restores them by name (w1, "
        f"b1, ...): train it again here, in a new folder: `python {trainer} --model-dir NEW_FOLDER`")


@pytest.mark.quick
@pytest.mark.parametrize("sized", [False, True])
def test_the_progress_bar_is_drawn_on_a_terminal_that_tells_no_size(monkeypatch, sized):
    """Fails before the fix: on a pseudo-terminal of 0x0 (`script`, `unbuffer`, an exec without a terminal behind
    it) tqdm took 0 columns and -1 rows and drew no bar, only empty lines: a training's first 1,000 steps, ~20 s,
    without a sign. A terminal of its own size keeps its width (the guard)."""
    import fcntl
    import io
    import os
    import pty
    import select
    import struct
    import termios
    main, child = pty.openpty()
    if sized:
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    terminal = io.TextIOWrapper(io.FileIO(child, "w", closefd=False), write_through=True)
    monkeypatch.setattr("sys.stdout", terminal)
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    try:
        bar = cli.progress_bar(total=10, unit="step")
        bar.update(4)
        bar.refresh()
        bar.close()
    finally:
        os.close(child)
    drawn = b""
    try:  # to the end: the terminal passes the bar on to this side in its own time, then says EIO (all read)
        while select.select([main], [], [], wait_limit(30))[0]:
            drawn += os.read(main, 65536)
    except OSError:
        pass
    finally:
        os.close(main)
    drawn = drawn.decode("utf-8")
    lines = [line for line in drawn.replace("\n", "\r").split("\r") if line.strip()]
    assert lines and " 4/10 [" in lines[-1], repr(drawn)
    assert len(lines[-1]) == (100 if sized else 80) - 1, repr(lines[-1])  # tqdm leaves the last column free


@pytest.mark.quick
@pytest.mark.parametrize("steps, holds", [
    (range(1000, 8000, 1000), "; model holds 7, the newest mnist_model-3000, mnist_model-4000, mnist_model-5000, "
                              "mnist_model-6000 and mnist_model-7000"),
    ([2000], "; model holds mnist_model-2000"),
    ([], ""),
])
def test_a_checkpoint_not_there_is_said_with_those_its_folder_holds(tmp_path, steps, holds):
    """Fails before the fix: `mnist_test.py --checkpoint model/mnist_model-1000`, rotated away by the trainer's
    --keep 5 or a step mistyped, said only `no such checkpoint (no mnist_model-1000.index there)`, and the user
    listed the folder to find the steps there."""
    (tmp_path / "model").mkdir()
    for step in steps:
        for end in (".index", ".data-00000-of-00001"):
            (tmp_path / "model" / f"mnist_model-{step}{end}").write_bytes(b"")
    done = run_main("mnist_test.py", "--checkpoint", "model/mnist_model-999", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        1, f"error: model/mnist_model-999: no such checkpoint (no mnist_model-999.index there){holds}\n")


def a_drawing(path, size=200):
    """A user's own picture at path: a 7 drawn black on white, size x size (not a 28x28 input)."""
    from PIL import Image, ImageDraw
    img = Image.new("L", (size, size), 255)
    ImageDraw.Draw(img).line([(size // 4, size // 5), (3 * size // 4, size // 5), (size // 2, 4 * size // 5)],
                             fill=0, width=max(2, size // 14))
    img.save(path)


@pytest.mark.quick
@pytest.mark.parametrize("show_input, picture, count", [
    ("seven.png", "other.png", 1),  # `--show-input seven.png`, the prompts then given other.png
    ("seven.png", "seven.png", 1),  # the picture itself, as a file
    (".", "seven.png", 1),  # the picture itself, in the folder (`--show-input photos photos/`)
    (".", "seven.png", 2),
])
def test_show_input_never_writes_over_a_picture(tmp_path, monkeypatch, show_input, picture, count):
    """Fails before the fix: `mnist_app.py --show-input seven.png` (the picture swallowed as the flag's PATH),
    answered at the prompts with another picture, replaced the user's seven.png with that picture's 28x28 input
    (`input written to seven.png`); `--show-input photos photos/` replaced each PNG it read."""
    from mnistkit import pictures
    monkeypatch.chdir(tmp_path)
    a_drawing(tmp_path / "seven.png")
    a_drawing(tmp_path / "other.png")
    before = (tmp_path / "seven.png").read_bytes()
    with pytest.raises(DataError) as said:
        pictures.claim_input_path(show_input, picture, count, {})
    assert str(said.value).startswith(os.path.join(show_input, "seven.png") if show_input == "." else "seven.png")
    assert "--show-input" in str(said.value)
    assert (tmp_path / "seven.png").read_bytes() == before


@pytest.mark.quick
def test_show_input_writes_over_an_input_it_wrote(tmp_path, monkeypatch):
    """The guard: a rerun writes over the 28x28 PNG it wrote before, and a new path is claimed as before."""
    from mnistkit import pictures
    monkeypatch.chdir(tmp_path)
    a_drawing(tmp_path / "seven.png")
    a_drawing(tmp_path / "seen.png", size=28)
    assert pictures.claim_input_path("seen.png", "seven.png", 1, {}) == "seen.png"
    assert pictures.claim_input_path("new.png", "seven.png", 1, {}) == "new.png"


@pytest.mark.quick
@pytest.mark.parametrize("model_dir, says", [
    ("modle", "error: modle: no such folder; did you mean model?"),
    ("seven.png", "error: seven.png is a file, not a model folder: give the folder holding the checkpoints (or an "
                  "export: a .tflite file, a SavedModel folder)"),
])
def test_a_model_not_there_is_said_before_the_first_prompt(tmp_path, model_dir, says):
    """Fails before the fix: `mnist_app.py --model-dir modle` asked `input the number of test pictures:` first and
    said the folder only once the user had answered it."""
    (tmp_path / "model").mkdir()
    a_drawing(tmp_path / "seven.png")
    done = run_main("mnist_app.py", "--model-dir", model_dir, cwd=tmp_path, input="1\nseven.png\n")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", says + "\n")


@pytest.mark.quick
@pytest.mark.parametrize("request_body, hinted", [
    ({"instances": [[[0.0] * 28] * 28]}, True),
    ({"inputs": {"images": [[[[0.0]] * 28] * 28] * 2}}, True),
    ({"instances": [[0.0] * 783]}, False),  # the guard: another shape has no picture to flatten
    ({"instances": [[[0.0] * 27] * 28]}, False),
])
def test_a_predict_request_of_pictures_not_flattened_is_told_to_flatten_them(request_body, hinted):
    """Fails before the fix: a request of [1, 28, 28] (a picture's rows, as PIL and numpy give them) was refused
    with `expected shape [N, 784] (N >= 1), got [1, 28, 28]`, which a new user read as a wrong picture size."""
    from mnistkit.board import serving
    from mnistkit.board.table import BoardError
    with pytest.raises(BoardError) as said:
        serving.images_of(request_body)
    line = str(said.value)
    assert line.startswith("images: expected shape [N, 784] (N >= 1), got [")
    assert line.endswith(": flatten each 28x28 picture to its 784 pixels, row by row (numpy: .reshape(-1, 784))") \
        == hinted, line


@pytest.mark.quick
@pytest.mark.parametrize("method, path, says", [
    ("POST", "/board/lern", "POST /board/lern: not found; did you mean /board/learn?"),
    ("POST", "/board/learn/und", "POST /board/learn/und: not found; did you mean /board/learn/undo?"),
    ("GET", "/board/kep", "GET /board/kep: not found; did you mean /board/kept?"),
    ("GET", "/nothing/like/it", "GET /nothing/like/it: not found"),  # the guard
])
def test_a_mistyped_board_route_is_answered_with_the_route_meant(method, path, says):
    """Fails before the fix: `curl -X POST .../board/lern` (docs/teach.md's routes typed by hand) was 404
    `POST /board/lern: not found`, with nothing of /board/learn."""
    import asyncio
    from mnistkit.board import app
    from mnistkit.board.table import Board, BoardError
    board = Board(app.ROUTES, None, None)
    with pytest.raises(BoardError) as said:
        asyncio.run(board.answer({}, None, method, path, {}, None))
    assert (said.value.status, str(said.value)) == (404, says)


@pytest.mark.quick
def test_the_chinese_readme_names_every_script_of_the_english_table():
    """Fails before the fix: README.zh-CN.md's table of scripts had no mnist_learn.py or mnist_cluster.py, and the
    whole Chinese README never named mnist_cluster.py: a student reading it did not know the cluster was there."""
    import re
    from conftest import ROOT

    def table_scripts(name, column):
        """The scripts (`mnist_x.py`) named in the cells of `column` of the README's table rows."""
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            cells = [line.split("|")[column] for line in f if line.startswith("| ") and line.count("|") > column]
        return {script for cell in cells for script in re.findall(r"`(\w+\.py)`", cell)}
    english = table_scripts("README.md", 1)  # | script | what it does | course step |
    assert {"mnist_learn.py", "mnist_cluster.py", "mnist_export.py"} <= english
    assert english - {"tf_compat.py"} <= table_scripts("README.zh-CN.md", 2)  # | 课程步骤 | 脚本 | 做什么 |


@pytest.mark.quick
@pytest.mark.parametrize("stored", ["gunzipped", "kaggle"])
def test_idx_files_unzipped_or_under_kaggles_names_are_read(tmp_path, stored):
    """Fails before the fix: `--idx-dir` given the four files gunzipped (train-images-idx3-ubyte) or as Kaggle's
    copies name them (train-images.idx3-ubyte) said `cannot read IDX file ([Errno 2] No such file or directory:
    '.../train-images-idx3-ubyte.gz')`."""
    import gzip
    from mnistkit import idx
    for name in (n for pair in idx.IDX_FILES.values() for n in pair):
        plain = name[:-len(".gz")]
        with gzip.open(os.path.join(idx.BUNDLED_DIR, name), "rb") as f:
            data = f.read()
        (tmp_path / (plain if stored == "gunzipped" else plain.replace("-idx", ".idx", 1))).write_bytes(data)
    for split in ("train", "test"):
        images, labels = idx.read_idx_split(str(tmp_path), split)
        bundled = idx.read_idx_split(idx.BUNDLED_DIR, split)
        assert np.array_equal(images, bundled[0]) and np.array_equal(labels, bundled[1])


@pytest.mark.quick
def test_an_unzipped_idx_file_that_is_wrong_is_named_as_stored(tmp_path):
    """Fails before the fix: a fault of an unzipped file (train-labels-idx1-ubyte, a label 11) was said of the
    gzipped name (train-labels-idx1-ubyte.gz), a file that is not there."""
    import struct
    from mnistkit import idx
    (tmp_path / "train-images-idx3-ubyte").write_bytes(struct.pack(">4I", idx.IMAGE_MAGIC, 2, 28, 28) + bytes(1568))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(struct.pack(">2I", idx.LABEL_MAGIC, 2) + bytes([3, 11]))
    with pytest.raises(DataError) as said:
        idx.read_idx_split(str(tmp_path), "train")
    assert str(said.value) == f"{tmp_path / 'train-labels-idx1-ubyte'}: label 11 is not a digit 0-9"
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(struct.pack(">2I", idx.LABEL_MAGIC, 1) + bytes([3]))
    with pytest.raises(DataError) as said:
        idx.read_idx_split(str(tmp_path), "train")
    assert str(said.value) == (f"{tmp_path}: 2 images in train-images-idx3-ubyte but 1 labels in "
                               "train-labels-idx1-ubyte")


@pytest.mark.quick
def test_a_folder_without_idx_files_is_said_as_one(tmp_path):
    """Fails before the fix: `--idx-dir pictures/` said `cannot read IDX file ([Errno 2] No such file or directory:
    ...)`, an error of the system's, not of the folder given."""
    from mnistkit import idx
    a_picture(tmp_path / "seven.png")
    with pytest.raises(DataError) as said:
        idx.read_idx_split(str(tmp_path), "train")
    assert str(said.value) == (f"{tmp_path}: no train-images-idx3-ubyte.gz here (nor train-images-idx3-ubyte, "
                               f"unzipped); {idx.IDX_FOLDER}, gzipped or not")
