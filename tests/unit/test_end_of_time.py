"""Instants near the end of time (year 9999) are compared, never overflowed.

A schedule whose slots lie at the edge of what a ``datetime`` can hold must be
listed, judged and planned like any other: a slot that would fall beyond
9999-12-31T23:59:59.999999Z does not exist, and adding a grace or a retention
to an instant that close is held at that edge instead of raising.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import islice

import pytest

from domain.schedule import Schedule, add_clamped
from domain.spec import DstPolicy, parse_spec, slots_after
from domain.watch import WatchStatus, watch
from tests.conftest import utc

# These instants lie past what the API accepts (domain/timeparse.py); they
# stand for values stored before that rule, which must still be handled.
pytestmark = pytest.mark.usefixtures("without_range_rules")

NOW = utc("2026-12-01T08:00:00Z")
LAST = datetime.max.replace(tzinfo=UTC)


def _instants(spec: dict[str, str], after: datetime = NOW, count: int = 5) -> list[str]:
    parsed = parse_spec(spec, created_at=NOW)
    return [
        s.scheduled_at.isoformat() for s in islice(slots_after(parsed, DstPolicy(), after), count)
    ]


def test_watching_a_one_off_at_the_end_of_time_does_not_overflow(
    make_schedule: Callable[..., Schedule],
) -> None:
    # The reported case: the verdict added the grace to 9999-12-31T23:59:59Z.
    schedule = make_schedule(NOW, spec={"at": "9999-12-31T23:59:59Z"})
    verdict = watch(schedule, None, NOW)
    assert verdict.status is WatchStatus.OK
    assert verdict.expected_at == utc("9999-12-31T23:59:59Z")
    assert verdict.grace == timedelta(minutes=2)


def test_a_one_off_at_the_end_of_time_is_overdue_only_after_its_grace(
    make_schedule: Callable[..., Schedule],
) -> None:
    schedule = make_schedule(NOW, spec={"at": "9999-12-31T23:55:00Z"})
    assert watch(schedule, None, utc("9999-12-31T23:56:00Z")).status is WatchStatus.OK
    assert watch(schedule, None, utc("9999-12-31T23:56:30Z")).status is WatchStatus.LATE
    assert watch(schedule, None, utc("9999-12-31T23:57:01Z")).status is WatchStatus.OVERDUE


def test_an_every_spec_that_starts_at_the_end_of_time_has_one_slot() -> None:
    spec = {"every": "PT60S", "start_at": "9999-12-31T23:59:59Z"}
    assert _instants(spec) == ["9999-12-31T23:59:59+00:00"]


def test_an_every_spec_ends_where_the_next_step_would_leave_the_calendar() -> None:
    # A million days from 2026-12-01: 4764-10-28, 7502-09-25, then past 9999.
    assert _instants({"every": "P1000000D"}) == [
        "4764-10-28T08:00:00+00:00",
        "7502-09-25T08:00:00+00:00",
    ]


def test_an_every_spec_asked_after_its_last_representable_slot_has_none() -> None:
    assert _instants({"every": "P1000000D"}, after=utc("9000-01-01T00:00:00Z")) == []


def test_watching_an_every_spec_at_its_last_slot_does_not_overflow(
    make_schedule: Callable[..., Schedule],
) -> None:
    schedule = make_schedule(NOW, spec={"every": "PT60S", "start_at": "9999-12-31T23:59:59Z"})
    verdict = watch(schedule, None, NOW)
    assert verdict.status is WatchStatus.OK and verdict.grace == timedelta(minutes=2)
    assert watch(schedule, utc("9999-12-31T23:59:59Z"), NOW).status is WatchStatus.ENDED


def test_a_cron_spec_whose_local_time_is_past_year_9999_has_no_slots() -> None:
    # Pacific/Kiritimati is UTC+14: 9999-12-31T23:00Z is 10000-01-01 13:00 there.
    spec = {
        "cron": "* * * * *",
        "time_zone": "Pacific/Kiritimati",
        "start_at": "9999-12-31T23:00:00Z",
    }
    assert _instants(spec) == []


def test_a_cron_spec_runs_up_to_the_last_minute_of_year_9999() -> None:
    spec = {"cron": "59 23 31 12 *", "time_zone": "UTC", "start_at": "9999-12-30T00:00:00Z"}
    assert _instants(spec) == ["9999-12-31T23:59:00+00:00"]
    west = {
        "cron": "* * * * *",
        "time_zone": "America/New_York",
        "start_at": "9999-12-31T23:58:00Z",
    }
    assert _instants(west, count=2) == ["9999-12-31T23:58:00+00:00", "9999-12-31T23:59:00+00:00"]


def test_add_clamped_holds_an_instant_at_the_edge_of_the_calendar() -> None:
    assert add_clamped(utc("9999-12-31T23:59:59Z"), timedelta(days=90)) == LAST
    assert add_clamped(utc("0001-01-01T00:00:01Z"), -timedelta(days=1)) == datetime.min.replace(
        tzinfo=UTC
    )
    assert add_clamped(NOW, timedelta(days=1)) == utc("2026-12-02T08:00:00Z")
