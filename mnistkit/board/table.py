"""The board's route table: each route declared once, and one ASGI app that gives every route the same handling.

A Route declares what differs between routes: its methods, its path, its
body limit, where its handler runs (a worker thread, or the event loop for
a handler that only reads memory) and whether it takes JSON. Everything
else is Board's, the same for every route, in this order (the model:
Jupyter's base handler, which checks Host and Origin before any handler
runs, and TF Serving's REST handler, one table of path patterns whose every
error has the same JSON form):

  1. the guard (guard.Access): a foreign Host, or another site's page
     sending anything but GET or HEAD, is refused with 403; an allowed
     site's CORS preflight gets 204 with the methods the path's routes take;
  2. the path: no route's pattern matches, 404; no route of the path takes
     the method, 405 with an Allow header (an absolute-form target,
     `GET http://host:port/path`, is its path, its authority the Host);
  3. the body, read no further than the route's limit: past it, 413; a
     body that sends nothing for BODY_IDLE seconds, 408 and the connection
     closed;
  4. on a worker thread (THREAD) or on the event loop (LOOP): the body
     parsed when the route takes JSON (not JSON: 400), then the handler;
  5. the answer: a dict or list is JSON with 200, a Reply is sent as it
     says, a BoardError is {"error": its line} with its status, and any
     other exception a one-line JSON 500 and one line on stderr, no
     traceback.
A handler is handler(call) -> answer, with `call` a Call: the request's
method, path, params, query, headers, body and parsed JSON, and what the
board serves (the model answering now, read once per request). Handlers
never see the ASGI scope, build an error's JSON or import Starlette.
"""
import asyncio
import dataclasses
import difflib
import json
import queue
import re
import sys
import threading
import urllib.parse
import zlib

from .. import cli
from . import zh
from .guard import CORS_HEADERS

MAX_BODY = 32 * 1024 * 1024  # bytes of a request body: a phone's photo, even as PNG, fits; more is refused with 413
THREAD, LOOP = "thread", "loop"  # where a handler runs: a worker thread (files, a model run) or the event loop
JSON = "json"  # what a route takes: its body parsed as JSON (Call.json)
ANY = "GET HEAD POST PUT PATCH DELETE OPTIONS"  # every method: a route that answers each one itself
METHODS = tuple(ANY.split())  # the order methods are listed in (Allow, Access-Control-Allow-Methods)
LARGE_JSON = 64 * 1024  # bytes of JSON past which floats are parsed through number_of (see parse_json)
INFLATE_STEP = 1024 * 1024  # bytes a gzip body is inflated by at a time (Inflated)
BODY_IDLE = 30.0  # seconds a request body may send nothing before it is answered 408 and its connection closed
ABSOLUTE_FORM = re.compile(r"https?://", re.IGNORECASE)  # a request target naming its scheme and authority
WORKERS = 40  # worker threads at most; more handlers wait for one
LARGE_AT_ONCE = 2  # JSON bodies past LARGE_JSON parsed and handled at once; more wait (handled)
LARGE_PARSES = threading.BoundedSemaphore(LARGE_AT_ONCE)
SEGMENT = re.compile(r"<(\w+)>")  # a path's named part: /board/kept/<name>


class BoardError(Exception):
    """A request answered {"error": message} with HTTP `status` (and `headers`, e.g. 405's Allow): 400 bad request,
    404 not found, 405 method not allowed, 408 a body that stopped coming, 409 conflict (a learn running, a model
    folder gone), 413 too large, 415 a Content-Encoding other than gzip, 500 a folder the board cannot read or
    write."""

    def __init__(self, status, message, headers=None):
        super().__init__(message)
        self.status, self.headers = status, headers


