"""Serve a Lambda API handler over real HTTP on this machine.

Each HTTP request becomes an API Gateway REST proxy event (the shape the
``{proxy+}`` resource sends), the handler answers it, and its proxy response
becomes the HTTP response. The local stack uses this to serve the very same
``handlers.api.handler`` on 127.0.0.1.

uvicorn (over h11) speaks HTTP: it frames requests (Content-Length or chunked
bodies, keep-alive, pipelining) and answers malformed framing with a 400
itself. Everything that parses reaches the handler, whatever its method.

Before the handler sees a request, this server refuses what a web page in the
user's browser could send it (see docs/decisions.md):

- a ``Host`` that is not the address served (``127.0.0.1:PORT``,
  ``localhost:PORT``, ``[::1]:PORT``): 421, which defeats DNS rebinding;
- a present ``Origin`` other than the served origin, or ``Sec-Fetch-Site``
  ``cross-site`` / ``same-site``: 403, which defeats cross-site form posts.

Requests are handled one at a time: the Powertools resolver keeps the
current event on itself, so one handler call must finish before the next.
The handler runs on one worker thread, off the event loop, under a lock.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import logging
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

import uvicorn

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
# Files served beside the API (the console): given a method, a path and the raw
# query string, the status, headers and body to answer, or None when the path is
# not one of them.
Pages = Callable[[str, str, str], "tuple[int, list[tuple[str, str]], bytes] | None"]
LogLine = Callable[..., None]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

STAGE: Final = "local"
# Bodies are read up to this many bytes; the handler refuses large ones itself.
# A larger body is refused with 413 as soon as its size is known (its
# Content-Length, or the chunk that crosses the limit), and the connection closed.
READ_LIMIT: Final = 1024 * 1024
# Connections waiting to be accepted (the kernel caps it at net.core.somaxconn).
BACKLOG: Final = 1024
KEEP_ALIVE_S: Final = 5
GRACEFUL_SHUTDOWN_S: Final = 5
_JSON: Final = "application/json"
_DROPPED_HEADERS: Final = frozenset({"content-length", "connection", "transfer-encoding"})


def to_event(
    method: str,
    target: str,
    headers: Mapping[str, str] | list[tuple[str, str]],
    body: bytes,
    *,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The API Gateway REST proxy event for one HTTP request."""
    parts = urlsplit(target)
    path = unquote(parts.path) or "/"
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        single[name] = value
        multi.setdefault(name, []).append(value)
    query = parse_qs(parts.query, keep_blank_values=True)
    text: str | None = None
    encoded = False
    if body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text, encoded = base64.b64encode(body).decode("ascii"), True
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method.upper(),
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": {"proxy": path.lstrip("/")} if path != "/" else None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method.upper(),
            "path": f"/{STAGE}{path}",
            "stage": STAGE,
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": source_ip},
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


