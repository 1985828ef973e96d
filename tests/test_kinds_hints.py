"""More cases of "a folder that is not there is named so" (issue #53 §11), beyond test_server_faults.py's.

mnist_learn.py with a mistyped --model-dir (`modle` beside `model`) said the folder was not there and then
suggested training into it (`python mnist_backward.py --model-dir modle`), which would make the typo's folder;
so did its --undo, --redo, --accept-worse and --discard. Now each says what the other scripts say: no such
folder, did you mean model?
"""
import os

import pytest

from conftest import run_main, shown
from mnistkit import checkpoints


@pytest.mark.quick
@pytest.mark.parametrize("action", [[], ["--undo"], ["--redo"], ["--accept-worse"], ["--discard"]])
def test_a_mistyped_model_dir_for_a_learn_or_its_undo_names_the_folder_meant_and_no_trainer(action, tmp_path):
    (tmp_path / "model").mkdir()
    result = run_main("mnist_learn.py", *action, "--model-dir", "modle", cwd=tmp_path)
    assert result.returncode != 0
    line = result.stderr.strip().splitlines()[-1]
    assert line.endswith("modle: no such folder; did you mean model?"), line  # said once, not "(it is not there"
    assert "backward.py" not in line and "train" not in line, line
    assert not (tmp_path / "modle").exists()


TYPO_REFUSED = ("modle: no such folder; did you mean model? (to start a new model there, make the folder first: "
                "mkdir modle)")


@pytest.mark.quick
@pytest.mark.parametrize("script", ["mnist_backward.py", "mnist_lenet5_backward.py", "mnist_cluster.py"])
def test_a_trainer_refuses_a_new_model_dir_whose_name_is_close_to_a_model_folder_beside_it(script, tmp_path):
    # `--model-dir modle --steps 2100` beside model/ once trained a new model from scratch into modle/, silently
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "checkpoint").write_text('model_checkpoint_path: "mnist_model-1000"\n')
    result = run_main(script, "--model-dir", "modle", "--steps", "1", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr  # bad input (test_stumbles10: was 2)
    assert result.stderr == f"error: {TYPO_REFUSED}\n", result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # nothing made, no task started


@pytest.mark.quick
def test_a_new_model_dir_is_refused_only_beside_a_close_folder(tmp_path):
    (tmp_path / "model").mkdir()  # empty, made by hand: the folder meant all the same (test_stumbles10)
    assert checkpoints.new_folder_typo(str(tmp_path / "modle")) == TYPO_REFUSED.replace(
        "modle", str(tmp_path / "modle")).replace("mean model", f"mean {tmp_path / 'model'}")
    assert checkpoints.new_folder_typo(str(tmp_path / "digits_model")) is None  # not close: a new model, as asked
    (tmp_path / "modle").mkdir()  # made first, as the refusal says: trained into
    assert checkpoints.new_folder_typo(str(tmp_path / "modle")) is None


@pytest.mark.quick
@pytest.mark.parametrize("typed, name, slip", [
    ("modle", "model", True), ("mdoel", "model", True), ("modl", "model", True), ("mdel", "model", True),
    ("models", "model", False), ("mode", "model", False),  # added to or cut short at its end: a name of its own
    ("model_lenet", "model_lenet5", False), ("model_lenet6", "model_lenet5", False),  # other digits: on purpose
    ("model2", "model", False), ("model_async", "model", False), ("model-v2", "model", False),
    ("mine", "model", False), ("model", "model", False), ("modeel_lenet5", "model_lenet5", True),
])
def test_a_typo_is_a_slip_of_the_keys_not_a_name_of_its_own(typed, name, slip):
    assert checkpoints.typo_of(typed, name) is slip


def test_a_mistyped_keep_dir_names_the_folder_meant(trained_copy):
    # `--keep-dir my_digit` beside my_digits/ once said "my_digit.txt: no kept digits (label file not found)"
    (trained_copy / "my_digits").mkdir()
    result = run_main("mnist_learn.py", "--keep-dir", "my_digit", "--steps", "1", cwd=trained_copy)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[-1] == "error: my_digit: no such folder; did you mean my_digits?", result.stderr
    assert not (trained_copy / "my_digit").exists()
    result = run_main("mnist_learn.py", "--keep-dir", "elsewhere", "--steps", "1", cwd=trained_copy)  # nothing close
    assert result.stderr.splitlines()[-1].endswith("no kept digits (label file not found); keep some on the board "
                                                   "first"), result.stderr


def left_checkpoint(folder, names, step=10):
    """A checkpoint of variables `names` (tiny, any shape: networks.guess reads the names) at folder/mnist_model-step,
    as a history/ snapshot or a set-aside learn leaves one: its .index and .data, no record beside it."""
    from tf_compat import tf
    folder.mkdir(parents=True)
    with tf.Graph().as_default():
        for name in names:
            tf.Variable([0.0], name=name)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, str(folder / f"mnist_model-{step}"), write_meta_graph=False,
                                  write_state=False)


