"""Growth of the one-machine store: bytes per run, and the file over a month.

Two measurements of one every-second schedule on the SQLite store:

1. **Bytes per run**, through the real code paths: a tick (plan + dispatch)
   and a worker (start, deliver to a target that answers 200, finish) over
   the real SQLite store and queue, with a fake clock moved a second at a
   time. Every table and index is measured with SQLite's ``dbstat``.
2. **A simulated month** (2.6 M runs), through the store's own statements in
   bulk so it finishes in minutes: each simulated hour the next hour's slots
   are written waiting (the materializing INSERT), the past hour's are
   rewritten finished (the worker's full-row UPDATE, with the row a real run
   ends with from step 1), and the janitor's purge runs with the retention
   (default 7 days, so the plateau shows inside the month). The file's size
   (database + WAL) is printed day by day, and the size at the default 90-day
   retention is projected from the bytes a retained run takes at the plateau.

    .venv/bin/python bench/growth.py                     # 3,000 real runs; 30 days, 7-day retention
    .venv/bin/python bench/growth.py --days 10 --retention-days 3
    .venv/bin/python bench/growth.py --bytes-only        # step 1 only
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.rows import _RUN_COLUMNS, _RUN_INSERT
from adapters.sqlite.store import SqliteStore
from adapters.sqlite.tables import us
from bootstrap.local import build_sqlite_ticker, build_sqlite_worker
from bootstrap.settings import Settings
from domain.delivery import Outcome
from domain.identity import occurrence_id
from domain.partition import Partitioning
from domain.run import DeliveryIntent
from handlers.api_models import definition_of as definition
from service.run_ports import NoTelemetry
from service.schedules import ScheduleService

START = datetime(2026, 12, 1, tzinfo=UTC)
_SET_ALL = ", ".join(f"{name.strip()} = ?" for name in _RUN_COLUMNS.split(","))
# The run tables: the rows and every index over them.
RUN_OBJECTS = (
    "occurrences",
    "sqlite_autoindex_occurrences_1",
    "sqlite_autoindex_occurrences_2",
    "occurrences_by_schedule",
    "occurrences_due",
    "occurrences_pending_bucket",
)


class FakeClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


class Answers200:
    """A target that answers as a webhook receiver does: 200 and a short body."""

    def deliver(self, target: Any, delivery: Any, *, timeout_s: float) -> Outcome:
        return Outcome("succeeded", 200, '{"ok":true}')


def file_bytes(path: Path) -> tuple[int, int]:
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size, wal.stat().st_size if wal.exists() else 0


def dbstat(store: SqliteStore) -> dict[str, tuple[int, int]]:
    """(pages, payload bytes) per table and index."""
    rows = store.records._read("SELECT name, count(*), sum(payload) FROM dbstat GROUP BY name")
    return {r[0]: (r[1], r[2]) for r in rows}


def real_runs(path: Path, n: int) -> tuple[SqliteStore, tuple[Any, ...]]:
    """``n`` seconds of an every-second schedule through the tick and the worker.

    Returns the store and the stored row of one finished run."""
    clock = FakeClock(START)
    store = SqliteStore.open(path)
    schedules = ScheduleService(store, clock, Partitioning())
    schedules.create(
        definition(
            {
                "name": "every second",
                "spec": {"every": "PT1S"},
                "target": {"type": "webhook", "url": "https://example.com/hook"},
                "payload": {"report": "sales", "region": "emea"},
            }
        )
    )
    queue = SqliteQueue(path, clock=clock)
    ticker = build_sqlite_ticker(path, queue, Settings(tick_budget_s=0), clock=clock, owner="b")
    worker, _ = build_sqlite_worker(
        path,
        InMemorySecretStore(),
        telemetry=NoTelemetry(),
        clock=clock,
        rng=random.Random(7),
        targets=Answers200(),
        store=store,
    )
    for _ in range(n):
        ticker.tick_once()
        for message in queue.receive(100, 0):
            intent = DeliveryIntent.from_dict(json.loads(message.body))
            worker.handle(intent, message.receive_count)
            queue.delete(message.receipt)
        clock.at += timedelta(seconds=1)
    # What is left in the queue is the intents of runs not started yet (queued ahead).
    waiting = store.records._read("SELECT count(*) FROM occurrences WHERE status = 'admitted'")[0][
        0
    ]
    assert queue.depth() == waiting
    finished = store.records._read(
        f"SELECT {_RUN_COLUMNS} FROM occurrences WHERE status = 'succeeded' "
        "ORDER BY scheduled_at LIMIT 1 OFFSET 100"
    )[0]
    queue.close()
    return store, tuple(finished)


def bytes_per_run(n: int) -> tuple[float, tuple[Any, ...]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "duetime.db"
        store, finished = real_runs(path, n)
        rows = store.records._read("SELECT count(*) FROM occurrences")[0][0]
        page = store.records._read("PRAGMA page_size")[0][0]
        stats = dbstat(store)
        total_pages = total_payload = 0
        print(
            f"bytes per run: {n:,} s of an every-second schedule, real tick + worker, {rows:,} runs"
        )
        print(f"  {'table or index':<32} {'pages':>6} {'B/run':>7} {'payload B/run':>14}")
        for name in RUN_OBJECTS:
            pages, payload = stats.get(name, (0, 0))
            total_pages += pages
            total_payload += payload
            print(f"  {name:<32} {pages:>6} {pages * page / rows:>7.0f} {payload / rows:>14.0f}")
        per_run = total_pages * page / rows
        print(f"  {'all':<32} {total_pages:>6} {per_run:>7.0f} {total_payload / rows:>14.0f}")
        main_b, wal_b = file_bytes(path)
        print(f"  file {main_b / 1e6:.2f} MB, WAL {wal_b / 1e6:.2f} MB")
        row_text = dict(zip([c.strip() for c in _RUN_COLUMNS.split(",")], finished, strict=True))
        print(f"  a finished run's result: {row_text['result']}")
        print(f"  its attempt log: {row_text['attempt_log']}")
        store.close()
    return per_run, finished


class Month:
    """One every-second schedule over simulated days, written in hourly bulk."""

    def __init__(self, path: Path, finished: Sequence[Any], retention: timedelta) -> None:
        self.path = path
        self.store = SqliteStore.open(path)
        self.retention = retention
        self.template = list(finished)
        self.schedule_id = finished[2]
        self.batch_s: list[float] = []
        self._inner_write = self.store.retention._write

    def _rows(self, hour: datetime) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The waiting rows of an hour's slots, and the same slots' finished rows."""
        waiting, done = [], []
        t = self.template
        log = json.loads(t[21])
        for second in range(3600):
            at = hour + timedelta(seconds=second)
            at_us = us(at)
            oid = occurrence_id(self.schedule_id, t[3], at)
            wall = at.replace(tzinfo=None).isoformat()
            key = f"{self.schedule_id}#{wall}#0"
            bucket = at_us // 60_000_000
            identity = (oid, key, self.schedule_id, t[3], t[4], at_us, wall, 0, bucket, t[9])
            planned = at_us - 90_000_000  # the default 90 s lookahead
            waiting.append(
                (*identity, "scheduled", 1, planned, 0, *[None] * 10, 0),  # revision 0
            )
            log[0][0] = log[0][1] = at_us + 2_000
            done.append(
                (
                    *identity,
                    *("succeeded", 0, planned, 1, at_us, at_us + 1_000, at_us + 2_000),
                    *(at_us + 3_000, None, t[19], None, json.dumps(log, separators=(",", ":"))),
                    *(None, None, 1, oid),  # revision 1 (its start), then the key
                )
            )
        return waiting, done

    def _timed_write(self) -> Any:
        """The store's write transaction, timed (held-lock time of each purge batch)."""
        inner = self._inner_write
        month = self

        @contextmanager
        def timed() -> Iterator[Any]:
            started = time.perf_counter()
            with inner() as db:
                yield db
            month.batch_s.append(time.perf_counter() - started)

        return timed

    def run(self, days: int) -> list[tuple[int, int, int, int, int, int]]:
        """Per day: (day, rows, file bytes, WAL bytes, pages, free pages)."""
        out = []
        waiting, _ = self._rows(START)
        with self.store.records._write() as db:
            db.executemany(_RUN_INSERT, waiting)
        update = f"UPDATE occurrences SET {_SET_ALL} WHERE occurrence_id = ?"
        for day in range(days):
            for h in range(24):
                hour = START + timedelta(days=day, hours=h)
                # The next hour materialized (waiting), this one finished.
                nxt, _ = self._rows(hour + timedelta(hours=1))
                _, done = self._rows(hour)
                with self.store.records._write() as db:
                    db.executemany(_RUN_INSERT, nxt)
                with self.store.records._write() as db:
                    db.executemany(update, done)
                now = hour + timedelta(hours=1)
                self.store.retention._write = self._timed_write()  # type: ignore[method-assign]
                try:
                    self.store.retention.purge_history(now - self.retention)
                finally:
                    self.store.retention._write = self._inner_write  # type: ignore[method-assign]
            rows = self.store.records._read("SELECT count(*) FROM occurrences")[0][0]
            storage = self.store.retention.storage()
            main_b, wal_b = file_bytes(self.path)
            out.append((day + 1, rows, main_b, wal_b, storage["pages"], storage["free_pages"]))
            print(
                f"  day {day + 1:>2}: {rows:>9,} runs  file {main_b / 1e6:>7.1f} MB  "
                f"WAL {wal_b / 1e6:>5.1f} MB  free pages {storage['free_pages']:>6,}",
                flush=True,
            )
        return out