def from_response(result: Mapping[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body bytes of an API Gateway proxy response."""
    headers: list[tuple[str, str]] = []
    multi = result.get("multiValueHeaders") or {}
    for name, values in multi.items():
        headers.extend((str(name), str(value)) for value in values)
    for name, value in (result.get("headers") or {}).items():
        if name not in multi:
            headers.append((str(name), str(value)))
    body = result.get("body") or ""
    data = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode("utf-8")
    return int(result.get("statusCode", 200)), headers, data


def served_hosts(port: int) -> frozenset[str]:
    """The ``Host`` values a request to this machine's API on ``port`` carries."""
    names = ("127.0.0.1", "localhost", "[::1]")
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:
        hosts.update(names)
    return frozenset(hosts)


def refusal(headers: list[tuple[str, str]], port: int) -> tuple[int, str, str] | None:
    """Why a request must not reach the handler (status, code, message), or None.

    A browser always sends ``Host``, and sends ``Origin`` on every cross-origin
    POST/PUT/DELETE and ``Sec-Fetch-Site`` on every request it makes; a client
    such as curl or the ``duetime`` command sends ``Host`` only.
    """
    values: dict[str, list[str]] = {}
    for name, value in headers:
        values.setdefault(name.lower(), []).append(value.strip())
    hosts = served_hosts(port)
    host = values.get("host", [])
    if len(host) != 1 or host[0].lower() not in hosts:
        shown = ", ".join(sorted(hosts))
        got = repr(host[0]) if len(host) == 1 else "none" if not host else "several"
        return (
            421,
            "misdirected_request",
            f"this server answers only requests for Host {shown} (got {got})",
        )
    for origin in values.get("origin", []):
        if origin.lower() not in {f"http://{h}" for h in hosts}:
            return (
                403,
                "cross_origin_refused",
                f"requests from another origin are refused (Origin {origin!r})",
            )
    for site in values.get("sec-fetch-site", []):
        if site.lower() in ("cross-site", "same-site"):
            return (
                403,
                "cross_origin_refused",
                f"requests from another site are refused (Sec-Fetch-Site {site!r})",
            )
    return None


def error_body(code: str, message: str) -> bytes:
    """The API's error shape, ``{"error": {"code", "message", "field"}}``."""
    error = {"error": {"code": code, "message": message, "field": None}}
    return json.dumps(error, separators=(",", ":")).encode()


class _Disconnected(Exception):
    """The client went away before its body was read."""


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None when it grows past ``limit``."""
    data = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        data += message.get("body", b"")
        if len(data) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(data)


async def _respond(
    send: Send, status: int, headers: list[tuple[str, str]], body: bytes, *, close: bool = False
) -> None:
    raw = [
        (name.encode("latin-1"), value.encode("latin-1", "replace"))
        for name, value in headers
        if name.lower() not in _DROPPED_HEADERS
    ]
    raw.append((b"content-length", str(len(body)).encode()))
    if close:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class _LogBridge(logging.Handler):
    """uvicorn's own warnings and errors, as the server's structured log lines."""

    def __init__(self, log: LogLine) -> None:
        super().__init__(logging.WARNING)
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        fields: dict[str, Any] = {"level": record.levelname.lower(), "message": record.getMessage()}
        if record.exc_info and record.exc_info[1] is not None:
            fields["error"] = repr(record.exc_info[1])
        self._log("http server", **fields)


def _quiet(event: str, **fields: Any) -> None:
    pass


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ApiServer:
    """The API handler served over HTTP on ``host:port`` (port 0: a free one).

    The port is bound when the server is made, so a port in use fails here
    with ``OSError``. ``serve_forever`` runs uvicorn in the calling thread
    until ``shutdown`` (from any thread) stops it gracefully; ``server_close``
    releases the port. Only loopback addresses are served.

    ``log(event, **fields)`` gets one call per uvicorn warning or error, and
    with ``access_log`` one per request.

    ``pages`` answers the paths it knows (the console's files) without the
    handler, after the same Host and Origin checks as every request.
    """

    def __init__(
        self,
        api: Handler,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log: LogLine = _quiet,
        access_log: bool = False,
        backlog: int = BACKLOG,
        pages: Pages | None = None,
    ) -> None:
        if not _is_loopback(host):
            raise ValueError(f"the local API serves a loopback address only, not {host!r}")
        self.api = api
        self.lock = threading.Lock()
        self.log = log
        self.access_log = access_log
        self.backlog = backlog
        self.pages = pages
        self._family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = self._bind(host, port)
        bound: int = self._socket.getsockname()[1]
        self.server_address: tuple[str, int] = (host, bound)
        self._calls = ThreadPoolExecutor(max_workers=1, thread_name_prefix="duetime-api-call")
        self._state = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._idle = threading.Event()
        self._idle.set()
        self._stopping = False
        self._bridge = _LogBridge(log)
        _install_log_bridge(self._bridge)

    def _bind(self, host: str, port: int) -> socket.socket:
        # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on each accepted
        # connection: without it a keep-alive response (headers, then body)
        # waits for the client's delayed ACK, about 40 ms.
        sock = socket.socket(self._family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(self.backlog)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        return sock

    @property
    def url(self) -> str:
        host, port = self.server_address
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def port(self) -> int:
        return self.server_address[1]

    def serve_forever(self) -> None:
        """Serve until ``shutdown``; the port is bound again if a previous run closed it."""
        with self._state:
            if self._stopping:
                return
            if self._socket.fileno() == -1:  # uvicorn closes its sockets when it stops
                self._socket = self._bind(*self.server_address)
            config = uvicorn.Config(
                _LocalApp(self),
                http="h11",
                loop="asyncio",
                ws="none",
                lifespan="off",
                interface="asgi3",
                log_config=None,
                access_log=False,
                proxy_headers=False,
                server_header=False,
                backlog=self.backlog,
                timeout_keep_alive=KEEP_ALIVE_S,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            )
            server = uvicorn.Server(config)
            self._server = server
            self._idle.clear()
        try:
            server.run(sockets=[self._socket])
        except SystemExit as exit:  # uvicorn exits on a startup failure; report it instead
            raise RuntimeError(f"the HTTP server could not start (exit {exit.code})") from None
        finally:
            with self._state:
                self._server = None
                self._idle.set()

    def shutdown(self, timeout: float = GRACEFUL_SHUTDOWN_S + 5) -> None:
        """Stop serving: in-flight requests finish, idle connections close."""
        with self._state:
            self._stopping = True
            server = self._server
            if server is not None:
                server.should_exit = True
        self._idle.wait(timeout)

    def server_close(self) -> None:
        self._socket.close()
        self._calls.shutdown(wait=False)
        logging.getLogger("uvicorn.error").removeHandler(self._bridge)

    def call(self, event: dict[str, Any]) -> dict[str, Any]:
        """One handler call, never two at once."""
        with self.lock:
            return self.api(event, None)

    async def call_off_loop(self, event: dict[str, Any]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._calls, self.call, event)


def _install_log_bridge(bridge: logging.Handler) -> None:
    # uvicorn's loggers print nothing on their own: their records go to the
    # bridges of the servers alive, as JSON lines, and never to the root logger.
    root = logging.getLogger("uvicorn")
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())
    root.propagate = False
    logging.getLogger("uvicorn.error").addHandler(bridge)


class _LocalApp:
    """The ASGI application: refuse, read the body, call the handler, answer."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        status = await self._serve(scope, receive, send)
        if self.server.access_log and status is not None:
            self.server.log(
                "http request",
                method=scope["method"],
                path=scope["path"],
                status=status,
                duration_ms=round((time.perf_counter() - started) * 1000, 2),
            )

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> int | None:
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        json_type = [("Content-Type", _JSON)]
        refused = refusal(headers, self.server.port)
        if refused is not None:
            status, code, message = refused
            # Closing spares reading a body that will not be used.
            await _respond(send, status, json_type, error_body(code, message), close=True)
            return status
        if self.server.pages is not None:
            query = scope["query_string"].decode("latin-1")
            page = self.server.pages(scope["method"], scope["path"], query)
            if page is not None:
                status, page_headers, data = page
                # A body sent to a page is not read: the connection closes after the answer.
                close = scope["method"] not in ("GET", "HEAD")
                await _respond(send, status, page_headers, data, close=close)
                return status
        declared = next((v for k, v in headers if k == "content-length"), None)
        too_large = declared is not None and int(declared) > READ_LIMIT
        body = None
        if not too_large:
            try:
                body = await _read_body(receive, READ_LIMIT)
            except _Disconnected:
                return None
        if body is None:
            message = f"the body is larger than {READ_LIMIT} bytes"
            await _respond(send, 413, json_type, error_body("body_too_large", message), close=True)
            return 413
        target = scope["raw_path"].decode("latin-1")
        if scope["query_string"]:
            target += "?" + scope["query_string"].decode("latin-1")
        client = scope.get("client") or ("127.0.0.1", 0)
        event = to_event(scope["method"], target, headers, body, source_ip=client[0])
        try:
            result = await self.server.call_off_loop(event)
            status, answer_headers, data = from_response(result)
        except Exception as error:  # the handler's own bug: an error JSON, and a log line
            self.server.log(
                "api handler failed",
                error=repr(error),
                traceback=traceback.format_exception(error)[-3:],
            )
            message = "the server failed to answer; see its log"
            await _respond(send, 500, json_type, error_body("internal_error", message))
            return 500
        await _respond(send, status, answer_headers, data)
        return status
