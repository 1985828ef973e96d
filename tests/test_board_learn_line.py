"""The learn's line on the page moves while a script prints nothing: what the learn does, for how long, the time left.

GET /board/learn answers "doing", "taken" and "left" (teach.Learning.doing, from learn.Watch.where); the page
asks each second while a learn runs and shows them after the stage (tests/test_board_teach.py checks the words).
"""
import json
import os
import re

import pytest

from mnistkit import folders, keep, learn
from mnistkit.board import teach
from test_audit8 import learned_folder, tiny  # noqa: F401  (tiny: a fixture)
from test_board_judged import FIRST
from test_board_learn import board_on
from test_board_routes import OWN_HOST, Asked


@pytest.mark.quick
def test_the_learns_line_moves_every_second_while_its_script_prints_nothing(tmp_path):
    """GET /board/learn's "taken" (what the page's line shows after what the learn does) moves with the clock while
    a script prints nothing, and "left" comes once the trainer's steps give a rate (issue 53: a line that sat at
    `preparing · step 2000 of 2600` for 30 s)."""
    now = [50.0]
    learning = teach.Learning(keep.KeptDigits(str(tmp_path / "my_digits")))
    learning.watch = learn.Watch(lambda line: None, learning.moved, clock=lambda: now[0])
    learning.job = {**teach.IDLE, "state": "running", "folder": teach.learn_folder(FIRST)}  # the served one
    learning.watch.begin("preparing")
    learning.watch.doing("generating")
    said = []
    for _ in range(4):  # the page asks each second
        now[0] += 1
        status = learning.status(FIRST)
        said.append((status["doing"], status["taken"], status["left"]))
    assert said == [("generating", 1, None), ("generating", 2, None), ("generating", 3, None), ("generating", 4, None)]
    learning.watch.begin("training", 2000, 2600)
    learning.watch.say("After 2000 training steps, loss on training batch is 0.2.")
    now[0] += 12
    learning.watch.say("After 2060 training steps, loss on training batch is 0.2.")
    status = learning.status(FIRST)
    assert (status["stage"], status["step"], status["doing"], status["left"]) == ("training", 2060, "training", 108)


# A learn of 250 steps from step 2000 as its Watch hears it (--print-every 12: the last loss line is 2244, before
# "done at step 2250"): (what happens, its argument), in order.
A_LEARN = [("line", "learning from 10 kept digits into model"), ("begin", ("preparing", None, None)),
           ("line", "learning from 10 kept digits of my_digits into model"),
           ("line", "wrote 10 train records to STAGING/data/mnist_train.tfrecords"),
           ("begin", ("training", 2000, 2250)),
           ("line", "training on 8000 records from data/mnist_train.tfrecords, resuming from STAGING/mnist_model-2000; "
                    "target global_step 2250; running on CPU"),
           ("line", "After 2232 training steps, loss on training batch is 0.2."),
           ("line", "After 2244 training steps, loss on training batch is 0.21."),
           ("line", "done at step 2250; checkpoint saved to STAGING/mnist_model-2250"),
           ("line", "training: training (59 s, about 0 s left)"),
           ("begin", ("checking", 2250, 2250)),
           ("line", "After 2000 training steps, test accuracy = 0.9265 (model/mnist_model-2000, data/mnist_test.tfrecords)"),
           ("line", "After 2250 training steps, test accuracy = 0.93 (STAGING/mnist_model-2250, data/mnist_test.tfrecords)"),
           ("line", "checked: MNIST 0.9265 → 0.93; your digits 0/10 → 10/10"),
           ("begin", ("promoting", 2250, 2250))]


@pytest.mark.quick
def test_each_status_of_a_running_learn_has_its_zh_twin_and_the_step_its_line_speaks_of(tmp_path):
    """GET /board/learn while a learn runs: its "line_zh" was "" but for a failed learn, and its "step" sat at the
    last loss line's (2244) while the line said "done at step 2250" and all through the check (a new user's
    reading of the JSON). Each status now has a Chinese line with no English word, and a step no older than its
    line's."""
    from mnistkit.board import zh
    learning = teach.Learning(keep.KeptDigits(str(tmp_path / "my_digits")))
    learning.watch = learn.Watch(learning.said, learning.moved)
    learning.job = {**teach.IDLE, "state": "running", "folder": teach.learn_folder(FIRST), "step": 2000,
                    "steps": 2250}
    seen = []
    for what, argument in A_LEARN:
        if what == "begin":
            learning.watch.begin(*argument)
        else:
            learning.watch.say(argument)
        status = learning.status(FIRST)
        seen.append((status["line"], status["line_zh"], status["stage"], status["step"], status["steps"]))
    for line, line_zh, stage, step, steps in seen:
        words = set(re.findall(r"[A-Za-z]{2,}", zh.NAME.sub(" ", line_zh))) - zh.KEPT_WORDS - {"model"}  # a folder
        assert line_zh and not words, (line, line_zh)
        spoken = [int(n) for n in re.findall(r"(?:After|done at step) (\d+)", line)]
        if stage in ("checking", "promoting") or line.startswith("done at step"):
            assert (step, steps) == (2250, 2250), (line, step, steps)
        elif stage == "training" and spoken:
            assert step == spoken[0], (line, step)
    assert seen[-2][1] == "正在学习 · 检查 · 第 2250 步，共 2250 步"  # a line no phrase says whole: the page's words


