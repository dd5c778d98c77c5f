"""The watchdog's verdicts: ok, late, overdue, from the last success and the spec."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from domain.schedule import Schedule, ScheduleState
from domain.watch import WatchStatus, watch
from tests.conftest import utc

DAILY = {"cron": "0 9 * * *", "time_zone": "Europe/London"}


def test_nothing_due_since_creation_is_ok(make_schedule: Callable[..., Schedule]) -> None:
    schedule = make_schedule(utc("2026-12-01T08:00:00Z"), spec=DAILY)
    verdict = watch(schedule, None, utc("2026-12-01T08:59:00Z"))
    assert verdict.status is WatchStatus.OK
    assert verdict.expected_at == utc("2026-12-01T09:00:00Z")


def test_a_daily_report_past_half_its_grace_is_late_then_overdue(
    make_schedule: Callable[..., Schedule],
) -> None:
    # Default grace for a daily schedule: run_timeout (15 min) + 2 min = 17 min.
    schedule = make_schedule(utc("2026-12-01T08:00:00Z"), spec=DAILY)
    assert watch(schedule, None, utc("2026-12-01T09:08:00Z")).status is WatchStatus.OK
    late = watch(schedule, None, utc("2026-12-01T09:09:00Z"))
    assert late.status is WatchStatus.LATE
    assert late.grace == timedelta(minutes=17)
    assert watch(schedule, None, utc("2026-12-01T09:17:01Z")).status is WatchStatus.OVERDUE


def test_a_success_moves_the_expectation_to_the_next_slot(
    make_schedule: Callable[..., Schedule],
) -> None:
    schedule = make_schedule(utc("2026-12-01T08:00:00Z"), spec=DAILY)
    verdict = watch(schedule, utc("2026-12-01T09:00:00Z"), utc("2026-12-01T20:00:00Z"))
    assert verdict.status is WatchStatus.OK
    assert verdict.expected_at == utc("2026-12-02T09:00:00Z")


def test_weekend_gap_is_not_silence(make_schedule: Callable[..., Schedule]) -> None:
    weekdays = {"cron": "0 9 * * MON-FRI", "time_zone": "UTC"}
    schedule = make_schedule(utc("2026-11-01T08:00:00Z"), spec=weekdays)
    # Friday 2026-12-04 09:00 succeeded; Sunday evening nothing is expected yet.
    verdict = watch(schedule, utc("2026-12-04T09:00:00Z"), utc("2026-12-06T20:00:00Z"))
    assert verdict.status is WatchStatus.OK
    assert verdict.expected_at == utc("2026-12-07T09:00:00Z")


def test_frequent_schedule_gets_a_short_grace(make_schedule: Callable[..., Schedule]) -> None:
    schedule = make_schedule(utc("2026-12-01T08:00:00Z"), spec={"every": "PT1S"})
    verdict = watch(schedule, utc("2026-12-01T08:10:00Z"), utc("2026-12-01T08:12:02Z"))
    assert verdict.grace == timedelta(minutes=2)
    assert verdict.status is WatchStatus.OVERDUE


def test_explicit_grace_wins(make_schedule: Callable[..., Schedule]) -> None:
    schedule = make_schedule(utc("2026-12-01T08:00:00Z"), spec=DAILY, policy={"grace": "PT2H"})
    assert watch(schedule, None, utc("2026-12-01T10:30:00Z")).status is WatchStatus.LATE
    assert watch(schedule, None, utc("2026-12-01T11:00:01Z")).status is WatchStatus.OVERDUE


def test_paused_and_ended_schedules_are_not_overdue(make_schedule: Callable[..., Schedule]) -> None:
    schedule = make_schedule(utc("2026-12-01T08:00:00Z"), spec=DAILY)
    paused = replace(schedule, state=ScheduleState(paused=True, note="holiday"))
    assert watch(paused, None, utc("2026-12-09T00:00:00Z")).status is WatchStatus.PAUSED
    once = make_schedule(utc("2026-12-01T08:00:00Z"), spec={"at": "2026-12-01T09:00:00Z"})
    assert watch(once, utc("2026-12-01T09:00:00Z"), utc("2026-12-09T00:00:00Z")).status is (
        WatchStatus.ENDED
    )


def test_slots_skipped_while_paused_do_not_count_as_silence(
    make_schedule: Callable[..., Schedule],
) -> None:
    schedule = make_schedule(utc("2026-11-01T08:00:00Z"), spec=DAILY)
    verdict = watch(
        schedule,
        utc("2026-11-02T09:00:00Z"),
        utc("2026-12-01T08:00:00Z"),
        accounted_until=utc("2026-11-30T09:00:00Z"),
    )
    assert verdict.status is WatchStatus.OK
    assert verdict.expected_at == utc("2026-12-01T09:00:00Z")