@pytest.mark.quick
@pytest.mark.parametrize("script", ["mnist_app.py", "mnist_export.py"])
@pytest.mark.parametrize("where", ["history", "learns/1"])
def test_a_folder_whose_checkpoint_files_show_lenet5_is_sent_to_lenet5s_trainer(script, where, tmp_path):
    # `mnist_app.py --serve --compare mymodel` on a copy of a LeNet-5 folder without its record or newest checkpoint
    # (its history/ snapshots, a set-aside learn left) said `train first with mnist_backward.py` (a new user's trial)
    from mnist_lenet5_forward import NETWORK
    left_checkpoint(tmp_path / "mymodel" / where, NETWORK.variables)
    result = run_main(script, "--model-dir", "mymodel", *(["picture.png"] if script == "mnist_app.py" else []),
                      cwd=tmp_path)
    line = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 1 and f"{shown('mnist_lenet5_backward.py')} --model-dir mymodel" in line, line


@pytest.mark.quick
@pytest.mark.parametrize("script", ["mnist_app.py", "mnist_export.py"])
def test_a_model_dir_that_is_not_there_is_named_so_and_no_trainer(script, tmp_path):
    result = run_main(script, "--model-dir", "mymodel", *(["picture.png"] if script == "mnist_app.py" else []),
                      cwd=tmp_path)
    line = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 1 and line.endswith("mymodel: no such folder; give the folder that holds the "
                                                    "checkpoints"), line


