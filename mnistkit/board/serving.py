"""TF Serving's REST API on the board: its predict, version status and metadata, with its paths and errors.

The routes (app.ROUTES) match TF Serving's own two patterns (PREDICT_PATH
for POST, STATUS_PATH for GET) and answer anything else under /v1/ with its
400 "Malformed request" (malformed), as TF Serving's http_rest_api_handler
does. <name> is the export's name of the network (its declaration's
export_name: mnist, mnist_lenet5), of the first model or the --compare one
(as TF Serving serves several models by name); /versions/<N> may follow
it, as in TF Serving. A predict with "signature_name": "inside" answers
forward()'s layers (the exports' second signature, mnistkit.layers), at
most INSIDE_ROWS instances at a time. Paths under /v1/ are matched without regard to case, as TF
Serving's are (a model's name keeps its case), and on the path as sent
(Route.raw): a percent escape is decoded in the model's name and label
only, after the match, as TF Serving's ParseModelInfo decodes them
(`/v1/models/a%2Fb` is the model a/b, 404; `mnist%3Apredict` no predict
path). Errors are JSON,
{"error": "..."}, with TF Serving's statuses: 404 for another model name
or version number, 400 for the rest (another method or path, a version
label, :classify, :regress, a body that is not a request).
"""
import json
import re
import urllib.parse

import numpy as np

from .. import cli, layers
from ..errors import DataError
from ..export import CLASSES_KEY, INPUT_KEY, PROBABILITIES_KEY, SIGNATURE_KEY
from ..records import IMAGE_PIXELS, IMAGE_SIZE
from .table import BoardError, Reply, runs_model

PREDICT_PATH = re.compile(r"/v1/models/(?P<name>[^/:]+)(?:/versions/(?P<version>\d+)|/labels/(?P<label>[^/:]+))?"
                          r":(?P<verb>classify|regress|predict)", re.IGNORECASE)  # TF Serving's two patterns: POST
STATUS_PATH = re.compile(r"/v1/models(?:/(?P<name>[^/:]+))?(?:/versions/(?P<version>\d+)|/labels/(?P<label>[^/:]+))?"
                         r"(?P<metadata>/metadata)?", re.IGNORECASE)  # and GET
ANY_PATH = re.compile(r"/v1/.*", re.IGNORECASE | re.DOTALL)  # the rest under /v1/: malformed
PIXEL_RANGE = "pixels are in [0, 1]: divide 0-255 values by 255"
SIGNATURES = (SIGNATURE_KEY, layers.SIGNATURE_KEY)  # serving_default, and inside: forward()'s layers
INSIDE_ROWS = 16  # instances an `inside` predict takes at most (LeNet-5's layers: about 48,000 numbers each)


@runs_model
def predict(call):
    """POST /v1/models/<name>[/versions/<N>]:predict: TF Serving's predictions of call.json for call.model.

    {"predictions": [...]} for the row format, {"outputs": {...}} for the
    columnar one (images_of), a value that is not finite (a model trained
    into NaN) written NaN, Infinity or -Infinity, as TF Serving writes it
    (its api_rest.md's "JSON conformance"). BoardError 404 for another
    model or version, 400 for a label, :classify or :regress, and whatever
    images_of refuses.
    """
    model = servable(call)
    if call.params["verb"].lower() != "predict":
        raise BoardError(400, f"{call.method} {call.path}: this server answers :predict only; {SIGNATURE_KEY} is a "
                              f"predict signature, not a classification or regression one")
    images, layout = images_of(call.json)  # decimals rounded to the nearest float32, as TF Serving reads them
    if call.json.get("signature_name") == layers.SIGNATURE_KEY:
        return Reply(inside_answer(model, images, layout), nan=True)
    return Reply(predict_answer(model, images, layout), nan=True)  # NaN: TF Serving's token (JSON conformance)


def status(call):
    """GET /v1/models/<name>[/versions/<N>][/metadata]: the version status, or the metadata (the signature).

    BoardError 400 for a path without a model's name or with a label, and
    for HEAD (which the table lets every GET route answer, and TF Serving
    calls malformed), 404 for another model or version.
    """
    if call.method != "GET":
        malformed(call)
    if call.params["name"] is None:
        raise BoardError(400, f"Missing model name in request: {call.method} {call.path}; this server serves "
                              f"/v1/models/{call.model.name}")
    model = servable(call)
    return metadata(model) if call.params["metadata"] else version_status(model)


