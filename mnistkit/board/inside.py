"""The page's Inside panel: forward()'s layers for a picture, from the same run as its answer, and a unit's weights.

- POST /board/inside              a picture's bytes, as /board/predict takes them -> /board/predict's answer
                                  (digit, probabilities, input, model) and "layers", "pushes" (inside_answer)
- GET  /board/inside/unit?layer=L&unit=N[&model=compare]   one unit's incoming and outgoing weights (unit_answer)

The layers are the served model's own (mnistkit.layers: the moving-average
weights, as the app restores them; an export's `inside` signature), and
come out of the one run that gives the probabilities. A dense layer and
the logits come as numbers (NUMBER_FORMAT: 7 significant digits); conv
and pool maps as 8-bit pictures (maps), each map with its own min and max,
so that LeNet-5's answer stays under 100 KB. With --compare, the second
model's answer and layers for the same input are under "compare". A model
that has no layers to show (a network that declares none, an export
written before the `inside` signature) answers the digit without them:
"layers" null and "refused" its one line (its unit weights: 409).
"""
import base64

import numpy as np

from .. import layers, preparation
from ..errors import DataError
from ..records import NUM_CLASSES
from . import page, zh
from .atlas import networks, not_a_digit, placed
from .table import BoardError, chosen, runs_model

NUMBER_FORMAT = "{:.7g}"  # a dense layer's values and weights as JSON numbers: float32's precision, not more
TOP_PUSHES = 10  # the units shown as pushing a digit most
UNIT_QUERY = "layer=L&unit=N (a layer's name and a unit's number from 0)"


@runs_model
def inside(call):
    """POST /board/inside, a picture's bytes (its name in an X-Filename header): inside_answer's."""
    pixels = page.picture_sent(call, lambda: page.under_limits(call.model, call.model.prepare, call.body,
                                                               page.named(call)))
    return inside_answer(call.model, pixels, call.compare, call.served)


def inside_answer(model, pixels, compare=None, served=None):
    """The answer to one picture with its layers: digit, probabilities, input, model, layers, pushes (look), and
    given `served`, atlas and not_a_digit (look); "compare": the same of the compare model, but the input.

    pixels: uint8 [28, 28], the prepared input.
    """
    rows = preparation.network_rows(pixels)
    return {**networks(lambda network, slot: look(network, rows, served, slot), model, compare),
            "input": pixels.reshape(-1).tolist()}


def look(model, rows, served=None, slot="first"):
    """{digit, probabilities, model, layers, pushes} of one input float32 [1, 784] for `model`, from one run.

    layers: one entry per layer in forward()'s order (encoded); pushes:
    pushes_of. Given `served` (the board's), "atlas": where the input falls
    on the test digits' map and its nearest ones (board.atlas.placed), and
    "not_a_digit" (its bool), both None while that map is being made. A
    model without layers to show: its digit and probabilities, "layers" and
    "pushes" None, and "refused": the line that says why (its Chinese twin: "refused_zh").
    """
    inside = model.inside
    try:
        probabilities, values = inside.run(rows)
    except DataError as e:
        return {**page.answer_of(model, model.predictor.predict(rows)[0]), "layers": None, "pushes": None,
                "refused": str(e), "refused_zh": zh.twin(str(e), 409),
                **({} if served is None else {"atlas": None, "not_a_digit": None})}
    values = [value[0] for value in values]
    answer = {**page.answer_of(model, probabilities[0]),
              "layers": [encoded(layer, value) for layer, value in zip(inside.layers, values)],
              "pushes": pushes_of(inside, values)}
    if served is not None:
        place = placed(served, model, rows[0], values, probabilities[0], slot)
        answer.update(atlas=place, not_a_digit=not_a_digit(place))
    return answer


def encoded(layer, values):
    """One layer of one answer: name, kind, shape, line, at (mnistkit.layers.Layer) and its values: "values"
    (numbers) for a dense layer and the logits, "maps" (maps: 8-bit, each its own scale) for conv and pool."""
    entry = {"name": layer.name, "kind": layer.kind, "shape": list(layer.shape), "line": layer.line, "at": layer.at}
    if values.ndim == 3:
        entry["maps"] = maps(values, shared=False)
    else:
        entry["values"] = numbers(values)
    return entry


