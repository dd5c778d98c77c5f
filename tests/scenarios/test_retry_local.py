"""A failed run found and run again, on `duetime local` as a user runs it.

Given the local stack (API, tick and worker in one process) and a receiver
that refuses its first delivery with a 400,
When a schedule is triggered, its run fails for good, is found with
GET /runs?status=failed and retried with POST /runs/{id}/retry,
Then the receiver gets the second delivery with the same idempotency key,
and the run ends succeeded after attempt 2, its attempts both served.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.local_processes import call, free_port, start, stop, wait_for

pytestmark = pytest.mark.slow


class RefusesFirst(ThreadingHTTPServer):
    """Answers 400 to the first delivery, 200 after; keeps each delivery's key."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.keys: list[str] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _Handler(BaseHTTPRequestHandler):
    server: RefusesFirst

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.keys.append(self.headers["Idempotency-Key"])
            first = len(self.server.keys) == 1
        self.send_response(400 if first else 200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_failed_run_is_found_and_retried_with_the_same_key(tmp_path: Path) -> None:
    receiver = RefusesFirst()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    stack = start(tmp_path, "--port", str(port), "--echo-port", "0", "--tick-interval", "0.2s")
    try:
        wait_for(lambda: call("GET", f"{api}/health") is not None, 30, "the API")
        schedule = call(
            "POST",
            f"{api}/schedules",
            {
                "name": "once, by hand",
                "spec": {"at": "2099-01-01T00:00:00Z"},
                "target": {"type": "webhook", "url": receiver.url},
            },
        )
        run = call("POST", f"{api}/schedules/{schedule['id']}/trigger")
        occurrence_id = run["occurrence_id"]

        def failed() -> list[dict[str, Any]]:
            return list(call("GET", f"{api}/runs?status=failed")["runs"])

        wait_for(lambda: [r["occurrence_id"] for r in failed()] == [occurrence_id], 30, "failure")
        retried = call("POST", f"{api}/runs/{occurrence_id}/retry")
        assert retried["status"] == "admitted"

        def done() -> dict[str, Any]:
            return dict(call("GET", f"{api}/runs/{occurrence_id}"))

        wait_for(lambda: done()["status"] == "succeeded", 30, "the retried run to succeed")
        body = done()
        assert body["attempts"] == 2
        assert [(a["number"], a["outcome"]) for a in body["attempts_log"]] == [
            (1, "permanent"),
            (2, "succeeded"),
        ]
        assert receiver.keys == [occurrence_id, occurrence_id]
        # The target's refusal is recorded on the run; no intent was dead-lettered.
        assert call("GET", f"{api}/dead-letters")["dead_letters"] == []
    finally:
        stop(stack)
        receiver.shutdown()
        receiver.server_close()
