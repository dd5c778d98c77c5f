"""What run listings cost on the SQLite store.

1. The write cost of the ``occurrences_by_time`` index (the listing across
   schedules): inserting occurrences into a store with the index and into
   one where it was dropped, interleaved round by round; medians and ratio.
2. How long a listing page takes over a store of ``--runs`` occurrences in
   ``--schedules`` schedules: a schedule's newest page, the newest page
   across schedules, and ``status=failed`` across schedules (a rare status,
   1 run in 50 failed), by the store's ``find_runs``.

Usage: .venv/bin/python bench/run_listing.py [--runs 50000] [--schedules 500] [--rounds 5]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adapters.sqlite.store import SqliteStore
from domain.run import Run, RunStatus, new_occurrence
from domain.spec import Slot
from service.ports import RunQuery
from tests.conftest import build_schedule, random_schedule_id

START = datetime(2026, 1, 1, tzinfo=UTC)


def occurrences(schedule_ids: list[str], count: int, offset: int = 0) -> list[Run]:
    runs = []
    for n in range(count):
        at = START + timedelta(seconds=10 * (n + offset))
        sid = schedule_ids[n % len(schedule_ids)]
        run = new_occurrence(
            sid, 1, Slot(at, at.replace(tzinfo=None)), bucket=0, shard=0, materialized_at=at
        )
        status = RunStatus.FAILED if n % 50 == 0 else RunStatus.SUCCEEDED
        runs.append(replace(run, status=status, pending=False))
    return runs


def store_with(path: Path, schedules: int, index: bool) -> tuple[SqliteStore, list[str]]:
    store = SqliteStore.open(path)
    if not index:
        with store.records._write() as db:
            db.execute("DROP INDEX occurrences_by_time")
    ids = [random_schedule_id() for _ in range(schedules)]
    for sid in ids:
        store.schedules.create(build_schedule(START, schedule_id=sid))
    return store, ids


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50_000)
    parser.add_argument("--schedules", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    batch = args.runs // args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        with_index, ids = store_with(Path(tmp) / "with.db", args.schedules, True)
        without, ids2 = store_with(Path(tmp) / "without.db", args.schedules, False)
        per_run: dict[str, list[float]] = {"with index": [], "without": []}
        for r in range(args.rounds):
            a = occurrences(ids, batch, r * batch)
            b = occurrences(ids2, batch, r * batch)
            per_run["with index"].append(
                timed(lambda a=a: with_index.records.insert(a)) / batch * 1e6
            )
            per_run["without"].append(timed(lambda b=b: without.records.insert(b)) / batch * 1e6)
        print(
            f"python {platform.python_version()} on {platform.machine()}, {args.runs} runs, "
            f"{args.schedules} schedules, {args.rounds} rounds"
        )
        med = {k: statistics.median(v) for k, v in per_run.items()}
        print(
            f"insert, microseconds per occurrence (median): with index {med['with index']:.1f}, "
            f"without {med['without']:.1f}, ratio {med['with index'] / med['without']:.2f}x"
        )
        queries = {
            "one schedule, newest 50": RunQuery(schedule_id=ids[7]),
            "all schedules, newest 50": RunQuery(),
            "all schedules, status=failed, 50": RunQuery(statuses=frozenset({RunStatus.FAILED})),
            "all schedules, since a day ago": RunQuery(since=START + timedelta(days=4)),
        }
        for name, query in queries.items():
            times = [
                timed(lambda q=query: with_index.records.find_runs(q, 50)) * 1e3 for _ in range(21)
            ]
            print(f"find_runs {name}: median {statistics.median(times):.2f} ms")
        with_index.close()
        without.close()


if __name__ == "__main__":
    main()
