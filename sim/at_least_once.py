"""Invocations delivered at least once, not exactly once, and sometimes late.

EventBridge Scheduler delivers each invocation of its target at least once,
and Lambda's asynchronous queue may run an event more than once (it is also
the queue a Scheduler's invocation goes through). The simulator delivers an
event of either a second time with ``DUPLICATE_P``: half of them at once
(two invocations running together, as two pollers of the queue would start
them), half 1 to 10 s later; and holds an event back with ``LATE_P`` for 5
to 60 s (the queue's own backlog). Each extra or late delivery is an
ordinary invocation: the function's reserved concurrency and the account's
still throttle it, and a throttled one is retried as any async event is.

The rates are the simulator's assumptions (AWS documents that it happens, not
how often), high enough that a short run meets them: 2% and 1%.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DUPLICATE_P = 0.02
LATE_P = 0.01
SOON_S = (0.0, 0.05)  # a duplicate delivered together with the first
APART_S = (1.0, 10.0)  # a duplicate seconds apart
LATE_S = (5.0, 60.0)


@dataclass
class AtLeastOnce:
    seed: int = 7
    duplicated: int = 0
    late: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(f"at-least-once-{self.seed}")

    def deliveries(self) -> list[float]:
        """The delays (seconds) after which one accepted event is delivered: one, or two."""
        first = 0.0
        if self.rng.random() < LATE_P:
            self.late += 1
            first = self.rng.uniform(*LATE_S)
        if self.rng.random() >= DUPLICATE_P:
            return [first]
        self.duplicated += 1
        spread = SOON_S if self.rng.random() < 0.5 else APART_S
        return [first, first + self.rng.uniform(*spread)]
