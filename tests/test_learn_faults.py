"""Faults of a learn that leave trained work out of service or a wrong learn in service without a word (issue 53):

- undo and redo after the model folder trained further refuse, naming the newer checkpoint (mnistkit.learn, the
  mnist_learn.py command, the board's routes), and redo refuses a set-aside checkpoint whose files are not all there;
- the forgetting check holds on the accuracy (0.5 points), a digit's recall or precision (2 points: points, not a
  part of the value), warns when every keep is one digit, and the board flags a keep it reads as another digit;
- the page knows how many changes to the kept digits the served model does not know, from the folder's record;
- a learn's scripts that print nothing still move its line (what it does, for how long, the time left);
- the learn's settings go down as one learn.Plan from both callers.

Quick: no training; a learn's history is written into a copy of the trained folder as a learn would leave it.
"""
import argparse
import dataclasses
import json
import os
import re
import shutil

import numpy as np
import pytest

from conftest import copy_into, run_main, tree_digests
from test_board_learn import board_on, kept_input
from test_board_routes import Asked
from mnistkit import folders, keep, learn, promotion
from mnistkit.board import app, model, teach
from mnistkit.errors import DataError
from mnistkit.networks import MLP

BEFORE, AFTER = "mnist_model-1000", "mnist_model-2000"  # trained_workdir's two newest checkpoints


def promoted_folder(trained_workdir, tmp_path):
    """A copy of trained_workdir's model/ whose record says learn 1 took BEFORE to AFTER (promoted), as a learn
    leaves it; its path."""
    model_dir = copy_into(tmp_path / "work", trained_workdir, "model") / "model"
    record = folders.folder_record(str(model_dir))
    entry = {"learn": 1, "state": "promoted", "before": BEFORE, "after": AFTER, "changed": 1.0,
             "check": {"test": None, "kept": {"count": 1, "right": [0, 1]}, "fell": []},
             "settings": {"steps": 1000}, "options": {"before": {}, "after": {}}}
    folders.change(str(model_dir), record={**record, folders.LEARNS: [entry], folders.REDO: []})
    return model_dir


def train_further(model_dir, source, step, whole=True):
    """As a trainer going on from `source` (a checkpoint name in model_dir) would leave it: step's checkpoint
    files (copies of source's) and, when whole, the index naming it newest; only its .data file when not (a save
    under way). Returns the new name."""
    name = f"mnist_model-{step}"
    for path in sorted(model_dir.glob(source + ".*")):
        if whole or ".data-" in path.name:
            shutil.copyfile(path, model_dir / (name + path.name[len(source):]))
    if whole:
        folders.write_index(str(model_dir), name, folders.indexed_names(str(model_dir)) + [name])
    return name


def unchanged(model_dir):
    return tree_digests(model_dir)


@pytest.mark.parametrize("whole", [True, False], ids=["trained-further", "a-save-under-way"])
def test_undo_after_the_folder_trained_further_refuses_naming_the_newer_checkpoint(trained_workdir, tmp_path, whole):
    model_dir = promoted_folder(trained_workdir, tmp_path)
    newer = train_further(model_dir, AFTER, 2300, whole)
    before = unchanged(model_dir)
    with pytest.raises(DataError) as refused:
        promotion.undo(str(model_dir), out=pytest.fail)
    said = str(refused.value)
    assert "\n" not in said and newer in said and "nothing undone" in said, said
    assert unchanged(model_dir) == before  # the newer training stays in service, nothing moved
    if whole:  # the command and the board's route say the same, and change nothing either
        result = run_main("mnist_learn.py", "--undo", "--model-dir", "model", cwd=model_dir.parent)
        assert result.returncode == 1 and newer in result.stderr and "back to" not in result.stdout + result.stderr
        board, _ = board_on(model_dir, tmp_path)
        answer = Asked(board, "POST", "/board/learn/undo")
        assert answer.status == 409 and newer in answer.error()
        assert json.loads(Asked(board, "GET", "/board/learn").body)["undo"] is False
        assert unchanged(model_dir) == before


