"""The board's learn, as the terminal's: docs/tests.md, "The board's learn as the terminal's (test_board11.py)".

1. POST /board/learn with nothing new (nothing kept, removed or relabelled since the learn in service) refuses with
   learn.nothing_new's line (409, its zh twin) and trains nothing; ?again=1 learns all the same.
2. A board learn held by the forgetting check keeps its "not promoted: ..." line in GET /board/learn, with its
   zh twin.
"""
import json
import time
import types

import numpy as np
import pytest

from conftest import wait_limit
from mnistkit import cli, keep, learn, promotion
from mnistkit.board import teach, zh
from mnistkit.board.table import BoardError
from test_stumbles9 import with_parts
from test_stumbles10 import learned_in_service


def kept_one():
    """A keep store in ./my_digits holding one stroke kept as 7 (the store refuses a blank)."""
    kept = keep.KeptDigits("my_digits")
    digit = np.zeros((28, 28), np.uint8)
    digit[6:22, 12:16] = 255
    kept.keep(digit, 7)
    return kept, digit


def served(step=1000):
    """./model's checkpoint of `step` served, as teach.learn_folder reads a model.Model."""
    return types.SimpleNamespace(form="checkpoint", predictor=types.SimpleNamespace(source=f"model/mnist_model-{step}"))


def learn_call(model, learning, **query):
    """A POST /board/learn call (table.Call's parts learn_start reads) on the first network."""
    return types.SimpleNamespace(query=query, learning=learning, model=model, compare=None, method="POST",
                                 path="/board/learn")


@pytest.mark.quick
def test_a_board_learn_with_nothing_new_is_refused_with_the_terminals_line(tmp_path, monkeypatch):
    """Fails before the fix: POST /board/learn, nothing kept, removed or relabelled since the learn in service,
    trained the model on the same digits again (minutes), where mnist_learn.py says "nothing new to learn"."""
    model = with_parts(tmp_path)  # mnist_model-1000 in service
    monkeypatch.chdir(tmp_path)
    kept, digit = kept_one()
    learned_in_service(model, kept)
    calls = []
    monkeypatch.setattr(learn, "learn", lambda plan, watch=None: calls.append(plan) or str(model / "mnist_model-1000"))
    learning = teach.Learning(kept)
    with pytest.raises(BoardError) as refused:
        teach.learn_start(learn_call(served(), learning))
    line = str(refused.value)
    assert (refused.value.status, calls) == (409, [])
    assert line == ("nothing new to learn: the model in service (model/mnist_model-1000, learn 1) learned the 1 digit "
                    "kept in my_digits, and none was kept, removed or relabelled since; keep more digits (or correct "
                    'some), or click "Learn again anyway" (POST /board/learn?again=1) to train on them once more')
    assert line == learn.nothing_new(learn.Plan().to("model", kept), again=teach.AGAIN)  # the one rule
    twin = ("没有新的可学：正在使用的模型（model/mnist_model-1000，学习 1）已经学过 my_digits 里保存的那 1 个数字，之后没有新"
            "保存、删除或改标签的；请再保存一些数字（或改正一些），或者点“仍然再学一次”（POST /board/learn?again=1）用它们再训练一次")
    assert zh.twin(line, 409) == twin
    status = learning.status(served())  # the page says it before a click, and its button learns anyway
    assert (status["state"], status["nothing_new"], status["nothing_new_zh"]) == ("done", line, twin)
    with pytest.raises(BoardError) as bad:
        teach.learn_start(learn_call(served(), learning, again="yes"))
    assert (bad.value.status, str(bad.value)) == (400, "again=yes: give again=1 (learn even with nothing new) or "
                                                       "leave it out")
    assert zh.twin(str(bad.value), 400) == "again=yes：请给 again=1（没有新数字也学习）或者不给"
    reply = teach.learn_start(learn_call(served(), learning, again="1"))  # learn anyway
    learning.thread.join(wait_limit(30))
    assert (reply.status, len(calls)) == (202, 1)
    kept.keep(digit, 1)  # one more: something new, learned without again
    assert learning.status(served())["nothing_new"] is None
    teach.learn_start(learn_call(served(), learning))
    learning.thread.join(wait_limit(30))
    assert len(calls) == 2


@pytest.mark.quick
def test_a_board_learn_held_by_its_check_keeps_its_line(tmp_path, monkeypatch):
    """Fails before the fix: once a board learn was held (not promoted: a digit's recall fell past the limits),
    GET /board/learn's "line" was "" (only a learn in service kept it), and the line had no zh phrase."""
    model = with_parts(tmp_path)  # mnist_model-1000 in service
    monkeypatch.chdir(tmp_path)
    kept, _ = kept_one()
    check = {"fell": [{"digit": 7, "before": 0.951, "after": 0.921}, {"digit": None, "before": 0.98, "after": 0.97}]}
    line = (f"not promoted: {promotion.fell(check)}, past the limits (2 points for a digit, 0.5 in all); it waits in "
            f"model/learns/2: {promotion.choices('model')}")
    accept, discard = (f"`{cli.command('mnist_learn.py', f'--{flag}', '--model-dir', 'model')}`"
                       for flag in ("accept-worse", "discard"))
    assert line == ("not promoted: digit 7's recall fell 0.951 → 0.921 (-3.0 points) and the test accuracy fell "
                    "0.9800 → 0.9700 (-1.0 points), past the limits (2 points for a digit, 0.5 in all); it waits in "
                    f"model/learns/2: use it anyway with {accept}, or discard it with {discard}")

    def held(plan, watch):  # a learn as mnistkit.learn holds one: held in the record, LearnHeld raised
        record = json.loads((model / "schedule.json").read_text(encoding="utf-8"))
        record["learns"] = [{"learn": 2, "state": "held", "before": "mnist_model-1000", "after": "mnist_model-1200",
                             "changed": time.time(), "check": check}]
        (model / "schedule.json").write_text(json.dumps(record), encoding="utf-8")
        raise learn.LearnHeld(line, record["learns"][0])
    monkeypatch.setattr(learn, "learn", held)
    learning = teach.Learning(kept)
    learning.start(served())
    learning.thread.join(wait_limit(30))
    status = learning.status(served())
    assert (status["state"], status["check"], status["line"]) == ("held", check, line)
    assert status["line_zh"] == ("未启用：数字 7 的召回率从 0.951 降到 0.921（-3.0 个百分点），并且测试准确率从 0.9800 降到 0.9700"
                                 "（-1.0 个百分点），超过了上限（每个数字 2 个百分点，总体 0.5 个百分点）；它在 model/learns/2 里等你"
                                 f"决定：用 {accept} 仍然使用，或用 {discard} 丢弃")
    precision = {"fell": [{"digit": 3, "measure": "precision", "before": 0.95, "after": 0.9}]}
    assert zh.phrased(f"not promoted: {promotion.fell(precision)}") == "未启用：数字 3 的精确率从 0.950 降到 0.900（-5.0 个百分点）"