def malformed(call):
    """Any other method or path under /v1/: TF Serving's 400, naming what this server answers."""
    name = call.model.name
    raise BoardError(400, f"Malformed request: {call.method} {call.path}; this server answers "
                          f"POST /v1/models/{name}:predict and GET /v1/models/{name}[/metadata]")


def servable(call):
    """The Model the path's name, version and label name: call.model's, or else the --compare one's name;
    BoardError 400 for a label, 404 otherwise. The name and the label are percent-decoded (the path's match was
    on them as sent), as TF Serving's DecodeArg (curl_easy_unescape) decodes them: `mn%69st` is mnist."""
    found = {**call.params, **{key: urllib.parse.unquote(call.params[key], errors="replace")
                               for key in ("name", "label") if call.params.get(key) is not None}}
    served = [m for m in (call.model, call.compare) if m is not None]
    model = next((m for m in served if m.name == found["name"]), call.model)
    if found["label"] is not None:
        raise BoardError(400, f"Unrecognized servable version label: {found['label']}; this server has no labels: "
                              f"give /versions/{model.version} or no version")
    if found["name"] != model.name:
        raise BoardError(404, f"Servable not found for request: Latest({found['name']}); "
                              f"this server serves {' and '.join(chr(34) + m.name + chr(34) for m in served)}")
    if found["version"] is not None and int(found["version"]) != model.version:
        raise BoardError(404, f"Servable not found for request: Specific({found['name']}, "
                              f"{found['version']}); this server serves version {model.version}")
    return model


def images_of(request):
    """The `images` of a TF Serving predict request (a parsed JSON object): float32 [n, 784], and its format.

    Row format: {"instances": [[784 numbers], ...]} or [{"images": [...]}, ...];
    columnar: {"inputs": [[...]]} or {"inputs": {"images": [[...]]}}.
    Returns (images, "row" or "columnar"). Raises BoardError 400 naming
    what is wrong: the format (instances mixing {"images": ...} objects
    and plain rows too), the signature's name ("" or absent: the
    default, serving_default), the input's name, a dtype other than
    numbers, a shape other than [n, 784], and the first value (row, column)
    outside [0, 1]: NaN, an infinity, one past float32's range (1e39), 255.
    A decimal (0.96) is read as the nearest float64, then rounded to the
    nearest float32, as TF Serving's JSON reader (RapidJSON's double, cast to
    float) reads it: np.float32(0.96), 0.959999978542328.
    """
    if not isinstance(request, dict) or ("instances" in request) == ("inputs" in request):
        raise BoardError(400, 'JSON Value: the request must be an object with either "instances" (row format) '
                              'or "inputs" (columnar format)')
    signature = request.get("signature_name", "")
    if not isinstance(signature, str):
        raise BoardError(400, f"JSON Value: \"signature_name\" is {json_name(signature)}, not a string; give "
                              f"\"{SIGNATURE_KEY}\" (or none) or \"{layers.SIGNATURE_KEY}\"")
    signature = signature or SIGNATURE_KEY
    if signature not in SIGNATURES:
        raise BoardError(400, f"Serving signature name: \"{signature}\" not found in signature def "
                              f"(this model has \"{SIGNATURE_KEY}\" and \"{layers.SIGNATURE_KEY}\")")
    if "instances" in request:
        values, layout = request["instances"], "row"
        named = [isinstance(v, dict) for v in values] if isinstance(values, list) else []
        if any(named) and not all(named):
            raise BoardError(400, f'JSON Value: "instances" mixes objects ({{"{INPUT_KEY}": [...]}}) and plain rows '
                                  f'([...]); give every instance in one form')
        if named and all(named):
            values = [named_input(v) for v in values]
    else:
        values, layout = request["inputs"], "columnar"
        if isinstance(values, dict):
            values = named_input(values)
    try:
        images = rows_array(values)
    except ValueError:  # ragged lists
        raise BoardError(400, f"{INPUT_KEY}: rows of different lengths; expected float32 [N, {IMAGE_PIXELS}]") from None
    if images.ndim == 2 and images.size and images.dtype.kind in "iufO":  # JSON's true is no number, nor null
        images = numbers_only(values, images)
    if images.size and images.dtype.kind not in "iuf":
        raise BoardError(400, f"{INPUT_KEY}: expected numbers (DT_FLOAT), got {json_kind(images)}")
    if images.ndim != 2 or images.shape[1] != IMAGE_PIXELS or images.shape[0] == 0:
        pictures = images.ndim in (3, 4) and images.shape[1:3] == (IMAGE_SIZE, IMAGE_SIZE) and images.shape[0] and \
            images.shape[3:] in ((), (1,))  # [N, 28, 28] or [N, 28, 28, 1]: pictures not flattened
        raise BoardError(400, f"{INPUT_KEY}: expected shape [N, {IMAGE_PIXELS}] (N >= 1), got {list(images.shape)}"
                              + (f": flatten each {IMAGE_SIZE}x{IMAGE_SIZE} picture to its {IMAGE_PIXELS} pixels, "
                                 f"row by row (numpy: .reshape(-1, {IMAGE_PIXELS}))" if pictures else ""))
    with np.errstate(over="ignore"):  # past float32's range: inf, refused below
        pixels = images.astype(np.float32)
    outside = ~((pixels >= 0) & (pixels <= 1))  # NaN compares false: outside too
    if outside.any():
        row, column = (int(i) for i in np.argwhere(outside)[0])
        raise BoardError(400, f"{INPUT_KEY}: row {row}, column {column} is {out_of_range(images[row, column])}; "
                              f"{PIXEL_RANGE}")
    return pixels, layout


