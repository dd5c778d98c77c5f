"""The ports the use cases need. Adapters implement them; tests use fakes.

Every rule that keeps the promises lives behind one of these methods as a
*conditional* write (a DynamoDB condition expression; a SQLite unique key or
``UPDATE ... WHERE`` inside one transaction), never as a read followed by a
blind write. Each method's docstring states its condition; the contract suite
in tests/contract checks every adapter against it.

Instants are aware UTC datetimes. Page tokens are opaque strings that only the
adapter that made them reads back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Generic, NamedTuple, Protocol, TypeVar

from domain.run import DeliveryIntent, PendingOccurrence, Run, RunKind, RunStatus
from domain.schedule import Quarantine, Schedule, SchedulePolicy, ScheduleVersion
from domain.spec import ScheduleSpec

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: tuple[T, ...]
    next_token: str | None = None


def _version_token(token: str) -> int:
    if not (token.isascii() and token.isdigit()) or len(token) > 12:
        raise ValueError("not a version page token")
    return int(token)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, aware UTC."""
        ...


# --- schedules --------------------------------------------------------------------


class DueSchedule(NamedTuple):
    """What planning reads of a schedule whose ``next_due`` is within the
    horizon: the number, spec and policy of its current version. Not the
    target, payload or state: a plan page reads one per schedule due, and
    needs nothing else (the materialization's condition re-checks the state)."""

    schedule_id: str
    version: int
    next_due: datetime
    spec: ScheduleSpec
    policy: SchedulePolicy

    @classmethod
    def of(cls, schedule: Schedule) -> DueSchedule:
        """The planning view of a whole schedule (which must have a ``next_due``)."""
        if schedule.next_due is None:
            raise ValueError(f"schedule {schedule.schedule_id} has no next_due")
        current = schedule.current
        return cls(
            schedule.schedule_id, schedule.version, schedule.next_due, current.spec, current.policy
        )


class Materialization(NamedTuple):
    """Occurrences of one schedule to write, with the advance of its ``next_due``.

    Applied only if the schedule still has ``expected_version`` and
    ``expected_next_due`` and is active (not paused, not deleted, not
    quarantined). Then
    ``next_due`` and ``last_materialized_at`` are set and each occurrence is
    inserted unless its business key (or occurrence id) is already taken: a
    duplicate slot is skipped, not an error. ``occurrences`` are in order of
    ``scheduled_at``; an adapter that writes them one by one may advance
    ``next_due`` to each following occurrence's instant as it goes (and to
    ``next_due`` after the last), so a crash halfway leaves a consistent state.

    Each occurrence is stored as given: waiting (``scheduled``), closed by the
    overdue policy, or ``admitted`` when the planner admits a due slot
    directly. The schedule's condition, checked in the same transaction, is
    then the admission's check that the schedule is active.

    A named tuple, as ``MaterializeOutcome`` and ``DueSchedule`` are: the
    planner makes one per schedule it plans, and a tuple is the cheapest
    immutable value Python builds.
    """

    schedule_id: str
    expected_version: int
    expected_next_due: datetime
    next_due: datetime | None
    last_materialized_at: datetime | None
    occurrences: tuple[Run, ...]


class MaterializeOutcome(NamedTuple):
    schedule_id: str
    applied: bool  # False: the schedule changed (edit, pause, delete, another planner)
    inserted: tuple[str, ...] = ()  # occurrence ids written


class Materialized(NamedTuple):
    """What ``materialize`` stored: one outcome per item (final unless
    ``held``), the admitted records whose intents the caller sends
    (``to_send``), and the store's own note of the advances it holds until
    ``advance`` (None: it holds none). A record of ``to_send`` is in the
    outbox (``pending``: marked sent once sent) or out of it (put in it if
    its send fails, before ``advance``)."""

    outcomes: list[MaterializeOutcome]
    to_send: tuple[Run, ...] = ()
    held: object = None


class PlanSession:
    """What one planning pass keeps between its calls to the store, made by
    ``ScheduleStore.plan_session`` when the pass begins and handed back to
    every planning call of that pass (``due``, ``due_ahead``, ``materialize``,
    ``planned_through``); dropped when it ends. A
    store keeps none of it: two passes through one store never see each
    other's. The base keeps nothing (a store whose planning needs no memory
    between calls, such as SQLite's, returns it and ignores it)."""


