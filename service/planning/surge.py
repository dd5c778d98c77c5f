"""Surges: extra workers, started before an instant at which many occurrences are due.

The SQS event source mapping starts a queue's messages five batches at a time
and adds about five a second, so 10,000 intents visible at 09:00:00 take some
ten seconds to start. A surge starts the capacity before the instant instead:

- **The load ledger.** Whoever queues intents ahead (a tick pass, an API call
  that plans at the call) counts them by the second they are due
  (``LoadRecordingQueue``: an API call's one intent at the call, a tick pass's
  crowded seconds at its end, one counter update per second, in a few shards
  so no key is hot) in a ``LoadLedger``.
- **The trigger.** After its pass, the tick reads the ledger for the seconds
  before its next invocation (``Surges.run``). A second with at least
  ``surge_min`` intents gets ``ceil(count / PER_DRAIN)`` drains, invoked
  asynchronously ``lead_s`` before it (waiting inside the tick's invocation for
  that moment: the next invocation would be too late), each claimed once in
  the ledger so two overlapping passes do not both start it.
- **A drain** (the worker function, invoked with ``drain_event``) sleeps until
  the instant, receives from the delivery queue itself, runs what it receives
  as the event source mapping's batches are run, and ends when the queue is
  empty. It only adds consumers to the same queue: a drain that fails or
  starts late leaves the messages to the mapping, and the worker's checks at
  start (identity, state, version) make a message received twice run once.

A surge is an optimisation of start lateness, never a condition of delivery:
when the ledger cannot be read or written, or the invoke is refused, it is
logged and the mapping delivers everything, later.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from domain.run import DeliveryIntent
from service.ports import HOLD, Clock, DeliveryQueue, second_of

# What the event source mapping starts within a second or so on its own (five
# batches of ten, a few rounds): fewer intents due in one second get no surge.
DEFAULT_SURGE_MIN: Final = 200
# The worker's CPU for one message before its target is called, at 448 MB: four
# requests (the run with its schedule, the version, the attempt's start, the
# webhook's secret) of about 5.7 ms each (docs/simulator.md). A drain's messages
# share its container's one CPU share, so the last of n it received together
# starts about n times this after they became visible.
START_CPU_S: Final = 0.023
# What a drain may take beyond its even share of a second: some drains start late
# or not at all (an invoke refused, an event held back), and the others take theirs.
SHARE_MARGIN: Final = 1.2
# How long after the instant the last message a drain takes may wait for that CPU.
DRAIN_START_S: Final = 0.42
# Messages one drain is started for: with the margin, at most 18 a drain, the last
# of which starts about 0.4 s after the instant (25 a drain, 30 with the margin,
# started the last 0.76 s after it; docs/decisions.md, "A drain's share").
PER_DRAIN: Final = math.floor(DRAIN_START_S / (SHARE_MARGIN * START_CPU_S))
# How long a drain takes from the invoke to being ready: Lambda's async queue,
# a cold start with its clients built at init (0.36 s of CPU), and a margin.
DRAIN_READY_S: Final = 1.5
# The tick's CPU for one asynchronous Invoke (about 1.45 ms on a full core, at
# the tick's 512 MB share): the invokes of a large surge take seconds to send.
INVOKE_S: Final = 0.006
# How long after the instant a drain keeps receiving before an empty queue ends
# it: SQS rounds a message's delay up to a whole second.
DRAIN_GRACE_S: Final = 1.5
# The drains of one second at most: Lambda's burst of new execution environments
# is 1,000, and the mapping needs some of them.
MAX_DRAINS: Final = 800
# Shards of a minute's counters: an API call picks one by its schedule, so a
# burst of creations spreads over them (docs/sizing.md).
LOAD_SHARDS: Final = 4
DRAIN: Final = "drain"
# A tick pass counts in the ledger only the seconds it sent this many intents for in
# the pass (one update each, at its end): a surge needs ``surge_min`` of them, and a
# quiet second is not worth a write. An API call counts its one intent.
TICK_RECORD_MIN: Final = 50


def drains_for(count: int) -> int:
    return max(1, min(MAX_DRAINS, math.ceil(count / PER_DRAIN)))


def lead_s(drains: int) -> float:
    """How long before its instant a surge of ``drains`` is started: ready by
    ``HOLD`` before it, when its intents may start to become visible."""
    return DRAIN_READY_S + HOLD.total_seconds() + drains * INVOKE_S


def drain_event(at: datetime, limit: int = PER_DRAIN) -> dict[str, Any]:
    """The worker's event for one drain of the intents due at ``at``."""
    return {"duetime": DRAIN, "at": at.isoformat(), "limit": limit}


class LoadLedger(ABC):
    """How many intents are due in each second, as their senders counted them."""

    @abstractmethod
    def record(self, counts: Mapping[datetime, int], shard: int) -> None:
        """Add ``counts`` (whole seconds) to the ledger, in counter shard ``shard``."""

    @abstractmethod
    def read(self, start: datetime, end: datetime) -> dict[datetime, int]:
        """The counted seconds in ``[start, end]``, summed over the shards."""

    @abstractmethod
    def claim(self, second: datetime, owner: str) -> bool:
        """Take the surge of ``second`` (True once, for its first claimant)."""


