"""One tick of the dispatcher: plan, then dispatch.

**Plan.** Schedules whose ``next_due`` falls within the lookahead horizon, a
page at a time, get their slots up to the horizon materialized into
partitions, with the advance of ``next_due``, in one conditional write per
schedule (batched by the store). A slot already due when it is materialized
(no tick ran for hours) is recorded at once as the start decision says
(``domain/start.py``: superseded, expired, or admitted).

**Direct admission.** A slot that is already due when it is materialized
(a schedule created or resumed moments before its time, a lookahead of zero,
a tick that wakes up just after a boundary) is admitted in the write that
materializes it, instead of being read back from the pending index a moment
later: the record is inserted as ``admitted`` in the transaction whose
conditional schedule update checks version, ``next_due`` and that the
schedule is active, and its unique keys make the insert happen once at most.
Only in shards this pass holds a live lease on and whose due work is all
done (nothing pending due in them), only for slots due less than
``direct_window`` ago that the overdue policy admits, and within the shard's
``admit_limit``. Anything else (a backlog after an outage, an expired or
superseded slot, a shard held by another process) takes the dispatch path
below, oldest first. Then the intents are sent and marked sent, as dispatch
does; a crash before that leaves them admitted and pending, for dispatch to
resend.

**Dispatch.** For each shard it holds a lease on, the tick walks buckets from
the shard's checkpoint to now and takes the pending occurrences due by now,
oldest first, in batches, at most ``admit_limit`` per shard per pass (so a
long outage cannot flood the workers). Each is admitted (the conditional
``scheduled -> admitted``) or closed, as the start decision says. The intents of
the admitted ones are sent in batches, then marked sent. An occurrence
admitted but not marked sent stays pending, so a tick that crashed between
the two is repaired by the next one: an intent may be sent twice, an
occurrence is never admitted twice. Then the checkpoint moves as far as
``Partitioning.next_checkpoint`` allows, by a write fenced by the lease epoch.

**Leases.** Several tick processes share the shards: each counts the live
tick processes from their heartbeats, keeps or takes free and expired shards
up to its fair share, and releases the rest.

**Queue ahead** (``TickConfig.queue_ahead``, what deployments run: one pass a
minute on AWS, the same pass on the local stack's interval). Every slot
within the lookahead (at most ``MAX_QUEUE_AHEAD``) that the overdue policy
admits is admitted by the write that stores it, in shards whose lease this
pass holds and that have no due backlog, and its intent is sent with
``DeliveryQueue.send_ahead``: the queue holds it back until its due time.
Dispatch reads each shard's earliest pending bucket first and leases and walks
only the shards with pending work due within the lookahead, from that bucket
(no checkpoint is written), admitting waiting records ahead and resending
admitted ones that were never marked sent. So an idle pass takes no lease and
writes nothing but its heartbeat. The worker takes the start decision again
when a planned slot comes due. A store that offers
``Store.materialize_sending`` (DynamoDB) sends the intents of the slots it
stores admitted before it advances their schedules, so they need no outbox
entry and no mark-sent write. ``PlanNow`` is the same
planning for one schedule, run by the API call that created, edited or
resumed it (and the send of a trigger's intent).

**Block** (``TickConfig.plan_block``, what the AWS tick runs). Selection is
unchanged (a schedule whose next slot falls within the lookahead), but a
schedule selected is filled with every slot up to lookahead + block, all
admitted and queued ahead, so it is not selected again for about a block: a
minutely schedule is planned every few passes, a few slots at a time, and
one chain entry (one schedule read) covers them. ``PlanNow`` fills the same
way. The price: more slots exist when an edit lands, and an edit reaches
only the slots after them (pause and delete are still decided by the
worker at start).

**Planning early** (a block and a ``plan_budget``, what the AWS tick runs). A
pass whose own plan and dispatch ended inside its budget plans seeds
(``Store.due_ahead``: schedules whose next slot a create, edit or resume set
and no pass planned yet) that fall after the lookahead but within lookahead +
block, filling each as a pass fills one it selects, until the budget ends or
the pass's first surge is near (``Ticker.quiet_until``). So an instant that
thousands of new schedules share is planned over the several passes that see
it coming, not by the one or two whose lookahead reaches it, and an edit's
reach is the block's. A seed planned early goes on the chain (the store plans
it as the holder of the plan lease), so a frequent schedule is selected again
by the lookahead and filled a block at a time, not planned early a slot a pass.
Then, with time still left, the pass reads the chain itself ahead of its
lookahead, up to the latest crowd in its reach (``Store.chain_crowd``: an
instant that at least ``crowd_min`` schedules on the chain are next due at,
such as a daily 09:00 across thousands of them), and the store's cursor moves
there: the next pass reads on after it, as after any pass's horizon.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from domain.partition import Partitioning, shard_of
from domain.run import (
    DeliveryIntent,
    OccurrenceMold,
    PendingOccurrence,
    Reason,
    Run,
    RunKind,
    RunStatus,
)
from domain.schedule import QUARANTINED, QuarantineComponent, SchedulePolicy
from domain.spec import Slot, slots_after
from domain.start import ACTIVE, ScheduleNow, decide_start
from domain.start import Slot as StartSlot
from service.ports import (
    MAX_DELAY,
    Clock,
    Closure,
    DeliveryQueue,
    DueSchedule,
    Heartbeat,
    Lease,
    Materialization,
    MaterializeOutcome,
    Store,
)
from service.quarantine import quarantine_schedule
from service.surge import DEFAULT_SURGE_MIN

_EPSILON: Final = timedelta(microseconds=1)
# Builds a named tuple from its fields in order, at less than half the cost of
# its generated __new__, for the values made once per schedule planned.
_new_tuple: Final = tuple.__new__
TICK_COMPONENT: Final = "tick"
# The longest a queue holds a message back before it becomes visible (SQS's
# DelaySeconds is at most 15 minutes): a slot further ahead waits unadmitted.
MAX_QUEUE_AHEAD: Final = MAX_DELAY
# What a block leaves of MAX_QUEUE_AHEAD unused: a pass's sends happen after
# its ``now``, and a clock read late by this much still queues every slot it
# filled with a delay the queue honours.
BLOCK_MARGIN: Final = timedelta(seconds=60)
# How long past its plan budget (or its plan, when a page ran past the budget) a
# pass may go on dispatching (a backlog after an outage is admitted a batch at a
# time): the tick's timeout is the budget plus 20 s, and a pass cut off there ends
# without releasing its leases or starting its surges. What is left stays
# pending for the next pass.
DISPATCH_OVERRUN: Final = timedelta(seconds=10)
MEMBER_PREFIX: Final = "tick/"


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
    # Slots due less than this long ago when materialized may be admitted by the
    # write that materializes them (see the module's docstring); zero turns
    # direct admission off.
    direct_window: timedelta = timedelta(seconds=60)
    # Queue ahead (the one-pass tick, see the module's docstring): every slot
    # within the lookahead (at most MAX_QUEUE_AHEAD) is admitted when it is
    # planned, or by dispatch when that pass meets it waiting, and its intent
    # is sent with a delay up to its due second. Off: a slot is admitted when
    # it is due, which needs a pass every second or so.
    queue_ahead: bool = False
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
        if not self.queue_ahead:
            return timedelta(0)
        return min(self.fill, MAX_QUEUE_AHEAD)


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
    checkpoint_refused: list[int] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)  # schedule ids set aside
    out_of_time: bool = False  # stopped at its deadline with pending work left


@dataclass
class TickReport:
    at: datetime
    plan: PlanReport
    dispatch: DispatchReport


@dataclass(frozen=True)
class _PlannedSlots:
    """The slots from one ``next_due`` up to the horizon of one spec under one
    policy, computed once per pass and shared by every schedule with them
    (everyone at 09:00): per slot, the mold of its record as the policy leaves
    it (waiting, or closed when already overdue), and, for a slot that may be
    admitted directly (due, admitted by the policy, and due less than
    ``direct_window`` ago), the mold of it admitted (else None)."""

    slots: tuple[tuple[OccurrenceMold | None, OccurrenceMold], ...]
    last_at: datetime | None  # the last slot's instant
    following: Slot | None
    direct: bool  # whether any slot may be admitted directly
    skipped: int
    expired: int
    waiting: int  # neither skipped nor expired: admitted, or waiting for admission


class _Unplannable(Exception):
    """The slots of one schedule could not be computed (``error`` says why)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class DirectAdmission:
    """The shards a pass may admit into as it materializes, and where the
    admitted go: built by the dispatcher for one pass (see the module's
    docstring)."""

    def __init__(
        self,
        ready: Callable[[int], int],
        deliver: Callable[[list[Run], datetime, bool], None],
        send: Callable[[Sequence[Run], datetime], list[str]],
    ) -> None:
        self._ready = ready
        self._deliver = deliver
        self._send = send
        self._room: dict[int, int] = {}

    def room(self, shard: int) -> int:
        """How many more occurrences this pass may admit directly in ``shard``."""
        room = self._room.get(shard)
        if room is None:
            room = self._room[shard] = self._ready(shard)
        return room

    def take(self, shard: int, count: int) -> None:
        self._room[shard] = self._room[shard] - count

    def deliver(self, runs: list[Run], now: datetime, *, sent: bool = False) -> None:
        """Count the occurrences just admitted (and stored), and send their
        intents unless the store sent them as it stored them (``sent``)."""
        self._deliver(runs, now, sent)

    def send(self, runs: Sequence[Run], now: datetime) -> list[str]:
        """Send these intents now (for a store that sends as it materializes,
        ``Store.materialize_sending``); the ids that could not be sent."""
        return self._send(runs, now)