class ScheduleStore(ABC):
    @abstractmethod
    def create(
        self, schedule: Schedule, idempotency_key: str | None = None
    ) -> tuple[Schedule, bool]:
        """Store a new schedule (head and version 1).

        With an ``idempotency_key`` already used, nothing is written and the
        schedule first created with that key is returned with ``False``.
        A schedule id that exists is refused with ``ValueError``.
        """

    @abstractmethod
    def get(self, schedule_id: str) -> Schedule | None:
        """The schedule, deleted ones included (``deleted_at`` set)."""

    @abstractmethod
    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        """Any version ever written, current or not, of a live or deleted schedule."""

    @abstractmethod
    def get_versions(
        self, keys: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], ScheduleVersion]:
        """Several versions at once (batched); missing keys are left out."""

    def versions(
        self, schedule_id: str, limit: int, token: str | None = None
    ) -> Page[ScheduleVersion]:
        """A schedule's versions (live or deleted), oldest first, ``limit`` a page.

        Unknown schedule: an empty page. A token this store did not hand out
        raises ``ValueError``. Both adapters read them with one query; this
        default (for fakes) reads the head, then the versions by key.
        """
        after = 0 if token is None else _version_token(token)
        head = self.get(schedule_id)
        if head is None or limit < 1:
            return Page(())
        last = min(head.version, after + limit)
        found = self.get_versions((schedule_id, n) for n in range(after + 1, last + 1))
        items = tuple(found[key] for key in sorted(found))
        return Page(items, str(last) if last < head.version else None)

    @abstractmethod
    def list_schedules(
        self, limit: int, token: str | None = None, *, next_due: bool = True
    ) -> Page[Schedule]:
        """Schedules not deleted, oldest first (created_at, then id), ``limit`` a
        page. ``next_due=False``: the caller does not read ``next_due``, and a
        store that has to look it up elsewhere may leave it as stored."""

    def plan_session(self) -> PlanSession:
        """The memory of one planning pass (see ``PlanSession``), for its calls."""
        return PlanSession()

    @abstractmethod
    def due(
        self,
        until: datetime,
        limit: int,
        token: str | None = None,
        *,
        session: PlanSession | None = None,
    ) -> Page[DueSchedule]:
        """Active schedules with ``next_due <= until``, by (next_due, schedule_id),
        as planning reads them. A quarantined schedule is not returned.
        ``session``: the pass's (None: a call on its own)."""

    def due_ahead(
        self,
        after: datetime,
        until: datetime,
        limit: int,
        token: str | None = None,
        *,
        session: PlanSession | None = None,
    ) -> Page[DueSchedule]:
        """Seeds with ``after < next_due <= until``, by (next_due, schedule_id): the
        active schedules whose next slot a create, edit or resume set and no pass
        has planned yet, which a pass with time to spare plans early
        (``early.PlanEarly``). A store that keeps no seeds apart from the
        schedules a pass carries on returns none, the default: it plans
        nothing early."""
        return Page(())

    def chain_crowd(
        self,
        after: datetime,
        until: datetime,
        least: int,
        *,
        session: PlanSession | None = None,
    ) -> datetime | None:
        """The latest instant in ``(after, until]`` that at least ``least`` of the
        schedules a pass carries on (its chain) are next due at, and that no pass
        has read yet; None if there is none. A pass with time to spare then reads
        the chain up to it (``due(instant)``, ``planned_through``) ahead of its
        lookahead (``early.PlanEarly``), so the 10,000 slots of a daily 09:00
        are planned over the passes that see them coming. ``session``: the
        pass's (None: a call on its own). A store with no chain has no crowd,
        the default."""
        return None

    @abstractmethod
    def save_version(
        self,
        new: ScheduleVersion,
        *,
        expected_next_due: datetime | None,
        next_due: datetime | None,
        now: datetime,
    ) -> bool:
        """Make ``new`` (version N+1) current and set ``next_due``.

        Condition: the schedule is at version N (``new.version - 1``), its
        ``next_due`` is ``expected_next_due`` and it is not deleted. The
        earlier versions stay readable. A quarantine is cleared. False when
        the condition failed.
        """

    @abstractmethod
    def pause(self, schedule_id: str, note: str | None, now: datetime) -> bool:
        """Set paused with ``note``. Condition: exists, not deleted."""

    @abstractmethod
    def resume(
        self,
        schedule_id: str,
        *,
        expected_next_due: datetime | None,
        next_due: datetime | None,
        now: datetime,
    ) -> bool:
        """Clear paused, the note and any quarantine, set ``next_due``.

        Condition: paused, not deleted, ``next_due`` is ``expected_next_due``.
        """

    @abstractmethod
    def quarantine(self, schedule_id: str, version: int, quarantine: Quarantine) -> bool:
        """Set a schedule aside after an error: record ``quarantine`` on it.

        From then on ``due`` leaves it out (its ``next_due`` is kept, for the
        user to see), a materialization of it is refused, and an adapter that
        checks the schedule when admitting (SQLite) refuses its records; the
        caller closes what is waiting, as a pause does. ``save_version`` and
        ``resume`` clear it. Condition: the schedule is at ``version`` and not
        deleted (a quarantine judged on an older version does not land on a
        newer one). A second quarantine replaces the first.
        """

    @abstractmethod
    def delete(self, schedule_id: str, now: datetime) -> bool:
        """Set ``deleted_at`` and clear ``next_due``. Condition: not deleted."""

    @abstractmethod
    def materialize(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        *,
        until: datetime | None = None,
        session: PlanSession | None = None,
    ) -> Materialized:
        """Apply each materialization under its own condition (see Materialization).

        One outcome per item, in order. The items are independent: one that
        fails its condition does not stop the others. ``until`` is the
        horizon of the planning pass the batch comes from (None: not from a
        pass, e.g. the API planning at the call): a store may carry a
        schedule whose ``next_due`` falls after it on its last occurrence
        instead of advancing the schedule (see ``planned_through``).

        The records stored ``admitted`` (and any found admitted, never sent
        nor started) are returned to send (``Materialized.to_send``). Each is
        in the outbox (``pending``), or its schedule is not advanced past it
        until ``advance``: whatever happens before, a later pass or dispatch
        sends it again.
        """

    def advance(self, stored: Materialized, sent: Collection[str]) -> list[MaterializeOutcome]:
        """Advance the schedules ``materialize`` held (``stored.held``), now that
        the intents of ``stored.to_send`` were sent (``sent``: the ids that
        were) and the others put in the outbox: the final outcomes. A
        schedule that moved meanwhile is not advanced, and its records that no
        other planner covered are withdrawn (one whose intent was sent is
        closed, so its worker finds it ended). The default: a store that holds
        nothing."""
        return stored.outcomes

    def planned_through(
        self,
        until: datetime | None,
        token: str | None = None,
        *,
        session: PlanSession | None = None,
    ) -> None:
        """A planning pass ends. With ``until``, it read every page of
        ``due(until)`` and materialized it: nothing due by ``until`` is left
        unplanned; with None, it stopped early (or failed), and with a
        ``token``, it planned every page before the one that token reads (it
        stopped at its budget). A store whose ``due`` reads occurrences
        written ahead (which carry their schedule's next slot) starts its
        next read after ``until``, or after the token's place; the default
        does nothing."""
        return None


