"""One word for a schedule's status, and what a version changed."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from domain.overview import ScheduleStatus, changed_fields, schedule_status
from domain.schedule import Quarantine, QuarantineComponent, ScheduleState, parse_policy
from domain.spec import parse_spec
from domain.targets import parse_target
from tests.conftest import build_schedule, utc

NOW = utc("2026-12-01T08:00:00Z")


def test_a_schedule_with_occurrences_to_come_is_active() -> None:
    assert schedule_status(build_schedule(NOW), NOW) is ScheduleStatus.ACTIVE


def test_a_one_off_materialized_but_not_yet_due_is_still_active() -> None:
    at = utc("2026-12-01T09:00:00Z")
    one_off = replace(
        build_schedule(NOW, spec={"at": "2026-12-01T09:00:00Z"}),
        next_due=None,
        last_materialized_at=at,
    )
    assert schedule_status(one_off, at - timedelta(seconds=1)) is ScheduleStatus.ACTIVE
    assert schedule_status(one_off, at) is ScheduleStatus.ENDED


def test_a_schedule_with_nothing_left_to_plan_is_ended_even_when_paused() -> None:
    done = replace(
        build_schedule(NOW),
        next_due=None,
        last_materialized_at=NOW - timedelta(days=1),
        state=ScheduleState(paused=True, note="n"),
    )
    assert schedule_status(done, NOW) is ScheduleStatus.ENDED


def test_paused_quarantined_and_deleted_in_that_order_of_weight() -> None:
    schedule = build_schedule(NOW)
    paused = replace(schedule, state=ScheduleState(paused=True))
    assert schedule_status(paused, NOW) is ScheduleStatus.PAUSED
    quarantined = replace(
        paused, quarantine=Quarantine("ValueError: x", QuarantineComponent.PLAN, NOW)
    )
    assert schedule_status(quarantined, NOW) is ScheduleStatus.QUARANTINED
    deleted = replace(quarantined, deleted_at=NOW, next_due=None)
    assert schedule_status(deleted, NOW) is ScheduleStatus.DELETED


def test_version_one_changed_nothing() -> None:
    assert changed_fields(None, build_schedule(NOW).current) == []


def test_changed_names_each_field_that_differs_by_its_dotted_path() -> None:
    first = build_schedule(NOW, payload={"a": 1}).current
    second = replace(
        first,
        version=2,
        name="renamed",
        spec=parse_spec({"cron": "30 7 * * *", "time_zone": "UTC"}, created_at=NOW),
        policy=parse_policy({"retry": {"max_attempts": 2}, "grace": "PT5M"}),
        payload={"a": 2},
    )
    assert changed_fields(first, second) == [
        "name",
        "payload",
        "policy.grace",
        "policy.retry.max_attempts",
        "spec.cron",
    ]


def test_a_change_of_target_type_names_the_fields_set_and_cleared() -> None:
    first = build_schedule(NOW).current
    second = replace(
        first,
        version=2,
        target=parse_target(
            {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/q"}
        ),
    )
    changed = changed_fields(first, second)
    assert {"target.type", "target.url", "target.queue_url"} <= set(changed)
    assert not any(name.startswith(("spec", "policy", "name", "payload")) for name in changed)


def test_an_unchanged_version_changed_nothing() -> None:
    first = build_schedule(NOW).current
    assert changed_fields(first, replace(first, version=2)) == []