@pytest.mark.parametrize("whole", [True, False], ids=["trained-further", "a-save-under-way"])
def test_redo_after_the_folder_trained_further_refuses_naming_the_newer_checkpoint(trained_workdir, tmp_path, whole):
    model_dir = promoted_folder(trained_workdir, tmp_path)
    assert promotion.undo(str(model_dir), out=lambda line: None) == str(model_dir / BEFORE)
    newer = train_further(model_dir, BEFORE, 1300, whole)
    before = unchanged(model_dir)
    with pytest.raises(DataError) as refused:
        promotion.redo(str(model_dir), out=pytest.fail)
    said = str(refused.value)
    assert "\n" not in said and newer in said and "nothing redone" in said, said
    assert unchanged(model_dir) == before  # the learned checkpoint is not put back over the newer one
    assert promotion.standing(str(model_dir))["redo"] is False
    if whole:
        board, _ = board_on(model_dir, tmp_path)
        answer = Asked(board, "POST", "/board/learn/redo")
        assert answer.status == 409 and newer in answer.error() and unchanged(model_dir) == before


@pytest.mark.parametrize("lost", [".index", ".data-00000-of-00001", ".meta"])
def test_redo_refuses_a_set_aside_checkpoint_whose_files_are_not_all_there(trained_workdir, tmp_path, lost):
    model_dir = promoted_folder(trained_workdir, tmp_path)
    promotion.undo(str(model_dir), out=lambda line: None)
    aside = model_dir / folders.LEARNS_FOLDER / "1"
    (aside / (AFTER + lost)).unlink()
    before = unchanged(model_dir)
    with pytest.raises(DataError) as refused:
        promotion.redo(str(model_dir), out=pytest.fail)
    said = str(refused.value)
    assert "\n" not in said and "not all there" in said and AFTER + lost in said, said
    assert unchanged(model_dir) == before
    assert os.path.basename(learn.checkpoints.latest(str(model_dir))) == BEFORE  # no index names what is not there


def test_undo_and_redo_with_nothing_newer_still_work_and_never_bring_back_a_removed_keep(trained_workdir, tmp_path):
    model_dir = promoted_folder(trained_workdir, tmp_path)
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    names = [store.keep(np.array(kept_input(seed), np.uint8).reshape(28, 28), 1)[0] for seed in range(3)]
    record = folders.folder_record(str(model_dir))
    (entry,) = record[folders.LEARNS]
    entry["settings"]["known"] = promotion.known_of(store, store.entries(), str(model_dir))  # learn 1 learned these three
    folders.change(str(model_dir), record=record)
    assert promotion.unknown(str(model_dir), store) == 0
    store.remove(names[0])  # removed, and one kept: two changes the model in service does not know
    store.keep(np.array(kept_input(5), np.uint8).reshape(28, 28), 4)
    assert promotion.unknown(str(model_dir), store) == 2
    board, _ = board_on(model_dir, tmp_path)  # board_on keeps one more digit in the same store
    assert json.loads(Asked(board, "GET", "/board/learn").body)["unknown"] == 3
    listed = store.entries()
    promotion.undo(str(model_dir), out=lambda line: None)  # the model in service learned none of them
    assert promotion.unknown(str(model_dir), store) == len(listed) and store.entries() == listed
    promotion.redo(str(model_dir), out=lambda line: None)
    assert promotion.unknown(str(model_dir), store) == 3 and store.entries() == listed
    assert not (tmp_path / "my_digits" / names[0]).exists()  # the removed keep stays removed
    again = json.loads(Asked(board_on(model_dir, tmp_path / "again")[0], "GET", "/board/learn").body)
    assert again["unknown"] == 1  # another board, another store: none of its one keep learned


# ---------------------------------------------------------------- the forgetting check


