"""The drawing board's server is safe against the pages its user visits, and answers as TF Serving does.

What is checked: the Host a request names (DNS rebinding), the Origin of a POST (another site's page), CORS
when --allow-origin lets a site in, numbers outside [0, 1] (NaN, infinities, past float32, 0-255), TF Serving's
statuses for every malformed path and method, bodies sent chunked past the limit, and that a large predict
body is parsed on a thread. Pure decisions (guard.Access, serving.images_of) are checked without a server;
the rest through HTTP against the app run as a user runs it (test_board's Server).
"""
import asyncio
import http.client
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import ROOT, wait_limit
from mnistkit.board import app, guard, model, serving, table
from test_board import Server, drawn, png_bytes, request, tflite_server  # noqa: F401  (tflite_server: a fixture)

ZERO_ROW = [0.0] * 784
EVIL = "http://evil.example"


def host_and_port(url):
    """('127.0.0.1', 8501) of a server's printed address."""
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    return host, int(port)


def raw_request(url, method, path, body=None, headers=None):
    """(status, headers dict with lower-case names, body bytes) of one request sent as given: any Host, any method."""
    connection = http.client.HTTPConnection(*host_and_port(url), timeout=wait_limit(60))
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        headers = {"Host": "{}:{}".format(*host_and_port(url)), **(headers or {})}
        if body is not None:
            headers["Content-Length"] = str(len(body))
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def open_server(exported_workdir):
    """A .tflite server started with --allow-host board.lan --allow-origin http://localhost:3000."""
    server = Server(exported_workdir, "--model-dir", os.path.join("export", "mnist.tflite"),
                    "--allow-host", "board.lan", "--allow-origin", "http://localhost:3000")
    yield server
    server.stop()


# --- who may use the server: guard.Access, without a server

@pytest.mark.quick
def test_the_host_names_answered_to_and_the_ones_refused():
    access = guard.Access()
    for host in ("127.0.0.1:8501", "localhost:8501", "LocalHost", "[::1]:8501", "localhost.:8501"):
        assert access.refusal("GET", {"host": host}) is None, host
    assert access.refusal("GET", {}) is None  # HTTP/1.0 without Host: no browser sends that
    refused = access.refusal("GET", {"host": "evil.example:8501"})
    assert refused.startswith("Host 'evil.example:8501': not a name this server answers to")
    assert refused.endswith("start it with --allow-host evil.example")
    assert access.refusal("GET", {"host": "127.0.0.1.evil.example"}) is not None
    allowed = guard.Access("127.0.0.1", allow_hosts=["Board.LAN"])
    assert allowed.refusal("POST", {"host": "board.lan:8501"}) is None
    assert allowed.refusal("POST", {"host": "other.lan:8501"}) is not None
    assert guard.Access(allow_hosts=["*"]).refusal("GET", {"host": "evil.example"}) is None


@pytest.mark.quick
def test_every_address_answers_to_the_machines_names_and_the_address_reached():
    import socket
    everywhere = guard.Access("0.0.0.0")
    assert everywhere.refusal("GET", {"host": f"{socket.gethostname()}:8501"}) is None
    assert everywhere.refusal("GET", {"host": "0.0.0.0:8501"}) is None
    reached = ("203.0.113.7", 8501)  # the address a phone connected to (TEST-NET-3: not this machine's)
    assert everywhere.refusal("GET", {"host": "203.0.113.7:8501"}, server=reached) is None
    assert everywhere.refusal("GET", {"host": "203.0.113.8:8501"}, server=reached) is not None
    assert guard.Access("::").hosts >= everywhere.hosts - {"0.0.0.0"}


