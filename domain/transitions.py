"""The run state machine: each transition a pure function from the run before
to the run after.

A transition checks its guard on the run it is given (the statuses it allows
from, the attempt that must hold the run, a live or expired lease, the run
token) and answers the run after, with ``revision`` one higher, or refuses
with ``TransitionRefused`` and a ``Refusal`` saying which guard failed. It
reads no clock and no store: the caller passes ``now``.

A store writes the run after only if the stored run is still the run before
(same occurrence id and revision: ``RunStore.compare_and_set``). So the rule
is written once, here; a store only knows "write this if it is still that".
When the write loses a race, the caller reads the run again and applies the
transition again: the guard decides on what is stored now.

The table of transitions (from, to, what changes) is in docs/runs.md.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from domain.errors import DuetimeError
from domain.run import AttemptRecord, Run, RunStatus

# Statuses a run may start an attempt from (besides running with an expired lease).
STARTABLE: Final = frozenset({RunStatus.ADMITTED, RunStatus.RETRYING})
# Statuses ``finish`` may end a run in.
FINISHED: Final = frozenset(
    {
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.EXPIRED,
        RunStatus.SKIPPED,
        RunStatus.CANCELLED,
    }
)
# Statuses a user may cancel (``cancel``): every one before the run ends.
CANCELLABLE: Final = frozenset(
    {RunStatus.SCHEDULED, RunStatus.ADMITTED, RunStatus.RUNNING, RunStatus.RETRYING}
)
# Statuses a user may ask to run again (``retry``).
RETRYABLE: Final = frozenset({RunStatus.FAILED, RunStatus.EXPIRED})

# Outcomes stamped on an attempt record.
ATTEMPT_ACCEPTED: Final = "accepted"  # 202: waiting for the job to report completion
ATTEMPT_LOST: Final = "lost"  # the worker died or timed out; its lease expired
ATTEMPT_CANCELLED: Final = "cancelled"  # a user cancelled the run while it was in flight
LOST_ERROR: Final = "run lease expired"


class Refusal(enum.StrEnum):
    """Which guard of a transition the run did not meet."""

    NOT_STARTABLE = "is not admitted or retrying, nor running under an expired lease"
    NOT_WAITING = "is not admitted or retrying"
    NOT_HELD = "is not running the attempt named"
    LEASE_NOT_SHORTER = "holds a lease that already lasts as long"
    NOT_RUNNING = "is not running"
    TOKEN_MISMATCH = "was not given this token"
    TIMED_OUT = "missed its run timeout"
    NOT_RETRYABLE = "is not failed or expired"
    NOT_CANCELLABLE = "has already finished"


class TransitionRefused(DuetimeError):
    """A transition's guard does not hold for the run it was given."""

    def __init__(self, run: Run, refusal: Refusal) -> None:
        super().__init__(f"run {run.occurrence_id!r} {refusal.value} (it is {run.status.value})")
        self.run = run
        self.refusal = refusal


def _after(run: Run, **changes: Any) -> Run:
    """The run after a transition: the changes, and the next revision."""
    return replace(run, revision=run.revision + 1, **changes)


def _close_last(
    log: tuple[AttemptRecord, ...], now: datetime, outcome: str | None, error: str | None
) -> tuple[AttemptRecord, ...]:
    """The log with its last attempt closed, if it is still open."""
    if not log or log[-1].finished_at is not None:
        return log
    return (*log[:-1], replace(log[-1], finished_at=now, outcome=outcome, error=error))


def _held(run: Run, attempt: int) -> None:
    if run.status is not RunStatus.RUNNING or run.attempts != attempt:
        raise TransitionRefused(run, Refusal.NOT_HELD)


def start_attempt(
    run: Run, *, now: datetime, lease_until: datetime, run_token_hash: str | None
) -> Run:
    """Start attempt ``attempts + 1``, holding the run lease until ``lease_until``.

    From ``admitted`` or ``retrying``, or ``running`` under a lease that ended
    at or before ``now`` (its worker is gone: its attempt is closed ``lost``
    and this one takes over). ``started_at`` is the first attempt's start.
    """
    lease = run.run_lease_expires_at
    lost = run.status is RunStatus.RUNNING and (lease is None or lease <= now)
    if run.status not in STARTABLE and not lost:
        raise TransitionRefused(run, Refusal.NOT_STARTABLE)
    number = run.attempts + 1
    log = _close_last(run.attempt_log, now, ATTEMPT_LOST, LOST_ERROR)
    return _after(
        run,
        status=RunStatus.RUNNING,
        attempts=number,
        started_at=run.started_at or now,
        run_lease_expires_at=lease_until,
        run_token_hash=run_token_hash,
        attempt_log=(*log, AttemptRecord(number=number, started_at=now)),
    )


def finish(
    run: Run,
    *,
    attempt: int | None,
    status: RunStatus,
    now: datetime,
    reason: str | None = None,
    result: Mapping[str, Any] | None = None,
    outcome: str | None = None,
    error: str | None = None,
) -> Run:
    """End the run with ``status`` (succeeded, failed, expired, skipped, cancelled).

    With ``attempt``: that attempt must hold the run (``running``, ``attempts
    == attempt``); it is closed with ``outcome`` (the status when None) and
    ``error``. Without: the run ends before a new attempt (expired, skipped or
    cancelled at start, failed once attempts are exhausted), from ``admitted``
    or ``retrying``. The lease, the token and ``pending`` are cleared.
    """
    if status not in FINISHED:
        raise ValueError(f"finish ends a run as {sorted(FINISHED)}, not {status.value}")
    log = run.attempt_log
    if attempt is None:
        if run.status not in STARTABLE:
            raise TransitionRefused(run, Refusal.NOT_WAITING)
    else:
        _held(run, attempt)
        log = _close_last(log, now, outcome or status.value, error)
    return _after(
        run,
        status=status,
        finished_at=now,
        reason=reason,
        result=None if result is None else dict(result),
        run_lease_expires_at=None,
        run_token_hash=None,
        pending=False,
        attempt_log=log,
    )


