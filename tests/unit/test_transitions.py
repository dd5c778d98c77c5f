"""The run state machine as pure functions: each transition allowed from the
states it names (the run after, one revision later) and refused from the
others (a typed reason, and the run given left as it was)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain import transitions as t
from domain.run import AttemptRecord, Run, RunStatus
from domain.transitions import Refusal, TransitionRefused

NOW = datetime(2026, 12, 1, 9, 0, 5, tzinfo=UTC)
LATER = NOW + timedelta(seconds=30)


def a_run(**changes: object) -> Run:
    run = Run(
        occurrence_id="sch_a.v1.20261201T090000Z",
        business_key="sch_a#2026-12-01T09:00:00#0",
        schedule_id="sch_a",
        version=1,
        scheduled_at=datetime(2026, 12, 1, 9, tzinfo=UTC),
        wall=datetime(2026, 12, 1, 9),
        fold=0,
        bucket=3,
        shard=0,
        status=RunStatus.ADMITTED,
        admitted_at=datetime(2026, 12, 1, 9, tzinfo=UTC),
    )
    return t._after(run, **changes) if changes else run


def running(attempt: int = 1, lease: datetime = LATER, **changes: object) -> Run:
    log = tuple(
        AttemptRecord(n, NOW, finished_at=NOW, outcome="transient") for n in range(1, attempt)
    )
    return a_run(
        status=RunStatus.RUNNING,
        attempts=attempt,
        started_at=NOW,
        run_lease_expires_at=lease,
        run_token_hash="hash-1",
        attempt_log=(*log, AttemptRecord(attempt, NOW)),
        **changes,
    )


def refused(refusal: Refusal, run: Run, call: object) -> None:
    before = dict(run.__dict__)
    with pytest.raises(TransitionRefused) as caught:
        call()  # type: ignore[operator]
    assert caught.value.refusal is refusal
    assert run.occurrence_id in str(caught.value)
    assert run.__dict__ == before  # the run given is a value: nothing changed


# --- start_attempt ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [RunStatus.ADMITTED, RunStatus.RETRYING])
def test_start_attempt_from_a_waiting_run_opens_the_next_attempt(status: RunStatus) -> None:
    run = a_run(status=status)
    after = t.start_attempt(run, now=NOW, lease_until=LATER, run_token_hash="h")
    assert after.status is RunStatus.RUNNING
    assert after.attempts == run.attempts + 1
    assert after.started_at == NOW
    assert after.run_lease_expires_at == LATER
    assert after.run_token_hash == "h"
    assert after.attempt_log[-1] == AttemptRecord(after.attempts, NOW)
    assert after.revision == run.revision + 1


def test_start_attempt_keeps_the_first_attempts_start() -> None:
    first = NOW - timedelta(minutes=5)
    run = a_run(status=RunStatus.RETRYING, attempts=1, started_at=first)
    assert t.start_attempt(run, now=NOW, lease_until=LATER, run_token_hash=None).started_at == first


def test_start_attempt_takes_over_a_run_whose_lease_expired_closing_its_attempt_lost() -> None:
    run = running(attempt=1, lease=NOW)
    after = t.start_attempt(run, now=NOW, lease_until=LATER, run_token_hash="h2")
    assert after.attempts == 2
    lost = after.attempt_log[0]
    assert (lost.finished_at, lost.outcome, lost.error) == (NOW, "lost", "run lease expired")
    assert after.attempt_log[1] == AttemptRecord(2, NOW)


def test_start_attempt_is_refused_while_another_worker_holds_a_live_lease() -> None:
    run = running(lease=NOW + timedelta(seconds=1))
    refused(
        Refusal.NOT_STARTABLE,
        run,
        lambda: t.start_attempt(run, now=NOW, lease_until=LATER, run_token_hash=None),
    )


@pytest.mark.parametrize(
    "status",
    [RunStatus.SCHEDULED, RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED],
)
def test_start_attempt_is_refused_from_a_run_not_waiting(status: RunStatus) -> None:
    run = a_run(status=status)
    refused(
        Refusal.NOT_STARTABLE,
        run,
        lambda: t.start_attempt(run, now=NOW, lease_until=LATER, run_token_hash=None),
    )


# --- finish ------------------------------------------------------------------------------


def test_finish_of_the_attempt_holding_the_run_closes_it_and_clears_the_lease() -> None:
    run = running(pending=True)
    after = t.finish(
        run, attempt=1, status=RunStatus.SUCCEEDED, now=LATER, result={"status_code": 200}
    )
    assert after.status is RunStatus.SUCCEEDED
    assert after.finished_at == LATER
    assert after.result == {"status_code": 200}
    assert (after.run_lease_expires_at, after.run_token_hash, after.pending) == (None, None, False)
    assert after.attempt_log[-1].finished_at == LATER
    assert after.attempt_log[-1].outcome == "succeeded"


def test_finish_is_refused_to_an_attempt_that_no_longer_holds_the_run() -> None:
    run = running(attempt=2)
    refused(
        Refusal.NOT_HELD,
        run,
        lambda: t.finish(run, attempt=1, status=RunStatus.SUCCEEDED, now=LATER),
    )


@pytest.mark.parametrize("status", [RunStatus.ADMITTED, RunStatus.RETRYING])
def test_finish_without_an_attempt_ends_a_waiting_run(status: RunStatus) -> None:
    run = a_run(status=status)
    after = t.finish(run, attempt=None, status=RunStatus.SKIPPED, now=NOW, reason="paused")
    assert (after.status, after.reason, after.finished_at) == (RunStatus.SKIPPED, "paused", NOW)
    assert after.attempt_log == run.attempt_log


def test_finish_without_an_attempt_is_refused_while_an_attempt_runs() -> None:
    run = running()
    refused(
        Refusal.NOT_WAITING,
        run,
        lambda: t.finish(run, attempt=None, status=RunStatus.CANCELLED, now=NOW),
    )


def test_finish_refuses_a_status_that_does_not_end_a_run() -> None:
    with pytest.raises(ValueError, match="not retrying"):
        t.finish(running(), attempt=1, status=RunStatus.RETRYING, now=NOW)


# --- record_retry ------------------------------------------------------------------------


def test_record_retry_closes_the_attempt_and_waits_for_the_next() -> None:
    run = running()
    after = t.record_retry(run, attempt=1, now=LATER, outcome="transient", error="HTTP 503")
    assert after.status is RunStatus.RETRYING
    assert (after.run_lease_expires_at, after.run_token_hash) == (None, None)
    last = after.attempt_log[-1]
    assert (last.finished_at, last.outcome, last.error) == (LATER, "transient", "HTTP 503")


def test_record_retry_is_refused_to_a_stale_attempt() -> None:
    run = a_run(status=RunStatus.RETRYING, attempts=1)
    refused(
        Refusal.NOT_HELD,
        run,
        lambda: t.record_retry(run, attempt=1, now=LATER, outcome="transient", error=None),
    )


# --- mark_accepted -----------------------------------------------------------------------


def test_mark_accepted_keeps_the_attempt_open_until_the_deadline() -> None:
    run = running()
    deadline = NOW + timedelta(hours=1)
    after = t.mark_accepted(run, attempt=1, now=LATER, deadline=deadline, result={"o": 1})
    assert after.status is RunStatus.RUNNING
    assert after.run_lease_expires_at == deadline
    assert after.attempt_log[-1].outcome == "accepted"
    assert after.attempt_log[-1].finished_at is None
    assert after.run_token_hash == run.run_token_hash


def test_mark_accepted_is_refused_to_a_stale_attempt() -> None:
    run = running(attempt=2)
    refused(
        Refusal.NOT_HELD,
        run,
        lambda: t.mark_accepted(run, attempt=1, now=LATER, deadline=LATER, result=None),
    )


# --- extend_lease ------------------------------------------------------------------------


def test_extend_lease_moves_the_lease_later() -> None:
    run = running(lease=LATER)
    until = LATER + timedelta(seconds=10)
    after = t.extend_lease(run, attempt=1, until=until)
    assert after.run_lease_expires_at == until
    assert after.revision == run.revision + 1


def test_extend_lease_never_shortens_a_lease() -> None:
    run = running(lease=LATER)
    refused(Refusal.LEASE_NOT_SHORTER, run, lambda: t.extend_lease(run, attempt=1, until=LATER))


def test_extend_lease_is_refused_to_an_attempt_taken_over() -> None:
    run = running(attempt=2)
    refused(Refusal.NOT_HELD, run, lambda: t.extend_lease(run, attempt=1, until=LATER))


# --- report_progress and complete ---------------------------------------------------------


def test_report_progress_with_the_runs_token_stores_it() -> None:
    after = t.report_progress(running(), run_token_hash="hash-1", progress={"rows": 4})
    assert after.progress == {"rows": 4}


def test_report_progress_is_refused_with_another_token_or_after_the_run() -> None:
    run = running()
    refused(
        Refusal.TOKEN_MISMATCH,
        run,
        lambda: t.report_progress(run, run_token_hash="nope", progress={}),
    )
    ended = a_run(status=RunStatus.SUCCEEDED)
    refused(
        Refusal.NOT_RUNNING,
        ended,
        lambda: t.report_progress(ended, run_token_hash="hash-1", progress={}),
    )


def test_complete_before_the_deadline_ends_the_run_and_merges_the_result() -> None:
    run = running(result={"status_code": 202})
    after = t.complete(
        run, run_token_hash="hash-1", succeeded=False, now=NOW, result={"rows": 2}, error="boom"
    )
    assert after.status is RunStatus.FAILED
    assert after.reason == "the job reported failure: boom"
    assert after.result == {"status_code": 202, "rows": 2}
    assert after.attempt_log[-1].outcome == "failed"
    assert (after.run_lease_expires_at, after.run_token_hash, after.pending) == (None, None, False)


def test_complete_is_refused_after_the_deadline() -> None:
    run = running(lease=NOW)
    refused(
        Refusal.TIMED_OUT,
        run,
        lambda: t.complete(
            run, run_token_hash="hash-1", succeeded=True, now=NOW, result=None, error=None
        ),
    )


def test_complete_is_refused_with_another_token() -> None:
    run = running()
    refused(
        Refusal.TOKEN_MISMATCH,
        run,
        lambda: t.complete(
            run, run_token_hash="nope", succeeded=True, now=NOW, result=None, error=None
        ),
    )


# --- retry (a user's) ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.EXPIRED])
def test_retry_admits_a_run_that_ended_badly_keeping_its_attempts(status: RunStatus) -> None:
    run = a_run(
        status=status,
        attempts=2,
        finished_at=NOW,
        sent_at=NOW,
        pending=False,
        result={"status_code": 500},
    )
    after = t.retry(run, now=LATER, bucket=9, reason="retried on request")
    assert after.status is RunStatus.ADMITTED
    assert (after.admitted_at, after.bucket, after.pending) == (LATER, 9, True)
    assert (after.finished_at, after.sent_at) == (None, None)
    assert (after.attempts, after.result) == (2, {"status_code": 500})
    assert after.retried


@pytest.mark.parametrize("status", [RunStatus.SUCCEEDED, RunStatus.RUNNING, RunStatus.ADMITTED])
def test_retry_is_refused_unless_the_run_failed_or_expired(status: RunStatus) -> None:
    run = a_run(status=status)
    refused(Refusal.NOT_RETRYABLE, run, lambda: t.retry(run, now=LATER, bucket=1, reason="again"))


def test_every_transition_counts_one_revision() -> None:
    run = a_run()
    started = t.start_attempt(run, now=NOW, lease_until=LATER, run_token_hash="hash-1")
    accepted = t.mark_accepted(started, attempt=1, now=NOW, deadline=LATER, result=None)
    done = t.complete(
        accepted, run_token_hash="hash-1", succeeded=True, now=NOW, result=None, error=None
    )
    assert [r.revision for r in (run, started, accepted, done)] == [0, 1, 2, 3]


# --- cancel (a user's) ------------------------------------------------------------------


@pytest.mark.parametrize("status", [RunStatus.SCHEDULED, RunStatus.ADMITTED, RunStatus.RETRYING])
def test_cancel_ends_a_waiting_run_so_it_never_starts(status: RunStatus) -> None:
    run = a_run(status=status, pending=True)
    after = t.cancel(run, now=LATER, reason="cancelled by a user")
    assert after.status is RunStatus.CANCELLED and after.revision == run.revision + 1
    assert after.finished_at == LATER and after.reason == "cancelled by a user"
    assert not after.pending
    refused(
        Refusal.NOT_STARTABLE,
        after,
        lambda: t.start_attempt(after, now=LATER, lease_until=LATER, run_token_hash=None),
    )


def test_cancel_of_a_running_run_closes_its_attempt_and_refuses_the_late_answer() -> None:
    run = running()
    after = t.cancel(run, now=LATER, reason="cancelled by a user: stop")
    assert after.status is RunStatus.CANCELLED
    assert after.run_lease_expires_at is None and after.run_token_hash is None
    assert after.attempt_log[-1] == AttemptRecord(
        1, NOW, finished_at=LATER, outcome="cancelled", error="cancelled by a user: stop"
    )
    refused(
        Refusal.NOT_HELD,
        after,
        lambda: t.finish(after, attempt=1, status=RunStatus.SUCCEEDED, now=LATER),
    )
    refused(
        Refusal.NOT_RUNNING,
        after,
        lambda: t.report_progress(after, run_token_hash="hash-1", progress={}),
    )


@pytest.mark.parametrize("status", sorted(t.FINISHED))
def test_cancel_is_refused_once_the_run_has_finished(status: RunStatus) -> None:
    run = a_run(status=status, finished_at=NOW)
    refused(Refusal.NOT_CANCELLABLE, run, lambda: t.cancel(run, now=LATER, reason="x"))
