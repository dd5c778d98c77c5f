"""The ports the worker needs: the run transitions, the work queue, and telemetry.

Every transition of ``RunStore`` is a *conditional* write: the adapter checks
the stated condition in the statement that writes (a SQLite ``UPDATE ...
WHERE`` inside ``BEGIN IMMEDIATE``; a DynamoDB condition expression) and
answers ``None`` when it failed. A ``None`` is not an error: another worker
moved the run first, and the caller reads the run again to decide what to do.

Attempt numbers count from 1. ``Run.attempts`` is the number of attempts
started; the attempt a worker holds is ``Run.attempts`` while the run is
``running``. Every transition that ends an attempt checks that number, so a
worker that lost its run lease cannot overwrite the attempt that replaced it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from domain.run import Run, RunStatus
from domain.schedule import ScheduleVersion

# Statuses a run may start an attempt from (besides running with an expired lease).
STARTABLE = frozenset({RunStatus.ADMITTED, RunStatus.RETRYING})
# Statuses ``finish`` may end a run in.
FINISHED = frozenset(
    {
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.EXPIRED,
        RunStatus.SKIPPED,
        RunStatus.CANCELLED,
    }
)
# Statuses a user may ask to run again (``RunStore.retry``).
RETRYABLE = frozenset({RunStatus.FAILED, RunStatus.EXPIRED})

# Outcomes stamped on an attempt record.
ATTEMPT_ACCEPTED = "accepted"  # 202: waiting for the job to report completion
ATTEMPT_LOST = "lost"  # the worker died or timed out; its lease expired


class ScheduleNow(NamedTuple):
    """What the worker reads of a schedule before a run's first attempt: an
    intent may have waited in the queue since the tick sent it ahead."""

    version: int  # the current version
    paused: bool
    deleted: bool


class RunStore(ABC):
    """The run record, as the worker and the completion API change it."""

    @abstractmethod
    def get_run(self, occurrence_id: str) -> Run | None: ...

    @abstractmethod
    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        """The parameters of the version a run was created under (immutable)."""

    @abstractmethod
    def schedule_now(self, schedule_id: str) -> ScheduleNow | None:
        """The schedule's state as it is now, read strongly (None: no such
        schedule): what the worker checks before a run's first attempt."""

    @abstractmethod
    def start_attempt(
        self,
        occurrence_id: str,
        *,
        now: datetime,
        lease_until: datetime,
        run_token_hash: str | None,
    ) -> Run | None:
        """Start attempt ``attempts + 1``.

        Condition: status is ``admitted`` or ``retrying``, or ``running`` with
        ``run_lease_expires_at <= now`` (its worker is gone). Sets status
        ``running``, increments ``attempts``, stamps ``started_at`` (first
        attempt only) and a new attempt record started at ``now``, holds the
        run lease until ``lease_until`` and replaces ``run_token_hash``. An
        attempt left open by a lost worker is closed with outcome ``lost``.
        Returns the run as stored, or None when the condition failed.
        """

    @abstractmethod
    def finish(
        self,
        occurrence_id: str,
        *,
        attempt: int | None,
        status: RunStatus,
        now: datetime,
        reason: str | None = None,
        result: Mapping[str, Any] | None = None,
        outcome: str | None = None,
        error: str | None = None,
    ) -> Run | None:
        """End the run with ``status`` (succeeded, failed, expired, skipped or
        cancelled).

        With ``attempt``: condition status ``running`` and ``attempts ==
        attempt``; the attempt record is closed with ``outcome`` and ``error``.
        Without (a run ended before any new attempt: expired, skipped or
        cancelled at start, or failed once attempts are exhausted): condition status
        ``admitted`` or ``retrying``. Stamps ``finished_at``, sets ``reason``
        and ``result``, clears the run lease, the token and ``pending``.
        """

    @abstractmethod
    def record_retry(
        self,
        occurrence_id: str,
        *,
        attempt: int,
        now: datetime,
        outcome: str,
        error: str | None,
        result: Mapping[str, Any] | None = None,
    ) -> Run | None:
        """Attempt ``attempt`` failed and another one will follow.

        Condition: status ``running`` and ``attempts == attempt``. Sets status
        ``retrying``, closes the attempt record, clears the run lease.
        """

    @abstractmethod
    def mark_accepted(
        self,
        occurrence_id: str,
        *,
        attempt: int,
        now: datetime,
        deadline: datetime,
        result: Mapping[str, Any] | None,
    ) -> Run | None:
        """The target answered 202: the job goes on and reports completion.

        Condition: status ``running`` and ``attempts == attempt``. Marks the
        attempt ``accepted`` (still open) and moves the run lease to
        ``deadline`` (the attempt's start plus the run timeout).
        """

    @abstractmethod
    def extend_lease(self, occurrence_id: str, *, attempt: int, until: datetime) -> bool:
        """Attempt ``attempt`` is still in flight: hold the run lease until at
        least ``until`` (the heartbeat of a worker process).

        Condition: status ``running``, ``attempts == attempt`` and a lease that
        ends before ``until``; a lease is never shortened (an accepted attempt
        keeps its deadline). False when the condition failed: the attempt ended
        or was taken over."""

    @abstractmethod
    def report_progress(
        self, occurrence_id: str, *, run_token_hash: str, progress: Mapping[str, Any]
    ) -> Run | None:
        """Store the job's progress. Condition: ``running`` and the token hash matches."""

    @abstractmethod
    def complete(
        self,
        occurrence_id: str,
        *,
        run_token_hash: str,
        succeeded: bool,
        now: datetime,
        result: Mapping[str, Any] | None,
        error: str | None,
    ) -> Run | None:
        """The job reports that it ended: the run succeeds or fails.

        Condition: status ``running``, the token hash matches and the run lease
        (the attempt's deadline) is still live at ``now``. Closes the attempt
        and the run as ``finish`` does.
        """

    @abstractmethod
    def retry(self, occurrence_id: str, *, now: datetime, bucket: int, reason: str) -> Run | None:
        """Run an occurrence that ended badly once more (a user asked for it).

        Condition: status ``failed`` or ``expired``. Sets status ``admitted``,
        ``admitted_at = now`` and ``reason``, clears ``finished_at`` and
        ``sent_at``, and makes the record pending again in bucket ``bucket``
        of its shard (its intent is to be sent: by the caller, or by a
        dispatcher that finds it pending). Keeps ``attempts``, the attempt
        log, ``started_at`` and ``result``, so the next attempt is number
        ``attempts + 1`` under the same occurrence id and idempotency key.
        Returns the run as stored, or None when the condition failed.
        """

    @abstractmethod
    def running_before(self, run: Run, now: datetime) -> Run | None:
        """The latest earlier occurrence (by ``scheduled_at``) of the same
        schedule that is still in progress: ``running`` with a live run lease,
        or ``retrying``. What the overlap policy ``skip`` looks at."""


