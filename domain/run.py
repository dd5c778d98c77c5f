"""Occurrences and their runs.

An occurrence is one due instance of a schedule; its run is what happens to
it. One record holds both. Its identity is ``(schedule_id, version,
scheduled_at)`` (``occurrence_id``), and its *business key* names the slot it
fills, ``(schedule_id, wall time, fold)``: the store refuses a second record
for one business key, whatever the version, so an edit, a restart or two
dispatchers can never produce two runs for one slot.

A run moves through these states::

    scheduled -> admitted -> running -> succeeded | failed
                    |           \\-> retrying -> running ...
                    \\-> (worker) expired | skipped | cancelled
    scheduled -> skipped | expired | cancelled   (never admitted)
    failed | expired -> admitted                 (a user's retry: attempts go on)
    scheduled | admitted | running | retrying -> cancelled   (a user's cancel)

``scheduled`` is the only state a dispatcher admits from, by a conditional
write, so an occurrence is admitted at most once. Every state after
``admitted`` belongs to the worker. A run that ends badly says why in
``reason``.

The worker's transitions (from ``admitted`` on) are pure functions in
``domain/transitions.py``; each gives the run its next ``revision``.

``pending`` marks the records a dispatcher still has work for: admission
(``scheduled``), or sending the delivery intent (admitted, not yet sent).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple, TypeVar

from domain.identity import business_key_tail, occurrence_id_tail, utc_text
from domain.spec import Slot


class RunStatus(enum.StrEnum):
    SCHEDULED = "scheduled"
    ADMITTED = "admitted"
    RUNNING = "running"
    RETRYING = "retrying"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    EXPIRED = "expired"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


TERMINAL: Final = frozenset(
    {
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.EXPIRED,
        RunStatus.SKIPPED,
        RunStatus.CANCELLED,
    }
)


class RunKind(enum.StrEnum):
    """Where an occurrence came from."""

    SCHEDULED = "scheduled"  # a slot of the spec, materialized by the planner
    TRIGGER = "trigger"  # one extra run asked for through the API
    BACKFILL = "backfill"  # a past slot materialized on request
    SUMMARY = "summary"  # a counted record of many skipped slots


class Reason:
    """Why a run ended without running (the ``reason`` of its record)."""

    PAUSED = "paused"
    DELETED = "schedule deleted"
    SUPERSEDED = "superseded: a later occurrence was due (overdue policy latest_only)"
    OVERLAP = "overlap"
    # Slots beyond the bound an edit records when it finds them due and unplanned.
    EDITED_UNPLANNED = "superseded: the schedule was edited before a tick planned them"
    # A run a user asked to run again (POST /runs/{id}/retry): its reason
    # until it ends again, so the worker does not judge it overdue a second time.
    RETRIED = "retried on request"
    # A run a user cancelled (POST /runs/{id}/cancel), followed by their reason if given.
    CANCELLED = "cancelled by a user"

    @staticmethod
    def cancelled(note: str | None) -> str:
        return f"{Reason.CANCELLED}: {note}" if note else Reason.CANCELLED

    @staticmethod
    def expired(late_by_s: float, window_s: float) -> str:
        return (
            f"expired: found {late_by_s:.0f} s late, beyond the catchup_window of {window_s:.0f} s"
        )


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt of a run, as the worker records it."""

    number: int
    started_at: datetime
    finished_at: datetime | None = None
    outcome: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Run:
    """An occurrence and what happened to it.

    ``bucket`` and ``shard`` place a pending occurrence in its partition.
    ``wall`` is the naive wall time in the schedule version's zone, ``fold``
    which copy of a repeated wall time it is.
    """

    occurrence_id: str
    business_key: str
    schedule_id: str
    version: int
    scheduled_at: datetime
    wall: datetime
    fold: int
    bucket: int
    shard: int
    status: RunStatus = RunStatus.SCHEDULED
    kind: RunKind = RunKind.SCHEDULED
    pending: bool = True
    materialized_at: datetime | None = None
    attempts: int = 0
    admitted_at: datetime | None = None
    sent_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    reason: str | None = None
    result: Mapping[str, Any] | None = None
    # For the worker: the run lease, per-attempt log, the hash of the
    # per-run completion token, and progress a long job reported. The lease
    # of a running run is its attempt's (nobody else starts one before it
    # ends); of a retrying run, its backoff (no attempt starts before it).
    run_lease_expires_at: datetime | None = None
    attempt_log: tuple[AttemptRecord, ...] = ()
    run_token_hash: str | None = None
    progress: Mapping[str, Any] | None = None
    # How many transitions of domain/transitions.py the stored record has
    # been through: what a store's compare-and-set checks, besides the id.
    revision: int = 0

    def __post_init__(self) -> None:
        if self.scheduled_at.tzinfo is None:
            raise ValueError("scheduled_at must be aware")
        if self.wall.tzinfo is not None:
            raise ValueError("wall is a naive wall time")

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def retried(self) -> bool:
        """Admitted again on a user's request after it failed or expired."""
        return self.status is RunStatus.ADMITTED and (self.reason or "").startswith(Reason.RETRIED)

    @property
    def lag_s(self) -> float | None:
        """Dispatch lag: admitted_at - scheduled_at, in seconds."""
        if self.admitted_at is None:
            return None
        return (self.admitted_at - self.scheduled_at).total_seconds()

    def closed(self, status: RunStatus, reason: str, at: datetime) -> Run:
        """This record, ended before admission with ``status`` and ``reason``."""
        return self._evolve(status=status, reason=reason, finished_at=at, pending=False)

    def admitted(self, at: datetime) -> Run:
        """This record, admitted at ``at`` (its intent not sent yet)."""
        return self._evolve(status=RunStatus.ADMITTED, admitted_at=at, pending=True)

    def _evolve(self, **changes: Any) -> Run:
        # dataclasses.replace re-runs __init__ and the checks; on the dispatch
        # path, for fields that cannot break them, a copy is several times cheaper.
        new = object.__new__(Run)
        new.__dict__.update(self.__dict__, **changes)
        return new

    @classmethod
    def of(cls, **values: Any) -> Run:
        """``Run(**values)``, several times cheaper (see ``build``): the planner
        and the store make one record per occurrence."""
        return build(cls, values)