ZH = (b"accept-language", b"zh-CN,zh;q=0.9,en;q=0.8")


def chose(board, choice):
    """(status, line, line_zh) of the board's POST /board/learn/<choice>, asked as the page asks (in zh)."""
    answer = Asked(board, "POST", f"/board/learn/{choice}", headers=(OWN_HOST, ZH))
    found = json.loads(answer.body)
    return answer.status, found["line"], found["line_zh"]


def in_chinese(twin, *names):
    """Whether a line's zh twin is said by its phrases (not by its kind alone), every name kept, no English word."""
    rest = twin
    for name in sorted(map(str, names), key=len, reverse=True):
        assert name in rest, (name, twin)
        rest = rest.replace(name, " ")
    rest = re.sub(r"`[^`]*`|\S*[/._\-\d]\S*", " ", rest)
    return "（HTTP" not in twin and re.search(r"[\u4e00-\u9fff]", twin) and not re.findall(r"[A-Za-z]{2,}", rest)


@pytest.mark.quick
def test_an_undo_and_a_redo_answer_the_line_of_what_they_did_and_its_zh(tiny, tmp_path):
    """The choices' answers carry what mnist_learn.py prints for them (promotion.undo's `back to ...`), and its zh
    twin; a GET keeps it while the folder's learns stay so. (Before: "line" and "line_zh" were "".)"""
    model_dir = learned_folder(tiny, tmp_path, [1000, 2000], ["promoted"])
    board, _ = board_on(model_dir, tmp_path)
    before, after = os.path.join(str(model_dir), "mnist_model-1000"), os.path.join(str(model_dir), "mnist_model-2000")
    status, line, twin = chose(board, "undo")
    assert status == 200 and line.startswith(f"back to {before}; the learned checkpoint is in "), line
    assert in_chinese(twin, before) and twin.startswith(f"已退回到 {before}；"), twin
    assert json.loads(Asked(board, "GET", "/board/learn").body)["line"] == line  # the learns as the undo left them
    status, line, twin = chose(board, "redo")
    assert status == 200 and line.startswith(f"learned: {after} again (from {before}); go back with `"), line
    assert in_chinese(twin, before, after) and twin.startswith(f"重新启用了：{after}（从 {before} 学起）"), twin


@pytest.mark.quick
@pytest.mark.parametrize("choice, says, zh_says", [
    ("accept", "learned: {after} (from {before}), though digit 8's recall fell 0.950 → 0.900 (-5.0 points); go "
               "back with `", "启用了：{after}（从 {before} 学起），尽管数字 8 的召回率从 0.950 降到 0.900（-5.0 个百分点）；用 `"),
    ("discard", "discarded learn 1's checkpoint mnist_model-2000; {model} goes on with ",
     "已丢弃学习 1 的检查点 mnist_model-2000；{model} 继续使用 "),
])
def test_a_choice_on_a_held_learn_answers_the_line_of_what_it_did_and_its_zh(tiny, tmp_path, choice, says, zh_says):
    model_dir = learned_folder(tiny, tmp_path, [1000, 2000], ["held"])
    record = folders.folder_record(str(model_dir))
    record[folders.LEARNS][0]["check"]["fell"] = [{"digit": 8, "before": 0.95, "after": 0.9}]
    folders.change(str(model_dir), record=record)
    board, _ = board_on(model_dir, tmp_path)
    names = {"model": str(model_dir), "before": os.path.join(str(model_dir), "mnist_model-1000"),
             "after": os.path.join(str(model_dir), "mnist_model-2000")}
    status, line, twin = chose(board, choice)
    assert status == 200 and line.startswith(says.format(**names)), line
    assert in_chinese(twin, *(name for name in names.values() if name in line)), twin
    assert twin.startswith(zh_says.format(**names)), twin
