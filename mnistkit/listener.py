"""The drawing board's sockets and connections: the listening socket, uvicorn's h11 protocol, a bounded shutdown.

Used by mnistkit.board.app.serve: bind() makes the listening socket and
run(app, sock, grace) serves an ASGI app on it until Ctrl-C or SIGTERM.
What it adds to uvicorn:

- Connection (connection_class): uvicorn's H11Protocol, closed when no
  complete request head arrives within HEAD_TIMEOUT of connecting or of
  its last answer. uvicorn times out only a kept-alive connection after an
  answer (timeout_keep_alive), and its limit_concurrency answers 503 only
  once a request head arrives: clients that connect and send nothing hold
  a descriptor each, forever. A client that takes no byte of its answer for
  SEND_TIMEOUT seconds has its connection aborted (libevent, TF Serving's
  HTTP server, gives up a write after 50 s): a close() would wait for it
  forever, the answer held in memory meanwhile. A request h11 cannot read
  (no HTTP request line, a header line without a colon, a head still
  unfinished past HEAD_LIMIT bytes, a bad Content-Length, a malformed
  chunk) is answered as every other refusal, {"error": "malformed HTTP
  request: <h11's reason>"} with connection: close (uvicorn: a plain-text
  "Invalid HTTP request received."), and its connection closed once the
  client has it.
- Listener: the listening socket. asyncio's selector event loop calls its
  accept(); when connections reach the Room's ceiling of descriptors (the
  open-file limit less RESERVE), the connection that has waited longest
  for a request is closed to make room, or, when every one is busy, the
  new one is refused with 503. Out of descriptors, it says so once.
- The shutdown: a first Ctrl-C or SIGTERM stops accepting, closes the idle
  connections and gives the requests under way `grace` seconds; then each
  connection still open is aborted, whatever its client does (a request
  still running, an upload that stalled, an answer its client does not
  read: close() would wait for that client), its request's task is
  cancelled (uvicorn's timeout_graceful_shutdown), and run() says how many
  requests were cut. A second signal ends the process at once.

Other event loops (uvloop, Windows' proactor) accept by themselves: there,
the timeouts and the shutdown still hold, not the ceiling.
"""
import asyncio
import collections
import contextlib
import errno
import functools
import http
import json
import logging
import signal
import socket
import sys
import threading

import tf_compat

from .errors import STOP_SIGNALS, DataError, off_a_hung_up_terminal

HEAD_TIMEOUT = 5.0  # seconds a connection may take to send a request head, first or next
SEND_TIMEOUT = 30.0  # seconds a client may take no byte of its answer before its connection is aborted
SHUTDOWN_GRACE = 3.0  # seconds a request under way may take to end after Ctrl-C or SIGTERM (--shutdown-grace)
RESERVE = 64  # descriptors kept from connections: the model's files, threads, the page's uploads
MAX_CONNECTIONS = 1000  # connections at most, whatever the open-file limit
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
HEAD_LIMIT = 16 * 1024  # bytes of an unfinished request head (line and headers) h11 holds: past them, 431
QUOTED = 60  # characters of a malformed line quoted in its refusal
FULL_WARNING = ("warning: connections have taken the {ceiling} open files this server gives them (of {soft}: "
                "`ulimit -n`); the ones that sent no request are closed to let others in")
LOOPBACK = ("127.0.0.1", "localhost", "::1")  # this computer's own names: a server there is not open to others
EVERY_INTERFACE = ("0.0.0.0", "::", "")  # a host to listen on that is every interface of the machine
ROUTE_PROBES = ("10.254.254.254", "172.31.254.254", "192.168.254.254")  # private: routes to each network's interface


