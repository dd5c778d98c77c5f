"""Admission throughput on the SQLite store: N schedules due in the same minute.

For each size, one tick process (plan + dispatch, as the handler runs it)
materializes, admits and enqueues every occurrence, and is timed against the
raw ceiling measured in the same run: the same number of conditional inserts
and updates in batched SQLite transactions, doing nothing else. Peak traced
memory during the tick shows that it pages (it should not grow with N).

    .venv/bin/python bench/admission.py            # 10,000 and 100,000, 3 rounds
    .venv/bin/python bench/admission.py --quick    # 2,000 and 10,000, 1 round

The queue is an outbox table in the same database file (one INSERT per
intent, batched), so "enqueued" means durably written, as the local stack's
SQLite queue does.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.sqlite.store import SqliteStore, us
from domain.partition import Partitioning
from domain.run import DeliveryIntent
from domain.schedule import Schedule, ScheduleState, ScheduleVersion, parse_policy
from domain.spec import next_slot, parse_spec
from domain.targets import parse_target
from service.ports import DeliveryQueue
from service.tick import TickConfig, Ticker

DUE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


class FixedClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


class OutboxQueue(DeliveryQueue):
    """Delivery intents written to a table (batched, durable)."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS outbox (occurrence_id TEXT, body TEXT, visible_at INTEGER)"
        )
        self.count = 0

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(
            "INSERT INTO outbox VALUES (?, ?, 0)",
            [(i.occurrence_id, repr(i.to_dict())) for i in intents],
        )
        self.db.execute("COMMIT")
        self.count += len(intents)
        return []


def seed(path: str, n: int) -> None:
    """N schedules, all due at 09:00 UTC: a mix of zones whose 09:00 is that instant."""
    store = SqliteStore(path)
    created = DUE - timedelta(days=1)
    target = parse_target({"type": "webhook", "url": "https://example.com/hook"})
    policy = parse_policy({"overdue": "catch_up_all"})
    spec = parse_spec({"cron": "0 9 * * *", "time_zone": "UTC"}, created_at=created)
    slot = next_slot(spec, policy.dst, created)
    assert slot is not None and slot.scheduled_at == DUE
    rows = []
    versions = []
    for i in range(n):
        sid = f"sch_bench{i:08d}"
        version = ScheduleVersion(sid, 1, "bench", spec, policy, target, {"i": i}, created)
        schedule = Schedule(sid, 1, ScheduleState(), version, DUE, None, created, created)
        rows.append(SqliteStore._schedule_row(schedule))
        versions.append(version)
    with store._write() as db:
        db.executemany("INSERT INTO schedules VALUES (?,?,?,?,?,?,?,?,?)", rows)
        for version in versions:
            SqliteStore._insert_version(db, version)
    store.close()


def run_tick(path: str, n: int, *, trace: bool = False) -> tuple[float, int, int]:
    """One tick process: passes until every occurrence is admitted and enqueued.

    With ``trace``, peak memory is traced (which slows Python down: the timed
    runs do not trace)."""
    store = SqliteStore(path)
    queue = OutboxQueue(path)
    config = TickConfig(
        partitioning=Partitioning(shards=16, bucket_s=60),
        lookahead=timedelta(seconds=90),
    )
    clock = FixedClock(DUE + timedelta(seconds=1))
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    ticker = Ticker(store, queue, clock, config, owner="bench")
    planned = admitted = 0
    while queue.count < n:
        report = ticker.tick_once()
        planned += report.plan.materialized
        admitted += report.dispatch.admitted
        if not (report.plan.materialized or report.dispatch.admitted or report.dispatch.sent):
            raise RuntimeError("the tick stopped making progress")
    elapsed = time.perf_counter() - started
    peak = 0
    if trace:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert planned == admitted == queue.count == n, (planned, admitted, queue.count)
    store.close()
    return elapsed, peak, planned


