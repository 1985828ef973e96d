"""Who may use the board: the name a request reaches it by (Host) and the page it comes from (Origin).

Pure decisions, no server: mnistkit.board.table's Board asks Access.refusal
before any route runs (as Jupyter's base handler checks Host and Origin before
any handler), and Access.cors_origin for the CORS headers of an answer. A
Host header naming a name the server does not answer to gets 403 (DNS
rebinding); so does a request other than GET or HEAD from another site's page
(its Origin, or lacking it its Referer) unless --allow-origin lets that site
in (CORS).
"""
import contextlib
import functools
import socket
import urllib.parse

from ..listener import EVERY_INTERFACE, LOOPBACK  # names always answered to; a --host whose machine's names are too

SAFE_METHODS = ("GET", "HEAD")  # methods another site's page may send: their answers it cannot read without CORS
CORS_HEADERS = {"Access-Control-Allow-Headers": "Content-Type, X-Filename", "Access-Control-Max-Age": "600"}
# a preflight's answer has these and Access-Control-Allow-Methods, the methods its path's routes take


@functools.lru_cache(maxsize=256)  # a server sees a few Host headers, over and over
def host_name(host):
    """The name of a Host header or a --allow-host value, lower case, without port, brackets or final dot; None if none.

    'LocalHost:8501' -> 'localhost', '[::1]:8501' and '::1' -> '::1', '*' -> '*'; 'a:1, b:1' (two Host
    headers) -> None.
    """
    if host == "*":
        return host
    if any(c in host for c in ", \t/\\@?#"):  # two Hosts joined ("a, b": table.header_fields), a URL: no one name
        return None
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

    def __init__(self, host=LOOPBACK[0], allow_hosts=(), allow_origins=()):
        self.hosts = {host_name(h) for h in (*LOOPBACK, host, *allow_hosts)} - {None}
        if host in EVERY_INTERFACE:
            self.hosts |= machine_names()
        self.origins = {o if o == "*" else origin_key(o) for o in allow_origins}
        if None in self.origins:
            raise ValueError(f"not an origin: {sorted(o for o in allow_origins if o != '*' and not origin_key(o))}")

    def refusal(self, method, headers, scheme="http", server=None):
        """Why a request is refused with 403 (one line), or None when it may go on.

        headers: the request's, lower-case names (a dict); server: (address,
        port) the connection reached, whose address is answered to as a Host
        too (a phone given the computer's IP). A request without Host
        (HTTP/1.0) passes the Host check; a GET or HEAD passes the Origin
        check, its answer being unreadable by another site's page unless the
        origin is allowed (cors_origin).
        """
        host = headers.get("host")
        name = None if host is None else host_name(host)
        if host is not None and "*" not in self.hosts and name not in self.hosts and (
                server is None or name != host_name(str(server[0]))):
            return (f"Host {host!r}: not a name this server answers to (DNS rebinding?); if you reach it by that "
                    f"name, start it with --allow-host {name or host}")
        if method in SAFE_METHODS:
            return None
        origin = foreign_origin(headers, scheme)
        if origin is not None and not self.lets_in(origin):
            return (f"Origin {origin}: a page of another site may not {sent(method, headers)}; to let it, start "
                    f"the server with --allow-origin {origin}")
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


def sent(method, headers):
    """What a refused request asked to do, for a sentence ("may not <it>"): "send POST requests here", for any
    method; a CORS preflight (OPTIONS with Access-Control-Request-Method) names the method it asks for, "send PUT
    requests here (its browser asked first, with OPTIONS)" (issue 53's trial: "may not OPTIONS here")."""
    asked = headers.get("access-control-request-method", "").strip().upper() if method == "OPTIONS" else ""
    if asked and asked.isalpha() and asked != "OPTIONS":
        return f"send {asked} requests here (its browser asked first, with OPTIONS)"
    return f"send {method} requests here"


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
