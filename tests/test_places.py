"""A --model-dir one level off: each script names what is there and what to give instead,
and a "no checkpoint found" hint keeps the user's own flags."""
import os

import pytest

from conftest import ROOT, tree_digests
import mnist_app
import mnist_export
import mnist_lenet5_test
import mnist_test
from mnistkit import cli, places
from mnistkit.deployed import plain


def layout(root):
    """A project folder as the scripts leave it, the files empty (holding() reads names only): ./model with a
    checkpoint, ./export with one SavedModel version and its two .tflite files."""
    for name in ("model/mnist_model-2000.index", "model/mnist_model-2000.data-00000-of-00001",
                 "model/mnist_model-2000.meta", "model/checkpoint", "export/mnist/1/saved_model.pb",
                 "export/mnist/1/variables/variables.index", "export/mnist.tflite", "export/mnist_int8.tflite"):
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        open(os.path.join(root, name), "wb").close()


APP_CASES = {
    "export": "export holds exports: give export/mnist (SavedModel), export/mnist.tflite or export/mnist_int8.tflite",
    "export/mnist/1/variables": "export/mnist/1/variables is the variables folder of the SavedModel export/mnist/1: "
                                "give export/mnist/1",
    "export/mnist/1/variables/": "export/mnist/1/variables/ is the variables folder of the SavedModel export/mnist/1: "
                                 "give export/mnist/1",
    "export/mnist/1/saved_model.pb": "export/mnist/1/saved_model.pb is the graph file of the SavedModel export/mnist/1: "
                                     "give export/mnist/1",
    "export/mnist/1/variables/variables.index": "export/mnist/1/variables/variables.index is a file of the SavedModel "
                                                "export/mnist/1: give export/mnist/1",
    "model/mnist_model-2000.index": "model/mnist_model-2000.index is a file of the checkpoint model/mnist_model-2000: "
                                    "give model",
    "model/checkpoint": "model/checkpoint is the index file of a checkpoint folder: give model",
}


@pytest.mark.quick
@pytest.mark.parametrize("path", sorted(APP_CASES))
def test_the_app_names_what_a_path_one_level_off_holds(tmp_path, monkeypatch, path):
    layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    error = places.misplaced(path, places.APP)
    assert str(error) == APP_CASES[path]
    for fine in ("model", "export/mnist", "export/mnist/1", "export/mnist.tflite", "nothing-here"):
        assert places.misplaced(fine, places.APP) is None


@pytest.mark.quick
def test_a_project_folder_names_its_checkpoint_folders(tmp_path, monkeypatch):
    os.makedirs(tmp_path / "model")
    open(tmp_path / "model" / "mnist_model-10.index", "wb").close()
    monkeypatch.chdir(tmp_path)
    assert str(places.misplaced(".", places.APP)) == ". holds checkpoint folders: give ./model"
    assert str(places.misplaced(".", "mnist_test.py")) == ". holds checkpoint folders: give ./model"


@pytest.mark.parametrize("path, what", [
    ("export/mnist/1", "is a SavedModel"), ("export/mnist", "holds SavedModel versions (1)"),
    ("export/mnist.tflite", "is a LiteRT (.tflite) file"), ("export", "holds exports")])
def test_the_evaluator_and_the_exporter_send_an_export_to_the_app_or_the_checkpoint_folder(
        sample_workdir, tmp_path, monkeypatch, capsys, path, what):
    layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    data = ["--data-dir", str(sample_workdir / "data")]
    before = tree_digests(tmp_path)
    app_path = "export/mnist" if path == "export" else path
    app = cli.command("mnist_app.py", "--model-dir", app_path, "PICTURE")
    for script, main in (("mnist_test.py", mnist_test.main), ("mnist_lenet5_test.py", mnist_lenet5_test.main)):
        for watch in ([], ["--once"]):  # a watch would wait in vain: the path stays what it is
            assert main(["--model-dir", path, *data, *watch]) == 1
            assert capsys.readouterr().err == (f"error: {script} scores checkpoints; {path} {what}: give the "
                                               f"checkpoint folder, or use the app: `{app}`\n")
    assert mnist_export.main(["--model-dir", path, *data]) == 1
    assert capsys.readouterr().err == (f"error: mnist_export.py exports checkpoints; {path} {what} (written by "
                                       f"mnist_export.py): give the checkpoint folder it was exported from\n")
    assert tree_digests(tmp_path) == before


@pytest.mark.parametrize("name", ["model[1]", "my model", "m*"])
def test_a_no_checkpoint_hint_keeps_the_users_model_dir_and_data_dir(sample_workdir, tmp_path, monkeypatch, capsys,
                                                                     name):
    monkeypatch.chdir(tmp_path)
    os.makedirs(tmp_path / name)
    os.symlink(sample_workdir / "data", tmp_path / "mydata")
    train = cli.command("mnist_backward.py", "--model-dir", name)
    assert mnist_app.main(["--model-dir", name, "x.png"]) == 1
    assert capsys.readouterr().err == f"error: {name}: no checkpoint found; train first with `{train}`\n"
    assert mnist_export.main(["--model-dir", name, "--data-dir", "mydata"]) == 1
    assert capsys.readouterr().err == (f"error: {name}: no checkpoint found; train first with "
                                       f"`{train} --data-dir mydata`\n")
    assert mnist_test.main(["--model-dir", name, "--data-dir", "mydata", "--once"]) == 1
    assert capsys.readouterr().err == (f"error: {name}: no checkpoint found; train first with "
                                       f"`{train} --data-dir mydata`\n")
    assert mnist_lenet5_test.main(["--model-dir", name, "--data-dir", "mydata", "--once"]) == 1
    lenet = cli.command("mnist_lenet5_backward.py", "--model-dir", name, "--data-dir", "mydata")
    assert capsys.readouterr().err == f"error: {name}: no checkpoint found; train first with `{lenet}`\n"
    # The default folder, however spelled, is not repeated.
    for spelled in ("model", "./model/", "model/"):
        os.makedirs(tmp_path / "model", exist_ok=True)
        assert mnist_app.main(["--model-dir", spelled, "x.png"]) == 1
        assert capsys.readouterr().err == (f"error: {spelled}: no checkpoint found; train first with "
                                           f"`{cli.command('mnist_backward.py')}`\n")


@pytest.mark.quick
def test_shapes_are_written_plainly():
    import numpy as np
    assert str(plain(np.array([1, 28, 28, 1], np.int32))) == "[1, 28, 28, 1]"
    assert str(plain([np.int32(-1), np.int64(784)])) == "[-1, 784]"


def test_another_models_tflite_is_named_with_plain_shapes(tmp_path):
    from mnistkit import deployed
    from mnistkit.errors import DataError
    from tf_compat import tf
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1, 28, 28, 1], name="image")
        w = tf.Variable(tf.zeros([784, 10]), name="w")
        y = tf.matmul(tf.reshape(x, [1, 784]), w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            flatbuffer = tf.lite.TFLiteConverter.from_session(sess, [x], [y]).convert()
    path = tmp_path / "other.tflite"
    path.write_bytes(flatbuffer)
    with pytest.raises(DataError) as error:
        deployed.load(str(path))
    assert str(error.value) == (f"{path}: not an export of mnist_export.py (input [1, 28, 28, 1], output [1, 10]; "
                                f"expected [-1, 784] and [-1, 10])")
