"""Bad input is said in one line before TensorFlow is imported (which costs 3-5 s), with "did you mean" for a typo.

Each case runs a script in a process of its own, as `python SCRIPT ARGS` runs it, traced (test_cli.run_traced:
the modules imported when it ends). So a case passes only when its line came, and the process ended, without
TensorFlow: no timing. Once, a mistyped --model-dir for mnist_test.py, a missing picture or an empty model
folder for mnist_app.py, a missing --mix-records file, --checkpoint or --keep-dir each answered only after
TensorFlow had loaded (the check came after a read that imports it); a watch of a mistyped --model-dir waited
forever; a mistyped picture or label file had no "did you mean", nor a picture in a mistyped folder (`图片/seven.png`
for 图片集/seven.png).
bench/errors.py measures the times (docs/performance.md).
"""
import os

import pytest
from PIL import Image

from conftest import shown
from mnistkit.errors import DataError
from test_cli import run_traced, tensorflow_modules

PICTURE = "seven.png"
JPG = os.path.join("mnist_data_jpg", "mnist_test_jpg_2000")
PICTURES = "图片集"  # a folder of pictures: PICTURE again, and a file that is no picture (notes.txt)


@pytest.fixture(scope="module")
def work(sample_workdir, tmp_path_factory):
    """A folder as a user's: data/ (the sample's records, which are read whole only with TensorFlow), model/ (a
    checkpoint's files and index, whose read imports TensorFlow), empty/, mnist_data_jpg/ (the sample's JPGs),
    PICTURE and PICTURES/."""
    work = tmp_path_factory.mktemp("errors_fast")
    for name in ("data", "mnist_data_jpg"):
        os.symlink(os.path.join(sample_workdir, name), work / name)
    (work / "model").mkdir()
    (work / "empty").mkdir()
    (work / "model" / "checkpoint").write_text('model_checkpoint_path: "mnist_model-1000"\n')
    for ext in (".index", ".data-00000-of-00001", ".meta"):  # read only with TensorFlow: never, in these cases
        (work / "model" / f"mnist_model-1000{ext}").write_bytes(b"x")
    first = sorted(os.listdir(sample_workdir / JPG))[0]
    Image.open(sample_workdir / JPG / first).save(work / PICTURE)
    (work / PICTURES).mkdir()
    Image.open(sample_workdir / JPG / first).save(work / PICTURES / PICTURE)
    (work / PICTURES / "notes.txt").write_text("not a picture\n", encoding="utf-8")
    return work


# (script, arguments, the one line's end)
CASES = [
    ("mnist_test.py", ["--model-dir", "modle", "--once"], "error: modle: no such folder; did you mean model?"),
    ("mnist_lenet5_test.py", ["--model-dir", "modle", "--once"], "error: modle: no such folder; did you mean model?"),
    ("mnist_test.py", ["--model-dir", "modle", "--data-dir", "data", "--data-dir", "data"],
     "error: modle: no such folder; did you mean model?"),
    ("mnist_test.py", ["--model-dir", "modle"],  # a watch: it once waited for modle's checkpoints forever
     "error: modle: no such folder; did you mean model? (to watch a model still to be trained there, make the "
     "folder first: mkdir modle)"),
    ("mnist_test.py", ["--checkpoint", "model/mnist_model-99"],
     "error: model/mnist_model-99: no such checkpoint (no mnist_model-99.index there); model holds "
     "mnist_model-1000"),
    ("mnist_app.py", ["sevne.png"], "error: sevne.png: file not found; did you mean seven.png?"),
    ("mnist_app.py", ["nosuchpicture.png"], "error: nosuchpicture.png: file not found"),
    ("mnist_app.py", [os.path.join("图片", PICTURE)],  # a mistyped folder: once no hint (only names beside it)
     f"error: {os.path.join('图片', PICTURE)}: file not found; did you mean {os.path.join(PICTURES, PICTURE)}?"),
    ("mnist_app.py", [os.path.join("图片", "notes.png")],  # notes.txt is there, but no picture: not offered
     f"error: {os.path.join('图片', 'notes.png')}: file not found"),
    ("mnist_app.py", ["图片"], f"error: 图片: file not found; did you mean {PICTURES}?"),  # a folder of pictures
    ("mnist_test.py", ["--data-dir", os.path.join("dta", "mnist_test.tfrecords"), "--once"],  # the folder mistyped
     f"error: {os.path.join('dta', 'mnist_test.tfrecords')}: no such folder or TFRecord file; did you mean "
     f"{os.path.join('data', 'mnist_test.tfrecords')}?"),
    ("mnist_app.py", ["--model-dir", "empty", PICTURE],  # the graph was built (TensorFlow) before the folder was read
     f"error: empty: no checkpoint found; train first with `python {shown('mnist_backward.py')} "
     "--model-dir empty`"),
    ("mnist_backward.py", ["--mix-records", "kept.tfrecords", "--steps", "1"],
     "error: kept.tfrecords: no such folder or TFRecord file; run `python "
     f"{shown('mnist_generateds.py')} --data-dir kept.tfrecords` first"),
    ("mnist_learn.py", ["--keep-dir", "my_digits"],
     "error: my_digits.txt: no kept digits (label file not found); keep some on the board first"),
    ("mnist_generateds.py", ["--train-images", os.path.join("mnist_data_jpg", "mnist_train_jpg_8000"),
                             "--train-labels", os.path.join("mnist_data_jpg", "mnist_train_jpg_800.txt"),
                             "--test-images", JPG, "--test-labels", JPG + ".txt", "--data-dir", "out"],
     f"error: {os.path.join('mnist_data_jpg', 'mnist_train_jpg_800.txt')}: label file not found; did you mean "
     f"{os.path.join('mnist_data_jpg', 'mnist_train_jpg_8000.txt')}?"),  # the test split's: no typo of it
]