class Planner:
    def __init__(self, store: Store, clock: Clock, config: TickConfig) -> None:
        self.store = store
        self.clock = clock
        self.config = config
        # Slots planned this pass, found by the ids of spec and policy (cheap;
        # the SQLite store hands out one object per stored text), else by their
        # value. An entry holds the objects whose ids key it, so that those ids
        # cannot be reused by other objects during the pass.
        self._memo: dict[tuple[int, int, datetime], tuple[object, object, _PlannedSlots]] = {}
        self._by_value: dict[tuple[object, SchedulePolicy, datetime], _PlannedSlots] = {}
        self._shards = config.partitioning.shards

    def plan(self, direct: DirectAdmission | None = None) -> PlanReport:
        """Materialize what falls within the horizon; with ``direct``, admit
        the slots that may be admitted now in the shards it allows."""
        report = PlanReport()
        now = self.clock.now()
        self._memo, self._by_value = {}, {}
        # Selected by the lookahead, filled up to the block beyond it; the
        # store's read cursor (``until``, ``planned_through``) is the selection
        # horizon: a chain entry past it is read by a later pass.
        horizon = now + self.config.lookahead
        fill = now + self.config.fill
        token: str | None = None
        through: datetime | None = None
        stopped: str | None = None  # the page token a pass out of budget stopped before
        budget = self.config.plan_budget
        try:
            while report.materialized + report.skipped + report.expired < (
                self.config.max_planned_per_pass
            ):
                page = self.store.due(horizon, self.config.page_size, token)
                self._plan_page(page.items, now, fill, direct, report, until=horizon)
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
            self.store.planned_through(through, stopped)
        return report

    @property
    def plans_early(self) -> bool:
        """Whether a pass may plan seeds beyond its lookahead (``plan_early``):
        it queues ahead, fills a block beyond the lookahead, and has a budget."""
        config = self.config
        return (
            config.queue_ahead
            and config.plan_block > timedelta(0)
            and (config.plan_budget is not None)
        )

    def plan_early(
        self,
        direct: DirectAdmission,
        deadline: Callable[[], datetime],
        report: PlanReport,
    ) -> None:
        """What a pass does with the time its own plan left, until
        ``deadline()`` (asked once, when there is something to plan): it plans
        seeds (``Store.due_ahead``) whose next slot falls after the lookahead
        but within lookahead + block, a page at a time, then reads the chain
        ahead, up to the latest crowd in that reach (``Store.chain_crowd``).
        A schedule planned here is filled as a pass fills one it selects, so
        an edit reaches the same slots as before (those after lookahead +
        block); what changes is that a crowded instant (09:00 across thousands
        of schedules) is planned over several passes rather than by the one or
        two whose lookahead it falls in. Only a crowd takes the chain's read
        ahead: a frequent schedule alone is still selected by the lookahead
        and filled a block at a time."""
        now = self.clock.now()
        self._memo, self._by_value = {}, {}
        after, fill = now + self.config.lookahead, now + self.config.fill
        asked: list[datetime] = []

        def time_left() -> bool:
            if not asked:
                asked.append(deadline())
            return self.clock.now() < asked[0] and (
                report.materialized + report.skipped + report.expired
                < self.config.max_planned_per_pass
            )

        page = self.store.due_ahead(after, fill, self.config.page_size)
        if page.items:
            try:
                while time_left():
                    report.early += len(page.items)
                    self._plan_page(page.items, now, fill, direct, report, until=after)
                    if page.next_token is None:
                        break
                    page = self.store.due_ahead(after, fill, self.config.page_size, page.next_token)
            finally:
                self.store.planned_through(None)  # what it chained; the cursor stays
        if asked and not time_left():
            return
        crowd = self.store.chain_crowd(after, fill, self.config.crowd_min)
        if crowd is not None and time_left():
            self._plan_chain(crowd, now, fill, direct, report, time_left)

    def _plan_chain(
        self,
        crowd: datetime,
        now: datetime,
        fill: datetime,
        direct: DirectAdmission,
        report: PlanReport,
        time_left: Callable[[], bool],
    ) -> None:
        """Read the chain ahead of the lookahead, up to ``crowd``, as a pass reads
        it up to its horizon: the store's cursor moves to ``crowd`` once every page
        is planned, or keeps the place of a pass out of time."""
        token: str | None = None
        through: datetime | None = None
        stopped: str | None = None
        try:
            while time_left():
                page = self.store.due(crowd, self.config.page_size, token)
                report.early += len(page.items)
                self._plan_page(page.items, now, fill, direct, report, until=crowd)
                token = page.next_token
                if token is None:
                    through = crowd
                    break
            else:
                stopped = token
        finally:
            self.store.planned_through(through, stopped)

    def plan_schedules(
        self, schedules: Sequence[DueSchedule], direct: DirectAdmission | None = None
    ) -> PlanReport:
        """Plan these schedules now, as a pass would (the API, after a create,
        edit or resume whose next slot falls within the horizon): the ones
        whose ``next_due`` is beyond it are left to the tick. A schedule
        selected is filled with its block, as a pass fills it."""
        report = PlanReport()
        now = self.clock.now()
        self._memo, self._by_value = {}, {}
        horizon = now + self.config.lookahead
        due = [s for s in schedules if s.next_due <= horizon]
        if due:
            self._plan_page(due, now, now + self.config.fill, direct, report)
        return report

    def _plan_page(
        self,
        schedules: Sequence[DueSchedule],
        now: datetime,
        horizon: datetime,
        direct: DirectAdmission | None,
        report: PlanReport,
        *,
        until: datetime | None = None,
    ) -> None:
        """Plan one page, each schedule filled up to ``horizon`` (the
        selection horizon, plus the block when there is one); ``until``: the
        pass's selection horizon, when the page is one of ``due(until)`` (see
        ``Store.materialize``)."""
        report.schedules += len(schedules)
        planned: list[tuple[Materialization, _PlannedSlots, int]] = []
        for schedule in schedules:
            # One schedule whose slots cannot be computed is quarantined;
            # the page, and the pass, carry on with the others.
            try:
                made = self._materialization(schedule, now, horizon, direct)
            except _Unplannable as unplannable:
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
        batch = [p[0] for p in planned]
        outcomes: list[MaterializeOutcome] | None = None
        if direct is not None and any(p[2] for p in planned):
            # A store that sends the intents before it advances the schedules
            # keeps no outbox entry for them (Store.materialize_sending).
            outcomes = self.store.materialize_sending(
                batch, now, lambda runs: direct.send(runs, now), until=until
            )
        sent_by_store = outcomes is not None
        if outcomes is None:
            outcomes = self.store.materialize(batch, now, until=until)
        admitted: list[Run] = []
        skipped = expired = waiting = 0
        for (item, slots, taken), outcome in zip(planned, outcomes, strict=True):
            if not outcome.applied:
                report.conflicts += 1
            skipped += slots.skipped
            expired += slots.expired
            waiting += slots.waiting
            if not taken or not outcome.inserted:
                continue
            runs = item.occurrences
            if taken != len(runs):
                runs = tuple([r for r in runs if r.status is RunStatus.ADMITTED])
            if len(outcome.inserted) != len(item.occurrences):  # some slots were taken
                inserted = set(outcome.inserted)
                runs = tuple([r for r in runs if r.occurrence_id in inserted])
            admitted += runs
        report.skipped += skipped
        report.expired += expired
        report.materialized += waiting
        if admitted and direct is not None:
            direct.deliver(admitted, now, sent=sent_by_store)

    def _materialization(
        self,
        schedule: DueSchedule,
        now: datetime,
        horizon: datetime,
        direct: DirectAdmission | None = None,
    ) -> tuple[Materialization, _PlannedSlots, int] | None:
        """What to write for one schedule, the slots it was planned from, and how
        many of its occurrences it admits directly."""
        schedule_id, number, next_due, spec, policy = schedule
        key = (id(spec), id(policy), next_due)
        held = self._memo.get(key)
        if held is None:
            by_value = (spec, policy, next_due)
            found = self._by_value.get(by_value)
            if found is None:
                # Only the computation is guarded: a store that fails (direct
                # admission reads leases) fails the pass, as before.
                try:
                    found = self._plan_slots(schedule, now, horizon)
                except Exception as error:  # any error sets that schedule aside
                    raise _Unplannable(error) from error
                if len(self._by_value) < 1024:
                    self._by_value[by_value] = found
            held = (spec, policy, found)
            if len(self._memo) < 1024:
                self._memo[key] = held
        planned = held[2]
        if not planned.slots:
            return None
        shard = shard_of(schedule_id, self._shards)
        room = 0
        if direct is not None and planned.direct:
            room = direct.room(shard)
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
            direct.take(shard, taken)
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
        return item, planned, taken

    def _plan_slots(self, schedule: DueSchedule, now: datetime, horizon: datetime) -> _PlannedSlots:
        """The schedule's slots from next_due up to the horizon (bounded), and the
        one after; each placed, judged by the overdue policy if already due, and
        marked if it may be admitted directly."""
        policy = schedule.policy
        parts = self.config.partitioning
        fresh_from = now - self.config.direct_window
        ahead_until = now + self.config.ahead
        taken: list[Slot] = []
        following: Slot | None = None
        for slot in slots_after(schedule.spec, policy.dst, schedule.next_due - _EPSILON):
            if slot.scheduled_at > horizon or len(taken) >= self.config.max_slots_per_schedule:
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
                verdict = decide_start(
                    StartSlot(RunKind.SCHEDULED, slot.scheduled_at),
                    ACTIVE,
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
                elif slot.scheduled_at > fresh_from:
                    admitted = OccurrenceMold(
                        slot, bucket=bucket, materialized_at=now, admitted_at=now
                    )
            elif slot.scheduled_at <= ahead_until:
                # Not due yet, and due before the next pass (plus a margin): admitted
                # as of its instant, when the queue releases its intent.
                at = slot.scheduled_at
                admitted = OccurrenceMold(slot, bucket=bucket, materialized_at=now, admitted_at=at)
            mold = OccurrenceMold(slot, bucket=bucket, materialized_at=now, closed=closed)
            planned.append((admitted, mold))
        return _PlannedSlots(
            tuple(planned),
            taken[-1].scheduled_at if taken else None,
            following,
            any(p[0] is not None for p in planned),
            skipped,
            expired,
            len(planned) - skipped - expired,
        )


class Dispatcher:
    def __init__(
        self,
        store: Store,
        queue: DeliveryQueue,
        clock: Clock,
        config: TickConfig,
        owner: str,
    ) -> None:
        self.store = store
        self.queue = queue
        self.clock = clock
        self.config = config
        self.owner = owner
        self._held: dict[int, Lease] = {}
        self._spent: dict[int, int] = {}  # direct admissions this pass, per shard
        # Intents this pass sent: an index read just after the mark may still
        # show them pending (DynamoDB's indexes are eventually consistent).
        self._sent_ids: set[str] = set()
        self._beaten_at: datetime | None = None
        self._until: datetime | None = None  # this pass's dispatch deadline
        self._order = list(range(config.partitioning.shards))
        random.Random(owner).shuffle(self._order)

    # --- leases --------------------------------------------------------------------------

    def acquire_leases(self, now: datetime) -> list[Lease]:
        """Renew or take shards up to this process's fair share; release the rest."""
        shards = self.config.partitioning.shards
        ttl = self.config.lease_ttl
        # Membership and leases are written only when they need it: a member
        # beats every quarter of the TTL, and a lease is renewed once less than
        # half of it is left. An idle pass then reads, but hardly writes.
        if self._beaten_at is None or now - self._beaten_at >= ttl / 4:
            self.store.beat(Heartbeat(MEMBER_PREFIX + self.owner, now, {}))
            self._beaten_at = now
        members = {
            h.component for h in self.store.heartbeats(MEMBER_PREFIX) if h.at > now - ttl
        } | {MEMBER_PREFIX + self.owner}
        fair = math.ceil(shards / len(members))
        records = {lease.shard: lease for lease in self.store.leases()}
        mine = [s for s in self._order if (r := records.get(s)) and r.owner == self.owner]
        held: dict[int, Lease] = {}
        for shard in mine:
            record = records[shard]
            if len(held) >= fair:
                if record.live(now):
                    self.store.release(shard, self.owner, record.epoch, now)
                continue
            if record.expires_at - now > ttl / 2:
                held[shard] = record  # still mine for a while: no write
                continue
            lease = self.store.acquire(shard, self.owner, now, ttl)
            if lease is not None:
                held[shard] = lease
        for shard in self._order:
            if len(held) >= fair:
                break
            if shard in held:
                continue
            other = records.get(shard)
            if other is not None and other.live(now):
                continue
            taken = self.store.acquire(shard, self.owner, now, ttl)
            if taken is not None:
                held[shard] = taken
        self._held = held
        return [held[s] for s in sorted(held)]

    def release_all(self) -> None:
        """Release every lease held and leave the membership (a beat that is
        already a lease TTL old), so the next process takes every shard at
        once instead of waiting for the leases to expire or counting this one
        in its fair share."""
        now = self.clock.now()
        for lease in self._held.values():
            self.store.release(lease.shard, lease.owner, lease.epoch, now)
        self._held = {}
        if self._beaten_at is not None:
            self.store.beat(Heartbeat(MEMBER_PREFIX + self.owner, now - self.config.lease_ttl, {}))
            self._beaten_at = None

    # --- dispatch -----------------------------------------------------------------------

    def dispatch(
        self, report: DispatchReport | None = None, *, until: datetime | None = None
    ) -> DispatchReport:
        """Take or renew leases, then dispatch their shards, into ``report`` (by
        default a new one); with ``until``, no batch is started after it (what
        is left stays pending, for the next pass)."""
        now = self.clock.now()
        if report is None:
            report = DispatchReport()
        self._until = until
        if self.config.queue_ahead:
            self._dispatch_ahead(now, report)
        else:
            leases = self.acquire_leases(now)
            report.shards = [lease.shard for lease in leases]
            for lease in leases:
                self._dispatch_shard(lease, now, report)
        self._spent = {}
        self._sent_ids = set()
        self._until = None
        return report

    def _dispatch_ahead(self, now: datetime, report: DispatchReport) -> None:
        """Dispatch for a pass that queues ahead: per shard, one read of its
        earliest pending bucket; only a shard with pending work due before the
        next pass (plus the margin) is leased and walked, from that bucket, so
        an idle pass writes no lease and no checkpoint."""
        parts = self.config.partitioning
        due_by = now + self.config.ahead
        to_bucket = parts.bucket(due_by)
        for shard in self._order:
            if self._out_of_time(report):
                return
            earliest = self.store.earliest_pending_bucket(shard)
            if earliest is None or earliest > to_bucket:
                continue
            lease = self._lease(shard, now)
            if lease is None:
                continue  # another process holds it; it dispatches the shard
            report.shards.append(shard)
            self._walk(shard, earliest, to_bucket, due_by, now, report)
        report.shards.sort()

    def _lease(self, shard: int, now: datetime) -> Lease | None:
        """This process's live lease on ``shard`` (taken or renewed when less
        than half its TTL is left), or None when another process holds it."""
        ttl = self.config.lease_ttl
        held = self._held.get(shard)
        if held is not None and held.expires_at - now > ttl / 2:
            return held
        lease = self.store.acquire(shard, self.owner, now, ttl)
        if lease is None:
            self._held.pop(shard, None)
            return None
        self._held[shard] = lease
        return lease

    def direct_admission(self, report: DispatchReport) -> DirectAdmission:
        """For one pass: which shards the planner may admit into directly
        (held, live, and nothing pending due in them), with room up to
        ``admit_limit`` each; what it admits is sent and counted in ``report``.
        Leases are taken the first time the planner asks, so a pass with nothing
        due to admit directly costs nothing more."""
        self._spent = {}
        held: dict[int, Lease] | None = None

        def ready(shard: int) -> int:
            nonlocal held
            now = self.clock.now()
            if self.config.queue_ahead:
                return self._ready_ahead(shard, now)
            if held is None:
                held = {lease.shard: lease for lease in self.acquire_leases(now)}
            lease = held.get(shard)
            if lease is None or not lease.live(now):
                return 0
            start = self._start_bucket(lease, now)
            if self.store.pending_due(shard, start, self.config.partitioning.bucket(now), now, 1):
                return 0
            return self.config.admit_limit

        def deliver(runs: list[Run], now: datetime, sent: bool) -> None:
            spent = self._spent
            for run in runs:
                spent[run.shard] = spent.get(run.shard, 0) + 1
            # All admitted at ``now``: the oldest has the largest lag.
            report.admitted += len(runs)
            _note_lag(report, (now - min(r.scheduled_at for r in runs)).total_seconds())
            if not sent:
                self._send(runs, now, report)

        def send(runs: Sequence[Run], now: datetime) -> list[str]:
            failed = send_only(self.queue, runs, now, report)
            self._sent_ids.update(r.occurrence_id for r in runs if r.occurrence_id not in failed)
            return failed

        return DirectAdmission(ready, deliver, send)

    def _ready_ahead(self, shard: int, now: datetime) -> int:
        """Room to admit into ``shard`` as the planner writes (queue-ahead
        passes): its lease, and nothing pending there that is already due (a
        backlog goes first, through dispatch)."""
        if self._lease(shard, now) is None:
            return 0
        parts = self.config.partitioning
        earliest = self.store.earliest_pending_bucket(shard)
        to_bucket = parts.bucket(now)
        if (
            earliest is not None
            and earliest <= to_bucket
            and self.store.pending_due(shard, earliest, to_bucket, now, 1)
        ):
            return 0
        return self.config.admit_limit

    def _start_bucket(self, lease: Lease, now: datetime) -> int:
        """The bucket dispatch starts from: the lease's checkpoint, or for a
        shard never checkpointed, the earliest pending one (or the first open)."""
        if lease.checkpoint is not None:
            return lease.checkpoint
        parts = self.config.partitioning
        earliest = self.store.earliest_pending_bucket(lease.shard)
        start = parts.first_open_bucket(now)
        return start if earliest is None else min(start, earliest)

    def _dispatch_shard(self, lease: Lease, now: datetime, report: DispatchReport) -> None:
        parts = self.config.partitioning
        shard = lease.shard
        if not lease.live(now):
            return  # lost it while stalled; acquire_leases decides again next pass
        if self._out_of_time(report):
            return  # the checkpoint stays: the next pass walks from it
        checkpoint = self._start_bucket(lease, now)
        self._walk(shard, checkpoint, parts.bucket(now), now, now, report)
        earliest = self.store.earliest_pending_bucket(shard, checkpoint)
        target = parts.next_checkpoint(checkpoint, earliest, now)
        if target != lease.checkpoint and not self.store.set_checkpoint(
            shard, self.owner, lease.epoch, target
        ):
            report.checkpoint_refused.append(shard)

    def _walk(
        self,
        shard: int,
        from_bucket: int,
        to_bucket: int,
        due_by: datetime,
        now: datetime,
        report: DispatchReport,
    ) -> None:
        """Admit, close or resend the shard's pending records due by ``due_by``,
        oldest first, in batches, up to the shard's ``admit_limit`` for the pass."""
        # Direct admissions this pass count against the shard's limit.
        handled = self._spent.get(shard, 0)
        while handled < self.config.admit_limit and not self._out_of_time(report):
            limit = min(self.config.batch_size, self.config.admit_limit - handled)
            due = self.store.pending_due(shard, from_bucket, to_bucket, due_by, limit)
            if not due:
                break
            progress = self._dispatch_batch(due, now, report)
            handled += len(due)
            if not progress or len(due) < limit:
                break

    def _out_of_time(self, report: DispatchReport) -> bool:
        if self._until is None or self.clock.now() < self._until:
            return False
        report.out_of_time = True
        return True

    def _dispatch_batch(
        self, due: list[PendingOccurrence], now: datetime, report: DispatchReport
    ) -> bool:
        """Admit, close or resend one batch. True if anything changed."""
        waiting = [r for r in due if r.status is RunStatus.SCHEDULED]
        resend = [
            r
            for r in due
            if r.status is not RunStatus.SCHEDULED and r.occurrence_id not in self._sent_ids
        ]
        # The start decision, on the state the admission's write checks (a
        # refused one is decided again with its schedule read, below).
        versions = self.store.get_versions({(r.schedule_id, r.version) for r in waiting})
        to_admit: list[PendingOccurrence] = []
        closures: list[Closure] = []
        failed: dict[str, tuple[int, Exception]] = {}
        for run in waiting:
            version = versions.get((run.schedule_id, run.version))
            if version is None:
                to_admit.append(run)
                continue
            try:
                verdict = decide_start(
                    StartSlot(run.kind, run.scheduled_at), ACTIVE, version.spec, version.policy, now
                )
            except Exception as error:  # any error sets that schedule aside
                # Not admitted; closed as quarantined, and its schedule set aside.
                failed.setdefault(run.schedule_id, (run.version, error))
                closures.append(Closure(run.occurrence_id, RunStatus.SKIPPED, QUARANTINED))
                continue
            if verdict.status is RunStatus.ADMITTED:
                to_admit.append(run)
            else:
                assert verdict.reason is not None
                closures.append(Closure(run.occurrence_id, verdict.status, verdict.reason))
        for schedule_id, (number, cause) in failed.items():
            if quarantine_schedule(
                self.store, schedule_id, number, cause, QuarantineComponent.DISPATCH, now
            ):
                report.quarantined.append(schedule_id)
        admitted = to_admit
        if to_admit:
            won = self.store.admit(to_admit, now)
            if len(won) != len(to_admit):  # some were refused
                kept = set(won)
                admitted = [p for p in to_admit if p.occurrence_id in kept]
        closed = set(self.store.close_runs(closures, now)) if closures else set()
        for closure in closures:
            if closure.occurrence_id in closed:
                if closure.status is RunStatus.SKIPPED:
                    report.skipped += 1
                else:
                    report.expired += 1
        refused = {r.occurrence_id for r in to_admit} - {r.occurrence_id for r in admitted}
        changed = bool(admitted or closed)
        if refused:
            changed |= self._close_refused(refused, now, report)
        report.admitted += len(admitted)
        if admitted:  # all admitted at ``now``: the oldest has the largest lag
            _note_lag(report, (now - min([p.scheduled_at for p in admitted])).total_seconds())
        report.resent += len(resend)
        changed |= self._send([*resend, *admitted], now, report)
        return changed

    def _close_refused(self, refused: set[str], now: datetime, report: DispatchReport) -> bool:
        """Occurrences the store would not admit: admitted by someone else, or
        their schedule is paused, deleted or quarantined (then they are closed
        here, as the start decision says on the schedule read now)."""
        closures: list[Closure] = []
        for occurrence_id in sorted(refused):
            run = self.store.get_run(occurrence_id)
            if run is None or run.status is not RunStatus.SCHEDULED:
                continue
            schedule = self.store.get(run.schedule_id)
            version = self.store.get_version(run.schedule_id, run.version)
            if version is None:  # gone with its schedule, or never runnable
                if schedule is None or schedule.deleted:
                    closures.append(Closure(occurrence_id, RunStatus.CANCELLED, Reason.DELETED))
                continue
            slot, state = StartSlot(run.kind, run.scheduled_at), ScheduleNow.of(schedule)
            verdict = decide_start(slot, state, version.spec, version.policy, now)
            if verdict.status is not RunStatus.ADMITTED:
                assert verdict.reason is not None
                closures.append(Closure(occurrence_id, verdict.status, verdict.reason))
        closed = self.store.close_runs(closures, now) if closures else []
        report.skipped += len(closed)
        return bool(closed)

    def _send(
        self, runs: Sequence[Run | PendingOccurrence], now: datetime, report: DispatchReport
    ) -> bool:
        sent = send_intents(self.store, self.queue, runs, now, report)
        if sent:
            self._sent_ids.update(r.occurrence_id for r in runs)
        return sent


def send_intents(
    store: Store,
    queue: DeliveryQueue,
    runs: Sequence[Run | PendingOccurrence],
    now: datetime,
    report: DispatchReport,
) -> bool:
    """Send the intents of admitted records, each held back until its due
    time, then mark the sent ones sent (the outbox: one not marked stays
    pending, and dispatch sends it again). True if any was sent."""
    if not runs:
        return False
    failed = set(send_only(queue, runs, now, report))
    sent = [r.occurrence_id for r in runs if r.occurrence_id not in failed]
    if sent:
        store.mark_sent(sent, now)
    return bool(sent)


def send_only(
    queue: DeliveryQueue,
    runs: Sequence[Run | PendingOccurrence],
    now: datetime,
    report: DispatchReport,
) -> list[str]:
    """Send the intents of admitted records, each held back until its due
    time, and count them; the ids that could not be sent (nothing is marked)."""
    if not runs:
        return []
    failed = queue.send_ahead([DeliveryIntent.for_run(r) for r in runs], now)
    report.send_failures += len(failed)
    report.sent += len(runs) - len(set(failed))
    return list(failed)


def _note_lag(report: DispatchReport, lag: float) -> None:
    """A running maximum: the report does not grow with the number admitted.
    A slot admitted ahead of its time has no lag (0, not negative)."""
    lag = max(0.0, lag)
    report.max_lag_s = lag if report.max_lag_s is None else max(report.max_lag_s, lag)


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
        # Given now and a deadline, the moment before which planning early must
        # end (the first surge the invocation has to start after its pass);
        # None: only the plan budget bounds it.
        self.quiet_until = quiet_until

    @property
    def owner(self) -> str:
        return self.dispatcher.owner

    def tick_once(self) -> TickReport:
        began = self.clock.now()
        dispatch = DispatchReport()
        direct = None
        if self.config.direct_window > timedelta(0) or self.config.queue_ahead:
            direct = self.dispatcher.direct_admission(dispatch)
        plan = self.planner.plan(direct)
        budget = self.config.plan_budget
        # At least the overrun after the plan, which may end past the budget by a page.
        until = None
        if budget is not None:
            until = max(began + budget, self.clock.now()) + DISPATCH_OVERRUN
        self.dispatcher.dispatch(dispatch, until=until)
        if direct is not None and self.planner.plans_early and not plan.out_of_time:
            self._plan_early(direct, plan, began)
        at = self.clock.now()
        self.store.beat(
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
        return TickReport(at, plan, dispatch)

    def _plan_early(self, direct: DirectAdmission, plan: PlanReport, began: datetime) -> None:
        """With its own plan and dispatch done inside the budget, the pass plans
        seeds beyond its lookahead (``Planner.plan_early``) for what is left of
        the budget, and not past the first surge it must start after."""
        budget = self.config.plan_budget
        if budget is None:
            return

        def deadline() -> datetime:
            until = began + budget
            if self.quiet_until is None:
                return until
            return min(until, self.quiet_until(self.clock.now(), until))

        if self.clock.now() < began + budget:
            self.planner.plan_early(direct, deadline, plan)

    def release(self) -> None:
        """Give up the shards and the membership: the process stops ticking."""
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

    def plan(self, schedule: DueSchedule) -> bool:
        """Plan one schedule's slots within the horizon now. True when
        anything was written (the schedule's ``next_due`` moved)."""
        report = DispatchReport()
        limit = self.config.admit_limit

        def deliver(runs: list[Run], now: datetime, sent: bool) -> None:
            report.admitted += len(runs)
            if not sent:
                send_intents(self.store, self.queue, runs, now, report)

        def send(runs: Sequence[Run], now: datetime) -> list[str]:
            return send_only(self.queue, runs, now, report)

        plan = self.planner.plan_schedules(
            [schedule], DirectAdmission(lambda _: limit, deliver, send)
        )
        return bool(plan.materialized or plan.skipped or plan.expired or report.admitted)

    def send(self, runs: Sequence[Run]) -> DispatchReport:
        """Send the intents of records just stored admitted (a trigger)."""
        report = DispatchReport()
        send_intents(self.store, self.queue, runs, self.clock.now(), report)
        return report
