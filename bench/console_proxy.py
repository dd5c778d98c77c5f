"""What `duetime console`'s signing forwarder adds to an API call, and what one
refresh of the console's schedules page costs.

One process serves the API handler over SQLite on 127.0.0.1 (as `duetime
local` does) with N schedules, and `duetime console`'s server (the same HTTP
server, with the SigV4-signing forwarder in place of the handler) in front of
it, signing with dummy credentials. Each round times the same request
directly and through the forwarder, side by side, and reports medians and the
ratio; then it times the calls one refresh of the schedules page makes (the
list, then each schedule and its last run), through the forwarder.

    .venv/bin/python bench/console_proxy.py                 # 20 schedules, 200 calls
    .venv/bin/python bench/console_proxy.py --schedules 100 --calls 500
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.secrets import InMemorySecretStore
from bootstrap.local import build_sqlite_services
from bootstrap.settings import Settings
from cli.console import Forwarder, SigningClient, console_page
from cli.local_http import ApiServer
from handlers.api import handler


class _Clock:
    def now(self) -> Any:
        from datetime import UTC, datetime

        return datetime.now(UTC)


def _call(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data else {}
        connection.request(method, path, body=data, headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        connection.close()


def _timed(port: int, path: str) -> float:
    started = time.perf_counter()
    status, _ = _call(port, "GET", path)
    elapsed = time.perf_counter() - started
    assert status == 200, (path, status)
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_SESSION_TOKEN="testing"
    )
    with tempfile.TemporaryDirectory() as folder:
        services = build_sqlite_services(
            Settings(), folder, clock=_Clock(), secrets=InMemorySecretStore()
        )

        def api(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return handler(event, context, service=services)

        servers = [ApiServer(api, pages=console_page)]
        direct = servers[0]
        forwarder = Forwarder(SigningClient(direct.url, region="us-east-1"))
        servers.append(ApiServer(forwarder, pages=console_page))
        proxy = servers[1]
        threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
        for thread in threads:
            thread.start()
        try:
            ids = []
            for n in range(args.schedules):
                status, created = _call(
                    direct.port,
                    "POST",
                    "/schedules",
                    {
                        "name": f"report {n}",
                        "spec": {"cron": f"{n % 60} 9 * * *", "time_zone": "Europe/London"},
                        "target": {"type": "webhook", "url": "https://example.com/hook"},
                    },
                )
                assert status == 201, created
                ids.append(created["id"])
            paths = [f"/schedules/{ids[0]}", "/schedules?limit=100", "/health"]
            print(
                f"{args.schedules} schedules, {args.calls} calls per path, "
                "direct and through the forwarder alternately"
            )
            print(f"{'path':<28} {'direct ms':>10} {'forwarded ms':>13} {'ratio':>6}")
            for path in paths:
                shown = path if len(path) < 28 else path[:25] + "..."
                for port in (direct.port, proxy.port):  # warm up
                    _timed(port, path)
                pairs = [
                    (_timed(direct.port, path), _timed(proxy.port, path)) for _ in range(args.calls)
                ]
                d = statistics.median(p[0] for p in pairs)
                f = statistics.median(p[1] for p in pairs)
                print(f"{shown:<28} {d:>10.2f} {f:>13.2f} {f / d:>6.2f}")
            refreshes = []
            for _ in range(5):
                started = time.perf_counter()
                _timed(proxy.port, "/schedules?limit=100")
                for schedule_id in ids:
                    _timed(proxy.port, f"/schedules/{schedule_id}")
                    _timed(proxy.port, f"/schedules/{schedule_id}/runs?limit=1")
                refreshes.append((time.perf_counter() - started) * 1000)
            print(
                f"one schedules-page refresh through the forwarder ({1 + 2 * len(ids)} calls, "
                f"one at a time): median {statistics.median(refreshes):.0f} ms of 5"
            )
        finally:
            for server in servers:
                server.shutdown()
                server.server_close()
            services.schedules.store.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