_T = TypeVar("_T")
# Per dataclass: a dict of every field (its default, or a marker when it has
# none), the fields without a default, and its __post_init__ (or None).
_SHAPES: dict[type, tuple[dict[str, Any], frozenset[str], Any]] = {}


def build(cls: type[_T], values: dict[str, Any]) -> _T:
    """A frozen dataclass made as its ``__init__`` makes it (defaults, then
    ``values``, then ``__post_init__``), refusing unknown or missing fields as it
    does, but with one dict copy and update: the generated ``__init__`` of a
    frozen dataclass pays one ``object.__setattr__`` per field (24 for a Run).
    For the values made once per occurrence or schedule on the tick path."""
    shape = _SHAPES.get(cls)
    if shape is None:
        every = fields(cls)  # type: ignore[arg-type]
        shape = _SHAPES[cls] = (
            {f.name: MISSING if f.default is MISSING else f.default for f in every},
            frozenset(f.name for f in every if f.default is MISSING),
            getattr(cls, "__post_init__", None),
        )
    template, required, post_init = shape
    attrs = template.copy()
    attrs.update(values)
    if len(attrs) != len(template) or not values.keys() >= required:
        unknown = sorted(set(values) - set(template))
        missing = sorted(required - set(values))
        raise TypeError(f"{cls.__name__}: unknown fields {unknown}, missing fields {missing}")
    value = object.__new__(cls)
    object.__setattr__(value, "__dict__", attrs)
    if post_init is not None:
        post_init(value)
    return value