@dataclass(frozen=True)
class QueueMessage:
    """One received message. ``receipt`` names this receipt only: a later
    receive of the same message gets a new one."""

    message_id: str
    receipt: str
    body: str
    receive_count: int


class WorkQueue(ABC):
    """The consumer side of the delivery queue (at-least-once)."""

    @abstractmethod
    def receive(self, max_messages: int, wait_s: float) -> list[QueueMessage]:
        """Up to ``max_messages`` visible messages, each made invisible for the
        queue's visibility timeout and its receive count incremented. Waits up
        to ``wait_s`` for one to arrive. A message received more often than the
        queue's redrive limit goes to the dead-letter queue instead."""

    @abstractmethod
    def change_visibility(self, receipt: str, delay_s: float) -> None:
        """Make the message visible again in ``delay_s`` seconds (at most 12
        hours). A stale receipt changes nothing."""

    @abstractmethod
    def delete(self, receipt: str) -> None:
        """Remove the message. A stale receipt changes nothing."""

    @abstractmethod
    def dead_letter(self, message: QueueMessage, reason: str) -> None:
        """Move the message to the dead-letter queue, with ``reason``."""

    def change_visibility_batch(self, receipts: Sequence[str], delay_s: float) -> None:
        """``change_visibility`` for several receipts (a heartbeat over every
        message a worker holds). Adapters do it in one request or statement."""
        for receipt in receipts:
            self.change_visibility(receipt, delay_s)

    def delete_batch(self, receipts: Sequence[str]) -> None:
        """``delete`` for several receipts. Adapters do it in one request or statement."""
        for receipt in receipts:
            self.delete(receipt)


@dataclass(frozen=True)
class AttemptReport:
    """What one attempt did: the fields of its log line."""

    occurrence_id: str
    schedule_id: str
    version: int
    attempt: int
    status: str  # succeeded, accepted, retrying, failed
    duration_s: float
    late_by_s: float
    error: str | None = None
    status_code: int | None = None


class RunTelemetry(ABC):
    """Where the worker reports what happened; the handler maps it to logs and metrics."""

    @abstractmethod
    def attempt_started(self, run: Run, late_by_s: float) -> None:
        """One attempt started; ``late_by_s`` is how late after ``scheduled_at``."""

    @abstractmethod
    def attempt_ended(self, report: AttemptReport) -> None:
        """One attempt ended (one structured log line)."""

    @abstractmethod
    def run_retried(self, run: Run, delay_s: float) -> None: ...

    @abstractmethod
    def run_ended(self, run: Run) -> None:
        """The run reached a final status."""


class NoTelemetry(RunTelemetry):
    def attempt_started(self, run: Run, late_by_s: float) -> None:
        pass

    def attempt_ended(self, report: AttemptReport) -> None:
        pass

    def run_retried(self, run: Run, delay_s: float) -> None:
        pass

    def run_ended(self, run: Run) -> None:
        pass
