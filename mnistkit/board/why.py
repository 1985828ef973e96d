"""The page's Why view: each pixel's exact share of the answer's logit, the runner-up's, and where ink would help.

- POST /board/why[?digit=D][&versus=E]   a picture's bytes, as /board/predict takes them -> why_answer

The numbers are mnistkit.reasons' (the network is piecewise linear: the
pixels' shares plus the bias give the logit exactly), from one run of the
served model's layers (mnistkit.layers: its moving-average weights, from a
checkpoint, a SavedModel or a float .tflite). A model that cannot give its
gradient (an int8 .tflite: its weights and activations rounded to 8 bits;
an export written without its layers) is 409 with its one line.
"""
import numpy as np

from .. import preparation, reasons
from ..errors import DataError
from ..records import NUM_CLASSES
from . import page
from .atlas import placed
from .inside import numbers
from .table import BoardError, chosen

QUERY = ("digit", "versus")  # the query's names: the digit explained (default: the answer), the one it is set against
# and model=first|compare (table.chosen): which network explains


def why(call):
    """POST /board/why, a picture's bytes (its name in an X-Filename header): why_answer's for ?digit and ?versus."""
    unknown = set(call.query) - set(QUERY) - {"model"}
    if unknown:
        raise BoardError(400, f"{sorted(unknown)[0][:20]}: not a query of {call.path}; give digit=D and versus=E "
                              f"(digits 0-9, both optional), and model=compare for the --compare network")
    digit, versus = (digit_of(call.query, name) for name in QUERY)
    model = chosen(call)
    refusal = cannot_explain(model)
    if refusal is not None:
        raise BoardError(409, refusal)
    pixels = page.picture_sent(call, lambda: page.under_limits(model, model.prepare, call.body, page.named(call)))
    return why_answer(model, pixels, digit, versus, call.served, call.query.get("model", "first"))


def digit_of(query, name):
    """The digit (int 0-9) the query gives as `name`, or None when it gives none; BoardError 400 naming it."""
    text = query.get(name)
    if text is None:
        return None
    if not (len(text) == 1 and text.isdecimal()):
        raise BoardError(400, f"{name}={text[:20]}: give a digit from 0 to {NUM_CLASSES - 1}")
    return int(text)


def cannot_explain(model):
    """The one line saying why `model` cannot give its gradient, or None when it can."""
    inside = model.inside
    if getattr(inside, "problem", None):
        return f"{inside.problem}; the reasons need the layers"
    details = getattr(model.predictor, "input", None)
    if isinstance(details, dict) and details.get("dtype", np.float32) != np.float32:
        return (f"{model.predictor.source}: an int8 .tflite rounds its weights and activations to 8 bits, so its "
                f"answer has no exact gradient to give; serve the float .tflite, the SavedModel or the checkpoint "
                f"for the reasons")
    return None


def why_answer(model, pixels, digit=None, versus=None, served=None, slot="first"):
    """The reasons for one prepared picture (uint8 [28, 28]) as the page draws them:

    digit: the answer; probabilities, model: as /board/predict's;
    logits: float [10]; input: the 784 pixel values (0-255) the network got
    (x = value / 255); contributions: {"digit": D, "pixels": [784], "bias"}
    for D = `digit` or the answer, whose pixels summed plus bias give
    logits[D]; runner_up: the second most probable digit; with `versus` E:
    "versus" the same for E and "difference" D's less E's ({"digit",
    "versus", "pixels", "bias"}); missing_ink: {"digit": D, "pixels": d
    logit D / d x, per pixel}; line, at: forward()'s line that computes the
    logits. Given `served` (the board's), "atlas" and "not_a_digit" as
    /board/inside gives them (None while the test digits' map is made), from
    the map of the board's `slot` ("first" or "compare": the network's).
    Raises BoardError 409 (one line) when the model cannot run its layers
    (DataError).
    """
    x = preparation.network_rows(pixels)
    inside = model.inside
    try:
        probabilities, values = inside.run(x)
        weights = inside.weights()
    except DataError as e:
        raise BoardError(409, str(e)) from None
    values = [value[0] for value in values]
    logits = np.asarray(values[-1], np.float64).reshape(-1)
    answer = int(np.argmax(probabilities[0]))
    explained = answer if digit is None else digit
    asked = [explained] + ([] if versus is None else [versus])
    grad = reasons.gradients(inside.layers, weights, values, asked)
    parts = [reasons.shares(x[0], logits[d], g) for d, g in zip(asked, grad)]
    result = {**page.answer_of(model, probabilities[0]), "input": pixels.reshape(-1).tolist(),
              "logits": numbers(logits), "runner_up": int(np.argsort(-probabilities[0], kind="stable")[1]),
              "contributions": shared(explained, *parts[0]),
              "missing_ink": {"digit": explained, "pixels": numbers(grad[0])},
              "line": inside.layers[-1].line, "at": inside.layers[-1].at}
    if served is not None:
        place = placed(served, model, x[0], values, probabilities[0], slot)
        result.update(atlas=place, not_a_digit=None if place is None else place["not_a_digit"])
    if versus is not None:
        result["versus"] = shared(versus, *parts[1])
        result["difference"] = {**shared(explained, parts[0][0] - parts[1][0], parts[0][1] - parts[1][1]),
                                "versus": versus}
    return result


def shared(digit, pixels, bias):
    """{"digit", "pixels": numbers, "bias"} of one logit's shares."""
    return {"digit": digit, "pixels": numbers(pixels), "bias": float(f"{bias:.9g}")}
