"""One schedule duetime cannot handle never stops the loops that serve the others.

Replayed on SQLite and on DynamoDB (moto): a schedule whose planning, dispatch
or watch judgement raises is quarantined (recorded on the schedule, its
waiting occurrences closed), and the same pass carries on with every other
schedule. The failure is injected where the computation happens, for one
schedule only, as a value that slipped past the API's checks would fail.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import service.planning.due as due_module
import service.planning.judge as judge_module
import service.watchdog as watchdog_module
from adapters.sqlite.store import SqliteStore
from domain.partition import Partitioning
from domain.run import RunStatus
from domain.schedule import QUARANTINED, Quarantine, QuarantineComponent, Schedule
from domain.watch import WatchStatus
from service.errors import ScheduleNotActive
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.ports import Store
from service.schedules import ScheduleService
from service.watchdog import Watchdog, watch_component
from tests.conftest import FakeClock, FakeQueue, build_schedule, definition, utc
from tests.contract.conftest import STORES

START = utc("2026-12-01T08:00:00Z")
HOOK = {"type": "webhook", "url": "https://example.com/hook"}
PARTS = Partitioning(shards=2, bucket_s=60)
TTL = timedelta(seconds=30)  # a lease the other tick takes


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    yield from STORES[request.param](tmp_path)


class Setup:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.clock = FakeClock(START)
        self.queue = FakeQueue()
        self.schedules = ScheduleService(store, self.clock, PARTS)
        config = TickConfig(partitioning=PARTS, lookahead=timedelta(seconds=180))
        self.ticker = Ticker(store, self.queue, self.clock, config, owner="tick-1")

    def create(self, cron: str) -> Schedule:
        body = {"name": cron, "spec": {"cron": cron, "time_zone": "UTC"}, "target": HOOK}
        schedule, _ = self.schedules.create(definition(body))
        return schedule

    def hold_shards_elsewhere(self) -> None:
        """Another tick holds every shard now, so this one stores what it plans
        waiting, for dispatch to admit once those leases expire."""
        for shard in range(PARTS.shards):
            assert self.store.leases.acquire(shard, "tick-other", self.clock.now(), TTL) is not None

    def head(self, schedule_id: str) -> Schedule:
        found = self.store.schedules.get(schedule_id)
        assert found is not None
        return found

    def statuses(self, schedule_id: str) -> list[tuple[str, RunStatus, str | None]]:
        return [
            (r.scheduled_at.isoformat(), r.status, r.reason)
            for r in self.store.records.runs(schedule_id, 10).items
        ]


@pytest.fixture
def setup(store: Store) -> Setup:
    return Setup(store)


def _poison_planning(monkeypatch: pytest.MonkeyPatch, poisoned: Schedule) -> None:
    """The planner's slot computation raises for ``poisoned``'s spec only."""
    real = due_module.slots_after

    def slots_after(spec: Any, dst: Any, after: datetime) -> Any:
        if spec == poisoned.current.spec:
            raise OverflowError("date value out of range")
        return real(spec, dst, after)

    monkeypatch.setattr(due_module, "slots_after", slots_after)


def test_one_poisoned_schedule_does_not_stop_the_tick(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    healthy = setup.create("1 8 * * *")
    poisoned = setup.create("2 8 * * *")
    _poison_planning(monkeypatch, poisoned)

    report = setup.ticker.tick_once()

    assert report.plan.quarantined == [poisoned.schedule_id]
    quarantine = setup.head(poisoned.schedule_id).quarantine
    assert quarantine is not None and quarantine.component is QuarantineComponent.PLAN
    assert quarantine.reason == "OverflowError: date value out of range"
    assert quarantine.at == START
    # The healthy one is planned, admitted and queued ahead of its time.
    assert setup.statuses(healthy.schedule_id) == [
        ("2026-12-01T08:01:00+00:00", RunStatus.ADMITTED, None)
    ]
    assert [i.schedule_id for i in setup.queue.sent] == [healthy.schedule_id]
    # The next passes carry on, the poisoned one left out.
    setup.clock.set(utc("2026-12-01T08:03:00Z"))
    later = setup.ticker.tick_once()
    assert later.plan.quarantined == []
    assert [i.schedule_id for i in setup.queue.sent] == [healthy.schedule_id]
    assert setup.statuses(poisoned.schedule_id) == []
    assert setup.head(healthy.schedule_id).quarantine is None


def test_dispatch_carries_on_past_an_occurrence_it_cannot_judge(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    healthy = setup.create("1 8 * * *")
    poisoned = setup.create("2 8 * * *")
    setup.hold_shards_elsewhere()
    setup.ticker.tick_once()  # both stored waiting, neither due yet
    real = judge_module.decide_start

    def decide_start(slot: Any, *args: Any, **kw: Any) -> Any:
        if slot.scheduled_at == utc("2026-12-01T08:02:00Z"):
            raise ValueError("cannot judge this one")
        return real(slot, *args, **kw)

    monkeypatch.setattr(judge_module, "decide_start", decide_start)
    setup.clock.set(utc("2026-12-01T08:03:00Z"))

    report = setup.ticker.tick_once()

    assert report.dispatch.quarantined == [poisoned.schedule_id]
    assert report.dispatch.admitted == 1
    assert [i.schedule_id for i in setup.queue.sent] == [healthy.schedule_id]
    quarantine = setup.head(poisoned.schedule_id).quarantine
    assert quarantine is not None and quarantine.component is QuarantineComponent.DISPATCH
    assert setup.statuses(poisoned.schedule_id) == [
        ("2026-12-01T08:02:00+00:00", RunStatus.SKIPPED, QUARANTINED)
    ]
    # Nothing of it is left pending to trip over on every later pass.
    setup.clock.set(utc("2026-12-01T08:05:00Z"))
    assert setup.ticker.tick_once().dispatch.quarantined == []


def test_watchdog_carries_on_past_a_schedule_it_cannot_judge(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    healthy = setup.create("1 8 * * *")
    poisoned = setup.create("2 8 * * *")
    real = watchdog_module.watch

    def watch(schedule: Schedule, *args: Any) -> Any:
        if schedule.schedule_id == poisoned.schedule_id:
            raise OverflowError("date value out of range")
        return real(schedule, *args)

    monkeypatch.setattr(watchdog_module, "watch", watch)
    watchdog = Watchdog(setup.store, setup.clock)

    report = watchdog.run()

    assert report.unknown == [poisoned.schedule_id] and report.set_aside == 0
    assert report.count(WatchStatus.OK) == 1 and report.count(WatchStatus.UNKNOWN) == 1
    assert setup.store.leases.heartbeat(watch_component(healthy.schedule_id)) is not None
    verdict = setup.store.leases.heartbeat(watch_component(poisoned.schedule_id))
    assert verdict is not None and verdict.detail["status"] == "unknown"
    assert verdict.detail["error"] == "OverflowError: date value out of range"
    # The watchdog writes no schedule (its role may not): the tick keeps planning it.
    assert setup.head(poisoned.schedule_id).quarantine is None
    # A later pass tries again.
    again = watchdog.run()
    assert again.unknown == [poisoned.schedule_id]


def test_an_edit_lifts_the_quarantine_and_the_tick_plans_it_again(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    poisoned = setup.create("2 8 * * *")
    with monkeypatch.context() as patch:
        _poison_planning(patch, poisoned)
        setup.ticker.tick_once()
    assert setup.head(poisoned.schedule_id).quarantine is not None

    body = {"name": "fixed", "spec": {"cron": "3 8 * * *", "time_zone": "UTC"}, "target": HOOK}
    edited = setup.schedules.edit(poisoned.schedule_id, 1, definition(body))

    assert edited.quarantine is None and edited.version == 2
    setup.ticker.tick_once()
    assert setup.statuses(poisoned.schedule_id) == [
        ("2026-12-01T08:03:00+00:00", RunStatus.ADMITTED, None)
    ]


def test_pause_and_resume_lift_the_quarantine(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    poisoned = setup.create("2 8 * * *")
    with monkeypatch.context() as patch:
        _poison_planning(patch, poisoned)
        setup.ticker.tick_once()
    setup.schedules.pause(poisoned.schedule_id)
    resumed = setup.schedules.resume(poisoned.schedule_id)
    assert resumed.quarantine is None and not resumed.state.paused
    setup.ticker.tick_once()
    assert setup.statuses(poisoned.schedule_id) == [
        ("2026-12-01T08:02:00+00:00", RunStatus.ADMITTED, None)
    ]


def test_a_quarantined_schedule_is_not_triggered_nor_shown_with_next_occurrences(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    poisoned = setup.create("2 8 * * *")
    with monkeypatch.context() as patch:
        _poison_planning(patch, poisoned)
        setup.ticker.tick_once()
    with pytest.raises(ScheduleNotActive, match="quarantined"):
        setup.schedules.trigger(poisoned.schedule_id)
    assert setup.statuses(poisoned.schedule_id) == []
    assert setup.schedules.next_occurrences(setup.head(poisoned.schedule_id)) == []


@pytest.mark.usefixtures("without_range_rules")  # stored before the range rule
@pytest.mark.parametrize(
    "spec",
    [
        {"at": "9999-12-31T23:59:59Z"},
        {"every": "PT60S", "start_at": "9999-12-31T23:59:59Z"},
        {"every": "P1000000D"},
        {
            "cron": "* * * * *",
            "time_zone": "Pacific/Kiritimati",
            "start_at": "9999-12-31T00:00:00Z",
        },
    ],
)
def test_the_reported_end_of_time_schedules_stop_neither_the_loops_nor_the_listing(
    setup: Setup, spec: dict[str, str]
) -> None:
    """Written straight into the store, as a value that slipped past the API."""
    healthy = setup.create("1 8 * * *")
    edge = build_schedule(START, spec=spec)
    setup.store.schedules.create(edge)

    setup.clock.set(utc("2026-12-01T08:01:00Z"))
    report = setup.ticker.tick_once()
    verdicts = Watchdog(setup.store, setup.clock).run()

    assert report.plan.quarantined == [] and verdicts.unknown == []
    assert [i.schedule_id for i in setup.queue.sent] == [healthy.schedule_id]
    assert verdicts.count(WatchStatus.OK) == 2
    listed = setup.schedules.list_schedules().items
    assert {s.schedule_id for s in listed} == {healthy.schedule_id, edge.schedule_id}
    for schedule in listed:
        setup.schedules.next_occurrences(schedule)


def test_a_database_from_before_quarantine_gets_its_column_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "duetime.db"
    SqliteStore.open(path).close()
    with sqlite3.connect(path) as db:  # as an earlier release left it
        db.execute("ALTER TABLE schedules DROP COLUMN quarantine")
    schedule = build_schedule(START)
    first = SqliteStore.open(path)
    first.schedules.create(schedule)
    second = SqliteStore.open(path)  # a second process opening it: no second column
    assert second.schedules.get(schedule.schedule_id) == schedule
    assert first.schedules.quarantine(
        schedule.schedule_id,
        1,
        Quarantine.of(OverflowError("x"), QuarantineComponent.PLAN, START),
    )
    found = second.schedules.get(schedule.schedule_id)
    assert found is not None and found.quarantine is not None
    first.close()
    second.close()


def test_a_failing_store_quarantines_no_one(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store error is no schedule's fault: the tick's pass fails, as it did
    before; the watchdog logs the schedule it could not read and carries on;
    every schedule stays as it was (the next pass retries)."""
    schedule = setup.create("1 8 * * *")
    setup.clock.set(utc("2026-12-01T08:01:00Z"))  # due: direct admission reads the store

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("database is locked")

    with monkeypatch.context() as patch:
        patch.setattr(setup.store.records, "earliest_pending_bucket", broken)
        with pytest.raises(sqlite3.OperationalError):
            setup.ticker.tick_once()
    with monkeypatch.context() as patch:
        patch.setattr(setup.store.records, "runs", broken)
        report = Watchdog(setup.store, setup.clock).run()
        assert report.unread == [schedule.schedule_id] and report.judged == 0
    assert setup.store.leases.heartbeat(watch_component(schedule.schedule_id)) is None
    assert setup.head(schedule.schedule_id).quarantine is None
    assert setup.ticker.tick_once().dispatch.admitted == 1
