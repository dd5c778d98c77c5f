"""The start decision (domain/start.py) as the tick applies it: decided before
the conditional write that checks what it assumed.

The planner stores a due slot as the decision says, and the dispatcher admits a
waiting record, by writes that hold only while the schedule is active at the
slot's version (``Store.materialize``, ``Store.admit``). So both decide here on
an active schedule (``before_write``) and leave the rest to the write; a record
whose admission the store refused is decided again on the schedule as read then
(``after_refusal``).
"""

from __future__ import annotations

from datetime import datetime

from domain.run import RunKind, RunStatus, Verdict
from domain.schedule import SchedulePolicy
from domain.spec import ScheduleSpec
from domain.start import ACTIVE, UNKNOWN, ScheduleNow, _Unknown, decide_standing, decide_start
from domain.start import Slot as StartSlot
from service.ports import Closure, Store


def before_write(
    kind: RunKind,
    scheduled_at: datetime,
    spec: ScheduleSpec,
    policy: SchedulePolicy,
    now: datetime,
    *,
    next_at: datetime | _Unknown | None = UNKNOWN,
) -> Verdict:
    """The decision for a slot the tick is about to write: on its schedule as
    the write requires it (active, at the slot's version)."""
    slot = StartSlot(kind, scheduled_at)
    return decide_start(slot, ACTIVE, spec, policy, now, next_at=next_at)


def closure(occurrence_id: str, verdict: Verdict) -> Closure | None:
    """How a waiting record ends as ``verdict`` says; None when it is admitted."""
    if verdict.status is RunStatus.ADMITTED:
        return None
    assert verdict.reason is not None
    return Closure(occurrence_id, verdict.status, verdict.reason)


def after_refusal(store: Store, occurrence_id: str, now: datetime) -> Closure | None:
    """A waiting record the store would not admit: admitted by someone else
    (None), or its schedule is paused, deleted or quarantined (closed as the
    start decision says on the schedule read now)."""
    run = store.records.get_run(occurrence_id)
    if run is None or run.status is not RunStatus.SCHEDULED:
        return None
    slot = StartSlot(run.kind, run.scheduled_at)
    state = ScheduleNow.of(store.schedules.get(run.schedule_id))
    version = store.schedules.get_version(run.schedule_id, run.version)
    if version is None:  # gone with its schedule, or never runnable: its state alone decides
        verdict = decide_standing(slot, state)
        return None if verdict is None else closure(occurrence_id, verdict)
    return closure(occurrence_id, decide_start(slot, state, version.spec, version.policy, now))
