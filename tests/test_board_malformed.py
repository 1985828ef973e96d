"""Requests h11 cannot read, on a real server (mnistkit.listener's Refusing): the board's JSON form of every refusal.

The server is test_serving9's (a stand-in model, in a subprocess) with its stderr in a file; requests are raw bytes
on a socket. Before the fix each got uvicorn's plain-text "Invalid HTTP request received." (a malformed chunk after
the request had begun: a chunked 400, and a traceback when its handler answered after it).
"""
import json
import socket
import subprocess
import sys

import pytest

from conftest import ROOT, ended, read_line, wait_limit
from mnistkit import listener
from test_board import ADDRESS
from test_board_connections import host_port
from test_serving9 import ROW, SERVE, exchange

HOST = b"Host: 127.0.0.1\r\n"
PREDICT = b"POST /v1/models/mnist:predict HTTP/1.1\r\n" + HOST
MALFORMED = {  # request: (status, its refusal's line after "malformed HTTP request: ")
    "not-http": (b"HELLO THERE\r\n\r\n", 400, "illegal request line: 'HELLO THERE'"),
    "no-colon": (b"GET /v1/models/mnist HTTP/1.1\r\n" + HOST + b"NoColonHere\r\n\r\n", 400,
                 "illegal header line: 'NoColonHere'"),
    "no-host": (b"GET /v1/models/mnist HTTP/1.1\r\n\r\n", 400, "Missing mandatory Host: header"),
    "bad-length": (PREDICT + b"Content-Length: 12x\r\n\r\n", 400, "bad Content-Length"),
    "two-lengths": (PREDICT + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400,
                    "conflicting Content-Length headers"),
    "bad-chunk": (PREDICT + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "illegal chunk header: 'zz\\r\\n'"),
    "bad-chunk-404": (b"POST /nowhere HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n",
                      400, "illegal chunk header: 'zz\\r\\n'"),  # its handler answers 404 after the refusal
    "gzip-framing": (PREDICT + b"Transfer-Encoding: gzip\r\n\r\n", 501, "Only Transfer-Encoding: chunked is supported"),
    "oversize-head": (b"GET /v1/models/mnist HTTP/1.1\r\n" + HOST + b"X-Big: " + b"a" * 2 ** 20, 431,
                      f"its head (request line and headers) is over {listener.HEAD_LIMIT:,} bytes"),
}


@pytest.fixture(scope="module")
def malformed_server(tmp_path_factory):
    """((host, port), stderr's path) of test_serving9's board, its stderr in a file."""
    folder = tmp_path_factory.mktemp("malformed")
    with open(folder / "stderr", "w") as err:
        process = subprocess.Popen([sys.executable, "-c", SERVE.format(root=ROOT, idle=1.0, big=10)], cwd=folder,
                                   stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        line = read_line(process, "the server's address", 60)
        assert ADDRESS.search(line), (line, (folder / "stderr").read_text())
        yield host_port(ADDRESS.search(line).group(1)), folder / "stderr"
    finally:
        process.terminate()
        ended(process, "the server after SIGTERM", 60)


def refusal_of(answer):
    """(status, lower-case headers, JSON body) of a raw answer holding one response (an AssertionError if more)."""
    assert answer.count(b"HTTP/1.1 ") == 1, answer
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    assert int(headers["content-length"]) == len(body), answer
    return int(lines[0].split()[1]), headers, json.loads(body)


@pytest.mark.quick
@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_request_h11_cannot_read_is_a_json_error_and_its_connection_closed(malformed_server, kind):
    address, stderr = malformed_server
    request, status, line = MALFORMED[kind]
    answer = exchange(address, request)  # read until the server closes: an AssertionError if it never does
    assert refusal_of(answer) == (status, {"content-type": "application/json", "connection": "close",
                                           "content-length": str(len(answer.partition(b"\r\n\r\n")[2]))},
                                  {"error": "malformed HTTP request: " + line})
    assert exchange(address, PREDICT + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(ROW) + ROW
                    ).startswith(b"HTTP/1.1 200 ")  # the server goes on; what ran meanwhile has logged
    assert "Traceback" not in stderr.read_text()


@pytest.mark.quick
def test_what_follows_a_refused_request_is_dropped_unanswered(malformed_server):
    address, _ = malformed_server
    with socket.create_connection(address, timeout=wait_limit(30)) as connection:
        connection.sendall(b"HELLO THERE\r\n\r\n")
        answer = connection.recv(65536)
        while b"}" not in answer and (chunk := connection.recv(65536)):  # the whole refusal
            answer += chunk
        connection.sendall(b"GET /v1/models/mnist HTTP/1.1\r\n" + HOST + b"\r\n" + b"more garbage\r\n" * 1000)
        while chunk := connection.recv(65536):
            answer += chunk
    assert refusal_of(answer)[0] == 400  # one answer, then the end of the connection
