"""The local API's HTTP server: the uvicorn server against the former http.server one.

Each server runs in its own process, serving the real API handler over a fresh
SQLite store; this process is the client (http.client in a thread pool). Both
servers answer the same requests in each round, one after the other, so machine
noise hits them alike. Scenarios:

- one client opening a new connection per request;
- one client reusing one keep-alive connection;
- 20 and 100 parallel clients, a new connection per request;
- 20 and 100 parallel clients, one keep-alive connection each.

Reported per scenario and server: requests/s, p50 and p99 latency, and failed
requests (connection reset or refused), medians over the rounds.

    .venv/bin/python bench/http_local.py [--rounds 3] [--requests 400] [--json]

The former server is kept here, for this comparison only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PATH = "/health"
SCENARIOS: list[tuple[str, int, bool]] = [
    ("1 client, new connections", 1, False),
    ("1 client, keep-alive", 1, True),
    ("20 clients, new connections", 20, False),
    ("100 clients, new connections", 100, False),
    ("20 clients, keep-alive", 20, True),
    ("100 clients, keep-alive", 100, True),
]


# --- the former server (http.server, a thread per connection, listen backlog 5) ----------------


class _FormerHandler(BaseHTTPRequestHandler):
    server: FormerApiServer
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        from cli.local_http import READ_LIMIT, from_response, to_event

        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, READ_LIMIT)) if length > 0 else b""
        event = to_event(
            self.command, self.path, list(self.headers.items()), body,
            source_ip=self.client_address[0],
        )  # fmt: skip
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
        pass


class FormerApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, api: Any) -> None:
        super().__init__(("127.0.0.1", 0), _FormerHandler)
        self.api = api
        self.lock = threading.Lock()


# --- the server process -----------------------------------------------------------------------


def serve(kind: str) -> None:
    """Serve the API on a free port, print it, and stop when stdin closes."""
    from adapters.secrets import InMemorySecretStore
    from bootstrap.local import build_sqlite_services
    from bootstrap.settings import Settings
    from cli.local_http import ApiServer
    from handlers.api import handler

    with tempfile.TemporaryDirectory() as directory:
        # The API's use cases as `duetime local` builds them.
        services = build_sqlite_services(Settings(), directory, secrets=InMemorySecretStore())

        def api(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return handler(event, context, service=services)

        server: Any = FormerApiServer(api) if kind == "former" else ApiServer(api)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        print(server.server_address[1], flush=True)
        sys.stdin.read()
        server.shutdown()
        server.server_close()
        services.schedules.store.close()  # type: ignore[attr-defined]


# --- the client -------------------------------------------------------------------------------


def _client(port: int, requests: int, keep_alive: bool) -> tuple[list[float], int]:
    latencies: list[float] = []
    failed = 0
    connection: http.client.HTTPConnection | None = None
    for _ in range(requests):
        started = time.perf_counter()
        try:
            if connection is None or not keep_alive:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", PATH)
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise http.client.HTTPException(f"status {response.status}")
            latencies.append(time.perf_counter() - started)
        except (OSError, http.client.HTTPException):
            failed += 1
            if connection is not None:
                connection.close()
            connection = None
        finally:
            if connection is not None and not keep_alive:
                connection.close()
                connection = None
    if connection is not None:
        connection.close()
    return latencies, failed


def measure(port: int, clients: int, keep_alive: bool, total: int) -> dict[str, float]:
    each = max(1, total // clients)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = list(pool.map(lambda _: _client(port, each, keep_alive), range(clients)))
    elapsed = time.perf_counter() - started
    latencies = sorted(x for lat, _ in results for x in lat)
    failed = sum(f for _, f in results)
    if not latencies:
        return {"rps": 0.0, "p50_ms": float("nan"), "p99_ms": float("nan"), "failed": failed}
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": p99 * 1000,
        "failed": failed,
        "requests": clients * each,
    }


def _start(kind: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={"POWERTOOLS_METRICS_DISABLED": "true", "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=400, help="per scenario and round")
    parser.add_argument("--only", choices=("former", "uvicorn"), default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", choices=("former", "uvicorn"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    kinds = [args.only] if args.only else ["former", "uvicorn"]
    servers = {kind: _start(kind) for kind in kinds}
    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        for _ in range(args.rounds):
            for name, clients, keep_alive in SCENARIOS:
                for kind, (_, port) in servers.items():
                    result = measure(port, clients, keep_alive, args.requests)
                    samples.setdefault((name, kind), []).append(result)
    finally:
        for process, _ in servers.values():
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=30)
    table = {
        f"{name} | {kind}": {
            key: statistics.median(s[key] for s in runs) for key in runs[0] if key != "requests"
        }
        for (name, kind), runs in samples.items()
    }
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(
        f"python {platform.python_version()} on {platform.machine()}, {args.rounds} rounds, "
        f"GET {PATH}, {args.requests} requests per scenario; medians over the rounds"
    )
    print()
    print("| scenario | server | requests/s | p50 ms | p99 ms | failed |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for name, _, _ in SCENARIOS:
        for kind in kinds:
            row = table[f"{name} | {kind}"]
            print(
                f"| {name} | {kind} | {row['rps']:,.0f} | {row['p50_ms']:.2f} | "
                f"{row['p99_ms']:.2f} | {row['failed']:.0f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