def new_occurrence(
    schedule_id: str,
    version: int,
    slot: Slot,
    *,
    bucket: int,
    shard: int,
    materialized_at: datetime,
    kind: RunKind = RunKind.SCHEDULED,
    admitted_at: datetime | None = None,
) -> Run:
    """A freshly materialized occurrence for ``slot``: waiting for admission,
    or, with ``admitted_at``, admitted by the write that materializes it (its
    intent not sent yet)."""
    mold = OccurrenceMold(
        slot, bucket=bucket, materialized_at=materialized_at, kind=kind, admitted_at=admitted_at
    )
    return mold.make(schedule_id, version, shard)


class OccurrenceMold:
    """The record of one slot as it is first written, whichever schedule fills
    it: waiting, admitted at ``admitted_at``, or ``closed`` by the overdue
    policy (its status and reason) at ``materialized_at``.

    Everyone due at 09:00 shares the slot, so the planner makes a mold once per
    slot per pass and stamps each schedule's record from it: a copy of one dict
    and five fields, instead of a record built field by field."""

    __slots__ = ("_attrs", "_id_tail", "_key_tail")

    def __init__(
        self,
        slot: Slot,
        *,
        bucket: int,
        materialized_at: datetime,
        kind: RunKind = RunKind.SCHEDULED,
        admitted_at: datetime | None = None,
        closed: tuple[RunStatus, str] | None = None,
    ) -> None:
        # Run's checks, once per mold: an aware instant (kept in UTC), a naive
        # wall time.
        if slot.scheduled_at.tzinfo is None:
            raise ValueError("scheduled_at must be aware")
        if slot.wall.tzinfo is not None:
            raise ValueError("wall is a naive wall time")
        if admitted_at is not None and closed is not None:
            raise ValueError("an occurrence closed by the overdue policy is not admitted")
        attrs = _FRESH.copy()
        attrs.update(
            scheduled_at=slot.scheduled_at.astimezone(UTC),
            wall=slot.wall,
            fold=slot.fold,
            bucket=bucket,
            kind=kind,
            materialized_at=materialized_at,
        )
        if admitted_at is not None:
            # Admitted by the write that stores it: pending until its intent is sent.
            attrs.update(status=RunStatus.ADMITTED, admitted_at=admitted_at)
        elif closed is not None:
            status, reason = closed
            attrs.update(status=status, reason=reason, finished_at=materialized_at, pending=False)
        self._attrs = attrs
        self._id_tail = occurrence_id_tail(slot.scheduled_at)
        self._key_tail = business_key_tail(slot.wall, slot.fold)

    def make(self, schedule_id: str, version: int, shard: int) -> Run:
        """The record of this slot for one schedule's version, in its shard."""
        attrs = self._attrs.copy()
        # occurrence_id() and business_key(), from the parts every schedule shares.
        attrs["occurrence_id"] = f"{schedule_id}.v{version}{self._id_tail}"
        attrs["business_key"] = schedule_id + self._key_tail
        attrs["schedule_id"] = schedule_id
        attrs["version"] = version
        attrs["shard"] = shard
        run = object.__new__(Run)
        object.__setattr__(run, "__dict__", attrs)
        return run


# A fresh occurrence's fields in Run's order: its defaults, and None for the
# fields a mold or ``make`` sets.
_FRESH: Final[dict[str, Any]] = {
    f.name: None if f.default is MISSING else f.default for f in fields(Run)
}


# What a run shows while it is planned (see ``shown_status``); never stored.
PLANNED: Final = "planned"


def is_planned(run: Run, now: datetime) -> bool:
    """Planned: created ahead of its instant, which has not come yet, and not
    started: waiting for dispatch, or admitted with its intent queued to
    become visible at its instant. What happens to it is still open (the
    start decision takes it when it comes due)."""
    return (
        run.scheduled_at > now
        and run.attempts == 0
        and run.status in (RunStatus.SCHEDULED, RunStatus.ADMITTED)
    )


def shown_status(run: Run, now: datetime) -> str:
    """The status a run is shown with: ``planned`` while it is planned (its
    stored status, ``scheduled`` or ``admitted``, says how the store holds
    it), else its stored status."""
    return PLANNED if is_planned(run, now) else run.status.value