def numbers(values):
    """float32 values as a list of JSON numbers with NUMBER_FORMAT's digits."""
    return [float(NUMBER_FORMAT.format(v)) for v in np.asarray(values, np.float32).reshape(-1).tolist()]


def maps(values, shared=True):
    """float32 [height, width, count] as 8-bit pictures: {"count", "height", "width", "min": [count], "max":
    [count], "data": base64 of uint8 [count, height, width]}; value = min + byte / 255 * (max - min).

    shared: one min and max for all of them (a unit's weights, comparable
    across its pictures); else each picture its own (a layer's maps).
    """
    values = np.asarray(values, np.float32)
    height, width, count = values.shape
    by_map = np.moveaxis(values, -1, 0).reshape(count, -1)
    low = np.full(count, by_map.min()) if shared else by_map.min(axis=1)
    high = np.full(count, by_map.max()) if shared else by_map.max(axis=1)
    span = np.where(high > low, high - low, 1)
    data = np.round((by_map - low[:, None]) / span[:, None] * 255).astype(np.uint8)
    return {"count": count, "height": height, "width": width, "min": numbers(low), "max": numbers(high),
            "data": base64.b64encode(data.tobytes()).decode("ascii")}


def pushes_of(inside, values, top=TOP_PUSHES):
    """What pushed each digit's logit, or None: {"layer": the dense layer feeding the logits, "digits": [{"digit",
    "units": the `top` units of largest positive push, "pushes": theirs, "positive": the sum of every positive
    push}] for digits 0-9}. A unit's push to digit d is its activation times its weight to d (the logit is the
    sum of them all and the bias)."""
    if len(inside.layers) < 2 or inside.layers[-2].kind != "dense":
        return None
    push = values[-2][:, None] * inside.weights()[inside.layers[-1].name]  # [units, 10]
    digits = []
    for digit in range(NUM_CLASSES):
        order = [u for u in np.argsort(-push[:, digit], kind="stable")[:top].tolist() if push[u, digit] > 0]
        digits.append({"digit": digit, "units": order, "pushes": numbers(push[order, digit]),
                       "positive": float(NUMBER_FORMAT.format(push[:, digit].clip(0).sum()))})
    return {"layer": inside.layers[-2].name, "digits": digits}


@runs_model
def unit(call):
    """GET /board/inside/unit?layer=L&unit=N[&model=compare]: unit_answer's."""
    model = chosen(call)
    if not {"layer", "unit"} <= set(call.query) or set(call.query) - {"layer", "unit", "model"}:
        raise BoardError(400, f"{call.method} {call.path}: give {UNIT_QUERY}")
    number = call.query["unit"]
    if not number.isdecimal() or len(number) > 6:
        raise BoardError(400, f"unit={number[:20]}: give a unit's number from 0")
    return unit_answer(model, call.query["layer"], int(number))


def unit_answer(model, name, number):
    """One unit's weights (mnistkit.layers.unit): {"layer", "unit", "kind", "to", "incoming", "outgoing" (None for
    the logits), "model"}, each part weights_part's. BoardError 400 for an unknown layer, a pool or a unit past
    the layer's, 409 when the model has no layers to show."""
    inside = model.inside
    try:
        found = layers.unit(inside, name, number)
    except ValueError as e:
        raise BoardError(400, str(e)) from None
    except DataError as e:
        raise BoardError(409, str(e)) from None
    kind = next(layer.kind for layer in inside.layers if layer.name == name)
    outgoing = found["outgoing"]
    return {"layer": name, "unit": number, "kind": kind, "to": found["to"], "incoming": weights_part(found["incoming"]),
            "outgoing": None if outgoing is None else weights_part(outgoing), "model": model.describe()}


def weights_part(values):
    """Weights as the page draws them: {"values": numbers, "min", "max"} of a 1-D array; maps (one scale for all)
    of [height, width] or [height, width, count]."""
    values = np.asarray(values, np.float32)
    if values.ndim == 1:
        return {"values": numbers(values), "min": float(values.min()), "max": float(values.max())}
    return maps(values if values.ndim == 3 else values[:, :, None])
