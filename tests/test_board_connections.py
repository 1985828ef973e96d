"""The drawing board's connections (mnistkit.listener): silent clients, stop signals, a phone's address.

Servers are the app itself, as in test_board.py; the one under a flood of silent connections runs with its
open-file limit lowered first (resource.setrlimit in a `python -c` wrapper that then calls mnist_app.main).
"""
import http.client
import os
import select
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT, ended, read_line, wait_limit
from mnistkit import listener
from test_board import ADDRESS, START_TIMEOUT, Server, address_line, request

LOWERED = ("import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, "
           "resource.getrlimit(resource.RLIMIT_NOFILE)[1])); sys.path.insert(0, {root!r}); "
           "import mnist_app; sys.exit(mnist_app.main(sys.argv[1:]))")
STALLED_UPLOAD = b"POST /board/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\nsome bytes"
TFLITE = os.path.join("export", "mnist.tflite")


class LimitedServer(Server):
    """Server, with the process's open-file limit (soft RLIMIT_NOFILE) lowered to `limit` before it starts."""

    def __init__(self, cwd, limit, *args):
        self.stderr_path = os.path.join(cwd, f"serve-{os.getpid()}-{time.monotonic_ns()}.stderr")
        self.stderr_file = open(self.stderr_path, "w")
        self.process = subprocess.Popen([sys.executable, "-c", LOWERED.format(limit=limit, root=ROOT), "--serve",
                                         "--port", "0", *args], cwd=cwd, stdout=subprocess.PIPE,
                                        stderr=self.stderr_file, text=True)
        self.first_line = address_line(self.process)
        found = ADDRESS.search(self.first_line)
        if found is None:
            self.process.wait(wait_limit(START_TIMEOUT))
            raise AssertionError(f"no address printed (within {wait_limit(START_TIMEOUT):.0f} s): {self.first_line!r}; "
                                 f"stderr: {self.stderr()}")
        self.url = found.group(1)


def host_port(url):
    """('127.0.0.1', 8501) of http://127.0.0.1:8501/."""
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    return host, int(port)


def stalled_upload(url):
    """A connection that sent a request's headers (a body of 1,000,000 bytes) and 10 bytes of it, then nothing."""
    connection = socket.create_connection(host_port(url), timeout=wait_limit(60))
    connection.sendall(STALLED_UPLOAD)
    return connection


@pytest.mark.skipif(os.name == "nt", reason="no RLIMIT_NOFILE on Windows")
def test_silent_connections_past_the_open_file_limit_leave_room_for_a_client(exported_workdir):
    server = LimitedServer(exported_workdir, 256, "--model-dir", TFLITE)
    silent = []
    try:
        assert request(server.url + "v1/models/mnist")[0] == 200  # uvicorn listens: its queue holds them all
        for _ in range(300):  # more than the server's 256 descriptors can hold
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(host_port(server.url))
            silent.append(sock)
        for sock in silent:  # each one connected (the kernel's handshake), then nothing sent
            assert select.select([], [sock], [], wait_limit(60))[1]
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
        time.sleep(1)  # the server accepts them
        status, versions = request(server.url + "v1/models/mnist")  # urllib's timeout: wait_limit(60) s
        assert status == 200 and versions["model_version_status"][0]["state"] == "AVAILABLE"
    finally:
        for sock in silent:
            sock.close()
        status = server.stop()
    err = server.stderr()
    about_descriptors = [line for line in err.splitlines()
                         if "open file" in line or "out of system resource" in line or "connections" in line]
    assert 1 <= len(about_descriptors) < 5 and "Traceback" not in err and status == 130, err[:2000]
    assert about_descriptors[0].startswith("warning: ") and "ulimit -n" in about_descriptors[0]