# --- occurrences and runs -------------------------------------------------------------


@dataclass(frozen=True)
class Closure:
    """End a ``scheduled`` occurrence without admitting it."""

    occurrence_id: str
    status: RunStatus  # SKIPPED, EXPIRED or CANCELLED
    reason: str


@dataclass(frozen=True)
class RunQuery:
    """Which runs a listing wants: a conjunction of optional filters.

    ``schedule_id`` None means every schedule not deleted (a deleted
    schedule's history stays readable through its own listing). ``statuses``
    and ``kinds`` empty mean any.
    ``since`` (inclusive) and ``until`` (exclusive) bound ``scheduled_at``.
    ``newest_first`` orders by ``scheduled_at`` (then occurrence id) from the
    newest; otherwise from the oldest.
    """

    schedule_id: str | None = None
    statuses: frozenset[RunStatus] = frozenset()
    kinds: frozenset[RunKind] = frozenset()
    since: datetime | None = None
    until: datetime | None = None
    newest_first: bool = True

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise ValueError(f"{name} must be aware")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must be before until")

    def matches(self, run: Run) -> bool:
        """Whether ``run`` passes every filter (what an adapter's query keeps)."""
        return (
            (self.schedule_id is None or run.schedule_id == self.schedule_id)
            and (not self.statuses or run.status in self.statuses)
            and (not self.kinds or run.kind in self.kinds)
            and (self.since is None or run.scheduled_at >= self.since)
            and (self.until is None or run.scheduled_at < self.until)
        )


