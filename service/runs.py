"""Run an occurrence: one delivery intent in, one decision about its message out.

The worker receives a delivery intent (at-least-once: SQS may deliver it twice,
a dispatcher may send it twice) and answers with a ``Decision`` about the
message that carried it:

- ``delete``: nothing more to do for this message (the run ended, or it was a
  duplicate of a run that already ended);
- ``retry_after(delay_s)``: have the intent come back after ``delay_s`` (the
  backoff before the next attempt, the deadline of a 202-accepted job, or the
  end of another worker's run lease); the queue decides how
  (``WorkQueue.retry_later``: on SQS a new, delayed message);
- ``dead_letter``: the message cannot be run at all (no such occurrence, one
  that does not match it, or one never admitted); it goes to the DLQ. A run
  that failed for good (permanent error, attempts exhausted) is recorded as
  failed, with its reason, and its message deleted: a user's broken target is
  not a dead letter (docs/decisions.md, "Dead letters, retries and a failed
  invocation").

The rules, in the order they are checked:

1. A run that already ended is never run again: the message is deleted.
2. A ``retrying`` run waits out its backoff, stored with it, so a duplicate
   or an early message cannot start the next attempt sooner. A run that is
   ``running`` under a live run lease belongs to another worker:
   this message comes back when that lease ends. If the lease expired, its
   worker died (or its 202 job missed the run timeout) and a new attempt
   starts, with the same idempotency key (the occurrence id).
3. Before the first attempt: an intent that became visible before its
   ``scheduled_at`` goes back until then; then the start decision
   (``domain/start.py``) on the schedule as it is now: deleted, paused or
   quarantined since the intent was queued, superseded (``latest_only``: the
   next slot is due too, as after an outage) or expired (``expire``), the run
   ends without an attempt; then the overlap policy ``skip`` (the previous
   occurrence of the schedule is still running).
4. The attempt starts by a compare-and-set of the run read (``RunStore.start_attempt``), so
   two workers holding copies of one intent cannot both start it.
5. The target's answer decides: 2xx succeeded; 202 accepted (the job reports
   completion with its run token before the run timeout); transient, retried
   with full-jitter backoff while attempts remain; permanent or exhausted,
   failed with its reason; skipped (a command whose job still runs), skipped
   with its reason.

Every attempt runs with the parameters of the version the occurrence was
created under, never the schedule's current one.
"""

from __future__ import annotations

import hashlib
import random
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from domain import transitions
from domain.delivery import Delivery, Outcome, TargetPort
from domain.errors import DuetimeError
from domain.run import DeliveryIntent, Reason, Run, RunStatus
from domain.schedule import Overlap, ScheduleVersion
from domain.spec import spec_zone_name
from domain.start import START, Slot, decide_start
from domain.transitions import Refusal, TransitionRefused
from service.errors import RunNotFound
from service.ports import Clock
from service.run_ports import (
    ATTEMPT_ACCEPTED,
    ATTEMPT_LOST,
    STARTABLE,
    AttemptReport,
    NoTelemetry,
    RunStore,
    RunTelemetry,
    ScheduleNow,
)

Action = Literal["delete", "retry", "dead_letter"]

# An intent that becomes visible more than this before its scheduled_at (a
# queue that rounds, a clock a little ahead) goes back until it is due.
EARLY_TOLERANCE_S = 0.5


@dataclass(frozen=True)
class Decision:
    """What to do with the message that carried an intent."""

    action: Action
    delay_s: float = 0.0
    reason: str = ""

    @classmethod
    def delete(cls, reason: str = "") -> Decision:
        return cls("delete", 0.0, reason)

    @classmethod
    def retry_after(cls, delay_s: float, reason: str = "") -> Decision:
        return cls("retry", max(0.0, delay_s), reason)

    @classmethod
    def dead_letter(cls, reason: str) -> Decision:
        return cls("dead_letter", 0.0, reason)


@dataclass(frozen=True)
class WorkerConfig:
    """Deployment settings of the worker.

    ``lease_grace_s`` is added to the call's timeout to make the run lease,
    so a worker that is merely slow to record its answer keeps its run.
    ``max_call_s`` bounds one synchronous call below the schedule's
    ``run_timeout`` (a Lambda function has at most 15 minutes).
    ``recheck_s`` is how soon a message comes back when the run is in a state
    this worker cannot act on yet.
    """

    lease_grace_s: float = 30.0
    max_call_s: float | None = None
    recheck_s: float = 5.0
    # Set where a heartbeat runs (``RunWorker.extend_leases``, the local worker
    # pool): an attempt's run lease is then this short and kept alive while the
    # call is in flight, so a killed worker's run is taken over within seconds.
    # None (Lambda): the lease covers the whole call plus ``lease_grace_s``.
    held_lease_s: float | None = None


