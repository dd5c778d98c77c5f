"""Failures replayed on the SQLite store: restarts, long
outages, daylight-saving nights, and changes that race a tick."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from adapters.sqlite.run_records import SqliteRunRecords
from adapters.sqlite.schedules import SqliteSchedules
from domain.run import Reason, RunStatus
from service.errors import VersionConflict
from service.planning.pass_state import PassState
from tests.conftest import FakeClock, World, definition, make_world, utc, with_ports

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


def _body(spec: dict, policy: dict | None = None, name: str = "job") -> dict:
    return {"name": name, "spec": spec, "target": WEBHOOK, "policy": policy or {}}


def _statuses(world: World, sid: str) -> dict[str, RunStatus]:
    return {r.scheduled_at.isoformat(): r.status for r in world.store.records.runs(sid, 100).items}


# --- restart between the admission commit and the send ----------------------------------


def test_a_restart_between_admission_and_send_is_repaired_by_the_next_tick(
    world: World, clock: FakeClock
) -> None:
    schedule, _ = world.schedules.create(definition(_body({"cron": "5 8 * * *"})))
    sid = schedule.schedule_id
    clock.set(utc("2026-12-01T08:05:01Z"))
    world.ticker().planner.plan(PassState(clock.now()))
    crashing = world.ticker("tick-a")
    world.queue.fail_with = SystemExit("killed between commit and send")
    with pytest.raises(SystemExit):
        crashing.tick_once()
    [run] = world.store.records.runs(sid, 10).items
    assert run.status is RunStatus.ADMITTED and run.pending and world.queue.sent == []

    # The killed process's leases expire; a fresh process ticks.
    clock.advance(world.config.lease_ttl)
    world.ticker("tick-b").tick_once()
    assert world.queue.ids() == [run.occurrence_id]
    [after] = world.store.records.runs(sid, 10).items
    assert after.admitted_at == run.admitted_at  # admitted once, by the first tick
    assert not after.pending and after.sent_at == clock.now()
    world.ticker("tick-b").tick_once()
    assert world.queue.ids() == [run.occurrence_id]


# --- no tick for six hours ------------------------------------------------------------------


def test_after_six_hours_without_a_tick_each_overdue_policy_does_what_it_says(
    world: World, clock: FakeClock
) -> None:
    clock.set(utc("2026-12-01T07:58:00Z"))
    every_half_hour = {"cron": "*/30 * * * *"}
    ids = {
        policy: world.schedules.create(definition(_body(every_half_hour, body)))[0].schedule_id
        for policy, body in {
            "catch_up_all": {"overdue": "catch_up_all"},
            "latest_only": {"overdue": "latest_only"},
            "expire": {"overdue": "expire", "catchup_window": "PT1H"},
        }.items()
    }
    world.ticker().tick_once()  # 07:58: 08:00 is not within the lookahead yet
    assert world.queue.sent == []

    # Every tick is down from 07:58 until 14:00:10.
    clock.set(utc("2026-12-01T14:00:10Z"))
    world.ticker().tick_once()

    slots = [f"2026-12-01T{h:02d}:{m:02d}:00+00:00" for h in range(8, 15) for m in (0, 30)][:13]
    assert _statuses(world, ids["catch_up_all"]) == dict.fromkeys(slots, RunStatus.ADMITTED)
    assert _statuses(world, ids["latest_only"]) == {
        **dict.fromkeys(slots[:-1], RunStatus.SKIPPED),
        slots[-1]: RunStatus.ADMITTED,
    }
    # 13:00 is 1 h 0 min 10 s late: beyond the one-hour window.
    assert _statuses(world, ids["expire"]) == {
        **dict.fromkeys(slots[:-2], RunStatus.EXPIRED),
        slots[-2]: RunStatus.ADMITTED,
        slots[-1]: RunStatus.ADMITTED,
    }
    reasons = {r.reason for r in world.store.records.runs(ids["latest_only"], 100).items}
    assert reasons == {Reason.SUPERSEDED, None}
    for run in world.store.records.runs(ids["expire"], 100).items:
        assert run.status is RunStatus.ADMITTED or run.reason.startswith("expired: found")
    sent = world.queue.ids()
    assert len(sent) == len(set(sent)) == 13 + 1 + 2


def test_catch_up_is_bounded_per_pass_oldest_first(tmp_path: Path, clock: FakeClock) -> None:
    world = make_world(tmp_path / "d.db", clock)
    world.config = type(world.config)(
        partitioning=world.config.partitioning, lookahead=world.config.lookahead, admit_limit=5
    )
    world.schedules.create(definition(_body({"every": "PT1M"}, {"overdue": "catch_up_all"})))
    world.ticker().tick_once()
    clock.advance(timedelta(minutes=30))
    ticker = world.ticker()
    first = ticker.tick_once()
    assert first.dispatch.admitted == 5
    assert [i.scheduled_at for i in world.queue.sent] == sorted(
        i.scheduled_at for i in world.queue.sent
    )
    for _ in range(6):
        ticker.tick_once()
    # 08:01 to 08:31, each once: all due by now, and 08:31 queued ahead.
    assert len(world.queue.sent) == len(set(world.queue.ids())) == 31


# --- the fall-back night ----------------------------------------------------------------------
# America/New_York, Sunday 2026-11-01: at 06:00Z clocks go back from 02:00 EDT
# (UTC-4) to 01:00 EST (UTC-5), so 01:30 happens twice: 05:30Z and 06:30Z.


@pytest.mark.parametrize(
    ("fold", "expected"),
    [
        ("both", ["2026-11-01T05:30:00+00:00", "2026-11-01T06:30:00+00:00"]),
        ("first", ["2026-11-01T05:30:00+00:00"]),
    ],
)
def test_the_fall_back_night_with_dst_fold(tmp_path: Path, fold: str, expected: list[str]) -> None:
    clock = FakeClock(utc("2026-11-01T04:00:00Z"))
    world = make_world(tmp_path / "d.db", clock)
    schedule, _ = world.schedules.create(
        definition(
            _body({"cron": "30 1 * * *", "time_zone": "America/New_York"}, {"dst_fold": fold})
        )
    )
    ticker = world.ticker()
    while clock.now() < utc("2026-11-01T08:00:00Z"):
        ticker.tick_once()
        clock.advance(timedelta(seconds=20))
    runs = sorted(
        world.store.records.runs(schedule.schedule_id, 10).items, key=lambda r: r.scheduled_at
    )
    assert [r.scheduled_at.isoformat() for r in runs] == expected
    assert [r.status for r in runs] == [RunStatus.ADMITTED] * len(expected)
    assert len({r.occurrence_id for r in runs}) == len({r.business_key for r in runs}) == len(runs)
    assert [r.wall.isoformat() for r in runs] == ["2026-11-01T01:30:00"] * len(expected)
    assert sorted(world.queue.ids()) == sorted(r.occurrence_id for r in runs)


# --- pause, edit and delete racing a tick ---------------------------------------------------------


class HookedRecords(SqliteRunRecords):
    """SQLite run records that let a test act just before an admission."""

    before_admit: Callable[[], None] | None = None

    def admit(self, runs, now):  # type: ignore[no-untyped-def]
        if self.before_admit is not None:
            hook, self.before_admit = self.before_admit, None
            hook()
        return super().admit(runs, now)


class HookedSchedules(SqliteSchedules):
    """SQLite schedules that let a test act just before a materialization."""

    before_materialize: Callable[[], None] | None = None

    def materialize(self, batch, now, *, until=None, session=None):  # type: ignore[no-untyped-def]
        if self.before_materialize is not None:
            hook, self.before_materialize = self.before_materialize, None
            hook()
        return super().materialize(batch, now, until=until, session=session)


@pytest.fixture
def hooked(tmp_path: Path, clock: FakeClock) -> World:
    world = make_world(tmp_path / "d.db", clock)
    world.store = with_ports(world.store, records=HookedRecords, schedules=HookedSchedules)
    world.schedules.store = world.store
    return world


def _due_now(world: World, clock: FakeClock) -> str:
    schedule, _ = world.schedules.create(definition(_body({"cron": "1 8 * * *"})))
    clock.set(utc("2026-12-01T08:00:00Z"))
    # Stored waiting: another tick holds every shard, so this one admits nothing.
    other = world.ticker("tick-other")
    for shard in range(world.config.partitioning.shards):
        assert other.dispatcher.lease(shard, clock.now()) is not None
    world.ticker().tick_once()
    [run] = world.store.records.runs(schedule.schedule_id, 10).items
    assert run.status is RunStatus.SCHEDULED
    clock.set(utc("2026-12-01T08:01:00Z"))  # the other's leases have expired
    return schedule.schedule_id


def test_pause_during_a_tick_stops_the_admission(hooked: World, clock: FakeClock) -> None:
    sid = _due_now(hooked, clock)
    hooked.store.records.before_admit = lambda: hooked.schedules.pause(sid, "incident 42")
    hooked.ticker().tick_once()
    [run] = hooked.store.records.runs(sid, 10).items
    assert (run.status, run.reason) == (RunStatus.SKIPPED, Reason.PAUSED)
    assert hooked.queue.sent == []


def test_delete_during_a_tick_cancels_and_keeps_history(hooked: World, clock: FakeClock) -> None:
    sid = _due_now(hooked, clock)
    hooked.store.records.before_admit = lambda: hooked.schedules.delete(sid)
    hooked.ticker().tick_once()
    [run] = hooked.store.records.runs(sid, 10).items
    assert (run.status, run.reason) == (RunStatus.CANCELLED, Reason.DELETED)
    assert hooked.queue.sent == []
    assert hooked.schedules.runs(sid).items == (run,)


def test_edit_during_a_tick_runs_the_materialized_occurrence_with_its_own_version(
    hooked: World, clock: FakeClock
) -> None:
    sid = _due_now(hooked, clock)
    hooked.store.records.before_admit = lambda: hooked.schedules.edit(
        sid, 1, definition(_body({"cron": "1 8 * * *"}, name="renamed"))
    )
    hooked.ticker().tick_once()
    [intent] = hooked.queue.sent
    assert intent.version == 1 and intent.occurrence_id == f"{sid}.v1.20261201T080100Z"
    assert hooked.schedules.get(sid).next_due == utc("2026-12-02T08:01:00Z")


def test_edit_during_planning_wins_and_the_old_version_materializes_nothing(
    hooked: World, clock: FakeClock
) -> None:
    schedule, _ = hooked.schedules.create(definition(_body({"cron": "1 8 * * *"})))
    sid = schedule.schedule_id
    clock.set(utc("2026-12-01T08:00:00Z"))
    hooked.store.schedules.before_materialize = lambda: hooked.schedules.edit(
        sid, 1, definition(_body({"cron": "2 8 * * *"}))
    )
    report = hooked.ticker().tick_once()
    assert report.plan.conflicts == 1
    clock.set(utc("2026-12-01T08:02:00Z"))
    hooked.ticker().tick_once()
    runs = hooked.store.records.runs(sid, 10).items
    assert [(r.occurrence_id, r.status) for r in runs] == [
        (f"{sid}.v2.20261201T080200Z", RunStatus.ADMITTED)
    ]


def test_an_edit_with_a_stale_version_is_refused_and_changes_nothing(
    world: World, clock: FakeClock
) -> None:
    schedule, _ = world.schedules.create(definition(_body({"cron": "0 9 * * *"})))
    sid = schedule.schedule_id
    world.schedules.edit(sid, 1, definition(_body({"cron": "0 10 * * *"})))
    before = world.store.schedules.get(sid)
    with pytest.raises(VersionConflict) as refused:
        world.schedules.edit(sid, 1, definition(_body({"cron": "0 11 * * *"})))
    assert (refused.value.expected, refused.value.actual) == (1, 2)
    assert world.store.schedules.get(sid) == before
    assert world.store.schedules.get_version(sid, 3) is None