def refusal(status, message):
    """The whole answer (bytes) of a refusal the HTTP layer sends itself: HTTP `status` with the board's JSON form
    of every error, {"error": message}, and connection: close."""
    body = json.dumps({"error": message}, ensure_ascii=True, separators=(",", ":")).encode()
    return (f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
            f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n").encode() + body


REFUSAL = refusal(503, "too many connections to this server; try again in a moment")  # past the Room's ceiling


def open_file_limit():
    """The process's soft RLIMIT_NOFILE (int), or None where there is none or it is unlimited."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


class Room:
    """The connections of one server: the ones waiting for a request (oldest first), and how many may be open.

    ceiling: descriptor numbers at or past it are not for connections, as
    a descriptor is the lowest free number: min(soft limit - RESERVE,
    MAX_CONNECTIONS), at least half the soft limit.
    """

    def __init__(self, soft=None):
        self.soft = soft or open_file_limit()
        self.ceiling = MAX_CONNECTIONS if self.soft is None else min(max(self.soft - RESERVE, self.soft // 2),
                                                                      MAX_CONNECTIONS)
        self.waiting = collections.OrderedDict()  # Connection -> None, in the order they began to wait
        self.warned = False
        self.cut = 0  # requests the shutdown's grace cut (Connection.cut)

    def make_room(self):
        """Close the connection that has waited longest for a request; False when none waits."""
        while self.waiting:
            connection, _ = self.waiting.popitem(last=False)
            if not connection.transport.is_closing():
                connection.transport.abort()  # its descriptor is free on the event loop's next turn
                return True
        return False

    def warn(self):
        """One line on stderr, the first time connections fill the room or descriptors run out."""
        if not self.warned:
            self.warned = True
            print(FULL_WARNING.format(ceiling=self.ceiling, soft=self.soft or "no limit"), file=sys.stderr, flush=True)

    def exception_handler(self, loop, context):
        """asyncio's handler: its `socket.accept() out of system resource` (once a second, with a traceback) is warn()."""
        if isinstance(context.get("exception"), OSError) and context["exception"].errno in OUT_OF_DESCRIPTORS:
            self.warn()
        else:
            loop.default_exception_handler(context)


class Listener(socket.socket):
    """A listening socket whose accept() keeps the connections within `room` (see the module's docstring)."""

    room = None
    resting = False  # out of descriptors with nothing to close: no more accepts on this turn of the loop

    @classmethod
    def of(cls, sock, room):
        """The Listener for a bound, listening socket, which it takes over (sock is detached)."""
        listener = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        listener.room = room
        return listener

    def accept(self):
        """A new connection, as socket.accept(); BlockingIOError (asyncio: none now, try on the next turn) after
        closing a waiting connection or refusing this one with 503 when the room is full."""
        if self.resting:
            raise BlockingIOError(errno.EAGAIN, "resting")
        try:
            conn, addr = super().accept()
        except OSError as e:
            if e.errno not in OUT_OF_DESCRIPTORS:
                raise
            self.room.warn()
            if self.room.make_room():
                raise BlockingIOError(errno.EAGAIN, "making room") from None
            self.resting = True  # asyncio logs the error once and waits a second; its loop must stop here
            asyncio.get_running_loop().call_soon(setattr, self, "resting", False)
            raise
        if conn.fileno() >= self.room.ceiling:
            self.room.warn()
            if not self.room.make_room():
                with conn:
                    conn.setblocking(False)
                    conn.send(REFUSAL)
                raise BlockingIOError(errno.EAGAIN, "refused")
        return conn, addr


class Quiet(logging.Filter):
    """Drops what uvicorn logs of the requests the shutdown cuts (run() says how many): its count of the tasks it
    cancels, and each cancelled task's traceback."""

    def filter(self, record):
        cancelled = record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError)
        return not (cancelled or record.getMessage().startswith("Cancel "))