@dataclasses.dataclass(frozen=True)
class Route:
    """One entry of the table: `methods` (space-separated, GET also answers HEAD), `path` as the docs write it
    (/board/kept/<name>: <name> is one path segment, Call.params["name"]), and:

    handler: handler(call) -> a dict or list (JSON, 200) or a Reply; raises
      BoardError for an answer other than 200.
    body: the bytes of body it takes at most (0: none); a larger one is 413.
    runs: THREAD (the default: the handler may block) or LOOP (it only reads
      memory: no file, no model run, no lock held for long). A handler
      marked runs_model declared LOOP is refused: ValueError.
    takes: JSON when the body is parsed as JSON into Call.json (with `form`,
      what it should be, in the message for a body that is not JSON), or None.
    pattern: a compiled regular expression matched instead of `path`, with
      its groups as params (TF Serving's paths); None: made from `path`.
    raw: True when the pattern is matched on the path as sent, its percent
      escapes kept (Call.path too), as TF Serving's REST handler matches it
      (`/v1/models/a%2Fb` names the model a/b: serving.servable decodes the
      name); False: on the decoded path.
    """
    methods: str
    path: str
    handler: object
    body: int = 0
    runs: str = THREAD
    takes: str = None
    form: str = ""
    pattern: re.Pattern = None
    raw: bool = False

    def __post_init__(self):
        if self.pattern is None:
            parts = SEGMENT.split(self.path)  # text, name, text, name, ...
            regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)" for i, part in enumerate(parts))
            object.__setattr__(self, "pattern", re.compile(regex))
        if self.runs not in (THREAD, LOOP) or self.takes not in (None, JSON) or self.body < 0:
            raise ValueError(f"route {self.methods} {self.path}: runs is THREAD or LOOP, takes JSON or None, "
                             f"body >= 0")
        if self.runs == LOOP and getattr(self.handler, "runs_model", False):
            raise ValueError(f"route {self.methods} {self.path}: {getattr(self.handler, '__name__', 'its handler')} "
                             "runs a model, which would keep every other request waiting on the event loop: "
                             "give it runs=THREAD")

    def allows(self, method):
        """Whether this route answers `method` (HEAD where it answers GET)."""
        listed = self.methods.split()
        return method in listed or (method == "HEAD" and "GET" in listed)


def runs_model(handler):
    """Mark `handler` as one that runs a model (a prediction, a layer's values, a scoring): a Route of it must run
    on a worker thread, and the table refuses one declared LOOP (Route raises ValueError as it is made).
    Returns handler."""
    handler.runs_model = True
    return handler


@dataclasses.dataclass
class Reply:
    """An answer other than a JSON 200: `content` (bytes, sent with `media_type`; anything else: JSON), its status
    and headers; nan: True when NaN and infinities in the JSON are written as TF Serving writes them (NaN,
    Infinity, -Infinity), False when they make the answer a 500 (Board.response_of)."""
    content: object
    status: int = 200
    media_type: str = None
    headers: dict = None
    nan: bool = False


class Call:
    """One request as a handler sees it.

    method, path (str); params: the path's named parts; query: the query
    string's values, the first of each name; headers: lower-case names ->
    str; body: bytes (b"" for a route that takes none); json: the parsed
    body (routes that take JSON), else None; served: what the board
    serves (app.Served); model: the Model answering this request, read once
    (model.current), so a request is answered by one model to its end;
    compare: the --compare Model beside it, read once too, or None.
    """

    def __init__(self, method, path, params, query, headers, served):
        self.method, self.path, self.params, self.query, self.headers = method, path, params, query, headers
        self.served, self.body, self.json = served, b"", None
        self.model = served.model.current
        second = getattr(served, "compare", None)
        self.compare = None if second is None else second.current

    @property
    def kept(self):
        """The served keep.KeptDigits store; BoardError 404 when the board keeps no digits."""
        return self._part("kept", "this server keeps no digits (start it with mnist_app.py --serve)")

    @property
    def learning(self):
        """The served teach.Learning; BoardError 404 when the board does not learn."""
        return self._part("learning", "this server does not learn (start it with mnist_app.py --serve)")

    def _part(self, name, missing):
        part = getattr(self.served, name, None)
        if part is None:
            raise BoardError(404, f"{self.method} {self.path}: {missing}")
        return part


def number_of(text):
    """float(text), for json.loads(parse_float=): a Python call, at which the GIL passes to a thread waiting for it."""
    return float(text)


GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip stream (RFC 1952 2.3.1)