def trigger_business_key(schedule_id: str, at: datetime) -> str:
    """A trigger fills no slot of the spec; its key is its own instant."""
    return f"{schedule_id}#trigger#{at.astimezone(UTC).isoformat()}"


def summary_business_key(schedule_id: str, first: Slot) -> str:
    return f"{schedule_id}#summary#{first.wall.isoformat()}#{first.fold}"


# How the reason of a pause's summary begins ("paused: 60 slots skipped, ...").
_PAUSE_SUMMARY: Final = f"{Reason.PAUSED}: "


def pause_summary_text(count: int, *, at_least: bool) -> str:
    """What a pause's summary says of the slots it counts (its range follows)."""
    noun = "slot" if count == 1 else "slots"
    return f"{_PAUSE_SUMMARY}{'at least ' if at_least else ''}{count} {noun} skipped"


def paused_until(run: Run) -> datetime | None:
    """Up to when ``run`` accounts for slots a pause kept from running: a slot
    skipped (paused), its instant; a pause's summary, when it was written (the
    resume, or an edit while paused); any other run, None."""
    if run.status is not RunStatus.SKIPPED or run.reason is None:
        return None
    if run.reason == Reason.PAUSED:
        return run.scheduled_at
    if run.kind is RunKind.SUMMARY and run.reason.startswith(_PAUSE_SUMMARY):
        return run.finished_at
    return None


class PendingOccurrence(NamedTuple):
    """What dispatch reads of a pending record: enough to judge it by its
    version's overdue policy, admit it, and send its intent. The whole record
    is a ``get_run`` away; dispatch reads every due occurrence, and needs no
    more of it."""

    occurrence_id: str
    schedule_id: str
    version: int
    scheduled_at: datetime  # aware, UTC
    kind: RunKind
    status: RunStatus

    @classmethod
    def of(cls, run: Run) -> PendingOccurrence:
        return cls(
            run.occurrence_id, run.schedule_id, run.version, run.scheduled_at, run.kind, run.status
        )


@dataclass(frozen=True)
class DeliveryIntent:
    """The message that asks a worker to run an occurrence (at-least-once).

    ``attempt`` is the number of attempts already made when it was sent: 0
    from the dispatcher.
    """

    occurrence_id: str
    schedule_id: str
    version: int
    scheduled_at: datetime
    attempt: int = 0

    def __post_init__(self) -> None:
        if self.scheduled_at.tzinfo is None:
            raise ValueError("scheduled_at must be aware")

    @classmethod
    def for_run(cls, run: Run | PendingOccurrence) -> DeliveryIntent:
        # One per admitted occurrence: a run's scheduled_at is already checked
        # aware, so this skips the frozen __init__ (one __setattr__ per field).
        intent = object.__new__(cls)
        object.__setattr__(
            intent,
            "__dict__",
            {
                "occurrence_id": run.occurrence_id,
                "schedule_id": run.schedule_id,
                "version": run.version,
                "scheduled_at": run.scheduled_at,
                "attempt": 0,
            },
        )
        return intent

    def to_dict(self) -> dict[str, Any]:
        return {
            "occurrence_id": self.occurrence_id,
            "schedule_id": self.schedule_id,
            "version": self.version,
            "scheduled_at": utc_text(self.scheduled_at),
            "attempt": self.attempt,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeliveryIntent:
        return cls(
            occurrence_id=str(data["occurrence_id"]),
            schedule_id=str(data["schedule_id"]),
            version=int(data["version"]),
            scheduled_at=datetime.fromisoformat(str(data["scheduled_at"])).astimezone(UTC),
            attempt=int(data.get("attempt", 0)),
        )


@dataclass(frozen=True)
class Verdict:
    """What the overdue policy decides for one due occurrence."""

    status: RunStatus  # ADMITTED, SKIPPED or EXPIRED
    reason: str | None = None
