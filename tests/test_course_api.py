"""The course's functions as the course had them, called as a notebook calls them; the course's pipeline facts."""
import builtins
import shutil
import sys

import numpy as np
import pytest
from PIL import Image

import mnist_app
import mnist_backward
import mnist_forward
import mnist_generateds
import mnist_lenet5_backward
import mnist_lenet5_test
import mnist_test
import mnistkit.cli
import mnistkit.idx
import mnistkit.inputs
import mnistkit.summaries
from conftest import TRAIN_STEPS
from tf_compat import tf

# What sys.argv holds inside a Jupyter kernel: its launcher and its own connection file.
KERNEL_ARGV = ["/opt/conda/lib/python3.11/site-packages/ipykernel_launcher.py", "-f",
               "/root/.local/share/jupyter/runtime/kernel-4b1e.json"]
SCRIPTS = [mnist_generateds, mnist_backward, mnist_test, mnist_app, mnist_lenet5_backward, mnist_lenet5_test]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda m: m.__name__)
def test_a_notebooks_own_arguments_are_not_taken_for_flags(script, monkeypatch):
    monkeypatch.setattr(sys, "argv", KERNEL_ARGV)
    assert vars(script.build_parser().parse_args(mnistkit.cli.arguments())) == vars(script.build_parser().parse_args([]))
    monkeypatch.setattr(sys, "argv", [f"{script.__name__}.py", "-f", "kernel.json"])  # a real command line: an error
    with pytest.raises(SystemExit) as error:
        script.build_parser().parse_args(mnistkit.cli.arguments())
    assert error.value.code == 2


def sample_picture(path):
    """The sample's test digit 5 (a 9) as a dark-on-light PNG; returns its digit."""
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    Image.fromarray(255 - images[5]).resize((112, 112)).save(path)
    return int(labels[5])


def test_the_course_functions_run_from_a_notebook(trained_copy, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", KERNEL_ARGV)
    monkeypatch.chdir(trained_copy)  # ./data and ./model, the course's default folders (test() writes model/eval)
    digit = sample_picture(tmp_path / "nine.png")
    testPicArr = mnist_app.pre_pic(str(tmp_path / "nine.png"))
    assert testPicArr.shape == (1, 784) and testPicArr.dtype == np.float32 and 0 <= testPicArr.min() < testPicArr.max() <= 1
    assert mnist_app.restore_model(testPicArr) == digit

    answers = iter(["1", str(tmp_path / "nine.png")])
    monkeypatch.setattr(builtins, "input", lambda prompt: next(answers))
    assert mnist_app.application() == 0  # the course's prompts, with the course's default model folder
    assert capsys.readouterr().out.startswith(f"The prediction number is: {digit} (top 3: {digit} ")
    answers = iter(["1", str(tmp_path / "nine.png")])
    assert mnist_app.main() == 0  # main() too: the kernel's -f is not ours
    assert capsys.readouterr().out.startswith(f"The prediction number is: {digit} (top 3: {digit} ")

    step, accuracy, count = mnist_test.test(once=True)
    assert (step, count) == (TRAIN_STEPS, 2000) and accuracy > 0.9

    with tf.Graph().as_default():
        w, b = mnist_forward.get_weight([784, 3], 0.5), mnist_forward.get_bias([3])  # the course's signatures
        assert w.shape.as_list() == [784, 3] and b.shape.as_list() == [3]
        img, label = mnist_generateds.read_tfRecord("data/mnist_test.tfrecords")
        assert (img.dtype, img.shape.as_list(), label.dtype, label.shape.as_list()) == (tf.uint8, [784], tf.int64, [10])
        img_batch, label_batch = mnist_generateds.get_tfrecord(100, isTrain=False)
        assert img_batch.shape.as_list() == [100, 784] and label_batch.shape.as_list() == [100, 10]


def test_write_tfrecord_and_generate_tfrecord_keep_the_course_signatures(sample_workdir, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", KERNEL_ARGV)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(sample_workdir / "mnist_data_jpg", tmp_path / "mnist_data_jpg")  # built and named by an earlier run
    layout = mnistkit.idx.read_manifest("mnist_data_jpg")
    images, labels = layout["test"]
    assert mnist_generateds.write_tfRecord("one.tfrecords", images, labels) == 2000
    assert mnist_generateds.main() == 0  # generate_tfRecord with the defaults: ./data from ./mnist_data_jpg
    assert (tmp_path / "data" / "mnist_test.tfrecords").read_bytes() == (tmp_path / "one.tfrecords").read_bytes()
    assert (tmp_path / "data" / "mnist_train.tfrecords").read_bytes() == \
        (sample_workdir / "data" / "mnist_train.tfrecords").read_bytes()


@pytest.mark.parametrize("pipeline", ["course", "fast"])
def test_the_shuffle_queue_has_the_courses_2_threads_capacity_1000_and_min_after_dequeue_700(sample_workdir,
                                                                                           pipeline):
    def shuffle_queue(batch):
        with tf.Graph().as_default():
            mnist_generateds.get_tfrecord(batch, data_dir=str(sample_workdir / "data"), pipeline=pipeline)
            runner = mnistkit.summaries.shuffle_queue_runner()
            op = runner.queue.queue_ref.op
            return len(runner.enqueue_ops), op.get_attr("capacity"), op.get_attr("min_after_dequeue")
    assert shuffle_queue(200) == (2, 1000, 700)
    assert shuffle_queue(500) == (2, 1200, 700)  # a batch above capacity - min_after_dequeue cannot deadlock


def test_evaluation_gives_the_probabilities_of_a_numpy_forward_pass_on_the_moving_averages(trained_workdir):
    ckpt = tf.train.latest_checkpoint(str(trained_workdir / "model"))
    path = str(trained_workdir / "data" / "mnist_test.tfrecords")
    _, accuracy, count, details = mnist_test.evaluate(ckpt, path, details=True)

    def probabilities(suffix):
        w = {n: tf.train.load_variable(ckpt, n + suffix) for n in ("w1", "b1", "w2", "b2")}
        hidden = np.maximum(details["pixels"] / 255.0 @ w["w1"] + w["b1"], 0)
        logits = hidden @ w["w2"] + w["b2"]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    averaged, raw = probabilities("/ExponentialMovingAverage"), probabilities("")
    assert count == 2000 and details["probabilities"].shape == (2000, 10)
    np.testing.assert_allclose(details["probabilities"], averaged, atol=2e-5)
    # The raw weights give other probabilities: restoring them instead would fail the line above.
    assert np.abs(raw - averaged).max() > 1e-2
    assert accuracy == np.mean(averaged.argmax(axis=1) == details["labels"])
