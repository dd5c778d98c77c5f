"""``RunStore.retry``: a user runs a failed or expired occurrence again, on
every run store (the fixtures of tests/unit/test_runs_store.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from domain.run import Run, RunStatus
from service.run_ports import RunStore
from tests.conftest import FakeClock
from tests.unit.test_runs_store import admitted_run, backend, put, runs, start

__all__ = ["backend", "put", "runs"]  # fixtures used by name


def failed_run(runs: RunStore, put: Callable[[Run], None], clock: FakeClock) -> Run:
    run = admitted_run(put, clock)
    started = start(runs, run, clock)
    assert started is not None
    clock.advance(5)
    ended = runs.finish(
        run.occurrence_id,
        attempt=1,
        status=RunStatus.FAILED,
        now=clock.now(),
        reason="permanent error: HTTP 400",
        result={"outcome": "permanent", "status_code": 400},
        outcome="permanent",
        error="HTTP 400",
    )
    assert ended is not None
    return ended


def test_retry_admits_a_failed_run_again_keeping_its_attempts(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    failed = failed_run(runs, put, clock)
    clock.advance(60)
    retried = runs.retry(
        failed.occurrence_id, now=clock.now(), bucket=77, reason="retried on request"
    )
    assert retried is not None
    assert retried.status is RunStatus.ADMITTED and retried.pending
    assert retried.admitted_at == clock.now() and retried.bucket == 77
    assert retried.finished_at is None and retried.sent_at is None
    assert retried.reason == "retried on request"
    assert retried.attempts == 1 and retried.attempt_log == failed.attempt_log
    assert retried.started_at == failed.started_at and retried.result == failed.result
    assert runs.get_run(failed.occurrence_id) == retried

    again = start(runs, retried, clock)
    assert again is not None and again.attempts == 2
    assert [a.number for a in again.attempt_log] == [1, 2]


def test_retry_admits_an_expired_run(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    expired = runs.finish(
        run.occurrence_id, attempt=None, status=RunStatus.EXPIRED, now=clock.now(), reason="late"
    )
    assert expired is not None
    retried = runs.retry(run.occurrence_id, now=clock.now(), bucket=1, reason="again")
    assert retried is not None and retried.status is RunStatus.ADMITTED
    assert retried.attempts == 0


@pytest.mark.parametrize("status", ["admitted", "running", "retrying", "succeeded", "skipped"])
def test_retry_is_refused_unless_failed_or_expired_and_changes_nothing(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock, status: str
) -> None:
    run = admitted_run(put, clock)
    if status != "admitted":
        started = start(runs, run, clock)
        assert started is not None
    if status == "retrying":
        assert runs.record_retry(
            run.occurrence_id, attempt=1, now=clock.now(), outcome="transient", error="503"
        )
    elif status in ("succeeded", "skipped"):
        assert runs.finish(
            run.occurrence_id,
            attempt=1,
            status=RunStatus(status),
            now=clock.now() + timedelta(seconds=1),
        )
    before = runs.get_run(run.occurrence_id)
    assert before is not None and before.status.value == status
    assert runs.retry(run.occurrence_id, now=clock.now(), bucket=5, reason="again") is None
    assert runs.get_run(run.occurrence_id) == before


def test_two_retries_at_once_admit_the_run_once(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    failed = failed_run(runs, put, clock)
    first = runs.retry(failed.occurrence_id, now=clock.now(), bucket=5, reason="first")
    second = runs.retry(failed.occurrence_id, now=clock.now(), bucket=5, reason="second")
    assert first is not None and second is None
    stored = runs.get_run(failed.occurrence_id)
    assert stored is not None and stored.reason == "first"


def test_retry_of_an_unknown_run_is_none(runs: RunStore, clock: FakeClock) -> None:
    assert runs.retry("sch_none.v1.20261201T090000Z", now=clock.now(), bucket=1, reason="x") is None


def test_a_retried_run_is_found_pending_in_its_new_bucket(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    # The dispatcher's recovery path: a pending, admitted record is sent again.
    failed = failed_run(runs, put, clock)
    retried = runs.retry(failed.occurrence_id, now=clock.now(), bucket=99, reason="again")
    assert retried is not None
    store = runs.store  # type: ignore[attr-defined]
    due = store.records.pending_due(retried.shard, 99, 99, retried.scheduled_at, 10)
    assert [(p.occurrence_id, p.status) for p in due] == [
        (failed.occurrence_id, RunStatus.ADMITTED)
    ]
