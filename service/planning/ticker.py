"""One pass end to end (``Ticker``), and one schedule planned at an API call (``PlanNow``).

A pass begins a ``PassState``, plans, dispatches, plans early with the time
its budget leaves (``early``), beats the tick's heartbeat and returns its
report; the state is dropped with it. The tick handler loops over passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Final

from domain.run import Run
from service.planning.config import TickConfig
from service.planning.dispatch import Dispatcher
from service.planning.early import PlanEarly
from service.planning.outbox import DirectAdmission, send_intents
from service.planning.pass_state import DispatchReport, PassState, TickReport
from service.planning.planner import Planner
from service.ports import Clock, DeliveryQueue, DueSchedule, Heartbeat, Store

TICK_COMPONENT: Final = "tick"
# How long past its plan budget (or its plan, when a page ran past the budget) a
# pass may go on dispatching (a backlog after an outage is admitted a batch at a
# time): the tick's timeout is the budget plus 20 s, and a pass cut off there ends
# without releasing its leases or starting its surges. What is left stays
# pending for the next pass.
DISPATCH_OVERRUN: Final = timedelta(seconds=10)


class Ticker:
    """Plan and dispatch, as one pass; the tick handler loops over passes."""

    def __init__(
        self,
        store: Store,
        queue: DeliveryQueue,
        clock: Clock,
        config: TickConfig | None = None,
        *,
        owner: str,
        quiet_until: Callable[[datetime, datetime], datetime] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.config = config or TickConfig()
        self.planner = Planner(store, clock, self.config)
        self.dispatcher = Dispatcher(store, queue, clock, self.config, owner)
        self.early = PlanEarly(self.planner, quiet_until=quiet_until)

    @property
    def owner(self) -> str:
        return self.dispatcher.owner

    def tick_once(self) -> TickReport:
        config = self.config
        began = self.clock.now()
        state = PassState(began, self.dispatcher.direct)
        plan = self.planner.plan(state)
        budget = config.plan_budget
        if budget is not None:
            # At least the overrun after the plan, which may end past the budget by a page.
            state.deadline = max(began + budget, self.clock.now()) + DISPATCH_OVERRUN
        dispatch = self.dispatcher.dispatch(state)
        if not plan.out_of_time:
            self.early.plan(state)
        at = self.clock.now()
        self.store.leases.beat(
            Heartbeat(
                TICK_COMPONENT,
                at,
                {
                    "owner": self.owner,
                    "shards": dispatch.shards,
                    "materialized": plan.materialized,
                    "admitted": dispatch.admitted,
                },
            )
        )
        return state.report(at)

    def release(self) -> None:
        """Give up the shards: the process stops ticking."""
        self.dispatcher.release_all()

    def ticks(self) -> Iterator[TickReport]:
        while True:
            yield self.tick_once()


class PlanNow:
    """What the API does after a create, edit or resume whose next slot falls
    within the horizon, and after a trigger: the tick that comes once a
    minute would be late for them, so the call plans the schedule itself, as
    a pass would (its slots within the horizon admitted and queued ahead),
    and sends a trigger's intent at once.

    No lease is taken: one schedule's slots overtake no backlog of its own
    (a backlog is what dispatch admits oldest first), and the
    materialization's condition (version, ``next_due``, active) makes this
    and a concurrent tick plan each slot once between them. A failure here
    leaves the work to the tick: an occurrence admitted but not sent stays
    pending for dispatch, a slot not planned is planned by the next pass."""

    def __init__(
        self, store: Store, queue: DeliveryQueue, clock: Clock, config: TickConfig
    ) -> None:
        self.store = store
        self.queue = queue
        self.clock = clock
        self.config = config
        self.planner = Planner(store, clock, config)
        self.horizon = config.lookahead
        limit = config.admit_limit
        self.direct = DirectAdmission(store, queue, lambda _shard: limit)

    def plan(self, schedule: DueSchedule) -> bool:
        """Plan one schedule's slots within the horizon now. True when
        anything was written (the schedule's ``next_due`` moved)."""
        state = PassState(self.clock.now(), self.direct)
        plan = self.planner.plan_schedules([schedule], state)
        return bool(plan.stored or state.dispatch.admitted)

    def send(self, runs: Sequence[Run]) -> DispatchReport:
        """Send the intents of records just stored admitted (a trigger)."""
        state = PassState(self.clock.now())
        send_intents(self.store, self.queue, runs, state.began, state)
        return state.dispatch
