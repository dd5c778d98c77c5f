"""The dead-letter sweep: close the runs whose intent the queue dead-lettered by itself.

The worker never leaves a run open when it gives up on a message: a run that
fails for good is recorded as failed and its message deleted, and a message
that cannot be run at all (not an intent, no such occurrence) goes to the
dead-letter queue with the worker's reason. But SQS moves a message to the
dead-letter queue on its own once it has been received ``maxReceiveCount``
times without being deleted (invocations that crashed or timed out on it,
throttled batches, drains that ran out of time), and nobody is told: its run
would stay ``admitted``, ``retrying`` or ``running`` forever, and the
watchdog would see only a schedule gone overdue.

A sweep, every few minutes, receives what is in the dead-letter queue and
takes the letters that carry no reason (the ones SQS moved). For each one:

- a run still open is ended ``failed``, reason ``dead-lettered by the queue
  after N receives``, by a compare-and-set of the run as read (a run that
  changed meanwhile is left for the next sweep). A run running under a live
  lease is left alone this time: its worker may still record its outcome;
- the letter is marked: sent again to the dead-letter queue with that reason,
  and the original deleted, so the next sweep passes it by and the
  dead-letter listing (``GET /dead-letters``) says why it is there;
- it is counted (``Metric.DEAD_LETTERED``): the ``DeadLettersArrived`` alarm
  fires while new dead letters arrive, and clears by itself once none do.

A letter that is marked but whose original could not be deleted is seen
again, finds its run closed, and is marked again: two copies of one dead
letter, never a run closed twice. A user who fixed the cause runs the run
again with ``POST /runs/{id}/retry``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from domain.run import RunStatus
from domain.transitions import ATTEMPT_LOST
from service.ports import Clock
from service.run_ports import RunStore

# Letters one sweep looks at, at most (ten receives of ten on SQS).
SWEEP_LIMIT: Final = 100


def queue_reason(receive_count: int) -> str:
    """The reason a run (and its letter) gets when the queue dead-lettered its intent."""
    return (
        f"dead-lettered by the queue after about {receive_count} receives: the worker "
        "never finished with its message (crashed, timed out or throttled on it)"
    )


@dataclass(frozen=True)
class Letter:
    """A dead letter as the sweep sees it. ``reason`` is None for a letter the
    queue moved by itself; ``occurrence_id`` is None for a body that is no intent."""

    receipt: str
    body: str
    occurrence_id: str | None
    reason: str | None
    receive_count: int


class DeadLetterInbox(ABC):
    """The dead-letter queue, as the sweep consumes it."""

    @abstractmethod
    def unmarked(self, limit: int) -> list[Letter]:
        """Up to ``limit`` letters that carry no reason (some letters with one may
        be passed over to find them). Each stays in the queue."""

    @abstractmethod
    def mark(self, letter: Letter, reason: str) -> None:
        """Give ``letter`` its ``reason``: later calls of ``unmarked`` pass it by."""


@dataclass(frozen=True)
class SweepReport:
    found: int  # letters the queue moved by itself, marked now
    closed: int  # open runs they belonged to, now failed
    left: int  # letters left for the next sweep (a run under a live lease, a lost race)


class SweepTelemetry:
    """Where the sweep reports each dead letter it found (the handler counts them)."""

    def dead_lettered(self, letter: Letter) -> None:
        pass


def sweep_dead_letters(
    inbox: DeadLetterInbox,
    runs: RunStore,
    clock: Clock,
    *,
    telemetry: SweepTelemetry | None = None,
    limit: int = SWEEP_LIMIT,
) -> SweepReport:
    """Close the open runs of the letters the queue moved by itself, and mark them."""
    telemetry = telemetry or SweepTelemetry()
    found = closed = left = 0
    for letter in inbox.unmarked(limit):
        reason = queue_reason(letter.receive_count)
        if letter.occurrence_id is not None:
            outcome = _close(runs, letter.occurrence_id, reason, clock.now())
            if outcome is None:
                left += 1
                continue
            closed += outcome
        inbox.mark(letter, reason)
        telemetry.dead_lettered(letter)
        found += 1
    return SweepReport(found=found, closed=closed, left=left)


def _close(runs: RunStore, occurrence_id: str, reason: str, now: datetime) -> int | None:
    """1 if the run was open and is now failed, 0 if there was nothing to close,
    None if it must wait for a later sweep."""
    run = runs.get_run(occurrence_id)
    if run is None or run.terminal or run.status is RunStatus.SCHEDULED:
        return 0
    if run.status is RunStatus.RUNNING:
        lease = run.run_lease_expires_at
        if lease is not None and lease > now:
            return None  # its worker may still record how it ended
        ended = runs.finish(
            occurrence_id,
            attempt=run.attempts,
            status=RunStatus.FAILED,
            now=now,
            reason=reason,
            outcome=ATTEMPT_LOST,
            error="run lease expired",
            seen=run,
        )
    else:
        ended = runs.finish(
            occurrence_id, attempt=None, status=RunStatus.FAILED, now=now, reason=reason, seen=run
        )
    return None if ended is None else 1
