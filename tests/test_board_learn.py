"""On the board: "Learn from my digits" (POST /board/learn) runs mnistkit.learn on the served
checkpoint folder while the board keeps answering; the learn is checked, held when a digit got worse, used anyway,
undone and redone from the page's routes, and the board answers with the checkpoint in service each time.

A real server (`mnist_app.py --serve`, test_board.Server) on a copy of the trained model; the kept digits are kept
through the page's own endpoint. Refusals: another origin, nothing kept, a held learn, an export without its
checkpoint folder. A server stopped while it learns (SIGTERM to it, Ctrl-C to its group) leaves nothing behind.
"""
import json
import os
import signal
import time

import numpy as np
import pytest

import conftest
from conftest import KEPT, LEARN_STEPS, TRAIN_STEPS, keep_sevens_as_threes, sevens, tree_digests, wait_limit
from test_board import Server, request
from test_board_routes import Asked, Stand
from test_learn import processes_naming
from mnistkit import keep, learn, promotion
from mnistkit.board import app, model, table, teach, zh

LEARN_TIMEOUT = 300  # seconds for a learn of LEARN_STEPS steps on 2 loaded cores, and the board to switch


def kept_input(seed):
    """A 784-int input of a digit-like blob: a bar, shifted by seed (the network's prepared input, stroke bright)."""
    pixels = np.zeros((28, 28), np.uint8)
    pixels[6:22, 12 + seed % 4:15 + seed % 4] = 255
    return pixels.reshape(-1).tolist()


def wait_for(condition, what, timeout=LEARN_TIMEOUT):
    """conftest.wait_for with a learn's limit by default."""
    return conftest.wait_for(condition, what, timeout)


def learning(url):
    """GET /board/learn's answer, or None while the learn runs."""
    status = request(url + "board/learn")[1]
    return None if status["state"] == "running" else status


def serving(url, step):
    """GET /board/model's answer once it is the checkpoint of `step`, else None."""
    answer = request(url + "board/model")[1]
    return answer if answer["global_step"] == step else None


@pytest.mark.long
def test_a_learn_from_the_page_is_checked_held_then_used_undone_and_redone(trained_copy, sample_workdir, tmp_path):
    served = Server(trained_copy, "--keep-dir", str(tmp_path / "mine"), "--learn-steps", str(LEARN_STEPS))
    url, learned = served.url, TRAIN_STEPS + LEARN_STEPS
    try:
        status, answer = request(url + "board/learn", b"", method="POST")
        assert status == 400 and "no kept digits" in answer["error"]
        for pixels in sevens(sample_workdir):  # 7s corrected to 3: digit 7's recall falls
            assert request(url + "board/keep", {"digit": 3, "input": pixels.reshape(-1).tolist()})[0] == 200
        status, answer = request(url + "board/learn", b"", {"Origin": "http://evil.example"}, method="POST")
        assert status == 403 and request(url + "board/learn")[1]["state"] == "idle"
        status, started = request(url + "board/learn", b"", method="POST")
        assert status == 202 and started["state"] == "running" and started["stage"] == "preparing"
        assert (started["step"], started["steps"]) == (TRAIN_STEPS, learned)
        assert request(url + "board/learn", b"", method="POST")[0] == 409  # one at a time
        seen, deadline = [started], time.monotonic() + wait_limit(LEARN_TIMEOUT)
        while seen[-1]["state"] == "running":  # the learn's stages and steps, as the page polls them
            assert time.monotonic() < deadline, f"the learn ended within {wait_limit(LEARN_TIMEOUT):.0f} s: {seen[-1]}"
            time.sleep(0.2)
            seen.append(request(url + "board/learn")[1])
        stages = [s["stage"] for s in seen if s["state"] == "running"]
        assert [learn.STAGES.index(stage) for stage in stages] == sorted(learn.STAGES.index(stage) for stage in stages)
        assert {"preparing", "training", "checking"} <= set(stages)
        assert any(TRAIN_STEPS < s["step"] < learned for s in seen if s["stage"] == "training")  # it moves
        held = seen[-1]
        assert held["state"] == "held" and held["stage"] is None and (held["before"], held["after"]) == (
            f"mnist_model-{TRAIN_STEPS}", f"mnist_model-{learned}")
        check = held["check"]  # the numbers: the record's, as mnist_learn.py's
        assert check == promotion.learn_history(str(trained_copy / "model"))[0][0]["check"]
        after = check["kept"]["right"][1]  # all kept 3s read as 3, or (batches' order) all but one, as test_learn's
        assert check["kept"]["count"] == KEPT and KEPT - 1 <= after <= KEPT, check["kept"]
        assert len(check["test"]["recall"]) == 10 and 7 in [f["digit"] for f in check["fell"]]
        assert (held["undo"], held["redo"]) == (False, False)
        assert request(url + "board/model")[1]["global_step"] == TRAIN_STEPS  # not promoted
        status, answer = request(url + "board/learn", b"", method="POST")
        assert status == 409 and "waits for your choice: use it anyway or discard it" in answer["error"]

        status, used = request(url + "board/learn/accept", b"", method="POST")
        assert status == 200 and (used["state"], used["undo"], used["check"]) == ("done", True, check)
        assert wait_for(lambda: serving(url, learned), "the learned checkpoint answering")["source"].endswith(
            f"mnist_model-{learned}")
        status, undone = request(url + "board/learn/undo", b"", method="POST")
        assert status == 200 and (undone["state"], undone["undo"], undone["redo"]) == ("undone", False, True)
        wait_for(lambda: serving(url, TRAIN_STEPS), "the checkpoint from before answering")
        status, redone = request(url + "board/learn/redo", b"", method="POST")
        assert status == 200 and (redone["state"], redone["undo"], redone["redo"]) == ("done", True, False)
        wait_for(lambda: serving(url, learned), "the learned checkpoint answering again")
        status, answer = request(url + "board/learn/redo", b"", method="POST")
        assert status == 409 and answer["error"].endswith("model: no undone learn to redo")
        status, answer = request(url + "board/learn/discard", b"", method="POST")
        assert status == 409 and answer["error"].endswith("model: no learned checkpoint waits for a choice")
        assert os.path.exists(os.path.join(trained_copy, "model", f"mnist_model-{TRAIN_STEPS}.index"))
        assert request(url + "board/predict", b"")[0] == 400  # the board kept answering throughout
    finally:
        assert served.stop() == 130