def test_a_connection_without_a_request_head_is_closed(exported_workdir):
    server = Server(exported_workdir, "--model-dir", TFLITE)
    try:
        silent = socket.create_connection(host_port(server.url), timeout=wait_limit(60))
        partial = socket.create_connection(host_port(server.url), timeout=wait_limit(60))
        partial.sendall(b"GET /board/model HTTP/1.1\r\nHost: board\r\n")  # and never the blank line
        kept = http.client.HTTPConnection(*host_port(server.url), timeout=wait_limit(60))
        kept.request("GET", "/board/model")
        assert kept.getresponse().read()  # kept alive; then the start of a second request, never finished
        kept.sock.sendall(b"GET /board/model HTTP/1.1\r\n")
        for connection in (silent, partial, kept.sock):  # socket.timeout after wait_limit(60) s if not closed:
            assert connection.recv(100) == b""  # closed by the server after listener.HEAD_TIMEOUT
        assert request(server.url + "board/model")[0] == 200  # the server goes on
    finally:
        assert server.stop() == 130
    assert "Traceback" not in server.stderr()


@pytest.mark.quick
def test_a_connection_past_the_ceiling_closes_the_oldest_waiting_one_or_is_refused():
    class Transport:
        closing = False

        def is_closing(self):
            return self.closing

        def abort(self):
            self.closing = True

    class Waiting:
        transport = None

        def __init__(self):
            self.transport = Transport()

    room = listener.Room()
    room.ceiling = 0  # every descriptor is past it
    older, newer = Waiting(), Waiting()
    room.waiting.update({older: None, newer: None})
    with listener.Listener.of(listener.bind("127.0.0.1", 0), room) as listening:
        with socket.create_connection(listening.getsockname(), timeout=wait_limit(60)):
            accepted, _ = listening.accept()  # room made: the oldest waiting connection is closed
            accepted.close()
        assert older.transport.closing and not newer.transport.closing and list(room.waiting) == [newer]
        newer.transport.closing = True  # busy: nobody waits any more
        with socket.create_connection(listening.getsockname(), timeout=wait_limit(60)) as refused:
            with pytest.raises(BlockingIOError):
                listening.accept()
            answer = refused.recv(1000)
    assert answer.startswith(b"HTTP/1.1 503 ") and answer == listener.REFUSAL, answer
    assert room.warned


@pytest.mark.quick
def test_the_ceiling_is_the_open_file_limit_less_the_reserve_and_at_least_half_of_it():
    assert listener.Room(soft=256).ceiling == 256 - listener.RESERVE == 192
    assert listener.Room(soft=100).ceiling == 50  # 100 - RESERVE would leave 36
    assert listener.Room(soft=10 ** 6).ceiling == listener.MAX_CONNECTIONS


@pytest.mark.quick
def test_a_connection_whose_descriptor_reaches_the_ceiling_is_past_it():
    room = listener.Room()
    with listener.Listener.of(listener.bind("127.0.0.1", 0), room) as listening:
        for past in (False, True):
            with socket.create_connection(listening.getsockname(), timeout=wait_limit(60)) as client:
                free = os.dup(client.fileno())  # the lowest free descriptor: the one the next accept takes
                os.close(free)
                room.ceiling = free if past else free + 1
                if past:  # nobody waits to be closed: refused with 503
                    with pytest.raises(BlockingIOError):
                        listening.accept()
                    assert client.recv(1000).startswith(b"HTTP/1.1 503 ")
                else:
                    accepted, _ = listening.accept()
                    assert accepted.fileno() == free and not room.warned
                    accepted.close()
    assert room.warned


HELD = r"""
import sys, threading
sys.path.insert(0, {root!r})
import numpy as np
from mnistkit import cli
from mnistkit.board import app, model, table
from mnistkit.networks import MLP

class Held:
    network, source = MLP, "held/mnist_model-1"

    def predict(self, rows):
        print("predicting", len(rows), flush=True)
        threading.Event().wait()  # never answers: the grace must cut it

big = table.Route("GET", "/big", lambda call: table.Reply(b"x" * {big}, media_type="text/plain"), runs=table.LOOP)
served = app.Served(model.Model(Held(), None))
sys.exit(cli.exit_status(lambda: app.serve(served, port=0, grace={grace}, routes=app.ROUTES + (big,))))
"""


