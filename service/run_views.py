"""What an operator asks about runs: listings with filters, running a failed
run again, and the dead letters.

- A listing leaves out the occurrences still planned (``scheduled_at`` after
  now) unless asked for them, so the newest runs that happened come first.
- A retry runs a ``failed`` or ``expired`` occurrence once more under the same
  occurrence id (so the same idempotency key at the target): the run store's
  conditional ``retry`` makes it ``admitted`` and pending again, then its
  delivery intent is sent at once and the record marked sent. When the send
  fails (or no queue is wired), the record stays pending and a dispatcher
  sends it on its next pass, as after a crash between admission and send.
  The retried run's attempt numbers go on under the version's
  ``max_attempts``: a run that had spent them all gets exactly one more
  attempt per request (a transient failure of it fails the run again); one
  that failed permanently earlier keeps the rest for transient failures.
  Any other status is refused, naming it. The retried run's dead letters are
  settled: they leave the dead-letter listing (best effort on SQS, where a
  message missed now stays listed until the queue's retention drops it).
- A cancel ends a run that has not ended (planned, admitted, running or
  retrying) as ``cancelled``, recorded as cancelled by a user with their
  reason (``transitions.cancel``): a waiting run never starts; a running
  one's late answer is ignored (a webhook cannot be recalled). A run that
  has already ended is refused, naming its status.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from domain.errors import DuetimeError
from domain.identity import utc_text
from domain.partition import Partitioning
from domain.run import DeliveryIntent, Reason, Run, RunKind, RunStatus
from domain.timeparse import parse_instant
from service.errors import RunNotFound, ScheduleNotFound, UnknownPageToken
from service.ports import Clock, DeliveryQueue, Page, RunQuery, Store
from service.run_ports import RETRYABLE, RunStore

MAX_PAGE: Final = 100
_log: Final = logging.getLogger("duetime")
_EPSILON: Final = timedelta(microseconds=1)


class NotRetryable(DuetimeError):
    """A retry of a run that is not failed or expired (HTTP 409)."""

    def __init__(self, occurrence_id: str, status: RunStatus, why: str | None = None) -> None:
        detail = why or (f"is {status.value}: only a failed or expired run can be run again")
        super().__init__(f"run {occurrence_id!r} {detail}")
        self.occurrence_id = occurrence_id
        self.status = status


class NotCancellable(DuetimeError):
    """A cancel of a run that has already ended (HTTP 409)."""

    def __init__(self, occurrence_id: str, status: RunStatus) -> None:
        super().__init__(
            f"run {occurrence_id!r} is {status.value}: it has already finished, "
            "so there is nothing to cancel"
        )
        self.occurrence_id = occurrence_id
        self.status = status


class InvalidListing(DuetimeError):
    """A listing parameter that cannot be used (HTTP 422), naming it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


STATUS_NAMES: Final = tuple(status.value for status in RunStatus)
KIND_NAMES: Final = tuple(kind.value for kind in RunKind)


@dataclass(frozen=True)
class RunFilters:
    """What a listing is narrowed to, read once from its query's text; since
    before until (``InvalidListing`` otherwise)."""

    statuses: frozenset[RunStatus] = frozenset()
    kinds: frozenset[RunKind] = frozenset()
    since: datetime | None = None
    until: datetime | None = None
    newest_first: bool = True
    include_planned: bool = False

    def __post_init__(self) -> None:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise InvalidListing("since", "must be before until")

    @classmethod
    def parse(
        cls,
        status: str | None,
        kind: str | None,
        since: str | None,
        until: str | None,
        order: str = "newest",
        include: str | None = None,
    ) -> RunFilters:
        """Comma-separated statuses and kinds, two instants (since before
        until), ``oldest`` first or not, ``planned`` included or not;
        ``InvalidListing`` naming the first that cannot be used."""
        statuses = frozenset(RunStatus(s) for s in _names(status, "status", STATUS_NAMES))
        kinds = frozenset(RunKind(k) for k in _names(kind, "kind", KIND_NAMES))
        start = None if since is None else parse_instant(since, "since")
        end = None if until is None else parse_instant(until, "until")
        return cls(statuses, kinds, start, end, order != "oldest", include == "planned")


def _names(text: str | None, field: str, known: tuple[str, ...]) -> frozenset[str]:
    """A comma-separated list of names, each one of ``known`` (refused naming ``field``)."""
    if text is None:
        return frozenset()
    names = [part.strip() for part in text.split(",")]
    for name in names:
        if name not in known:
            shown = repr(name) if name else "an empty name"
            raise InvalidListing(field, f"{shown} is not one of {', '.join(known)}")
    return frozenset(names)


@dataclass(frozen=True)
class DeadLetter:
    """A delivery intent that ended in the dead-letter queue."""

    id: str
    occurrence_id: str | None
    schedule_id: str | None
    reason: str | None
    dead_lettered_at: datetime | None
    receive_count: int
    body: str


class DeadLetters(ABC):
    """The dead-letter queue, read without consuming it."""

    @abstractmethod
    def page(self, limit: int, token: str | None = None) -> Page[DeadLetter]:
        """Newest first; ``ValueError`` for a token this adapter did not make."""

    @abstractmethod
    def discard(self, occurrence_id: str) -> int:
        """Remove the dead letters of ``occurrence_id`` (its run was admitted
        again: they are settled); how many went."""


