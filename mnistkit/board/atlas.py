"""The map of what the network knows, and "that is not a digit", on the board.

- GET /board/atlas[?model=compare]   the test digits on a 2-D map of the served network's last hidden layer
                                     (mnistkit.reference): 200 {"status": "done", "count", "layer", "labels":
                                     base64 of uint8 [n], "points": base64 of uint16 [n, 2] scaled into "box"
                                     [xmin, ymin, xmax, ymax], "thresholds" [10], "source", "model"}; 202 {"status":
                                     "making", "done", "total"} while it is being made; 409 {"error"} when it
                                     cannot be (a model without layers, damaged test records)

The reference is made once per model (a Follower's swap makes a new Model),
on a thread of its own, BATCH test digits per run, so that the board
answers predict meanwhile; the first request that needs it (the atlas, a
predict, an inside) starts it. Until it is done, predict's and inside's
"not_a_digit" is None and inside's "atlas" None. A reference is cached on
disk (reference.cache_folder), so that a board started again has it at once.
"""
import base64
import threading

import numpy as np

from .. import records, reference
from ..errors import DataError
from ..records import IMAGE_PIXELS
from .model import files_state
from .table import BoardError, Reply, chosen

SCALE = 65535  # the points' uint16 steps across the map's box


class Making:
    """One model's reference being made on a daemon thread: `state` making, done (`reference`) or failed (`line`)."""

    def __init__(self, model, data_dir, stopped):
        self.model, self.data_dir, self.stopped, self.lock = model, data_dir, stopped, threading.Lock()
        self.state, self.done, self.total, self.line, self.reference = "making", 0, 0, "", None
        self.thread = threading.Thread(target=self.work, name="board-atlas", daemon=True)
        self.thread.start()

    def work(self):
        try:
            made = reference.reference_of(self.model.inside, files_state(self.model.predictor.source), self.data_dir,
                                          self.moved, self.stopped)
            with self.lock:
                self.reference, self.state = made, "done" if made is not None else "failed"
                self.line = "" if made is not None else "the server stopped"
        except Exception as e:  # noqa: BLE001  (any: said in one line, the server goes on)
            line = str(e) if isinstance(e, DataError) else f"{type(e).__name__}: {e}"
            with self.lock:
                self.state, self.line = "failed", " ".join(line.split())[:300]

    def moved(self, done, total):
        with self.lock:
            self.done, self.total = done, total


class Atlases:
    """The references of what a board serves, one per model slot (first, compare), each of the Model now there.
    data_dir: the test records' folder, file or pattern (reference.test_digits)."""

    def __init__(self, data_dir=records.DATA_DIR):
        self.data_dir, self.lock, self.making, self.stopped = data_dir, threading.Lock(), {}, threading.Event()

    def of(self, slot, model):
        """The Making of `model` in `slot`, started when that slot's is of another model (a newer one came)."""
        with self.lock:
            held = self.making.get(slot)
            if held is None or held.model is not model:
                held = self.making[slot] = Making(model, self.data_dir, self.stopped)
            return held

    def ready(self, slot, model):
        """The Reference of `model` when it is made, else None (started when it was not)."""
        held = self.of(slot, model)
        return held.reference if held.state == "done" else None

    def stop(self, wait=0.0):
        """Stop the references being made after their batch (the server stops), waiting at most `wait` seconds for
        each thread under way."""
        self.stopped.set()
        with self.lock:
            making = list(self.making.values())
        for held in making:
            held.thread.join(wait)


def of_served(served):
    """The served board's Atlases (made on first use, for the mistakes' test records)."""
    found = getattr(served, "atlases", None)
    if found is None:
        found = served.atlases = Atlases(getattr(getattr(served, "mistakes", None), "data_dir", records.DATA_DIR))
    return found


def networks(one, model, compare=None):
    """one(model, "first"), with one(compare, "compare") under its "compare" when the board serves a second
    network: the one place that pairs each network with its slot, so that each is judged "not a digit" by its own
    map of the test digits (judged, placed: one reference per slot). one(network, slot) -> a dict."""
    answer = one(model, "first")
    if compare is not None:
        answer["compare"] = one(compare, "compare")
    return answer


def not_a_digit(place):
    """A place's not_a_digit (Reference.place's bool), or None while the map of the test digits is made (no place)."""
    return None if place is None else place["not_a_digit"]


def judged(served, model, rows, slot="first"):
    """(probabilities float32 [10], place or None) of one input float32 [1, 784]: place is Reference.place's
    (where it falls, its nearest test digits, not_a_digit), None while the reference is made, when the model
    shows no layers, or without `served` (the board's: no maps). One run of the model."""
    made = of_served(served).ready(slot, model) if served is not None and getattr(
        model.inside, "problem", None) is None else None
    if made is None:
        return model.predictor.predict(rows)[0], None
    probabilities, values = model.inside.run(rows)
    return probabilities[0], made.place(rows[0], values[-2][0], probabilities[0])


def placed(served, model, pixels, values, probabilities, slot="first"):
    """Reference.place of one input (pixels: its x, float [784] in [0, 1]) and its layer values (Inside.run's, [0]
    of each), with its neighbours' pixels ("input": 784 values each), or None while the reference is being made."""
    made = of_served(served).ready(slot, model)
    if made is None or values is None:
        return None
    place = made.place(np.asarray(pixels).reshape(-1), np.asarray(values[-2]), probabilities)
    if made.images is not None:
        for near in place["nearest"]:
            near["input"] = made.images[near["record"]].reshape(IMAGE_PIXELS).tolist()
    return place


def atlas(call):
    """GET /board/atlas[?model=compare]: the map, or its progress (see the module's docstring)."""
    model = chosen(call)
    if set(call.query) - {"model"}:
        raise BoardError(400, f"{call.method} {call.path}: give no query, or model=compare")
    if getattr(model.inside, "problem", None):
        raise BoardError(409, f"{model.inside.problem}; the map needs its last hidden layer")
    held = of_served(call.served).of(call.query.get("model", "first"), model)
    with held.lock:
        state, done, total, line = held.state, held.done, held.total, held.line
    if state == "failed":
        raise BoardError(409, line)
    if state == "making":
        return Reply({"status": "making", "done": done, "total": total, "model": model.describe()}, 202)
    return map_answer(held.reference, model)


def map_answer(made, model):
    """The done atlas's answer (see the module's docstring): the points as uint16 steps across their box."""
    points = made.coordinates().astype(np.float64)
    low, high = points.min(axis=0), points.max(axis=0)
    span = np.where(high > low, high - low, 1)
    steps = np.round((points - low) / span * SCALE).astype("<u2")
    return {"status": "done", "count": int(len(points)), "layer": made.layer,
            "labels": base64.b64encode(made.labels.astype(np.uint8).tobytes()).decode("ascii"),
            "points": base64.b64encode(steps.tobytes()).decode("ascii"),
            "box": [float(low[0]), float(low[1]), float(high[0]), float(high[1])],
            "thresholds": [round(float(t), 4) for t in made.thresholds], "source": made.source,
            "model": model.describe()}