class SendWatch:
    """A protocol's part that bounds how long its client may take no byte of an answer: SEND_TIMEOUT seconds, then
    the connection is aborted (a close() would wait for the client forever, the answer held in memory). For an
    asyncio protocol with `loop` and `transport` (uvicorn's H11Protocol), listed before it as a base class."""
    sending = None  # the timer that checks an answer's bytes are being taken (watch_sending)
    lost = False  # set by the protocol once its connection is lost

    def idle(self):
        """No request head came in time: close the connection, once its client has taken the last answer."""
        if self.transport.get_write_buffer_size():
            self.watch_sending()  # close() waits for the unsent bytes: no longer than the client takes them
        self.transport.close()

    def pause_writing(self):
        super().pause_writing()  # asyncio: the answer's bytes past its buffer's high-water mark
        self.watch_sending()

    def watch_sending(self):
        """Abort the connection unless its client takes some of the unsent answer within SEND_TIMEOUT."""
        if self.sending is None and not self.lost:
            unsent = self.transport.get_write_buffer_size()
            self.sending = self.loop.call_later(SEND_TIMEOUT, self.check_sending, unsent)

    def check_sending(self, unsent):
        self.sending = None
        left = self.transport.get_write_buffer_size()
        if self.lost or not left:
            return
        if left >= unsent:  # not a byte taken
            self.transport.abort()
        else:
            self.watch_sending()

    def stop_watching(self):
        if self.sending is not None:
            self.sending.cancel()
            self.sending = None


@functools.cache
def reading():
    """h11.Connection keeping, as .error, the RemoteProtocolError of a request it cannot read (uvicorn catches it and
    says only "Invalid HTTP request received."). A function: h11 is imported when a server runs."""
    import h11

    class Reading(h11.Connection):
        error = None

        def next_event(self):
            try:
                return super().next_event()
            except h11.RemoteProtocolError as e:
                self.error = e
                raise

    return Reading


def malformed(error):
    """(status, one line) of the refusal of a request h11 could not read: `error`, its RemoteProtocolError (None:
    400), with the line it quotes as sent (`bytearray(b'HELLO')`: 'HELLO'), cut to QUOTED characters."""
    if error is None:
        return 400, "malformed HTTP request"
    if error.error_status_hint == 431:
        return 431, f"malformed HTTP request: its head (request line and headers) is over {HEAD_LIMIT:,} bytes"
    words, quoting, sent = str(error).partition(": bytearray(b")
    sent = sent[1:-2]  # inside repr's quotes
    sent = sent[:QUOTED] + "..." if len(sent) > QUOTED else sent
    return error.error_status_hint, f"malformed HTTP request: {words}" + (f": '{sent}'" if quoting else "")


class Refusing:
    """A protocol's part that answers a request h11 cannot read as every other refusal: its status (400; 431 a head
    unfinished past HEAD_LIMIT; 501 a Transfer-Encoding h11 lacks) and {"error": "malformed HTTP request:
    <reason>"}, with connection: close, then the write side shut. A request whose answer is half sent is cut instead. Its handler,
    if one started, is told the client left, and sends nothing. For uvicorn's H11Protocol, listed before it."""
    refused = False  # set once a refusal is sent: what else comes is read and dropped (data_received)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        import h11
        self.conn = reading()(h11.SERVER, HEAD_LIMIT)

    def send_400_response(self, msg):  # uvicorn's, on h11's RemoteProtocolError; `msg` is its one fixed line
        self.refused = True
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # its handler's receive() says http.disconnect, its send() sends nothing
            cycle.message_event.set()
            if cycle.response_started:
                self.transport.close()
                return
        self.transport.write(refusal(*malformed(self.conn.error)))
        if self.transport.can_write_eof():
            self.transport.write_eof()  # closing at once could turn the client's unread bytes into a reset


