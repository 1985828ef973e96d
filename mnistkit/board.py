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
JSON, {"error": "..."}, as TF Serving writes them. The page's files are
read once at start from a fixed list: no path from a request reaches the
filesystem. Requests run on several threads; the predictors are thread-safe
(mnistkit.deployed, mnist_app.Predictor).
"""
import contextlib
import json
import os
import re
import socket
import sys
import tempfile
import urllib.parse
import uuid

import numpy as np

from . import deployed
from .errors import DataError
from .export import CLASSES_KEY, INPUT_KEY, PROBABILITIES_KEY, SIGNATURE_KEY
from .records import IMAGE_PIXELS

HOST, PORT = "127.0.0.1", 8501  # 8501: TF Serving's REST port
MAX_BODY = 8 * 1024 * 1024  # bytes of a request body: a phone's photo fits; more is refused with 413
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "board_static")
PAGES = {"/": ("index.html", "text/html; charset=utf-8"), "/board.js": ("board.js", "text/javascript; charset=utf-8"),
         "/board.css": ("board.css", "text/css; charset=utf-8")}  # the only files served
OPEN_WARNING = ("warning: --host {host}: anyone on your network can use this server (draw, send pictures); "
                "the default --host 127.0.0.1 keeps it to this computer")
MODEL_PATH = re.compile(r"^/v1/models/(?P<name>[^/:]+)(?:/versions/(?P<version>[^/:]+))?"
                        r"(?:(?P<metadata>/metadata)|:(?P<verb>[a-z]+))?$")
INLINE_ROWS = 16  # a .tflite predict of this many rows runs on the event loop itself; more, and any other form, on a thread
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
    prepare: a picture file's path -> uint8 [28, 28], the network's input
    x 255 (the app's prepared_pixels); raises DataError naming the path.
    """

    def __init__(self, predictor, prepare):
        self.predictor, self.prepare = predictor, prepare
        self.name = predictor.network.export_name  # as mnist_export.py names its folder: mnist, mnist_lenet5, ...
        self.form = ("LiteRT" if isinstance(predictor, deployed.LiteRTModel)
                     else "SavedModel" if isinstance(predictor, deployed.SavedModelModel) else "checkpoint")
        self.version = saved_model_version(predictor.source) if self.form == "SavedModel" else 1
        self.global_step = global_step_of(predictor)

    def describe(self):
        """The page's model line as a dict: name, network, global_step (None when unknown), form, source, version."""
        return {"name": self.name, "network": self.predictor.network.label, "global_step": self.global_step,
                "form": self.form, "source": str(self.predictor.source), "version": self.version}


def saved_model_version(path):
    """The version (int) a SavedModel version folder is named by, export/mnist/3 -> 3; 1 when not a number."""
    name = os.path.basename(os.path.normpath(str(path)))
    return int(name) if name.isdecimal() else 1


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


def images_of(request):
    """The `images` of a TF Serving predict request (a parsed JSON object): float32 [n, 784], and its format.

    Row format: {"instances": [[784 numbers], ...]} or [{"images": [...]}, ...];
    columnar: {"inputs": [[...]]} or {"inputs": {"images": [[...]]}}.
    Returns (images, "row" or "columnar"). Raises BoardError 400 naming
    what is wrong: the format, the signature's name, the input's name, a
    dtype other than numbers, a shape other than [n, 784].
    """
    if not isinstance(request, dict) or ("instances" in request) == ("inputs" in request):
        raise BoardError(400, 'JSON Value: the request must be an object with either "instances" (row format) '
                              'or "inputs" (columnar format)')
    signature = request.get("signature_name", SIGNATURE_KEY)
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
        images = np.array(values)
    except ValueError:  # ragged lists
        raise BoardError(400, f"{INPUT_KEY}: rows of different lengths; expected float32 [N, {IMAGE_PIXELS}]") from None
    if images.size and images.dtype.kind not in "iuf":
        raise BoardError(400, f"{INPUT_KEY}: expected numbers (DT_FLOAT), got {json_kind(images)}")
    if images.ndim != 2 or images.shape[1] != IMAGE_PIXELS or images.shape[0] == 0:
        raise BoardError(400, f"{INPUT_KEY}: expected shape [N, {IMAGE_PIXELS}] (N >= 1), got {list(images.shape)}")
    return images.astype(np.float32), layout


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


