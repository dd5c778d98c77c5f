"""What is news to a person: one message per change, at most one per interval."""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.alerts import Alert, Change, Notified, change, needs_attention
from domain.watch import WatchStatus
from tests.conftest import utc

NOW = utc("2026-12-01T10:00:00Z")
TEN_MINUTES = timedelta(minutes=10)
S = WatchStatus


@pytest.mark.parametrize(
    ("status", "attention"),
    [
        (S.OK, False),
        (S.LATE, False),
        (S.PAUSED, False),
        (S.ENDED, False),
        (S.OVERDUE, True),
        (S.UNKNOWN, True),
    ],
)
def test_overdue_and_unknown_need_attention_and_nothing_else(
    status: WatchStatus, attention: bool
) -> None:
    assert needs_attention(status) is attention


def test_a_schedule_never_told_is_news_only_when_it_needs_attention() -> None:
    assert change(S.OK, None, NOW, TEN_MINUTES) is Change.NONE
    assert change(S.LATE, None, NOW, TEN_MINUTES) is Change.NONE  # on its way: not yet
    assert change(S.OVERDUE, None, NOW, TEN_MINUTES) is Change.SEND


def test_a_move_within_the_same_side_is_not_news() -> None:
    told = Notified(S.OVERDUE, NOW - timedelta(hours=1))
    assert change(S.UNKNOWN, told, NOW, TEN_MINUTES) is Change.NONE
    assert change(S.PAUSED, Notified(S.OK, NOW), NOW, TEN_MINUTES) is Change.NONE


def test_a_change_inside_the_interval_is_held_and_sent_once_it_ends() -> None:
    told = Notified(S.OVERDUE, NOW)
    assert change(S.OK, told, NOW + timedelta(minutes=9), TEN_MINUTES) is Change.HELD
    assert change(S.OK, told, NOW + TEN_MINUTES, TEN_MINUTES) is Change.SEND
    assert change(S.PAUSED, told, NOW + TEN_MINUTES, TEN_MINUTES) is Change.SEND


def test_the_message_names_the_schedule_its_verdict_and_where_to_look() -> None:
    alert = Alert(
        schedule_id="sch_1",
        name="nightly report",
        status=S.OVERDUE,
        previous=S.OK,
        checked_at=NOW,
        last_success_at=utc("2026-11-30T09:00:00Z"),
        expected_at=utc("2026-12-01T09:00:00Z"),
        error=None,
        command="duetime schedules describe sch_1",
    )
    assert alert.text().splitlines() == [
        "duetime: schedule 'nightly report' is overdue",
        "schedule: sch_1 (nightly report)",
        "verdict: overdue (was ok), checked 2026-12-01T10:00:00Z",
        "last success: 2026-11-30T09:00:00Z",
        "expected to succeed: 2026-12-01T09:00:00Z",
        "see: duetime schedules describe sch_1",
    ]
    document = alert.document()
    assert document["verdict"] == "overdue" and document["needs_attention"] is True
    assert document["last_success_at"] == "2026-11-30T09:00:00Z"