@pytest.mark.quick
@pytest.mark.parametrize("layout", ["built", "the course's"])
def test_a_mistyped_jpg_dir_beside_a_jpg_layout_names_it_and_builds_nothing(layout, tmp_path):
    # `--jpg-dir mnist_dta_jpg` beside the course's 70,000 JPGs once built the bundled sample's digits into the
    # typo's folder and wrote TFRecords of them, exit 0 (a new user's trial)
    jpgs = tmp_path / "mnist_data_jpg"
    (jpgs / ("mnist_train_jpg_60000" if layout == "the course's" else "")).mkdir(parents=True)
    if layout == "built":
        (jpgs / "SOURCE.txt").write_text("the bundled sample\n", encoding="utf-8")
    result = run_main("mnist_generateds.py", "--jpg-dir", "mnist_dta_jpg", "--no-download", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("error: mnist_dta_jpg: no such folder; did you mean mnist_data_jpg? "), result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mnist_data_jpg"]  # no typo's folder, no data/


def folders_at(root, *paths):
    """Make each of `paths` (relative, "/"-separated) under root: a folder, or a file when its name has a dot."""
    for path in paths:
        target = root.joinpath(*path.split("/"))
        if "." in target.name:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(b"")
        else:
            target.mkdir(parents=True, exist_ok=True)


@pytest.mark.quick
def test_a_mistyped_folder_on_the_way_is_offered_for_every_path_that_hints(tmp_path, monkeypatch):
    # `mnist_app.py pic/1.png` for pics/1.png once got no "did you mean": only names beside the path were looked
    # at, and its folder is not there; so for a --model-dir, --data-dir, --jpg-dir, --keep-dir, label file or image
    # folder (which had no hint at all)
    from types import SimpleNamespace
    from mnistkit import idx, learn, records, writer
    from mnistkit.errors import DataError
    folders_at(tmp_path, "runs/model/schedule.json", "exp/data/mnist_train.tfrecords", "mnist_data_jpg/labels.txt",
               "imgs/mnist_data_jpg/SOURCE.txt", "kept/my_digits", "mnist_data_jpg/train")
    monkeypatch.chdir(tmp_path)
    j = os.path.join
    assert checkpoints.not_there(j("rnus", "model")) == f"{j('rnus', 'model')}: no such folder; did you mean " \
                                                       f"{j('runs', 'model')}?"
    assert str(records.no_data(j("exq", "data"))).endswith(f"did you mean {j('exp', 'data')}?")
    assert str(idx.mistyped(j("img", "mnist_data_jpg"))).startswith(
        f"{j('img', 'mnist_data_jpg')}: no such folder; did you mean {j('imgs', 'mnist_data_jpg')}? ")
    assert str(learn.no_kept(SimpleNamespace(folder=j("kpet", "my_digits"), labels=j("kpet", "my_digits.txt")))) \
        == f"{j('kpet', 'my_digits')}: no such folder; did you mean {j('kept', 'my_digits')}?"
    with pytest.raises(DataError, match="did you mean .*labels[.]txt[?]$") as e:
        writer.read_label_file(j("mnist_dta_jpg", "labels.txt"))
    assert str(e.value).endswith(f"did you mean {j('mnist_data_jpg', 'labels.txt')}?")
    with pytest.raises(DataError) as e:  # --train-images: once `cannot list image folder (No such file ...)`
        writer.check_image_folder(j("mnist_dta_jpg", "train"), "labels.txt", [("1.jpg", 1, 1)])
    assert str(e.value) == f"{j('mnist_dta_jpg', 'train')}: image folder not found; did you mean " \
                           f"{j('mnist_data_jpg', 'train')}?"
    assert checkpoints.not_there(j("rnus", "nothing")) == f"{j('rnus', 'nothing')}: no such folder; give the " \
                                                         "folder that holds the checkpoints"  # nothing close in runs/


@pytest.mark.quick
def test_a_trainer_refuses_a_new_model_dir_in_a_folder_mistyped_from_a_model_folders(tmp_path):
    # `--model-dir rnus/model` beside runs/model would train a new model from scratch into rnus/model, as `modle`
    # once did beside model/; runs2/model is a name of its own
    folders_at(tmp_path, "runs/model/schedule.json")
    result = run_main("mnist_backward.py", "--model-dir", os.path.join("rnus", "model"), "--steps", "1", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    typed, meant = os.path.join("rnus", "model"), os.path.join("runs", "model")
    mkdir = "mkdir" if os.name == "nt" else "mkdir -p"
    assert result.stderr == (f"error: {typed}: no such folder; did you mean {meant}? (to start a new model "
                             f"there, make the folder first: {mkdir} {typed})\n"), result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    assert checkpoints.new_folder_typo(str(tmp_path / "runs2" / "model")) is None
    assert checkpoints.path_typo_of(typed, meant)
    assert not checkpoints.path_typo_of(os.path.join("runs2", "model"), meant)


@pytest.mark.quick
@pytest.mark.parametrize("where", ["history", "learns/1"])
def test_the_trainer_a_hint_names_is_the_one_the_folders_checkpoint_files_show(where, tmp_path):
    # learn's "no checkpoint to learn from; train one first" and a gone folder's hint named mnist_backward.py for a
    # LeNet-5 folder without its record (trainer_of read the record and the folder's name, not its files)
    from mnist_lenet5_forward import NETWORK
    from mnistkit import checkpoints
    left_checkpoint(tmp_path / "mymodel" / where, NETWORK.variables)
    assert checkpoints.trainer_of(str(tmp_path / "mymodel")) == "mnist_lenet5_backward.py"
    assert checkpoints.trainer_of(str(tmp_path / "elsewhere")) == "mnist_backward.py"