def connection_class(room, grace):
    """uvicorn's H11Protocol with the timeouts of the module's docstring, its waiting connections kept in `room`;
    `grace`: the seconds a connection may stay after the shutdown began.

    A subclass, since uvicorn has no timeout for a request head, nor one
    for a request under way at shutdown (its timeout_graceful_shutdown
    cancels the request's task, which it logs with a traceback).
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Connection(SendWatch, Refusing, H11Protocol):
        timer = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self.wait()

        def wait(self):
            """No request under way: the connection may wait HEAD_TIMEOUT for the next head."""
            room.waiting[self] = None
            self.timer = self.loop.call_later(HEAD_TIMEOUT, self.idle)

        def stop_waiting(self):
            room.waiting.pop(self, None)
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None

        def data_received(self, data):
            if self.refused:
                return  # read and dropped, until the client closes or HEAD_TIMEOUT passes
            super().data_received(data)
            if self.refused:
                self.stop_waiting()
                self.wait()
            elif self.cycle is not None and not self.cycle.response_complete:  # a request head has arrived
                self.stop_waiting()

        def on_response_complete(self):
            super().on_response_complete()  # may start the next request, pipelined
            if not self.transport.is_closing() and self.cycle.response_complete:
                self.stop_waiting()
                self.wait()

        def connection_lost(self, exc):
            self.lost = True
            self.stop_waiting()
            self.stop_watching()
            super().connection_lost(exc)

        def shutdown(self):
            super().shutdown()  # closes it unless a request is under way: its answer may still wait for its client
            self.loop.call_later(grace, self.cut)

        def cut(self):
            """The grace is over: abort the connection unless it has ended (a request, or its answer, is cut)."""
            if not self.lost:
                room.cut += 1
                self.transport.abort()

    return Connection


def run(app, sock, grace=SHUTDOWN_GRACE, stopping=None):
    """Serve the ASGI `app` on the listening socket `sock` (taken over) until Ctrl-C, SIGTERM or SIGHUP.

    Returns (the signal's number, how many requests the shutdown cut). The
    first signal stops the server within `grace` seconds (and a tenth),
    whatever the clients do (the module's docstring), and calls
    stopping() (quick, never raising: work of the server's own to stop
    meanwhile, a learn); a second one ends the process at once (os._exit)
    with the one line `<SIGNAL>: stopped` and 128 + its number.
    """
    import uvicorn

    room = Room()
    listener = Listener.of(sock, room)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            http=connection_class(room, grace), timeout_graceful_shutdown=grace)
    server = uvicorn.Server(config)
    stopped = []
    original = server.handle_exit

    def handle_exit(sig, frame):
        off_a_hung_up_terminal(sig)
        if stopped:
            print(f"{signal.Signals(sig).name}: stopped", file=sys.stderr, flush=True)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            tf_compat.end_at_once(128 + sig)
        stopped.append(sig)
        if stopping is not None:
            stopping()
        if sig in uvicorn.server.HANDLED_SIGNALS:
            original(sig, frame)  # uvicorn's: it stops, then raises the signal again (caught below)
        else:
            server.should_exit = True  # SIGHUP, which uvicorn leaves to its default (the process ended at once)

    async def serving():
        asyncio.get_running_loop().set_exception_handler(room.exception_handler)
        await server.serve(sockets=[listener])

    server.handle_exit = handle_exit
    quiet = Quiet()
    logging.getLogger("uvicorn.error").addFilter(quiet)
    main = threading.current_thread() is threading.main_thread()  # where a handler can be set
    previous = {sig: signal.signal(sig, handle_exit) for sig in STOP_SIGNALS
                if main and sig not in uvicorn.server.HANDLED_SIGNALS}
    try:
        asyncio.run(serving())
    except KeyboardInterrupt:  # uvicorn raises the signal again once it has stopped
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        logging.getLogger("uvicorn.error").removeFilter(quiet)
        listener.close()
    return (stopped[0] if stopped else signal.SIGINT), room.cut


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
    if host not in EVERY_INTERFACE:
        return address(sock), []
    here = f"http://127.0.0.1:{port}/" if host == "0.0.0.0" else f"http://[::1]:{port}/"
    return here, [f"http://{other}:{port}/" for other in own()]
