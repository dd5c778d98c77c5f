"""Two tick processes on one SQLite file: no duplicate, nothing lost.

Both processes run the real tick (plan, leases, dispatch) at the same time
against one database file, on a shared simulated clock that runs ten times
faster than real time, for two real seconds. A final tick (after their leases
expired) sweeps up. Every slot that came due is admitted exactly once, and
every admitted occurrence was sent.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from adapters.sqlite.store import SqliteStore
from domain.run import DeliveryIntent, RunStatus
from domain.spec import slots_after
from service.ports import DeliveryQueue
from tests.conftest import FakeClock, definition, make_world, utc

START = utc("2026-12-01T08:00:00Z")
SPEED = 10.0
REAL_SECONDS = 2.0
SCHEDULES = 12


class ScaledClock:
    """Simulated time shared by processes: START plus real elapsed time x SPEED."""

    def __init__(self, real_start: float) -> None:
        self.real_start = real_start

    def now(self) -> datetime:
        return START + timedelta(seconds=(time.time() - self.real_start) * SPEED)


class RecordingQueue(DeliveryQueue):
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        self.sent.extend(i.occurrence_id for i in intents)
        return []


def _tick_process(db: str, owner: str, real_start: float, out: str) -> None:
    from domain.partition import Partitioning
    from service.planning.config import TickConfig
    from service.planning.ticker import Ticker

    store = SqliteStore.open(db)
    queue = RecordingQueue()
    config = TickConfig(partitioning=Partitioning(shards=8, bucket_s=60))
    ticker = Ticker(store, queue, ScaledClock(real_start), config, owner=owner)
    passes = 0
    while time.time() < real_start + REAL_SECONDS:
        ticker.tick_once()
        passes += 1
        time.sleep(0.005)
    Path(out).write_text(json.dumps({"sent": queue.sent, "passes": passes}))
    store.close()


def test_two_processes_ticking_one_file_admit_each_occurrence_once(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    clock = FakeClock(START - timedelta(seconds=1))
    world = make_world(db, clock, shards=8)
    ids = [
        world.schedules.create(
            definition(
                {
                    "name": f"job {i}",
                    "spec": {"every": "PT1S", "start_at": "2026-12-01T08:00:00Z"},
                    "target": {"type": "webhook", "url": "https://example.com/hook"},
                    "policy": {"overdue": "catch_up_all"},
                }
            )
        )[0].schedule_id
        for i in range(SCHEDULES)
    ]
    real_start = time.time() + 0.5
    context = multiprocessing.get_context("fork")
    outs = [tmp_path / f"tick-{n}.json" for n in range(2)]
    processes = [
        context.Process(target=_tick_process, args=(str(db), f"tick-{n}", real_start, str(out)))
        for n, out in enumerate(outs)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    results = [json.loads(out.read_text()) for out in outs]
    assert all(r["passes"] > 3 for r in results)

    # A last tick, once their leases have expired, sweeps up the final seconds.
    end = START + timedelta(seconds=REAL_SECONDS * SPEED + 0.5)
    clock.set(end + world.config.lease_ttl)
    final = world.ticker("tick-final")
    final.tick_once()
    now = clock.now()

    sent = [oid for r in results for oid in r["sent"]] + world.queue.ids()
    for sid in ids:
        schedule = world.store.schedules.get(sid)
        assert schedule is not None
        expected = []
        first = START - timedelta(microseconds=1)  # start_at is inclusive
        for slot in slots_after(schedule.current.spec, schedule.current.policy.dst, first):
            if slot.scheduled_at > now:
                break
            expected.append(slot.scheduled_at)
        runs = world.store.records.runs(sid, 1000).items
        due = sorted(r.scheduled_at for r in runs if r.scheduled_at <= now)
        assert due == expected  # nothing lost, no second copy
        assert all(r.status is RunStatus.ADMITTED for r in runs if r.scheduled_at <= now)
        assert {r.occurrence_id for r in runs if r.scheduled_at <= now} <= set(sent)
    # Between them they sent every intent once at least; which one sent what is
    # whichever leased the shard first.
    assert any(r["sent"] for r in results)
