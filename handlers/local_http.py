"""Serve a Lambda API handler over real HTTP on this machine.

Each HTTP request becomes an API Gateway REST proxy event (the shape the
``{proxy+}`` resource sends), the handler answers it, and its proxy response
becomes the HTTP response. The local stack uses this to serve the very same
``handlers.api.handler`` on 127.0.0.1.

Requests are handled one at a time: the Powertools resolver keeps the
current event on itself, so one handler call must finish before the next.
"""

from __future__ import annotations

import base64
import threading
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

STAGE: Final = "local"
# Bodies are read up to this many bytes; the handler refuses large ones itself.
READ_LIMIT: Final = 1024 * 1024


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


class _RequestHandler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, READ_LIMIT)) if length > 0 else b""
        if length > READ_LIMIT:
            self.close_connection = True  # the rest of the body is left unread
        event = to_event(
            self.command,
            self.path,
            list(self.headers.items()),
            body,
            source_ip=self.client_address[0],
        )
        with self.server.lock:
            result = self.server.api(event, None)
        status, headers, data = from_response(result)
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:
        self.server.log(f"{self.address_string()} {format % args}")


class ApiServer(ThreadingHTTPServer):
    """An HTTP server on ``host:port`` (port 0: a free one) that calls ``api``."""

    daemon_threads = True

    def __init__(
        self,
        api: Handler,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        super().__init__((host, port), _RequestHandler)
        self.api = api
        self.lock = threading.Lock()
        self.log = log

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"
