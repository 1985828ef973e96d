"""On a --compare board, teach and learn work on either network: the learn routes take the query the other routes
take (?model=compare), the kept digits are one store for both, and each network learns into its own folder with its
own trainer (LeNet-5: mnist_lenet5_backward.py, the course's queue-runner pipeline).

Route tests (quick, in this process, stand-in models): a model name the board does not know is 400 naming it, the
compare side of a board without --compare 409 in one line, each network's status tells its own folder's learns and
its own "unknown", and one learn runs at a time on a board, whichever network it is on. The behaviour test (long):
a real server on a copy of conftest's two_models learns on the compare LeNet-5; the LeNet-5 folder gets the learned
checkpoint, the 784-500-10 folder does not change, the compare column answers from the new checkpoint and its
mistakes are counted again, and undo, redo and the refusal after more training work on it as on the first network.
"""
import json
import os

import numpy as np
import pytest

from conftest import LENET5_STEPS, copy_into, run_script, sevens, tree_digests, wait_limit
from test_board import Server, png_bytes, request
from test_board_learn import wait_for
from test_board_routes import OWN_HOST, Asked, Stand
from mnistkit import folders, keep
from mnistkit.board import app, model, teach
from mnistkit.networks import LENET5

LEARN_STEPS = 20  # the compare network's learn: a few steps past LENET5_STEPS, enough to make a new checkpoint
ROUTES = [("GET", "/board/learn"), ("POST", "/board/learn"), ("POST", "/board/learn/undo"),
          ("POST", "/board/learn/redo"), ("POST", "/board/learn/accept"), ("POST", "/board/learn/discard")]


class LeNetStand(Stand):
    """A stand-in LeNet-5 predictor (Stand's answers), served from another folder."""
    network = LENET5


def compare_board(tmp_path, compare=True):
    """(the ASGI app, its Served): a stand-in 784-500-10 model of tmp_path/model and, with `compare`, a stand-in
    LeNet-5 of tmp_path/model_lenet5 beside it (both folders made, empty); one digit kept."""
    first, second = Stand(), LeNetStand()
    first.source = str(tmp_path / "model" / "mnist_model-2000")
    second.source = str(tmp_path / "model_lenet5" / f"mnist_model-{LENET5_STEPS}")
    for folder in ("model", "model_lenet5"):
        (tmp_path / folder).mkdir()
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))
    bar = np.zeros((28, 28), np.uint8)
    bar[6:22, 13:16] = 255
    kept.keep(bar, 4)
    served = app.Served(model.Model(first, None), None, kept, teach.Learning(kept),
                        compare=model.Model(second, None) if compare else None)
    return app.create_app(served), served


@pytest.mark.quick
@pytest.mark.parametrize("method, path", ROUTES)
def test_a_learn_route_refuses_a_model_name_it_does_not_know_naming_it(tmp_path, method, path):
    board, _ = compare_board(tmp_path)
    refused = Asked(board, method, path + "?model=lenet")
    assert refused.status == 400
    assert refused.error() == "model=lenet: give model=first (the default) or model=compare"


@pytest.mark.quick
@pytest.mark.parametrize("method, path", ROUTES)
def test_a_learn_on_the_compare_side_of_a_board_without_compare_is_409_in_one_line(tmp_path, method, path):
    board, _ = compare_board(tmp_path, compare=False)
    refused = Asked(board, method, path + "?model=compare")
    assert refused.status == 409
    assert refused.error() == (f"{method} {path}?model=compare: this board serves no --compare network to learn on; "
                               "start it with mnist_app.py --serve --compare DIR, or learn on the first (model=first)")
    assert Asked(board, "GET", "/board/learn").status == 200  # the first network's side answers


@pytest.mark.quick
def test_each_network_tells_its_own_folders_learns_and_the_keeps_are_one_store(tmp_path):
    board, served = compare_board(tmp_path)
    first = json.loads(Asked(board, "GET", "/board/learn").body)
    second = json.loads(Asked(board, "GET", "/board/learn?model=compare").body)
    assert (first["folder"], second["folder"]) == (str(tmp_path / "model"), str(tmp_path / "model_lenet5"))
    assert (first["state"], second["state"]) == ("idle", "idle") and first["busy"] is second["busy"] is None
    assert first["unknown"] == second["unknown"] == 1 and first["one_digit"] == second["one_digit"] == 4
    refused = Asked(board, "POST", "/board/learn/undo?model=compare")
    assert refused.status == 409 and refused.error() == (
        f"{tmp_path / 'model_lenet5' / folders.FOLDER_FILE}: no learn to undo")