def report(accuracy, recall=0.95, precision=0.95, records=10000, **digit):
    """An evaluation report (mnistkit.report.numbers' keys the check reads): `accuracy`, each digit's recall and
    precision, some set apart by digit (d3=(recall, precision))."""
    rows = []
    for d in range(10):
        r, p = digit.get(f"d{d}", (recall, precision))
        rows.append({"digit": d, "recall": r, "precision": p})
    return {"records": records, "accuracy": accuracy, "per_digit": rows}


@pytest.mark.quick
@pytest.mark.parametrize("before, after, held", [
    (report(0.950), report(0.944), ["accuracy"]),  # the accuracy alone, 0.6 points: held
    (report(0.950), report(0.9456), []),  # 0.44 points
    (report(0.950, d7=(0.90, 0.95)), report(0.950, d7=(0.879, 0.95)), ["recall 7"]),  # 2.1 points
    (report(0.950, d7=(0.90, 0.95)), report(0.950, d7=(0.881, 0.95)), []),  # 1.9 points (2.1% of 0.90)
    (report(0.950, d2=(0.50, 0.95)), report(0.950, d2=(0.485, 0.95)), []),  # 1.5 points (3% of 0.50)
    (report(0.950, d1=(0.98, 0.99)), report(0.950, d1=(0.98, 0.965)), ["precision 1"]),  # 2.5 points of precision
    (report(0.950, d1=(0.98, 0.99)), report(0.950, d1=(0.98, 0.972)), []),  # 1.8 points
    (report(0.950), report(0.940, d3=(0.97, 0.90), d8=(0.90, 0.95)), ["accuracy", "recall 8", "precision 3"]),
])
def test_the_check_holds_a_fall_past_its_limits_in_points(before, after, held):
    test, fell = promotion.judge(before, after)
    assert [("accuracy" if f["digit"] is None else f"{f.get('measure', 'recall')} {f['digit']}") for f in fell] \
        == held
    assert test["accuracy"] == [before["accuracy"], after["accuracy"]]
    for measure in ("recall", "precision"):  # each digit's, before and after, as the evaluator gave them
        assert test[measure] == [[b[measure], a[measure]] for b, a in zip(before["per_digit"], after["per_digit"])]
    if fell:
        line = promotion.fell({"fell": fell})
        assert "\n" not in line and all(f"{100 * (f['after'] - f['before']):+.1f} points" in line for f in fell)


@pytest.mark.quick
def test_a_held_learn_names_a_precision_that_fell():
    test, fell = promotion.judge(report(0.95, d1=(0.98, 0.99)), report(0.95, d1=(0.98, 0.93)))
    assert promotion.fell({"fell": fell}) == "digit 1's precision fell 0.990 → 0.930 (-6.0 points)"


@pytest.mark.quick
def test_a_learn_on_one_digit_only_is_warned_before_it_runs(tmp_path):
    assert learn.one_digit([("000001_7.jpg", 7), ("000002_7.jpg", 7)]).startswith("all 2 kept digits are 7s: ")
    assert learn.one_digit([("000001_7.jpg", 7), ("000002_1.jpg", 1)]) is None and learn.one_digit([]) is None
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    stand = types_stand(np.eye(10, dtype=np.float32)[7] * 0.5 + 0.05)
    board = app.create_app(app.Served(model.Model(stand, None), None, store, teach.Learning(store)))
    for seed in range(2):
        store.keep(np.array(kept_input(seed), np.uint8).reshape(28, 28), 7)
    assert json.loads(Asked(board, "GET", "/board/learn").body)["one_digit"] == 7
    store.keep(np.array(kept_input(3), np.uint8).reshape(28, 28), 2)
    assert json.loads(Asked(board, "GET", "/board/learn").body)["one_digit"] is None


def types_stand(probabilities):
    """A predictor standing in for the network: every picture answered with `probabilities` (float32 [10])."""
    class Stand:
        network, source = MLP, "stand/mnist_model-7"

        def predict(self, rows):
            return np.tile(np.asarray(probabilities, np.float32), (len(rows), 1))
    return Stand()


