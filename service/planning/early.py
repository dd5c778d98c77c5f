"""Planning early: a pass with time left in its budget plans beyond its lookahead.

An instant at which thousands of slots are due (one-offs created minutes
ahead, a daily 09:00 across thousands of schedules) is more than the one pass
whose lookahead it enters can store and queue within its budget; the rest
would start late. So after its plan and dispatch, with budget left, a pass
plans up to the early reach (``TickConfig.reach``): **seeds**
(``Store.due_ahead``: next slots a create, edit or resume set and no pass
planned), then **the chain** up to the latest crowd there
(``Store.chain_crowd``: an instant at least ``crowd_min`` schedules are next
due at). A schedule planned early gets its slots up to the instant planned
(a page of seeds' last, the crowd), no further, so an edit of a frequent
schedule still lands within the lookahead and its next slot. Off with
``TickConfig.plan_early`` (docs/decisions.md, "Planning early stands; the
plan block goes").
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from service.planning.due import DueSlots
from service.planning.pass_state import PassState
from service.planning.planner import Planner


class PlanEarly:
    """What a pass does with the time its own plan and dispatch left."""

    def __init__(
        self,
        planner: Planner,
        *,
        quiet_until: Callable[[datetime, datetime], datetime] | None = None,
    ) -> None:
        self.planner = planner
        self.store = planner.store
        self.clock = planner.clock
        self.config = planner.config
        # Given now and a deadline, the moment before which planning early must
        # end (the first surge the invocation has to start after its pass);
        # None: only the plan budget bounds it.
        self.quiet_until = quiet_until

    def plan(self, state: PassState) -> None:
        """Plan early, for what is left of the pass's budget, and not past the
        first surge it must start after."""
        budget = self.config.plan_budget
        if budget is None or not self.config.plans_early:
            return
        end = state.began + budget

        def deadline() -> datetime:
            if self.quiet_until is None:
                return end
            return min(end, self.quiet_until(self.clock.now(), end))

        if self.clock.now() < end:
            self.plan_until(state, deadline)

    def plan_until(self, state: PassState, deadline: Callable[[], datetime]) -> None:
        """Seeds, then the chain up to its latest crowd, beyond the lookahead and
        within the early reach, until ``deadline()`` (asked once, when there is
        something to plan)."""
        report, config = state.plan, self.config
        now = self.clock.now()
        after, reach = now + config.lookahead, now + config.reach
        asked: list[datetime] = []

        def time_left() -> bool:
            if not asked:
                asked.append(deadline())
            return self.clock.now() < asked[0] and report.stored < config.max_planned_per_pass

        session = self.planner._session(state)
        page = self.store.schedules.due_ahead(after, reach, config.page_size, session=session)
        if page.items:
            try:
                while time_left():
                    report.early += len(page.items)
                    last = max(s.next_due for s in page.items)
                    slots = DueSlots(config, now, last)
                    self.planner._plan_page(page.items, slots, state, until=after)
                    if page.next_token is None:
                        break
                    page = self.store.schedules.due_ahead(
                        after, reach, config.page_size, page.next_token, session=session
                    )
            finally:
                # What it chained goes on pages; the cursor stays.
                self.store.schedules.planned_through(None, session=session)
        if asked and not time_left():
            return
        crowd = self.store.schedules.chain_crowd(after, reach, config.crowd_min, session=session)
        if crowd is not None and time_left():
            self._plan_chain(crowd, DueSlots(config, now, crowd), state, time_left)

    def _plan_chain(
        self, crowd: datetime, slots: DueSlots, state: PassState, time_left: Callable[[], bool]
    ) -> None:
        """Read the chain ahead of the lookahead, up to ``crowd``, as a pass reads
        it up to its horizon, each schedule's slots up to ``crowd``: the store's
        cursor moves to ``crowd`` once every page is planned, or keeps the place
        of a pass out of time."""
        token: str | None = None
        through: datetime | None = None
        stopped: str | None = None
        session = self.planner._session(state)
        try:
            while time_left():
                page = self.store.schedules.due(
                    crowd, self.config.page_size, token, session=session
                )
                state.plan.early += len(page.items)
                self.planner._plan_page(page.items, slots, state, until=crowd)
                token = page.next_token
                if token is None:
                    through = crowd
                    break
            else:
                stopped = token
        finally:
            self.store.schedules.planned_through(through, stopped, session=session)