@pytest.mark.quick
def test_a_post_from_another_sites_page_is_refused_and_one_from_the_page_itself_is_not():
    access, own = guard.Access(), {"host": "127.0.0.1:8501"}
    assert access.refusal("POST", {**own, "origin": "http://127.0.0.1:8501"}) is None
    assert access.refusal("POST", {"host": "localhost", "origin": "http://LOCALHOST:80"}) is None  # default port
    assert access.refusal("POST", own) is None  # curl, Python, TF Serving's clients: no Origin, no Referer
    assert access.refusal("POST", {**own, "referer": "http://127.0.0.1:8501/page"}) is None
    refused = access.refusal("POST", {**own, "origin": EVIL})
    assert refused == (f"Origin {EVIL}: a page of another site may not send POST requests here; to let it, "
                       f"start the server with --allow-origin {EVIL}")
    for headers in ({"origin": "null"}, {"origin": "https://127.0.0.1:8501"}, {"origin": "http://127.0.0.1:8502"},
                    {"referer": EVIL + "/page.html"}, {"origin": EVIL, "referer": "http://127.0.0.1:8501/"}):
        assert access.refusal("POST", {**own, **headers}) is not None, headers
    assert access.refusal("PUT", {**own, "origin": EVIL}) is not None
    assert access.refusal("OPTIONS", {**own, "origin": EVIL}) is not None
    assert access.refusal("GET", {**own, "origin": EVIL}) is None  # its answer unreadable there: no CORS header
    assert access.cors_origin({**own, "origin": EVIL}) is None


@pytest.mark.quick
def test_allow_origin_lets_a_site_in_with_cors():
    access = guard.Access(allow_origins=["http://localhost:3000/"])
    own = {"host": "127.0.0.1:8501"}
    assert access.refusal("POST", {**own, "origin": "http://LocalHost:3000"}) is None
    assert access.cors_origin({**own, "origin": "http://LocalHost:3000"}) == "http://LocalHost:3000"
    assert access.refusal("POST", {**own, "origin": "http://localhost:3001"}) is not None
    assert access.cors_origin({**own, "origin": "http://127.0.0.1:8501"}) is None  # the page itself: no CORS
    anyone = guard.Access(allow_origins=["*"])
    assert anyone.refusal("POST", {**own, "origin": EVIL}) is None
    assert anyone.cors_origin({**own, "origin": EVIL}) == "*"
    with pytest.raises(ValueError, match="not an origin"):
        guard.Access(allow_origins=["localhost:3000"])
    assert guard.origin_key("https://A.example/x?y") == "https://a.example:443" and guard.origin_key("null") is None


# --- what a predict may hold: serving.images_of, without a server

BAD_NUMBERS = {"NaN": "NaN, not a number", "Infinity": "Infinity, not a finite number",
               "-Infinity": "-Infinity, not a finite number", "1e39": "1e+39, past float32's range",
               "255": "255, outside [0, 1]", "-0.5": "-0.5, outside [0, 1]", "1.001": "1.001, outside [0, 1]"}


def body_with(text, columnar=False, row=2, column=5):
    """A predict body (JSON text) of 3 zero rows, `text` at (row, column), in the row or the columnar form."""
    rows = [["0"] * 784 for _ in range(3)]
    rows[row][column] = text
    values = "[" + ", ".join("[" + ", ".join(r) + "]" for r in rows) + "]"
    return '{"inputs": {"images": %s}}' % values if columnar else '{"instances": %s}' % values


@pytest.mark.quick
@pytest.mark.parametrize("columnar", [False, True], ids=["row", "columnar"])
@pytest.mark.parametrize("text", list(BAD_NUMBERS))
def test_a_number_outside_0_1_is_refused_naming_its_place(text, columnar):
    with pytest.raises(table.BoardError) as refused:
        serving.images_of(json.loads(body_with(text, columnar)))
    assert refused.value.status == 400
    assert str(refused.value) == (f"images: row 2, column 5 is {BAD_NUMBERS[text]}; "
                                  "pixels are in [0, 1]: divide 0-255 values by 255")


@pytest.mark.quick
def test_the_first_bad_number_is_named_and_0_and_1_are_pixels():
    rows = [[0.0] * 784, [1.0] * 784]
    rows[1][9], rows[1][3] = 2.0, float("nan")
    with pytest.raises(table.BoardError, match="row 1, column 3 is NaN"):
        serving.images_of({"instances": rows})
    images, _ = serving.images_of({"instances": [[0] * 784, [1] * 784]})
    assert images.dtype == np.float32 and images.min() == 0 and images.max() == 1


