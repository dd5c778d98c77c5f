"""The planning side of the schedule port (``ScheduleStore`` in service/ports.py),
on every store: what a pass reads (``due``, ``due_ahead``, ``chain_crowd``),
what it writes (``materialize``, ``materialize_sending``) and how it ends
(``planned_through``). A store may keep more than the port asks (seeds, a
chain, a cursor); these tests hold each to what the port promises a planner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

import domain.schedule as schedule_module
from domain.errors import InvalidSchedule
from domain.run import Run, RunStatus
from domain.schedule import QuarantineComponent
from service.ports import DueSchedule, Materialization, Store
from tests.conftest import build_occurrence, build_schedule, utc
from tests.contract.builders import (
    NOW,
    PARTS,
    Opener,
    materialization,
    materialize_next,
    next_version,
    plan_pass,
    quarantine_at,
)


def _due_all(store: Store, until_text: str, limit: int = 2) -> list[DueSchedule]:
    seen: list[DueSchedule] = []
    token = None
    while True:
        page = store.due(utc(until_text), limit, token)
        assert len(page.items) <= limit
        seen += page.items
        token = page.next_token
        if token is None:
            return seen


# --- due ---------------------------------------------------------------------------------


def test_due_lists_active_schedules_by_next_due_in_pages(store: Store) -> None:
    due = [build_schedule(NOW, spec={"at": f"2026-12-01T08:0{i}:00Z"}) for i in range(1, 6)]
    late = build_schedule(NOW, spec={"at": "2026-12-01T10:00:00Z"})
    paused = build_schedule(NOW, spec={"at": "2026-12-01T08:01:00Z"})
    deleted = build_schedule(NOW, spec={"at": "2026-12-01T08:01:00Z"})
    for schedule in [*due, late, paused, deleted]:
        store.create(schedule)
    store.pause(paused.schedule_id, "maintenance", NOW)
    store.delete(deleted.schedule_id, NOW)
    # Each as planning reads it: the current version's number, spec and policy.
    assert _due_all(store, "2026-12-01T09:00:00Z") == [DueSchedule.of(s) for s in due]


def test_due_reads_the_current_version(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    v2 = next_version(schedule, {"cron": "0 9 * * *", "time_zone": "Europe/London"})
    assert store.save_version(
        v2, expected_next_due=schedule.next_due, next_due=schedule.next_due, now=NOW
    )
    assert schedule.next_due is not None
    [item] = store.due(schedule.next_due, 10).items
    assert item == DueSchedule(schedule.schedule_id, 2, schedule.next_due, v2.spec, v2.policy)


def test_a_quarantined_schedule_is_not_due(store: Store) -> None:
    healthy, poisoned = build_schedule(NOW), build_schedule(NOW)
    store.create(healthy)
    store.create(poisoned)
    store.quarantine(poisoned.schedule_id, 1, quarantine_at())
    due = store.due(utc("2026-12-02T00:00:00Z"), 10)
    assert [d.schedule_id for d in due.items] == [healthy.schedule_id]


def test_a_paused_schedule_edited_out_of_quarantine_stays_out_of_planning(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    sid = schedule.schedule_id
    store.pause(sid, None, NOW)
    store.quarantine(sid, 1, quarantine_at())
    v2 = next_version(schedule, {"cron": "0 10 * * *", "time_zone": "UTC"})
    new_due = utc("2026-12-01T10:00:00Z")
    assert store.save_version(v2, expected_next_due=schedule.next_due, next_due=new_due, now=NOW)
    head = store.get(sid)
    assert head is not None and head.quarantine is None and head.state.paused
    assert store.due(new_due, 10).items == ()


def test_a_schedule_whose_stored_spec_no_longer_reads_is_quarantined_and_left_out(
    store: Store, reopen: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule tightened after a schedule was saved (a time zone gone from the
    database, a bound added): planning and listing carry on without it."""
    healthy = build_schedule(NOW)
    poisoned = build_schedule(NOW, spec={"cron": "13 13 13 * *", "time_zone": "UTC"})
    store.create(healthy)
    store.create(poisoned)
    real = schedule_module.parse_spec

    def parse_spec(data: Any, *, created_at: Any) -> Any:
        if data.get("cron") == "13 13 13 * *":
            raise InvalidSchedule("spec.time_zone", "'UTC' is not a time zone any more")
        return real(data, created_at=created_at)

    monkeypatch.setattr(schedule_module, "parse_spec", parse_spec)
    # As after a restart: nothing decoded is kept in memory.
    schedule_module.stored_spec.cache_clear()
    restarted = reopen()

    due = restarted.due(utc("2026-12-31T00:00:00Z"), 10)
    listed = restarted.list_schedules(10)

    assert [d.schedule_id for d in due.items] == [healthy.schedule_id]
    assert [s.schedule_id for s in listed.items] == [healthy.schedule_id]
    monkeypatch.undo()
    schedule_module.stored_spec.cache_clear()
    found = reopen().get(poisoned.schedule_id)
    assert found is not None and found.quarantine is not None
    assert found.quarantine.component is QuarantineComponent.PLAN
    assert "is not a time zone any more" in found.quarantine.reason