class RunTokenRefused(DuetimeError):
    """A progress or completion report that does not fit the run (HTTP 409)."""

    def __init__(self, occurrence_id: str, why: str) -> None:
        super().__init__(f"run {occurrence_id!r} {why}")
        self.occurrence_id = occurrence_id
        self.why = why


def new_run_token() -> str:
    return secrets.token_urlsafe(32)


def hash_run_token(token: str) -> str:
    """What the store keeps of a run token: its SHA-256, never the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _acts_by_compare_and_set(run: Run, now: datetime) -> bool:
    """Whether everything the worker may do with ``run`` read as it is is a
    compare-and-set of it: an admitted or retrying run (start, skip, expire,
    fail), or a running one whose lease has expired (take over, fail)."""
    if run.status in (RunStatus.ADMITTED, RunStatus.RETRYING):
        return True
    lease = run.run_lease_expires_at
    return run.status is RunStatus.RUNNING and (lease is None or lease <= now)


def _result(outcome: Outcome) -> dict[str, Any]:
    result: dict[str, Any] = {"outcome": outcome.kind, "excerpt": outcome.excerpt}
    if outcome.status_code is not None:
        result["status_code"] = outcome.status_code
    if outcome.details:
        result.update(outcome.details)
    return result


class RunWorker:
    """The run use case. ``rng`` draws the full-jitter delays (seed it in tests)."""

    def __init__(
        self,
        runs: RunStore,
        targets: TargetPort,
        clock: Clock,
        rng: random.Random,
        *,
        telemetry: RunTelemetry | None = None,
        config: WorkerConfig | None = None,
        new_token: Callable[[], str] = new_run_token,
    ) -> None:
        self.runs = runs
        self.targets = targets
        self.clock = clock
        self.rng = rng
        self.telemetry = telemetry or NoTelemetry()
        self.config = config or WorkerConfig()
        self.new_token = new_token
        # occurrence id -> the attempt this process is running now
        self._in_flight: dict[str, int] = {}
        self._in_flight_lock = threading.Lock()

    def in_flight(self) -> dict[str, int]:
        """The attempts this worker is running now: occurrence id -> attempt."""
        with self._in_flight_lock:
            return dict(self._in_flight)

    def extend_leases(self) -> int:
        """The heartbeat: hold the run lease of every attempt in flight for
        another ``held_lease_s``. Returns how many leases were extended."""
        held_s = self.config.held_lease_s
        if held_s is None:
            return 0
        until = self.clock.now() + timedelta(seconds=held_s)
        extended = 0
        for occurrence_id, attempt in self.in_flight().items():
            if self.runs.extend_lease(occurrence_id, attempt=attempt, until=until):
                extended += 1
        return extended

    def cancelled_in_flight(self) -> list[str]:
        """The attempts running here whose run a user has cancelled since
        (``POST /runs/{id}/cancel``): the hook for a target that can stop its
        call (a command it runs: SIGTERM), asked by the heartbeat. A webhook
        cannot be recalled; its answer is ignored when it comes (the cancel
        cleared the attempt's hold on the run)."""
        cancelled = []
        for occurrence_id in self.in_flight():
            run = self.runs.get_run(occurrence_id)
            if run is not None and run.status is RunStatus.CANCELLED:
                cancelled.append(occurrence_id)
        return cancelled

    def handle(self, intent: DeliveryIntent, receive_count: int = 1) -> Decision:
        """Run ``intent``'s occurrence (or not) and decide about its message.

        ``receive_count`` is how often the queue has delivered this message;
        it is logged, the decision does not depend on it.
        """
        now = self.clock.now()
        # The schedule's state is read with the run (one request where the store
        # allows it), strongly, after the message arrived and before any attempt.
        # The run may be read as it was a moment ago: whatever is done to it
        # below is a compare-and-set that refuses a stale copy, and what would be
        # decided without one (the message deleted, dead-lettered or put back
        # behind a live lease) is decided on a strong read.
        run, schedule = self.runs.get_run_and_schedule(
            intent.occurrence_id, intent.schedule_id, fresh_run=False
        )
        if run is None or not _acts_by_compare_and_set(run, now):
            run = self.runs.get_run(intent.occurrence_id)
        if run is None:
            # Withdrawn (a pause or delete deleted the planned slot's record)
            # or gone with old history: nothing to run.
            return Decision.delete(f"no occurrence {intent.occurrence_id}: withdrawn")
        if (run.schedule_id, run.version) != (intent.schedule_id, intent.version):
            return Decision.dead_letter("the intent does not match its occurrence")
        if run.terminal:
            return Decision.delete(f"already {run.status.value}")
        if run.status is RunStatus.SCHEDULED:
            return Decision.dead_letter("the occurrence was never admitted")
        if run.status is RunStatus.RETRYING and run.run_lease_expires_at is not None:
            # Its backoff (``record_retry``): a message that arrives before it
            # (the next link of a long wait, a duplicate) goes back until then.
            wait_s = (run.run_lease_expires_at - now).total_seconds()
            if wait_s > EARLY_TOLERANCE_S:
                return Decision.retry_after(wait_s, "backing off before the next attempt")

        version = self.runs.get_version(run.schedule_id, run.version)
        if version is None:
            reason = f"version {run.version} of the schedule is missing"
            return self._fail_without_attempt(run, reason, now)
        policy = version.policy

        if run.status is RunStatus.RUNNING:
            lease = run.run_lease_expires_at
            if lease is not None and lease > now:
                return Decision.retry_after(
                    (lease - now).total_seconds() + 1.0, "running under another worker's lease"
                )
            last = run.attempt_log[-1] if run.attempt_log else None
            if last is not None and last.outcome == ATTEMPT_ACCEPTED and last.finished_at is None:
                missed = Outcome.transient(
                    f"no completion reported within the run timeout "
                    f"({policy.run_timeout.total_seconds():g} s)"
                )
                return self._attempt_failed(run, version, run.attempts, missed, last.started_at)
            if not policy.retry.allows_another(run.attempts):
                reason = (
                    f"attempts exhausted ({run.attempts} of {policy.retry.max_attempts}): "
                    "the last attempt was lost (worker stopped or timed out)"
                )
                ended = self.runs.finish(
                    run.occurrence_id,
                    attempt=run.attempts,
                    status=RunStatus.FAILED,
                    now=now,
                    reason=reason,
                    outcome=ATTEMPT_LOST,
                    error="run lease expired",
                    seen=run,
                )
                if ended is None:
                    return self._after_conflict(run.occurrence_id)
                self.telemetry.run_ended(ended)
                return Decision.delete(reason)

        if run.status is RunStatus.RETRYING and not policy.retry.allows_another(run.attempts):
            reason = f"attempts exhausted ({run.attempts} of {policy.retry.max_attempts})"
            return self._fail_without_attempt(run, reason, now)

        if run.status is RunStatus.ADMITTED and run.attempts == 0:
            ahead_s = (run.scheduled_at - now).total_seconds()
            if ahead_s > EARLY_TOLERANCE_S and not run.retried:
                return Decision.retry_after(ahead_s, "not due yet")
            early = self._closed_at_start(run, version, now, schedule)
            if early is not None:
                return early

        return self._attempt(run, version, now)

    # --- the steps ---------------------------------------------------------------------

    def _closed_at_start(
        self, run: Run, version: ScheduleVersion, now: datetime, schedule: ScheduleNow | None
    ) -> Decision | None:
        """Before the first attempt: the start decision (``domain.start``), on
        the schedule's state as read with the run, then the overlap policy
        ``skip`` (the previous occurrence of the schedule is still running)."""
        policy = version.policy
        slot = Slot(run.kind, run.scheduled_at, run.retried, run.materialized_at)
        verdict = decide_start(slot, schedule, version.spec, policy, now)
        status: RunStatus | None = None
        reason: str | None = None
        if verdict is not START:
            status, reason = verdict.status, verdict.reason
        elif policy.overlap is Overlap.SKIP and not run.retried:
            previous = self.runs.running_before(run, now)
            if previous is not None:
                status = RunStatus.SKIPPED
                reason = f"{Reason.OVERLAP}: {previous.occurrence_id} is still running"
        if status is None:
            return None
        ended = self.runs.finish(
            run.occurrence_id, attempt=None, status=status, now=now, reason=reason, seen=run
        )
        if ended is None:
            return self._after_conflict(run.occurrence_id)
        self.telemetry.run_ended(ended)
        return Decision.delete(reason or status.value)

    def _attempt(self, run: Run, version: ScheduleVersion, now: datetime) -> Decision:
        policy = version.policy
        call_s = policy.run_timeout.total_seconds()
        if self.config.max_call_s is not None:
            call_s = min(call_s, self.config.max_call_s)
        token = self.new_token() if version.target.type == "webhook" else None
        lease_s = call_s + self.config.lease_grace_s
        if self.config.held_lease_s is not None:
            lease_s = min(lease_s, self.config.held_lease_s)
        started = self.runs.start_attempt(
            run.occurrence_id,
            now=now,
            lease_until=now + timedelta(seconds=lease_s),
            run_token_hash=None if token is None else hash_run_token(token),
            seen=run,
        )
        if started is None:
            return self._after_conflict(run.occurrence_id)
        with self._in_flight_lock:
            self._in_flight[run.occurrence_id] = started.attempts
        try:
            return self._deliver(run, started, version, now, call_s, token)
        finally:
            with self._in_flight_lock:
                if self._in_flight.get(run.occurrence_id) == started.attempts:
                    del self._in_flight[run.occurrence_id]

    def _deliver(
        self,
        run: Run,
        started: Run,
        version: ScheduleVersion,
        now: datetime,
        call_s: float,
        token: str | None,
    ) -> Decision:
        policy = version.policy
        attempt = started.attempts
        late_by_s = max(0.0, (now - run.scheduled_at).total_seconds())
        self.telemetry.attempt_started(started, late_by_s)
        delivery = Delivery(
            occurrence_id=run.occurrence_id,
            schedule_id=run.schedule_id,
            version=run.version,
            scheduled_at=run.scheduled_at,
            attempt=attempt,
            late_by_s=late_by_s,
            payload=dict(version.payload),
            run_token=token,
            time_zone=spec_zone_name(version.spec),
        )
        outcome = self.targets.deliver(version.target, delivery, timeout_s=call_s)
        end = self.clock.now()

        if outcome.kind == "succeeded":
            return self._end(
                started, attempt, RunStatus.SUCCEEDED, None, outcome, now, end, late_by_s
            )

        if outcome.kind == "skipped":  # a command whose job still holds its lock
            reason = outcome.error or RunStatus.SKIPPED.value
            return self._end(
                started, attempt, RunStatus.SKIPPED, reason, outcome, now, end, late_by_s
            )

        if outcome.kind == "accepted":
            deadline = now + policy.run_timeout
            accepted = self.runs.mark_accepted(
                run.occurrence_id,
                attempt=attempt,
                now=end,
                deadline=deadline,
                result=_result(outcome),
                seen=started,
            )
            self._report(started, attempt, "accepted", now, end, late_by_s, outcome)
            if accepted is None:
                return self._after_conflict(run.occurrence_id)
            # The message comes back at the deadline: by then the job has
            # completed (delete) or the attempt has failed (retry or fail).
            return Decision.retry_after(
                (deadline - end).total_seconds() + 1.0, "accepted: waiting for completion"
            )

        return self._attempt_failed(started, version, attempt, outcome, now, late_by_s, end)

    def _attempt_failed(
        self,
        run: Run,
        version: ScheduleVersion,
        attempt: int,
        outcome: Outcome,
        started_at: datetime,
        late_by_s: float = 0.0,
        end: datetime | None = None,
    ) -> Decision:
        end = end or self.clock.now()
        retry = version.policy.retry
        if outcome.kind == "transient" and retry.allows_another(attempt):
            delay_s = retry.delay_s(attempt, self.rng, outcome.retry_after_s)
            stored = self.runs.record_retry(
                run.occurrence_id,
                attempt=attempt,
                now=end,
                outcome=outcome.kind,
                error=outcome.error,
                result=_result(outcome),
                seen=run,
                retry_at=end + timedelta(seconds=delay_s),
            )
            self._report(run, attempt, "retrying", started_at, end, late_by_s, outcome)
            if stored is None:
                return self._after_conflict(run.occurrence_id)
            self.telemetry.run_retried(stored, delay_s)
            return Decision.retry_after(delay_s, f"attempt {attempt} failed: {outcome.error}")

        if outcome.kind == "transient":
            reason = (
                f"attempts exhausted ({attempt} of {retry.max_attempts}); "
                f"last error: {outcome.error}"
            )
        else:
            reason = f"permanent error: {outcome.error}"
        return self._end(
            run, attempt, RunStatus.FAILED, reason, outcome, started_at, end, late_by_s
        )

    def _end(
        self,
        run: Run,
        attempt: int,
        status: RunStatus,
        reason: str | None,
        outcome: Outcome,
        started_at: datetime,
        end: datetime,
        late_by_s: float,
    ) -> Decision:
        """The attempt's outcome ends the run with ``status``: recorded (if the run
        is still as it was read), reported, and its message deleted."""
        ended = self.runs.finish(
            run.occurrence_id,
            attempt=attempt,
            status=status,
            now=end,
            reason=reason,
            result=_result(outcome),
            outcome=outcome.kind,
            error=outcome.error if status is RunStatus.FAILED else None,
            seen=run,
        )
        self._report(run, attempt, status.value, started_at, end, late_by_s, outcome)
        if ended is None:
            return self._after_conflict(run.occurrence_id)
        self.telemetry.run_ended(ended)
        return Decision.delete(reason or status.value)

    def _fail_without_attempt(self, run: Run, reason: str, now: datetime) -> Decision:
        """Fail the run for good without an attempt and delete its message;
        if the run changed since it was read, decide again from what is stored."""
        if run.status in STARTABLE:
            ended = self.runs.finish(
                run.occurrence_id,
                attempt=None,
                status=RunStatus.FAILED,
                now=now,
                reason=reason,
                seen=run,
            )
            if ended is None:
                return self._after_conflict(run.occurrence_id)
            self.telemetry.run_ended(ended)
        return Decision.delete(reason)

    def _after_conflict(self, occurrence_id: str) -> Decision:
        """A conditional write lost to another worker: decide from what is stored now."""
        now = self.clock.now()
        run = self.runs.get_run(occurrence_id)
        if run is None:  # withdrawn meanwhile (a pause or delete)
            return Decision.delete(f"no occurrence {occurrence_id}: withdrawn")
        if run.terminal:
            return Decision.delete(f"already {run.status.value}")
        lease = run.run_lease_expires_at
        if run.status is RunStatus.RUNNING and lease is not None and lease > now:
            return Decision.retry_after(
                (lease - now).total_seconds() + 1.0, "running under another worker's lease"
            )
        return Decision.retry_after(self.config.recheck_s, "changed by another worker")

    def _report(
        self,
        run: Run,
        attempt: int,
        status: str,
        started_at: datetime,
        end: datetime,
        late_by_s: float,
        outcome: Outcome,
    ) -> None:
        self.telemetry.attempt_ended(
            AttemptReport(
                occurrence_id=run.occurrence_id,
                schedule_id=run.schedule_id,
                version=run.version,
                attempt=attempt,
                status=status,
                duration_s=max(0.0, (end - started_at).total_seconds()),
                late_by_s=late_by_s,
                error=outcome.error,
                status_code=outcome.status_code,
            )
        )


class RunReports:
    """What a long job (one that answered 202) reports through the API with its run token."""

    def __init__(self, runs: RunStore, clock: Clock, telemetry: RunTelemetry | None = None) -> None:
        self.runs = runs
        self.clock = clock
        self.telemetry = telemetry or NoTelemetry()

    def progress(self, occurrence_id: str, token: str, progress: Mapping[str, Any]) -> Run:
        token_hash = hash_run_token(token)
        return self._report(
            occurrence_id,
            lambda run: transitions.report_progress(
                run, run_token_hash=token_hash, progress=dict(progress)
            ),
        )

    def complete(
        self,
        occurrence_id: str,
        token: str,
        *,
        succeeded: bool,
        result: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> Run:
        """The job ended. A failure it reports fails the run (the job itself decided)."""
        token_hash = hash_run_token(token)
        now = self.clock.now()
        stored = self._report(
            occurrence_id,
            lambda run: transitions.complete(
                run,
                run_token_hash=token_hash,
                succeeded=succeeded,
                now=now,
                result=None if result is None else dict(result),
                error=error,
            ),
        )
        self.telemetry.run_ended(stored)
        return stored

    def _report(self, occurrence_id: str, transition: Callable[[Run], Run]) -> Run:
        """Store a report's transition (``RunStore.change``). A refused one is
        answered from the guard that refused it, on the run it was given: no
        second read, which could see a run that moved since."""
        given: list[Run] = []
        refused: list[TransitionRefused] = []

        def noted(run: Run) -> Run:
            given.append(run)
            try:
                return transition(run)
            except TransitionRefused as refusal:
                refused.append(refusal)
                raise

        stored = self.runs.change(occurrence_id, None, noted)
        if stored is not None:
            return stored
        if refused:
            raise _token_refusal(occurrence_id, refused[-1])
        if not given:
            raise RunNotFound(occurrence_id)
        # Other writers won every race (or the run went away meanwhile).
        raise RunTokenRefused(occurrence_id, "changed while the report was stored; report again")


def _token_refusal(occurrence_id: str, refused: TransitionRefused) -> RunTokenRefused:
    """The 409 answer to a report whose transition was refused."""
    if refused.refusal is Refusal.NOT_RUNNING:
        return RunTokenRefused(occurrence_id, f"is {refused.run.status.value}, not running")
    return RunTokenRefused(occurrence_id, refused.refusal.value)
