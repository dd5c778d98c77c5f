"""The store contract: what every adapter of the store ports must do.

Each test states one conditional rule of service/ports.py and checks it on the
store given by the ``store`` fixture (SQLite now; DynamoDB by adding a param).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

import domain.schedule as schedule_module
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import DynamoStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from domain.errors import InvalidSchedule
from domain.partition import Partitioning
from domain.run import PendingOccurrence, Reason, Run, RunKind, RunStatus, new_occurrence
from domain.schedule import Quarantine, QuarantineComponent, ScheduleVersion, parse_policy
from domain.spec import Slot, parse_spec
from service.ports import Closure, DueSchedule, Heartbeat, Materialization, Store
from service.run_ports import RunStore
from tests.conftest import build_occurrence, build_schedule, random_schedule_id, utc

NOW = utc("2026-12-01T08:00:00Z")
PARTS = Partitioning(shards=4, bucket_s=60)


def _materialize_next(store: Store, schedule_id: str, now=NOW) -> Run:
    schedule = store.get(schedule_id)
    assert schedule is not None and schedule.next_due is not None
    run = build_occurrence(schedule, now, PARTS)
    [outcome] = store.materialize(
        [
            Materialization(
                schedule_id,
                schedule.version,
                schedule.next_due,
                schedule.next_due + timedelta(days=1),
                run.scheduled_at,
                (run,),
            )
        ],
        now,
    )
    assert outcome.applied and outcome.inserted == (run.occurrence_id,)
    return run


def _runs(store: Store) -> RunStore:
    if isinstance(store, SqliteStore):
        return SqliteRunStore(store)
    assert isinstance(store, DynamoStore)
    return DynamoRunStore(store)


def _slot_run(schedule_id: str, at: str, *, version: int = 1, bucket: int | None = None) -> Run:
    instant = utc(at)
    return new_occurrence(
        schedule_id,
        version,
        Slot(instant, instant.replace(tzinfo=None)),
        bucket=PARTS.bucket(instant) if bucket is None else bucket,
        shard=PARTS.shard(schedule_id),
        materialized_at=NOW,
    )


# --- schedules -------------------------------------------------------------------------


def test_create_then_get_returns_the_schedule_and_its_first_version(store: Store) -> None:
    schedule = build_schedule(NOW, payload={"report": "sales"})
    stored, created = store.create(schedule)
    assert created and stored == schedule
    assert store.get(schedule.schedule_id) == schedule
    assert store.get_version(schedule.schedule_id, 1) == schedule.current
    assert store.get("sch_missing") is None


def test_create_with_a_used_idempotency_key_returns_the_first_schedule(store: Store) -> None:
    first = build_schedule(NOW)
    second = build_schedule(NOW)
    assert store.create(first, "key-1") == (first, True)
    stored, created = store.create(second, "key-1")
    assert not created and stored == first
    assert store.get(second.schedule_id) is None


def test_create_refuses_an_existing_schedule_id(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    with pytest.raises(ValueError):
        store.create(schedule)


def test_list_pages_through_live_schedules_oldest_first(store: Store) -> None:
    made = [build_schedule(NOW + timedelta(seconds=i)) for i in range(5)]
    for schedule in made:
        store.create(schedule)
    store.delete(made[2].schedule_id, NOW)
    seen, token = [], None
    while True:
        page = store.list_schedules(2, token)
        assert len(page.items) <= 2
        seen += [s.schedule_id for s in page.items]
        token = page.next_token
        if token is None:
            break
    assert seen == [s.schedule_id for s in made if s is not made[2]]


def test_due_lists_active_schedules_by_next_due_in_pages(store: Store) -> None:
    due = [build_schedule(NOW, spec={"at": f"2026-12-01T08:0{i}:00Z"}) for i in range(1, 6)]
    late = build_schedule(NOW, spec={"at": "2026-12-01T10:00:00Z"})
    paused = build_schedule(NOW, spec={"at": "2026-12-01T08:01:00Z"})
    deleted = build_schedule(NOW, spec={"at": "2026-12-01T08:01:00Z"})
    for schedule in [*due, late, paused, deleted]:
        store.create(schedule)
    store.pause(paused.schedule_id, "maintenance", NOW)
    store.delete(deleted.schedule_id, NOW)
    seen, token = [], None
    while True:
        page = store.due(utc("2026-12-01T09:00:00Z"), 2, token)
        seen += page.items
        token = page.next_token
        if token is None:
            break
    # Each as planning reads it: the current version's number, spec and policy.
    assert seen == [DueSchedule.of(s) for s in due]


def test_due_reads_the_current_version(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    v2 = _next_version(schedule, {"cron": "0 9 * * *", "time_zone": "Europe/London"})
    assert store.save_version(
        v2, expected_next_due=schedule.next_due, next_due=schedule.next_due, now=NOW
    )
    assert schedule.next_due is not None
    [item] = store.due(schedule.next_due, 10).items
    assert item == DueSchedule(schedule.schedule_id, 2, schedule.next_due, v2.spec, v2.policy)


def _next_version(schedule, spec, now=NOW) -> ScheduleVersion:
    return ScheduleVersion(
        schedule_id=schedule.schedule_id,
        version=schedule.version + 1,
        name="moved",
        spec=parse_spec(spec, created_at=now),
        policy=parse_policy(None),
        target=schedule.current.target,
        payload={"v": schedule.version + 1},
        created_at=now,
    )


def test_save_version_is_conditioned_on_version_and_next_due(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    v2 = _next_version(schedule, {"cron": "0 9 * * *", "time_zone": "Europe/London"})
    new_due = utc("2026-12-02T09:00:00Z")
    wrong_due = schedule.next_due + timedelta(seconds=1)
    assert not store.save_version(v2, expected_next_due=wrong_due, next_due=new_due, now=NOW)
    assert store.get(schedule.schedule_id) == schedule
    assert store.save_version(v2, expected_next_due=schedule.next_due, next_due=new_due, now=NOW)
    # The same version cannot be written twice (stale writer).
    assert not store.save_version(v2, expected_next_due=new_due, next_due=new_due, now=NOW)
    head = store.get(schedule.schedule_id)
    assert head is not None and head.version == 2 and head.next_due == new_due
    assert head.current == v2
    assert store.get_version(schedule.schedule_id, 1) == schedule.current
    assert store.get_versions([(schedule.schedule_id, 1), (schedule.schedule_id, 2)]) == {
        (schedule.schedule_id, 1): schedule.current,
        (schedule.schedule_id, 2): v2,
    }


def test_save_version_refuses_a_deleted_schedule(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    store.delete(schedule.schedule_id, NOW)
    v2 = _next_version(schedule, {"cron": "0 10 * * *"})
    assert not store.save_version(v2, expected_next_due=None, next_due=None, now=NOW)


def test_pause_resume_and_delete_are_conditional(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    sid = schedule.schedule_id
    assert not store.resume(sid, expected_next_due=schedule.next_due, next_due=None, now=NOW)
    assert store.pause(sid, "holiday", NOW)
    paused = store.get(sid)
    assert paused is not None and paused.state.paused and paused.state.note == "holiday"
    later = schedule.next_due + timedelta(days=1)
    assert not store.resume(sid, expected_next_due=later, next_due=later, now=NOW)
    assert store.resume(sid, expected_next_due=schedule.next_due, next_due=later, now=NOW)
    resumed = store.get(sid)
    assert resumed is not None and not resumed.state.paused and resumed.state.note is None
    assert resumed.next_due == later
    assert store.delete(sid, NOW)
    assert not store.delete(sid, NOW)
    assert not store.pause(sid, "x", NOW)
    gone = store.get(sid)
    assert gone is not None and gone.deleted_at == NOW and gone.next_due is None


# --- materialization ---------------------------------------------------------------------


def test_materialize_writes_occurrences_and_advances_next_due(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    run = _materialize_next(store, schedule.schedule_id)
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
    _materialize_next(store, schedule.schedule_id, now=NOW + timedelta(minutes=5))
    head = store.get(schedule.schedule_id)
    assert head is not None and head.next_due != schedule.next_due
    assert head.updated_at == schedule.updated_at


@pytest.mark.parametrize("change", ["version", "next_due", "paused", "deleted"])
def test_materialize_is_refused_when_the_schedule_changed(store: Store, change: str) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    other = build_schedule(NOW)
    store.create(other)
    run = build_occurrence(schedule, NOW, PARTS)
    expected_version, expected_due = schedule.version, schedule.next_due
    if change == "version":
        expected_version += 1
    elif change == "next_due":
        expected_due += timedelta(minutes=1)
    elif change == "paused":
        store.pause(schedule.schedule_id, None, NOW)
    else:
        store.delete(schedule.schedule_id, NOW)
    other_run = build_occurrence(other, NOW, PARTS)
    outcomes = store.materialize(
        [
            Materialization(
                schedule.schedule_id,
                expected_version,
                expected_due,
                expected_due + timedelta(days=1),
                run.scheduled_at,
                (run,),
            ),
            Materialization(
                other.schedule_id,
                other.version,
                other.next_due,
                other.next_due + timedelta(days=1),
                other_run.scheduled_at,
                (other_run,),
            ),
        ],
        NOW,
    )
    assert [o.applied for o in outcomes] == [False, True]
    assert store.get_run(run.occurrence_id) is None
    assert store.get_run(other_run.occurrence_id) == other_run


def test_a_business_key_holds_one_occurrence_across_versions(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    run = _materialize_next(store, schedule.schedule_id)
    head = store.get(schedule.schedule_id)
    assert head is not None
    # Version 2 of the same slot (same wall time and fold), at another instant.
    v2 = _next_version(schedule, {"cron": "0 9 * * *", "time_zone": "Europe/Paris"})
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


def test_insert_writes_records_once(store: Store) -> None:
    sid = random_schedule_id()
    store.create(build_schedule(NOW, schedule_id=sid))
    run = replace(_slot_run(sid, "2026-12-01T07:00:00Z"), kind=RunKind.BACKFILL)
    assert store.insert([run, run]) == [run.occurrence_id]
    assert store.insert([run]) == []


# --- dispatch ----------------------------------------------------------------------


def _created_with_runs(store: Store, *instants: str) -> tuple[str, list[Run]]:
    sid = random_schedule_id()
    store.create(build_schedule(NOW, schedule_id=sid))
    runs = [_slot_run(sid, at) for at in instants]
    assert store.insert(runs) == [r.occurrence_id for r in runs]
    return sid, runs


def test_pending_due_is_oldest_first_within_buckets_and_due_time(store: Store) -> None:
    sid, runs = _created_with_runs(
        store,
        "2026-12-01T08:03:00Z",
        "2026-12-01T08:01:00Z",
        "2026-12-01T08:02:00Z",
        "2026-12-01T08:09:00Z",
    )
    shard = PARTS.shard(sid)
    b = PARTS.bucket(utc("2026-12-01T08:00:00Z"))
    due = store.pending_due(shard, b, b + 10, utc("2026-12-01T08:05:00Z"), 10)
    assert [r.occurrence_id for r in due] == [
        runs[1].occurrence_id,
        runs[2].occurrence_id,
        runs[0].occurrence_id,
    ]
    assert len(store.pending_due(shard, b, b + 10, utc("2026-12-01T08:05:00Z"), 2)) == 2
    assert store.pending_due(shard, b + 2, b + 2, utc("2026-12-01T08:05:00Z"), 10) == [
        PendingOccurrence.of(runs[2])
    ]
    assert (
        store.pending_due((shard + 1) % PARTS.shards, b, b + 10, utc("2026-12-01T09:00:00Z"), 10)
        == []
    )
    assert store.earliest_pending_bucket(shard) == b + 1
    assert store.earliest_pending_bucket(shard, b + 4) == b + 9
    assert store.earliest_pending_bucket(shard, b + 10) is None


def test_admit_moves_scheduled_to_admitted_exactly_once(store: Store) -> None:
    _, [run] = _created_with_runs(store, "2026-12-01T08:01:00Z")
    at = utc("2026-12-01T08:01:02Z")
    [pending] = store.pending_due(run.shard, run.bucket, run.bucket, at, 10)
    assert pending == PendingOccurrence.of(run)
    assert pending.status is RunStatus.SCHEDULED and pending.kind is RunKind.SCHEDULED
    assert store.admit([pending], at) == [run.occurrence_id]
    assert store.admit([pending], at + timedelta(seconds=1)) == []
    admitted = store.get_run(run.occurrence_id)
    assert admitted == replace(run, status=RunStatus.ADMITTED, admitted_at=at)
    assert admitted.pending and admitted.lag_s == 2.0
    # Still pending until its intent is sent: a later pass sends it again.
    due = store.pending_due(run.shard, run.bucket, run.bucket, at, 10)
    assert due == [PendingOccurrence.of(admitted)]


def test_mark_sent_clears_pending_only_after_admission(store: Store) -> None:
    _, [a, b] = _created_with_runs(store, "2026-12-01T08:01:00Z", "2026-12-01T08:01:30Z")
    at = utc("2026-12-01T08:02:00Z")
    store.admit([PendingOccurrence.of(a)], at)
    assert store.mark_sent([a.occurrence_id, b.occurrence_id], at) == 1
    sent = store.get_run(a.occurrence_id)
    assert sent is not None and not sent.pending and sent.sent_at == at
    assert store.pending_due(a.shard, a.bucket, a.bucket, at, 10) == [PendingOccurrence.of(b)]
    assert store.mark_sent([a.occurrence_id], at) == 0


def test_close_ends_only_scheduled_records(store: Store) -> None:
    _, [a, b] = _created_with_runs(store, "2026-12-01T08:01:00Z", "2026-12-01T08:01:30Z")
    at = utc("2026-12-01T08:02:00Z")
    store.admit([PendingOccurrence.of(a)], at)
    closed = store.close_runs(
        [
            Closure(a.occurrence_id, RunStatus.SKIPPED, Reason.SUPERSEDED),
            Closure(b.occurrence_id, RunStatus.EXPIRED, "too late"),
        ],
        at,
    )
    assert closed == [b.occurrence_id]
    record = store.get_run(b.occurrence_id)
    assert record is not None
    assert (record.status, record.reason, record.finished_at, record.pending) == (
        RunStatus.EXPIRED,
        "too late",
        at,
        False,
    )
    assert store.get_run(a.occurrence_id).status is RunStatus.ADMITTED


def test_withdraw_planned_deletes_only_the_slots_after_the_instant_not_started(
    store: Store,
) -> None:
    sid, [due, at_it, waiting, queued, started] = _created_with_runs(
        store,
        "2026-12-01T08:01:00Z",
        "2026-12-01T08:02:00Z",
        "2026-12-01T08:03:00Z",
        "2026-12-01T08:04:00Z",
        "2026-12-01T08:05:00Z",
    )
    _, [elsewhere] = _created_with_runs(store, "2026-12-01T08:03:00Z")
    at = utc("2026-12-01T08:02:00Z")
    store.admit([PendingOccurrence.of(queued), PendingOccurrence.of(started)], at)
    running = replace(
        store.get_run(started.occurrence_id), status=RunStatus.RUNNING, attempts=1, revision=1
    )
    trigger = replace(
        _slot_run(sid, "2026-12-01T08:06:00Z"),
        kind=RunKind.TRIGGER,
        business_key=f"{sid}#trigger#x",
    )
    assert store.insert([trigger]) == [trigger.occurrence_id]
    assert _runs(store).compare_and_set(store.get_run(started.occurrence_id), running)

    # Waiting and queued slots after the instant go; the due one, the one at
    # the instant, a started run, a trigger and another schedule's stay.
    assert store.withdraw_planned(sid, at) == 2
    assert store.get_run(waiting.occurrence_id) is None
    assert store.get_run(queued.occurrence_id) is None
    for kept in (due, at_it, started, trigger, elsewhere):
        assert store.get_run(kept.occurrence_id) is not None, kept.occurrence_id
    assert store.withdraw_planned(sid, at) == 0


def test_pause_then_close_scheduled_leaves_nothing_to_admit(store: Store) -> None:
    sid, [a, b] = _created_with_runs(store, "2026-12-01T08:01:00Z", "2026-12-02T08:01:00Z")
    at = utc("2026-12-01T08:02:00Z")
    store.pause(sid, None, at)
    assert store.close_scheduled(sid, RunStatus.SKIPPED, Reason.PAUSED, at) == 2
    assert store.admit([PendingOccurrence.of(a), PendingOccurrence.of(b)], at) == []
    assert store.get_run(a.occurrence_id).reason == Reason.PAUSED
    assert store.earliest_pending_bucket(a.shard) is None


def test_runs_pages_newest_first(store: Store) -> None:
    sid, runs = _created_with_runs(store, *[f"2026-12-01T0{h}:00:00Z" for h in range(1, 8)])
    seen, token = [], None
    while True:
        page = store.runs(sid, 3, token)
        seen += [r.occurrence_id for r in page.items]
        token = page.next_token
        if token is None:
            break
    assert seen == [r.occurrence_id for r in reversed(runs)]


# --- leases ----------------------------------------------------------------------


TTL = timedelta(seconds=30)


def test_a_free_lease_is_taken_with_epoch_one_and_renewed_with_the_same_epoch(store: Store) -> None:
    lease = store.acquire(3, "tick-a", NOW, TTL)
    assert lease is not None and (lease.owner, lease.epoch, lease.checkpoint) == ("tick-a", 1, None)
    assert lease.expires_at == NOW + TTL
    renewed = store.acquire(3, "tick-a", NOW + timedelta(seconds=10), TTL)
    assert renewed is not None and renewed.epoch == 1
    assert renewed.expires_at == NOW + timedelta(seconds=40)


def test_a_live_lease_is_refused_to_another_owner(store: Store) -> None:
    assert store.acquire(0, "tick-a", NOW, TTL) is not None
    assert store.acquire(0, "tick-b", NOW + timedelta(seconds=29), TTL) is None
    assert store.acquire(1, "tick-b", NOW, TTL) is not None


def test_taking_over_an_expired_lease_increments_the_epoch_and_fences_the_old_holder(
    store: Store,
) -> None:
    old = store.acquire(0, "tick-a", NOW, TTL)
    assert old is not None
    assert store.set_checkpoint(0, "tick-a", old.epoch, 100)
    new = store.acquire(0, "tick-b", NOW + TTL, TTL)
    assert new is not None and new.epoch == old.epoch + 1 and new.checkpoint == 100
    # The former holder wakes up: its checkpoint write is refused.
    assert not store.set_checkpoint(0, "tick-a", old.epoch, 200)
    assert store.set_checkpoint(0, "tick-b", new.epoch, 150)
    assert store.leases()[0].checkpoint == 150
    # And it cannot renew the lease it lost while the new holder's is live.
    assert store.acquire(0, "tick-a", NOW + TTL + timedelta(seconds=1), TTL) is None


def test_a_checkpoint_never_moves_backwards(store: Store) -> None:
    lease = store.acquire(2, "tick-a", NOW, TTL)
    assert lease is not None
    assert store.set_checkpoint(2, "tick-a", lease.epoch, 50)
    assert not store.set_checkpoint(2, "tick-a", lease.epoch, 49)
    assert store.set_checkpoint(2, "tick-a", lease.epoch, 50)


def test_release_frees_the_lease_for_the_next_owner(store: Store) -> None:
    lease = store.acquire(1, "tick-a", NOW, TTL)
    assert lease is not None
    assert not store.release(1, "tick-a", lease.epoch + 1, NOW)
    assert store.release(1, "tick-a", lease.epoch, NOW)
    taken = store.acquire(1, "tick-b", NOW, TTL)
    assert taken is not None and taken.epoch == lease.epoch + 1
    assert [(x.shard, x.owner) for x in store.leases()] == [(1, "tick-b")]


def test_heartbeats_keep_the_latest_beat(store: Store) -> None:
    assert store.heartbeat("tick") is None
    store.beat(Heartbeat("tick", NOW, {"admitted": 1}))
    store.beat(Heartbeat("tick", NOW + timedelta(seconds=5), {"admitted": 2}))
    beat = store.heartbeat("tick")
    assert beat == Heartbeat("tick", NOW + timedelta(seconds=5), {"admitted": 2})
    store.beat(Heartbeat("tick/b", NOW, {}))
    store.beat(Heartbeat("tick/a", NOW, {}))
    store.beat(Heartbeat("watchdog", NOW, {}))
    assert [h.component for h in store.heartbeats("tick/")] == ["tick/a", "tick/b"]


# --- quarantine ------------------------------------------------------------------------------


def test_a_conditional_beat_writes_only_over_the_record_it_read(store: Store) -> None:
    first = Heartbeat("alert:s1", NOW, {"status": "overdue"})
    assert store.beat_if(first, None)  # no record yet
    assert not store.beat_if(Heartbeat("alert:s1", NOW, {"status": "ok"}), None)
    later = Heartbeat("alert:s1", NOW + timedelta(minutes=1), {"status": "ok"})
    assert not store.beat_if(later, NOW - timedelta(seconds=1))  # another beat read
    assert store.heartbeat("alert:s1") == first  # nothing written by the refusals
    assert store.beat_if(later, NOW)
    assert store.heartbeat("alert:s1") == later


def test_heartbeats_of_many_components_are_read_at_once(store: Store) -> None:
    components = [f"alert:s{i:03d}" for i in range(130)]  # more than one DynamoDB batch
    for component in components[::2]:
        store.beat(Heartbeat(component, NOW, {"n": component}))
    found = store.heartbeats_of(components)
    assert sorted(found) == components[::2]
    assert found["alert:s000"] == Heartbeat("alert:s000", NOW, {"n": "alert:s000"})
    assert store.heartbeats_of([]) == {}


def _quarantine(at: str = "2026-12-01T08:00:30Z") -> Quarantine:
    return Quarantine.of(
        OverflowError("date value out of range"), QuarantineComponent.PLAN, utc(at)
    )


def test_a_quarantine_is_recorded_on_the_schedule_and_read_back(store: Store) -> None:
    healthy, poisoned = build_schedule(NOW), build_schedule(NOW)
    store.create(healthy)
    store.create(poisoned)
    assert store.quarantine(poisoned.schedule_id, 1, _quarantine())
    found = store.get(poisoned.schedule_id)
    assert found is not None and found.quarantine == _quarantine()
    assert found.quarantine.reason == "OverflowError: date value out of range"
    assert found.next_due == poisoned.next_due  # kept, for the user to see
    listed = {s.schedule_id: s.quarantine for s in store.list_schedules(10).items}
    assert listed == {healthy.schedule_id: None, poisoned.schedule_id: _quarantine()}


def test_a_quarantined_schedule_is_not_due(store: Store) -> None:
    healthy, poisoned = build_schedule(NOW), build_schedule(NOW)
    store.create(healthy)
    store.create(poisoned)
    store.quarantine(poisoned.schedule_id, 1, _quarantine())
    due = store.due(utc("2026-12-02T00:00:00Z"), 10)
    assert [d.schedule_id for d in due.items] == [healthy.schedule_id]


def test_a_quarantine_needs_the_version_it_judged_and_a_live_schedule(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    sid = schedule.schedule_id
    assert not store.quarantine(sid, 2, _quarantine())
    assert not store.quarantine("sch_missing", 1, _quarantine())
    assert store.get(sid) == schedule
    store.delete(sid, NOW)
    assert not store.quarantine(sid, 1, _quarantine())
    gone = store.get(sid)
    assert gone is not None and gone.quarantine is None


def test_a_materialization_of_a_quarantined_schedule_is_refused(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    run = build_occurrence(schedule, NOW, PARTS)
    store.quarantine(schedule.schedule_id, 1, _quarantine())
    assert schedule.next_due is not None
    [outcome] = store.materialize(
        [
            Materialization(
                schedule.schedule_id,
                1,
                schedule.next_due,
                schedule.next_due + timedelta(days=1),
                run.scheduled_at,
                (run,),
            )
        ],
        NOW,
    )
    assert not outcome.applied and outcome.inserted == ()
    assert store.get_run(run.occurrence_id) is None


def test_an_edit_clears_the_quarantine_and_makes_the_schedule_due_again(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    sid = schedule.schedule_id
    store.quarantine(sid, 1, _quarantine())
    v2 = _next_version(schedule, {"cron": "0 10 * * *", "time_zone": "UTC"})
    new_due = utc("2026-12-01T10:00:00Z")
    assert store.save_version(v2, expected_next_due=schedule.next_due, next_due=new_due, now=NOW)
    head = store.get(sid)
    assert head is not None and head.quarantine is None and head.version == 2
    assert [d.schedule_id for d in store.due(new_due, 10).items] == [sid]


def test_resume_clears_the_quarantine(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    sid = schedule.schedule_id
    store.quarantine(sid, 1, _quarantine())
    store.pause(sid, None, NOW)
    assert store.resume(
        sid, expected_next_due=schedule.next_due, next_due=schedule.next_due, now=NOW
    )
    head = store.get(sid)
    assert head is not None and head.quarantine is None and not head.state.paused
    assert schedule.next_due is not None
    assert [d.schedule_id for d in store.due(schedule.next_due, 10).items] == [sid]


def test_a_paused_schedule_edited_out_of_quarantine_stays_out_of_planning(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    sid = schedule.schedule_id
    store.pause(sid, None, NOW)
    store.quarantine(sid, 1, _quarantine())
    v2 = _next_version(schedule, {"cron": "0 10 * * *", "time_zone": "UTC"})
    new_due = utc("2026-12-01T10:00:00Z")
    assert store.save_version(v2, expected_next_due=schedule.next_due, next_due=new_due, now=NOW)
    head = store.get(sid)
    assert head is not None and head.quarantine is None and head.state.paused
    assert store.due(new_due, 10).items == ()


@pytest.mark.usefixtures("without_range_rules")  # stored before the range rule
def test_occurrences_at_the_end_of_time_are_stored_and_read_back(store: Store) -> None:
    # A retention added to 9999-12-31 must not overflow (DynamoDB's TTL).
    schedule = build_schedule(NOW, spec={"at": "9999-12-31T23:59:59Z"})
    store.create(schedule)
    run = build_occurrence(schedule, NOW, PARTS)
    assert schedule.next_due is not None
    [outcome] = store.materialize(
        [
            Materialization(
                schedule.schedule_id, 1, schedule.next_due, None, run.scheduled_at, (run,)
            )
        ],
        NOW,
    )
    assert outcome.applied and outcome.inserted == (run.occurrence_id,)
    found = store.get_run(run.occurrence_id)
    assert found is not None and found.scheduled_at == utc("9999-12-31T23:59:59Z")


def test_a_schedule_whose_stored_spec_no_longer_reads_is_quarantined_and_left_out(
    store: Store, monkeypatch: pytest.MonkeyPatch
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
    store._versions.clear()  # type: ignore[attr-defined]

    due = store.due(utc("2026-12-31T00:00:00Z"), 10)
    listed = store.list_schedules(10)

    assert [d.schedule_id for d in due.items] == [healthy.schedule_id]
    assert [s.schedule_id for s in listed.items] == [healthy.schedule_id]
    monkeypatch.undo()
    schedule_module.stored_spec.cache_clear()
    found = store.get(poisoned.schedule_id)
    assert found is not None and found.quarantine is not None
    assert found.quarantine.component is QuarantineComponent.PLAN
    assert "is not a time zone any more" in found.quarantine.reason
