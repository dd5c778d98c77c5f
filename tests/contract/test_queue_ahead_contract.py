"""What the one-pass tick needs of every store and queue, run on each adapter.

- A record stored already admitted stays pending (found by ``pending_due``
  up to a time ahead, as a pass that queues ahead reads it) until
  ``mark_sent``: the outbox the tick recovers an unsent intent from.
- The run store reads the schedule as it is now (``schedule_now``): what
  the worker checks before a first attempt, since an intent may wait in the
  queue after a pause or a delete.
"""

from __future__ import annotations

from datetime import timedelta

from domain.partition import Partitioning
from domain.run import RunStatus
from service.ports import Store
from tests.conftest import build_occurrence, build_schedule, utc
from tests.contract.builders import run_store_of

NOW = utc("2026-12-01T08:00:00Z")
PARTS = Partitioning(shards=1, bucket_s=60)


def _queued_ahead(store: Store) -> tuple[str, str]:
    """A schedule due at 08:01 and its occurrence stored admitted at 08:00."""
    schedule = build_schedule(NOW, spec={"cron": "1 8 * * *"})
    store.schedules.create(schedule)
    run = build_occurrence(schedule, NOW, PARTS).admitted(NOW)
    assert store.records.insert([run]) == [run.occurrence_id]
    return schedule.schedule_id, run.occurrence_id


def test_an_occurrence_stored_admitted_ahead_is_pending_until_its_intent_is_marked_sent(
    store: Store,
) -> None:
    _, occurrence_id = _queued_ahead(store)
    bucket = PARTS.bucket(utc("2026-12-01T08:01:00Z"))
    # Not due by now; due by the pass's horizon, which is what a queue-ahead pass reads.
    assert store.records.pending_due(0, PARTS.bucket(NOW), bucket, NOW, 10) == []
    [pending] = store.records.pending_due(
        0, PARTS.bucket(NOW), bucket, NOW + timedelta(seconds=90), 10
    )
    assert pending.occurrence_id == occurrence_id
    assert pending.status is RunStatus.ADMITTED
    assert store.records.earliest_pending_bucket(0) == bucket

    assert store.records.mark_sent([occurrence_id], NOW) == 1

    assert store.records.pending_due(0, bucket - 1, bucket, NOW + timedelta(seconds=90), 10) == []
    assert store.records.earliest_pending_bucket(0) is None


def test_the_run_store_reads_the_schedule_as_it_is_now(store: Store) -> None:
    schedule_id, _ = _queued_ahead(store)
    runs = run_store_of(store)
    assert runs.schedule_now(schedule_id) == (1, False, False, False)

    store.schedules.pause(schedule_id, "maintenance", NOW)
    assert runs.schedule_now(schedule_id) == (1, True, False, False)

    store.schedules.delete(schedule_id, NOW)
    found = runs.schedule_now(schedule_id)
    assert found is not None and found.deleted
    assert runs.schedule_now("sch_missing") is None


def test_a_record_cancelled_at_start_is_finished_without_an_attempt(store: Store) -> None:
    _, occurrence_id = _queued_ahead(store)
    runs = run_store_of(store)
    store.records.mark_sent([occurrence_id], NOW)
    ended = runs.finish(
        occurrence_id,
        attempt=None,
        status=RunStatus.CANCELLED,
        now=NOW + timedelta(minutes=1),
        reason="schedule deleted",
    )
    assert ended is not None
    assert ended.status is RunStatus.CANCELLED and ended.attempts == 0
    stored = runs.get_run(occurrence_id)
    assert stored is not None and stored.reason == "schedule deleted" and stored.terminal


def test_the_run_and_its_schedule_are_read_together_as_they_are_now(store: Store) -> None:
    schedule_id, occurrence_id = _queued_ahead(store)
    runs = run_store_of(store)
    run, schedule = runs.get_run_and_schedule(occurrence_id, schedule_id)
    assert run == runs.get_run(occurrence_id)
    assert schedule == runs.schedule_now(schedule_id) == (1, False, False, False)

    store.schedules.pause(schedule_id, "maintenance", NOW)
    run, schedule = runs.get_run_and_schedule(occurrence_id, schedule_id)
    assert run is not None and run.occurrence_id == occurrence_id
    assert schedule == (1, True, False, False)

    store.schedules.delete(schedule_id, NOW)
    _, schedule = runs.get_run_and_schedule(occurrence_id, schedule_id)
    assert schedule is not None and schedule.deleted


def test_reading_a_run_and_schedule_that_do_not_exist_finds_neither(store: Store) -> None:
    schedule_id, occurrence_id = _queued_ahead(store)
    runs = run_store_of(store)
    missing = occurrence_id.replace("T080100Z", "T090100Z")
    assert missing != occurrence_id
    assert runs.get_run_and_schedule(missing, schedule_id) == (
        None,
        runs.schedule_now(schedule_id),
    )
    run, schedule = runs.get_run_and_schedule(occurrence_id, "sch_missing")
    assert run is not None and schedule is None
    assert runs.get_run_and_schedule("not an occurrence id", "sch_missing") == (None, None)
    assert runs.get_run(occurrence_id) == run  # nothing changed
