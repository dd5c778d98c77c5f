"""A worker process killed with SIGKILL in the middle of a run: another worker
process finishes the run within seconds, as the next attempt of the same
occurrence, with the same idempotency key.

The target blocks on the first call until the test lets it go, so the kill
lands while the run is in flight. Without a heartbeat the killed process's
message would stay hidden for the queue's visibility timeout (15 minutes on
SQS), and the run would stay ``running`` under its lease for the whole call's
timeout; here both are held for seconds at a time and lapse soon after the
kill. Every wait is bounded.
"""

from __future__ import annotations

import json
import signal
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.local_processes import all_runs, call, free_port, start, stop, wait_for

# Far below the 15 minutes the message would otherwise stay hidden: the held
# visibility and the run lease (15 s each), the tick's start, and slack for a
# shared machine.
TAKEOVER_BOUND_S = 90.0


class BlockingReceiver(ThreadingHTTPServer):
    """Records every delivery; the first one blocks until ``release`` is set."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.got: list[tuple[str, int]] = []  # (Idempotency-Key, attempt)
        self.entered = threading.Event()
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _Handler(BaseHTTPRequestHandler):
    server: BlockingReceiver

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.got.append((self.headers["Idempotency-Key"], body["attempt"]))
            first = len(self.server.got) == 1
        if first:
            self.server.entered.set()
            self.server.release.wait(TAKEOVER_BOUND_S + 30)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.slow
def test_a_killed_workers_run_is_finished_by_another_within_seconds(tmp_path: Path) -> None:
    receiver = BlockingReceiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    api = start(tmp_path, "--only", "api", "--port", str(port), "--echo-port", "0")
    workers = []
    try:
        wait_for(lambda: bool(call("GET", f"{api_url}/health")), 30, "the API")
        start_at = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
        schedule = call(
            "POST",
            f"{api_url}/schedules",
            {
                "name": "blocks once",
                "spec": {"every": "PT1H", "start_at": start_at.isoformat()},
                "target": {"type": "webhook", "url": receiver.url},
            },
        )
        schedule_id = schedule["id"]

        # Given a worker process in the middle of the run
        first = start(tmp_path, "--only", "tick,worker", "--tick-interval", "0.5s")
        workers.append(first)
        assert receiver.entered.wait(60), "the first delivery never arrived"

        # When it is killed, and another worker process starts
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=20)
        second = start(tmp_path, "--only", "tick,worker", "--tick-interval", "0.5s")
        workers.append(second)

        # Then the run is finished by the second one, within seconds
        def succeeded() -> bool:
            runs = all_runs(api_url, schedule_id)
            return bool(runs) and runs[0]["status"] == "succeeded"

        wait_for(succeeded, TAKEOVER_BOUND_S, "the run to be taken over and succeed")
        (run,) = all_runs(api_url, schedule_id)
        assert run["attempts"] == 2
        with receiver.lock:
            got = list(receiver.got)
        assert got == [(run["occurrence_id"], 1), (run["occurrence_id"], 2)]
    finally:
        receiver.release.set()
        for process in workers:
            if process.poll() is None:
                stop(process)
        stop(api)
        receiver.shutdown()
        receiver.server_close()
