"""Planning: store the slots of the schedules that are due within the lookahead.

A pass reads the schedules whose next slot falls within its lookahead
(``Store.due``), a page at a time, and for each one writes its slots up to the
fill (service/planning/due.py says which, and as what) with the advance of its
``next_due``, in one conditional write per schedule (version, ``next_due``,
active; batched by the store). The order of one page is **store, send,
outbox, advance**:

1. each schedule's slots are computed (a schedule whose slots cannot be is
   quarantined; the page goes on);
2. the page is written (``Store.materialize``), which returns the records it
   admitted as it stored them, each in the outbox or with its schedule's
   advance held;
3. their intents are sent, the ones sent out of the outbox marked sent and
   the ones that failed put in it (``DirectAdmission.send``);
4. the store advances the schedules it held (``Store.advance``), and what was
   admitted is counted.

A crash before 4 leaves every admitted record in the outbox or its schedule
where it was, so the slot is sent again by dispatch or by the next pass that
plans it: an intent may be sent twice, a run is never lost.

A pass stops at its ``plan_budget`` (what is left is selected by the next
pass) and tells the store how far it read (``Store.planned_through``). With
time left after dispatch, it plans early (service/planning/early.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from domain.partition import shard_of
from domain.run import Run
from domain.schedule import QuarantineComponent
from service.planning.config import TickConfig
from service.planning.due import DueSlots, PlannedSlots, Unplannable
from service.planning.pass_state import PassState, PlanReport
from service.ports import (
    Clock,
    DueSchedule,
    Materialization,
    PlanSession,
    Store,
)
from service.quarantine import quarantine_schedule

# Builds a named tuple from its fields in order, at less than half the cost of
# its generated __new__, for the values made once per schedule planned.
_new_tuple: Final = tuple.__new__


class Planner:
    def __init__(self, store: Store, clock: Clock, config: TickConfig) -> None:
        self.store = store
        self.clock = clock
        self.config = config
        self._shards = config.partitioning.shards

    def plan(self, state: PassState) -> PlanReport:
        """Store what falls within the lookahead, into the pass's plan report;
        with the pass's direct admission, admit what may be admitted as stored."""
        report = state.plan
        now = self.clock.now()
        # Selected and filled by the lookahead; the store's read cursor
        # (``until``, ``planned_through``) is this horizon: a chain entry past
        # it is read by a later pass.
        horizon = now + self.config.lookahead
        slots = DueSlots(self.config, now, horizon)
        token: str | None = None
        through: datetime | None = None
        stopped: str | None = None  # the page token a pass out of budget stopped before
        budget = self.config.plan_budget
        session = self._session(state)
        try:
            while report.stored < self.config.max_planned_per_pass:
                page = self.store.schedules.due(
                    horizon, self.config.page_size, token, session=session
                )
                self._plan_page(page.items, slots, state, until=horizon)
                token = page.next_token
                if token is None:
                    through = horizon  # every page read and planned
                    break
                if budget is not None and self.clock.now() - now >= budget:
                    report.out_of_time = True  # the next pass plans the rest
                    stopped = token
                    break
            else:
                stopped = token  # at max_planned_per_pass: the next pass goes on from here
        finally:
            self.store.schedules.planned_through(through, stopped, session=session)
        return report

    def plan_schedules(self, schedules: Sequence[DueSchedule], state: PassState) -> PlanReport:
        """Plan these schedules now, as a pass would (the API, after a create,
        edit or resume whose next slot falls within the lookahead): the ones
        whose ``next_due`` is beyond it are left to the tick. A schedule
        selected is filled up to the lookahead, as a pass fills it."""
        now = self.clock.now()
        horizon = now + self.config.lookahead
        due = [s for s in schedules if s.next_due <= horizon]
        if due:
            self._plan_page(due, DueSlots(self.config, now, horizon), state)
        return state.plan

    def _session(self, state: PassState) -> PlanSession:
        """The store's memory of this pass's planning, asked once a pass."""
        if state.session is None:
            state.session = self.store.schedules.plan_session()
        return state.session

    def _plan_page(
        self,
        schedules: Sequence[DueSchedule],
        slots: DueSlots,
        state: PassState,
        *,
        until: datetime | None = None,
    ) -> None:
        """Plan one page, in the order store, send, outbox, advance (see the
        module's docstring); ``until``: the pass's selection horizon, when the page is one
        of ``due(until)`` (see ``Store.materialize``)."""
        report, direct, now = state.plan, state.direct, slots.now
        report.schedules += len(schedules)
        planned: list[tuple[Materialization, PlannedSlots]] = []
        for schedule in schedules:
            # One schedule whose slots cannot be computed is quarantined;
            # the page, and the pass, carry on with the others.
            try:
                made = self._materialization(schedule, slots, state)
            except Unplannable as unplannable:
                if quarantine_schedule(
                    self.store,
                    schedule.schedule_id,
                    schedule.version,
                    unplannable.error,
                    QuarantineComponent.PLAN,
                    now,
                ):
                    report.quarantined.append(schedule.schedule_id)
                continue
            if made is not None:
                planned.append(made)
        if not planned:
            return
        stored = self.store.schedules.materialize(
            [p[0] for p in planned], now, until=until, session=state.session
        )
        sent: set[str] = set()
        if stored.to_send:
            assert direct is not None  # nothing is admitted without it
            sent = direct.send(state, stored.to_send, now)
        outcomes = self.store.schedules.advance(stored, sent)
        skipped = expired = waiting = 0
        for (_, planned_slots), outcome in zip(planned, outcomes, strict=True):
            if not outcome.applied:
                report.conflicts += 1
            skipped += planned_slots.skipped
            expired += planned_slots.expired
            waiting += planned_slots.waiting
        report.skipped += skipped
        report.expired += expired
        report.materialized += waiting
        if stored.to_send and direct is not None:
            inserted = {i for outcome in outcomes for i in outcome.inserted}
            admitted = [r for r in stored.to_send if r.occurrence_id in inserted]
            if admitted:
                direct.count(state, admitted, now)

    def _materialization(
        self, schedule: DueSchedule, slots: DueSlots, state: PassState
    ) -> tuple[Materialization, PlannedSlots] | None:
        """What to write for one schedule, and the slots it was planned from."""
        schedule_id, number, next_due, _, _ = schedule
        planned = slots.of(schedule)
        if not planned.slots:
            return None
        direct = state.direct
        shard = shard_of(schedule_id, self._shards)
        room = 0
        if direct is not None and planned.direct:
            room = direct.room(state, shard)
        runs: list[Run] = []
        taken = 0
        for admitted, mold in planned.slots:
            if admitted is not None and taken < room:
                runs.append(admitted.make(schedule_id, number, shard))
                taken += 1
            else:
                runs.append(mold.make(schedule_id, number, shard))
        if taken:
            assert direct is not None
            direct.take(state, shard, taken)
        following = planned.following
        # Materialization(...) without the named tuple's __new__, in field order.
        item: Materialization = _new_tuple(
            Materialization,
            (
                schedule_id,
                number,
                next_due,
                None if following is None else following.scheduled_at,
                planned.last_at,
                tuple(runs),
            ),
        )
        return item, planned