class LoadRecordingQueue(DeliveryQueue):
    """A delivery queue that counts what it queues ahead in the load ledger.

    Counted at each send (an API call: its one intent), or, with ``deferred``, added
    up over the sends of a tick pass and written by ``flush`` (one update per second,
    only for the seconds with at least ``min_count`` intents in the pass, so a quiet
    second costs nothing).

    With ``early_min``, a second that reaches that many intents in the pass (those
    sent before and those of this send) is sent ``early``: a second crowded enough
    for a surge, whose drains receive its intents up to ``HOLD`` before it and hold
    them until their time, rather than a second after it as SQS rounds delays up.
    A tick pass sends its plan a page (hundreds of schedules) at a time, so all of a
    crowded second's intents but those of a page that does not reach it go early."""

    def __init__(
        self,
        queue: DeliveryQueue,
        ledger: LoadLedger,
        *,
        min_count: int = 1,
        deferred: bool = False,
        shard_of: Callable[[Sequence[DeliveryIntent]], int] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        early_min: int | None = None,
    ) -> None:
        self.queue = queue
        self.early_min = early_min
        self.ledger = ledger
        self.min_count = min_count
        self.deferred = deferred
        self.shard_of = shard_of or _shard_of_first
        self.on_error = on_error
        self.pending: Counter[datetime] = Counter()
        self._shard = 0

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        return self.queue.send_batch(intents)

    def send_ahead(
        self,
        intents: Sequence[DeliveryIntent],
        now: datetime,
        early: Collection[datetime] = (),
    ) -> list[str]:
        horizon = now + timedelta(seconds=DRAIN_READY_S)
        ahead = [(second_of(i.scheduled_at), i) for i in intents if i.scheduled_at > horizon]
        if self.early_min:
            reached = self.pending + Counter(second for second, _ in ahead)
            early = {second for second, n in reached.items() if n >= self.early_min}
        failed = self.queue.send_ahead(intents, now, early)
        missing = set(failed)
        counts = Counter(second for second, i in ahead if i.occurrence_id not in missing)
        if counts:
            self._shard = self.shard_of(intents)
            self.pending.update(counts)
            if not self.deferred:
                self.flush()
        return failed

    def flush(self) -> None:
        """Write the counted seconds with at least ``min_count`` intents, and forget
        every count (a quiet second is not carried into the next pass)."""
        crowded = {s: n for s, n in self.pending.items() if n >= self.min_count}
        self.pending.clear()
        if not crowded:
            return
        try:
            self.ledger.record(crowded, self._shard)
        except Exception as error:  # a surge is an optimisation: the sends stand
            if self.on_error is not None:
                self.on_error(error)


def _shard_of_first(intents: Sequence[DeliveryIntent]) -> int:
    return sum(intents[0].schedule_id.encode()) % LOAD_SHARDS if intents else 0


@dataclass
class SurgeReport:
    seen: int = 0  # seconds at or above surge_min in the window
    started: int = 0  # surges this pass started
    drains: int = 0  # drains invoked
    refused: int = 0  # invokes refused (the mapping delivers those intents)
    waited_s: float = 0.0


class Surges:
    """The tick's trigger: start the drains of the crowded seconds before ``until``."""

    def __init__(
        self,
        ledger: LoadLedger,
        invoke: Callable[[list[dict[str, Any]]], int],
        clock: Clock,
        sleep: Callable[[float], None],
        *,
        owner: str,
        surge_min: int = DEFAULT_SURGE_MIN,
        counted: Callable[[], None] | None = None,
    ) -> None:
        self.counted = counted  # writes what this pass counted, before it is read
        self.ledger = ledger
        self.invoke = invoke  # sends the events, returns how many were refused
        self.clock = clock
        self.sleep = sleep
        self.owner = owner
        self.surge_min = surge_min

    def run(self, until: datetime) -> SurgeReport:
        """Start every surge whose moment (its second less its lead) comes before
        ``until``, waiting for each moment; one whose moment has passed while its
        second is still ahead starts at once. The next pass starts the later ones."""
        report = SurgeReport()
        if self.counted is not None:
            self.counted()
        now = self.clock.now()
        furthest = until + timedelta(seconds=lead_s(MAX_DRAINS))
        load = self.ledger.read(now, furthest)
        plans = []
        for second, count in load.items():
            if count < self.surge_min or second <= now:
                continue
            drains = drains_for(count)
            moment = second - timedelta(seconds=lead_s(drains))
            if moment < until:
                plans.append((moment, second, count, drains))
        report.seen = len(plans)
        for moment, second, count, drains in sorted(plans):
            self.start(moment, second, count, drains, report)
        return report

    def quiet_until(
        self,
        now: datetime,
        until: datetime,
        pending: Mapping[datetime, int] | None = None,
        *,
        margin: timedelta = timedelta(0),
    ) -> datetime:
        """How long the pass may go on with other work (planning early) before
        ``until``: up to ``margin`` before the moment of the first surge ``run``
        would start, counting the ledger and ``pending`` (what the pass counted
        and has not written yet); ``until`` when none comes before it."""
        furthest = until + margin + timedelta(seconds=lead_s(MAX_DRAINS))
        load = Counter(self.ledger.read(now, furthest))
        load.update(pending or {})
        first = min(
            (
                second - timedelta(seconds=lead_s(drains_for(count)))
                for second, count in load.items()
                if count >= self.surge_min and second > now
            ),
            default=None,
        )
        if first is None or first - margin >= until:
            return until
        return max(now, first - margin)

    def start(
        self, moment: datetime, second: datetime, count: int, drains: int, report: SurgeReport
    ) -> None:
        """One surge: wait for its moment, claim it, invoke its drains (each takes a
        fifth more than its even share, so a drain that starts late costs little)."""
        wait = (moment - self.clock.now()).total_seconds()
        if wait > 0:
            self.sleep(wait)
            report.waited_s += wait
        if second <= self.clock.now() or not self.ledger.claim(second, self.owner):
            return
        limit = math.ceil(SHARE_MARGIN * count / drains)
        report.refused += self.invoke([drain_event(second, limit) for _ in range(drains)])
        report.started += 1
        report.drains += drains
