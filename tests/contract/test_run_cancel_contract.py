"""``RunStore.cancel``: a user cancels a run that has not ended, on every run
store (the fixtures of tests/unit/test_runs_store.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from domain.run import PendingOccurrence, Run, RunStatus
from service.run_ports import RunStore
from tests.conftest import FakeClock, build_occurrence, build_schedule
from tests.unit.test_runs_store import admitted_run, backend, put, runs, start

__all__ = ["backend", "put", "runs"]  # fixtures used by name

REASON = "cancelled by a user: wrong data"


def planned_run(put: Callable[[Run], None], clock: FakeClock) -> Run:
    """A planned occurrence, as the planner leaves it: scheduled and pending."""
    run = build_occurrence(build_schedule(clock.now()), clock.now())
    assert run.status is RunStatus.SCHEDULED and run.pending
    put(run)
    return run


def test_a_cancelled_planned_run_is_never_admitted(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = planned_run(put, clock)
    store = runs.store  # type: ignore[attr-defined]
    later = run.scheduled_at + timedelta(hours=1)

    def due() -> list[str]:
        found = store.records.pending_due(run.shard, run.bucket, run.bucket, later, 10)
        return [p.occurrence_id for p in found]

    assert due() == [run.occurrence_id]
    cancelled = runs.cancel(run.occurrence_id, now=clock.now(), reason=REASON)
    assert cancelled is not None
    assert cancelled.status is RunStatus.CANCELLED and not cancelled.pending
    assert cancelled.reason == REASON and cancelled.finished_at == clock.now()
    assert runs.get_run(run.occurrence_id) == cancelled

    # The dispatcher finds nothing pending, and an admission of the copy it
    # may have read before the cancel is refused.
    assert due() == []
    assert store.records.admit([PendingOccurrence.of(run)], later) == []
    assert runs.get_run(run.occurrence_id) == cancelled


def test_a_cancelled_admitted_run_never_starts(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    cancelled = runs.cancel(run.occurrence_id, now=clock.now(), reason=REASON)
    assert cancelled is not None and cancelled.status is RunStatus.CANCELLED
    assert start(runs, run, clock) is None
    assert runs.get_run(run.occurrence_id) == cancelled


def test_a_cancelled_running_run_ignores_its_workers_late_answer(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    started = start(runs, run, clock)
    assert started is not None
    clock.advance(3)
    cancelled = runs.cancel(run.occurrence_id, now=clock.now(), reason=REASON)
    assert cancelled is not None and cancelled.status is RunStatus.CANCELLED
    assert cancelled.run_lease_expires_at is None and cancelled.run_token_hash is None
    assert [(a.number, a.outcome, a.error) for a in cancelled.attempt_log] == [
        (1, "cancelled", REASON)
    ]
    # The webhook answers later: success, a retry, an extension, a completion.
    clock.advance(2)
    now = clock.now()
    assert (
        runs.finish(run.occurrence_id, attempt=1, status=RunStatus.SUCCEEDED, now=now, seen=started)
        is None
    )
    assert (
        runs.record_retry(
            run.occurrence_id, attempt=1, now=now, outcome="transient", error="503", seen=started
        )
        is None
    )
    assert not runs.extend_lease(run.occurrence_id, attempt=1, until=now + timedelta(seconds=60))
    assert (
        runs.complete(
            run.occurrence_id,
            run_token_hash="hash-1",
            succeeded=True,
            now=now,
            result=None,
            error=None,
        )
        is None
    )
    assert runs.get_run(run.occurrence_id) == cancelled


def test_a_cancelled_retrying_run_never_starts_again(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    assert start(runs, run, clock) is not None
    retrying = runs.record_retry(
        run.occurrence_id, attempt=1, now=clock.now(), outcome="transient", error="503"
    )
    assert retrying is not None
    cancelled = runs.cancel(run.occurrence_id, now=clock.now(), reason=REASON)
    assert cancelled is not None and cancelled.status is RunStatus.CANCELLED
    assert start(runs, run, clock) is None
    assert runs.get_run(run.occurrence_id) == cancelled


@pytest.mark.parametrize("status", ["succeeded", "failed", "expired", "skipped", "cancelled"])
def test_a_finished_run_cannot_be_cancelled_and_nothing_changes(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock, status: str
) -> None:
    run = admitted_run(put, clock)
    if status == "cancelled":
        assert runs.cancel(run.occurrence_id, now=clock.now(), reason="first")
    else:
        assert runs.finish(
            run.occurrence_id, attempt=None, status=RunStatus(status), now=clock.now()
        )
    before = runs.get_run(run.occurrence_id)
    assert before is not None and before.status.value == status
    assert runs.cancel(run.occurrence_id, now=clock.now(), reason=REASON) is None
    assert runs.get_run(run.occurrence_id) == before


def test_cancel_of_an_unknown_run_is_none(runs: RunStore, clock: FakeClock) -> None:
    assert runs.cancel("sch_none.v1.20261201T090000Z", now=clock.now(), reason="x") is None
