"""The cheap constructors the tick path uses make the same values as the
dataclasses' own ``__init__`` and refuse what it refuses."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from domain.run import Run, RunKind, RunStatus, build, new_occurrence
from domain.spec import Slot
from service.ports import DueSchedule, Materialization
from tests.conftest import build_schedule, utc

AT = utc("2026-12-01T09:00:00Z")
SLOT = Slot(AT, AT.replace(tzinfo=None))


def test_build_makes_what_init_makes() -> None:
    values = {"schedule_id": "sch_a", "expected_version": 2, "expected_next_due": AT}
    values |= {"next_due": AT + timedelta(days=1), "last_materialized_at": AT, "occurrences": ()}
    assert build(Materialization, values) == Materialization(**values)
    assert Materialization.of(**values) == Materialization(**values)


def test_build_refuses_unknown_and_missing_fields() -> None:
    with pytest.raises(TypeError, match=r"unknown fields \['colour'\], missing fields \[\]"):
        build(
            Materialization,
            {
                "schedule_id": "s",
                "expected_version": 1,
                "colour": 1,
                "expected_next_due": AT,
                "next_due": None,
                "last_materialized_at": None,
                "occurrences": (),
            },
        )
    with pytest.raises(TypeError, match=r"missing fields \['occurrences'\]"):
        build(
            Materialization,
            {
                "schedule_id": "s",
                "expected_version": 1,
                "expected_next_due": AT,
                "next_due": None,
                "last_materialized_at": None,
            },
        )


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
