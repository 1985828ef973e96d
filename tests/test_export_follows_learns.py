"""An export after a learn and after an undo is the checkpoint then in service, with its moving averages.

issue #53 §8: the exported weights must be the moving averages (tensorflow #11839 reports exports of the raw
ones), and LiteRT must answer as TensorFlow does (#42346), whichever checkpoint a learn or an undo put in
service. On a copy of conftest's learned_workdir, the held learn is accepted (the learned checkpoint in
service), then undone (the one from before in service again); after each, mnist_export.py runs and its
SavedModel (loaded with tf.compat.v1's loader) and float .tflite (ai_edge_litert's Interpreter) are compared,
on the bundled sample's test digits, with the checkpoint in service restored two ways: with
ExponentialMovingAverage.variables_to_restore (as the course's mnist_test.py and mnist_app.py do) and raw.
"""
import os

import numpy as np
import pytest

from conftest import LEARN_STEPS, TRAIN_STEPS, copy_into, run_main
from exported_check import litert_probabilities
import mnist_backward
import mnist_forward
from mnistkit import checkpoints, export, idx
from tf_compat import tf

DIGITS = 500  # of the bundled sample's test digits
FLOAT_DIFFERENCE = 1e-4  # issue #53 §8: max |Δp| of the float forms against the checkpoint's moving averages
RAW_DIFFERENCE = 1e-3  # the raw weights' answers are further than this from the moving averages' on some digit


def checkpoint_probabilities(prefix, pictures, averages):
    """The network's softmax (float32 [n, 10]) for pictures (float32 [n, 784]) from the checkpoint `prefix`:
    its moving averages (the course's variables_to_restore) when `averages`, else its raw weights."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, mnist_forward.INPUT_NODE])
        y = tf.nn.softmax(mnist_forward.forward(x, None))
        restore = (tf.train.ExponentialMovingAverage(mnist_backward.MOVING_AVERAGE_DECAY).variables_to_restore()
                   if averages else None)
        with tf.Session() as sess:
            tf.train.Saver(restore).restore(sess, prefix)
            return sess.run(y, {x: pictures})


def saved_model_probabilities(path, pictures):
    """The serving_default signature's probabilities (float32 [n, 10]) of the SavedModel at path."""
    with tf.Graph().as_default(), tf.Session() as sess:
        meta_graph = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING], path)
        signature = meta_graph.signature_def[export.SIGNATURE_KEY]
        return sess.run(signature.outputs[export.PROBABILITIES_KEY].name,
                        {signature.inputs[export.INPUT_KEY].name: pictures})


def export_and_compare(work, pictures, step, version):
    """Run mnist_export.py in work; check that the checkpoint in service is model/mnist_model-<step> and that the
    export's version `version` and float .tflite give its moving averages' answers, not its raw weights'."""
    prefix = checkpoints.latest(str(work / "model"))
    assert os.path.basename(prefix) == f"mnist_model-{step}"
    result = run_main("mnist_export.py", cwd=work)
    assert result.returncode == 0, result.stderr
    saved_model = work / "export" / "mnist" / str(version)
    record = export.read_metadata(str(saved_model))
    assert (record["global_step"], os.path.basename(record["checkpoint"])) == (step, f"mnist_model-{step}")
    averages = checkpoint_probabilities(prefix, pictures, averages=True)
    raw = checkpoint_probabilities(prefix, pictures, averages=False)
    for form, got in (("SavedModel", saved_model_probabilities(str(saved_model), pictures)),
                      ("float .tflite", litert_probabilities(str(work / "export" / "mnist.tflite"), pictures))):
        assert np.array_equal(got.argmax(1), averages.argmax(1)), f"{form} after step {step}: another digit"
        difference = float(np.abs(got - averages).max())
        assert difference <= FLOAT_DIFFERENCE, f"{form} after step {step}: max |Δp| {difference} from the averages"
        assert float(np.abs(got - raw).max()) > RAW_DIFFERENCE, f"{form} after step {step}: the raw weights"
    return averages


@pytest.mark.long
def test_an_export_after_a_learn_and_after_its_undo_answers_as_that_checkpoints_moving_averages(learned_workdir,
                                                                                               tmp_path):
    work = copy_into(tmp_path / "work", learned_workdir, "data", "model", "my_digits", "my_digits.txt")
    pictures = idx.read_idx_split(idx.BUNDLED_DIR, "test")[0][:DIGITS].reshape(-1, 784).astype(np.float32) / 255
    accepted = run_main("mnist_learn.py", "--model-dir", "model", "--accept-worse", cwd=work)
    assert accepted.returncode == 0, accepted.stderr
    learned = export_and_compare(work, pictures, TRAIN_STEPS + LEARN_STEPS, 1)
    undone = run_main("mnist_learn.py", "--model-dir", "model", "--undo", cwd=work)
    assert undone.returncode == 0, undone.stderr
    before = export_and_compare(work, pictures, TRAIN_STEPS, 2)
    assert float(np.abs(learned - before).max()) > RAW_DIFFERENCE  # two checkpoints, told apart by their answers
    redone = run_main("mnist_learn.py", "--model-dir", "model", "--redo", cwd=work)
    assert redone.returncode == 0, redone.stderr
    assert np.array_equal(export_and_compare(work, pictures, TRAIN_STEPS + LEARN_STEPS, 3), learned)
