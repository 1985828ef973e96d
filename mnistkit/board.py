"""The drawing board: a local web server with a page to draw digits on, that also speaks TF Serving's REST API.

Used by `mnist_app.py --serve`, which passes in its predictor (load_predictor:
a checkpoint, a SavedModel or a .tflite file) and its own preparation of a
picture (prepared_pixels, the same as --show-input writes): this module
never imports a course script. What is served (Starlette on uvicorn):

- GET  /                               the page (board_static/: index.html, board.js, board.css)
- POST /board/predict                  a picture's bytes (PNG, JPEG, ...) -> digit, probabilities, input
- GET  /board/model                    which model answers: network, global_step, form, source
- POST /v1/models/<name>:predict       TF Serving's predict: {"instances": ...} or {"inputs": ...}
- GET  /v1/models/<name>               TF Serving's version status
- GET  /v1/models/<name>/metadata      TF Serving's metadata: the serving_default signature

<name> is the export's name of the network (its declaration's export_name: mnist,
mnist_lenet5); /versions/<N> may follow it, as in TF Serving. Errors are
JSON, {"error": "..."}, as TF Serving writes them; paths under /v1/ are
matched without regard to case, as TF Serving's are. Every request passes
Guard first (Access): a Host header naming a name the server does not
answer to gets 403 (DNS rebinding), and so does a POST from another
site's page (its Origin or Referer) unless --allow-origin lets it in
(CORS). The page's files are
read once at start from a fixed list: no path from a request reaches the
filesystem. Requests run on several threads; the predictors are thread-safe
(mnistkit.deployed, mnist_app.Predictor).

The newest model answers, as TF Serving serves the newest version of its
base path: a Follower looks at --model-dir every POLL_SECS and swaps a
newer checkpoint, export version or .tflite in (Model.current) without a
restart; a refused one (damaged, half-written, NaN) is said once on stderr
and the model answering goes on. A checkpoint's version is its global_step.
"""
import contextlib
import functools
import glob
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.parse

import numpy as np

from . import checkpoints, deployed, keep, learn, records
from .errors import DataError
from .export import CLASSES_KEY, INPUT_KEY, PROBABILITIES_KEY, SIGNATURE_KEY
from .places import CHECKPOINT_FILE, INDEX_FILE
from .records import IMAGE_PIXELS

HOST, PORT = "127.0.0.1", 8501  # 8501: TF Serving's REST port
MAX_BODY = 32 * 1024 * 1024  # bytes of a request body: a phone's photo, even as PNG, fits; more is refused with 413
PREPARED_AT_ONCE = 2  # pictures prepared at the same time; more wait (each may take up to ~200 MB: mnistkit.pictures)
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "board_static")
PAGES = {"/": ("index.html", "text/html; charset=utf-8"), "/board.js": ("board.js", "text/javascript; charset=utf-8"),
         "/board.css": ("board.css", "text/css; charset=utf-8")}  # the only files served
OPEN_WARNING = ("warning: --host {host}: anyone on your network can use this server (draw, send pictures); "
                "the default --host 127.0.0.1 keeps it to this computer")
PREDICT_PATH = re.compile(r"/v1/models/(?P<name>[^/:]+)(?:/versions/(?P<version>\d+)|/labels/(?P<label>[^/:]+))?"
                          r":(?P<verb>classify|regress|predict)", re.IGNORECASE)  # TF Serving's two patterns: POST
STATUS_PATH = re.compile(r"/v1/models(?:/(?P<name>[^/:]+))?(?:/versions/(?P<version>\d+)|/labels/(?P<label>[^/:]+))?"
                         r"(?P<metadata>/metadata)?", re.IGNORECASE)  # and GET