@pytest.mark.long
@pytest.mark.parametrize("signum, to", [(signal.SIGTERM, "pid"), (signal.SIGINT, "group")])
def test_a_server_stopped_while_it_learns_ends_the_learn_and_leaves_nothing_behind(trained_copy, sample_workdir,
                                                                                   tmp_path, signum, to):
    keep_sevens_as_threes(sample_workdir, tmp_path / "mine")
    before = tree_digests(trained_copy / "model", with_folders=True)
    temporary = tmp_path / "tmp"  # the learn's staging folder goes here
    temporary.mkdir()
    served = Server(trained_copy, "--keep-dir", str(tmp_path / "mine"), "--learn-steps", "1000000",
                    env={"TMPDIR": str(temporary)}, group=True)
    try:
        assert request(served.url + "board/learn", b"", method="POST")[0] == 202
        wait_for(lambda: (lambda s: s if s["line"].startswith("training on ") else None)(
            request(served.url + "board/learn")[1]), "the trainer reading its records")
        (os.killpg if to == "group" else os.kill)(served.process.pid, signum)
        assert served.process.wait(wait_limit(60)) == 128 + signum
    finally:
        served.stop()
    assert served.stderr().splitlines()[-1] == (f"{signal.Signals(signum).name}: stopped; the learn running was "
                                                "stopped and its model folder left as it was (learn again to go on)")
    assert tree_digests(trained_copy / "model", with_folders=True) == before  # no lock, nothing learned
    assert os.listdir(temporary) == [] and processes_naming(str(temporary)) == []  # no staging folder, no trainer


class Export:
    """A stand-in export predictor: what learn_folder reads of one."""

    def __init__(self, record):
        self.record, self.source = record, "export/mnist.tflite"


def test_an_export_refuses_a_learn_naming_the_folder_to_serve_and_to_export_again(trained_copy):
    """A learn on a served export trained its record's folder and ended "done" while the export answered as before
    (trial 7); now it is refused naming the folder to serve, and says to export again."""
    model = type("Model", (), {})()
    folder = os.path.join(str(trained_copy), "model")
    model.form, model.predictor = "LiteRT", Export({"checkpoint": os.path.join(folder, "mnist_model-2000")})
    with pytest.raises(table.BoardError) as refused:
        teach.learn_folder(model)
    assert refused.value.status == 409 and str(refused.value) == (
        f"export/mnist.tflite: a learn trains the checkpoint folder {folder}, not this export, which would answer "
        f"as before; serve that folder (mnist_app.py --serve --model-dir {folder}), learn there, then export again "
        "(mnist_export.py)")
    assert "学习训练的是检查点文件夹" in zh.twin(str(refused.value), 409) and teach.served_folder(model) is None
    model.predictor = Export({"checkpoint": "./gone/mnist_model-2000"})
    with pytest.raises(table.BoardError) as refused:
        teach.learn_folder(model)
    assert refused.value.status == 409 and "learning needs the checkpoint folder" in str(refused.value)
    assert "./gone holds no checkpoint" in str(refused.value)
    model.predictor = Export(None)
    with pytest.raises(table.BoardError, match="--model-dir FOLDER"):
        teach.learn_folder(model)


def board_on(model_dir, tmp_path):
    """(the board's app, its Served) for a stand-in model served from model_dir, one digit kept in tmp_path; its
    learns read the training records of the data/ beside model_dir, as a board started in the course's folder."""
    stand = Stand()
    stand.source = os.path.join(str(model_dir), "mnist_model-2000")
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))
    kept.keep(np.array(kept_input(0), np.uint8).reshape(28, 28), 8)
    plan = learn.Plan(data_dir=os.path.join(os.path.dirname(str(model_dir)), "data"))
    served = app.Served(model.Model(stand, None), None, kept, teach.Learning(kept, plan=plan))
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


@pytest.mark.long
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
                              "unchanged")  # the user's folder named, not the learn's copy of it
    assert Asked(board, "GET", "/board/model").status == 200  # the board goes on
    assert tree_digests(model_dir) == before  # and its folder is as it was, no lock left
