"""Every route of the board's table (mnistkit/board/app.py's ROUTES) gets the same guard, limit and error form.

The walk goes through each entry of the table, in this process (the ASGI app called in an event loop of the
test's own thread, no socket): a foreign Host, a cross-origin non-GET, a body one byte over the route's limit
(declared, and sent in chunks: nothing past the limit is read), malformed JSON where the route takes JSON, an
unlisted method, and a handler that raises. A throwaway route added to the table in the test alone gets all of
it with no other change. The route list of app.py's docstring and docs/deploy.md's endpoint table are checked
against the table.
"""
import asyncio
import concurrent.futures
import dataclasses
import json
import os
import re
import threading

import numpy as np
import pytest

from conftest import ROOT, wait_for, wait_limit
from mnistkit import keep
from mnistkit.board import app, guard, model, table, teach
from mnistkit.errors import DataError
from mnistkit.networks import MLP

pytestmark = pytest.mark.quick
OWN_HOST = (b"host", b"127.0.0.1:8501")
EVIL = "http://evil.example"
EXAMPLES = {"/v1/models/<name>[/versions/<N>]:predict": "/v1/models/mnist:predict",  # pattern routes: a path each
            "/v1/models/<name>[/versions/<N>][/metadata]": "/v1/models/mnist", "/v1/...": "/v1/nothing"}
KEPT = keep.LAYOUT.name(1, 3)  # a kept digit's name, for /board/kept/<name>


def example_path(route):
    """A path the route's pattern matches: its example, or its path with each <part> filled in."""
    path = EXAMPLES.get(route.path) or re.sub(r"<\w+>", KEPT, route.path)
    assert route.pattern.fullmatch(path), (route.path, path)
    return path


def methods_of(route):
    return route.methods.split()


class Asked:
    """One request given to an ASGI app in an event loop of its own (path: with its ?query, if any): the answer, and
    how much of the body it read. In this thread, or in another when one runs a loop here already (Playwright's
    sync API, after a module's browser tests)."""

    def __init__(self, board, method, path, body=b"", headers=(OWN_HOST,), chunk=None, declare=True):
        chunk = chunk or max(len(body), 1)
        self.chunks = [body[i:i + chunk] for i in range(0, len(body), chunk)] or [b""]
        self.read, sent = 0, []
        declared = [(b"content-length", str(len(body)).encode())] if declare and body else []
        path, _, query = path.partition("?")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                 "root_path": "",
                 "headers": [*headers, *declared], "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8501)}

        async def receive():
            if self.read < len(self.chunks):
                self.read += 1
                return {"type": "http.request", "body": self.chunks[self.read - 1],
                        "more_body": self.read < len(self.chunks)}
            await asyncio.sleep(wait_limit(60))  # a client that sends no more: the app must not ask
            raise AssertionError(f"{method} {path}: the app waited {wait_limit(60):.0f} s for more of a body that "
                                 "had ended")

        async def send(message):
            sent.append(message)

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop here: the usual case
            asyncio.run(board(scope, receive, send))
        else:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pool.submit(asyncio.run, board(scope, receive, send)).result()
        self.status = sent[0]["status"]
        self.headers = {k.decode().lower(): v.decode() for k, v in sent[0]["headers"]}
        self.body = b"".join(m.get("body", b"") for m in sent[1:])

    def error(self):
        """The one line of a JSON error answer."""
        assert self.headers["content-type"] == "application/json", self.headers
        answer = json.loads(self.body)
        assert list(answer) == ["error"] and "\n" not in answer["error"], answer
        return answer["error"]


class Stand:
    """A predictor standing in for the network: float32 [n, 10], digit 7 likeliest."""
    network, source = MLP, "stand/mnist_model-7"

    def predict(self, rows):
        return np.tile(np.eye(10, dtype=np.float32)[7], (len(rows), 1))


@pytest.fixture
def served(tmp_path):
    """What a board serves: a stand-in model whose every picture prepares to a bar, a keep store, the learn."""
    bar = np.zeros((28, 28), np.uint8)
    bar[6:22, 13:16] = 255
    answering = model.Model(Stand(), lambda data, name: bar)
    kept = keep.KeptDigits(str(tmp_path / "my_digits"))
    return app.Served(answering, None, kept, teach.Learning(kept))


def with_handler(routes, changed, handler):
    """The table `routes` with `changed`'s handler replaced."""
    return tuple(dataclasses.replace(route, handler=handler) if route is changed else route for route in routes)


@pytest.mark.parametrize("route", app.ROUTES, ids=[f"{r.methods} {r.path}" for r in app.ROUTES])
def test_every_route_gets_the_guard(served, route):
    board, path = app.create_app(served), example_path(route)
    for method in methods_of(route):
        foreign = Asked(board, method, path, headers=[(b"host", b"evil.example:8501")])
        assert foreign.status == 403 and foreign.error().startswith("Host 'evil.example:8501'"), method
    for method in [m for m in methods_of(route) if m not in ("GET", "HEAD")] or ["POST"]:
        for header in ((b"origin", EVIL.encode()), (b"referer", EVIL.encode() + b"/page")):
            other_site = Asked(board, method, path, headers=[OWN_HOST, header])
            assert other_site.status == 403 and "a page of another site may not" in other_site.error(), method


