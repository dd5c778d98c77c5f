"""The settings of planning and dispatch (``TickConfig``) and the bounds they obey.

Two reaches, both measured from a pass's own ``now``:

- the **lookahead** selects and fills: a schedule whose next slot falls within
  it is planned by the pass, with every slot up to it;
- the **early reach** (the lookahead + EARLY_REACH, bounded by the queue) is how
  far a pass with time left in its budget plans early (``early.PlanEarly``):
  seeds and crowded instants beyond the lookahead.

Every slot within reach is admitted when it is planned, or by dispatch when a
pass meets it waiting, and its intent is sent with a delay up to its due
second, so a deployment needs one pass a minute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from domain.partition import Partitioning
from service.planning.surge import DEFAULT_SURGE_MIN
from service.ports import MAX_DELAY

# The longest a queue holds a message back before it becomes visible (SQS's
# DelaySeconds is at most 15 minutes): a slot further ahead waits unadmitted.
MAX_QUEUE_AHEAD: Final = MAX_DELAY
# How far beyond the lookahead a pass plans early, at most: a crowded instant
# is planned over the passes of these minutes, not by the one whose lookahead
# it enters (docs/decisions.md, "Planning early stands; the plan block goes").
EARLY_REACH: Final = timedelta(seconds=300)
# What the early reach leaves of MAX_QUEUE_AHEAD unused: a pass's sends happen
# after its ``now``, and a clock read late by this much still queues every slot
# it planned early with a delay the queue honours.
SEND_MARGIN: Final = timedelta(seconds=60)


@dataclass(frozen=True)
class TickConfig:
    partitioning: Partitioning = field(default_factory=Partitioning)
    lookahead: timedelta = timedelta(seconds=90)
    lease_ttl: timedelta = timedelta(seconds=30)
    page_size: int = 500  # schedules per plan page
    batch_size: int = 500  # occurrences per dispatch batch
    max_slots_per_schedule: int = 1000  # per plan page visit
    max_planned_per_pass: int = 200_000
    # How long a pass may spend planning (None: until done). Past it the pass
    # plans no further page; what is left is selected again by the next pass, so
    # a pass with more due than it can store in its invocation ends and releases
    # its leases instead of being cut off at the function's timeout.
    plan_budget: timedelta | None = None
    admit_limit: int = 20_000  # per shard per pass
    # How many schedules of the chain next due at one instant make it a crowd,
    # which a pass with time to spare plans early (``early.PlanEarly``): by
    # default, as many as a surge starts for.
    crowd_min: int = DEFAULT_SURGE_MIN
    # Off: a pass never plans early, whatever its budget (a switch to measure
    # what planning early buys, docs/simulator.md).
    plan_early: bool = True

    def __post_init__(self) -> None:
        if self.crowd_min < 1:
            raise ValueError(f"crowd_min must be at least 1, got {self.crowd_min}")

    @property
    def reach(self) -> timedelta:
        """How far ahead of a pass planning reaches: the lookahead, and when a
        pass plans early (on, with a budget), up to EARLY_REACH beyond it (the
        queue's bound less SEND_MARGIN at most; never short of the lookahead)."""
        if not self.plan_early or self.plan_budget is None:
            return self.lookahead
        early = min(self.lookahead + EARLY_REACH, MAX_QUEUE_AHEAD - SEND_MARGIN)
        return max(self.lookahead, early)

    @property
    def ahead(self) -> timedelta:
        """How far ahead of its due time a pass admits and queues a slot:
        everything planning reaches (at most MAX_QUEUE_AHEAD)."""
        return min(self.reach, MAX_QUEUE_AHEAD)

    @property
    def plans_early(self) -> bool:
        """Whether a pass may plan beyond its lookahead with the time its budget
        leaves (``early.PlanEarly``): it is on, has a budget, and the queue's
        bound leaves room beyond the lookahead."""
        return self.reach > self.lookahead
