"""The board's page and its own endpoints: the page's files, the model line, a picture's answer.

The page's files (static/: index.html, board.js, board.css, the Inside
panel's inside.js, inside.css, the Why panel's why.js and the playback's
history.js) are read once, from a fixed list: no path from a request reaches
the filesystem. A picture is prepared from memory by the app's own preparation
(Model.prepare: the same as mnist_app.py
--show-input writes), at most PREPARED_AT_ONCE at a time (under_limits,
also the keep route's for an original, and the Inside panel's), and
answered by the model serving the request, and by the --compare model
beside it.
"""
import functools
import os
import urllib.parse

import numpy as np

from .. import formats, preparation
from ..errors import DataError
from . import memory
from .atlas import judged, networks, not_a_digit
from .table import BoardError, Reply, runs_model

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
SCRIPT, STYLE = "text/javascript; charset=utf-8", "text/css; charset=utf-8"
PAGES = {"/": ("index.html", "text/html; charset=utf-8"), "/board.js": ("board.js", SCRIPT),
         "/board.css": ("board.css", STYLE), "/inside.js": ("inside.js", SCRIPT),
         "/inside.css": ("inside.css", STYLE), "/why.js": ("why.js", SCRIPT),
         "/history.js": ("history.js", SCRIPT)}  # the only files served
PICTURE_NAME = "picture"  # how a refusal names a picture sent without a name
NO_CACHE = {"Cache-Control": "no-cache"}


@functools.lru_cache(maxsize=None)
def page_file(path):
    """(bytes, media type) of one of PAGES, read from STATIC the first time it is asked for."""
    file_name, media_type = PAGES[path]
    with open(os.path.join(STATIC, file_name), "rb") as f:
        return f.read(), media_type


def page(call):
    """GET /, /board.js, /board.css, /inside.js, /inside.css, /why.js, /history.js: the page's files."""
    content, media_type = page_file(call.path)
    return Reply(content, media_type=media_type, headers=NO_CACHE)


def model_line(call):
    """GET /board/model: which model answers (Model.describe): name, network, global_step, form, source, version;
    with --compare, the second model's under "compare"."""
    line = call.model.describe()
    if call.compare is not None:
        line["compare"] = call.compare.describe()
    return line


@runs_model
def predict(call):
    """POST /board/predict, a picture's bytes (its name in an X-Filename header): read_picture's answer."""
    return picture_sent(call, lambda: read_picture(call.model, call.body, named(call), call.compare, call.served))


def named(call):
    """The picture's name a request gives in its X-Filename header, for messages (picture_name): percent-encoded
    UTF-8 (the page's encodeURIComponent) or raw UTF-8 bytes (curl -H "X-Filename: 笔记.py"), which the headers'
    latin-1 decoding turned into one character per byte and are decoded again; other bytes stay latin-1."""
    name = call.headers.get("x-filename", "")
    try:
        name = name.encode("latin-1").decode("utf-8")
    except UnicodeError:  # not latin-1 characters (already text) or not UTF-8 bytes: as it came
        pass
    return picture_name(urllib.parse.unquote(name))


def read_picture(model, data, name, compare=None, served=None):
    """The page's answer for one picture's bytes: digit, probabilities [10], input (uint8 28x28 as 784 ints), model,
    not_a_digit (atlas.judged: true, false, or None while the test digits' map is being made; given `served`);
    with a compare Model, its digit, probabilities, model and not_a_digit under "compare", for the same input.

    The bytes are prepared from memory as `mnist_app.py --show-input` would
    prepare the file, within under_limits; a refusal (not an image, HEIC,
    too large to read, no digit, several digits) is a BoardError 400 with
    the app's message, naming the picture as `name`.
    """
    pixels = under_limits(model, model.prepare, data, name)
    rows = preparation.network_rows(pixels)

    def one(network, slot):  # its answer, judged by its own map (atlas.networks pairs each with its slot)
        probabilities, place = judged(served, network, rows, slot)
        return {**answer_of(network, probabilities), "not_a_digit": not_a_digit(place)}
    return {**networks(one, model, compare), "input": pixels.reshape(-1).tolist()}


def answer_of(model, probabilities):
    """{"digit", "probabilities" [10], "model": Model.describe()} of one picture's probabilities float32 [10]."""
    return {"digit": int(np.argmax(probabilities)), "probabilities": [float(p) for p in probabilities],
            "model": model.describe()}


def picture_sent(call, read):
    """read()'s answer, a picture route's reading of call.body (/board/predict, inside, why, playback), refused
    with a BoardError 400 that says how to send the picture's bytes for a body sent as a form holding it (curl -F,
    an HTML <form>: multipart/form-data), never read, or as curl -d's form text
    (application/x-www-form-urlencoded, a picture's signature with its line ends dropped: formats.line_ends_dropped)
    that read() refuses (with its line)."""
    kind = call.headers.get("content-type", "").split(";")[0].strip().lower()
    url = f"http://{call.headers.get('host') or 'HOST'}{call.path}"
    send = f"send the file itself as the body: curl --data-binary @photo.jpg -H X-Filename:photo.jpg {url}"
    if kind == "multipart/form-data":
        raise BoardError(400, f"{call.method} {call.path} takes a picture's own bytes, not a form holding it "
                              f"(curl -F); {send}")
    try:
        return read()
    except BoardError as e:
        if kind != "application/x-www-form-urlencoded" or e.status != 400 or not formats.line_ends_dropped(call.body):
            raise  # urllib's POST says form text too, its bytes whole
        raise BoardError(400, f"{e} (curl -d sent it as form text, its line ends dropped); {send}") from None


def under_limits(model, read, *args):
    """read(*args), a picture's preparation or reading, within the picture limits of every route: at most
    PREPARED_AT_ONCE at a time (model.preparing, of the Model served: a thread waits its turn), the memory it
    freed given back to the system (memory.give_back_memory), its DataError a BoardError 400 with its line."""
    refused = None
    try:
        with model.preparing:
            result = read(*args)
    except DataError as e:
        refused = str(e)  # only the line: the error's frames, and the pictures they hold, go before the trim
    memory.give_back_memory()
    if refused is not None:
        raise BoardError(400, refused)
    return result


def picture_name(name):
    """A picture's file name as a client sent it (a path, maybe Windows'), reduced to a short base name for
    messages and the kept original's suffix; PICTURE_NAME when there is none."""
    name = os.path.basename((name or "").replace("\\", "/")).strip()
    return "".join(c for c in name if c.isprintable())[:100] or PICTURE_NAME
