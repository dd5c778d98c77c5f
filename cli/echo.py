"""The echo receiver of `duetime local`: a webhook target for trying duetime
out, on 127.0.0.1, that logs each delivery and answers 200."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cli.supervisor import log

HOST = "127.0.0.1"


class EchoReceiver(ThreadingHTTPServer):
    """A webhook receiver for trying duetime out: logs each delivery, answers 200."""

    daemon_threads = True

    def __init__(self, port: int) -> None:
        super().__init__((HOST, port), _EchoHandler)
        self._guard = threading.Lock()
        self._serving = False
        self._closing = False

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        with self._guard:
            if self._closing:
                return
            self._serving = True
        try:
            super().serve_forever(poll_interval)
        finally:
            with self._guard:
                self._serving = False

    def shutdown(self) -> None:
        # socketserver's shutdown waits for a serve_forever that may never run
        # (the supervisor was between restarts): only stop one that is running.
        with self._guard:
            self._closing = True
            serving = self._serving
        if serving:
            super().shutdown()


class _EchoHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        try:
            data = json.loads(body)
        except ValueError:
            data = {}
        log(
            "webhook received",
            path=self.path,
            idempotency_key=self.headers.get("Idempotency-Key"),
            attempt=data.get("attempt"),
            scheduled_at=data.get("scheduled_at"),
            late_by_s=data.get("late_by_s"),
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok": true}')

    def log_message(self, format: str, *args: Any) -> None:
        pass