def rows_array(values, block=64):
    """np.array(values), made `block` rows at a time when values is a longer list; raises ValueError when ragged.

    NumPy holds the GIL while it reads a nested list (a tenth of a second
    for 1,000 rows of 784), which would keep the event loop's thread from
    answering anyone meanwhile; between blocks other threads get their turn.
    """
    if not isinstance(values, list) or len(values) <= block:
        return np.array(values)
    return np.concatenate([np.array(values[i:i + block]) for i in range(0, len(values), block)])


def numbers_only(rows, images):
    """images (rows_array of the 2-D list `rows`) when every value is a JSON number; BoardError 400 naming the
    first (row, column) that is not one (true and false: NumPy reads them as 1 and 0 beside numbers; null; a
    string), as TF Serving refuses a value that is not a number for a DT_FLOAT input. An integer past int64 (NumPy
    keeps it as a Python object) is taken as the float it is, for the range check to name. Returns float or int
    array [n, 784]."""
    for r, row in enumerate(rows):
        kinds = set(map(type, row))
        if kinds <= {int, float}:
            continue
        column, value = next((c, v) for c, v in enumerate(row) if type(v) not in (int, float))
        raise BoardError(400, f"{INPUT_KEY}: row {r}, column {column} is {json_name(value)}, not a number "
                              f"(DT_FLOAT); {PIXEL_RANGE}")
    if images.dtype.kind != "O":
        return images
    return np.array([[as_float(v) for v in row] for row in rows], np.float64)


def as_float(value):
    """float(value) for a JSON number, an infinity for an integer past float64's range (10**400)."""
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def json_name(value):
    """A JSON value as a message names it: true, false, null, "text" (cut), an array, an object."""
    if isinstance(value, (bool, type(None))):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, str):
        return cli.readable_json(value[:20] + ("..." if len(value) > 20 else ""), "utf-8")  # "七", "\\udcb7"
    return {list: "an array", dict: "an object"}.get(type(value), repr(value))


def out_of_range(value):
    """What is wrong with one number of a request, as JSON writes it: 'NaN, not a number', '1e+39, past float32', ..."""
    value = value.item()
    if value != value:
        return "NaN, not a number"
    if abs(value) == float("inf"):
        return f"{'-' if value < 0 else ''}Infinity, not a finite number"
    if abs(value) > float(np.finfo(np.float32).max):
        return f"{value}, past float32's range"
    return f"{value}, outside [0, 1]"


def named_input(values):
    """The `images` entry of a dict of named inputs; raises BoardError 400 for another name or more names."""
    if set(values) != {INPUT_KEY}:
        raise BoardError(400, f"input names {sorted(values)}: this signature takes one input, \"{INPUT_KEY}\"")
    return values[INPUT_KEY]


def json_kind(array):
    """What a JSON array holds, as a message says it: strings, booleans, objects or mixed values."""
    return {"U": "strings", "b": "booleans"}.get(array.dtype.kind, "objects or mixed values")


