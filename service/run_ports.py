"""The ports the worker needs: the run store, the work queue, and telemetry.

The rules of a run's state machine are the pure transitions of
``domain/transitions.py``. A store keeps the record and knows one write:
``compare_and_set(before, after)``, "write this run if the record is still
that one" (same occurrence id and ``revision``). Each transition of
``RunStore`` below is the same three steps, written once here: take the run
as the caller last read it (or read it), apply the transition, compare and
set; when the write loses a race, read the run again and apply the
transition again, so its guard decides on what is stored now. A refused
guard answers ``None``; that is not an error: another worker moved the run
first, and the caller reads the run again to decide what to do.

So a new store implements ``get_run``, ``compare_and_set`` and the reads
(``get_version``, ``schedule_now``, ``running_before``); the tick's batch
writes (admit, close, mark sent) are the ``ScheduleStore``'s.

Attempt numbers count from 1. ``Run.attempts`` is the number of attempts
started; the attempt a worker holds is ``Run.attempts`` while the run is
``running``. Every transition that ends an attempt checks that number, so a
worker that lost its run lease cannot overwrite the attempt that replaced it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from domain import transitions
from domain.run import Run, RunStatus
from domain.schedule import ScheduleVersion
from domain.start import ScheduleNow
from domain.transitions import (
    ATTEMPT_ACCEPTED,
    ATTEMPT_LOST,
    FINISHED,
    RETRYABLE,
    STARTABLE,
    TransitionRefused,
)

# How long a received message stays invisible to a worker pool with a heartbeat
# (the local stack, over SQLite or the emulator): short, so a killed worker's
# messages come back within seconds; a worker extends it for every message it
# holds while the run is in flight. Lambda's worker leaves it unset.
HELD_VISIBILITY_S: Final = 15.0

__all__ = [
    "ATTEMPT_ACCEPTED",
    "ATTEMPT_LOST",
    "FINISHED",
    "RETRYABLE",
    "STARTABLE",
    "AttemptReport",
    "NoTelemetry",
    "QueueMessage",
    "RunStore",
    "RunTelemetry",
    "ScheduleNow",
    "WorkQueue",
]

# How often one transition reads the run again after losing a race before it
# gives up (answers None, as for a refused guard). Every lost race means
# another writer moved the run, and the guards bound how often that can be.
RACES: Final = 4


class RunStore(ABC):
    """The run record, as the worker and the completion API change it.

    Every transition takes ``seen``, the run as the caller last read it: the
    write then needs no read first (the worker reads the run once per message
    and writes it twice). Without it the run is read.
    """

    @abstractmethod
    def get_run(self, occurrence_id: str) -> Run | None: ...

    @abstractmethod
    def compare_and_set(self, before: Run, after: Run) -> bool:
        """Write ``after`` if the stored record is still ``before``: same
        occurrence id and ``revision`` (a transition gives ``after`` the next
        revision). False, and nothing written, when it is not (or is gone).
        One conditional write of the one record."""

    @abstractmethod
    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        """The parameters of the version a run was created under (immutable)."""

    @abstractmethod
    def schedule_now(self, schedule_id: str) -> ScheduleNow | None:
        """The schedule's state as it is now, read strongly (None: no such
        schedule): what the worker checks before a run's first attempt."""

    def get_run_and_schedule(
        self, occurrence_id: str, schedule_id: str, *, fresh_run: bool = True
    ) -> tuple[Run | None, ScheduleNow | None]:
        """The run and its schedule's state now (``schedule_now``, always read
        strongly): what the worker reads of each message before anything else.
        With ``fresh_run=False`` the run may be read as it was a moment ago (an
        eventually consistent read, half the price on DynamoDB): the caller then
        acts on it only through compare-and-set writes, which refuse a stale
        copy. A store that can read both in one request overrides this
        (DynamoDB: one ``BatchGetItem`` instead of two ``GetItem``s)."""
        return self.get_run(occurrence_id), self.schedule_now(schedule_id)

    @abstractmethod
    def running_before(self, run: Run, now: datetime) -> Run | None:
        """The latest earlier occurrence (by ``scheduled_at``) of the same
        schedule that is still in progress: ``running`` with a live run lease,
        or ``retrying``. What the overlap policy ``skip`` looks at."""

    # --- the transitions: get, transition, compare-and-set ----------------------------------

    def change(
        self, occurrence_id: str, seen: Run | None, transition: Callable[[Run], Run]
    ) -> Run | None:
        """Apply ``transition`` to the run and store it: the run as written,
        or None when its guard refuses (or the run is gone, or the races
        outlast ``RACES`` reads)."""
        run = seen if seen is not None else self.get_run(occurrence_id)
        for _ in range(RACES):
            if run is None:
                return None
            try:
                after = transition(run)
            except TransitionRefused:
                return None
            if self.compare_and_set(run, after):
                return after
            run = self.get_run(occurrence_id)
        return None

    def start_attempt(
        self,
        occurrence_id: str,
        *,
        now: datetime,
        lease_until: datetime,
        run_token_hash: str | None,
        seen: Run | None = None,
    ) -> Run | None:
        """Start attempt ``attempts + 1`` (``transitions.start_attempt``)."""
        return self.change(
            occurrence_id,
            seen,
            lambda run: transitions.start_attempt(
                run, now=now, lease_until=lease_until, run_token_hash=run_token_hash
            ),
        )

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
        seen: Run | None = None,
    ) -> Run | None:
        """End the run with ``status`` (``transitions.finish``)."""
        if status not in FINISHED:
            raise ValueError(f"finish ends a run as {sorted(FINISHED)}, not {status.value}")
        return self.change(
            occurrence_id,
            seen,
            lambda run: transitions.finish(
                run,
                attempt=attempt,
                status=status,
                now=now,
                reason=reason,
                result=result,
                outcome=outcome,
                error=error,
            ),
        )

    def record_retry(
        self,
        occurrence_id: str,
        *,
        attempt: int,
        now: datetime,
        outcome: str,
        error: str | None,
        result: Mapping[str, Any] | None = None,
        seen: Run | None = None,
        retry_at: datetime | None = None,
    ) -> Run | None:
        """Attempt ``attempt`` failed and another will follow, not before
        ``retry_at`` (``transitions.record_retry``)."""
        return self.change(
            occurrence_id,
            seen,
            lambda run: transitions.record_retry(
                run,
                attempt=attempt,
                now=now,
                outcome=outcome,
                error=error,
                result=result,
                retry_at=retry_at,
            ),
        )

    def mark_accepted(
        self,
        occurrence_id: str,
        *,
        attempt: int,
        now: datetime,
        deadline: datetime,
        result: Mapping[str, Any] | None,
        seen: Run | None = None,
    ) -> Run | None:
        """The target answered 202 (``transitions.mark_accepted``)."""
        return self.change(
            occurrence_id,
            seen,
            lambda run: transitions.mark_accepted(
                run, attempt=attempt, now=now, deadline=deadline, result=result
            ),
        )

    def extend_lease(self, occurrence_id: str, *, attempt: int, until: datetime) -> bool:
        """Attempt ``attempt`` is still in flight: hold the run lease until at
        least ``until`` (``transitions.extend_lease``). False when the attempt
        ended, was taken over, or its lease already lasts as long."""
        changed = self.change(
            occurrence_id,
            None,
            lambda run: transitions.extend_lease(run, attempt=attempt, until=until),
        )
        return changed is not None

    def report_progress(
        self, occurrence_id: str, *, run_token_hash: str, progress: Mapping[str, Any]
    ) -> Run | None:
        """Store the job's progress (``transitions.report_progress``)."""
        return self.change(
            occurrence_id,
            None,
            lambda run: transitions.report_progress(
                run, run_token_hash=run_token_hash, progress=progress
            ),
        )

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
        """The job reports that it ended (``transitions.complete``)."""
        return self.change(
            occurrence_id,
            None,
            lambda run: transitions.complete(
                run,
                run_token_hash=run_token_hash,
                succeeded=succeeded,
                now=now,
                result=result,
                error=error,
            ),
        )

    def cancel(self, occurrence_id: str, *, now: datetime, reason: str) -> Run | None:
        """A user cancels the run before it ends (``transitions.cancel``)."""
        return self.change(
            occurrence_id, None, lambda run: transitions.cancel(run, now=now, reason=reason)
        )

    def retry(self, occurrence_id: str, *, now: datetime, bucket: int, reason: str) -> Run | None:
        """Run an occurrence that ended badly once more (``transitions.retry``):
        admitted again and pending in ``bucket``, its intent to be sent by the
        caller or by a dispatcher that finds it pending."""
        return self.change(
            occurrence_id,
            None,
            lambda run: transitions.retry(run, now=now, bucket=bucket, reason=reason),
        )


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

    def retry_later(self, message: QueueMessage, delay_s: float) -> bool:
        """Have the intent ``message`` carries come back in ``delay_s`` seconds.
        True when a new message now carries it (the caller deletes this one, as
        after a run that ended), False when this one was hidden that long.
        Here: hidden. The SQS queue sends a new, delayed message instead, so
        that a wait does not hold a message in flight (adapters/sqs_worker.py)."""
        self.change_visibility(message.receipt, delay_s)
        return False

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
