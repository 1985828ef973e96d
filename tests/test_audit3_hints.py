"""A new user's stumbles (issue #53 §11, the third audit): a path one level off, of the keep store or the exports.

`--keep-dir my_digits.txt` (the label file, the name the course's layout shows beside the folder) or
`--keep-dir my_digits/000001_7.jpg` said "is not a folder; move it away or keep digits in another folder": advice
to move the user's own label file or kept picture away. Now the line names the keep folder meant and the flag to
give; any other file is refused as before.

`mnist_export.py --export-dir export/mnist` (TF Serving's model base path, as docs/deploy.md names it) nested the
export (export/mnist/mnist/1, .tflite files inside the base path: TF Serving went on serving version 1), and
`--export-dir export/mnist/1` wrote into the served version; `mnist_backward.py --model-dir export/mnist/1` trained
checkpoints into it, and `mnist_learn.py` there hinted to. Now each is one line naming what the folder is and the
folder to give, before anything is written. A learn with a mistyped --data-dir is the trainer's one line before
any stage runs.
"""
import os

import numpy as np
import pytest

from conftest import run_main, tree_digests
from test_errors import other_graph_checkpoint
from mnistkit import keep
from mnistkit.errors import DataError


@pytest.fixture
def kept(tmp_path):
    """tmp_path/my_digits with one kept digit, its label file beside it; the store."""
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    pixels = np.zeros((28, 28), np.uint8)
    pixels[5:23, 13:16] = 255
    store.keep(pixels, 1)
    return store


@pytest.mark.quick
@pytest.mark.parametrize("given, what", [("my_digits.txt", "the label file"),
                                         ("my_digits/000001_1.jpg", "a kept digit's picture")])
def test_a_file_of_the_keep_folder_given_for_it_names_the_folder_meant(kept, tmp_path, monkeypatch, given, what):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError) as raised:
        keep.KeptDigits(given)
    assert str(raised.value) == f"{given}: is {what} of the keep folder my_digits, not a folder; give --keep-dir " \
                                "my_digits"
    other_graph_checkpoint(tmp_path / "model", hidden=500)  # a model to learn into (no training)
    done = run_main("mnist_learn.py", "--keep-dir", str(tmp_path / given), "--steps", "5", cwd=tmp_path)
    assert done.returncode == 1 and "move it away" not in done.stderr and \
        f"give --keep-dir {tmp_path / 'my_digits'}" in done.stderr, done.stderr


@pytest.mark.quick
def test_from_inside_the_keep_folder_a_kept_picture_names_the_current_folder(kept, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "my_digits")
    with pytest.raises(DataError, match=r"^000001_1.jpg: is a kept digit's picture of the keep folder \., not a "
                                        r"folder; give --keep-dir \.$"):
        keep.KeptDigits("000001_1.jpg")


@pytest.mark.quick
def test_another_file_given_for_the_keep_folder_is_refused_as_before(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("x\n", encoding="utf-8")
    with pytest.raises(DataError, match="is not a folder; move it away or keep digits in another folder"):
        keep.KeptDigits(str(other))


@pytest.fixture
def exported(tmp_path):
    """tmp_path/export as mnist_export.py leaves it (its files stand-ins: no training): mnist/1/ a SavedModel."""
    version = tmp_path / "export" / "mnist" / "1"
    (version / "variables").mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"stand-in")
    (tmp_path / "export" / "mnist.tflite").write_bytes(b"stand-in")
    return tmp_path / "export"


@pytest.mark.quick
@pytest.mark.parametrize("given", ["export/mnist", "export/mnist/1", "export/mnist/1/variables"])
def test_an_export_dir_inside_an_export_is_refused_naming_the_export_folder(exported, tmp_path, given):
    other_graph_checkpoint(tmp_path / "model", hidden=500)
    before = tree_digests(exported, with_folders=True)
    done = run_main("mnist_export.py", "--export-dir", given, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith(f"error: {given} ") and "Traceback" not in done.stderr
    assert "inside the export folder export: give --export-dir export" in done.stderr, done.stderr
    assert tree_digests(exported, with_folders=True) == before


# not quick: over 2 s a run (make test runs it), so make test-quick keeps under a minute
@pytest.mark.parametrize("given", ["export/mnist/1", "export/mnist", "export"])
def test_a_trainer_or_a_learn_given_an_export_for_its_model_dir_writes_nothing_there(exported, sample_workdir,
                                                                                      tmp_path, given):
    before = tree_digests(exported, with_folders=True)
    data = os.path.join(sample_workdir, "data")
    for script, *rest in (("mnist_backward.py", "--data-dir", data, "--steps", "5"),
                          ("mnist_lenet5_backward.py", "--data-dir", data, "--steps", "5"),
                          ("mnist_learn.py", "--steps", "5"), ("mnist_learn.py", "--undo")):
        done = run_main(script, "--model-dir", given, *rest, cwd=tmp_path)
        assert done.returncode == 1 and done.stderr.splitlines()[-1].startswith(f"error: {given} ") and \
            "not a checkpoint folder: give the checkpoint folder it was exported from" in done.stderr, \
            (script, done.stderr)
        assert tree_digests(exported, with_folders=True) == before, script


@pytest.mark.quick
def test_a_learn_with_a_mistyped_data_dir_is_one_line_before_any_stage_runs(kept, tmp_path):
    """Before: the kept digits copied and turned into TFRecords (about 25 s), then the trainer's line and the
    learn's own, two lines; now the trainer's one line (did you mean) before anything runs, and its zh twin."""
    other_graph_checkpoint(tmp_path / "model", hidden=500)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mnist_train.tfrecords").write_bytes(b"")
    done = run_main("mnist_learn.py", "--data-dir", "dta", "--keep-dir", kept.folder, "--steps", "5", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr == "error: dta: no such folder or TFRecord file; did you mean data?\n"
    assert "learning from" not in done.stdout and "preparing" not in done.stdout, done.stdout
    from mnistkit.board import zh
    assert zh.twin(done.stderr.strip(), 409) == "dta：没有这个文件夹或 TFRecords 文件；你是想写 data 吗？"