@pytest.mark.quick
@pytest.mark.parametrize("sure, digit, flagged", [(0.995, 7, True), (0.99, 7, True), (0.985, 7, False),
                                                  (0.995, 1, False)])
def test_a_keep_the_model_reads_as_another_digit_at_99_percent_is_flagged(tmp_path, sure, digit, flagged):
    probabilities = np.full(10, (1 - sure) / 9, np.float32)
    probabilities[1] = sure  # the network reads a 1
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    board = app.create_app(app.Served(model.Model(types_stand(probabilities), None), None, store,
                                      teach.Learning(store)))
    body = json.dumps({"digit": digit, "input": kept_input(0)}).encode()
    answer = Asked(board, "POST", "/board/keep", body)
    assert answer.status == 200
    said = json.loads(answer.body)
    assert said["kept"]["digit"] == digit and said["count"] == 1  # kept all the same: the page asks
    if flagged:
        assert said["misread"] == {"reads": 1, "probability": pytest.approx(float(probabilities[1]))}
    else:
        assert "misread" not in said


# ---------------------------------------------------------------- the line moves, the settings go down whole


@pytest.mark.quick
def test_a_learn_whose_script_prints_nothing_says_what_it_does_and_the_time_left():
    now = [100.0]
    lines, watch = [], learn.Watch(lambda line: lines.append(line), clock=lambda: now[0])
    watch.begin("preparing")
    watch.doing("generating")
    now[0] += learn.TICK_SECS - 1
    assert not watch.tick() and lines == []  # it printed nothing for less than TICK_SECS: nothing to add
    now[0] += 1
    assert watch.tick() and lines == [f"preparing: {learn.DOING['generating']} (5 s)"]
    watch.begin("training", 2000, 2600)
    now[0] += learn.TICK_SECS
    assert watch.tick() and lines[-1].startswith(f"training: {learn.DOING['starting']} (5 s")
    watch.say("After 2000 training steps, loss on training batch is 0.1.")
    now[0] += 10
    watch.say("After 2100 training steps, loss on training batch is 0.1.")
    now[0] += learn.TICK_SECS
    assert watch.where() == ("training", 20, pytest.approx((10 + learn.TICK_SECS) / 100 * 500))
    assert watch.tick() and re.fullmatch(r"training: training \(20 s, about \d+ s left\)", lines[-1]), lines[-1]


@pytest.mark.quick
def test_the_learns_settings_go_down_as_one_plan_built_from_the_options(tmp_path, monkeypatch):
    assert {o.name for o in learn.OPTIONS} <= {f.name for f in dataclasses.fields(learn.Plan)}
    planned = []
    monkeypatch.setattr(learn, "_learn", lambda plan, watch: planned.append(plan) or "model/mnist_model-5")
    (tmp_path / "model").mkdir()
    result = run_main("mnist_learn.py", "--steps", "7", "--share", "0.25", "--data-dir", "d", "--model-dir", "model",
                      "--keep-dir", "k", "--", "--learning-rate-base", "0.01", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert planned[-1] == learn.Plan("model", "k", 7, "d", 0.25, trainer_args=("--learning-rate-base", "0.01"))
    import mnist_app  # --serve's --learn-* flags: the same Plan, handed whole to the board's learn
    parser = argparse.ArgumentParser()
    mnist_app.LEARN_OPTIONS.add_to(parser, learn)
    args = parser.parse_args(["--learn-steps", "9", "--learn-share", "0.5"])
    plan = learn.Plan.of(args, "learn")
    assert (plan.steps, plan.share, plan.data_dir) == (9, 0.5, learn.records.DATA_DIR)
    store = keep.KeptDigits(str(tmp_path / "my_digits"))
    learning = teach.Learning(store, None, plan)
    learning.run(str(tmp_path / "model"), model.Model(types_stand(np.full(10, 0.1)), None), learn.Watch(print))
    assert planned[-1] == dataclasses.replace(plan, model_dir=str(tmp_path / "model"), keep_dir=store)