INLINE_BODY = 64 * 1024  # bytes of a .tflite predict parsed and run on the event loop itself (about 10 rows, a
# millisecond); a larger body, and any body for another form, is parsed and run on a thread
PIXEL_RANGE = "pixels are in [0, 1]: divide 0-255 values by 255"
LOOPBACK = ("127.0.0.1", "localhost", "::1")  # names the server always answers to
ANY_ADDRESS = ("0.0.0.0", "::", "")  # a --host of every interface: the machine's own names are answered to too
CORS_HEADERS = {"Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                "Access-Control-Allow-Headers": "Content-Type, X-Filename", "Access-Control-Max-Age": "600"}
POLL_SECS = 2.0  # how often the server looks for a newer model in --model-dir (stat calls only)
SETTLE_SECS = 1.0  # a newer model whose files changed more recently is left for the next look (being copied)
PICTURE_NAME = "picture"  # how a refusal names a picture sent without an X-Filename header


class BoardError(Exception):
    """A request that gets {"error": message} with HTTP `status` (400 bad request, 404 unknown model, 413 too large)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Model:
    """What the server answers with: a predictor and what it is.

    predictor: predict(float32 [n, 784] in [0, 1]) -> float32 [n, 10],
    thread-safe, with `network` (networks.Network) and `source` (its path).
    prepare(data, name): a picture's bytes -> uint8 [28, 28], the network's
    input x 255 (the app's prepared_pixels), read from memory; raises
    DataError naming the picture as `name`. At most PREPARED_AT_ONCE
    pictures are prepared at a time (`preparing`, read_picture; pass the
    semaphore of the Model this one follows, so the limit holds across
    them). version: TF Serving's, an integer that grows: an export's
    version, a checkpoint's global_step.

    `current` is the Model answering now: this one, until a Follower puts
    a newer one there. A request reads it once (one attribute read) and
    uses what it read to the end, so an answer being computed finishes on
    the model it began with, which is not closed under it (an old
    predictor goes when its last request lets go of it).
    """

    def __init__(self, predictor, prepare, preparing=None):
        self.predictor, self.prepare = predictor, prepare
        self.preparing = preparing or threading.BoundedSemaphore(PREPARED_AT_ONCE)
        self.name = predictor.network.export_name  # as mnist_export.py names its folder: mnist, mnist_lenet5, ...
        self.form = ("LiteRT" if isinstance(predictor, deployed.LiteRTModel)
                     else "SavedModel" if isinstance(predictor, deployed.SavedModelModel) else "checkpoint")
        self.global_step = global_step_of(predictor)
        self.version = (saved_model_version(predictor.source) if self.form == "SavedModel"
                        else record_version(predictor) if self.form == "LiteRT" else self.global_step or 1)
        self.current = self

    def describe(self):
        """The page's model line as a dict: name, network, global_step (None when unknown), form, source, version."""
        return {"name": self.name, "network": self.predictor.network.label, "global_step": self.global_step,
                "form": self.form, "source": str(self.predictor.source), "version": self.version}

    def taken(self):
        """The line said when this model starts answering: `now serving SOURCE (version V, global_step S)`."""
        said = [] if self.form == "checkpoint" else [f"version {self.version}"]
        said += [] if self.global_step is None else [f"global_step {self.global_step}"]
        return f"now serving {self.predictor.source}" + (f" ({', '.join(said)})" if said else "")


def saved_model_version(path):
    """The version (int) a SavedModel version folder is named by, export/mnist/3 -> 3; 1 when not a number."""
    name = os.path.basename(os.path.normpath(str(path)))
    return int(name) if name.isdecimal() else 1


def record_version(predictor):
    """The export version (int) a .tflite file's export record names (mnist_export.py's run); 1 without one."""
    version = (getattr(predictor, "record", None) or {}).get("version")
    return int(version) if str(version).isdecimal() else 1


def global_step_of(predictor):
    """The training step (int) the predictor's weights are from, or None when it does not say.

    A predictor's own `global_step` when it has one; an export's, from
    its export record (mnist_export.py writes the checkpoint's there); else
    the number a checkpoint's path ends with (model/mnist_model-2000 ->
    2000), which is how the course's saver.save(..., global_step=) names it.
    """
    step = getattr(predictor, "global_step", None) or (getattr(predictor, "record", None) or {}).get("global_step")
    if step is not None:
        return int(step)
    found = re.search(r"-(\d+)$", str(predictor.source))
    return int(found.group(1)) if found and not deployed.is_exported(str(predictor.source)) else None


class Follower:
    """Keeps `model.current` (a Model) the newest model --model-dir holds, as TF Serving follows its base path.

    load(): the predictor of the newest model at `path` (the app's
    load_predictor(--model-dir)), raising DataError when it is refused.
    What is followed, by path: a checkpoint folder's newest checkpoint
    (checkpoints.latest: the `checkpoint` index and the files that are
    there), an export base path's newest version (deployed.newest_version),
    a version folder or a .tflite file changed in place (a .tflite whose
    bytes are the same is kept). Every POLL_SECS, poll() stats the files
    (no reading while nothing changed); a newer model whose files changed
    less than SETTLE_SECS ago is left for the next poll (a copy still
    being written). A newer one is loaded on the polling thread while the
    old one answers; then `current` is swapped and `out` gets Model.taken's
    line. One load() refuses (damaged, half-written, NaN weights) is said
    once on `err` and remembered by its files' state: the old model goes
    on, and the same files changed (made whole) are tried again.
    """

    def __init__(self, model, load, path, out=print, err=None):
        self.model, self.load, self.path, self.out, self.err = model, load, str(path), out, err
        if self.path.lower().endswith(deployed.TFLITE_SUFFIX) or os.path.isfile(
                os.path.join(self.path, deployed.SAVED_MODEL_FILE)):
            self.stamp_of, self.newest = self.own_files, lambda: self.path
        elif model.form == "SavedModel":
            self.stamp_of, self.newest = self.version_files, lambda: deployed.newest_version(self.path)
        else:
            from . import checkpoints  # here: a .tflite is served without importing TensorFlow
            self.stamp_of, self.newest = self.checkpoint_files, lambda: checkpoints.latest(self.path)
        self.stamp = self.stamp_of()
        source = str(model.current.predictor.source)
        self.served, self.refused = (source, files_state(source)), set()
        self.stopped = threading.Event()

    def own_files(self):
        """The .tflite file's or version folder's (bytes, mtime ns)."""
        return files_state(self.path)

    def version_files(self):
        """The base path's version folders, each with its saved_model.pb's (bytes, mtime ns)."""
        return tuple((name, stat_of(os.path.join(self.path, name, deployed.SAVED_MODEL_FILE)))
                     for name in sorted(listing(self.path)) if name.isdecimal())

    def checkpoint_files(self):
        """The folder's `checkpoint` index and checkpoint files, each with its (bytes, mtime ns)."""
        return tuple((name, stat_of(os.path.join(self.path, name))) for name in sorted(listing(self.path))
                     if name == INDEX_FILE or CHECKPOINT_FILE.match(name))

    def start(self, interval=POLL_SECS):
        """poll() every `interval` seconds on a daemon thread, until stop(); returns the thread."""
        def follow():
            while not self.stopped.wait(interval):
                self.poll()
        thread = threading.Thread(target=follow, name="board-follower", daemon=True)
        thread.start()
        return thread

    def stop(self):
        """End start()'s polling after the poll under way."""
        self.stopped.set()

    def poll(self):
        """One look at the path: returns True when a newer model was taken into `model.current`. Never raises:
        what goes wrong is one line on stderr, said again only when the files change."""
        stamp = self.stamp_of()
        if stamp == self.stamp:
            return False
        try:
            return self.take_newest(stamp)
        except Exception as e:  # noqa: BLE001  (any: the server goes on with the model it has)
            self.stamp = stamp
            self.say_refused(e)
            return False

    def take_newest(self, stamp):
        """poll()'s work once the files' `stamp` changed: the newest model loaded and swapped in (True), or not."""
        newest = self.newest()
        state = None if newest is None else (str(newest), files_state(newest))
        if state is None or state == self.served or state in self.refused:
            self.stamp = stamp
            return False
        youngest = max((mtime for _, _, mtime in state[1]), default=0) / 1e9
        if 0 <= time.time() - youngest < SETTLE_SECS:
            return False  # being written, maybe: the stamp is not kept, so the next poll looks again
        self.stamp = stamp
        try:
            predictor = self.load()
        except Exception as e:  # noqa: BLE001  (DataError, and whatever a half-written file makes a loader raise)
            self.refused.add(state)
            self.say_refused(e)
            return False
        old = self.model.current
        source = str(predictor.source)
        self.served = state if source == state[0] else (source, files_state(source))
        content = getattr(predictor, "content", None)
        if content is not None and content == getattr(old.predictor, "content", None):
            return False  # a .tflite touched or copied over with the same bytes
        self.model.current = Model(predictor, old.prepare, old.preparing)
        self.out(self.model.current.taken())
        sys.stdout.flush()
        return True

    def say_refused(self, error):
        """One line on stderr: what was refused, and what goes on answering."""
        line = " ".join(str(error).split()) if isinstance(error, DataError) else \
            " ".join(f"{type(error).__name__}: {error}".split())[:300]
        print(f"warning: {line}; still {self.model.current.taken()[4:]}", file=self.err or sys.stderr, flush=True)


def listing(folder):
    """os.listdir(folder), or [] when it cannot be listed (gone, or not a folder)."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


def files_state(path):
    """(name, bytes, mtime ns) of each file of a model (sorted tuple): what tells one state of it from another.

    path: a file (.tflite), a folder (a SavedModel version: the files within
    it) or a checkpoint prefix (its .index, .data-* and .meta).
    """
    path = str(path)
    if os.path.isdir(path):
        files = [os.path.join(top, name) for top, _, names in os.walk(path) for name in names]
    else:
        files = [path] if os.path.isfile(path) else glob.glob(glob.escape(path) + ".*")
    found = ((os.path.relpath(file, os.path.dirname(path)), *stat_of(file)) for file in files)
    return tuple(sorted(entry for entry in found if entry[1] is not None))


def stat_of(path):
    """(bytes, mtime ns) of a file, or (None, None) when it is not there."""
    try:
        info = os.stat(path)
    except OSError:
        return None, None
    return info.st_size, info.st_mtime_ns


def images_of(request):
    """The `images` of a TF Serving predict request (a parsed JSON object): float32 [n, 784], and its format.

    Row format: {"instances": [[784 numbers], ...]} or [{"images": [...]}, ...];
    columnar: {"inputs": [[...]]} or {"inputs": {"images": [[...]]}}.
    Returns (images, "row" or "columnar"). Raises BoardError 400 naming
    what is wrong: the format, the signature's name ("" or absent: the
    default, serving_default), the input's name, a dtype other than
    numbers, a shape other than [n, 784], and the first value (row, column)
    outside [0, 1]: NaN, an infinity, one past float32's range (1e39), 255.
    """
    if not isinstance(request, dict) or ("instances" in request) == ("inputs" in request):
        raise BoardError(400, 'JSON Value: the request must be an object with either "instances" (row format) '
                              'or "inputs" (columnar format)')
    signature = request.get("signature_name") or SIGNATURE_KEY
    if signature != SIGNATURE_KEY:
        raise BoardError(400, f"Serving signature name: \"{signature}\" not found in signature def "
                              f"(this model has \"{SIGNATURE_KEY}\")")
    if "instances" in request:
        values, layout = request["instances"], "row"
        if isinstance(values, list) and values and all(isinstance(v, dict) for v in values):
            values = [named_input(v) for v in values]
    else:
        values, layout = request["inputs"], "columnar"
        if isinstance(values, dict):
            values = named_input(values)
    try:
        images = rows_array(values)
    except ValueError:  # ragged lists
        raise BoardError(400, f"{INPUT_KEY}: rows of different lengths; expected float32 [N, {IMAGE_PIXELS}]") from None
    if images.size and images.dtype.kind not in "iuf":
        raise BoardError(400, f"{INPUT_KEY}: expected numbers (DT_FLOAT), got {json_kind(images)}")
    if images.ndim != 2 or images.shape[1] != IMAGE_PIXELS or images.shape[0] == 0:
        raise BoardError(400, f"{INPUT_KEY}: expected shape [N, {IMAGE_PIXELS}] (N >= 1), got {list(images.shape)}")
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


def predict_answer(model, images, layout):
    """TF Serving's answer to a predict request: {"predictions": [...]} (row) or {"outputs": {...}} (columnar)."""
    probabilities = model.predictor.predict(images)
    classes = np.argmax(probabilities, axis=1)
    if layout == "row":
        return {"predictions": [{PROBABILITIES_KEY: p.tolist(), CLASSES_KEY: int(c)}
                                for p, c in zip(probabilities, classes)]}
    return {"outputs": {PROBABILITIES_KEY: probabilities.tolist(), CLASSES_KEY: classes.tolist()}}


def version_status(model):
    """TF Serving's answer to GET /v1/models/<name>: one version, AVAILABLE."""
    return {"model_version_status": [{"version": str(model.version), "state": "AVAILABLE",
                                      "status": {"error_code": "OK", "error_message": ""}}]}


def tensor_info(name, dtype, dims):
    """One tensor of a signature as TF Serving's metadata writes it."""
    return {"dtype": dtype, "tensor_shape": {"dim": [{"size": str(d), "name": ""} for d in dims],
                                             "unknown_rank": False}, "name": name}


def metadata(model):
    """TF Serving's answer to GET /v1/models/<name>/metadata: the serving_default signature of the export."""
    signature = {"inputs": {INPUT_KEY: tensor_info(f"{INPUT_KEY}:0", "DT_FLOAT", [-1, IMAGE_PIXELS])},
                 "outputs": {PROBABILITIES_KEY: tensor_info(f"{PROBABILITIES_KEY}:0", "DT_FLOAT", [-1, 10]),
                             CLASSES_KEY: tensor_info(f"{CLASSES_KEY}:0", "DT_INT64", [-1])},
                 "method_name": "tensorflow/serving/predict"}
    return {"model_spec": {"name": model.name, "signature_name": "", "version": str(model.version)},
            "metadata": {"signature_def": {"signature_def": {SIGNATURE_KEY: signature}}}}


def read_picture(model, data, name):
    """The page's answer for one picture's bytes: digit, probabilities [10], input (uint8 28x28 as 784 ints), model.

    The bytes are prepared from memory as `mnist_app.py --show-input` would
    prepare the file, PREPARED_AT_ONCE pictures at a time (a thread waits
    its turn); a refusal (not an image, HEIC, too large to read, no digit,
    several digits) is a BoardError 400 with the app's message, naming the
    picture as `name`.
    """
    try:
        with model.preparing:
            pixels = model.prepare(data, name)
    except DataError as e:
        raise BoardError(400, str(e)) from None
    probabilities = model.predictor.predict(pixels.reshape(1, IMAGE_PIXELS).astype(np.float32) / 255)[0]
    return {"digit": int(np.argmax(probabilities)), "probabilities": [float(p) for p in probabilities],
            "input": pixels.reshape(-1).tolist(), "model": model.describe()}


def picture_name(header):
    """The X-Filename a page sends with a photo (URL-encoded), reduced to a short base name for messages; PICTURE_NAME if none."""
    name = os.path.basename(urllib.parse.unquote(header or "").replace("\\", "/")).strip()
    return "".join(c for c in name if c.isprintable())[:100] or PICTURE_NAME


async def read_body(request):
    """The request's body (bytes), refused with BoardError 413 past MAX_BODY, read no further than that."""
    declared = request.headers.get("content-length", "")
    if declared.isdecimal() and int(declared) > MAX_BODY:
        raise BoardError(413, f"request body of {int(declared):,} bytes is over this server's limit of "
                              f"{MAX_BODY:,} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BoardError(413, f"request body is over this server's limit of {MAX_BODY:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def serving_answer(model, request):
    """TF Serving's REST answer (a JSONResponse) to a request under /v1/ for `model` (a Model).

    GET /v1/models/<name>[/versions/<N>]: the version status; GET
    .../metadata: the signature; POST ...:predict: the predictions, the
    body parsed and checked on a thread (predict_reply) unless it is a
    small one for a .tflite. Raises BoardError with TF Serving's status for
    anything else: 404 for another model name or version number, 400 for
    all the rest (another method or path, a version label, :classify,
    :regress), as TF Serving's http_rest_api_handler answers them.
    """
    from starlette.concurrency import run_in_threadpool
    path, method = request.url.path, request.method
    found = {"POST": PREDICT_PATH, "GET": STATUS_PATH}[method].fullmatch(path) if method in ("GET", "POST") else None
    if found is None:
        raise BoardError(400, f"Malformed request: {method} {path}; this server answers "
                              f"POST /v1/models/{model.name}:predict and GET /v1/models/{model.name}[/metadata]")
    if found["name"] is None:
        raise BoardError(400, f"Missing model name in request: {method} {path}; this server serves "
                              f"/v1/models/{model.name}")
    if found["label"] is not None:
        raise BoardError(400, f"Unrecognized servable version label: {found['label']}; this server has no labels: "
                              f"give /versions/{model.version} or no version")
    if found["name"] != model.name:
        raise BoardError(404, f"Servable not found for request: Latest({found['name']}); "
                              f"this server serves \"{model.name}\"")
    if found["version"] is not None and int(found["version"]) != model.version:
        raise BoardError(404, f"Servable not found for request: Specific({found['name']}, "
                              f"{found['version']}); this server serves version {model.version}")
    if method == "GET":
        from starlette.responses import JSONResponse
        return JSONResponse(metadata(model) if found["metadata"] else version_status(model))
    if found["verb"].lower() != "predict":
        raise BoardError(400, f"{method} {path}: this server answers :predict only; {SIGNATURE_KEY} is a predict "
                              f"signature, not a classification or regression one")
    data = await read_body(request)
    if model.form == "LiteRT" and len(data) <= INLINE_BODY:  # a millisecond at most: no thread hop
        return predict_reply(model, data)
    return await run_in_threadpool(predict_reply, model, data)


def predict_reply(model, data):
    """The JSONResponse to a predict request's body (bytes): parsed, read by images_of, predicted, serialized.

    Raises BoardError 400 for a body that is not JSON (or nested too deep)
    and for whatever images_of refuses. A body past INLINE_BODY is parsed
    with number_of, a Python function: json's C parser holds the GIL for
    its whole run (about half a second for 8 MB), and the event loop's thread
    would wait that long to answer anyone.
    """
    from starlette.responses import JSONResponse
    try:
        parsed = json.loads(data, parse_float=None if len(data) <= INLINE_BODY else number_of)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # RecursionError: nested too deep
        raise BoardError(400, f"JSON Parse error: the body is not JSON ({e})") from None
    images, layout = images_of(parsed)
    return JSONResponse(predict_answer(model, images, layout))


@functools.lru_cache(maxsize=256)  # a server sees a few Host headers, over and over
def host_name(host):
    """The name of a Host header or a --allow-host value, lower case, without port, brackets or final dot; None if none.

    'LocalHost:8501' -> 'localhost', '[::1]:8501' and '::1' -> '::1', '*' -> '*'.
    """
    if host == "*":
        return host
    if host.count(":") > 1 and not host.startswith("["):  # a bare IPv6 address, as --host and sockets write it
        host = f"[{host}]"
    try:
        name = urllib.parse.urlsplit("//" + host).hostname
    except ValueError:  # '[::1', an unbalanced bracket
        return None
    return (name.rstrip(".") or None) if name else None


@functools.lru_cache(maxsize=256)
def origin_key(text):
    """An origin or URL as 'scheme://host:port', lower case with the default port written out; None if it names none.

    'http://LocalHost:8501/page' -> 'http://localhost:8501', 'https://a.example' -> 'https://a.example:443';
    'null' (a sandboxed page, a file://) and anything but http(s) -> None.
    """
    try:
        parts = urllib.parse.urlsplit(text.strip())
        port = parts.port
    except (ValueError, AttributeError):
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme.lower()}://{host}:{port or (443 if parts.scheme.lower() == 'https' else 80)}"


def machine_names():
    """This machine's host name (and name.local), its fully qualified name and their addresses, lower case.

    What other devices of a network may call the server by when it listens
    on every interface. Whatever cannot be found is left out: never raises.
    """
    names = set()
    with contextlib.suppress(OSError, UnicodeError):
        hostname = socket.gethostname()
        names |= {hostname, hostname + ".local"}
        names.add(socket.getfqdn(hostname))
        names |= {info[4][0] for info in socket.getaddrinfo(hostname, None, proto=socket.IPPROTO_TCP)}
    return {name.lower() for name in names if name}


class Access:
    """Which requests the server answers, by the name they reach it by (Host) and the page they come from (Origin).

    hosts: the names (host_name) a Host header may carry: LOOPBACK, the
    --host listened on, for a --host of every interface (0.0.0.0, ::)
    machine_names(), and allow_hosts ('*': any). origins: allow_origins as
    origin_key writes them ('*': any), other sites whose pages may post
    here (CORS). Raises ValueError for an origin origin_key cannot read.
    """

    def __init__(self, host=HOST, allow_hosts=(), allow_origins=()):
        self.hosts = {host_name(h) for h in (*LOOPBACK, host, *allow_hosts)} - {None}
        if host in ANY_ADDRESS:
            self.hosts |= machine_names()
        self.origins = {o if o == "*" else origin_key(o) for o in allow_origins}
        if None in self.origins:
            raise ValueError(f"not an origin: {sorted(o for o in allow_origins if o != '*' and not origin_key(o))}")

    def refusal(self, method, headers, scheme="http", server=None):
        """Why a request is refused with 403 (one line), or None when it may go on.

        headers: the request's, lower-case names (a dict or starlette's
        Headers); server: (address, port) the connection reached, whose
        address is answered to as a Host too (a phone given the computer's
        IP). A request without Host (HTTP/1.0) passes the Host check; a
        GET or HEAD passes the Origin check, its answer being unreadable by
        another site's page unless the origin is allowed (cors_origin).
        """
        host = headers.get("host")
        name = None if host is None else host_name(host)
        if host is not None and "*" not in self.hosts and name not in self.hosts and (
                server is None or name != host_name(str(server[0]))):
            return (f"Host {host!r}: not a name this server answers to (DNS rebinding?); if you reach it by that "
                    f"name, start it with --allow-host {name or host}")
        if method in ("GET", "HEAD"):
            return None
        origin = foreign_origin(headers, scheme)
        if origin is not None and not self.lets_in(origin):
            return (f"Origin {origin}: a page of another site may not {method} here; to let it, start the server "
                    f"with --allow-origin {origin}")
        return None

    def lets_in(self, origin):
        """Whether --allow-origin lets a page of `origin` use the server (CORS)."""
        return "*" in self.origins or origin_key(origin) in self.origins

    def cors_origin(self, headers, scheme="http"):
        """The Access-Control-Allow-Origin an answer carries ('*' or the request's Origin), or None for none."""
        origin = headers.get("origin")
        if origin is None or foreign_origin(headers, scheme) is None or not self.lets_in(origin):
            return None
        return "*" if "*" in self.origins else origin


def foreign_origin(headers, scheme="http"):
    """The origin of the page that sent a request, when it is not the server's own (scheme://Host); else None.

    The Origin header, or lacking it the Referer's origin; neither (curl,
    Python, TF Serving's clients): None. 'Origin: null' is foreign.
    """
    sent = headers.get("origin")
    if sent is None:
        referer = headers.get("referer")
        if referer is None:
            return None
        sent = origin_key(referer) or "null"
    own = origin_key(f"{scheme}://{headers.get('host', '')}")
    return None if own is not None and origin_key(sent) == own else sent


class Guard:
    """Pure ASGI middleware in front of every route: Access's checks, CORS, and one line for any unexpected error.

    A refusal is {"error": ...} with 403; an OPTIONS preflight from an
    allowed origin is answered 204 with CORS_HEADERS, and every answer to
    an allowed origin carries Access-Control-Allow-Origin. An exception a
    handler did not expect is answered JSON 500 and printed on stderr as
    one line, with no traceback. Paths under /v1/ are matched without
    regard to case, as TF Serving matches them: the router sees /v1/ in
    lower case (a model's name keeps its case).
    """

    def __init__(self, app, access):
        from starlette import datastructures, requests, responses  # here, once: --help imports this module too
        self.app, self.access = app, access
        self.datastructures, self.requests, self.responses = datastructures, requests, responses

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = self.datastructures.Headers(scope=scope)
        method, scheme = scope["method"], scope.get("scheme", "http")
        refused = self.access.refusal(method, headers, scheme, scope.get("server"))
        if refused is not None:
            return await self.responses.JSONResponse({"error": refused}, status_code=403)(scope, receive, send)
        cors = self.access.cors_origin(headers, scheme)
        extra = {} if cors is None else {"Access-Control-Allow-Origin": cors, "Vary": "Origin"}
        if cors is not None and method == "OPTIONS" and "access-control-request-method" in headers:
            if "access-control-request-private-network" in headers:  # Chrome: a public site's page, a local server
                extra["Access-Control-Allow-Private-Network"] = "true"
            answer = self.responses.Response(status_code=204, headers={**extra, **CORS_HEADERS})
            return await answer(scope, receive, send)
        if scope["path"][:4].lower() == "/v1/":
            scope = {**scope, "path": "/v1/" + scope["path"][4:]}
        started = False

        async def sending(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if extra:
                    self.datastructures.MutableHeaders(scope=message).update(extra)
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except self.requests.ClientDisconnect:  # the client left while sending its body: nobody to answer
            pass
        except Exception as e:  # noqa: BLE001  (any: a server answers, it does not die or print a traceback)
            line = " ".join(f"{type(e).__name__}: {e}".split())[:300]
            print(f"error: {method} {scope['path']}: {line}", file=sys.stderr, flush=True)
            if not started:
                await self.responses.JSONResponse({"error": f"{method} {scope['path']}: internal error ({line})"},
                                                  status_code=500)(scope, receive, send)


def number_of(text):
    """float(text), for json.loads(parse_float=): a Python call, at which the GIL passes to a thread waiting for it."""
    return float(text)


def kept_routes(store, prepare):
    """The routes of a keep.KeptDigits store, a list of starlette Routes the board's app serves.

    prepare: (a picture's bytes, its name) -> uint8 [28, 28] (the board's
    Model.prepare: the app's prepared_pixels), for a keep sent without "input".
    - POST   /board/keep          KEEP_FORM -> {"kept": {"name", "digit"}, "count", "entries"}
    - GET    /board/kept          {"count", "entries": [{"name", "digit"}, ...]}
    - GET    /board/kept/<name>   the kept 28x28 JPG (only names the store lists)
    - DELETE /board/kept/<name>   removes it -> {"count", "entries"}
    Errors are JSON {"error": one line}: 400 a bad request, 404 a name not
    kept, 413 a body over the board's limit, 500 a folder that cannot be
    written or read (DataError's line). File work runs on threads.
    """
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    def keep_one(digit, pixels, original, name):
        if pixels is None:
            pixels = keep.prepared(prepare, original, name)
        kept, digit = store.keep(pixels, digit, original, name)
        return {"kept": {"name": kept, "digit": digit}, **keep.listing(store)}

    def remove(name):
        store.remove(name)
        return keep.listing(store)

    async def answer(work, *args):
        try:
            result = await run_in_threadpool(work, *args)
        except ValueError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        except keep.NotKept as e:
            return JSONResponse({"error": f"no kept digit {e.args[0]!r}; GET /board/kept lists them"}, status_code=404)
        except DataError as e:
            return JSONResponse({"error": str(e)}, status_code=500)
        return result if isinstance(result, Response) else JSONResponse(result)

    async def keep_digit(request):
        try:
            request = keep.keep_request(await read_body(request))
        except BoardError as e:
            return JSONResponse({"error": str(e)}, status_code=e.status)
        except ValueError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return await answer(keep_one, *request)

    async def kept_list(request):
        return await answer(keep.listing, store)

    async def kept_file(request):
        name = request.path_params["name"]
        if request.method == "DELETE":
            return await answer(remove, name)
        return await answer(lambda: Response(store.jpg(name), media_type="image/jpeg",
                                             headers={"Cache-Control": "no-cache"}))

    return [Route("/board/keep", keep_digit, methods=["POST"]), Route("/board/kept", kept_list),
            Route("/board/kept/{name}", kept_file, methods=["GET", "DELETE"])]


class Learning:
    """The page's "Learn from my digits": one mnistkit.learn run at a time, on a thread, its scripts in processes.

    kept: the keep.KeptDigits store whose digits are learned; data_dir: the
    training TFRecords they are mixed with; steps: how many steps past the
    served checkpoint. The learned checkpoint is promoted into the model
    folder, where the Follower finds it and the board answers with it;
    until then the board answers with the model it has. status() is what
    GET /board/learn answers: state ("idle", "running", "done", "failed"),
    line (the last line printed), step (the trainer's last reported
    global_step, or None), steps (the target), folder.
    """

    def __init__(self, kept, data_dir=records.DATA_DIR, steps=learn.DEFAULT_STEPS):
        self.kept, self.data_dir, self.steps = kept, data_dir, steps
        self.lock = threading.Lock()
        self.state = {"state": "idle", "line": "", "step": None, "steps": None, "folder": None}

    def status(self):
        with self.lock:
            return dict(self.state)

    def start(self, model):
        """Start learning into the checkpoint folder of `model` (a Model); BoardError 409 when one runs or there is
        no checkpoint folder to learn into (an export without its record's folder), 400 when nothing is kept."""
        folder = learn_folder(model)
        if not self.kept.count():
            raise BoardError(400, f"{self.kept.folder}: no kept digits yet; keep some with the digit buttons first")
        with self.lock:
            if self.state["state"] == "running":
                raise BoardError(409, f"a learn is running on {self.state['folder']}; wait until it ends")
            start = checkpoints.step_of(checkpoints.latest(folder))
            self.state = {"state": "running", "line": f"learning from {self.kept.count()} kept digits into {folder}",
                          "step": start, "steps": start + self.steps, "folder": folder}
        threading.Thread(target=self.run, args=(folder, model), name="learn", daemon=True).start()
        return self.status()

    def run(self, folder, model):
        """Learn into `folder`; "done" once `model` (the Model whose `current` the Follower keeps) answers with
        the learned checkpoint, or after TAKEN_SECS when it does not follow that folder (an export)."""
        try:
            learned = learn.learn(folder, self.kept.folder, self.steps, self.data_dir, out=self.said)
            step = checkpoints.step_of(learned)
            with self.lock:
                self.state["step"] = step
            deadline = time.monotonic() + TAKEN_SECS
            while model.form == "checkpoint" and model.current.global_step != step and time.monotonic() < deadline:
                time.sleep(0.2)  # the Follower's next poll takes it: "done" then means it answers
            ended = "done"
        except (DataError, OSError, KeyboardInterrupt) as e:
            self.said(f"error: {e}")
            ended = "failed"
        with self.lock:
            self.state["state"] = ended

    def said(self, line):
        """One line of the learn's output: the page shows the last; a trainer's step line moves `step`."""
        found = TRAINER_STEP.search(line)
        with self.lock:
            self.state["line"] = line
            if found:
                self.state["step"] = int(found.group(1))


TAKEN_SECS = 5 * POLL_SECS  # how long a finished learn waits for the Follower to serve its checkpoint
TRAINER_STEP = re.compile(r"After (\d+) training step")  # mnist_backward.py's loss line, as the course prints it


def learn_folder(model):
    """The checkpoint folder a learn on `model` (a Model) trains: a checkpoint's own folder; an export's, named by
    its export record, when that folder still holds checkpoints. BoardError 409 otherwise."""
    if model.form == "checkpoint":
        return os.path.dirname(str(model.predictor.source)) or "."
    record = getattr(model.predictor, "record", None) or {}
    folder = os.path.dirname(str(record.get("checkpoint", "")))
    if folder and checkpoints.latest(folder) is not None:
        return folder
    raise BoardError(409, f"{model.predictor.source}: learning needs the checkpoint folder this export came from"
                          + (f" ({folder} holds no checkpoint)" if folder else "") +
                          "; serve that folder (mnist_app.py --serve --model-dir FOLDER) and learn there")


def learn_routes(learning, model):
    """GET and POST /board/learn for a Learning: the status, and starting a learn on `model.current`."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def learn_status(request):
        if request.method == "GET":
            return JSONResponse(learning.status())
        try:
            return JSONResponse(await run_in_threadpool(learning.start, model.current), status_code=202)
        except BoardError as e:
            return JSONResponse({"error": str(e)}, status_code=e.status)

    return [Route("/board/learn", learn_status, methods=["GET", "POST"])]


def create_app(model, access=None, kept=None):
    """The Starlette application serving `model` (a Model): the page, its endpoint and TF Serving's REST API.

    Each request reads model.current once (a Follower may put a newer Model
    there) and is answered by that Model to its end.

    access: an Access, who may use it (Guard checks every request); None:
    Access(), the loopback names only. kept: a keep.KeptDigits store, whose
    routes (kept_routes: /board/keep, /board/kept) are served behind the
    same Guard; None: none.
    """
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    pages = {}
    for route, (file_name, media_type) in PAGES.items():
        with open(os.path.join(STATIC, file_name), "rb") as f:
            pages[route] = (f.read(), media_type)

    def error(status, message):
        return JSONResponse({"error": message}, status_code=status)

    async def page(request):
        content, media_type = pages[request.url.path]
        return Response(content, media_type=media_type, headers={"Cache-Control": "no-cache"})

    async def board_model(request):
        return JSONResponse(model.current.describe())

    async def board_predict(request):
        try:
            data = await read_body(request)
            name = picture_name(request.headers.get("x-filename"))
            return JSONResponse(await run_in_threadpool(read_picture, model.current, data, name))
        except BoardError as e:
            return error(e.status, str(e))

    async def models(request):
        try:
            return await serving_answer(model.current, request)
        except BoardError as e:
            return error(e.status, str(e))

    async def not_found(request, exc):
        status = getattr(exc, "status_code", 404)
        return error(status, f"{request.method} {request.url.path}: " + ("not allowed" if status == 405 else "not found"))

    routes = [Route(path, page) for path in PAGES]
    routes += [Route("/board/model", board_model), Route("/board/predict", board_predict, methods=["POST"]),
               Route("/v1/{rest:path}", models,  # every method: serving_answer refuses with 400, as TF Serving
                     methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])]
    if kept is not None:
        routes += kept_routes(kept, model.prepare) + learn_routes(Learning(kept), model)
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found},
                    middleware=[Middleware(Guard, access=access or Access())])
    app.router.redirect_slashes = False  # /v1/models is TF Serving's 400, not a redirect to /v1/models/
    return app


def bind(host, port):
    """A listening TCP socket on host:port (port 0: any free one); raises DataError when it cannot be bound.

    Made with proto IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on connections
    whose socket says TCP, and with it on, an answer's body waited for the client's delayed ACK of its headers
    (40 ms on Linux) on every request of a kept-alive connection.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as e:
        sock.close()
        hint = "give another --port" if e.errno in (98, 48, 10048) else "check --host"
        raise DataError(f"{host}:{port}: cannot listen there ({e.strerror or e}); {hint}") from None
    except (socket.gaierror, UnicodeError) as e:
        raise DataError(f"{host}: not a host name or address of this computer ({e}); check --host") from None
    return sock


def address(sock):
    """The page's address, http://HOST:PORT/, of a bound socket (the host as bound: 0.0.0.0 for every address)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


ROUTE_PROBES = ("10.254.254.254", "172.31.254.254", "192.168.254.254")  # private: routes to each network's interface


def network_addresses():
    """This computer's own IPv4 addresses other than loopback (list of str, first the default route's); no packet sent.

    A UDP socket connect()ed to a private address takes the address of the
    interface the route to it leaves by, without sending anything; the host
    name's addresses add the others. Each one is kept only if a socket can
    be bound to it (a host name may resolve to an address of no interface).
    """
    found = []
    for target in ROUTE_PROBES:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe, contextlib.suppress(OSError):
            probe.connect((target, 9))
            found.append(probe.getsockname()[0])
    with contextlib.suppress(OSError, UnicodeError):
        found += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)]
    own = []
    for host in dict.fromkeys(found):
        if host.startswith(("127.", "0.", "169.254.")):  # loopback, none, link-local
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as check, contextlib.suppress(OSError):
            check.bind((host, 0))
            own.append(host)
    return own


def addresses(sock, own=network_addresses):
    """The page's addresses for a bound socket: (this computer's, [a phone's on the network]).

    A socket bound to one address: that address, and no other. Bound to
    every address (0.0.0.0, ::): http://127.0.0.1:PORT/ (http://[::1]:PORT/)
    and an address for each of own() (network_addresses: str IPv4
    addresses), which a phone on the same network can open.
    """
    host, port = sock.getsockname()[:2]
    if host not in ("0.0.0.0", "::"):
        return address(sock), []
    here = f"http://127.0.0.1:{port}/" if host == "0.0.0.0" else f"http://[::1]:{port}/"
    return here, [f"http://{other}:{port}/" for other in own()]


def serve(model, host=HOST, port=PORT, out=print, access=None, kept=None):
    """Serve `model` (a Model) at host:port until Ctrl-C or SIGTERM, which end it as KeyboardInterrupt.

    access: an Access (--allow-host, --allow-origin); None: Access(host).
    kept: a keep.KeptDigits store the page keeps corrected digits in, or None.
    Prints the address (`http://127.0.0.1:8501/`) once the socket listens,
    and for --host 0.0.0.0 a second line with the addresses a phone on the
    network opens; a one-line warning first when host is not a loopback
    address. Raises DataError when the address cannot be bound. The
    connections are mnistkit.listener's: a first signal stops the server
    within a few seconds, whatever clients do, and is raised here
    afterwards, so the script ends with 128 + its number; a second one
    ends the process at once.
    """
    from . import listener

    sock = bind(host, port)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(OPEN_WARNING.format(host=host), file=sys.stderr, flush=True)
    app = create_app(model, access or Access(host), kept)
    here, network = addresses(sock)
    out(f"serving {model.name} ({model.predictor.network.label}, {model.form}: {model.predictor.source}) "
        f"at {here}  (Ctrl-C stops)")
    if sock.getsockname()[0] in ("0.0.0.0", "::"):
        out(f"  from a phone on this network: {'  '.join(network)}" if network else
            "  no network address found for a phone: is this computer on a network?")
    sys.stdout.flush()
    try:
        signum = listener.run(app, sock)
    finally:
        sock.close()
    interrupt = KeyboardInterrupt()
    interrupt.signum = signum  # mnistkit.cli.exit_status: 128 + signum
    raise interrupt
