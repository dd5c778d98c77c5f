"""Schedule use cases, on a throwaway SQLite store and a fake clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from domain.errors import InvalidSchedule
from domain.run import RunKind, RunStatus
from domain.watch import WatchStatus
from service.errors import ScheduleNotActive, ScheduleNotFound
from service.schedules import SUMMARY_COUNT_LIMIT, upcoming
from service.watchdog import Watchdog
from tests.conftest import FakeClock, World, definition, utc

HOOK = {"type": "webhook", "url": "https://example.com/hook"}


def _body(spec: dict, **extra: object) -> dict:
    return {"name": "job", "spec": spec, "target": HOOK, **extra}


def test_create_twice_with_one_idempotency_key_makes_one_schedule(world: World) -> None:
    first, created = world.schedules.create(definition(_body({"cron": "0 9 * * *"})), "k1")
    again, created_again = world.schedules.create(definition(_body({"cron": "0 9 * * *"})), "k1")
    assert created and not created_again and again == first
    assert len(world.schedules.list_schedules().items) == 1


def test_next_is_strictly_after_now(world: World, clock: FakeClock) -> None:
    clock.set(utc("2026-12-01T09:00:00Z"))
    schedule, _ = world.schedules.create(definition(_body({"cron": "0 9 * * *"})))
    assert schedule.next_due == utc("2026-12-02T09:00:00Z")


def test_a_one_off_in_the_past_is_refused(world: World) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        world.schedules.create(definition(_body({"at": "2020-01-01T00:00:00Z"})))
    assert refused.value.field == "spec.at"
    assert world.schedules.list_schedules().items == ()


def test_edit_does_not_fire_retroactively(world: World, clock: FakeClock) -> None:
    clock.set(utc("2026-12-01T09:30:00Z"))
    schedule, _ = world.schedules.create(definition(_body({"cron": "0 10 * * *"})))
    # Moving 10:00 to 09:00 at 09:30: today's 09:00 has passed; next is tomorrow.
    edited = world.schedules.edit(schedule.schedule_id, 1, definition(_body({"cron": "0 9 * * *"})))
    assert edited.version == 2 and edited.next_due == utc("2026-12-02T09:00:00Z")
    assert world.schedules.version(schedule.schedule_id, 1).spec == schedule.current.spec


def test_resume_records_the_pause_as_one_summary_of_the_slots_it_skipped(
    world: World, clock: FakeClock
) -> None:
    schedule, _ = world.schedules.create(definition(_body({"every": "PT1M"})))
    sid = schedule.schedule_id
    world.schedules.pause(sid, "maintenance")
    clock.advance(timedelta(minutes=150))
    resumed = world.schedules.resume(sid)
    assert not resumed.state.paused and resumed.next_due == clock.now() + timedelta(minutes=1)
    [summary] = world.store.records.runs(sid, 200).items
    assert (summary.kind, summary.status) == (RunKind.SUMMARY, RunStatus.SKIPPED)
    assert summary.reason == (
        "paused: 150 slots skipped, 2026-12-01T08:01:00Z to 2026-12-01T10:30:00Z"
    )
    assert summary.scheduled_at == utc("2026-12-01T08:01:00Z")
    assert upcoming(resumed, 1, clock.now())[0].scheduled_at == resumed.next_due


def test_a_resume_that_finds_no_slot_missed_records_nothing(world: World, clock: FakeClock) -> None:
    schedule, _ = world.schedules.create(definition(_body({"cron": "0 9 * * *"})))
    world.schedules.pause(schedule.schedule_id)
    clock.advance(timedelta(minutes=5))
    world.schedules.resume(schedule.schedule_id)
    assert world.store.records.runs(schedule.schedule_id, 10).items == ()


def test_a_resume_tried_again_records_its_summary_once(world: World, clock: FakeClock) -> None:
    schedule, _ = world.schedules.create(definition(_body({"every": "PT1S"})))
    sid = schedule.schedule_id
    world.schedules.pause(sid)
    clock.advance(timedelta(minutes=1))
    # The first write of the resume loses a race (the service tries again,
    # a second later): the summary it wrote first is not written twice.
    store_resume, refused = world.store.schedules.resume, []

    def lose_once(schedule_id: str, **kw: Any) -> bool:
        if not refused:
            refused.append(kw)
            clock.advance(1)
            return False
        return store_resume(schedule_id, **kw)

    world.store.schedules.resume = lose_once  # type: ignore[method-assign]
    world.schedules.resume(sid)
    [summary] = world.store.records.runs(sid, 10).items
    assert refused and summary.reason is not None
    assert summary.reason.startswith("paused: 60 slots skipped, ")


def test_a_long_pause_is_counted_up_to_a_bound_said_at_least(
    world: World, clock: FakeClock
) -> None:
    schedule, _ = world.schedules.create(definition(_body({"every": "PT1S"})))
    world.schedules.pause(schedule.schedule_id)
    clock.advance(timedelta(days=2))
    world.schedules.resume(schedule.schedule_id)
    [summary] = world.store.records.runs(schedule.schedule_id, 10).items
    assert summary.reason == (
        f"paused: at least {SUMMARY_COUNT_LIMIT} slots skipped, "
        "2026-12-01T08:00:01Z to 2026-12-02T11:46:40Z"
    )


def test_an_edit_while_paused_records_the_pause_so_far_as_one_summary(
    world: World, clock: FakeClock
) -> None:
    schedule, _ = world.schedules.create(definition(_body({"every": "PT1S"})))
    sid = schedule.schedule_id
    world.schedules.pause(sid)
    clock.advance(timedelta(minutes=1))
    world.schedules.edit(sid, 1, definition(_body({"every": "PT2S"})))
    clock.advance(timedelta(minutes=1))
    world.schedules.resume(sid)
    runs = sorted(world.store.records.runs(sid, 200).items, key=lambda r: r.scheduled_at)
    assert [(r.version, r.kind, r.reason) for r in runs] == [
        (
            1,
            RunKind.SUMMARY,
            "paused: 60 slots skipped, 2026-12-01T08:00:01Z to 2026-12-01T08:01:00Z",
        ),
        (
            2,
            RunKind.SUMMARY,
            "paused: 30 slots skipped, 2026-12-01T08:01:02Z to 2026-12-01T08:02:00Z",
        ),
    ]


def test_trigger_makes_one_extra_run_with_its_own_identity(world: World, clock: FakeClock) -> None:
    clock.set(utc("2026-12-01T08:59:59Z"))
    schedule, _ = world.schedules.create(definition(_body({"cron": "0 9 * * *"})))
    clock.set(utc("2026-12-01T09:00:00Z"))
    world.ticker().tick_once()
    first = world.schedules.trigger(schedule.schedule_id)
    second = world.schedules.trigger(schedule.schedule_id)
    ids = {r.occurrence_id for r in world.store.records.runs(schedule.schedule_id, 10).items}
    assert len(ids) == 3 and {first.occurrence_id, second.occurrence_id} <= ids
    assert first.kind is RunKind.TRIGGER
    # The slot took 09:00:00 itself; the triggers are a microsecond apart after it.
    clock.advance(timedelta(seconds=1))
    world.ticker().tick_once()
    assert sorted(world.queue.ids()) == sorted(ids)


def test_backfill_fills_only_missing_slots_and_is_bounded(world: World, clock: FakeClock) -> None:
    schedule, _ = world.schedules.create(definition(_body({"cron": "0 * * * *"})))
    sid = schedule.schedule_id
    made = world.schedules.backfill(sid, utc("2026-12-01T01:00:00Z"), utc("2026-12-01T03:00:00Z"))
    assert [r.scheduled_at.hour for r in made] == [1, 2, 3]
    again = world.schedules.backfill(sid, utc("2026-12-01T00:00:00Z"), utc("2026-12-01T03:00:00Z"))
    assert [r.scheduled_at.hour for r in again] == [0]
    with pytest.raises(InvalidSchedule) as refused:
        world.schedules.backfill(sid, utc("2026-01-01T00:00:00Z"), utc("2026-12-01T00:00:00Z"))
    assert refused.value.field == "end_at"


def test_paused_and_deleted_schedules_refuse_work(world: World) -> None:
    schedule, _ = world.schedules.create(definition(_body({"cron": "0 9 * * *"})))
    sid = schedule.schedule_id
    world.schedules.pause(sid)
    with pytest.raises(ScheduleNotActive):
        world.schedules.trigger(sid)
    world.schedules.delete(sid)
    with pytest.raises(ScheduleNotFound):
        world.schedules.get(sid)
    assert world.schedules.get(sid, include_deleted=True).deleted_at is not None


def test_after_a_long_pause_the_watchdog_waits_for_the_first_slot_after_the_resume(
    world: World, clock: FakeClock
) -> None:
    # Given a daily schedule paused for three days (no run ever succeeded)
    schedule, _ = world.schedules.create(definition(_body({"cron": "0 9 * * *"})))
    world.schedules.pause(schedule.schedule_id)
    clock.set(utc("2026-12-04T10:00:00Z"))
    world.schedules.resume(schedule.schedule_id)
    # Then the pause's summary accounts for the slots it skipped: not overdue
    clock.set(utc("2026-12-04T12:00:00Z"))
    verdict = Watchdog(world.store, clock).check(
        world.schedules.get(schedule.schedule_id), clock.now()
    )
    assert verdict.status is WatchStatus.OK
    assert verdict.expected_at == utc("2026-12-05T09:00:00Z")
