"""On the board: "Learn from my digits" (POST /board/learn) runs mnistkit.learn on the served
checkpoint folder while the board keeps answering, and the board then answers with the learned checkpoint.

A real server (`mnist_app.py --serve`, test_board.Server) on a copy of the trained model; the kept digits are kept
through the page's own endpoint. Refusals: another origin, nothing kept, an export without its checkpoint folder.
"""
import json
import os
import time

import numpy as np
import pytest

from conftest import tree_digests
from test_board import Server, request
from test_board_routes import Asked, Stand
from mnistkit import keep
from mnistkit.board import app, model, table, teach

LEARN_TIMEOUT = 300  # seconds for a learn of LEARN_STEPS steps on 2 loaded cores, and the board to switch
LEARN_STEPS = 60  # the board's learn, set as mnist_app.py --serve --learn-steps (mnist_learn.py's --steps)


def kept_input(seed):
    """A 784-int input of a digit-like blob: a bar, shifted by seed (the network's prepared input, stroke bright)."""
    pixels = np.zeros((28, 28), np.uint8)
    pixels[6:22, 12 + seed % 4:15 + seed % 4] = 255
    return pixels.reshape(-1).tolist()


def wait_for(condition, what, timeout=LEARN_TIMEOUT):
    """Poll condition() (a value, or None) every 0.5 s; its first value, or AssertionError naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value is not None:
            return value
        time.sleep(0.5)
    raise AssertionError(f"{what} within {timeout} s")


def test_learn_from_the_page_trains_the_served_folder_and_the_board_follows(trained_copy, tmp_path):
    served = Server(trained_copy, "--keep-dir", str(tmp_path / "mine"), "--learn-steps", str(LEARN_STEPS))
    try:
        status, answer = request(served.url + "board/learn", b"", method="POST")
        assert status == 400 and "no kept digits" in answer["error"]
        for seed in range(8):
            assert request(served.url + "board/keep", {"digit": 8, "input": kept_input(seed)})[0] == 200
        status, answer = request(served.url + "board/learn", b"", {"Origin": "http://evil.example"}, method="POST")
        assert status == 403 and request(served.url + "board/learn")[1]["state"] == "idle"
        before = request(served.url + "board/model")[1]
        assert before["global_step"] == 2000 and before["version"] == 2000
        status, started = request(served.url + "board/learn", b"", method="POST")
        assert status == 202 and started["state"] == "running" and started["steps"] == 2000 + LEARN_STEPS
        assert request(served.url + "board/learn", b"", method="POST")[0] == 409  # one at a time
        ended = wait_for(lambda: (lambda s: s if s["state"] != "running" else None)(
            request(served.url + "board/learn")[1]), "the learn ended")
        learned = 2000 + LEARN_STEPS
        assert ended["state"] == "done" and ended["step"] == learned, ended
        assert ended["line"].startswith("learned: ") and "--undo" in ended["line"]
        after = request(served.url + "board/model")[1]  # "done": the board answers with it already
        assert after["global_step"] == learned and after["version"] == learned
        assert after["source"].endswith(f"mnist_model-{learned}")
        assert os.path.exists(os.path.join(trained_copy, "model", "mnist_model-2000.index"))  # the one from before
        status, answer = request(served.url + "board/predict", b"")  # the board kept answering throughout
        assert status == 400
    finally:
        assert served.stop() == 130


class Export:
    """A stand-in export predictor: what learn_folder reads of one."""

    def __init__(self, record):
        self.record, self.source = record, "export/mnist.tflite"


def test_an_export_learns_into_the_folder_its_record_names_or_says_what_is_needed(trained_copy):
    model = type("Model", (), {})()
    model.form, model.predictor = "LiteRT", Export({"checkpoint": os.path.join(str(trained_copy), "model",
                                                                            "mnist_model-2000")})
    assert teach.learn_folder(model) == os.path.join(str(trained_copy), "model")
    model.predictor = Export({"checkpoint": "./gone/mnist_model-2000"})
    with pytest.raises(table.BoardError) as refused:
        teach.learn_folder(model)
    assert refused.value.status == 409 and "learning needs the checkpoint folder" in str(refused.value)
    assert "./gone holds no checkpoint" in str(refused.value)
    model.predictor = Export(None)
    with pytest.raises(table.BoardError, match="--model-dir FOLDER"):
        teach.learn_folder(model)


def board_on(model_dir, tmp_path):
    """(the board's app, its Served) for a stand-in model served from model_dir, one digit kept in tmp_path."""
    stand = Stand()
    stand.source = os.path.join(str(model_dir), "mnist_model-2000")
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))
    kept.keep(np.array(kept_input(0), np.uint8).reshape(28, 28), 8)
    served = app.Served(model.Model(stand, None), None, kept, teach.Learning(kept))
    return app.create_app(served), served


@pytest.mark.quick
def test_a_learn_after_the_served_folder_was_deleted_says_so_in_one_line(tmp_path):
    board, _ = board_on(tmp_path / "model", tmp_path)  # never made: as if deleted while served
    refused = Asked(board, "POST", "/board/learn")
    assert refused.status == 409
    assert refused.error() == (f"{tmp_path / 'model'}: the model folder the board serves is gone; put it back, or "
                               "serve another (mnist_app.py --serve --model-dir FOLDER)")
    (tmp_path / "model").mkdir()  # there again, empty
    assert "holds no checkpoint any more" in Asked(board, "POST", "/board/learn").error()
    assert Asked(board, "GET", "/board/learn").body.startswith(b'{"state":"idle"')


def test_a_learn_that_fails_in_the_boards_thread_says_failed_and_the_board_goes_on(trained_copy, tmp_path):
    model_dir = trained_copy / "model"
    before = tree_digests(model_dir)
    board, served = board_on(model_dir, tmp_path)
    (name, _), = served.kept.entries()
    (tmp_path / "my_digits" / name).write_bytes(b"not a JPG")  # damaged after it was kept
    started = Asked(board, "POST", "/board/learn")
    assert started.status == 202 and b'"state":"running"' in started.body
    served.learning.thread.join(LEARN_TIMEOUT)
    status = json.loads(Asked(board, "GET", "/board/learn").body)
    assert status["state"] == "failed", status
    assert status["line"] == (f"error: mnist_generateds.py exited with status 1 ({tmp_path / 'my_digits' / name}: "
                              f"not an image file); the kept digits were not turned into TFRecords; {model_dir} is "
                              "unchanged")
    assert Asked(board, "GET", "/board/model").status == 200  # the board goes on
    assert tree_digests(model_dir) == before  # and its folder is as it was, no lock left
