"""Direct admission on the SQLite store: a slot already due when the planner
materializes it, and admitted by the start decision, is admitted by that
write, however late, in the shards the tick holds and whose due work is all
done; everything else takes the dispatch path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite.run_records import SqliteRunRecords
from adapters.sqlite.schedules import SqliteSchedules
from domain.run import PendingOccurrence, RunStatus
from service.planning.pass_state import PassState
from service.ports import Materialization, Materialized, PlanSession
from tests.conftest import FakeClock, World, definition, make_world, utc, with_ports

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


class CountingRecords(SqliteRunRecords):
    """Counts the conditional admissions (the dispatch path)."""

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.admit_calls: list[list[str]] = []

    def admit(self, occurrences: Sequence[PendingOccurrence], now: datetime) -> list[str]:
        self.admit_calls.append([o.occurrence_id for o in occurrences])
        return super().admit(occurrences, now)


class HookedSchedules(SqliteSchedules):
    """Lets a test act just before a materialization is written."""

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.before_materialize: Callable[[], None] | None = None

    def materialize(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        *,
        until: datetime | None = None,
        session: PlanSession | None = None,
    ) -> Materialized:
        if self.before_materialize is not None:
            hook, self.before_materialize = self.before_materialize, None
            hook()
        return super().materialize(batch, now, until=until, session=session)


def _world(tmp_path: Path, clock: FakeClock, *, shards: int = 4, **config: object) -> World:
    world = make_world(tmp_path / "d.db", clock, lookahead=timedelta(0), shards=shards)
    world.store = with_ports(world.store, records=CountingRecords, schedules=HookedSchedules)
    world.schedules.store = world.store
    world.config = replace(world.config, **config)  # type: ignore[arg-type]
    return world


def _create(world: World, cron: str, name: str = "job") -> str:
    body = {"name": name, "spec": {"cron": cron}, "target": WEBHOOK}
    return world.schedules.create(definition(body))[0].schedule_id


def _records(world: World) -> CountingRecords:
    assert isinstance(world.store.records, CountingRecords)
    return world.store.records


def _schedules(world: World) -> HookedSchedules:
    assert isinstance(world.store.schedules, HookedSchedules)
    return world.store.schedules


@pytest.fixture
def world(tmp_path: Path, clock: FakeClock) -> World:
    return _world(tmp_path, clock)


def test_a_slot_due_when_planned_is_admitted_by_the_write_that_materializes_it(
    world: World, clock: FakeClock
) -> None:
    sid = _create(world, "5 8 * * *")
    clock.set(utc("2026-12-01T08:05:01Z"))
    report = world.ticker().tick_once()
    [run] = world.store.records.runs(sid, 10).items
    assert run.occurrence_id == f"{sid}.v1.20261201T080500Z"
    assert run.status is RunStatus.ADMITTED
    assert run.materialized_at == run.admitted_at == run.sent_at == clock.now()
    assert not run.pending
    assert world.queue.ids() == [run.occurrence_id]
    assert _records(world).admit_calls == []  # no read-back, no second write
    assert (report.plan.materialized, report.dispatch.admitted, report.dispatch.sent) == (1, 1, 1)
    assert report.dispatch.max_lag_s == 1.0
    # Later passes find nothing to do: one record, one intent.
    clock.advance(timedelta(seconds=5))
    world.ticker().tick_once()
    assert world.queue.ids() == [run.occurrence_id]


def test_a_shard_with_due_work_waiting_admits_oldest_first_through_dispatch(
    tmp_path: Path, clock: FakeClock
) -> None:
    world = _world(tmp_path, clock, shards=1, lookahead=timedelta(seconds=90))
    clock.set(utc("2026-12-01T07:00:00Z"))
    early = _create(world, "0 8 * * *", "early")
    clock.set(utc("2026-12-01T07:59:00Z"))
    world.ticker().planner.plan(
        PassState(clock.now())
    )  # 08:00 stored, waiting; no dispatch ran since
    late = _create(world, "1 8 * * *", "late")
    clock.set(utc("2026-12-01T08:01:00Z"))
    world.config = replace(world.config, lookahead=timedelta(0))
    world.ticker().tick_once()
    # The shard had 08:00 waiting, so 08:01 was stored waiting too, and dispatch
    # admitted both in order.
    assert world.queue.ids() == [f"{early}.v1.20261201T080000Z", f"{late}.v1.20261201T080100Z"]
    assert _records(world).admit_calls == [world.queue.ids()]


def test_a_slot_found_late_after_an_outage_is_admitted_by_the_write_that_stores_it(
    world: World, clock: FakeClock
) -> None:
    clock.set(utc("2026-12-01T07:00:00Z"))
    sid = _create(world, "0 8 * * *")
    clock.set(utc("2026-12-01T08:10:00Z"))  # no tick for ten minutes
    report = world.ticker().tick_once()
    [run] = world.store.records.runs(sid, 10).items
    # The start decision admits it (the default policy: the latest slot runs),
    # so it is stored admitted, however long ago it was due.
    assert run.status is RunStatus.ADMITTED and run.admitted_at == clock.now()
    assert _records(world).admit_calls == []
    assert report.dispatch.admitted == 1 and world.queue.ids() == [run.occurrence_id]
    assert report.dispatch.max_lag_s == 600.0


def test_shards_held_by_another_tick_are_not_admitted_into(world: World, clock: FakeClock) -> None:
    sid = _create(world, "5 8 * * *")
    clock.set(utc("2026-12-01T08:05:01Z"))
    other = world.ticker("tick-other")
    for shard in range(world.config.partitioning.shards):
        assert other.dispatcher.lease(shard, clock.now()) is not None
    report = world.ticker("tick-1").tick_once()
    [run] = world.store.records.runs(sid, 10).items
    assert run.status is RunStatus.SCHEDULED and run.pending
    assert report.plan.materialized == 1 and report.dispatch.admitted == 0
    assert world.queue.sent == []
    # The two share the shards from now on; whichever holds this one admits it
    # through dispatch.
    other.tick_once()
    world.ticker("tick-1").tick_once()
    assert world.queue.ids() == [run.occurrence_id]
    assert _records(world).admit_calls == [[run.occurrence_id]]


def test_direct_admissions_count_against_the_shards_admit_limit(
    tmp_path: Path, clock: FakeClock
) -> None:
    world = _world(tmp_path, clock, shards=1, admit_limit=2)
    ids = [_create(world, "5 8 * * *", f"job {i}") for i in range(5)]
    clock.set(utc("2026-12-01T08:05:01Z"))
    ticker = world.ticker()
    admitted = []
    for _ in range(4):
        admitted.append(ticker.tick_once().dispatch.admitted)
        clock.advance(timedelta(seconds=1))
    assert admitted == [2, 2, 1, 0]
    assert sorted(i.split(".")[0] for i in world.queue.ids()) == sorted(ids)
    # Two directly in the first pass; the rest through dispatch, two then one.
    assert [len(c) for c in _records(world).admit_calls] == [2, 1]


def test_a_pause_that_lands_before_the_write_admits_nothing(world: World, clock: FakeClock) -> None:
    sid = _create(world, "5 8 * * *")
    clock.set(utc("2026-12-01T08:05:01Z"))
    _schedules(world).before_materialize = lambda: world.schedules.pause(sid, "maintenance")
    report = world.ticker().tick_once()
    assert world.store.records.runs(sid, 10).items == ()
    assert report.plan.conflicts == 1 and report.dispatch.admitted == 0
    assert world.queue.sent == []
    # Resumed later: what was missed is not run.
    clock.advance(timedelta(minutes=1))
    world.schedules.resume(sid)
    world.ticker().tick_once()
    assert world.queue.sent == []


def test_a_crash_between_the_direct_admission_and_the_send_is_repaired(
    world: World, clock: FakeClock
) -> None:
    sid = _create(world, "5 8 * * *")
    clock.set(utc("2026-12-01T08:05:01Z"))
    world.queue.fail_with = SystemExit("killed between commit and send")
    with pytest.raises(SystemExit):
        world.ticker("tick-a").tick_once()
    [run] = world.store.records.runs(sid, 10).items
    assert run.status is RunStatus.ADMITTED and run.pending and world.queue.sent == []

    clock.advance(world.config.lease_ttl)  # tick-a's leases run out
    world.ticker("tick-b").tick_once()
    [after] = world.store.records.runs(sid, 10).items
    assert after.admitted_at == run.admitted_at  # admitted once, by tick-a
    assert not after.pending and world.queue.ids() == [run.occurrence_id]
    assert _records(world).admit_calls == []