def parse_json(data, form=""):
    """The JSON value of a request body (bytes); BoardError 400 (one line, with `form` when given) when not JSON,
    a body that starts as gzip does (GZIP_MAGIC) said to be gzip (TF Serving's status for a body it cannot parse).

    A body past LARGE_JSON has its floats parsed by number_of, a Python
    function: json's C parser holds the GIL for its whole run (about half a
    second for 8 MB), and the event loop's thread would wait that long to
    answer anyone. A name an object gives twice has its first value
    (first_of_each), as TF Serving reads it; an empty body is said to be
    empty, as TF Serving says it.
    """
    if not data or data.isspace():  # TF Serving: "JSON Parse error: The document is empty"
        raise BoardError(400, "JSON Parse error: the body is empty (a body is sent with its Content-Length, or "
                              "chunked)" + (f"; send {form}" if form else ""))
    if data[:2] == GZIP_MAGIC:  # gzip's bytes with no Content-Encoding saying so (or gzipped twice): said as such
        raise BoardError(400, "JSON Parse error: the body looks gzip-compressed (it starts with gzip's bytes 1f 8b): "
                              "send Content-Encoding: gzip with it, gzipped once")
    try:
        return json.loads(data, parse_float=None if len(data) <= LARGE_JSON else number_of,
                          object_pairs_hook=first_of_each)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # RecursionError: nested too deep
        line = " ".join(str(e).split())[:200]
        raise BoardError(400, f"JSON Parse error: the body is not JSON ({line})" + (f"; send {form}" if form else "")
                         ) from None


def first_of_each(pairs):
    """The dict of a JSON object's (name, value) pairs, a name given twice keeping its first value: TF Serving's
    RapidJSON keeps both and its FindMember finds the first (`{"instances": A, "instances": B}` is A), where
    Python's json keeps the last."""
    found = {}
    for name, value in pairs:
        found.setdefault(name, value)
    return found


class Workers:
    """Daemon threads that run handlers off the event loop: at most `most` at once, the others wait their turn.

    Daemon threads, not asyncio's executor nor anyio's: a handler still
    running when the server stops (a model run cut by the shutdown grace)
    must not keep the process from ending, and neither pool lets go of its
    threads then.
    """

    def __init__(self, most=WORKERS):
        self.most, self.jobs, self.lock, self.threads, self.idle = most, queue.SimpleQueue(), threading.Lock(), 0, 0

    async def run(self, function, *args):
        """function(*args)'s value, computed on a worker thread while the event loop goes on."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self.lock:
            if self.idle <= 0 and self.threads < self.most:
                self.threads += 1  # a new thread for this job
                threading.Thread(target=self.work, name="board-worker", daemon=True).start()
            else:
                self.idle -= 1  # an idle thread takes it; below 0: it waits for the next thread that is done
        self.jobs.put((loop, future, function, args))
        return await future

    def work(self):
        while True:
            loop, future, function, args = self.jobs.get()
            try:
                result, error = function(*args), None
            except BaseException as e:  # noqa: BLE001  (handed to the awaiting request, which answers it)
                result, error = None, e
            with self.lock:
                self.idle += 1
            try:
                loop.call_soon_threadsafe(settle, future, result, error)
            except RuntimeError:  # the event loop has closed: the server stopped meanwhile
                pass


def settle(future, result, error):
    """Give a worker's result or error to its future, unless the request awaiting it was cancelled."""
    if not future.cancelled():
        future.set_exception(error) if error is not None else future.set_result(result)