@pytest.mark.quick
def test_one_learn_runs_at_a_time_on_a_board_whichever_network_it_is_on(tmp_path):
    board, served = compare_board(tmp_path)
    learning = served.learning
    with learning.lock:  # a learn running on the first network's folder, as Learning.start leaves it
        learning.job = {"state": "running", "stage": "training", "line": "", "step": 2010, "steps": 2600,
                        "folder": str(tmp_path / "model")}
    second = json.loads(Asked(board, "GET", "/board/learn?model=compare").body)
    assert (second["state"], second["folder"], second["busy"]) == ("idle", str(tmp_path / "model_lenet5"),
                                                                    str(tmp_path / "model"))
    first = json.loads(Asked(board, "GET", "/board/learn").body)
    assert (first["state"], first["step"], first["busy"]) == ("running", 2010, None)
    refused = Asked(board, "POST", "/board/learn?model=compare")
    assert refused.status == 409 and refused.error() == (f"a learn is running on {tmp_path / 'model'}; wait until it "
                                                         "ends (one learn at a time on a board)")
    assert learning.thread is None  # nothing started


@pytest.mark.quick
@pytest.mark.parametrize("choice", ["undo", "redo", "accept", "discard"])
def test_a_choice_on_the_folder_of_a_learn_still_running_is_refused_until_its_thread_ends(tmp_path, choice):
    board, served = compare_board(tmp_path)
    learning = served.learning
    with learning.lock:  # promoting: the folder's lock is released, the checkpoint not yet shown as in service
        learning.job = {"state": "running", "stage": "promoting", "line": "", "step": 2010, "steps": 2600,
                        "folder": str(tmp_path / "model")}
    before = sorted(os.listdir(tmp_path / "model"))
    refused = Asked(board, "POST", f"/board/learn/{choice}")
    assert refused.status == 409 and refused.error() == (f"a learn is running on {tmp_path / 'model'}; wait until it "
                                                         "ends (one learn at a time on a board)")
    assert sorted(os.listdir(tmp_path / "model")) == before
    other = Asked(board, "POST", f"/board/learn/{choice}?model=compare")  # the other network's folder: its own answer
    assert other.status == 409 and "a learn is running" not in other.error()


def compare_answer(url, picture):
    """POST /board/predict's answer for the compare network: {digit, probabilities, model}."""
    status, answer = request(url + "board/predict", picture)
    assert status == 200, answer
    return answer["compare"]