def admission_during_purge(
    finished: Sequence[Any], n: int, backlog_hours: int, rounds: int
) -> None:
    """The tick admitting ``n`` due schedules (bench/admission.py's deployed pass),
    alone and while the janitor purges a backlog of old finished runs in a
    thread of the same process, as in the local stack."""
    from adapters.sqlite.janitor import Janitor
    from bench.admission import DUE, run_tick, seed

    print(
        f"\nadmission during a purge: {n:,} schedules due at once, tick alone and while the "
        f"janitor purges {backlog_hours * 3600:,} old finished runs (thread, same process)"
    )
    rates: dict[bool, list[float]] = {False: [], True: []}
    purged_during: list[int] = []
    for i in range(rounds):
        for with_purge in (i % 2 == 0, i % 2 != 0):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "duetime.db"
                seed(str(path), n)
                backlog = Month(path, finished, timedelta(hours=1))
                for h in range(backlog_hours):
                    _, done = backlog._rows(DUE - timedelta(days=30, hours=h))
                    with backlog.store.records._write() as db:
                        db.executemany(_RUN_INSERT, done)
                thread = None
                if with_purge:
                    queue = SqliteQueue(path)
                    janitor = Janitor(backlog.store, queue, FakeClock(DUE), timedelta(days=1))
                    thread = threading.Thread(target=janitor.run_once)
                    thread.start()
                    time.sleep(0.2)  # the purge under way
                elapsed = run_tick(str(path), n)[0]
                rates[with_purge].append(n / elapsed)
                if thread is not None:
                    left = backlog.store.records._read("SELECT count(*) FROM occurrences")[0][0] - n
                    purged_during.append(backlog_hours * 3600 - left)
                    thread.join()
                    queue.close()
                backlog.store.close()
    alone, during = statistics.median(rates[False]), statistics.median(rates[True])
    print(
        f"  tick alone {alone:,.0f}/s, during the purge {during:,.0f}/s "
        f"(medians of {rounds}; {during / alone:.0%}); runs purged by the end of the tick: "
        f"{', '.join(f'{p:,}' for p in purged_during)}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--real-runs", type=int, default=3000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--retention-days", type=int, default=7)
    parser.add_argument("--bytes-only", action="store_true")
    parser.add_argument(
        "--admission",
        action="store_true",
        help="only the tick's admission rate alone and during a purge",
    )
    parser.add_argument("--admission-n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    _, finished = bytes_per_run(args.real_runs)
    if args.bytes_only:
        return
    if args.admission:
        admission_during_purge(finished, args.admission_n, 72, args.rounds)
        return
    retention = timedelta(days=args.retention_days)
    print(
        f"\nfile size: one every-second schedule, {args.days} simulated days "
        f"({args.days * 86400:,} runs), retention {args.retention_days} d, purge every "
        "simulated hour"
    )
    with tempfile.TemporaryDirectory() as tmp:
        month = Month(Path(tmp) / "duetime.db", finished, retention)
        days = month.run(args.days)
        month.store.close()
    last = days[-1]
    used = (last[4] - last[5]) * 4096
    per_retained = used / last[1]
    plateau = [d for d in days if d[0] > args.retention_days + 1]
    if plateau:
        sizes = [d[2] for d in plateau]
        print(
            f"plateau (days {plateau[0][0]}-{plateau[-1][0]}): file "
            f"{min(sizes) / 1e6:.1f}-{max(sizes) / 1e6:.1f} MB"
        )
    print(f"bytes per retained run at the end: {per_retained:.0f} (pages in use / runs)")
    projected = per_retained * 90 * 86400
    print(f"projected at the default 90-day retention: {projected / 1e9:.2f} GB")
    if month.batch_s:
        ms = sorted(s * 1000 for s in month.batch_s)
        print(
            f"purge write transactions: {len(ms):,} (up to 500 rows each), write lock held "
            f"median {statistics.median(ms):.1f} ms, p99 {ms[int(len(ms) * 0.99)]:.1f} ms, "
            f"max {ms[-1]:.1f} ms"
        )
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
