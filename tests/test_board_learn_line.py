"""The learn's line on the page moves while a script prints nothing: what the learn does, for how long, the time left.

GET /board/learn answers "doing", "taken" and "left" (teach.Learning.doing, from learn.Watch.where); the page
asks each second while a learn runs and shows them after the stage (tests/test_board_teach.py checks the words).
"""
import pytest

from mnistkit import keep, learn
from mnistkit.board import teach
from test_board_judged import FIRST


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
