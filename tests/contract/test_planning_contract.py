"""The planning side of the schedule port (``ScheduleStore`` in service/ports.py),
on every store: what a pass reads (``due``, ``due_ahead``, ``chain_crowd``),
what it writes (``materialize``, then ``advance`` once what it admitted was
sent) and how it ends (``planned_through``). A store may keep more than the port asks (seeds, a
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
from domain.run import DeliveryIntent, Run, RunStatus
from domain.schedule import QuarantineComponent, Schedule
from service.planning.outbox import DirectAdmission
from service.planning.pass_state import PassState
from service.ports import DueSchedule, Materialization, Store
from tests.conftest import FakeQueue, build_occurrence, build_schedule, utc
from tests.contract.builders import (
    NOW,
    PARTS,
    Opener,
    created_with_runs,
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
        page = store.schedules.due(utc(until_text), limit, token)
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
        store.schedules.create(schedule)
    store.schedules.pause(paused.schedule_id, "maintenance", NOW)
    store.schedules.delete(deleted.schedule_id, NOW)
    # Each as planning reads it: the current version's number, spec and policy.
    assert _due_all(store, "2026-12-01T09:00:00Z") == [DueSchedule.of(s) for s in due]


def test_due_reads_the_current_version(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    v2 = next_version(schedule, {"cron": "0 9 * * *", "time_zone": "Europe/London"})
    assert store.schedules.save_version(
        v2, expected_next_due=schedule.next_due, next_due=schedule.next_due, now=NOW
    )
    assert schedule.next_due is not None
    [item] = store.schedules.due(schedule.next_due, 10).items
    assert item == DueSchedule(schedule.schedule_id, 2, schedule.next_due, v2.spec, v2.policy)


def test_a_quarantined_schedule_is_not_due(store: Store) -> None:
    healthy, poisoned = build_schedule(NOW), build_schedule(NOW)
    store.schedules.create(healthy)
    store.schedules.create(poisoned)
    store.schedules.quarantine(poisoned.schedule_id, 1, quarantine_at())
    due = store.schedules.due(utc("2026-12-02T00:00:00Z"), 10)
    assert [d.schedule_id for d in due.items] == [healthy.schedule_id]


def test_a_paused_schedule_edited_out_of_quarantine_stays_out_of_planning(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    store.schedules.pause(sid, None, NOW)
    store.schedules.quarantine(sid, 1, quarantine_at())
    v2 = next_version(schedule, {"cron": "0 10 * * *", "time_zone": "UTC"})
    new_due = utc("2026-12-01T10:00:00Z")
    assert store.schedules.save_version(
        v2, expected_next_due=schedule.next_due, next_due=new_due, now=NOW
    )
    head = store.schedules.get(sid)
    assert head is not None and head.quarantine is None and head.state.paused
    assert store.schedules.due(new_due, 10).items == ()


def test_a_schedule_whose_stored_spec_no_longer_reads_is_quarantined_and_left_out(
    store: Store, reopen: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule tightened after a schedule was saved (a time zone gone from the
    database, a bound added): planning and listing carry on without it."""
    healthy = build_schedule(NOW)
    poisoned = build_schedule(NOW, spec={"cron": "13 13 13 * *", "time_zone": "UTC"})
    store.schedules.create(healthy)
    store.schedules.create(poisoned)
    real = schedule_module.parse_spec

    def parse_spec(data: Any, *, created_at: Any) -> Any:
        if data.get("cron") == "13 13 13 * *":
            raise InvalidSchedule("spec.time_zone", "'UTC' is not a time zone any more")
        return real(data, created_at=created_at)

    monkeypatch.setattr(schedule_module, "parse_spec", parse_spec)
    # As after a restart: nothing decoded is kept in memory.
    schedule_module.stored_spec.cache_clear()
    restarted = reopen()

    due = restarted.schedules.due(utc("2026-12-31T00:00:00Z"), 10)
    listed = restarted.schedules.list_schedules(10)

    assert [d.schedule_id for d in due.items] == [healthy.schedule_id]
    assert [s.schedule_id for s in listed.items] == [healthy.schedule_id]
    monkeypatch.undo()
    schedule_module.stored_spec.cache_clear()
    found = reopen().schedules.get(poisoned.schedule_id)
    assert found is not None and found.quarantine is not None
    assert found.quarantine.component is QuarantineComponent.PLAN
    assert "is not a time zone any more" in found.quarantine.reason


