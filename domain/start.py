"""The start decision: whether a run starts, decided when it would start.

One function, ``decide_start``, says what becomes of a run at the moment it
would start, from the schedule as it is now, the run's slot and the time.
Every path that can start a run asks it: the worker before a run's first
attempt (a slot planned ahead whose intent has just become visible, a slot
found late after an outage, a trigger, a backfill, a user's retry), and the
tick when it stores a slot that is already due, or admits a waiting one. So
an overdue policy means the same whether a slot was planned ahead or found
late.

The rules, in the order they are checked:

1. The schedule is gone or deleted: the run is ``cancelled`` (schedule
   deleted). Every path.
2. A run a user retried runs: the retry was that user's decision, taken when
   the schedule was read for it (the API refuses a deleted schedule).
3. The schedule is paused: ``skipped`` (paused). Quarantined: ``skipped``
   (quarantined). Every other path: a pause stops new starts at once.
4. A trigger or a backfill is a run a user asked for, not a slot of the
   spec: it is never superseded (a later slot does not replace it), and
   under ``expire`` it is ``expired`` when it starts more than
   ``catchup_window`` after it was asked for (a backfill's slots are past
   by design: its lateness counts from the request, not from its instant).
5. A slot of the spec that is not due yet is left to start (it is planned,
   and judged again when it comes due).
6. A due slot is judged by its version's overdue policy: under
   ``latest_only`` it is ``skipped`` (superseded) when the next slot of its
   version's spec is due too (``next_at <= now``), so after an outage only
   the latest slot runs; under ``expire`` it is ``expired`` when it is late
   by more than ``catchup_window``; ``catch_up_all`` runs every slot.

A slot's spec ends with its ``end_at``: the last slot has no next one and is
never superseded. An edit does not stop a slot already planned: it keeps the
version it was made under and runs with that version's parameters
(promise 5; docs/runs.md, "The start decision").

The decision is pure; the caller reads what it needs (the schedule's state,
strongly, and the run's version) and writes the outcome by a conditional
write, so a decision made on a state that changed meanwhile is refused.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Final, NamedTuple

from domain.run import Reason, RunKind, RunStatus, Verdict
from domain.schedule import QUARANTINED, Overdue, Schedule, SchedulePolicy
from domain.spec import DstPolicy, ScheduleSpec, slots_after


class ScheduleNow(NamedTuple):
    """What the decision reads of a schedule as it is now (strongly)."""

    version: int  # the current version
    paused: bool
    deleted: bool
    quarantined: bool = False

    @classmethod
    def of(cls, schedule: Schedule | None) -> ScheduleNow | None:
        if schedule is None:
            return None
        return cls(
            schedule.version,
            schedule.state.paused,
            schedule.deleted,
            schedule.quarantine is not None,
        )


# The state a conditional write checks for the caller that decides before it
# writes (the tick stores or admits a slot only while its schedule is active).
ACTIVE: Final = ScheduleNow(version=0, paused=False, deleted=False, quarantined=False)

START: Final = Verdict(RunStatus.ADMITTED)  # one value, not one per run


class Slot(NamedTuple):
    """The run being decided: where it came from and the instant it is for."""

    kind: RunKind
    scheduled_at: datetime
    retried: bool = False  # admitted again on a user's request
    # When a user asked for a trigger or a backfill (its record's
    # materialized_at); None: not known to the caller, not judged late.
    asked_at: datetime | None = None


class _Unknown(enum.Enum):
    UNKNOWN = "unknown"


UNKNOWN: Final = _Unknown.UNKNOWN


def decide_start(
    slot: Slot,
    schedule: ScheduleNow | None,
    spec: ScheduleSpec,
    policy: SchedulePolicy,
    now: datetime,
    *,
    next_at: datetime | _Unknown | None = UNKNOWN,
) -> Verdict:
    """Start (``Verdict.status`` is ``admitted``), skip, cancel or expire the
    run of ``slot``, whose version has ``spec`` and ``policy``, at ``now``.

    ``next_at``: the instant of the slot after this one in that spec (None:
    there is none), when the caller knows it (the planner has it at hand);
    by default the decision computes it, when ``latest_only`` needs it."""
    standing = decide_standing(slot, schedule)
    if standing is not None:
        return standing
    if slot.retried:
        return START
    if slot.kind is not RunKind.SCHEDULED:
        if slot.asked_at is None or policy.overdue is not Overdue.EXPIRE:
            return START
        return _expire(policy, slot.asked_at, now)
    if slot.scheduled_at > now:
        return START
    if policy.overdue is Overdue.LATEST_ONLY:
        if next_at is UNKNOWN:
            next_at = next_slot_at(spec, policy.dst, slot.scheduled_at)
        if next_at is not None and next_at <= now:
            return Verdict(RunStatus.SKIPPED, Reason.SUPERSEDED)
    elif policy.overdue is Overdue.EXPIRE:
        return _expire(policy, slot.scheduled_at, now)
    return START


def decide_standing(slot: Slot, schedule: ScheduleNow | None) -> Verdict | None:
    """Rules 1 to 3, which need only the schedule's state: the run is cancelled
    (its schedule gone or deleted) or skipped (paused, quarantined; not a
    retried run), or None when the schedule lets it start."""
    if schedule is None or schedule.deleted:
        return Verdict(RunStatus.CANCELLED, Reason.DELETED)
    if slot.retried:
        return None
    if schedule.paused:
        return Verdict(RunStatus.SKIPPED, Reason.PAUSED)
    if schedule.quarantined:
        return Verdict(RunStatus.SKIPPED, QUARANTINED)
    return None


def _expire(policy: SchedulePolicy, due_at: datetime, now: datetime) -> Verdict:
    """``expire``: expired when later than ``catchup_window`` after ``due_at``."""
    assert policy.catchup_window is not None
    late = now - due_at
    if late > policy.catchup_window:
        return Verdict(
            RunStatus.EXPIRED,
            Reason.expired(late.total_seconds(), policy.catchup_window.total_seconds()),
        )
    return START


def next_slot_at(spec: ScheduleSpec, dst: DstPolicy, scheduled_at: datetime) -> datetime | None:
    """The instant of the slot after ``scheduled_at`` in ``spec`` (None: the
    spec ends there). A spec whose next slot cannot be computed
    supersedes nothing (the tick quarantines such a schedule)."""
    try:
        following = next(slots_after(spec, dst, scheduled_at), None)
    except Exception:  # any error: no later slot is known
        return None
    return None if following is None else following.scheduled_at
