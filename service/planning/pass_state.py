"""The state of one pass: made when the pass begins, dropped when it ends.

Everything a pass learns or counts lives here, not on the long-lived planner,
dispatcher, so one pass cannot leak into the next: its reports,
the deadline of its dispatch, the room each shard has left for direct
admission, what it admitted directly per shard, and which intents it sent.
The store's memory of the pass's planning (``PlanSession``) is here too.
What outlives a pass is the dispatcher's leases (service/planning/dispatch.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from domain.run import Run
from service.ports import PlanSession


@dataclass
class PlanReport:
    schedules: int = 0
    materialized: int = 0
    skipped: int = 0
    expired: int = 0
    conflicts: int = 0
    quarantined: list[str] = field(default_factory=list)  # schedule ids set aside
    out_of_time: bool = False  # stopped at plan_budget with pages left
    early: int = 0  # seeds and crowds beyond the lookahead planned with the time to spare

    @property
    def stored(self) -> int:
        """Slots this pass stored, whatever became of them."""
        return self.materialized + self.skipped + self.expired


@dataclass
class DispatchReport:
    shards: list[int] = field(default_factory=list)
    admitted: int = 0
    sent: int = 0
    resent: int = 0
    send_failures: int = 0
    skipped: int = 0
    expired: int = 0
    max_lag_s: float | None = None  # the largest admitted_at - scheduled_at this pass
    quarantined: list[str] = field(default_factory=list)  # schedule ids set aside
    out_of_time: bool = False  # stopped at its deadline with pending work left

    def note_lag(self, lag: float) -> None:
        """A running maximum: the report does not grow with the number admitted.
        A slot admitted ahead of its time has no lag (0, not negative)."""
        lag = max(0.0, lag)
        self.max_lag_s = lag if self.max_lag_s is None else max(self.max_lag_s, lag)


@dataclass
class TickReport:
    at: datetime
    plan: PlanReport
    dispatch: DispatchReport


class Admission(Protocol):
    """What the planner asks of direct admission as it stores a page
    (``outbox.DirectAdmission``, which keeps its count in the pass's state)."""

    def room(self, state: PassState, shard: int) -> int: ...

    def take(self, state: PassState, shard: int, count: int) -> None: ...

    def send(self, state: PassState, runs: Sequence[Run], now: datetime) -> set[str]: ...

    def count(self, state: PassState, runs: list[Run], now: datetime) -> None: ...


@dataclass(eq=False)
class PassState:
    """One pass of planning and dispatch (or one API call's planning of a
    schedule, ``PlanNow``), from its beginning to its end."""

    began: datetime
    # Admission by the write that stores a slot, when the pass does it (None: off).
    direct: Admission | None = None
    plan: PlanReport = field(default_factory=PlanReport)
    dispatch: DispatchReport = field(default_factory=DispatchReport)
    # No dispatch batch is started after it (None: none); set once planning ends.
    deadline: datetime | None = None
    # Per shard: how many more slots may be admitted directly (asked the first
    # time the planner meets the shard), and how many were (they count against
    # the shard's admit_limit when dispatch walks it).
    room: dict[int, int] = field(default_factory=dict)
    spent: dict[int, int] = field(default_factory=dict)
    # Intents this pass sent: an index read just after they were marked sent
    # may still show them pending (DynamoDB's indexes are eventually consistent).
    sent: set[str] = field(default_factory=set)
    # What the store keeps between this pass's planning calls (its read of
    # the plan, whether it holds the plan lease): asked of the store the first
    # time the pass plans (``Store.plan_session``), never kept on the store.
    session: PlanSession | None = None

    def report(self, at: datetime) -> TickReport:
        return TickReport(at, self.plan, self.dispatch)