@pytest.mark.quick
@pytest.mark.parametrize("script, args, line", CASES, ids=[f"{c[0]} {' '.join(c[1])}" for c in CASES])
def test_bad_input_is_one_line_before_tensorflow_is_imported(work, script, args, line):
    result, imported = run_traced(script, *args, cwd=work)
    assert tensorflow_modules(imported) == [], result.stderr  # said (or not) only once TensorFlow was imported
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [line]  # one line, naming the path
    assert sorted(os.listdir(work)) == ["data", "empty", "mnist_data_jpg", "model", PICTURE, PICTURES]  # nothing made


@pytest.mark.quick
def test_pictures_of_which_none_is_there_get_their_lines_and_json_without_the_model(work):
    result, imported = run_traced("mnist_app.py", "--json", "sevne.png", "nope.png", cwd=work)
    assert (tensorflow_modules(imported), result.returncode) == ([], 1), result.stderr
    assert result.stderr.splitlines() == ["error: sevne.png: file not found; did you mean seven.png?",
                                          "error: nope.png: file not found"]
    assert '"error": "sevne.png: file not found; did you mean seven.png?"' in result.stdout


@pytest.mark.quick
def test_the_app_asks_one_function_whether_there_is_a_model_for_its_load_and_for_missing_pictures(work, monkeypatch):
    # mnist_app.application once checked the model folder itself (checkpoint files, an export) before it skipped
    # the load for pictures of which none is there: a second copy of load_predictor's check, which could drift
    import mnist_app
    asked = []

    def loader(model_dir):
        asked.append(model_dir)
        raise DataError(f"{model_dir}: no model")
    monkeypatch.setattr(mnist_app, "model_loader", loader)
    monkeypatch.chdir(work)
    for load in (lambda: mnist_app.load_predictor("model"), lambda: mnist_app.application(["nope.png"], "model"),
                 lambda: mnist_app.application([PICTURE], "empty")):
        with pytest.raises(DataError, match="no model"):
            load()
    assert asked == ["model", "model", "empty"]


@pytest.mark.quick
@pytest.mark.parametrize("model_dir", ["empty", "modle", PICTURE, os.path.join("data", "mnist_train.tfrecords")])
def test_a_folder_without_a_model_is_said_alike_by_the_load_and_before_missing_pictures(work, model_dir, monkeypatch):
    import mnist_app
    monkeypatch.chdir(work)
    with pytest.raises(DataError) as loaded:
        mnist_app.load_predictor(model_dir)
    with pytest.raises(DataError) as before_pictures:
        mnist_app.application(["nope.png"], model_dir)
    assert str(before_pictures.value) == str(loaded.value) and str(loaded.value).startswith(model_dir)


@pytest.mark.quick
def test_a_folder_of_a_v1_checkpoint_holds_a_model_for_the_app(tmp_path):
    # the one file of a V1 checkpoint (mnist_model-1000, no .index) is no V2 checkpoint's: the app's check took
    # the folder for one without a checkpoint (test_user_paths' run with a V1 model said `no checkpoint found`)
    import mnist_app
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "mnist_model-1000").write_bytes(b"x")  # read only with TensorFlow: never, here
    assert callable(mnist_app.model_loader(str(tmp_path / "v1")))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes-1000").write_bytes(b"x")  # not the course's name: no checkpoint of the app's
    with pytest.raises(DataError, match="no checkpoint found"):
        mnist_app.model_loader(str(tmp_path / "other"))


@pytest.mark.quick
def test_the_watch_still_waits_for_a_model_folder_of_a_name_of_its_own(work):
    # model2 is no slip of the keys for model (checkpoints.typo_of): a trainer about to make it is waited for
    import mnist_backward
    import mnist_forward
    import mnist_test
    assert mnist_test.looked_up(str(work / "model2"), mnist_forward, mnist_backward, watch=True) is None
    with pytest.raises(DataError, match="did you mean .*model[?] [(]to watch a model still to be trained there"):
        mnist_test.looked_up(str(work / "modle"), mnist_forward, mnist_backward, watch=True)
    with pytest.raises(DataError, match="modle: no such folder; did you mean .*model[?]$"):
        mnist_test.looked_up(str(work / "modle"), mnist_forward, mnist_backward)