class OccurrenceStore(ABC):
    @abstractmethod
    def insert(self, runs: Sequence[Run]) -> list[str]:
        """Write each record unless its business key or occurrence id is taken.

        Returns the occurrence ids written. For triggers, backfills and the
        records of skipped slots; the planner uses ``materialize``.
        """

    @abstractmethod
    def get_run(self, occurrence_id: str) -> Run | None: ...

    @abstractmethod
    def get_by_business_key(self, key: str) -> Run | None: ...

    @abstractmethod
    def runs(self, schedule_id: str, limit: int, token: str | None = None) -> Page[Run]:
        """A schedule's records, newest ``scheduled_at`` first."""

    @abstractmethod
    def find_runs(self, query: RunQuery, limit: int, token: str | None = None) -> Page[Run]:
        """At most ``limit`` records matching ``query``, and a token when more may follow.

        With ``query.schedule_id``: that schedule's records in ``scheduled_at``
        order (``newest_first`` or oldest first, ties by occurrence id), every
        page full but the last. Without: every schedule's records; each
        schedule's records come in that order, but an adapter may walk the
        schedules one after another instead of merging them (DynamoDB does,
        SQLite orders across schedules), and may end a page early, even
        empty, with a token, to bound the reads of one call. Following the
        tokens returns each matching record once. A token is only valid with
        the query that made it (``ValueError`` for one this adapter did not make).
        """

    @abstractmethod
    def pending_due(
        self, shard: int, from_bucket: int, to_bucket: int, due_by: datetime, limit: int
    ) -> list[PendingOccurrence]:
        """Pending records of ``shard`` in buckets ``from_bucket..to_bucket``
        (inclusive) with ``scheduled_at <= due_by``, oldest first (scheduled_at,
        then occurrence_id), at most ``limit``, as dispatch reads them."""

    @abstractmethod
    def earliest_pending_bucket(self, shard: int, from_bucket: int | None = None) -> int | None:
        """The lowest bucket ``>= from_bucket`` of ``shard`` holding a pending record."""

    @abstractmethod
    def admit(self, occurrences: Sequence[PendingOccurrence], now: datetime) -> list[str]:
        """Move each record (as read from ``pending_due``) from ``scheduled`` to
        ``admitted``, stamping ``admitted_at`` with ``now``, or with its instant
        when it is admitted ahead of it (planned); it stays pending until
        ``mark_sent``.

        Condition, per record: status is ``scheduled``. An adapter that can
        also check the schedule is active in the same transaction does (SQLite);
        one that cannot relies on pause and delete closing pending records
        (DynamoDB). Returns the ids this call admitted, in the order given.
        """

    @abstractmethod
    def close_runs(self, closures: Sequence[Closure], now: datetime) -> list[str]:
        """End records that are still ``scheduled`` (stamping ``finished_at``,
        ``reason``, clearing pending). Returns the ids it changed."""

    @abstractmethod
    def close_scheduled(
        self, schedule_id: str, status: RunStatus, reason: str, now: datetime
    ) -> int:
        """``close_runs`` every ``scheduled`` record of a schedule (pause, delete)."""

    @abstractmethod
    def withdraw_planned(self, schedule_id: str, after: datetime) -> int:
        """Delete the schedule's planned records: slots of the spec due after
        ``after`` whose run has not started (waiting, or admitted ahead with
        no attempt). A pause or a delete withdraws them in this one step, so
        what will not run leaves no record; an intent already queued for one
        finds no record and is dropped. Read strongly. Returns how many."""

    @abstractmethod
    def mark_sent(self, occurrence_ids: Sequence[str], now: datetime) -> int:
        """Clear pending and stamp ``sent_at`` on records no longer ``scheduled``.

        Records still ``scheduled`` are left alone. Returns how many changed.
        """

    @abstractmethod
    def into_outbox(self, runs: Sequence[Run]) -> int:
        """Put back in the outbox (``pending``, no ``sent_at``) admitted records
        stored out of it whose intent could not be sent, for dispatch to send.
        Condition: admitted, no attempt, not pending. Returns how many changed.
        """


# --- leases and heartbeats ----------------------------------------------------------------


