"""The cheap constructors the tick path uses make the same values as the
dataclasses' own ``__init__`` and refuse what it refuses."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, timedelta
from zoneinfo import ZoneInfo

import pytest

from domain.identity import business_key, occurrence_id
from domain.run import (
    AttemptRecord,
    OccurrenceMold,
    Reason,
    Run,
    RunKind,
    RunStatus,
    build,
    new_occurrence,
)
from domain.spec import Slot
from service.ports import DueSchedule
from tests.conftest import build_schedule, utc

AT = utc("2026-12-01T09:00:00Z")
SLOT = Slot(AT, AT.replace(tzinfo=None))


def test_build_makes_what_init_makes() -> None:
    values = {"number": 2, "started_at": AT, "outcome": "ok"}
    assert build(AttemptRecord, values) == AttemptRecord(**values)
    assert build(AttemptRecord, values).finished_at is None  # defaults filled in


def test_build_refuses_unknown_and_missing_fields() -> None:
    with pytest.raises(TypeError, match=r"unknown fields \['colour'\], missing fields \[\]"):
        build(AttemptRecord, {"number": 1, "started_at": AT, "colour": 1})
    with pytest.raises(TypeError, match=r"missing fields \['started_at'\]"):
        build(AttemptRecord, {"number": 1})


def test_build_runs_post_init_checks() -> None:
    with pytest.raises(ValueError, match="scheduled_at must be aware"):
        Run.of(
            occurrence_id="sch_a.v0.20261201T090000Z",
            business_key="k",
            schedule_id="sch_a",
            version=1,
            scheduled_at=SLOT.wall,
            wall=SLOT.wall,
            fold=0,
            bucket=1,
            shard=1,
        )


def test_a_new_occurrence_equals_the_record_init_makes() -> None:
    common = {"bucket": 7, "shard": 3, "materialized_at": AT}
    waiting = new_occurrence("sch_a", 4, SLOT, **common)
    assert waiting == Run(
        occurrence_id="sch_a.v4.20261201T090000Z",
        business_key="sch_a#2026-12-01T09:00:00#0",
        schedule_id="sch_a",
        version=4,
        scheduled_at=AT,
        wall=SLOT.wall,
        fold=0,
        kind=RunKind.SCHEDULED,
        **common,
    )
    assert waiting.status is RunStatus.SCHEDULED and waiting.pending
    admitted = new_occurrence("sch_a", 4, SLOT, admitted_at=AT, **common)
    assert admitted == waiting.admitted(AT)
    assert admitted.status is RunStatus.ADMITTED and admitted.pending


def test_a_mold_stamps_the_records_new_occurrence_makes() -> None:
    common = {"bucket": 7, "materialized_at": AT}
    waiting = OccurrenceMold(SLOT, **common)
    admitted = OccurrenceMold(SLOT, admitted_at=AT, **common)
    skipped = OccurrenceMold(SLOT, closed=(RunStatus.SKIPPED, Reason.SUPERSEDED), **common)
    for schedule_id, version, shard in [("sch_a", 1, 3), ("sch_b", 7, 12)]:
        fresh = new_occurrence(schedule_id, version, SLOT, shard=shard, **common)
        assert waiting.make(schedule_id, version, shard) == fresh
        assert admitted.make(schedule_id, version, shard) == fresh.admitted(AT)
        assert skipped.make(schedule_id, version, shard) == fresh.closed(
            RunStatus.SKIPPED, Reason.SUPERSEDED, AT
        )
    # Ids and keys as identity names them, whatever the instant's zone.
    paris = OccurrenceMold(
        Slot(AT.astimezone(ZoneInfo("Europe/Paris")), SLOT.wall, fold=1), **common
    )
    record = paris.make("sch_c", 12, 0)
    assert record.occurrence_id == occurrence_id("sch_c", 12, AT) == "sch_c.v12.20261201T090000Z"
    assert record.business_key == business_key("sch_c", SLOT.wall, 1)
    assert record.scheduled_at.tzinfo is UTC
    # Each record has its own fields: stamping one changes no other.
    one, two = waiting.make("sch_a", 1, 3), waiting.make("sch_b", 1, 4)
    assert (one.schedule_id, one.shard, two.schedule_id, two.shard) == ("sch_a", 3, "sch_b", 4)


def test_a_mold_refuses_what_a_record_refuses() -> None:
    common = {"bucket": 7, "materialized_at": AT}
    with pytest.raises(ValueError, match="scheduled_at must be aware"):
        OccurrenceMold(Slot(SLOT.wall, SLOT.wall), **common)
    with pytest.raises(ValueError, match="wall is a naive wall time"):
        OccurrenceMold(Slot(AT, AT), **common)
    with pytest.raises(ValueError, match="closed by the overdue policy is not admitted"):
        OccurrenceMold(SLOT, admitted_at=AT, closed=(RunStatus.EXPIRED, "late"), **common)


def test_the_planning_view_of_a_schedule() -> None:
    schedule = build_schedule(AT - timedelta(days=1))
    assert schedule.next_due is not None
    due = DueSchedule.of(schedule)
    assert due == (
        schedule.schedule_id,
        schedule.version,
        schedule.next_due,
        schedule.current.spec,
        schedule.current.policy,
    )
    finished = replace(schedule, next_due=None)
    with pytest.raises(ValueError, match=f"schedule {schedule.schedule_id} has no next_due"):
        DueSchedule.of(finished)
