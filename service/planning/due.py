"""What a planning step stores for a schedule: its slots up to the fill, each
placed in its bucket, judged if already due, and marked if it may be admitted
as it is stored.

A slot is stored as one of three things:

- **closed**, when it is already due and the start decision does not admit it
  (superseded, expired): recorded at once, never sent;
- **admitted**, when it may be admitted by the write that stores it: it is due
  and the start decision admits it, or it is not due yet but falls within the
  pass's ``ahead`` reach (admitted as of its instant, its intent held back by
  the queue until then);
- **waiting**, otherwise (beyond the queue's reach, or its shard had no room
  for it this pass: ``DirectAdmission.room``): dispatch admits it when a pass
  meets it within reach.

A step (one pass's plan, its planning early, one API call's ``PlanNow``)
computes each slot list once and shares it between every schedule with the
same spec, policy and next slot (everyone at 09:00).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from domain.run import OccurrenceMold, RunKind, RunStatus
from domain.schedule import SchedulePolicy
from domain.spec import Slot, slots_after
from service.planning import judge
from service.planning.config import TickConfig
from service.ports import DueSchedule

_EPSILON: Final = timedelta(microseconds=1)
# Slot lists kept per step, at most: enough for the distinct specs of a page.
_MEMO_SIZE: Final = 1024


@dataclass(frozen=True)
class PlannedSlots:
    """The slots from one ``next_due`` up to the fill of one spec under one
    policy: per slot, the mold of its record admitted (None: it may not be
    admitted as it is stored) and the mold of it as the policy leaves it
    (waiting, or closed when already overdue)."""

    slots: tuple[tuple[OccurrenceMold | None, OccurrenceMold], ...]
    last_at: datetime | None  # the last slot's instant
    following: Slot | None
    direct: bool  # whether any slot may be admitted as it is stored
    skipped: int
    expired: int
    waiting: int  # neither skipped nor expired: admitted, or waiting for admission


class Unplannable(Exception):
    """The slots of one schedule could not be computed (``error`` says why)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class DueSlots:
    """The slots of one planning step, at its ``now`` and up to its ``fill``."""

    def __init__(self, config: TickConfig, now: datetime, fill: datetime) -> None:
        self.config = config
        self.now = now
        self.fill = fill
        self.ahead_until = now + config.ahead  # not due, due by it: admitted ahead
        # Found by the ids of spec and policy (cheap; the SQLite store hands out one
        # object per stored text), else by their value. An entry holds the objects
        # whose ids key it, so that those ids cannot be reused during the step.
        self._by_id: dict[tuple[int, int, datetime], tuple[object, object, PlannedSlots]] = {}
        self._by_value: dict[tuple[object, SchedulePolicy, datetime], PlannedSlots] = {}

    def of(self, schedule: DueSchedule) -> PlannedSlots:
        """The schedule's slots; ``Unplannable`` when they cannot be computed."""
        _, _, next_due, spec, policy = schedule
        key = (id(spec), id(policy), next_due)
        held = self._by_id.get(key)
        if held is not None:
            return held[2]
        by_value = (spec, policy, next_due)
        found = self._by_value.get(by_value)
        if found is None:
            try:
                found = self._compute(schedule)
            except Exception as error:  # any error sets that schedule aside
                raise Unplannable(error) from error
            if len(self._by_value) < _MEMO_SIZE:
                self._by_value[by_value] = found
        if len(self._by_id) < _MEMO_SIZE:
            self._by_id[key] = (spec, policy, found)
        return found

    def _compute(self, schedule: DueSchedule) -> PlannedSlots:
        """The schedule's slots from next_due up to the fill (bounded), and the
        one after; each placed, judged if already due, and marked if it may be
        admitted as it is stored."""
        policy, now, config = schedule.policy, self.now, self.config
        parts = config.partitioning
        taken: list[Slot] = []
        following: Slot | None = None
        for slot in slots_after(schedule.spec, policy.dst, schedule.next_due - _EPSILON):
            if slot.scheduled_at > self.fill or len(taken) >= config.max_slots_per_schedule:
                following = slot
                break
            taken.append(slot)
        planned: list[tuple[OccurrenceMold | None, OccurrenceMold]] = []
        skipped = expired = 0
        for i, slot in enumerate(taken):
            bucket = parts.placement(slot.scheduled_at, now)
            closed: tuple[RunStatus, str] | None = None
            admitted: OccurrenceMold | None = None
            if slot.scheduled_at <= now:
                # Stored due: the start decision, on the state the write checks.
                after = taken[i + 1] if i + 1 < len(taken) else following
                verdict = judge.before_write(
                    RunKind.SCHEDULED,
                    slot.scheduled_at,
                    schedule.spec,
                    policy,
                    now,
                    next_at=None if after is None else after.scheduled_at,
                )
                if verdict.status is not RunStatus.ADMITTED:
                    assert verdict.reason is not None
                    closed = (verdict.status, verdict.reason)
                    if verdict.status is RunStatus.SKIPPED:
                        skipped += 1
                    else:
                        expired += 1
                else:
                    admitted = OccurrenceMold(
                        slot, bucket=bucket, materialized_at=now, admitted_at=now
                    )
            elif slot.scheduled_at <= self.ahead_until:
                # Not due yet, and due before the next pass (plus a margin): admitted
                # as of its instant, when the queue releases its intent.
                at = slot.scheduled_at
                admitted = OccurrenceMold(slot, bucket=bucket, materialized_at=now, admitted_at=at)
            mold = OccurrenceMold(slot, bucket=bucket, materialized_at=now, closed=closed)
            planned.append((admitted, mold))
        return PlannedSlots(
            tuple(planned),
            taken[-1].scheduled_at if taken else None,
            following,
            any(p[0] is not None for p in planned),
            skipped,
            expired,
            len(planned) - skipped - expired,
        )
