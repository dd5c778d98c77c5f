"""The settings of planning and dispatch (``TickConfig``) and the bounds they obey.

Three reaches, all measured from a pass's own ``now``:

- the **lookahead** selects: a schedule whose next slot falls within it is
  planned by the pass;
- the **fill** (lookahead + ``plan_block``) is how far a selected schedule's
  slots are stored, so a frequent schedule is selected again only about a
  block later (a block trades the reach of an edit for fewer plannings);
- the **ahead** (the fill, at most MAX_QUEUE_AHEAD) is how far before its due
  time a slot is admitted and its intent queued, held back by the queue.

Every slot within the ahead is admitted when it is planned, or by dispatch
when a pass meets it waiting, and its intent is sent with a delay up to its
due second, so a deployment needs one pass a minute.
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
# What a block leaves of MAX_QUEUE_AHEAD unused: a pass's sends happen after
# its ``now``, and a clock read late by this much still queues every slot it
# filled with a delay the queue honours.
BLOCK_MARGIN: Final = timedelta(seconds=60)


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
    # A block (hysteresis): a schedule is still selected when its next slot
    # falls within the lookahead, but then filled with every slot up to
    # lookahead + plan_block, so it is not selected again for about a block
    # and one planning (one chain entry, one schedule read) covers several
    # runs. Zero: filled up to the lookahead, as selected.
    plan_block: timedelta = timedelta(0)
    # How many schedules of the chain next due at one instant make it a crowd,
    # which a pass with time to spare plans early (``Planner.plan_early``): by
    # default, as many as a surge starts for.
    crowd_min: int = DEFAULT_SURGE_MIN
    # Off: a pass never plans early, whatever its block and budget (a switch to
    # measure what planning early buys, docs/simulator.md).
    plan_early: bool = True

    def __post_init__(self) -> None:
        if self.plan_block < timedelta(0):
            raise ValueError(f"plan_block must not be negative, got {self.plan_block}")
        if self.crowd_min < 1:
            raise ValueError(f"crowd_min must be at least 1, got {self.crowd_min}")
        if self.plan_block > timedelta(0):
            reach = self.lookahead + self.plan_block
            if reach > MAX_QUEUE_AHEAD - BLOCK_MARGIN:
                longest = (MAX_QUEUE_AHEAD - BLOCK_MARGIN).total_seconds()
                raise ValueError(
                    f"lookahead + plan_block must be at most {longest:g} s (the queue holds a "
                    f"message back {MAX_QUEUE_AHEAD.total_seconds():g} s at most, less a "
                    f"{BLOCK_MARGIN.total_seconds():g} s margin), got {reach.total_seconds():g} s"
                )

    @property
    def fill(self) -> timedelta:
        """How far ahead of a pass a schedule it selects is filled."""
        return self.lookahead + self.plan_block

    @property
    def ahead(self) -> timedelta:
        """How far ahead of its due time a pass admits and queues a slot:
        everything it fills, block included (at most MAX_QUEUE_AHEAD)."""
        return min(self.fill, MAX_QUEUE_AHEAD)

    @property
    def plans_early(self) -> bool:
        """Whether a pass may plan seeds beyond its lookahead with the time its
        budget leaves (``Planner.plan_early``): it is on, fills a block beyond
        the lookahead, and has a budget."""
        return self.plan_early and self.plan_block > timedelta(0) and self.plan_budget is not None