class RunViews:
    """Run listings, retry and dead letters over the store, the run store and the queue.

    ``runs`` None: listings only (a retry is refused as unavailable).
    ``queue`` None: a retried run waits for a dispatcher to send its intent.
    ``dead_letters`` None: the deployment cannot list them (the API answers 501).
    """

    def __init__(
        self,
        store: Store,
        runs: RunStore | None,
        clock: Clock,
        partitioning: Partitioning | None = None,
        *,
        queue: DeliveryQueue | None = None,
        dead_letters: DeadLetters | None = None,
    ) -> None:
        self.store = store
        self.runs = runs
        self.clock = clock
        self.partitioning = partitioning or Partitioning()
        self.queue = queue
        self.dead_letters = dead_letters

    def list(
        self,
        *,
        schedule_id: str | None = None,
        filters: RunFilters = RunFilters(),
        limit: int = 50,
        token: str | None = None,
    ) -> Page[Run]:
        """Runs of one schedule (which must exist, deleted or not) or of all."""
        since, until = filters.since, filters.until
        if schedule_id is not None:
            schedule = self.store.schedules.get(schedule_id)
            if schedule is None:
                raise ScheduleNotFound(schedule_id)
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidListing("limit", f"must be 1-{MAX_PAGE}")
        if not filters.include_planned:
            # Planned: scheduled_at still in the future.
            now_bound = self.clock.now() + _EPSILON
            until = now_bound if until is None else min(until, now_bound)
            if since is not None and since >= until:
                return Page(())
        query = RunQuery(
            schedule_id=schedule_id,
            statuses=filters.statuses,
            kinds=filters.kinds,
            since=since,
            until=until,
            newest_first=filters.newest_first,
        )
        try:
            return self.store.records.find_runs(query, limit, token)
        except ValueError:
            raise UnknownPageToken() from None

    def retry(self, occurrence_id: str) -> Run:
        """Run a failed or expired occurrence again (see the module's text)."""
        if self.runs is None:
            raise RetryUnavailable()
        run = self.runs.get_run(occurrence_id)
        if run is None:
            raise RunNotFound(occurrence_id)
        if run.status not in RETRYABLE:
            raise NotRetryable(occurrence_id, run.status)
        schedule = self.store.schedules.get(run.schedule_id)
        if schedule is None or schedule.deleted:
            raise NotRetryable(occurrence_id, run.status, "belongs to a deleted schedule")
        now = self.clock.now()
        was = f"{run.status.value}: {run.reason}" if run.reason else run.status.value
        stored = self.runs.retry(
            occurrence_id,
            now=now,
            bucket=self.partitioning.placement(run.scheduled_at, now),
            reason=f"{Reason.RETRIED} at {utc_text(now)} (was {was})",
        )
        if stored is None:
            # Moved meanwhile (another retry won): say what it is now.
            current = self.runs.get_run(occurrence_id)
            if current is None:
                raise RunNotFound(occurrence_id)
            raise NotRetryable(occurrence_id, current.status)
        if self.queue is not None:
            intent = DeliveryIntent(
                occurrence_id=stored.occurrence_id,
                schedule_id=stored.schedule_id,
                version=stored.version,
                scheduled_at=stored.scheduled_at,
                attempt=stored.attempts,
            )
            try:
                unsent = self.queue.send_batch([intent])
            except Exception:  # the record stays pending: a dispatcher sends it
                _log.warning("retry: intent not sent, left to dispatch", exc_info=True)
                unsent = [occurrence_id]
            if not unsent:
                self.store.records.mark_sent([occurrence_id], self.clock.now())
                stored = self.runs.get_run(occurrence_id) or stored
        if self.dead_letters is not None:
            try:
                self.dead_letters.discard(occurrence_id)
            except Exception:  # the run is retried either way; the letter stays listed
                _log.warning("retry: dead letters not discarded", exc_info=True)
        return stored

    def cancel(self, occurrence_id: str, note: str | None = None) -> Run:
        """Cancel a run that has not ended (see the module's text)."""
        if self.runs is None:
            raise CancelUnavailable()
        stored = self.runs.cancel(
            occurrence_id, now=self.clock.now(), reason=Reason.cancelled(note)
        )
        if stored is None:
            # Refused (already finished), or gone: say which.
            current = self.runs.get_run(occurrence_id)
            if current is None:
                raise RunNotFound(occurrence_id)
            raise NotCancellable(occurrence_id, current.status)
        return stored

    def dead_letter_page(self, limit: int = 50, token: str | None = None) -> Page[DeadLetter]:
        if self.dead_letters is None:
            raise DeadLettersUnavailable()
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidListing("limit", f"must be 1-{MAX_PAGE}")
        try:
            return self.dead_letters.page(limit, token)
        except ValueError:
            raise UnknownPageToken() from None


class DeadLettersUnavailable(DuetimeError):
    """This deployment cannot list its dead letters (HTTP 501)."""

    def __init__(self) -> None:
        super().__init__(
            "dead letters cannot be listed here: this deployment has no dead-letter queue "
            "configured for the API; list the runs that ended badly instead "
            "(GET /runs?status=failed,expired)"
        )


class RetryUnavailable(DuetimeError):
    """This deployment has no run store to retry with (HTTP 501)."""

    def __init__(self) -> None:
        super().__init__("retrying a run is not available in this deployment")


class CancelUnavailable(DuetimeError):
    """This deployment has no run store to cancel with (HTTP 501)."""

    def __init__(self) -> None:
        super().__init__("cancelling a run is not available in this deployment")