def each_alone(run, images):
    """run(images[i:i + 1]) for each row i, stacked: a row's answer whatever rows come with it, in their order.

    run: float32 [1, 784] -> an array [1, ...] (or a list of them: each
    layer's). A model run on a batch is not the same numbers as on each of
    its rows (the matrix kernels add up in another order at another batch
    size: a last bit or so of float32, enough to change a close argmax),
    which TF Serving's own batching shows (serving #1312); one row at a
    time, each row is always computed the same way (its cost: docs/deploy.md).
    """
    answers = [run(images[i:i + 1]) for i in range(len(images))]
    if isinstance(answers[0], (list, tuple)):
        return [np.concatenate(parts) for parts in zip(*answers)]
    return np.concatenate(answers)


def predict_answer(model, images, layout):
    """TF Serving's answer to a predict request: {"predictions": [...]} (row) or {"outputs": {...}} (columnar).

    Each row is run alone (each_alone), so its answer does not depend on the
    other rows sent with it, and rows keep their order. The probabilities
    are the model's float32 values written as the shortest decimal that
    reads back to the same float64, which holds the float32 exactly: a
    client's float32(value) is the model's value, bit for bit (TF Serving
    rounds its floats to fewer digits: serving #1332).
    """
    probabilities = each_alone(model.predictor.predict, images)
    classes = np.argmax(probabilities, axis=1)
    if layout == "row":
        return {"predictions": [{PROBABILITIES_KEY: p.tolist(), CLASSES_KEY: int(c)}
                                for p, c in zip(probabilities, classes)]}
    return {"outputs": {PROBABILITIES_KEY: probabilities.tolist(), CLASSES_KEY: classes.tolist()}}


def inside_answer(model, images, layout):
    """TF Serving's answer to a predict of the `inside` signature: each layer of forward() under its name, as
    {"predictions": [{name: values}, ...]} (row) or {"outputs": {name: [values, ...]}} (columnar); values nested
    as the layer's shape. BoardError 400 past INSIDE_ROWS instances, and as TF Serving says it for a model without
    the signature."""
    if len(images) > INSIDE_ROWS:
        raise BoardError(400, f"{INPUT_KEY}: {len(images)} instances; the \"{layers.SIGNATURE_KEY}\" signature "
                              f"answers at most {INSIDE_ROWS} at a time (each is every layer's values)")
    inside = model.inside
    try:
        values = each_alone(lambda row: inside.run(row)[1], images)
    except DataError as e:
        raise BoardError(400, f"Serving signature name: \"{layers.SIGNATURE_KEY}\" not found in signature def "
                              f"({e})") from None
    names = [layer.name for layer in inside.layers]
    if layout == "row":
        return {"predictions": [{name: v[i].tolist() for name, v in zip(names, values)} for i in range(len(images))]}
    return {"outputs": {name: v.tolist() for name, v in zip(names, values)}}


def version_status(model):
    """TF Serving's answer to GET /v1/models/<name>: one version, AVAILABLE."""
    return {"model_version_status": [{"version": str(model.version), "state": "AVAILABLE",
                                      "status": {"error_code": "OK", "error_message": ""}}]}


def tensor_info(name, dtype, dims):
    """One tensor of a signature as TF Serving's metadata writes it."""
    return {"dtype": dtype, "tensor_shape": {"dim": [{"size": str(d), "name": ""} for d in dims],
                                             "unknown_rank": False}, "name": name}


def metadata(model):
    """TF Serving's answer to GET /v1/models/<name>/metadata: the export's signatures, serving_default and, when
    the model has its layers, inside."""
    images = {INPUT_KEY: tensor_info(f"{INPUT_KEY}:0", "DT_FLOAT", [-1, IMAGE_PIXELS])}
    predict = "tensorflow/serving/predict"
    signatures = {SIGNATURE_KEY: {"inputs": images, "method_name": predict, "outputs": {
        PROBABILITIES_KEY: tensor_info(f"{PROBABILITIES_KEY}:0", "DT_FLOAT", [-1, 10]),
        CLASSES_KEY: tensor_info(f"{CLASSES_KEY}:0", "DT_INT64", [-1])}}}
    if model.inside.problem is None:
        signatures[layers.SIGNATURE_KEY] = {"inputs": images, "method_name": predict, "outputs": {
            layer.name: tensor_info(f"{layers.SCOPE}/{layer.name}:0", "DT_FLOAT", [-1, *layer.shape])
            for layer in model.inside.layers}}
    return {"model_spec": {"name": model.name, "signature_name": "", "version": str(model.version)},
            "metadata": {"signature_def": {"signature_def": signatures}}}
