"""Training played back (mnistkit.board.playback): each snapshot's answer to a drawing, checked against the snapshot
restored into forward()'s graph by TensorFlow, for both networks; the history list with mnist_test.py's scores; the
routes' refusals in one line.

two_models' folders hold the trainers' default --history 20 (the 784-500-10 network at 600 steps, LeNet-5 at 200).
The board is called in this process, as tests/test_board_routes.py does.
"""
import json
import shutil

import numpy as np
import pytest

import mnist_app
import mnist_forward
import mnist_lenet5_forward
from conftest import LENET5_STEPS, MLP_STEPS
from mnistkit import history
from mnistkit.board import app, model, playback
from test_board import drawn, png_bytes
from test_board_routes import Asked, Stand

MLP, LENET5 = mnist_forward, mnist_lenet5_forward
MOST_BYTES = 150_000  # a playback answer of 20 snapshots
FOLDERS = {"mlp": ("model", MLP, MLP_STEPS), "lenet5": ("model_lenet5", LENET5, LENET5_STEPS)}


def prepare(data, name):
    return mnist_app.prepared_pixels(data, name=name)


def board_of(folder):
    """The board's ASGI app serving the checkpoint folder `folder`, as mnist_app.py --serve does."""
    return app.create_app(app.open_board(lambda: mnist_app.Predictor(str(folder)), prepare, str(folder)))


def restored_probabilities(net, prefixes, rows):
    """{prefix: float32 [n, 10]}: softmax(forward(rows)) with each snapshot restored by TensorFlow, as mnist_test.py
    restores a checkpoint (the moving averages into the weights: variables_to_restore)."""
    from tf_compat import tf
    found = {}
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.nn.softmax(net.forward(x, None, train=False))
        tf.train.get_or_create_global_step()
        saver = tf.train.Saver(tf.train.ExponentialMovingAverage(0.99).variables_to_restore())
        with tf.Session() as sess:
            for prefix in prefixes:
                saver.restore(sess, prefix)
                found[prefix] = sess.run(y, {x: rows})
    return found


@pytest.mark.parametrize("which", FOLDERS)
def test_the_playback_is_each_snapshots_own_checkpoint(two_models, which):
    name, net, steps = FOLDERS[which]
    board = board_of(two_models / name)
    listed = json.loads(Asked(board, "GET", "/board/history").body)["snapshots"]
    assert [s["global_step"] for s in listed] == [round(steps * k / 20) for k in range(1, 21)]
    png = png_bytes(drawn(4))
    reply = Asked(board, "POST", "/board/playback", png)
    assert reply.status == 200 and len(reply.body) <= MOST_BYTES
    answer = json.loads(reply.body)
    rows = np.asarray(answer["input"], np.float32).reshape(1, 784) / 255
    want = restored_probabilities(net, [s["checkpoint"] for s in listed], rows)
    assert [s["global_step"] for s in answer["snapshots"]] == [s["global_step"] for s in listed]
    for snapshot in answer["snapshots"]:
        expected = want[snapshot["checkpoint"]][0]
        np.testing.assert_allclose(snapshot["probabilities"], expected, atol=1e-5)
        assert snapshot["digit"] == int(np.argmax(expected))
    # The last snapshot is the served checkpoint's own weights: the board's answer for the same drawing.
    predicted = json.loads(Asked(board, "POST", "/board/predict", png).body)
    np.testing.assert_allclose(answer["snapshots"][-1]["probabilities"], predicted["probabilities"], atol=1e-5)
    one = json.loads(Asked(board, "POST", f"/board/playback?step={listed[3]['global_step']}", png).body)
    assert one["snapshots"] == [answer["snapshots"][3]]


def test_a_units_weights_at_a_step_are_that_snapshots(two_models):
    from tf_compat import tf
    board = board_of(two_models / "model")
    first = json.loads(Asked(board, "GET", "/board/history").body)["snapshots"][0]
    unit = json.loads(Asked(board, "GET", f"/board/history/unit?step={first['global_step']}&layer=y1&unit=7").body)
    w1 = tf.train.load_checkpoint(first["checkpoint"]).get_tensor("w1/ExponentialMovingAverage")
    data = np.frombuffer(__import__("base64").b64decode(unit["incoming"]["data"]), np.uint8)
    low, high = unit["incoming"]["min"][0], unit["incoming"]["max"][0]
    np.testing.assert_allclose(low + data / 255 * (high - low), w1[:, 7], atol=(high - low) / 255)
    assert unit["global_step"] == first["global_step"] and unit["layer"] == "y1"


def test_the_history_carries_the_accuracy_mnist_test_recorded(two_models, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(two_models / "model", folder)
    last = history.listed(str(folder))[-1][0]
    assert history.record_accuracy(str(folder), last, 0.8125)
    listed = json.loads(Asked(board_of(folder), "GET", "/board/history").body)["snapshots"]
    assert [s["accuracy"] for s in listed] == [None] * 19 + [0.8125]
    assert listed[-1]["global_step"] == MLP_STEPS


def test_the_routes_refuse_in_one_line(two_models, tmp_path):
    board = board_of(two_models / "model")
    png = png_bytes(drawn(4))
    for method, path, status, line in (
            ("POST", "/board/playback?step=abc", 400, "step=abc: give the global_step of a snapshot (30 to 600"),
            ("POST", "/board/playback?step=31", 400, "step=31: give the global_step of a snapshot"),
            ("POST", "/board/playback?digit=3", 400, "POST /board/playback: give no query, or step=S"),
            ("GET", "/board/history/unit?step=30&layer=y1", 400, "GET /board/history/unit: give step=S&layer=L"),
            ("GET", "/board/history/unit?step=x&layer=y1&unit=0", 400, "step=x: give the global_step"),
            ("GET", "/board/history/unit?step=30&layer=w1&unit=0", 400, "layer=w1: give a layer with weights (y1, y)"),
            ("GET", "/board/history/unit?step=30&layer=y1&unit=500", 400, "unit=500: y1 has units 0 to 499")):
        answer = Asked(board, method, path, png if method == "POST" else b"")
        assert answer.status == status and answer.error().startswith(line), (path, answer.body)
    # A folder without history/, and an export: 409, each its one line.
    bare = tmp_path / "bare"
    shutil.copytree(two_models / "model", bare, ignore=shutil.ignore_patterns(history.FOLDER))
    answer = Asked(board_of(bare), "GET", "/board/history")
    assert answer.status == 409 and "no training history here; train with mnist_backward.py --history 20" in \
        answer.error()
    exported = model.Model(Stand(), lambda data, name: np.zeros((28, 28), np.uint8))
    exported.form = "LiteRT"
    answer = Asked(app.create_app(app.Served(exported)), "POST", "/board/playback", png)
    assert answer.status == 409 and answer.error().endswith("a LiteRT keeps no training history; serve the "
                                                            "checkpoint folder it was exported from (mnist_app.py "
                                                            "--serve --model-dir DIR)")


def test_the_kept_weights_stay_within_their_bound(two_models):
    kept = playback.Kept(most=2 * 1_600_000)  # room for two of the 784-500-10 network's snapshots, not three
    found = history.listed(str(two_models / "model"))
    for _, prefix in found[:5]:
        kept.weights(prefix, MLP.NETWORK)
    assert len(kept.held) == 2 and [key[0] for key in kept.held] == [p for _, p in found[3:5]]
    assert sum(entry[2] for entry in kept.held.values()) <= kept.most
