"""Running `duetime local` as separate processes, and a webhook receiver, for scenario tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Receiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.got: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"

    def deliveries(self) -> list[tuple[str, dict[str, Any]]]:
        with self.lock:
            return list(self.got)


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.got.append((self.headers["Idempotency-Key"], body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def start(data_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "POWERTOOLS_METRICS_DISABLED": "true"}
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", "local", "--data-dir", str(data_dir), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )


def start_emulator_stack(data_dir: Path, port: int, emulator_port: int) -> subprocess.Popen[bytes]:
    """API, tick and worker over the emulator (moto in server mode) on these ports."""
    return start(
        data_dir,
        "--store",
        "emulator",
        "--port",
        str(port),
        "--emulator-port",
        str(emulator_port),
        "--echo-port",
        "0",
        "--only",
        "api,tick,worker",
    )


def stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    process.send_signal(sig)
    process.wait(timeout=20)


def call(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def all_runs(api: str, schedule_id: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    token = None
    while True:
        # Every record, the planned ones (scheduled_at still ahead) included.
        query = "?limit=100&include=planned" + (f"&next_token={token}" if token else "")
        page = call("GET", f"{api}/schedules/{schedule_id}/runs{query}")
        runs += page["runs"]
        token = page.get("next_token")
        if not token:
            return runs