def read_picture(model, data, name, folder):
    """The page's answer for one picture's bytes: digit, probabilities [10], input (uint8 28x28 as 784 ints), model.

    The bytes are written to a file of their own in `folder` (the app's
    preparation reads files) and prepared as `mnist_app.py --show-input`
    would; a refusal (not an image, HEIC, no digit, several digits) is a
    BoardError 400 with the app's message, naming the picture as `name`.
    """
    path = os.path.join(folder, uuid.uuid4().hex)
    try:
        with open(path, "wb") as f:
            f.write(data)
        pixels = model.prepare(path)
    except DataError as e:
        raise BoardError(400, str(e).replace(path, name)) from None
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)
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
    """TF Serving's REST answer (a JSONResponse) to a request under /v1/models/ for `model` (a Model).

    GET <name>[/versions/<N>]: the version status; GET .../metadata: the
    signature; POST ...:predict: the predictions. Raises BoardError with
    TF Serving's status and wording for anything else.
    """
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse
    found = MODEL_PATH.match(request.url.path)
    if found is None:
        raise BoardError(404, f"{request.url.path}: no such endpoint; see /v1/models/{model.name}")
    if found["name"] != model.name:
        raise BoardError(404, f"Servable not found for request: Latest({found['name']}); "
                              f"this server serves \"{model.name}\"")
    if found["version"] is not None and found["version"] != str(model.version):
        raise BoardError(404, f"Servable not found for request: Specific({found['name']}, "
                              f"{found['version']}); this server serves version {model.version}")
    if request.method == "GET" and found["verb"] is None:
        return JSONResponse(metadata(model) if found["metadata"] else version_status(model))
    if request.method == "POST" and found["verb"] == "predict":
        data = await read_body(request)
        try:
            parsed = json.loads(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as e:  # RecursionError: nested too deep
            raise BoardError(400, f"JSON Parse error: the body is not JSON ({e})") from None
        images, layout = images_of(parsed)
        if model.form == "LiteRT" and len(images) <= INLINE_ROWS:  # tens of microseconds: no thread hop
            return JSONResponse(predict_answer(model, images, layout))
        return JSONResponse(await run_in_threadpool(predict_answer, model, images, layout))
    raise BoardError(405 if found["verb"] in (None, "predict") else 404,
                     f"{request.method} {request.url.path}: not served here; "
                     f"POST /v1/models/{model.name}:predict, GET /v1/models/{model.name}[/metadata]")


def create_app(model):
    """The Starlette application serving `model` (a Model): the page, its endpoint and TF Serving's REST API."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    pages = {}
    for route, (file_name, media_type) in PAGES.items():
        with open(os.path.join(STATIC, file_name), "rb") as f:
            pages[route] = (f.read(), media_type)
    uploads = tempfile.TemporaryDirectory(prefix="mnist-board-")

    def error(status, message):
        return JSONResponse({"error": message}, status_code=status)

    async def page(request):
        content, media_type = pages[request.url.path]
        return Response(content, media_type=media_type, headers={"Cache-Control": "no-cache"})

    async def board_model(request):
        return JSONResponse(model.describe())

    async def board_predict(request):
        try:
            data = await read_body(request)
            name = picture_name(request.headers.get("x-filename"))
            return JSONResponse(await run_in_threadpool(read_picture, model, data, name, uploads.name))
        except BoardError as e:
            return error(e.status, str(e))

    async def models(request):
        try:
            return await serving_answer(model, request)
        except BoardError as e:
            return error(e.status, str(e))

    async def not_found(request, exc):
        status = getattr(exc, "status_code", 404)
        return error(status, f"{request.method} {request.url.path}: " + ("not allowed" if status == 405 else "not found"))

    routes = [Route(path, page) for path in PAGES]
    routes += [Route("/board/model", board_model), Route("/board/predict", board_predict, methods=["POST"]),
               Route("/v1/models/{rest:path}", models, methods=["GET", "POST"])]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    app.state.uploads = uploads  # removed with the app
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


def serve(model, host=HOST, port=PORT, out=print):
    """Serve `model` (a Model) at host:port until Ctrl-C or SIGTERM, which end it as KeyboardInterrupt.

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
    app = create_app(model)
    here, network = addresses(sock)
    out(f"serving {model.name} ({model.predictor.network.label}, {model.form}: {model.predictor.source}) "
        f"at {here}  (Ctrl-C stops)")
    if sock.getsockname()[0] in ("0.0.0.0", "::"):
        out(f"  from a phone on this network: {'  '.join(network)}" if network else
            "  no network address found for a phone: is this computer on a network?")
    sys.stdout.flush()
    try:
        signum = listener.run(app, sock, cleanup=app.state.uploads.cleanup)
    finally:
        sock.close()
        app.state.uploads.cleanup()
    interrupt = KeyboardInterrupt()
    interrupt.signum = signum  # mnistkit.cli.exit_status: 128 + signum
    raise interrupt
