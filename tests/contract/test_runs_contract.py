"""The run-record port's contract (``OccurrenceStore`` in service/ports.py), on
every store: records inserted once by their business key, read by schedule and
by dispatch shard, and moved on by conditional writes (admitted, closed, sent,
withdrawn). Listings with filters (``find_runs``) are
test_run_listing_contract.py's; a run's life after admission is the run
store's (test_run_*_contract.py).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from domain.run import PendingOccurrence, Reason, RunKind, RunStatus
from service.ports import Closure, Store
from tests.conftest import build_schedule, random_schedule_id, utc
from tests.contract.builders import (
    NOW,
    PARTS,
    created_with_runs,
    materialize_next,
    run_store_of,
    slot_run,
)

# --- insert and read ----------------------------------------------------------------------


def test_insert_writes_records_once(store: Store) -> None:
    sid = random_schedule_id()
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    run = replace(slot_run(sid, "2026-12-01T07:00:00Z"), kind=RunKind.BACKFILL)
    assert store.records.insert([run, run]) == [run.occurrence_id]
    assert store.records.insert([run]) == []
    assert store.records.insert([]) == []
    assert store.records.get_run(run.occurrence_id) == run


def test_a_record_is_read_by_its_id_and_by_its_business_key(store: Store) -> None:
    _, [run] = created_with_runs(store, "2026-12-01T08:01:00Z")
    assert store.records.get_run(run.occurrence_id) == run
    assert store.records.get_by_business_key(run.business_key) == run
    assert store.records.get_run("occ_missing") is None
    assert store.records.get_by_business_key(run.business_key + "#missing") is None


def test_runs_pages_newest_first(store: Store) -> None:
    sid, runs = created_with_runs(store, *[f"2026-12-01T0{h}:00:00Z" for h in range(1, 8)])
    created_with_runs(store, "2026-12-01T04:30:00Z")  # another schedule's: not listed
    seen, token = [], None
    while True:
        page = store.records.runs(sid, 3, token)
        assert len(page.items) <= 3
        seen += [r.occurrence_id for r in page.items]
        token = page.next_token
        if token is None:
            break
    assert seen == [r.occurrence_id for r in reversed(runs)]
    assert store.records.runs(random_schedule_id(), 3).items == ()


# --- dispatch -----------------------------------------------------------------------------


def test_pending_due_is_oldest_first_within_buckets_and_due_time(store: Store) -> None:
    sid, runs = created_with_runs(
        store,
        "2026-12-01T08:03:00Z",
        "2026-12-01T08:01:00Z",
        "2026-12-01T08:02:00Z",
        "2026-12-01T08:09:00Z",
    )
    shard = PARTS.shard(sid)
    b = PARTS.bucket(utc("2026-12-01T08:00:00Z"))
    due = store.records.pending_due(shard, b, b + 10, utc("2026-12-01T08:05:00Z"), 10)
    assert [r.occurrence_id for r in due] == [
        runs[1].occurrence_id,
        runs[2].occurrence_id,
        runs[0].occurrence_id,
    ]
    assert len(store.records.pending_due(shard, b, b + 10, utc("2026-12-01T08:05:00Z"), 2)) == 2
    assert store.records.pending_due(shard, b + 2, b + 2, utc("2026-12-01T08:05:00Z"), 10) == [
        PendingOccurrence.of(runs[2])
    ]
    assert (
        store.records.pending_due(
            (shard + 1) % PARTS.shards, b, b + 10, utc("2026-12-01T09:00:00Z"), 10
        )
        == []
    )
    assert store.records.earliest_pending_bucket(shard) == b + 1
    assert store.records.earliest_pending_bucket(shard, b + 4) == b + 9
    assert store.records.earliest_pending_bucket(shard, b + 10) is None


def test_admit_moves_scheduled_to_admitted_exactly_once(store: Store) -> None:
    _, [run] = created_with_runs(store, "2026-12-01T08:01:00Z")
    at = utc("2026-12-01T08:01:02Z")
    [pending] = store.records.pending_due(run.shard, run.bucket, run.bucket, at, 10)
    assert pending == PendingOccurrence.of(run)
    assert pending.status is RunStatus.SCHEDULED and pending.kind is RunKind.SCHEDULED
    assert store.records.admit([pending], at) == [run.occurrence_id]
    assert store.records.admit([pending], at + timedelta(seconds=1)) == []
    admitted = store.records.get_run(run.occurrence_id)
    assert admitted == replace(run, status=RunStatus.ADMITTED, admitted_at=at)
    assert admitted.pending and admitted.lag_s == 2.0
    # Still pending until its intent is sent: a later pass sends it again.
    due = store.records.pending_due(run.shard, run.bucket, run.bucket, at, 10)
    assert due == [PendingOccurrence.of(admitted)]


def test_admit_holds_while_the_schedule_is_active_whatever_its_version(store: Store) -> None:
    """A waiting record made under version 1 is still admitted after an edit
    (promise 5: an edit does not stop what it finds made), and one of a paused
    schedule is not: left waiting for dispatch to close."""
    sid, [kept, held] = created_with_runs(store, "2026-12-01T08:01:00Z", "2026-12-01T08:01:30Z")
    schedule = store.schedules.get(sid)
    assert schedule is not None
    edited = build_schedule(
        NOW, schedule_id=sid, spec={"every": "PT5M", "start_at": "2026-12-01T09:00:00Z"}, version=2
    ).current
    assert store.schedules.save_version(
        edited, expected_next_due=schedule.next_due, next_due=None, now=NOW
    )
    at = utc("2026-12-01T08:02:00Z")
    assert store.records.admit([PendingOccurrence.of(kept)], at) == [kept.occurrence_id]
    assert store.schedules.pause(sid, None, at)
    assert store.records.admit([PendingOccurrence.of(held)], at) == []
    left = store.records.get_run(held.occurrence_id)
    assert left is not None and left.status is RunStatus.SCHEDULED


def test_a_record_admitted_ahead_of_its_slot_is_stamped_with_its_instant(store: Store) -> None:
    _, [ahead, due] = created_with_runs(store, "2026-12-01T08:01:30Z", "2026-12-01T08:00:30Z")
    at = utc("2026-12-01T08:01:00Z")
    admitted = store.records.admit([PendingOccurrence.of(ahead), PendingOccurrence.of(due)], at)
    assert admitted == [ahead.occurrence_id, due.occurrence_id]  # in the order given
    early = store.records.get_run(ahead.occurrence_id)
    assert early is not None and early.admitted_at == ahead.scheduled_at
    late = store.records.get_run(due.occurrence_id)
    assert late is not None and late.admitted_at == at


def test_mark_sent_clears_pending_only_after_admission(store: Store) -> None:
    _, [a, b] = created_with_runs(store, "2026-12-01T08:01:00Z", "2026-12-01T08:01:30Z")
    at = utc("2026-12-01T08:02:00Z")
    store.records.admit([PendingOccurrence.of(a)], at)
    assert store.records.mark_sent([a.occurrence_id, b.occurrence_id], at) == 1
    sent = store.records.get_run(a.occurrence_id)
    assert sent is not None and not sent.pending and sent.sent_at == at
    assert store.records.pending_due(a.shard, a.bucket, a.bucket, at, 10) == [
        PendingOccurrence.of(b)
    ]
    assert store.records.mark_sent([a.occurrence_id], at) == 0
    assert store.records.mark_sent([], at) == 0


def test_close_ends_only_scheduled_records(store: Store) -> None:
    _, [a, b] = created_with_runs(store, "2026-12-01T08:01:00Z", "2026-12-01T08:01:30Z")
    at = utc("2026-12-01T08:02:00Z")
    store.records.admit([PendingOccurrence.of(a)], at)
    closed = store.records.close_runs(
        [
            Closure(a.occurrence_id, RunStatus.SKIPPED, Reason.SUPERSEDED),
            Closure(b.occurrence_id, RunStatus.EXPIRED, "too late"),
        ],
        at,
    )
    assert closed == [b.occurrence_id]
    record = store.records.get_run(b.occurrence_id)
    assert record is not None
    assert (record.status, record.reason, record.finished_at, record.pending) == (
        RunStatus.EXPIRED,
        "too late",
        at,
        False,
    )
    assert store.records.get_run(a.occurrence_id).status is RunStatus.ADMITTED
    assert store.records.close_runs([], at) == []


def test_close_scheduled_ends_every_waiting_record_of_one_schedule(store: Store) -> None:
    sid, [admitted, a, b] = created_with_runs(
        store, "2026-12-01T08:01:00Z", "2026-12-01T08:02:00Z", "2026-12-03T08:00:00Z"
    )
    _, [elsewhere] = created_with_runs(store, "2026-12-01T08:02:00Z")
    at = utc("2026-12-01T08:01:30Z")
    store.records.admit([PendingOccurrence.of(admitted)], at)
    assert store.records.close_scheduled(sid, RunStatus.CANCELLED, Reason.DELETED, at) == 2
    for run in (a, b):
        record = store.records.get_run(run.occurrence_id)
        assert record is not None
        assert (record.status, record.reason, record.finished_at, record.pending) == (
            RunStatus.CANCELLED,
            Reason.DELETED,
            at,
            False,
        )
    kept = store.records.get_run(admitted.occurrence_id)
    assert kept is not None and kept.status is RunStatus.ADMITTED
    other = store.records.get_run(elsewhere.occurrence_id)
    assert other is not None and other.status is RunStatus.SCHEDULED
    assert store.records.close_scheduled(sid, RunStatus.CANCELLED, Reason.DELETED, at) == 0


def test_pause_then_close_scheduled_leaves_nothing_to_admit(store: Store) -> None:
    sid, [a, b] = created_with_runs(store, "2026-12-01T08:01:00Z", "2026-12-02T08:01:00Z")
    at = utc("2026-12-01T08:02:00Z")
    store.schedules.pause(sid, None, at)
    assert store.records.close_scheduled(sid, RunStatus.SKIPPED, Reason.PAUSED, at) == 2
    assert store.records.admit([PendingOccurrence.of(a), PendingOccurrence.of(b)], at) == []
    assert store.records.get_run(a.occurrence_id).reason == Reason.PAUSED
    assert store.records.earliest_pending_bucket(a.shard) is None


def test_withdraw_planned_deletes_only_the_slots_after_the_instant_not_started(
    store: Store,
) -> None:
    sid, [due, at_it, waiting, queued, started] = created_with_runs(
        store,
        "2026-12-01T08:01:00Z",
        "2026-12-01T08:02:00Z",
        "2026-12-01T08:03:00Z",
        "2026-12-01T08:04:00Z",
        "2026-12-01T08:05:00Z",
    )
    _, [elsewhere] = created_with_runs(store, "2026-12-01T08:03:00Z")
    at = utc("2026-12-01T08:02:00Z")
    store.records.admit([PendingOccurrence.of(queued), PendingOccurrence.of(started)], at)
    running = replace(
        store.records.get_run(started.occurrence_id),
        status=RunStatus.RUNNING,
        attempts=1,
        revision=1,
    )
    trigger = replace(
        slot_run(sid, "2026-12-01T08:06:00Z"),
        kind=RunKind.TRIGGER,
        business_key=f"{sid}#trigger#x",
    )
    assert store.records.insert([trigger]) == [trigger.occurrence_id]
    assert run_store_of(store).compare_and_set(
        store.records.get_run(started.occurrence_id), running
    )

    # Waiting and queued slots after the instant go; the due one, the one at
    # the instant, a started run, a trigger and another schedule's stay.
    assert store.records.withdraw_planned(sid, at) == 2
    assert store.records.get_run(waiting.occurrence_id) is None
    assert store.records.get_run(queued.occurrence_id) is None
    for kept in (due, at_it, started, trigger, elsewhere):
        assert store.records.get_run(kept.occurrence_id) is not None, kept.occurrence_id
    assert store.records.withdraw_planned(sid, at) == 0


def test_a_withdrawn_slot_leaves_no_record_and_no_pending_work(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    run = materialize_next(store, schedule.schedule_id)
    assert store.records.withdraw_planned(schedule.schedule_id, NOW) == 1
    assert store.records.get_run(run.occurrence_id) is None
    assert store.records.get_by_business_key(run.business_key) is None
    assert store.records.runs(schedule.schedule_id, 10).items == ()
    later = run.scheduled_at
    assert store.records.pending_due(run.shard, run.bucket, run.bucket, later, 10) == []