def raw_ceiling(path: str, n: int, batch: int = 500) -> float:
    """The same conditional writes, batched, with nothing else: per occurrence one
    conditional schedule update, one insert on the business key, one conditional
    admission, one outbox insert and one pending-flag clear."""
    store = SqliteStore(path)
    db = store._db
    queue = OutboxQueue(path)
    ids = [f"sch_bench{i:08d}" for i in range(n)]
    due_us = us(DUE)
    next_us = us(DUE + timedelta(days=1))
    now_us = us(DUE + timedelta(seconds=1))
    started = time.perf_counter()
    for start in range(0, n, batch):
        chunk = ids[start : start + batch]
        db.execute("BEGIN IMMEDIATE")
        for sid in chunk:
            db.execute(
                "UPDATE schedules SET next_due = ?, last_materialized_at = ?, updated_at = ? "
                "WHERE schedule_id = ? AND version = 1 AND next_due = ? "
                "AND paused = 0 AND deleted_at IS NULL",
                (next_us, due_us, now_us, sid, due_us),
            )
            db.execute(
                "INSERT INTO occurrences (occurrence_id, business_key, schedule_id, version, "
                "kind, scheduled_at, wall, fold, bucket, shard, status, pending) "
                "VALUES (?, ?, ?, 1, 'scheduled', ?, '2026-12-01T09:00:00', 0, 0, 0, "
                "'scheduled', 1) ON CONFLICT DO NOTHING",
                (f"{sid}.v1.20261201T090000Z", f"{sid}#2026-12-01T09:00:00#0", sid, due_us),
            )
        db.execute("COMMIT")
    for start in range(0, n, batch):
        chunk = ids[start : start + batch]
        db.execute("BEGIN IMMEDIATE")
        for sid in chunk:
            db.execute(
                "UPDATE occurrences SET status = 'admitted', admitted_at = ? "
                "WHERE occurrence_id = ? AND status = 'scheduled'",
                (now_us, f"{sid}.v1.20261201T090000Z"),
            )
        db.execute("COMMIT")
        queue.db.execute("BEGIN IMMEDIATE")
        queue.db.executemany(
            "INSERT INTO outbox VALUES (?, '', 0)", [(f"{sid}.v1",) for sid in chunk]
        )
        queue.db.execute("COMMIT")
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            "UPDATE occurrences SET pending = 0, sent_at = ? WHERE occurrence_id = ? "
            "AND pending = 1 AND status != 'scheduled'",
            [(now_us, f"{sid}.v1.20261201T090000Z") for sid in chunk],
        )
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


def measure(n: int, rounds: int) -> dict[str, float]:
    ticks, ceilings, peaks = [], [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            tick_db = str(Path(tmp) / "tick.db")
            raw_db = str(Path(tmp) / "raw.db")
            seed(tick_db, n)
            seed(raw_db, n)
            elapsed, _, _ = run_tick(tick_db, n)
            ticks.append(elapsed)
            ceilings.append(raw_ceiling(raw_db, n))
    with tempfile.TemporaryDirectory() as tmp:
        traced_db = str(Path(tmp) / "traced.db")
        seed(traced_db, n)
        peaks.append(run_tick(traced_db, n, trace=True)[1])
    tick_s = statistics.median(ticks)
    raw_s = statistics.median(ceilings)
    return {
        "n": n,
        "tick_s": tick_s,
        "tick_per_s": n / tick_s,
        "raw_per_s": n / raw_s,
        "ratio": raw_s / tick_s,
        "peak_mib": max(peaks) / 2**20,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)
    sizes = (2_000, 10_000) if args.quick else (10_000, 100_000)
    rounds = args.rounds or (1 if args.quick else 3)
    print(f"admission on SQLite, {rounds} round(s), medians; one tick process, 16 shards")
    header = ("schedules", "tick s", "occ/s", "raw occ/s", "ratio", "peak MiB")
    print("{:>10} {:>8} {:>9} {:>10} {:>6} {:>9}".format(*header))
    for n in sizes:
        r = measure(n, rounds)
        print(
            f"{r['n']:>10,} {r['tick_s']:>8.2f} {r['tick_per_s']:>9,.0f} "
            f"{r['raw_per_s']:>10,.0f} {r['ratio']:>6.0%} {r['peak_mib']:>9.1f}"
        )


if __name__ == "__main__":
    main()