def record_retry(
    run: Run,
    *,
    attempt: int,
    now: datetime,
    outcome: str,
    error: str | None,
    result: Mapping[str, Any] | None = None,
    retry_at: datetime | None = None,
) -> Run:
    """Attempt ``attempt`` failed and another will follow: ``retrying``, the
    attempt closed, the token cleared. The run lease becomes the backoff: no
    attempt starts before ``retry_at``, whichever message carries the intent
    (a chain of delayed messages, a duplicate of one)."""
    _held(run, attempt)
    return _after(
        run,
        status=RunStatus.RETRYING,
        run_lease_expires_at=retry_at,
        run_token_hash=None,
        result=None if result is None else dict(result),
        attempt_log=_close_last(run.attempt_log, now, outcome, error),
    )


def mark_accepted(
    run: Run,
    *,
    attempt: int,
    now: datetime,
    deadline: datetime,
    result: Mapping[str, Any] | None,
) -> Run:
    """The target answered 202: the attempt stays open, marked ``accepted``,
    and the run lease moves to ``deadline`` (by when the job must report)."""
    _held(run, attempt)
    log = run.attempt_log
    if log and log[-1].number == attempt and log[-1].finished_at is None:
        log = (*log[:-1], replace(log[-1], outcome=ATTEMPT_ACCEPTED))
    return _after(
        run,
        run_lease_expires_at=deadline,
        result=None if result is None else dict(result),
        attempt_log=log,
    )


def extend_lease(run: Run, *, attempt: int, until: datetime) -> Run:
    """The attempt is still in flight: its lease lasts until ``until``. A
    lease is never shortened (an accepted attempt keeps its deadline)."""
    _held(run, attempt)
    lease = run.run_lease_expires_at
    if lease is not None and lease >= until:
        raise TransitionRefused(run, Refusal.LEASE_NOT_SHORTER)
    return _after(run, run_lease_expires_at=until)


def _token_holds(run: Run, run_token_hash: str) -> None:
    if run.status is not RunStatus.RUNNING:
        raise TransitionRefused(run, Refusal.NOT_RUNNING)
    if run.run_token_hash != run_token_hash:
        raise TransitionRefused(run, Refusal.TOKEN_MISMATCH)


def report_progress(run: Run, *, run_token_hash: str, progress: Mapping[str, Any]) -> Run:
    """The job's progress, reported with its run token."""
    _token_holds(run, run_token_hash)
    return _after(run, progress=dict(progress))


def complete(
    run: Run,
    *,
    run_token_hash: str,
    succeeded: bool,
    now: datetime,
    result: Mapping[str, Any] | None,
    error: str | None,
) -> Run:
    """The job reports that it ended, with its run token, before its deadline
    (the run lease): the run succeeds or fails as the job says, the attempt
    closed as ``finish`` closes it and the job's result merged into the one
    stored at 202."""
    _token_holds(run, run_token_hash)
    lease = run.run_lease_expires_at
    if lease is None or lease <= now:
        raise TransitionRefused(run, Refusal.TIMED_OUT)
    status = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
    return _after(
        run,
        status=status,
        finished_at=now,
        reason=None if succeeded else f"the job reported failure: {error or 'no detail'}",
        result={**dict(run.result or {}), **dict(result or {})},
        run_lease_expires_at=None,
        run_token_hash=None,
        pending=False,
        attempt_log=_close_last(run.attempt_log, now, status.value, error),
    )


def retry(run: Run, *, now: datetime, bucket: int, reason: str) -> Run:
    """Run an occurrence that ended badly once more (a user asked for it):
    ``admitted`` again at ``now``, pending in ``bucket`` (its intent is to be
    sent). Attempts, the attempt log, ``started_at`` and ``result`` are kept,
    so the next attempt is number ``attempts + 1`` under the same occurrence
    id and idempotency key."""
    if run.status not in RETRYABLE:
        raise TransitionRefused(run, Refusal.NOT_RETRYABLE)
    return _after(
        run,
        status=RunStatus.ADMITTED,
        admitted_at=now,
        reason=reason,
        finished_at=None,
        sent_at=None,
        run_lease_expires_at=None,
        run_token_hash=None,
        pending=True,
        bucket=bucket,
    )


def cancel(run: Run, *, now: datetime, reason: str) -> Run:
    """A user cancels the run before it ends: ``cancelled`` at ``now``, with
    ``reason``, never to start (or start again).

    From ``scheduled``, ``admitted`` or ``retrying`` the run never starts: the
    dispatcher admits only ``scheduled`` runs and the worker starts only
    admitted or retrying ones. From ``running`` the attempt in flight is
    closed ``cancelled``; the lease and the run token are cleared, so the
    worker's later answer for it (``finish``, ``record_retry``,
    ``mark_accepted``, ``extend_lease``: each needs the attempt to hold a
    running run) and the job's ``complete`` are refused and change nothing.
    A worker that can stop its call (a command it runs) learns of it from the
    run's status when its lease is no longer extended.
    """
    if run.status not in CANCELLABLE:
        raise TransitionRefused(run, Refusal.NOT_CANCELLABLE)
    return _after(
        run,
        status=RunStatus.CANCELLED,
        finished_at=now,
        reason=reason,
        run_lease_expires_at=None,
        run_token_hash=None,
        pending=False,
        attempt_log=_close_last(run.attempt_log, now, ATTEMPT_CANCELLED, reason),
    )
