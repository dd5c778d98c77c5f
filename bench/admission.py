"""Admission throughput on the SQLite store: N schedules due in the same minute.

For each size, one tick process (plan + dispatch, as the handler runs it)
admits and enqueues every occurrence, and is timed against the raw ceiling
measured in the same run: the same conditional inserts and updates (the
store's own statements) in the same transaction shapes, doing nothing else.
The ratio is taken per round, tick and ceiling side by side, since this
machine is shared and absolute rates drift. Peak memory of the tick, in a
process of its own, shows that it pages: the traced Python peak should not
grow with N.

The path timed is the deployed pass (``queued``, the only one the tick has),
a minute before 09:00: planned, admitted by the write that stores them, and
enqueued to become visible at 09:00. Its ceiling is those same writes. (Until
2026-12-05 the bench also timed a tick that admitted a slot only when due,
``--path direct`` and ``--path ahead``; that mode is gone, docs/decisions.md.)

    .venv/bin/python bench/admission.py            # 10,000 and 100,000, 3 rounds
    .venv/bin/python bench/admission.py --quick    # 2,000 and 10,000, 1 round
    .venv/bin/python bench/admission.py --sizes 10000 --rounds 3

The queue is an outbox table in the same database file (one INSERT per
intent, batched), so "enqueued" means durably written, as the local stack's
SQLite queue does.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.sqlite.rows import _RUN_INSERT, run_row
from adapters.sqlite.run_records import _MARK_SENT
from adapters.sqlite.schedules import _MATERIALIZE, _SCHEDULE_COLUMNS, SqliteSchedules
from adapters.sqlite.store import SqliteStore
from adapters.sqlite.tables import us
from bootstrap.local import build_sqlite_ticker
from domain.partition import Partitioning
from domain.run import DeliveryIntent, new_occurrence
from domain.schedule import Schedule, ScheduleState, ScheduleVersion, parse_policy
from domain.spec import Slot, next_slot, parse_spec
from domain.targets import parse_target
from service.planning.config import TickConfig
from service.ports import DeliveryQueue

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
    store = SqliteStore.open(path)
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
        rows.append(SqliteSchedules._schedule_row(schedule))
        versions.append(version)
    with store.records._write() as db:
        marks = ",".join("?" * len(rows[0]))
        db.executemany(f"INSERT INTO schedules ({_SCHEDULE_COLUMNS}) VALUES ({marks})", rows)
        for version in versions:
            SqliteSchedules._insert_version(db, version)
    store.close()


def run_tick(path: str, n: int, *, trace: bool = False) -> tuple[float, int, int]:
    """One tick process, a minute before 09:00: passes until every occurrence
    is planned, admitted by the write that stores it, and enqueued.

    With ``trace``, peak memory is traced (which slows Python down: the timed
    runs do not trace)."""
    store = SqliteStore.open(path)
    queue = OutboxQueue(path)
    config = TickConfig(
        partitioning=Partitioning(shards=16, bucket_s=60),
        lookahead=timedelta(seconds=90),
    )
    clock = FixedClock(DUE - timedelta(seconds=60))
    ticker = build_sqlite_ticker(store, queue, clock=clock, config=config, owner="bench")
    planned = admitted = 0
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
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


def _enqueue_and_mark_sent(
    db: sqlite3.Connection,
    queue: OutboxQueue,
    intents: list[tuple[str, str]],
    sent: list[tuple[int, str]],
) -> None:
    """The end of every ceiling batch: the outbox insert of its intents, then the
    pending-flag clear, each a transaction of its own (as the tick does)."""
    queue.db.execute("BEGIN IMMEDIATE")
    queue.db.executemany("INSERT INTO outbox VALUES (?, ?, 0)", intents)
    queue.db.execute("COMMIT")
    db.execute("BEGIN IMMEDIATE")
    db.executemany(_MARK_SENT, sent)
    db.execute("COMMIT")


def _check_all_sent(db: sqlite3.Connection, n: int) -> None:
    changed = db.execute(
        "SELECT COUNT(*) FROM occurrences WHERE status = 'admitted' AND pending = 0"
    ).fetchone()[0]
    assert changed == n, changed


def raw_ceiling(path: str, n: int, batch: int = 500) -> float:
    """The same conditional writes as the tick, batched as it batches them, with
    nothing else: no reads, no Python objects, every parameter built before the
    clock starts.

    Per occurrence, the store's own statements, in the tick's transaction
    shapes: for each plan page, one transaction with the conditional schedule
    update (version, next_due, active) and the insert of the full record,
    admitted (its real shard, bucket and wall time) on the unique keys; then
    the outbox insert of its intents; then the pending-flag clear. Each is an
    ``executemany`` per transaction, the fastest way SQLite takes them from
    Python, which is what the store does too.
    """
    store = SqliteStore.open(path)
    db = store.records._db
    queue = OutboxQueue(path)
    parts = Partitioning(shards=16, bucket_s=60)
    now = DUE + timedelta(seconds=1)
    due_us, next_us, now_us = us(DUE), us(DUE + timedelta(days=1)), us(now)
    slot = Slot(DUE, DUE.replace(tzinfo=None))
    heads, rows, intents, sent = [], [], [], []
    for i in range(n):
        sid = f"sch_bench{i:08d}"
        heads.append((next_us, due_us, sid, 1, due_us))
        run = new_occurrence(
            sid,
            1,
            slot,
            bucket=parts.placement(DUE, now),
            shard=parts.shard(sid),
            materialized_at=now,
            admitted_at=now,
        )
        rows.append(run_row(run))
        intents.append((run.occurrence_id, repr(DeliveryIntent.for_run(run).to_dict())))
        sent.append((now_us, run.occurrence_id))
    started = time.perf_counter()
    for start in range(0, n, batch):
        end = start + batch
        db.execute("BEGIN IMMEDIATE")
        db.executemany(_MATERIALIZE, heads[start:end])
        db.executemany(_RUN_INSERT, rows[start:end])
        db.execute("COMMIT")
        _enqueue_and_mark_sent(db, queue, intents[start:end], sent[start:end])
    elapsed = time.perf_counter() - started
    _check_all_sent(db, n)
    store.close()
    return elapsed


def memory(n: int) -> tuple[float, float, float]:
    """Peak memory of one tick over N due, in a fresh process so that nothing
    else (seeding, earlier rounds) is counted: the tick's traced Python peak, and
    the process's peak RSS before and after the tick (MiB). RSS also holds
    SQLite's page cache, which fills up to the store's ``cache_size`` (64 MiB)
    as the file grows, and stays there."""
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "memory.db")
        seed(db, n)
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(n), db],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    traced, rss_before, rss_after = (float(x) for x in out.split())
    return traced, rss_before, rss_after


def _peak_rss_mib() -> float:
    """This process's peak RSS. Linux's VmHWM, which starts afresh at exec
    (ru_maxrss keeps the parent's peak across it); ru_maxrss elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**10  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def _memory_child(n: int, db: str) -> None:
    before = _peak_rss_mib()
    _, traced, _ = run_tick(db, n, trace=True)
    print(traced / 2**20, before, _peak_rss_mib())


def measure(n: int, rounds: int) -> dict[str, float]:
    """Rounds of tick and raw ceiling side by side on fresh files, alternating
    which goes first; the ratio is taken per round, then the median."""
    ticks, ceilings, ratios = [], [], []
    for i in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            tick_db = str(Path(tmp) / "tick.db")
            raw_db = str(Path(tmp) / "raw.db")
            seed(tick_db, n)
            seed(raw_db, n)
            if i % 2:
                raw_s = raw_ceiling(raw_db, n)
                tick_s = run_tick(tick_db, n)[0]
            else:
                tick_s = run_tick(tick_db, n)[0]
                raw_s = raw_ceiling(raw_db, n)
        ticks.append(tick_s)
        ceilings.append(raw_s)
        ratios.append(raw_s / tick_s)
    traced, rss_before, rss_after = memory(n)
    tick_s = statistics.median(ticks)
    return {
        "n": n,
        "tick_s": tick_s,
        "tick_per_s": n / tick_s,
        "raw_per_s": n / statistics.median(ceilings),
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "traced_mib": traced,
        "rss_before_mib": rss_before,
        "rss_after_mib": rss_after,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 and 10,000, one round")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--memory-child", nargs=2, metavar=("N", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        n, db = args.memory_child
        _memory_child(int(n), db)
        return
    sizes = args.sizes or ((2_000, 10_000) if args.quick else (10_000, 100_000))
    rounds = args.rounds or (1 if args.quick else 3)
    print(
        f"admission on SQLite: one tick process, 16 shards; medians of {rounds} round(s), "
        "ratio = raw ceiling time / tick time per round (median, min-max)"
    )
    header = ("path", "schedules", "tick s", "occ/s", "raw occ/s", "ratio", "min-max", "traced")
    print("{:>6} {:>10} {:>7} {:>8} {:>9} {:>6} {:>9} {:>7} {:>13}".format(*header, "rss"))
    for n in sizes:
        r = measure(n, rounds)
        spread = f"{r['ratio_min']:.0%}-{r['ratio_max']:.0%}"
        rss = f"{r['rss_before_mib']:.0f}->{r['rss_after_mib']:.0f}"
        print(
            f"{'queued':>6} {r['n']:>10,} {r['tick_s']:>7.2f} {r['tick_per_s']:>8,.0f} "
            f"{r['raw_per_s']:>9,.0f} {r['ratio']:>6.0%} {spread:>9} "
            f"{r['traced_mib']:>5.1f}Mi {rss:>11}Mi"
        )


if __name__ == "__main__":
    main()