# --- materialize -------------------------------------------------------------------------


def test_materialize_writes_occurrences_and_advances_next_due(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    run = materialize_next(store, schedule.schedule_id)
    head = store.schedules.get(schedule.schedule_id)
    assert head is not None
    assert head.next_due == schedule.next_due + timedelta(days=1)
    assert head.last_materialized_at == run.scheduled_at
    assert store.records.get_run(run.occurrence_id) == run
    assert store.records.get_by_business_key(run.business_key) == run


def test_planning_does_not_move_updated_at(store: Store) -> None:
    # updated_at says when the schedule last changed (an edit, a pause); a
    # planning pass writes next_due and last_materialized_at, not a change.
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    materialize_next(store, schedule.schedule_id, now=NOW + timedelta(minutes=5))
    head = store.schedules.get(schedule.schedule_id)
    assert head is not None and head.next_due != schedule.next_due
    assert head.updated_at == schedule.updated_at


@pytest.mark.parametrize("change", ["version", "next_due", "paused", "deleted", "quarantined"])
def test_materialize_is_refused_when_the_schedule_changed(store: Store, change: str) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    other = build_schedule(NOW)
    store.schedules.create(other)
    run = build_occurrence(schedule, NOW, PARTS)
    expected_version, expected_due = schedule.version, schedule.next_due
    assert expected_due is not None
    if change == "version":
        expected_version += 1
    elif change == "next_due":
        expected_due += timedelta(minutes=1)
    elif change == "paused":
        store.schedules.pause(schedule.schedule_id, None, NOW)
    elif change == "deleted":
        store.schedules.delete(schedule.schedule_id, NOW)
    else:
        store.schedules.quarantine(schedule.schedule_id, 1, quarantine_at())
    other_run = build_occurrence(other, NOW, PARTS)
    outcomes = store.schedules.materialize(
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
    ).outcomes
    assert [(o.schedule_id, o.applied) for o in outcomes] == [
        (schedule.schedule_id, False),
        (other.schedule_id, True),
    ]
    assert outcomes[0].inserted == ()
    assert store.records.get_run(run.occurrence_id) is None
    assert store.records.get_run(other_run.occurrence_id) == other_run
    head = store.schedules.get(schedule.schedule_id)
    assert head is not None and head.last_materialized_at is None


def test_a_business_key_holds_one_occurrence_across_versions(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    run = materialize_next(store, schedule.schedule_id)
    head = store.schedules.get(schedule.schedule_id)
    assert head is not None
    # Version 2 of the same slot (same wall time and fold), at another instant.
    v2 = next_version(schedule, {"cron": "0 9 * * *", "time_zone": "Europe/Paris"})
    assert store.schedules.save_version(
        v2, expected_next_due=head.next_due, next_due=run.scheduled_at, now=NOW
    )
    twin = replace(
        run,
        occurrence_id=f"{schedule.schedule_id}.v2.20261201T080000Z",
        version=2,
        scheduled_at=utc("2026-12-01T08:00:00Z"),
    )
    [outcome] = store.schedules.materialize(
        [
            Materialization(
                schedule.schedule_id, 2, run.scheduled_at, None, run.scheduled_at, (twin,)
            )
        ],
        NOW,
    ).outcomes
    assert outcome.applied and outcome.inserted == ()
    assert store.records.get_by_business_key(run.business_key) == run
    assert store.records.insert([twin]) == []
    assert store.records.insert([replace(run, business_key=run.business_key + "x")]) == []


@pytest.mark.usefixtures("without_range_rules")  # stored before the range rule
def test_occurrences_at_the_end_of_time_are_stored_and_read_back(store: Store) -> None:
    # A retention added to 9999-12-31 must not overflow (DynamoDB's TTL).
    schedule = build_schedule(NOW, spec={"at": "9999-12-31T23:59:59Z"})
    store.schedules.create(schedule)
    run = build_occurrence(schedule, NOW, PARTS)
    [outcome] = store.schedules.materialize(
        [materialization(schedule, run, next_due=None)], NOW
    ).outcomes
    assert outcome.applied and outcome.inserted == (run.occurrence_id,)
    found = store.records.get_run(run.occurrence_id)
    assert found is not None and found.scheduled_at == utc("9999-12-31T23:59:59Z")


def test_an_occurrence_is_stored_as_given_admitted_or_closed(store: Store) -> None:
    # The planner admits a due slot by the write that materializes it, and
    # closes one the overdue policy skips; the store keeps each as given.
    admitted_one, skipped_one = build_schedule(NOW), build_schedule(NOW)
    store.schedules.create(admitted_one)
    store.schedules.create(skipped_one)
    admitted = build_occurrence(admitted_one, NOW, PARTS).admitted(NOW)
    skipped = replace(
        build_occurrence(skipped_one, NOW, PARTS),
        status=RunStatus.SKIPPED,
        reason="superseded",
        pending=False,
        finished_at=NOW,
    )
    stored = store.schedules.materialize(
        [materialization(admitted_one, admitted), materialization(skipped_one, skipped)], NOW
    )
    assert [r.occurrence_id for r in stored.to_send] == [admitted.occurrence_id]
    outcomes = store.schedules.advance(stored, {admitted.occurrence_id})
    assert [o.inserted for o in outcomes] == [(admitted.occurrence_id,), (skipped.occurrence_id,)]
    found = store.records.get_run(admitted.occurrence_id)
    assert found is not None and found.status is RunStatus.ADMITTED
    assert found.admitted_at == admitted.admitted_at
    assert store.records.get_run(skipped.occurrence_id) == skipped


# --- a planning pass ----------------------------------------------------------------------


def _every_minute(store: Store, count: int) -> list[str]:
    """``count`` schedules every minute from 08:01."""
    made = [
        build_schedule(NOW, spec={"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
        for _ in range(count)
    ]
    for schedule in made:
        store.schedules.create(schedule)
        assert schedule.next_due == utc("2026-12-01T08:01:00Z")
    return sorted(s.schedule_id for s in made)


def _slots(store: Store, schedule_id: str) -> list[str]:
    runs = store.records.runs(schedule_id, 100).items
    return sorted(r.scheduled_at.strftime("%H:%M") for r in runs)


def test_a_pass_planned_through_an_instant_leaves_each_schedule_due_once_at_its_next_slot(
    store: Store,
) -> None:
    sids = _every_minute(store, 3)
    once = build_schedule(NOW, spec={"at": "2026-12-01T08:30:00Z"})
    store.schedules.create(once)

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
    head = store.schedules.get(sids[0])
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
        store.schedules.create(schedule)
    store.schedules.pause(paused.schedule_id, None, NOW)
    store.schedules.delete(deleted.schedule_id, NOW)
    store.schedules.quarantine(quarantined.schedule_id, 1, quarantine_at())

    seen: list[DueSchedule] = []
    token = None
    while True:
        page = store.schedules.due_ahead(
            utc("2026-12-01T08:01:00Z"), utc("2026-12-01T08:05:00Z"), 2, token
        )
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
    assert store.schedules.chain_crowd(after, until, 3) in (None, utc("2026-12-01T08:03:00Z"))
    assert store.schedules.chain_crowd(after, until, 4) is None
    assert store.schedules.chain_crowd(utc("2026-12-01T08:03:00Z"), until, 1) is None
    assert store.schedules.chain_crowd(after, utc("2026-12-01T08:02:59Z"), 1) is None


# --- what a planner admits as it stores: store, send, outbox, advance ------------------------


class _Queue(FakeQueue):
    """A queue that cannot send the intents of ``refused`` (it says so)."""

    def __init__(self, refused: Sequence[str] = ()) -> None:
        super().__init__()
        self.refused = set(refused)

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        failed = [i.occurrence_id for i in intents if i.occurrence_id in self.refused]
        super().send_batch([i for i in intents if i.occurrence_id not in self.refused])
        return failed


def _admitting(store: Store, count: int, *, paused: int = 0) -> tuple[list[Schedule], list[Run]]:
    """``count`` new schedules (the last ``paused`` of them paused), each with
    its next slot admitted as it would be stored."""
    schedules = [build_schedule(NOW) for _ in range(count)]
    for schedule in schedules:
        store.schedules.create(schedule)
    for schedule in schedules[count - paused :]:
        store.schedules.pause(schedule.schedule_id, None, NOW)
    return schedules, [build_occurrence(s, NOW, PARTS).admitted(NOW) for s in schedules]


def _pending(store: Store, run: Run) -> list[str]:
    later = run.scheduled_at + timedelta(minutes=1)
    return [
        p.occurrence_id
        for p in store.records.pending_due(run.shard, run.bucket, run.bucket, later, 10)
    ]


def test_what_is_admitted_as_stored_is_sent_the_failed_send_waits_in_the_outbox(
    store: Store,
) -> None:
    # The planner's order: store, send, outbox for what failed, advance.
    schedules, runs = _admitting(store, 3, paused=1)
    queue = _Queue(refused=[runs[1].occurrence_id])
    stored = store.schedules.materialize(
        [materialization(s, r) for s, r in zip(schedules, runs, strict=True)], NOW
    )
    # The paused one is not written, so not returned to send.
    assert sorted(r.occurrence_id for r in stored.to_send) == sorted(
        r.occurrence_id for r in runs[:2]
    )
    state = PassState(NOW)
    sent = DirectAdmission(store, queue, lambda shard: 10).send(state, stored.to_send, NOW)
    assert sent == {runs[0].occurrence_id}
    outcomes = store.schedules.advance(stored, sent)
    assert [(o.applied, o.inserted) for o in outcomes] == [
        (True, (runs[0].occurrence_id,)),
        (True, (runs[1].occurrence_id,)),
        (False, ()),
    ]
    for schedule in schedules[:2]:
        head = store.schedules.get(schedule.schedule_id)
        assert head is not None and head.next_due == schedule.next_due + timedelta(days=1)
    assert store.records.get_run(runs[2].occurrence_id) is None
    # The one sent is out of the outbox; the one whose send failed waits in it.
    assert [i.occurrence_id for i in queue.sent] == [runs[0].occurrence_id]
    assert runs[0].occurrence_id not in _pending(store, runs[0])
    assert _pending(store, runs[1]) == [runs[1].occurrence_id]
    unsent = store.records.get_run(runs[1].occurrence_id)
    assert unsent is not None and unsent.pending and unsent.sent_at is None


def test_until_advance_each_admitted_record_is_in_the_outbox_or_its_schedule_stays(
    reopen: Opener,
) -> None:
    # A pass that dies after storing, before its send, outbox or advance:
    # every admitted record is in the outbox (dispatch sends it), or its
    # schedule was not advanced, so the next pass plans the slot again and
    # is given it to send again. Sent at least once either way.
    store = reopen()
    schedules, runs = _admitting(store, 2)
    batch = [materialization(s, r) for s, r in zip(schedules, runs, strict=True)]
    stored = store.schedules.materialize(batch, NOW)
    assert {r.occurrence_id for r in stored.to_send} == {r.occurrence_id for r in runs}
    restarted = reopen()  # nothing of the dead pass is kept
    for schedule, record in zip(schedules, stored.to_send, strict=True):
        head = restarted.schedules.get(schedule.schedule_id)
        assert head is not None
        if record.pending:
            assert record.occurrence_id in _pending(restarted, record)
        else:
            assert head.next_due == schedule.next_due
    # The next pass plans the same slots: what is not in the outbox is
    # returned to send again, and then the schedules advance.
    again = restarted.schedules.materialize(batch, NOW)
    waiting = {r.occurrence_id for r in stored.to_send if r.pending}
    assert {r.occurrence_id for r in again.to_send} == {
        r.occurrence_id for r in runs if r.occurrence_id not in waiting
    }
    restarted.schedules.advance(again, {r.occurrence_id for r in again.to_send})
    for schedule in schedules:
        head = restarted.schedules.get(schedule.schedule_id)
        assert head is not None and head.next_due == schedule.next_due + timedelta(days=1)


def test_into_outbox_puts_back_only_an_admitted_record_not_started_and_out_of_it(
    store: Store,
) -> None:
    schedules, runs = _admitting(store, 1)
    stored = store.schedules.materialize([materialization(schedules[0], runs[0])], NOW)
    store.schedules.advance(stored, set())
    [record] = stored.to_send
    if record.pending:  # stored in the outbox: nothing to put back
        assert store.records.into_outbox([record]) == 0
        assert store.records.mark_sent([record.occurrence_id], NOW) == 1
    assert store.records.into_outbox([record]) == 1
    assert store.records.into_outbox([record]) == 0  # already there
    assert _pending(store, record) == [record.occurrence_id]
    waiting, _ = created_with_runs(store, "2026-12-01T08:05:00Z")
    [scheduled] = store.records.runs(waiting, 1).items
    assert store.records.into_outbox([scheduled]) == 0  # not admitted