class Board:
    """The ASGI app of a route table: routes (Route, in order: the first whose pattern and method match answers),
    served (what the handlers serve: app.Served), access (guard.Access). See the module's docstring."""

    def __init__(self, routes, served, access):
        from starlette.responses import Response  # here: --help imports this module too
        self.routes, self.served, self.access = tuple(routes), served, access
        self.response, self.workers = Response, Workers()

    def matching(self, path, raw):
        """[(route, params)] of the routes whose pattern matches `path` (decoded), or `raw` (as sent) for a route
        matched on it (Route.raw), in table order."""
        found = ((route, route.pattern.fullmatch(raw if route.raw else path)) for route in self.routes)
        return [(route, match.groupdict()) for route, match in found if match]

    def close_path(self, path):
        """The route path (str) a path that matches none was typed for (`/board/lern`: /board/learn), by difflib
        over the table's paths without parameters, or None."""
        paths = sorted({route.path for route in self.routes if "<" not in route.path})
        close = difflib.get_close_matches(path, paths, n=1, cutoff=0.8)
        return close[0] if close else None

    def methods(self, matched):
        """The methods the matched routes list, and OPTIONS, in METHODS' order (a preflight's and a 405's list)."""
        listed = {m for route, _ in matched for m in route.methods.split()} | {"OPTIONS"}
        return ", ".join(m for m in METHODS if m in listed)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        method, scheme = scope["method"], scope.get("scheme", "http")
        headers = header_fields(scope["headers"])
        path, raw = request_target(scope, headers)
        extra = {}
        try:
            refused = self.access.refusal(method, headers, scheme, scope.get("server"))
            if refused is not None:
                raise BoardError(403, refused)
            cors = self.access.cors_origin(headers, scheme)
            extra = {} if cors is None else {"Access-Control-Allow-Origin": cors, "Vary": "Origin"}
            response = self.response_of(await self.answer(scope, receive, method, path, headers, cors, raw),
                                        extra, f"{method} {path}")
        except BoardError as e:
            response = self.response_of(error_reply(e.status, str(e), e.headers, path.startswith("/board/") and
                                                    zh.asked(headers)), extra)  # the zh twin: not TF Serving's
        except Disconnected:  # the client left while sending its body: nobody to answer
            return
        except Exception as e:  # noqa: BLE001  (any: a server answers, it does not die or print a traceback)
            line = " ".join(f"{type(e).__name__}: {e}".split())[:300]
            print(f"error: {method} {path}: {line}", file=sys.stderr, flush=True)
            response = self.response_of(error_reply(500, f"{method} {path}: internal error ({line})"), extra)
        await response(scope, receive, send)

    async def answer(self, scope, receive, method, path, headers, cors, raw=None):
        """The Reply or data of a request that passed the guard (steps 2 to 4 of the module's docstring); path and
        raw: its path decoded and as sent (request_target; raw None: the path)."""
        raw = path if raw is None else raw
        matched = self.matching(path, raw)
        if not matched:
            close = self.close_path(path)
            raise BoardError(404, f"{method} {path}: not found" + (f"; did you mean {close}?" if close else ""))
        if cors is not None and method == "OPTIONS" and "access-control-request-method" in headers:
            private = {"Access-Control-Allow-Private-Network": "true"} if (  # Chrome: a public site's page, a
                "access-control-request-private-network" in headers) else {}  # local server
            return Reply(b"", 204, None, {**CORS_HEADERS, **private,
                                          "Access-Control-Allow-Methods": self.methods(matched)})
        route, params = next(((r, p) for r, p in matched if r.allows(method)), (None, None))
        if route is None:
            allowed = [m for m in self.methods(matched).split(", ") if m not in ("OPTIONS", "HEAD")]
            raise BoardError(405, f"{method} {path}: not allowed; use {' or '.join(allowed)}",
                             {"Allow": self.methods(matched)})
        query = {k: v[0] for k, v in urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}
        path = raw if route.raw else path
        call = Call(method, path, params, query, headers, self.served)
        call.body = await read_body(receive, headers, route, f"{method} {path}")
        if route.runs == LOOP:
            return handled(route, call)
        return await self.workers.run(handled, route, call)

    def response_of(self, reply, extra, said=""):
        """The starlette response of a handler's answer (a Reply, or a dict or list: JSON with 200), `extra` headers
        added. JSON is written as TF Serving's REST answers are: UTF-8, names as they are (no \\u escapes), a
        lone surrogate a request's text brought into a line (`"\\udcb7"`) as its JSON escape (cli.readable_json),
        not a UnicodeEncodeError. NaN or an infinity, which JSON has no number for, is written as TF Serving
        writes it (NaN, Infinity, -Infinity: its "JSON conformance") where the Reply says so (Reply.nan);
        elsewhere BoardError 500 naming the request (`said`) and the values, never an exception out of the app
        (uvicorn's traceback and plain-text 500)."""
        if not isinstance(reply, Reply):
            reply = Reply(reply)
        headers = {**(reply.headers or {}), **extra}
        content, media_type = reply.content, reply.media_type
        if not isinstance(content, bytes):
            try:
                content = cli.readable_json(content, "utf-8", allow_nan=reply.nan, separators=(",", ":"))
            except ValueError:  # "Out of range float values are not JSON compliant"
                raise BoardError(500, f"{said}: the answer holds NaN or an infinity, which JSON has no number for: "
                                      "the model's values are not finite (was it trained into NaN?)") from None
            content, media_type = content.encode("utf-8"), "application/json"
        return self.response(content, status_code=reply.status, media_type=media_type, headers=headers)