@pytest.mark.quick
@pytest.mark.parametrize("form", ["instances", "inputs"])
def test_an_empty_signature_name_is_the_default_and_another_is_refused_in_both_forms(form):
    images, _ = serving.images_of({"signature_name": "", form: [ZERO_ROW]})
    assert images.shape == (1, 784)
    images, _ = serving.images_of({"signature_name": "serving_default", form: [ZERO_ROW]})
    assert images.shape == (1, 784)
    with pytest.raises(table.BoardError, match='"predict" not found') as refused:
        serving.images_of({"signature_name": "predict", form: [ZERO_ROW]})
    assert refused.value.status == 400


@pytest.mark.quick
def test_long_requests_are_read_block_by_block_as_one_array():
    rows = np.random.default_rng(0).random((130, 784)).round(4)
    assert np.array_equal(serving.rows_array(rows.tolist()), rows)
    with pytest.raises(ValueError):
        serving.rows_array(rows.tolist() + [[0.5] * 3])  # ragged in the last block only


# --- the application itself, called in this process (ASGI): where the work runs, what an error answers

class Stand:
    """A predictor standing in for the network: float32 [n, 10] with digit 7 likeliest; `fail` makes it raise."""

    def __init__(self, fail=None):
        from mnistkit.networks import MLP
        self.network, self.source, self.fail = MLP, "stand/model-7", fail

    def predict(self, images):
        if self.fail:
            raise self.fail
        return np.tile(np.eye(10, dtype=np.float32)[7], (len(images), 1))


