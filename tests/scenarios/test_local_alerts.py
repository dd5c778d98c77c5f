"""`duetime local --notify-url` as a user runs it: a real stack, real HTTP.

Given the stack started with a notification webhook (a receiver in this test
on 127.0.0.1) and a schedule every 2 seconds whose target answers 500,
When the schedule goes overdue, and its target then answers 200 again,
Then the receiver gets exactly one message for the failure and one more for
the recovery, and nothing else.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.local_processes import call, free_port, start, stop, wait_for

pytestmark = pytest.mark.slow


class Server(ThreadingHTTPServer):
    """Both ends in one: ``/target`` answers 500 while ``failing``; ``/alerts`` keeps
    each body posted to it."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.failing = True
        self.alerts: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def received(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.alerts)


class _Handler(BaseHTTPRequestHandler):
    server: Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status = 200
        if self.path == "/alerts":
            with self.server.lock:
                self.server.alerts.append(body)
        elif self.server.failing:
            status = 500
        self.send_response(status)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    found = Server()
    threading.Thread(target=found.serve_forever, daemon=True).start()
    yield found
    found.shutdown()
    found.server_close()


def test_a_schedule_that_starts_failing_is_one_notification_and_one_more_on_recovery(
    tmp_path: Path, server: Server
) -> None:
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    stack = start(
        tmp_path,
        *("--port", str(port), "--echo-port", "0", "--tick-interval", "0.2s"),
        *("--watchdog-interval", "1s", "--notify-url", server.url("/alerts")),
        *("--notify-min-interval", "5s"),
    )
    try:
        wait_for(lambda: call("GET", f"{api_url}/health") is not None, 30, "the API")
        schedule = call(
            "POST",
            f"{api_url}/schedules",
            {
                "name": "flaky export",
                "spec": {"every": "PT2S"},
                "target": {"type": "webhook", "url": server.url("/target")},
                "policy": {"grace": "PT3S", "retry": {"max_attempts": 1}},
            },
        )
        wait_for(lambda: len(server.received()) >= 1, 60, "the overdue message")
        time.sleep(3)  # more passes, still overdue: nothing more
        [overdue] = server.received()
        assert overdue["schedule_id"] == schedule["id"] and overdue["name"] == "flaky export"
        assert (overdue["verdict"], overdue["previous"]) == ("overdue", "ok")
        assert overdue["url"] == f"{api_url}/console#/schedules/{schedule['id']}"

        server.failing = False
        wait_for(lambda: len(server.received()) >= 2, 60, "the recovery message")
        time.sleep(3)
        assert [a["verdict"] for a in server.received()] == ["overdue", "ok"]
        assert server.received()[1]["last_success_at"] is not None
    finally:
        stop(stack)
