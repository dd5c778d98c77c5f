"""What reading a schedule costs: DynamoDB requests per API call (on moto,
in-process; counts, not timings, so they hold on AWS), and the SQLite local
stack's median time per GET /schedules/{id} (this machine).

A schedule with ``--runs`` finished runs (every 10 s, the last ones failed)
and a few planned ahead, edited once. Counted calls: GET /schedules/{id}
(status, recent runs, planned under older versions, watch), GET /schedules
(a page of ``--schedules``), GET /schedules/{id}/versions, POST
/schedules/{id}/acknowledge, and one watchdog pass per schedule.

    .venv/bin/python bench/describe_requests.py
    .venv/bin/python bench/describe_requests.py --runs 300 --schedules 50 --repeat 200
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.moto_env import use_dummy_aws_env

use_dummy_aws_env()

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from adapters.dynamodb.local import create_store_tables  # noqa: E402
from adapters.dynamodb.store import dynamo_store  # noqa: E402
from adapters.secrets import InMemorySecretStore  # noqa: E402
from adapters.sqlite.store import SqliteStore  # noqa: E402
from domain.partition import Partitioning  # noqa: E402
from domain.run import RunStatus, new_occurrence  # noqa: E402
from domain.spec import Slot  # noqa: E402
from handlers.api import ApiServices, handler  # noqa: E402
from service.ports import Store  # noqa: E402
from service.schedules import ScheduleService  # noqa: E402
from service.watchdog import Watchdog  # noqa: E402
from tests.conftest import FakeClock  # noqa: E402
from tests.handlers.test_api import rest_event  # noqa: E402

NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
PARTS = Partitioning()
WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


def _call(services: ApiServices, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    event = rest_event(
        method,
        path,
        body=None if body is None else json.dumps(body),
        headers={"Content-Type": "application/json", **kw.get("headers", {})},
        query=kw.get("query"),
    )
    answer = handler(event, None, service=services)
    assert answer["statusCode"] < 300, answer
    return json.loads(answer["body"])


def _history(store: Store, schedule_id: str, runs: int, clock: FakeClock) -> None:
    """``runs`` finished occurrences every 10 s up to now (the newest 3 failed),
    then 9 planned ahead, all under version 1."""
    records = []
    for i in range(-runs, 9):
        at = clock.now() + timedelta(seconds=10 * i)
        run = new_occurrence(
            schedule_id,
            1,
            Slot(at, at.replace(tzinfo=None)),
            bucket=PARTS.bucket(at),
            shard=PARTS.shard(schedule_id),
            materialized_at=at,
        )
        if i < -3:
            run = run.closed(RunStatus.SKIPPED, "superseded", at)  # finished, not a success
        elif i < 0:
            run = run.closed(RunStatus.FAILED, "HTTP 400", at)
        records.append(run)
    store.records.insert(records)


def _world(store: Store, schedules: int, runs: int) -> tuple[ApiServices, str, FakeClock]:
    clock = FakeClock(NOW)
    services = ApiServices(ScheduleService(store, clock), InMemorySecretStore())
    first = ""
    for n in range(schedules):
        body = {"name": f"s{n}", "spec": {"every": "PT10S"}, "target": WEBHOOK}
        created = _call(services, "POST", "/schedules", body)
        first = first or created["id"]
    _history(store, first, runs, clock)
    edited = {"name": "s0 edited", "spec": {"every": "PT10S"}, "target": WEBHOOK}
    _call(services, "PUT", f"/schedules/{first}", edited, headers={"If-Match": '"1"'})
    return services, first, clock


def dynamodb_counts(schedules: int, runs: int) -> dict[str, dict[str, int]]:
    with mock_aws():
        client = boto3.client("dynamodb")
        store = dynamo_store(client, create_store_tables(client, "bench"), due_shards=3)
        services, first, clock = _world(store, schedules, runs)
        counts: Counter[str] = Counter()
        client.meta.events.register(
            "before-call.dynamodb.*", lambda model, **_: counts.update([model.name])
        )

        def measure(action: Any) -> dict[str, int]:
            counts.clear()
            store.schedules._versions.clear()  # a cold container: no version read from the cache
            action()
            return dict(counts)

        watchdog = Watchdog(store, clock)
        out = {
            "GET /schedules/{id}": measure(lambda: _call(services, "GET", f"/schedules/{first}")),
            f"GET /schedules (limit {schedules})": measure(
                lambda: _call(services, "GET", "/schedules", query={"limit": str(schedules)})
            ),
            "GET /schedules/{id}/versions": measure(
                lambda: _call(services, "GET", f"/schedules/{first}/versions")
            ),
            "watchdog check of the failing schedule": measure(
                lambda: watchdog.check(store.schedules.get(first), clock.now())  # type: ignore[arg-type]
            ),
            "POST /schedules/{id}/acknowledge": measure(
                lambda: _call(services, "POST", f"/schedules/{first}/acknowledge")
            ),
        }
        return out


def sqlite_median_ms(runs: int, repeat: int) -> float:
    with tempfile.TemporaryDirectory(prefix="duetime-bench-") as directory:
        store = SqliteStore.open(Path(directory) / "duetime.db")
        services, first, _ = _world(store, 1, runs)
        for _ in range(10):  # warm: caches, the first statements prepared
            _call(services, "GET", f"/schedules/{first}")
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            _call(services, "GET", f"/schedules/{first}")
            times.append(time.perf_counter() - started)
        store.close()
        return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=100)
    args = parser.parse_args()
    print(f"machine: {platform.machine()} {platform.python_version()}, {args.runs} runs")
    for call, requests in dynamodb_counts(args.schedules, args.runs).items():
        total = sum(requests.values())
        detail = ", ".join(f"{name} {n}" for name, n in sorted(requests.items()))
        print(f"  {call}: {total} DynamoDB requests ({detail})")
    for runs in (0, args.runs):
        median = sqlite_median_ms(runs, args.repeat)
        print(f"  SQLite GET /schedules/{{id}}, {runs} runs: median {median:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