# --- materialize -------------------------------------------------------------------------


def test_materialize_writes_occurrences_and_advances_next_due(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    run = materialize_next(store, schedule.schedule_id)
    head = store.get(schedule.schedule_id)
    assert head is not None
    assert head.next_due == schedule.next_due + timedelta(days=1)
    assert head.last_materialized_at == run.scheduled_at
    assert store.get_run(run.occurrence_id) == run
    assert store.get_by_business_key(run.business_key) == run


def test_planning_does_not_move_updated_at(store: Store) -> None:
    # updated_at says when the schedule last changed (an edit, a pause); a
    # planning pass writes next_due and last_materialized_at, not a change.
    schedule = build_schedule(NOW)
    store.create(schedule)
    materialize_next(store, schedule.schedule_id, now=NOW + timedelta(minutes=5))
    head = store.get(schedule.schedule_id)
    assert head is not None and head.next_due != schedule.next_due
    assert head.updated_at == schedule.updated_at


@pytest.mark.parametrize("change", ["version", "next_due", "paused", "deleted", "quarantined"])
def test_materialize_is_refused_when_the_schedule_changed(store: Store, change: str) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    other = build_schedule(NOW)
    store.create(other)
    run = build_occurrence(schedule, NOW, PARTS)
    expected_version, expected_due = schedule.version, schedule.next_due
    assert expected_due is not None
    if change == "version":
        expected_version += 1
    elif change == "next_due":
        expected_due += timedelta(minutes=1)
    elif change == "paused":
        store.pause(schedule.schedule_id, None, NOW)
    elif change == "deleted":
        store.delete(schedule.schedule_id, NOW)
    else:
        store.quarantine(schedule.schedule_id, 1, quarantine_at())
    other_run = build_occurrence(other, NOW, PARTS)
    outcomes = store.materialize(
        [
            materialization(
                schedule,
                run,
                expected_version=expected_version,
                expected_next_due=expected_due,
                next_due=expected_due + timedelta(days=1),
            ),
            materialization(other, other_run),
        ],
        NOW,
    )
    assert [(o.schedule_id, o.applied) for o in outcomes] == [
        (schedule.schedule_id, False),
        (other.schedule_id, True),
    ]
    assert outcomes[0].inserted == ()
    assert store.get_run(run.occurrence_id) is None
    assert store.get_run(other_run.occurrence_id) == other_run
    head = store.get(schedule.schedule_id)
    assert head is not None and head.last_materialized_at is None


def test_a_business_key_holds_one_occurrence_across_versions(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    run = materialize_next(store, schedule.schedule_id)
    head = store.get(schedule.schedule_id)
    assert head is not None
    # Version 2 of the same slot (same wall time and fold), at another instant.
    v2 = next_version(schedule, {"cron": "0 9 * * *", "time_zone": "Europe/Paris"})
    assert store.save_version(
        v2, expected_next_due=head.next_due, next_due=run.scheduled_at, now=NOW
    )
    twin = replace(
        run,
        occurrence_id=f"{schedule.schedule_id}.v2.20261201T080000Z",
        version=2,
        scheduled_at=utc("2026-12-01T08:00:00Z"),
    )
    [outcome] = store.materialize(
        [
            Materialization(
                schedule.schedule_id, 2, run.scheduled_at, None, run.scheduled_at, (twin,)
            )
        ],
        NOW,
    )
    assert outcome.applied and outcome.inserted == ()
    assert store.get_by_business_key(run.business_key) == run
    assert store.insert([twin]) == []
    assert store.insert([replace(run, business_key=run.business_key + "x")]) == []


@pytest.mark.usefixtures("without_range_rules")  # stored before the range rule
def test_occurrences_at_the_end_of_time_are_stored_and_read_back(store: Store) -> None:
    # A retention added to 9999-12-31 must not overflow (DynamoDB's TTL).
    schedule = build_schedule(NOW, spec={"at": "9999-12-31T23:59:59Z"})
    store.create(schedule)
    run = build_occurrence(schedule, NOW, PARTS)
    [outcome] = store.materialize([materialization(schedule, run, next_due=None)], NOW)
    assert outcome.applied and outcome.inserted == (run.occurrence_id,)
    found = store.get_run(run.occurrence_id)
    assert found is not None and found.scheduled_at == utc("9999-12-31T23:59:59Z")


def test_an_occurrence_is_stored_as_given_admitted_or_closed(store: Store) -> None:
    # The planner admits a due slot by the write that materializes it, and
    # closes one the overdue policy skips; the store keeps each as given.
    admitted_one, skipped_one = build_schedule(NOW), build_schedule(NOW)
    store.create(admitted_one)
    store.create(skipped_one)
    admitted = build_occurrence(admitted_one, NOW, PARTS).admitted(NOW)
    skipped = replace(
        build_occurrence(skipped_one, NOW, PARTS),
        status=RunStatus.SKIPPED,
        reason="superseded",
        pending=False,
        finished_at=NOW,
    )
    outcomes = store.materialize(
        [materialization(admitted_one, admitted), materialization(skipped_one, skipped)], NOW
    )
    assert [o.inserted for o in outcomes] == [(admitted.occurrence_id,), (skipped.occurrence_id,)]
    assert store.get_run(admitted.occurrence_id) == admitted
    assert store.get_run(skipped.occurrence_id) == skipped


# --- a planning pass ----------------------------------------------------------------------


def _every_minute(store: Store, count: int) -> list[str]:
    """``count`` schedules every minute from 08:01."""
    made = [
        build_schedule(NOW, spec={"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
        for _ in range(count)
    ]
    for schedule in made:
        store.create(schedule)
        assert schedule.next_due == utc("2026-12-01T08:01:00Z")
    return sorted(s.schedule_id for s in made)


def _slots(store: Store, schedule_id: str) -> list[str]:
    runs = store.runs(schedule_id, 100).items
    return sorted(r.scheduled_at.strftime("%H:%M") for r in runs)


def test_a_pass_planned_through_an_instant_leaves_each_schedule_due_once_at_its_next_slot(
    store: Store,
) -> None:
    sids = _every_minute(store, 3)
    once = build_schedule(NOW, spec={"at": "2026-12-01T08:30:00Z"})
    store.create(once)

    first = plan_pass(store, utc("2026-12-01T08:02:30Z"), NOW)
    assert len(first) == 6 == len(set(first))
    # The next pass reads each schedule once, at the slot after the last planned.
    after = _due_all(store, "2026-12-01T08:05:00Z")
    assert sorted(d.schedule_id for d in after) == sids
    assert {d.next_due for d in after} == {utc("2026-12-01T08:03:00Z")}

    second = plan_pass(store, utc("2026-12-01T08:05:00Z"), NOW + timedelta(minutes=2))
    assert len(second) == 9 and not set(second) & set(first)
    for sid in sids:
        assert _slots(store, sid) == ["08:01", "08:02", "08:03", "08:04", "08:05"]
    assert _slots(store, once.schedule_id) == []
    # Nothing due by then is left unplanned, and nothing is planned twice.
    assert plan_pass(store, utc("2026-12-01T08:05:00Z"), NOW + timedelta(minutes=3)) == []
    head = store.get(sids[0])
    assert head is not None and head.last_materialized_at == utc("2026-12-01T08:05:00Z")


def test_a_pass_stopped_at_its_budget_leaves_the_rest_to_the_next(store: Store) -> None:
    sids = _every_minute(store, 5)
    until = utc("2026-12-01T08:01:00Z")
    partial = plan_pass(store, until, NOW, limit=2, pages=1)
    assert len(partial) == 2
    rest = plan_pass(store, until, NOW, limit=2)
    assert len(rest) == 3 and not set(rest) & set(partial)
    assert all(_slots(store, sid) == ["08:01"] for sid in sids)
    assert _due_all(store, "2026-12-01T08:01:00Z") == []


def test_due_ahead_reads_only_active_schedules_next_due_in_its_window(store: Store) -> None:
    inside = [build_schedule(NOW, spec={"at": f"2026-12-01T08:0{i}:00Z"}) for i in (2, 3, 4)]
    at_after = build_schedule(NOW, spec={"at": "2026-12-01T08:01:00Z"})
    beyond = build_schedule(NOW, spec={"at": "2026-12-01T08:06:00Z"})
    paused, deleted, quarantined = (
        build_schedule(NOW, spec={"at": "2026-12-01T08:03:00Z"}) for _ in range(3)
    )
    for schedule in [*inside, at_after, beyond, paused, deleted, quarantined]:
        store.create(schedule)
    store.pause(paused.schedule_id, None, NOW)
    store.delete(deleted.schedule_id, NOW)
    store.quarantine(quarantined.schedule_id, 1, quarantine_at())

    seen: list[DueSchedule] = []
    token = None
    while True:
        page = store.due_ahead(utc("2026-12-01T08:01:00Z"), utc("2026-12-01T08:05:00Z"), 2, token)
        assert len(page.items) <= 2
        seen += page.items
        token = page.next_token
        if token is None:
            break
    # A store that keeps no seeds reads none; one that does reads these, in order.
    allowed = [DueSchedule.of(s) for s in inside]
    assert seen in ([], allowed)


def test_chain_crowd_names_only_an_instant_enough_planned_schedules_are_next_due_at(
    store: Store,
) -> None:
    _every_minute(store, 3)
    plan_pass(store, utc("2026-12-01T08:02:30Z"), NOW)  # each is next due at 08:03
    after, until = utc("2026-12-01T08:02:30Z"), utc("2026-12-01T08:10:00Z")
    # A store with no chain has no crowd; one with a chain names 08:03.
    assert store.chain_crowd(after, until, 3) in (None, utc("2026-12-01T08:03:00Z"))
    assert store.chain_crowd(after, until, 4) is None
    assert store.chain_crowd(utc("2026-12-01T08:03:00Z"), until, 1) is None
    assert store.chain_crowd(after, utc("2026-12-01T08:02:59Z"), 1) is None


def test_materialize_sending_sends_what_it_admits_or_leaves_it_all_to_the_caller(
    store: Store,
) -> None:
    sent_ok, send_fails, paused = build_schedule(NOW), build_schedule(NOW), build_schedule(NOW)
    for schedule in (sent_ok, send_fails, paused):
        store.create(schedule)
    store.pause(paused.schedule_id, None, NOW)
    runs = [build_occurrence(s, NOW, PARTS).admitted(NOW) for s in (sent_ok, send_fails, paused)]
    sends: list[list[str]] = []

    def send(batch: Sequence[Run]) -> Sequence[str]:
        sends.append([r.occurrence_id for r in batch])
        return [runs[1].occurrence_id]  # its send failed

    outcomes = store.materialize_sending(
        [materialization(s, r) for s, r in zip((sent_ok, send_fails, paused), runs, strict=True)],
        NOW,
        send,
    )
    if outcomes is None:  # this store does not send: it wrote nothing
        assert sends == []
        for schedule, run in zip((sent_ok, send_fails, paused), runs, strict=True):
            assert store.get_run(run.occurrence_id) is None
            head = store.get(schedule.schedule_id)
            assert head is not None and head.next_due == schedule.next_due
        return
    assert [(o.applied, o.inserted) for o in outcomes] == [
        (True, (runs[0].occurrence_id,)),
        (True, (runs[1].occurrence_id,)),
        (False, ()),
    ]
    assert sorted(id_ for batch in sends for id_ in batch) == sorted(
        r.occurrence_id for r in runs[:2]
    )
    for schedule in (sent_ok, send_fails):
        head = store.get(schedule.schedule_id)
        assert head is not None and head.next_due == schedule.next_due + timedelta(days=1)
    assert store.get_run(runs[2].occurrence_id) is None
    # The one whose send failed waits in the outbox (pending) for a later pass.
    failed = runs[1]
    later = failed.scheduled_at + timedelta(minutes=1)
    pending = store.pending_due(failed.shard, failed.bucket, failed.bucket, later, 10)
    assert failed.occurrence_id in [p.occurrence_id for p in pending]
