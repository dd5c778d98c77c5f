"""The start decision (domain/start.py): one function, every path to a start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain.run import Reason, RunKind, RunStatus
from domain.schedule import QUARANTINED, Overdue, SchedulePolicy
from domain.spec import parse_spec
from domain.start import ACTIVE, ScheduleNow, Slot, decide_standing, decide_start, next_slot_at

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
EVERY_10S = parse_spec({"every": "PT10S"}, created_at=datetime(2026, 12, 1, tzinfo=UTC))
HOURLY = parse_spec({"cron": "0 * * * *", "time_zone": "UTC"}, created_at=NOW)
CATCH_UP = SchedulePolicy(overdue=Overdue.CATCH_UP_ALL)
LATEST = SchedulePolicy(overdue=Overdue.LATEST_ONLY)
EXPIRE = SchedulePolicy(overdue=Overdue.EXPIRE, catchup_window=timedelta(hours=1))


def _slot(at: datetime, kind: RunKind = RunKind.SCHEDULED, *, retried: bool = False) -> Slot:
    return Slot(kind, at, retried)


def test_a_slot_on_time_starts_under_every_policy() -> None:
    for policy in (CATCH_UP, LATEST, EXPIRE):
        verdict = decide_start(_slot(NOW), ACTIVE, EVERY_10S, policy, NOW)
        assert verdict.status is RunStatus.ADMITTED


def test_latest_only_supersedes_a_slot_whose_next_slot_is_due_too() -> None:
    # After a 2-minute outage an every-10s schedule has 12 due slots: only the
    # latest (its next slot is not due yet) starts.
    now = NOW + timedelta(minutes=2, seconds=3)
    slots = [NOW + timedelta(seconds=10 * i) for i in range(13)]
    verdicts = [decide_start(_slot(at), ACTIVE, EVERY_10S, LATEST, now) for at in slots]
    assert [v.status for v in verdicts[:-1]] == [RunStatus.SKIPPED] * 12
    assert {v.reason for v in verdicts[:-1]} == {Reason.SUPERSEDED}
    assert verdicts[-1].status is RunStatus.ADMITTED


def test_latest_only_takes_the_next_slot_from_the_caller_when_given() -> None:
    late = NOW - timedelta(hours=2)
    given = decide_start(_slot(late), ACTIVE, HOURLY, LATEST, NOW, next_at=None)
    assert given.status is RunStatus.ADMITTED  # the caller says the spec ends there
    computed = decide_start(_slot(late), ACTIVE, HOURLY, LATEST, NOW)
    assert computed.reason == Reason.SUPERSEDED


def test_the_last_slot_of_a_spec_is_never_superseded() -> None:
    ends = parse_spec(
        {"cron": "0 * * * *", "time_zone": "UTC", "end_at": "2026-12-01T07:30:00Z"},
        created_at=NOW - timedelta(days=1),
    )
    last = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    assert next_slot_at(ends, LATEST.dst, last) is None
    assert decide_start(_slot(last), ACTIVE, ends, LATEST, NOW).status is RunStatus.ADMITTED


def test_expire_ends_a_slot_late_beyond_its_catchup_window() -> None:
    expired = decide_start(_slot(NOW - timedelta(minutes=90)), ACTIVE, HOURLY, EXPIRE, NOW)
    assert expired.status is RunStatus.EXPIRED
    assert expired.reason == "expired: found 5400 s late, beyond the catchup_window of 3600 s"
    on_edge = decide_start(_slot(NOW - timedelta(hours=1)), ACTIVE, HOURLY, EXPIRE, NOW)
    assert on_edge.status is RunStatus.ADMITTED


def test_catch_up_all_starts_every_late_slot() -> None:
    late = decide_start(_slot(NOW - timedelta(days=3)), ACTIVE, HOURLY, CATCH_UP, NOW)
    assert late.status is RunStatus.ADMITTED


@pytest.mark.parametrize("kind", [RunKind.TRIGGER, RunKind.BACKFILL])
def test_a_run_a_user_asked_for_is_never_superseded(kind: RunKind) -> None:
    long_ago = NOW - timedelta(days=30)
    verdict = decide_start(Slot(kind, long_ago, False, NOW), ACTIVE, HOURLY, LATEST, NOW)
    assert verdict.status is RunStatus.ADMITTED


@pytest.mark.parametrize("kind", [RunKind.TRIGGER, RunKind.BACKFILL])
def test_expire_counts_a_requested_run_late_from_when_it_was_asked_for(kind: RunKind) -> None:
    # A backfill's slot is a month old by design; it asked a minute ago.
    long_ago = NOW - timedelta(days=30)
    asked = NOW - timedelta(minutes=1)
    on_time = decide_start(Slot(kind, long_ago, False, asked), ACTIVE, HOURLY, EXPIRE, NOW)
    assert on_time.status is RunStatus.ADMITTED
    waited = decide_start(
        Slot(kind, long_ago, False, asked), ACTIVE, HOURLY, EXPIRE, NOW + timedelta(hours=2)
    )
    assert waited.status is RunStatus.EXPIRED
    assert waited.reason == "expired: found 7260 s late, beyond the catchup_window of 3600 s"
    # Asked when is not known (dispatch reads no more): left to the worker.
    unknown = decide_start(Slot(kind, long_ago), ACTIVE, HOURLY, EXPIRE, NOW + timedelta(hours=2))
    assert unknown.status is RunStatus.ADMITTED


@pytest.mark.parametrize(
    ("schedule", "status", "reason"),
    [
        (None, RunStatus.CANCELLED, Reason.DELETED),
        (ScheduleNow(1, paused=False, deleted=True), RunStatus.CANCELLED, Reason.DELETED),
        (ScheduleNow(1, paused=True, deleted=False), RunStatus.SKIPPED, Reason.PAUSED),
        (
            ScheduleNow(1, paused=False, deleted=False, quarantined=True),
            RunStatus.SKIPPED,
            QUARANTINED,
        ),
    ],
)
@pytest.mark.parametrize("kind", list(RunKind))
def test_the_schedule_as_it_is_now_stops_every_kind_of_run(
    schedule: ScheduleNow | None, status: RunStatus, reason: str, kind: RunKind
) -> None:
    verdict = decide_start(_slot(NOW, kind), schedule, HOURLY, CATCH_UP, NOW)
    assert (verdict.status, verdict.reason) == (status, reason)


def test_a_retried_run_starts_unless_its_schedule_is_deleted() -> None:
    late = NOW - timedelta(days=2)
    paused = ScheduleNow(1, paused=True, deleted=False)
    assert decide_start(_slot(late, retried=True), paused, HOURLY, EXPIRE, NOW).status is (
        RunStatus.ADMITTED
    )
    deleted = ScheduleNow(1, paused=False, deleted=True)
    assert decide_start(_slot(late, retried=True), deleted, HOURLY, LATEST, NOW).status is (
        RunStatus.CANCELLED
    )


def test_a_slot_not_due_yet_is_left_to_start() -> None:
    ahead = decide_start(_slot(NOW + timedelta(seconds=40)), ACTIVE, EVERY_10S, LATEST, NOW)
    assert ahead.status is RunStatus.ADMITTED


def test_the_schedule_state_alone_decides_rules_one_to_three() -> None:
    # decide_standing is what decide_start checks first, and what the tick asks
    # of a refused record whose version cannot be read.
    paused = ScheduleNow(version=1, paused=True, deleted=False)
    deleted = ScheduleNow(version=1, paused=False, deleted=True)
    assert decide_standing(_slot(NOW), None) == decide_start(
        _slot(NOW), None, EVERY_10S, CATCH_UP, NOW
    )
    cancelled = decide_standing(_slot(NOW, retried=True), deleted)
    assert cancelled is not None and cancelled.reason is Reason.DELETED
    skipped = decide_standing(_slot(NOW), paused)
    assert skipped is not None and skipped.reason is Reason.PAUSED
    assert decide_standing(_slot(NOW, retried=True), paused) is None
    assert decide_standing(_slot(NOW), ACTIVE) is None