def call(app, method, path, body=b"", headers=()):
    """(status, JSON answer) of one request given to an ASGI app in this thread's own event loop."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1:8501"), *headers], "client": ("127.0.0.1", 50000),
             "server": ("127.0.0.1", 8501)}
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent = []

    async def receive():
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


@pytest.mark.quick
@pytest.mark.parametrize("form", ["checkpoint", "LiteRT"])
def test_a_large_predict_body_is_parsed_and_read_off_the_event_loop(monkeypatch, form):
    served = model.Model(Stand(), lambda path: None)
    served.form = form
    board = app.create_app(app.Served(served))
    threads = {}
    loads, images_of = json.loads, serving.images_of

    def recorded(name, function):
        def run(*args, **kwargs):
            threads.setdefault(name, threading.current_thread())  # the first: call() parses the answer too
            return function(*args, **kwargs)
        return run

    monkeypatch.setattr(table.json, "loads", recorded("loads", loads))
    monkeypatch.setattr(serving, "images_of", recorded("images_of", images_of))
    body = json.dumps({"instances": [[0.25] * 784] * 40}).encode()  # 160 kB: past LARGE_JSON
    assert len(body) > table.LARGE_JSON
    status, answer = call(board, "POST", "/v1/models/mnist:predict", body)
    assert status == 200 and [p["classes"] for p in answer["predictions"]] == [7] * 40
    assert set(threads) == {"loads", "images_of"}
    assert threads["loads"] is not threading.current_thread()  # call() runs the event loop on this thread
    assert threads["images_of"] is not threading.current_thread()


@pytest.mark.quick
def test_an_unexpected_error_is_a_json_500_and_one_line_on_stderr(capsys):
    board = app.create_app(app.Served(model.Model(Stand(fail=RuntimeError("lost the weights\nsecond line")),
                                                  lambda path: None)))
    status, answer = call(board, "POST", "/v1/models/mnist:predict", json.dumps({"instances": [ZERO_ROW]}).encode())
    assert status == 500
    assert answer == {"error": "POST /v1/models/mnist:predict: internal error (RuntimeError: lost the weights "
                               "second line)"}
    err = capsys.readouterr().err
    assert err == "error: POST /v1/models/mnist:predict: RuntimeError: lost the weights second line\n"


# --- through HTTP, against the app as a user runs it

def test_a_request_naming_another_host_is_refused_with_403(tflite_server):
    for path in ("/", "/board/model", "/v1/models/mnist"):
        status, headers, body = raw_request(tflite_server.url, "GET", path, headers={
            "Host": "evil.example:{}".format(host_and_port(tflite_server.url)[1])})
        assert status == 403 and headers["content-type"] == "application/json", path
        error = json.loads(body)["error"]
        assert error.startswith("Host 'evil.example:") and "--allow-host evil.example" in error
    status, _, body = raw_request(tflite_server.url, "GET", "/board/model", headers={"Host": "LOCALHOST"})
    assert status == 200 and json.loads(body)["name"] == "mnist"


def test_a_post_from_another_sites_page_is_refused_and_curls_is_not(tflite_server):
    png = png_bytes(drawn(3))
    predict = json.dumps({"instances": [ZERO_ROW]}).encode()
    for path, body in (("/board/predict", png), ("/v1/models/mnist:predict", predict)):
        for foreign in ({"Origin": EVIL}, {"Origin": "null"}, {"Referer": EVIL + "/draw.html"}):
            status, _, answer = raw_request(tflite_server.url, "POST", path, body,
                                            {"Content-Type": "text/plain", **foreign})
            assert status == 403 and "a page of another site may not send POST requests here" in \
                json.loads(answer)["error"]
        status, headers, answer = raw_request(tflite_server.url, "POST", path, body, {"Content-Type": "text/plain"})
        assert status == 200 and "access-control-allow-origin" not in headers, answer
        own = tflite_server.url.rstrip("/")
        assert raw_request(tflite_server.url, "POST", path, body, {"Origin": own})[0] == 200


def test_allow_host_and_allow_origin_let_them_in_with_cors(open_server):
    url, port = open_server.url, host_and_port(open_server.url)[1]
    status, _, _ = raw_request(url, "GET", "/board/model", headers={"Host": f"board.lan:{port}"})
    assert status == 200
    assert raw_request(url, "GET", "/board/model", headers={"Host": f"other.lan:{port}"})[0] == 403
    site = "http://localhost:3000"
    body = json.dumps({"instances": [ZERO_ROW]}).encode()
    status, headers, answer = raw_request(url, "POST", "/v1/models/mnist:predict", body,
                                          {"Origin": site, "Content-Type": "application/json"})
    assert status == 200 and headers["access-control-allow-origin"] == site and "Origin" in headers["vary"]
    assert len(json.loads(answer)["predictions"]) == 1
    status, headers, answer = raw_request(url, "OPTIONS", "/board/predict", headers={
        "Origin": site, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-filename"})
    assert status == 204 and answer == b"" and headers["access-control-allow-origin"] == site
    assert headers["access-control-allow-methods"] == "POST, OPTIONS"  # the methods of the path's routes
    assert headers["access-control-allow-headers"] == "Content-Type, X-Filename"
    status, headers, _ = raw_request(url, "GET", "/board/model", headers={"Origin": site})
    assert status == 200 and headers["access-control-allow-origin"] == site
    status, headers, answer = raw_request(url, "OPTIONS", "/board/predict", headers={
        "Origin": EVIL, "Access-Control-Request-Method": "POST"})
    assert status == 403 and "access-control-allow-origin" not in headers and "--allow-origin" in answer.decode()


@pytest.mark.parametrize("columnar", [False, True], ids=["row", "columnar"])
def test_nan_infinities_and_float32_overflow_are_400_not_500(tflite_server, columnar):
    for text, says in list(BAD_NUMBERS.items())[:4]:
        status, headers, answer = raw_request(tflite_server.url, "POST", "/v1/models/mnist:predict",
                                              body_with(text, columnar).encode())
        assert status == 400 and headers["content-type"] == "application/json", (text, answer[:200])
        assert json.loads(answer)["error"].startswith(f"images: row 2, column 5 is {says}; pixels are in [0, 1]")
    assert "Traceback" not in tflite_server.stderr()


@pytest.mark.parametrize("form", ["instances", "inputs"])
def test_an_empty_signature_name_is_served_and_a_wrong_one_refused_over_http(tflite_server, form):
    url = tflite_server.url + "v1/models/mnist:predict"
    status, default = request(url, {form: [ZERO_ROW]})
    assert status == 200 and request(url, {"signature_name": "", form: [ZERO_ROW]}) == (200, default)
    status, answer = request(url, {"signature_name": "classify", form: [ZERO_ROW]})
    assert status == 400 and '"classify" not found' in answer["error"]


STATUSES = [  # (method, path, status): TF Serving's for its API (http_rest_api_handler), ours for the page's
    ("GET", "/v1/models/mnist:predict", 400), ("PUT", "/v1/models/mnist:predict", 400),
    ("POST", "/v1/models/mnist", 400), ("DELETE", "/v1/models/mnist", 400), ("POST", "/v1/models/mnist/metadata", 400),
    ("GET", "/v1/models", 400), ("GET", "/v1/models/", 400), ("POST", "/v1/models", 400),
    ("GET", "/v1/models/mnist/versions/x", 400), ("POST", "/v1/models/mnist/versions/x:predict", 400),
    ("GET", "/v1/models/mnist/labels/stable", 400), ("POST", "/v1/models/mnist/labels/stable:predict", 400),
    ("POST", "/v1/models/mnist:classify", 400), ("POST", "/v1/models/mnist:regress", 400),
    ("GET", "/v1/nothing", 400),
    ("GET", "/v1/models/other", 404), ("POST", "/v1/models/other:predict", 404),
    ("GET", "/v1/models/mnist/versions/2", 404), ("POST", "/v1/models/mnist/versions/2:predict", 404),
    ("GET", "/v1/models/mnist/versions/1", 200), ("GET", "/V1/MODELS/mnist", 200),
    ("GET", "/v1/models/mnist/METADATA", 200), ("POST", "/V1/Models/mnist:PREDICT", 200),
    ("POST", "/v1/models/mnist/versions/1:predict", 200),
    ("GET", "/board/predict", 405), ("POST", "/board/model", 405), ("GET", "/nowhere", 404),
]


@pytest.mark.parametrize("method, path, status", STATUSES, ids=[f"{m} {p}" for m, p, _ in STATUSES])
def test_each_path_and_method_gets_its_status(tflite_server, method, path, status):
    body = json.dumps({"instances": [ZERO_ROW]}).encode() if method in ("POST", "PUT") else None
    got, headers, answer = raw_request(tflite_server.url, method, path, body)
    assert got == status and headers["content-type"] == "application/json", answer[:300]
    assert ("predictions" if status == 200 and method == "POST" else "error" if status != 200 else
            "model_version_status" if not path.lower().endswith("metadata") else "metadata") in json.loads(answer)


@pytest.mark.parametrize("path", ["/board/predict", "/v1/models/mnist:predict"])
def test_a_chunked_body_past_the_limit_is_413(tflite_server, path):
    def blocks(size, block=1 << 20):
        for start in range(0, size, block):
            yield b"0" * min(block, size - start)

    connection = http.client.HTTPConnection(*host_and_port(tflite_server.url), timeout=wait_limit(120))
    try:
        connection.request("POST", path, body=blocks(table.MAX_BODY + 1), encode_chunked=True)
        answer = connection.getresponse()
        status, error = answer.status, json.loads(answer.read())["error"]
    finally:
        connection.close()
    assert status == 413 and f"limit of {table.MAX_BODY:,} bytes" in error
    connection = http.client.HTTPConnection(*host_and_port(tflite_server.url), timeout=wait_limit(60))
    try:  # within the limit, chunked works
        body = json.dumps({"instances": [ZERO_ROW]}).encode()
        connection.request("POST", "/v1/models/mnist:predict", body=iter([body[:100], body[100:]]),
                           encode_chunked=True)
        assert connection.getresponse().status == 200
    finally:
        connection.close()


# not quick: over 2 s a run (make test runs it), so make test-quick keeps under a minute
def test_the_guard_flags_are_in_help_and_a_wrong_origin_is_a_usage_error(tmp_path):
    app = os.path.join(ROOT, "mnist_app.py")
    shown = subprocess.run([sys.executable, app, "--help"], capture_output=True, text=True,
                           timeout=wait_limit(60)).stdout
    assert "--allow-host NAME" in shown and "--allow-origin ORIGIN" in shown and "unsafe" in shown
    result = subprocess.run([sys.executable, app, "--serve", "--allow-origin", "localhost:3000"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=wait_limit(60))
    assert result.returncode == 2 and "--allow-origin localhost:3000: give an origin" in result.stderr
