"""Each network the board serves is judged "not a digit" by its own map of the test digits, in one place.

/board/predict (page.read_picture) and /board/inside (inside.inside_answer) both answer for the first network
and, with --compare, for the second under "compare"; both go through atlas.networks, which pairs each network
with its slot ("first", "compare"), and so with its own reference (atlas.Atlases keeps one per slot). Checked
with stand-in networks and references that tell the slots apart: nothing is trained.
"""
import numpy as np
import pytest

from mnistkit.board import atlas, inside, model, page
from mnistkit.networks import LENET5, MLP


class Net:
    """A stand-in predictor: float32 [n, 10] with `digit` likeliest; its layers are never run here."""

    def __init__(self, network, digit):
        self.network, self.digit, self.source = network, digit, f"stand/{network.export_name}-7"

    def predict(self, rows):
        return np.tile(np.eye(10, dtype=np.float32)[self.digit] * 0.9 + 0.01, (len(rows), 1))


BAR = np.zeros((28, 28), np.uint8)
BAR[6:22, 13:16] = 255
FIRST, SECOND = model.Model(Net(MLP, 7), lambda data, name: BAR), model.Model(Net(LENET5, 1), lambda data, name: BAR)


@pytest.mark.quick
def test_networks_pairs_the_first_and_the_compare_network_with_their_own_slots():
    asked = []
    answer = atlas.networks(lambda net, slot: asked.append((net, slot)) or {"slot": slot}, FIRST, SECOND)
    assert asked == [(FIRST, "first"), (SECOND, "compare")]
    assert answer == {"slot": "first", "compare": {"slot": "compare"}}
    assert atlas.networks(lambda net, slot: {"slot": slot}, FIRST) == {"slot": "first"}  # no --compare: no block
    assert atlas.not_a_digit(None) is None and atlas.not_a_digit({"not_a_digit": True}) is True


@pytest.mark.quick
def test_predict_and_inside_judge_the_compare_network_by_the_compare_slots_map(monkeypatch):
    """The compare slot's reference says "not a digit", the first's does not: each block says its own."""
    def judged(served, net, rows, slot="first"):
        return net.predictor.predict(rows)[0], {"not_a_digit": slot == "compare", "slot": slot}
    monkeypatch.setattr(page, "judged", judged)
    answer = page.read_picture(FIRST, b"picture", "drawing.png", SECOND, served=object())
    assert (answer["digit"], answer["not_a_digit"]) == (7, False)
    assert (answer["compare"]["digit"], answer["compare"]["not_a_digit"]) == (1, True)
    assert answer["compare"]["model"]["network"] == SECOND.describe()["network"] and len(answer["input"]) == 784

    def look(net, rows, served=None, slot="first"):
        return {"network": net.describe()["network"], "not_a_digit": slot == "compare"}
    monkeypatch.setattr(inside, "look", look)
    answer = inside.inside_answer(FIRST, BAR, SECOND, served=object())
    assert answer["not_a_digit"] is False and answer["compare"] == {"network": SECOND.describe()["network"],
                                                                    "not_a_digit": True}
    assert "compare" not in inside.inside_answer(FIRST, BAR, None, served=object())