def test_the_grace_cuts_a_large_predict_in_flight_and_an_answer_nobody_reads(tmp_path):
    """A server whose predictions never end and a client that reads none of a 64 MB answer: one SIGTERM ends it
    within its short grace, and its last line says what was cut. (Before: close() waited for the unread answer and
    the abort was never scheduled; a thread's predict kept the process.)"""
    grace = 0.2
    code = HELD.format(root=ROOT, big=64 * 2 ** 20, grace=grace)
    process = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        url = ADDRESS.search(read_line(process, "the server's address")).group(1)
        rows = ",".join(["[" + ",".join(["0.5"] * 784) + "]"] * 2000)
        predict = socket.create_connection(host_port(url), timeout=wait_limit(60))
        body = ('{"instances": [%s]}' % rows).encode()  # about 3 MB
        predict.sendall(b"POST /v1/models/mnist:predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n"
                        b"\r\n" % len(body) + body)
        # parsed; its first row (rows run alone) in the model, for ever
        assert read_line(process, "predicting 1") == "predicting 1\n"
        unread = socket.socket()
        unread.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a client that takes a little, then nothing
        unread.connect(host_port(url))
        unread.sendall(b"GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert select.select([unread], [], [], wait_limit(60))[0]  # the answer has begun: the rest waits in the server
        process.send_signal(signal.SIGTERM)
        out, err = ended(process, "the server after SIGTERM", 60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert err.strip().splitlines() == [f"SIGTERM: stopped: 2 requests still running were cut after {grace:g} s"]
    predict.close()
    unread.close()


@pytest.mark.parametrize("signals", [[signal.SIGTERM], [signal.SIGINT, signal.SIGINT]], ids=["sigterm", "ctrl-c-twice"])
def test_a_stalled_upload_does_not_keep_the_server_up(exported_workdir, signals):
    server = Server(exported_workdir, "--model-dir", TFLITE, "--shutdown-grace", "0.5")
    upload = stalled_upload(server.url)
    try:
        assert request(server.url + "v1/models/mnist")[0] == 200  # the server has read the stalled headers
        for signum in signals[:-1]:
            server.process.send_signal(signum)
            time.sleep(0.5)
        status = server.stop(signals[-1])  # AssertionError after wait_limit(60) s if it stays up
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
        upload.close()
    err = server.stderr()
    # One signal: the server's own exit status 128 + N. A second one ends it at once: by that status, or, when it
    # came as the server was already ending (a loaded machine), by the signal itself (-N; a shell says 128 + N).
    allowed = (128 + signals[-1],) if len(signals) == 1 else (128 + signals[-1], -signals[-1])
    assert status in allowed and "Traceback" not in err, err
    cut = ": 1 request still running was cut after 0.5 s" if len(signals) == 1 else ""
    assert err.strip().splitlines()[-1] == f"{signal.Signals(signals[-1]).name}: stopped{cut}"


@pytest.mark.quick
def test_a_server_on_every_address_gives_the_addresses_a_phone_opens():
    with listener.bind("0.0.0.0", 0) as every:
        port = every.getsockname()[1]
        here, network = listener.addresses(every, own=lambda: ["192.168.1.20", "10.0.0.7"])
        assert (here, network) == (f"http://127.0.0.1:{port}/", [f"http://192.168.1.20:{port}/",
                                                                 f"http://10.0.0.7:{port}/"])
        for host in listener.network_addresses():  # this computer's own: each one reaches the server
            assert host.count(".") == 3 and not host.startswith("127.")
            socket.create_connection((host, port), timeout=wait_limit(10)).close()
    with listener.bind("127.0.0.1", 0) as one:
        assert listener.addresses(one) == (f"http://127.0.0.1:{one.getsockname()[1]}/", [])


def test_the_served_lines_for_every_address_name_no_0_0_0_0(exported_workdir):
    server = Server(exported_workdir, "--model-dir", TFLITE, "--host", "0.0.0.0")
    try:
        network = [f"http://{host}:{host_port(server.url)[1]}/" for host in listener.network_addresses()]
        for url in [server.url, *network]:
            assert request(url + "v1/models/mnist")[0] == 200
    finally:
        server.process.send_signal(signal.SIGINT)
        server.process.wait(wait_limit(60))
        rest = server.process.stdout.read().splitlines()  # the lines after the first (some already in its buffer)
        assert server.stop() == 130
    assert server.url.startswith("http://127.0.0.1:") and "0.0.0.0" not in server.first_line + rest[0]
    assert rest[0].split(": ", 1)[1].split() == network if network else "no network address" in rest[0]
