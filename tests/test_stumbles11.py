"""A new user's stumbles (issue #53 §11, the eleventh trial): each test fails on the code before its fix."""
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT, ended, read_line, wait_limit

STOPPED_SNIPPET = """\
import os, signal, sys, time
sys.path.insert(0, {root!r})
sys.argv = {argv!r}
import mnistkit.startup
from mnistkit import cli
{before}
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.quick
@pytest.mark.parametrize("argv, before, said", [
    (["mnist_backward.py"], "", "SIGINT: stopped; nothing saved"),
    (["mnist_export.py", "--model-dir", "m"], "", "SIGINT: stopped; nothing saved"),
    (["mnist_app.py", "a.png"], "", "SIGINT: stopped"),
    (["mnist_app.py", "--show-in", "x", "a.png"], "", "SIGINT: stopped; nothing saved"),
    (["mnist_backward.py"], "cli.exit_status(lambda: None)", "SIGINT: stopped"),
], ids=["trainer", "exporter", "app predicting", "app writing its input", "after the work"])
def test_a_stop_in_the_first_second_says_nothing_was_saved_as_tensorflows_import_does(argv, before, said, tmp_path):
    """Fails before the fix: a Ctrl-C in mnist_backward.py's first 0.3 s said `SIGINT: stopped`, at 1.5 s
    `SIGINT: stopped while TensorFlow was imported; nothing saved`: one script, two ways of saying what was written.
    After its work (exit_status returned) a stop no longer claims `nothing saved`."""
    script = tmp_path / "stopped.py"
    script.write_text(STOPPED_SNIPPET.format(root=ROOT, argv=argv, before=before), encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert read_line(child, "ready") == "ready\n"
        child.send_signal(signal.SIGINT)
        _, err = ended(child, "the stopped snippet", 60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert (child.returncode, err) == (130, said + "\n")


DATA_LINE = ("{folder}: no checkpoint found; it holds {what}: a data folder, not a model folder; give --model-dir the "
             "folder a trainer saved its checkpoints into (default {default})")


@pytest.mark.quick
@pytest.mark.parametrize("script, args, what, default", [
    ("mnist_test.py", ["--once", "--model-dir", "data"],
     "TFRecord files (mnist_test.tfrecords and mnist_train.tfrecords)", "model"),
    ("mnist_lenet5_test.py", ["--once", "--model-dir", "data"],
     "TFRecord files (mnist_test.tfrecords and mnist_train.tfrecords)", "model_lenet5"),
    ("mnist_export.py", ["--model-dir", "data"], "TFRecord files (mnist_test.tfrecords and mnist_train.tfrecords)",
     "model"),
    ("mnist_app.py", ["--model-dir", "my pics", "my pics/two.png"], "pictures (one.jpg and two.png)", "model"),
    ("mnist_export.py", ["--model-dir", "my pics"], "pictures (one.jpg and two.png)", "model"),
])
def test_a_data_folder_given_as_model_dir_is_named_a_data_folder_not_a_place_to_train(script, args, what, default,
                                                                                       tmp_path):
    """Fails before the fix: `mnist_test.py --once --model-dir data` (the app, the exporter) said `data: no
    checkpoint found; train first with `python mnist_backward.py --model-dir data``: training into the data."""
    from conftest import run_main
    from test_stumbles12 import data_folder
    data_folder(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    done = run_main(script, *args, cwd=tmp_path)
    line = DATA_LINE.format(folder=args[args.index("--model-dir") + 1], what=what, default=default)
    assert (done.returncode, done.stderr) == (1, f"error: {line}\n")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing made


@pytest.mark.quick
def test_the_evaluators_watch_refuses_a_data_folder_it_would_wait_on_forever(tmp_path):
    """Fails before the fix: `mnist_test.py --model-dir data` (no --once) said `No checkpoint file found` every 5 s
    for ever, watching the data folder for checkpoints."""
    (tmp_path / "data").mkdir()
    for name in ("mnist_train.tfrecords", "mnist_test.tfrecords"):
        (tmp_path / "data" / name).write_bytes(b"")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_test.py"), "--model-dir", "data"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=wait_limit(120), stdin=subprocess.DEVNULL)
    line = DATA_LINE.format(folder="data", what="TFRecord files (mnist_test.tfrecords and mnist_train.tfrecords)",
                            default="model")
    assert (done.returncode, done.stderr) == (1, f"error: {line}\n")


@pytest.mark.quick
@pytest.mark.parametrize("script", ["mnist_backward.py", "mnist_lenet5_backward.py"])
@pytest.mark.parametrize("given, test", [
    ("data/mnist_test.tfrecords", "data/mnist_test.tfrecords"),
    ("data/mnist_te*", "data/mnist_test.tfrecords"),
    ("shards/mnist_test-00000-of-00002.tfrecords", "shards/mnist_test-00000-of-00002.tfrecords"),
], ids=["file", "pattern", "shard"])
def test_a_trainer_refuses_the_test_records_as_its_training_data(script, given, test, tmp_path):
    """Fails before the fix: `mnist_backward.py --data-dir data/mnist_test.tfrecords` trained on the test records
    without a word (a model that then scores its own training data)."""
    from conftest import run_main
    (tmp_path / "data").mkdir()
    (tmp_path / "shards").mkdir()
    for path in ("data/mnist_train.tfrecords", "data/mnist_test.tfrecords",
                 "shards/mnist_test-00000-of-00002.tfrecords"):
        (tmp_path / path).write_bytes(b"")
    done = run_main(script, "--data-dir", given, "--steps", "1", cwd=tmp_path)
    folder = os.path.dirname(test)
    assert (done.returncode, done.stderr) == (1, f"error: {test}: these are the test records, which mnist_test.py "
                                                 f"scores the model on; train on the training records: --data-dir "
                                                 f"{folder} (its mnist_train.tfrecords)\n")
    assert not (tmp_path / "model").exists() and not (tmp_path / "model_lenet5").exists()


@pytest.mark.quick
@pytest.mark.parametrize("given, line", [
    ("my pic/two.jpg", "my pic/two.jpg is a file, not a folder: give --show-input a folder, or FILE.png"),
    ("my pic/big.png", "my pic/big.png is there and is no input --show-input wrote (a 28x28 PNG); give --show-input "
                       "another PATH, which it writes (the file there is kept): --show-input PATH comes before the "
                       "pictures, `--show-input seen seven.png`"),
], ids=["a photo", "a png of another size"])
def test_a_show_input_naming_a_picture_there_is_refused_before_the_prompts(given, line, tmp_path):
    """Fails before the fix: `mnist_app.py --show-input "my pic/two.jpg"` with no picture after it opened the course's
    prompts (here: said the model missing first), and refused the path only once the count was answered."""
    from PIL import Image
    from conftest import run_main
    (tmp_path / "my pic").mkdir()
    Image.new("L", (60, 40), 255).save(tmp_path / "my pic" / "two.jpg")
    Image.new("L", (50, 50), 255).save(tmp_path / "my pic" / "big.png")
    before = {p.name: p.read_bytes() for p in (tmp_path / "my pic").iterdir()}
    done = run_main("mnist_app.py", "--show-input", given, cwd=tmp_path, input="1\n")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {line}\n")  # no prompt printed
    assert {p.name: p.read_bytes() for p in (tmp_path / "my pic").iterdir()} == before


@pytest.mark.quick
def test_the_readmes_say_how_a_hint_names_a_script_as_script_path_does(tmp_path):
    """Fails before the fix: a hint run from the repository's parent folder named `'新 试九/repo/mnist_generateds.py'`
    (cli.script_path: a relative path below the current folder), while both READMEs said `its full path
    elsewhere` only."""
    from mnistkit import cli
    parent = os.path.dirname(ROOT)
    below = cli.script_path("mnist_generateds.py", parent)
    assert below.strip("'") == os.path.join(os.path.basename(ROOT), "mnist_generateds.py")  # relative, as said
    assert cli.script_path("mnist_generateds.py", str(tmp_path)).strip("'") == os.path.join(ROOT, "mnist_generateds.py")
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    said = " ".join(readme.split("A hint names a script as you can run it from where you are:")[1].split("\n\n")[0]
                    .split())
    assert "in the repository's folder" in said and "when the repository is below it" in said, said
    assert "its full path elsewhere" in said, said
    zh = open(os.path.join(ROOT, "README.zh-CN.md"), encoding="utf-8").read()
    assert "仓库在当前目录之下时是从当前目录起的相对路径" in zh and "在别的目录里是完整路径" in zh


@pytest.mark.quick
def test_the_exporter_says_a_mistyped_data_dir_before_a_train_first_hint_that_would_keep_it(tmp_path):
    """Fails before the fix: `mnist_export.py --model-dir empty --data-dir dta` (data/ beside) said ``empty: no
    checkpoint found; train first with `python mnist_backward.py --model-dir empty --data-dir dta` ``: the typo
    kept in the hint, never said to be missing."""
    from conftest import run_main
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mnist_train.tfrecords").write_bytes(b"")
    (tmp_path / "empty").mkdir()
    done = run_main("mnist_export.py", "--model-dir", "empty", "--data-dir", "dta", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "error: dta: no such folder or TFRecord file; did you mean data?\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "empty"]  # no export folder made