def request_target(scope, headers):
    """(path, raw path) of a request: its path percent-decoded (the ASGI scope's) and as sent (str, Latin-1).

    An absolute-form target (`GET http://127.0.0.1:8501/v1/models/mnist`,
    which RFC 9112 3.2.2 says a server MUST accept; uvicorn hands it on
    whole as the path) is its path, and its authority takes the Host
    header's place (`headers`, changed in place), as that RFC says: the
    guard checks the name the target gives.
    """
    path, raw = scope["path"], scope.get("raw_path")
    raw = path if raw is None else raw.decode("latin-1")
    if ABSOLUTE_FORM.match(raw):
        parts = urllib.parse.urlsplit(raw)
        headers["host"] = parts.netloc
        raw = parts.path or "/"
        path = urllib.parse.unquote(raw)
    return path, raw


def header_fields(raw):
    """The request's headers as {lower-case name: value}, a name sent twice as one value joined by ", " (RFC 9110
    5.3: `Content-Encoding: gzip` twice is gzip twice, and two Host lines are no one host), from the ASGI scope's
    [(name bytes, value bytes)]."""
    headers = {}
    for name, value in raw:
        name, value = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


class Disconnected(Exception):
    """The client went away before its request's body arrived."""


def error_reply(status, message, headers=None, twin=False):
    """The one form of every error: {"error": message} with `status`, and its Chinese twin under "zh" (zh.twin) for
    a request whose Accept-Language names zh (`twin`: the board's page asks for it whatever its language)."""
    return Reply({"error": message, **({"zh": zh.twin(message, status)} if twin else {})}, status, None, headers)


def handled(route, call):
    """route.handler(call), after parsing the body when the route takes JSON; runs where the route says.

    A body past LARGE_JSON on a worker thread is parsed and handled at most LARGE_AT_ONCE at a time, the others
    waiting their turn: its parsed values take about 14 times its bytes (a Python float and its list slot for
    each number: a 32 MiB predict, some 450 MB), and WORKERS such requests at once would take many gigabytes.
    """
    if route.takes != JSON:
        return route.handler(call)
    if len(call.body) <= LARGE_JSON or route.runs != THREAD:
        call.json = parse_json(call.body, route.form)
        return route.handler(call)
    with LARGE_PARSES:
        try:
            call.json = parse_json(call.body, route.form)
            return route.handler(call)
        finally:
            call.json = None  # its values go before the next large body is parsed