@dataclass(frozen=True)
class Lease:
    """Who may dispatch a shard now. ``epoch`` only grows: a takeover increments it."""

    shard: int
    owner: str
    epoch: int
    expires_at: datetime

    def live(self, now: datetime) -> bool:
        return self.expires_at > now


@dataclass(frozen=True)
class Heartbeat:
    component: str
    at: datetime
    detail: Mapping[str, Any] = field(default_factory=dict)


class LeaseStore(ABC):
    @abstractmethod
    def acquire(self, shard: int, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
        """Take or renew the shard's lease until ``now + ttl``.

        Condition: the lease is free (no record), expired (``expires_at <=
        now``), or held by ``owner``. Taking it from no one or from another
        owner increments the epoch (starting at 1); renewing keeps it. None
        when another owner holds a live lease.
        """

    @abstractmethod
    def release(self, shard: int, owner: str, epoch: int, now: datetime) -> bool:
        """Expire the lease now (keeping its epoch). Condition: owner and epoch."""

    @abstractmethod
    def leases(self) -> list[Lease]:
        """Every lease record, by shard."""

    @abstractmethod
    def beat(self, heartbeat: Heartbeat) -> None:
        """Record that a component did something at ``heartbeat.at`` (upsert)."""

    @abstractmethod
    def heartbeat(self, component: str) -> Heartbeat | None: ...

    @abstractmethod
    def heartbeats_of(self, components: Sequence[str]) -> dict[str, Heartbeat]:
        """The heartbeats of these components that exist, by
        component: one read for a page of them. It may miss a write of a moment
        ago (DynamoDB reads it eventually consistent): decide nothing on it that
        a conditional write (``beat_if``) does not check again."""

    @abstractmethod
    def beat_if(self, heartbeat: Heartbeat, expected_at: datetime | None) -> bool:
        """Write ``heartbeat`` only if its record is the
        one last beaten at ``expected_at`` (None: there is no record). False when
        another writer changed it first; nothing is written then."""


class Store(Protocol):
    """The three store ports of one backend, each its own object: what a
    service is given. ``schedules`` also plans (it materializes slots as run
    records, through the same backend's ``records``). Each adapter's store
    (``SqliteStore``, ``DynamoPorts``) is a frozen dataclass of its ports."""

    @property
    def schedules(self) -> ScheduleStore: ...

    @property
    def records(self) -> OccurrenceStore: ...

    @property
    def leases(self) -> LeaseStore: ...


# --- the delivery queue ------------------------------------------------------------------------


class DeliveryQueue(ABC):
    @abstractmethod
    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        """Send delivery intents (at-least-once), visible at once. Returns the
        occurrence ids that could not be sent; the dispatcher sends them again
        on a later pass."""

    def send_ahead(
        self,
        intents: Sequence[DeliveryIntent],
        now: datetime,
        early: Collection[datetime] = (),
    ) -> list[str]:
        """``send_batch``, each intent whose ``scheduled_at`` is after ``now``
        held back by the queue until then (never visible earlier: SQS rounds
        its ``DelaySeconds`` up to the next whole second; at most
        ``MAX_DELAY`` ahead), but for the intents of the ``early`` seconds (as
        ``second_of`` names them: a crowded second, which drains wait for), which
        a queue that rounds may make visible up to ``HOLD`` before their time
        (SQS: rounded down), for a worker that holds them until then. A queue
        that cannot hold messages back sends them at once, as this default
        does: the worker then sends an early intent back until it is due."""
        return self.send_batch(intents)


# How far ahead a queue holds a message back: SQS's DelaySeconds limit.
MAX_DELAY: Final = timedelta(seconds=900)
# How early an intent of a crowded second may become visible (SQS delays by whole
# seconds: rounded down, a second at most), and how early a worker that receives
# one holds it until its time rather than sending it back.
HOLD: Final = timedelta(seconds=1)


def second_of(at: datetime) -> datetime:
    """The whole second an intent due at ``at`` becomes visible, a delay of whole
    seconds rounded up: the second the load ledger counts it in."""
    floor = at.replace(microsecond=0)
    return floor if floor == at else floor + timedelta(seconds=1)


def delay_s(scheduled_at: datetime, now: datetime) -> float:
    """How long a queue holds back an intent due at ``scheduled_at``, sent at
    ``now``: up to its due time, at least 0, at most ``MAX_DELAY``."""
    ahead = (scheduled_at - now).total_seconds()
    return min(max(0.0, ahead), MAX_DELAY.total_seconds())