@pytest.mark.parametrize("route", app.ROUTES, ids=[f"{r.methods} {r.path}" for r in app.ROUTES])
def test_every_route_refuses_a_body_one_byte_over_its_limit_without_reading_further(served, route):
    board, path = app.create_app(served), example_path(route)
    method = methods_of(route)[-1]
    over = b"{" + b" " * route.body  # one byte over the limit
    declared = Asked(board, method, path, over)
    assert declared.status == 413 and declared.read == 0, declared.body  # refused from the header alone
    assert f"{route.body:,} bytes" in declared.error() or "takes no request body" in declared.error()
    chunk = max(route.body // 4, 1)
    chunked = Asked(board, method, path, over + b" " * (3 * chunk), chunk=chunk, declare=False)
    assert chunked.status == 413 and chunked.error()
    assert (chunked.read - 1) * chunk <= route.body < chunked.read * chunk  # it stopped at the chunk past the limit


@pytest.mark.parametrize("route", [r for r in app.ROUTES if r.takes == table.JSON], ids=lambda r: r.path)
def test_every_route_taking_json_refuses_malformed_json_in_one_line(served, route):
    board, path = app.create_app(served), example_path(route)
    for body in (b"{not json", b"[" * 100_000, b"\xff\xfe"):
        answer = Asked(board, "POST", path, body)
        assert answer.status == 400 and answer.error().startswith("JSON Parse error: the body is not JSON")


@pytest.mark.parametrize("route", app.ROUTES, ids=[f"{r.methods} {r.path}" for r in app.ROUTES])
def test_every_route_answers_an_unlisted_method_405(served, route):
    board, path = app.create_app(served), example_path(route)
    listed = {m for r in app.ROUTES if r.pattern.fullmatch(path) for m in methods_of(r)}
    answered = listed | ({"HEAD"} if "GET" in listed else set())  # GET answers HEAD too
    for method in sorted(set(table.METHODS) - answered):
        answer = Asked(board, method, path)
        use = " or ".join(m for m in table.METHODS if m in listed)
        assert answer.status == 405 and answer.error() == f"{method} {path}: not allowed; use {use}", method
        assert answer.headers["allow"] == ", ".join(m for m in table.METHODS if m in listed | {"OPTIONS"})


def valid_body(route):
    return b"{}" if route.takes == table.JSON else b"x" * min(route.body, 1)


@pytest.mark.parametrize("route", app.ROUTES, ids=[f"{r.methods} {r.path}" for r in app.ROUTES])
def test_every_route_runs_where_it_says_and_a_handler_that_raises_is_one_line_500(served, route, capsys):
    ran = []

    def broken(call):
        ran.append(threading.current_thread())
        raise RuntimeError("lost\nthe weights")

    board, path = app.create_app(served, routes=with_handler(app.ROUTES, route, broken)), example_path(route)
    method = methods_of(route)[0]
    answer = Asked(board, method, path, valid_body(route))
    assert answer.status == 500
    assert answer.error() == f"{method} {path}: internal error (RuntimeError: lost the weights)"
    assert capsys.readouterr().err == f"error: {method} {path}: RuntimeError: lost the weights\n"
    assert (ran[0] is threading.current_thread()) == (route.runs == table.LOOP)  # the event loop runs on this thread


def test_a_throwaway_route_gets_the_guard_the_limit_the_thread_and_the_error_form(served):
    ran = []

    def echo(call):
        """The plain way: a handler of the call, with no plumbing of its own."""
        ran.append(threading.current_thread())
        if call.json == "no":
            raise table.BoardError(409, "refused, as asked")
        return {"echo": call.json, "model": call.model.name}

    throwaway = table.Route("POST", "/board/throwaway", echo, body=10, takes=table.JSON)
    board = app.create_app(served, routes=app.ROUTES + (throwaway,))
    assert Asked(board, "POST", "/board/throwaway", b'{"a": 1}').body == b'{"echo":{"a":1},"model":"mnist"}'
    assert ran[0] is not threading.current_thread()  # a worker thread, not the event loop's
    eleven = b'{"a": 1000}'
    too_large = Asked(board, "POST", "/board/throwaway", eleven + b" " * 5, chunk=1, declare=False)
    assert too_large.status == 413 and too_large.read == len(eleven) == 11 and "limit of 10 bytes" in too_large.error()
    assert Asked(board, "POST", "/board/throwaway", b"x" * 11).status == 413
    assert Asked(board, "POST", "/board/throwaway", b"{nope").error().startswith("JSON Parse error")
    refused = Asked(board, "POST", "/board/throwaway", b'"no"')
    assert refused.status == 409 and refused.error() == "refused, as asked"
    assert Asked(board, "GET", "/board/throwaway").status == 405
    assert Asked(board, "POST", "/board/throwaway", b"{}", headers=[(b"host", b"evil.example")]).status == 403
    assert Asked(board, "POST", "/board/throwaway", b"{}", headers=[OWN_HOST, (b"origin", b"null")]).status == 403
    assert len(ran) == 2  # the refusals above never reached the handler


def test_a_preflight_lists_the_methods_of_the_paths_routes(served):
    board = app.create_app(served, access=guard.Access(allow_origins=["http://localhost:3000"]))
    preflight = [OWN_HOST, (b"origin", b"http://localhost:3000"), (b"access-control-request-method", b"DELETE")]
    answer = Asked(board, "OPTIONS", "/board/kept/" + KEPT, headers=preflight)
    assert answer.status == 204 and answer.headers["access-control-allow-methods"] == "GET, DELETE, OPTIONS"
    assert answer.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert Asked(board, "OPTIONS", "/board/learn", headers=preflight).headers[
        "access-control-allow-methods"] == "GET, POST, OPTIONS"


def test_head_is_answered_where_get_is_but_tf_servings_paths_keep_their_400(served):
    board = app.create_app(served)
    assert Asked(board, "HEAD", "/").status == Asked(board, "HEAD", "/board/model").status == 200
    assert Asked(board, "GET", "/v1/models/mnist").status == 200
    assert Asked(board, "HEAD", "/v1/models/mnist").error().startswith("Malformed request: HEAD /v1/models/mnist;")


def test_a_picture_sent_with_an_encoded_windows_name_is_named_by_its_base_name(served):
    def refuse(data, name):
        raise DataError(f"{name}: not an image file")

    served.model = model.Model(Stand(), refuse)
    answer = Asked(app.create_app(served), "POST", "/board/predict", b"text",
                   headers=[OWN_HOST, (b"x-filename", b"C%3A%5CUsers%5Cme%5Cdigit%20one.jpg")])
    assert answer.status == 400 and answer.error() == "digit one.jpg: not an image file"


# --- the table, as the docs list it

ROUTE_LINE = re.compile(r"^\s+((?:GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|ANY)(?:\s(?:GET|POST|DELETE))*)\s+(/\S*)")


def table_entries():
    """{(methods, path)} of ROUTES, every method of the route that answers each one written ANY."""
    return {("ANY" if r.methods == table.ANY else r.methods, r.path) for r in app.ROUTES}


def test_the_modules_route_list_is_the_table():
    listed = {found.groups() for found in map(ROUTE_LINE.match, app.__doc__.splitlines()) if found}
    assert listed == table_entries()


def test_deploy_md_lists_every_route_with_its_body_limit():
    with open(os.path.join(ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
        rows = re.findall(r"^\| `(\w+)` \| `([^`]+)` \| ([^|]+) \|", f.read(), re.M)
    limits = {0: "none", table.MAX_BODY: f"{table.MAX_BODY // 2 ** 20} MiB"}
    assert {(m, p) for m, p, _ in rows} == table_entries()
    body = {(m, p): limit.strip() for m, p, limit in rows}
    for route in app.ROUTES:
        assert body["ANY" if route.methods == table.ANY else route.methods, route.path] == limits[route.body]


def test_a_route_is_declared_with_what_the_table_knows():
    with pytest.raises(ValueError, match="runs is THREAD or LOOP"):
        table.Route("GET", "/x", print, runs="process")
    route = table.Route("GET DELETE", "/board/kept/<name>", print)
    assert route.pattern.fullmatch("/board/kept/" + KEPT)["name"] == KEPT
    assert not route.pattern.fullmatch("/board/kept/a/b") and route.allows("HEAD") and not route.allows("POST")
    assert (route.body, route.runs, route.takes) == (0, table.THREAD, None)  # the plain way: no body, a thread


def test_close_ends_the_boards_background_work(served, monkeypatch):
    """Served.close, which the server calls as it stops (and the tests' boards after their file), ends the mistakes'
    scoring and the atlas's reference under way: each waits in its work until the board's stop."""
    from mnistkit.board import atlas, mistakes
    working = []

    def held(stopped):
        working.append(threading.current_thread())
        stopped.wait(600)  # the stop, or a limit that only ends a hang (the asserts below say so)
        raise DataError("stopped")
    monkeypatch.setattr(atlas, "files_state", lambda path: ())
    monkeypatch.setattr(atlas.reference, "reference_of", lambda inside, state, data_dir, moved, stopped: held(stopped))
    monkeypatch.setattr(mistakes.records, "tfrecord_files", lambda data_dir, isTrain: ["test.tfrecords"])
    monkeypatch.setattr(mistakes.records, "read_examples", lambda paths: held(served.mistakes.stopped))
    making = atlas.of_served(served).of("first", served.model)
    scoring = served.mistakes.scoring("first", served.model)
    wait_for(lambda: len(working) == 2, "the atlas's and the mistakes' work to start", 60, every=0.01)
    assert sorted(t.name for t in working) == ["board-atlas", "board-mistakes"]
    served.close()
    assert not making.thread.is_alive(), "the atlas's reference went on after close()"
    assert not scoring.thread.is_alive(), "the mistakes' scoring went on after close()"