@pytest.mark.long
def test_a_learn_on_the_compare_lenet5_goes_into_its_folder_and_its_column_answers_from_it(two_models, sample_workdir,
                                                                                           tmp_path):
    from mnist_app import Predictor
    work = copy_into(tmp_path / "work", two_models, "data", "model", "model_lenet5")
    mlp_before = tree_digests(work / "model", with_folders=True)
    served = Server(work, "--model-dir", "model", "--compare", "model_lenet5", "--keep-dir",
                    str(tmp_path / "mine"), "--learn-steps", str(LEARN_STEPS))
    url, learned, limit = served.url, LENET5_STEPS + LEARN_STEPS, wait_limit(300)
    picture = png_bytes(255 - sevens(sample_workdir, 1, first=20)[0])  # a 7 as a photo is: dark on white
    try:
        for pixels in sevens(sample_workdir):  # kept once, for both networks
            assert request(url + "board/keep", {"digit": 7, "input": pixels.reshape(-1).tolist()})[0] == 200
        first_step = request(url + "board/model")[1]["global_step"]
        status, started = request(url + "board/learn?model=compare", b"", method="POST")
        assert status == 202 and started["state"] == "running", started
        assert started["folder"] == "model_lenet5" and (started["step"], started["steps"]) == (LENET5_STEPS, learned)
        assert request(url + "board/learn")[1]["busy"] == "model_lenet5"  # the first network's side says so
        status, answer = request(url + "board/learn", b"", method="POST")
        assert status == 409 and "one learn at a time on a board" in answer["error"]
        ended = wait_for(lambda: (lambda s: None if s["state"] == "running" else s)(
            request(url + "board/learn?model=compare")[1]), "the compare network's learn ending", limit)
        if ended["state"] == "held":  # the check found a digit worse: put in service anyway, as the page offers
            status, ended = request(url + "board/learn/accept?model=compare", b"", method="POST")
            assert status == 200
        assert ended["state"] == "done", ended
        assert (ended["before"], ended["after"]) == (f"mnist_model-{LENET5_STEPS}",
                                                     f"mnist_model-{learned}")
        assert ended["unknown"] == 0 and request(url + "board/learn")[1]["unknown"] == 10  # per network

        assert os.path.exists(work / "model_lenet5" / f"mnist_model-{learned}.index")
        assert tree_digests(work / "model", with_folders=True) == mlp_before  # the MLP folder: not a byte changed
        line = wait_for(lambda: (lambda m: m if m["compare"]["global_step"] == learned else None)(
            request(url + "board/model")[1]), "the compare column serving the learned checkpoint", limit)
        assert line["global_step"] == first_step and line["compare"]["source"].endswith(
            f"mnist_model-{learned}")
        answer = compare_answer(url, picture)
        rows = np.array([request(url + "board/predict", picture)[1]["input"]], np.float32) / 255
        expected = Predictor(str(work / "model_lenet5")).predict(rows)[0]  # the learned checkpoint, read anew
        assert answer["model"]["global_step"] == learned
        np.testing.assert_allclose(answer["probabilities"], expected, atol=1e-5)
        counted = wait_for(lambda: (lambda m: m if m["state"] == "done" else None)(
            request(url + "board/mistakes?model=compare")[1]), "the compare network's mistakes counted", limit)
        assert counted["model"]["global_step"] == learned and counted["total"] == sum(map(sum, counted["matrix"]))

        status, undone = request(url + "board/learn/undo?model=compare", b"", method="POST")
        assert status == 200 and (undone["state"], undone["undo"], undone["redo"]) == ("undone", False, True)
        wait_for(lambda: (lambda m: m if m["compare"]["global_step"] == LENET5_STEPS else None)(
            request(url + "board/model")[1]), "the compare column back on the checkpoint from before", limit)
        assert request(url + "board/learn")[1]["undo"] is False  # the first network has nothing to undo
        status, redone = request(url + "board/learn/redo?model=compare", b"", method="POST")
        assert status == 200 and (redone["state"], redone["undo"]) == ("done", True)
        wait_for(lambda: (lambda m: m if m["compare"]["global_step"] == learned else None)(
            request(url + "board/model")[1]), "the compare column on the learned checkpoint again", limit)

        further = learned + 5  # the LeNet-5 folder trained further by its own script: an undo would lose that
        result = run_script("mnist_lenet5_backward.py", "--model-dir", "model_lenet5", "--steps", str(further),
                            cwd=work)
        assert result.returncode == 0, result.stderr
        status, answer = request(url + "board/learn/undo?model=compare", b"", method="POST")
        assert status == 409 and answer["error"] == (
            f"model_lenet5: trained further since learn {ended['learn']}: its newest checkpoint is "
            f"mnist_model-{further}, not mnist_model-{learned} that the learn added; nothing undone (an "
            f"undo would take mnist_model-{further} out of service too)")
        assert tree_digests(work / "model", with_folders=True) == mlp_before
    finally:
        assert served.stop() == 130


@pytest.mark.quick
def test_a_learn_on_each_network_waits_for_that_networks_own_follower(tmp_path):
    _, stand_in = compare_board(tmp_path)
    first, second = stand_in.model.predictor, stand_in.compare.predictor
    served = app.open_board(lambda: first, None, str(tmp_path / "model"), kept=stand_in.kept,
                            compare=(lambda: second, str(tmp_path / "model_lenet5")), data_dir=str(tmp_path / "data"))
    assert served.learning.followers == {"first": served.follower, "compare": served.compare_follower}
    assert served.compare_follower.model is served.compare and served.follower.model is served.model


class Reads:
    """A stand-in predictor that reads every picture as `digit`, surely."""

    def __init__(self, network, source, digit):
        self.network, self.source, self.digit = network, source, digit

    def predict(self, rows):
        return np.tile(np.eye(10, dtype=np.float32)[self.digit], (len(rows), 1))


@pytest.mark.quick
def test_a_keep_is_flagged_as_the_network_chosen_reads_it_and_kept_once_for_both(tmp_path):
    _, served = compare_board(tmp_path)
    served.model = model.Model(Reads(Stand.network, "model/mnist_model-2000", 7), None)
    served.compare = model.Model(Reads(LENET5, "model_lenet5/mnist_model-200", 1), None)
    board = app.create_app(served)
    bar = json.dumps({"digit": 7, "input": [255 if 6 <= i // 28 < 22 and 12 <= i % 28 < 15 else 0
                                            for i in range(784)]}).encode()
    first = json.loads(Asked(board, "POST", "/board/keep", bar, headers=[OWN_HOST]).body)
    assert first["count"] == 2 and "misread" not in first  # the 784-500-10 stand-in reads it as 7
    second = json.loads(Asked(board, "POST", "/board/keep?model=compare", bar, headers=[OWN_HOST]).body)
    assert second["count"] == 3 and second["misread"] == {"reads": 1, "probability": 1.0}  # LeNet-5's reads 1
    refused = Asked(board, "POST", "/board/keep?model=lenet", bar, headers=[OWN_HOST])
    assert refused.status == 400 and refused.error().startswith("model=lenet: ")
    assert served.kept.count() == 3  # nothing kept by the refused one