async def read_body(receive, headers, route, said):
    """The request's body (bytes), read no further than route.body; BoardError 413 past it, named by `said`.

    A Content-Length over the limit is refused before anything is read; a
    chunked body as soon as its chunks pass the limit. A body sent with
    `Content-Encoding: gzip` (as TF Serving takes it) is the body it
    inflates to, inflated chunk by chunk as it arrives and no further than
    the same limit (Inflated): a gzip bomb is refused with 413 once its
    first route.body bytes are out, never inflated whole. Another encoding
    is 415 naming it; gzip that is not gzip, 400. A body that sends
    nothing for BODY_IDLE seconds is 408, its connection closed (libevent's
    HTTP server, TF Serving's, closes one idle for 50 s; uvicorn waits for
    ever, holding the connection). Raises Disconnected when the client goes
    away meanwhile.
    """
    declared = headers.get("content-length", "")
    if declared.isdecimal() and int(declared) > route.body:
        raise too_large(route, said, int(declared))
    inflated = Inflated.of(headers, route, said)
    chunks, size, more = [], 0, True
    while more:
        try:
            message = await asyncio.wait_for(receive(), BODY_IDLE)
        except asyncio.TimeoutError:
            came = f"{size:,} byte{'s' if size != 1 else ''}"
            raise BoardError(408, f"{said}: the request body stopped coming ({came} came, then nothing for "
                                  f"{BODY_IDLE:g} s); send it again", {"Connection": "close"}) from None
        if message["type"] == "http.disconnect":
            raise Disconnected()
        chunk, more = message.get("body", b""), message.get("more_body", False)
        size += len(chunk)
        if size > route.body:
            raise too_large(route, said)
        if inflated is None:
            chunks.append(chunk)
        else:
            inflated.feed(chunk, chunks)
    if inflated is not None:
        inflated.end()
    return b"".join(chunks)


class Inflated:
    """A gzip body inflated as its chunks arrive, to `limit` bytes at most: feed(chunk, parts) appends to `parts`
    the bytes it inflates to, INFLATE_STEP at a time (BoardError 413 past the limit, 400 when it is not gzip);
    end() once the body is all there (400 when the gzip stream is cut short). Source: zlib.decompressobj with
    max_length, so that no call makes more than the limit allows (Python's zlib docs: "decompression bombs")."""

    def __init__(self, limit, route, said):
        self.limit, self.route, self.said, self.size, self.seen = limit, route, said, 0, False
        self.inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)  # | 16: the gzip wrapper

    @classmethod
    def of(cls, headers, route, said):
        """The Inflated for a request's Content-Encoding: None for none (or identity); BoardError 415 for
        another one than gzip."""
        coding = ", ".join(part.strip().lower() for part in headers.get("content-encoding", "").split(",")
                          if part.strip() and part.strip().lower() != "identity")
        if not coding:
            return None
        if coding not in ("gzip", "x-gzip"):
            raise BoardError(415, f"{said}: Content-Encoding {coding[:40]!r} is not taken; send the body as it is, or "
                                  "gzip it (Content-Encoding: gzip)")
        return cls(route.body, route, said)

    def feed(self, chunk, parts):
        while chunk:
            self.seen = True
            try:
                part = self.inflater.decompress(chunk, min(INFLATE_STEP, self.limit - self.size + 1))
            except zlib.error as e:
                raise BoardError(400, f"{self.said}: the body is not gzip ({e}), though its Content-Encoding "
                                      "says so") from None
            self.size += len(part)
            if self.size > self.limit:
                raise BoardError(413, f"request body is over this server's limit of {self.limit:,} bytes once "
                                      "inflated (Content-Encoding: gzip)")
            parts.append(part)
            chunk = self.inflater.unconsumed_tail
            if self.inflater.eof and self.inflater.unused_data:  # another gzip member follows, as gzip allows
                chunk, self.inflater = self.inflater.unused_data, zlib.decompressobj(zlib.MAX_WBITS | 16)

    def end(self):
        if self.seen and not self.inflater.eof:
            raise BoardError(400, f"{self.said}: the gzip body is cut short (its end never came)")


def too_large(route, said, size=None):
    """The 413 BoardError of a body past route.body (size: its declared bytes, when it declared them)."""
    if route.body == 0:
        return BoardError(413, f"{said} takes no request body" + (f" ({size:,} bytes sent)" if size else ""))
    return BoardError(413, f"request body{'' if size is None else f' of {size:,} bytes'} is over this server's "
                           f"limit of {route.body:,} bytes")


def chosen(call):
    """The Model a request's query names: "model=compare" the --compare one (BoardError 404 without one), else the
    first."""
    which = call.query.get("model", "first")
    if which not in ("first", "compare"):
        raise BoardError(400, f"model={which}: give model=first (the default) or model=compare")
    if which == "compare" and call.compare is None:
        raise BoardError(404, f"{call.method} {call.path}: this server serves no second model (mnist_app.py "
                              f"--serve --compare DIR)")
    return call.model if which == "first" else call.compare
