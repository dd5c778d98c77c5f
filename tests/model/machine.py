"""A state machine that drives the real service code over a real store, with
a fake clock, a fake target and injected faults, against a small model of
what must be true.

The rules are what users and the world do: create, edit (the current version,
or a stale one, which must be refused), pause, resume, delete, trigger,
backfill; time passes (small steps, across daylight-saving nights, outages
of minutes or hours); dispatcher A or B ticks, with leases expiring between
them, twice back to back, or one pass in the middle of the other; on
DynamoDB the secondary indexes lag their table by a chosen time; a
dispatcher, the worker or the API process dies at a chosen write (before or
after it, before or after the send, after the target answered and before the
success was recorded) and restarts from the durable state; the queue
delivers a message twice, late, out of order; the target succeeds, fails for
a while, fails for good or hangs.

After every step the promises are checked (``promises_hold``), and when the
example ends, a settle period (no faults, time moving, the dispatcher ticking
and the worker draining the queue) checks that nothing stays stuck.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, ClassVar

from hypothesis import note as hypothesis_note
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from adapters.definitions import DELIVERY_QUEUE
from domain.identity import new_schedule_id
from domain.partition import Partitioning
from domain.run import Reason, Run, RunKind, RunStatus, new_occurrence
from domain.schedule import Overdue, Overlap
from domain.spec import Slot, slots_after
from handlers.worker import handle_message
from service.errors import ScheduleNotActive, ScheduleNotFound, VersionConflict
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.ports import Store
from service.runs import RunWorker
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition, utc
from tests.model.backends import Backend
from tests.model.faults import (
    QUEUE_WRITES,
    RUN_WRITES,
    STATS,
    STORE_WRITES,
    TARGET_CALLS,
    Call,
    Crash,
    CrashPlan,
    FakeTarget,
    Faulty,
    Interleave,
    Transit,
)

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
_EPSILON = timedelta(microseconds=1)
# Each step moves the clock by this much first, so that no two steps share an
# instant and "before" and "after" are never ambiguous.
_STEP = timedelta(milliseconds=1)

# Specs in zones with daylight-saving nights; the clock starts near one.
SPECS: dict[str, dict[str, str]] = {
    "new-york every 30 min": {"cron": "*/30 * * * *", "time_zone": "America/New_York"},
    "new-york every 5 min": {"cron": "*/5 * * * *", "time_zone": "America/New_York"},
    "new-york 01:30 daily": {"cron": "30 1 * * *", "time_zone": "America/New_York"},
    "new-york 02:30 daily": {"cron": "30 2 * * *", "time_zone": "America/New_York"},
    "london 01:15 daily": {"cron": "15 1 * * *", "time_zone": "Europe/London"},
    "london every 20 min 01-02h": {"cron": "*/20 1,2 * * *", "time_zone": "Europe/London"},
    "every 7 min": {"every": "PT7M"},
}
POLICIES: dict[str, dict[str, Any]] = {
    "latest_only": {"overdue": "latest_only"},
    "catch_up_all, 3 attempts": {
        "overdue": "catch_up_all",
        "retry": {"max_attempts": 3, "base": "PT1S", "cap": "PT5S"},
    },
    "expire after 5 min": {"overdue": "expire", "catchup_window": "PT5M"},
    "dst shift/both, overlap skip": {"dst_gap": "shift", "dst_fold": "both", "overlap": "skip"},
    "dst next_valid/second": {"dst_gap": "next_valid", "dst_fold": "second"},
}
# (UTC) New York falls back 2026-11-01 06:00Z and springs forward 2026-03-08
# 07:00Z; London falls back 2026-10-25 01:00Z and springs forward 2026-03-29 01:00Z.
STARTS: dict[str, datetime] = {
    "new-york fall back": utc("2026-11-01T05:10:00Z"),
    "new-york spring forward": utc("2026-03-08T06:10:00Z"),
    "london fall back": utc("2026-10-25T00:10:00Z"),
    "london spring forward": utc("2026-03-29T00:10:00Z"),
}
COMPONENTS = ("tick-a", "tick-b", "worker", "api")
# The calls a crash may be aimed at, per component (any write otherwise).
_TICK_CALLS = (
    "admit",
    "send_ahead",  # how the tick sends its intents
    "mark_sent",
    "materialize",
    "advance",
    "into_outbox",
    "close_runs",
    "acquire",
    "release",
)
CRASH_POINTS: tuple[tuple[str, str], ...] = (
    *((tick, call) for tick in ("tick-a", "tick-b") for call in _TICK_CALLS),
    *(("worker", call) for call in ("start_attempt", "deliver", "finish", "record_retry")),
    *(
        ("api", call)
        for call in (
            "save_version",
            "pause",
            "withdraw_planned",
            "close_scheduled",
            "resume",
            "insert",
            "delete",
        )
    ),
)
MAX_SCHEDULES = 4
# How long a plan lease outlives the pass that died holding it (DynamoDB's).
PLAN_LEASE = timedelta(seconds=120)
# Index lags the model may choose (model seconds; DynamoDB's is usually under
# a second, with a tail of seconds, longer under a burst of writes).
INDEX_LAGS = (0.0, 0.5, 2.0, 10.0, 30.0)
# How many messages an outage's worker takes at most before the outage is
# judged (a bound on a loop that a hanging target keeps busy).
OUTAGE_DELIVERIES = 5_000


def note(text: str) -> None:
    """A line of the replay (outside hypothesis, when a test replays steps by hand: nothing)."""
    with contextlib.suppress(InvalidArgument):
        hypothesis_note(text)


class Violation(AssertionError):
    """A promise did not hold."""


@dataclass
class VersionModel:
    number: int
    spec: Any
    dst: Any
    payload: dict[str, Any]
    created_at: datetime
    first_due: datetime | None
    ends_at: datetime | None = None  # when the next version replaced it
    overdue: Overdue = Overdue.CATCH_UP_ALL
    catchup_window: timedelta | None = None  # under expire
    # overlap ``skip``: a slot whose previous occurrence is still in progress
    # (running, or retrying) when it would start is skipped, whatever the
    # overdue policy says of it.
    skips_overlap: bool = False


@dataclass
class ScheduleModel:
    label: str
    schedule_id: str
    versions: dict[int, VersionModel] = field(default_factory=dict)
    pauses: list[list[datetime | None]] = field(default_factory=list)
    deleted_at: datetime | None = None
    # The last settled pass before a pause that is not resumed yet, or before the
    # delete: slots between it and the pause or delete came due in an outage and
    # are recorded by a resume (or, once deleted, never).
    unrecorded_from: datetime | None = None

    @property
    def current(self) -> int:
        return max(self.versions)

    @property
    def paused(self) -> bool:
        return bool(self.pauses) and self.pauses[-1][1] is None

    def paused_within(self, at: datetime) -> bool:
        """Strictly inside a pause (or after the delete)."""
        if self.deleted_at is not None and at > self.deleted_at:
            return True
        return any(p < at and (r is None or at < r) for p, r in self.pauses if p is not None)

    def paused_around(self, at: datetime) -> bool:
        """Inside a pause or on its edges (or from the delete on), or in the
        outage that ended with the pause or delete still in force."""
        if self.deleted_at is not None and at >= self.deleted_at:
            return True
        if (self.paused or self.deleted_at is not None) and (
            self.unrecorded_from is None or at > self.unrecorded_from
        ):
            stop = self.deleted_at if self.deleted_at is not None else self.pauses[-1][0]
            assert stop is not None
            if at <= stop:
                return True
        return any(p <= at and (r is None or at <= r) for p, r in self.pauses if p is not None)


@dataclass
class Component:
    name: str
    plan: CrashPlan = field(default_factory=CrashPlan)
    interleave: Interleave = field(default_factory=Interleave)
    incarnation: int = 0


@dataclass(frozen=True)
class Outage:
    """No pass ran from ``start`` to ``end``; the pass at ``end`` found the slots due."""

    start: datetime
    end: datetime


class DuetimeMachine(RuleBasedStateMachine):
    """Subclasses pick the store (``make_backend``)."""

    make_backend: ClassVar[Callable[[FakeClock], Backend]]
    # Whether the secondary indexes may lag (on a store that has them).
    index_lag: ClassVar[bool] = False
    schedules = Bundle("schedules")

    def __init__(self) -> None:
        super().__init__()
        STATS["examples"] += 1
        self.clock = FakeClock(utc("2026-11-01T05:10:00Z"))
        self.backend = type(self).make_backend(self.clock)
        self.config = TickConfig(partitioning=Partitioning(shards=4, bucket_s=60))
        self.target = FakeTarget(self.clock)
        self.transit = Transit(self.clock, DELIVERY_QUEUE.visibility_timeout_s)
        self.observer = self.backend.open_store()
        self.components = {name: Component(name) for name in COMPONENTS}
        self.models: dict[str, ScheduleModel] = {}
        self.settled_at: datetime | None = None
        self.edits = 0
        self.steps = 0
        self.checked = 0  # the last step whose promises were checked
        self.passes = 0  # tick passes under way (more than one: one inside another)
        self.restarts = 0
        # When the plan lease a dead pass holds runs out, in model time (the
        # store times it on the wall clock, which barely moves in an example).
        self.plan_lease_ends: datetime | None = None
        # Occurrences whose target call the worker made and then died before it
        # recorded the answer: the restarted worker calls again (same key).
        self.redelivered: set[str] = set()
        self.id_seed = 0
        self.ids_made = 0
        self.api: ScheduleService = self._build_api()
        self.tickers: dict[str, Ticker] = {n: self._build_ticker(n) for n in ("tick-a", "tick-b")}
        self.worker: RunWorker = self._build_worker()

    # --- building (and rebuilding after a crash) ------------------------------------------

    def _faulty_store(self, name: str) -> Store:
        component = self.components[name]
        inner = self.backend.open_store()
        ports = {
            name: Faulty(getattr(inner, name), STORE_WRITES, component.plan, component.interleave)
            for name in ("schedules", "records", "leases")
        }
        return replace(inner, **ports)  # type: ignore[no-any-return]

    def _build_api(self) -> ScheduleService:
        return ScheduleService(
            self._faulty_store("api"),
            self.clock,
            self.config.partitioning,
            new_id=self._new_schedule_id,
        )

    def _new_schedule_id(self) -> str:
        self.ids_made += 1
        token = hashlib.sha256(f"{self.id_seed}:{self.ids_made}".encode()).digest()[:10]
        return new_schedule_id(token)

    def _build_ticker(self, name: str) -> Ticker:
        component = self.components[name]
        queue: Any = Faulty(
            self.backend.open_queue(), QUEUE_WRITES, component.plan, component.interleave
        )
        return Ticker(
            self._faulty_store(name),
            queue,
            self.clock,
            self.config,
            owner=f"{name}.{component.incarnation}",
        )

    def _build_worker(self) -> RunWorker:
        component = self.components["worker"]
        store = self.backend.open_store()
        runs: Any = Faulty(self.backend.open_runs(store), RUN_WRITES, component.plan)
        target: Any = Faulty(self.target, TARGET_CALLS, component.plan)
        return RunWorker(runs, target, self.clock, random.Random(component.incarnation))

    def _restart(self, name: str) -> None:
        """The process died: it comes back with nothing but the durable state."""
        component = self.components[name]
        note(f"  {name} died ({component.plan.fired}) and restarts")
        self.restarts += 1
        component.incarnation += 1
        if name == "api":
            self.api = self._build_api()
        elif name == "worker":
            self.worker = self._build_worker()
        else:
            self.tickers[name] = self._build_ticker(name)
            if self.plan_lease_ends is None and self.backend.plan_held():
                self.plan_lease_ends = self.clock.now() + PLAN_LEASE

    def _step(self) -> None:
        STATS["steps"] += 1
        self.steps += 1
        self.clock.advance(_STEP)

    # --- the model's view of a schedule -----------------------------------------------------

    def _version_model(self, sid: str, number: int, payload: dict[str, Any]) -> VersionModel:
        stored = self.observer.schedules.get_version(sid, number)
        schedule = self.observer.schedules.get(sid)
        assert stored is not None and schedule is not None
        return VersionModel(
            number,
            stored.spec,
            stored.policy.dst,
            payload,
            stored.created_at,
            schedule.next_due,
            overdue=stored.policy.overdue,
            catchup_window=stored.policy.catchup_window,
            skips_overlap=stored.policy.overlap is Overlap.SKIP,
        )

    def _sync(self, model: ScheduleModel, payload: dict[str, Any] | None = None) -> None:
        """Bring the model up to what the store says after an API call (which
        may have died half way)."""
        stored = self.observer.schedules.get(model.schedule_id)
        assert stored is not None
        now = self.clock.now()
        if stored.version > model.current:
            assert stored.version == model.current + 1 and payload is not None
            model.versions[model.current].ends_at = stored.current.created_at
            model.versions[stored.version] = self._version_model(
                model.schedule_id, stored.version, payload
            )
        if stored.state.paused and not model.paused:
            model.pauses.append([now, None])
            if model.deleted_at is None:
                model.unrecorded_from = self.settled_at
        elif not stored.state.paused and model.paused:
            model.pauses[-1][1] = now
        if stored.deleted and model.deleted_at is None:
            model.deleted_at = now
            if not model.paused:
                model.unrecorded_from = self.settled_at
        note(f"  {model.label}: {self._describe(model)}")

    def _describe(self, model: ScheduleModel) -> str:
        stored = self.observer.schedules.get(model.schedule_id)
        if stored is None:
            return "missing"
        state = "deleted" if stored.deleted else "paused" if stored.state.paused else "active"
        due = None if stored.next_due is None else stored.next_due.isoformat()
        return f"v{stored.version} {state}, next_due {due}"

    def _api_call(self, model: ScheduleModel, what: str, call: Callable[[], object]) -> None:
        try:
            call()
        except Crash:
            self._restart("api")
        except (ScheduleNotFound, ScheduleNotActive) as refused:
            note(f"  {what} refused: {refused}")
        self._sync(model)

    # --- rules: what users do ---------------------------------------------------------------

    @initialize(start=st.sampled_from(sorted(STARTS)), ids=st.integers(0, 2**16))
    def start_near_a_dst_night(self, start: str, ids: int = 0) -> None:
        """The clock's start, and the seed of the schedule ids (so of their
        shards): drawn, so an example and its replay make the same ones."""
        self.clock.set(STARTS[start])
        self.id_seed = ids
        note(f"clock starts at {self.clock.now().isoformat()} ({start})")

    @precondition(lambda self: len(self.models) < MAX_SCHEDULES)
    @rule(
        target=schedules,
        spec=st.sampled_from(sorted(SPECS)),
        policy=st.sampled_from(sorted(POLICIES)),
    )
    def create(self, spec: str, policy: str) -> str:
        self._step()
        label = f"s{len(self.models) + 1}"
        payload = {"schedule": label, "edit": 0}
        body = {
            "name": label,
            "spec": SPECS[spec],
            "policy": {**POLICIES[policy], "run_timeout": "PT10S"},
            "target": WEBHOOK,
            "payload": payload,
        }
        # Creation does not die half way here: the model must know every schedule's id.
        schedule, _ = ScheduleService(self.observer, self.clock, self.config.partitioning).create(
            definition(body)
        )
        model = ScheduleModel(label, schedule.schedule_id)
        model.versions[1] = self._version_model(schedule.schedule_id, 1, payload)
        self.models[label] = model
        note(f"  {label} = {schedule.schedule_id}: {spec}, {policy}: {self._describe(model)}")
        return label

    @rule(
        label=schedules,
        spec=st.sampled_from(sorted(SPECS)),
        policy=st.sampled_from(sorted(POLICIES)),
    )
    def edit(self, label: str, spec: str, policy: str) -> None:
        self._step()
        model = self.models[label]
        self.edits += 1
        payload = {"schedule": label, "edit": self.edits}
        body = {
            "name": label,
            "spec": SPECS[spec],
            "policy": {**POLICIES[policy], "run_timeout": "PT10S"},
            "target": WEBHOOK,
            "payload": payload,
        }
        try:
            self.api.edit(model.schedule_id, model.current, definition(body))
        except Crash:
            self._restart("api")
        except ScheduleNotFound as refused:
            note(f"  edit refused: {refused}")
        self._sync(model, payload)

    @rule(label=schedules, offset=st.sampled_from([-1, 1]))
    def edit_stale(self, label: str, offset: int) -> None:
        """An edit naming a version that is not the current one is refused and changes nothing."""
        self._step()
        model = self.models[label]
        before = self.observer.schedules.get(model.schedule_id)
        stale = model.current + offset
        if stale < 1 or before is None or before.deleted:
            return
        try:
            self.api.edit(
                model.schedule_id,
                stale,
                definition({"name": "x", "spec": SPECS["every 7 min"], "target": WEBHOOK}),
            )
        except VersionConflict:
            pass
        except Crash:
            self._restart("api")
        else:
            self._violate("a stale edit was accepted", f"{label} edited at version {stale}")
        after = self.observer.schedules.get(model.schedule_id)
        if after != before:
            self._violate("a refused edit changed the schedule", f"{before} -> {after}")

    @rule(label=schedules)
    def pause(self, label: str) -> None:
        self._step()
        model = self.models[label]
        self._api_call(model, "pause", lambda: self.api.pause(model.schedule_id, "model"))

    @rule(label=schedules)
    def resume(self, label: str) -> None:
        self._step()
        model = self.models[label]
        self._api_call(model, "resume", lambda: self.api.resume(model.schedule_id))

    @rule(label=schedules)
    def delete(self, label: str) -> None:
        self._step()
        model = self.models[label]
        self._api_call(model, "delete", lambda: self.api.delete(model.schedule_id))

    @rule(label=schedules)
    def trigger(self, label: str) -> None:
        self._step()
        model = self.models[label]
        self._api_call(model, "trigger", lambda: self.api.trigger(model.schedule_id))

    @rule(label=schedules, hours=st.integers(1, 6))
    def backfill(self, label: str, hours: int) -> None:
        self._step()
        model = self.models[label]
        now = self.clock.now()
        self._api_call(
            model,
            "backfill",
            lambda: self.api.backfill(
                model.schedule_id, now - timedelta(hours=hours), now - timedelta(minutes=1)
            ),
        )

    # --- rules: time, dispatchers, the worker, the queue, the target ------------------------

    @rule(seconds=st.integers(1, 90))
    def time_passes(self, seconds: int) -> None:
        self._step()
        self.clock.advance(seconds)

    @rule(minutes=st.integers(5, 50))
    def a_while_passes(self, minutes: int) -> None:
        self._step()
        self.clock.advance(minutes * 60)

    @rule(minutes=st.integers(1, 15))
    def outage(self, minutes: int) -> None:
        """No tick for some minutes (the tick's schedule or function down),
        then a pass, and the worker takes every message it sent: each
        overdue policy must hold for the slots that came due meanwhile
        (``_outage_kept``)."""
        self._step()
        STATS["fault: outage (minutes)"] += 1
        start = self.clock.now()
        self.clock.advance(minutes * 60)
        restarts = self.restarts
        # A pass that died holding the plan lease (on the wall clock) leaves
        # the next ones without it: what they plan late is not judged here.
        judged = not self.backend.plan_held()
        if not self._tick("tick-a") or not judged:
            return
        outage = Outage(start, self.clock.now())
        if not self.backend.indexes_current():
            # A record the pass stored waiting is dispatched from an index
            # that may not show it yet: the next pass, once the lag is over,
            # sends it (a tick comes every minute).
            self.clock.advance(max(INDEX_LAGS) + 1)
            if not self._tick("tick-a"):
                return
        # Every message the queue holds: a backlog the long outages before
        # left (they deliver nothing) is taken too, before the check.
        drained = False
        for _ in range(OUTAGE_DELIVERIES):
            if not self._deliver(0):
                drained = True
                break
        if drained and self.restarts == restarts:  # no process died meanwhile
            self._outage_kept(outage)

    @precondition(lambda self: self.index_lag and self.backend.lags)
    @rule(
        seconds=st.sampled_from(INDEX_LAGS),
        table=st.sampled_from(["all", "runs", "schedules"]),
    )
    def index_lags(self, seconds: float, table: str) -> None:
        """From now, a write to ``table`` reaches its secondary indexes
        ``seconds`` later: a Query on an index answers from the items as
        they were."""
        self._step()
        if seconds:
            STATS["fault: index lag"] += 1
        self.backend.lag_index(seconds, table)

    @rule(
        first=st.sampled_from(["tick-a", "tick-b"]),
        second=st.sampled_from(["tick-a", "tick-b"]),
        gap_ms=st.sampled_from([0, 1, 500, 5000]),
    )
    def repeated_tick(self, first: str, second: str, gap_ms: int) -> None:
        """A tick delivered twice (EventBridge Scheduler and Lambda's async
        invocation are at least once): two passes back to back."""
        self._step()
        STATS["fault: repeated tick"] += 1
        self._tick(first)
        self.clock.advance(timedelta(milliseconds=gap_ms))
        self._tick(second)

    @rule(
        first=st.sampled_from(["tick-a", "tick-b"]),
        at=st.integers(1, 8),
        method=st.sampled_from([None, "due", "materialize", "advance", "admit"]),
    )
    def overlapping_ticks(self, first: str, at: int, method: str | None) -> None:
        """Two passes at once: the other dispatcher runs a whole pass in the
        middle of ``first``'s, just before its ``at``-th write or planning call
        (of ``method`` alone, if given)."""
        self._step()
        second = "tick-b" if first == "tick-a" else "tick-a"
        interleave = self.components[first].interleave
        interleave.arm(at, lambda: self._tick(second), method)
        try:
            self._tick(first)
        finally:
            if not interleave.fired:
                note(f"  {second} did not come in ({first} made fewer calls)")
            interleave.disarm()

    @rule(hours=st.integers(2, 10))
    def long_outage(self, hours: int) -> None:
        """Nothing runs for hours (every process down); the clock moves on."""
        self._step()
        STATS["fault: long outage"] += 1
        self.clock.advance(hours * 3600)

    @rule(
        name=st.sampled_from(COMPONENTS),
        at=st.integers(1, 6),
        when=st.sampled_from(["before", "after"]),
    )
    def arm_crash(self, name: str, at: int, when: str) -> None:
        """``name`` dies at its ``at``-th write from now, ``when`` before or after it."""
        self._step()
        self.components[name].plan.arm(at, when)  # type: ignore[arg-type]

    @rule(
        name_and_call=st.sampled_from(CRASH_POINTS),
        at=st.integers(1, 3),
        when=st.sampled_from(["before", "after"]),
    )
    def arm_crash_at_call(self, name_and_call: tuple[str, str], at: int, when: str) -> None:
        """``name`` dies at its ``at``-th call of one port method, ``when`` before or after it
        (a dispatcher before or after the send, the worker after the target answered...)."""
        self._step()
        name, method = name_and_call
        self.components[name].plan.arm(at, when, method)  # type: ignore[arg-type]

    @rule(name=st.sampled_from(["tick-a", "tick-b"]))
    def tick(self, name: str) -> None:
        self._step()
        self._tick(name)

    @rule(name=st.sampled_from(["tick-a", "tick-b"]), late=st.integers(0, 5))
    def tick_when_next_due(self, name: str, late: int) -> None:
        """Time moves to ``late`` seconds after the next slot of any schedule, then a tick."""
        self._step()
        due = [
            s.next_due
            for m in self.models.values()
            if (s := self.observer.schedules.get(m.schedule_id)) is not None
            and s.next_due is not None
        ]
        if due and min(due) > self.clock.now():
            self.clock.set(min(due) + timedelta(seconds=late))
        self._tick(name)

    def _tick(self, name: str) -> bool:
        started = self.clock.now()
        if self.plan_lease_ends is not None and started >= self.plan_lease_ends:
            self.backend.expire_plan_lease()
            self.plan_lease_ends = None
        self.passes += 1
        try:
            report = self.tickers[name].tick_once()
        except Crash:
            self._restart(name)
            return False
        finally:
            self.passes -= 1
        plan, dispatch = report.plan, report.dispatch
        note(
            f"  {name}: planned {plan.materialized}, skipped {plan.skipped + dispatch.skipped}, "
            f"expired {plan.expired + dispatch.expired}, admitted {dispatch.admitted}, "
            f"sent {dispatch.sent}, shards {dispatch.shards}"
        )
        # A pass that ended with nothing due left unplanned settles every slot
        # up to its start. Asked only when no other pass is half way and the
        # indexes have caught up (a lagging index may not show what is due);
        # the question must not keep the plan lease the store may take for it.
        if not self.passes and self.backend.indexes_current():
            asking = self.observer.schedules.plan_session()
            nothing_due = not self.observer.schedules.due(started, 1, session=asking).items
            self.observer.schedules.planned_through(None, session=asking)
            if nothing_due:
                self.settled_at = started
        return True

    @rule(index=st.integers(0, 20))
    def deliver(self, index: int) -> None:
        """The worker receives one visible message, chosen out of order."""
        self._step()
        self._deliver(index)

    def _deliver(self, index: int) -> bool:
        self.transit.arrive(self.backend.drain())
        visible = self.transit.visible()
        if not visible:
            return False
        message = self.transit.take(visible[index % len(visible)])
        calls = len(self.target.calls)
        try:
            handled = handle_message(self.worker, self.transit, message)
        except Crash:
            # A target call whose answer was not recorded is made again.
            self.redelivered.update(call.key for call in self.target.calls[calls:])
            self._restart("worker")
            return True
        if handled == "deleted":
            self.transit.delete(message.receipt)
        return True

    @rule(index=st.integers(0, 20))
    def deliver_twice(self, index: int) -> None:
        """The queue delivers a copy of a message (SQS at-least-once)."""
        self._step()
        self.transit.arrive(self.backend.drain())
        messages = sorted(self.transit.messages.values(), key=lambda m: m.message_id)
        if messages:
            STATS["fault: duplicate delivery"] += 1
            self.transit.duplicate(messages[index % len(messages)])

    @rule(index=st.integers(0, 20), seconds=st.integers(30, 900))
    def deliver_late(self, index: int, seconds: int) -> None:
        """The queue holds a message back (at most SQS's longest delay, 15 minutes)."""
        self._step()
        self.transit.arrive(self.backend.drain())
        visible = self.transit.visible()
        if visible:
            STATS["fault: late delivery"] += 1
            self.transit.hold_back(visible[index % len(visible)], seconds)

    @rule(
        mode=st.sampled_from(["succeed", "fail_for_a_while", "fail_for_good", "hang"]),
        failures=st.integers(1, 4),
    )
    def target_behaves(self, mode: str, failures: int) -> None:
        self._step()
        if mode != "succeed":
            STATS[f"fault: target {mode.replace('_', ' ')}"] += 1
        self.target.set_mode(mode, failures)  # type: ignore[arg-type]

    # --- the promises -----------------------------------------------------------------------

    def _violate(self, promise: str, detail: str) -> None:
        STATS[f"violation: {promise}"] += 1
        raise Violation(f"{promise}: {detail}")

    def _runs(self, model: ScheduleModel) -> list[Run]:
        runs: list[Run] = []
        token: str | None = None
        while True:
            page = self.observer.records.runs(model.schedule_id, 100, token)
            runs.extend(page.items)
            token = page.next_token
            if token is None:
                return runs

    def _expected_slots(self, model: ScheduleModel, upto: datetime) -> Iterator[tuple[int, Slot]]:
        """The slots due by ``upto`` while the schedule was active, each with the
        version that was current for it."""
        for number, version in sorted(model.versions.items()):
            if version.first_due is None:
                continue
            end = upto if version.ends_at is None else min(upto, version.ends_at)
            for slot in slots_after(version.spec, version.dst, version.first_due - _EPSILON):
                if slot.scheduled_at > end:
                    break
                if not model.paused_around(slot.scheduled_at):
                    yield number, slot

    @invariant()
    def promises_hold(self) -> None:
        self._check()
        self.checked = self.steps

    def _check(self) -> None:
        if not self.models:
            return
        by_key: dict[str, list[Run]] = defaultdict(list)
        runs_of: dict[str, ScheduleModel] = {}
        every: dict[str, Run] = {}
        for model in self.models.values():
            slots: dict[datetime, str] = {}
            for run in self._runs(model):
                by_key[run.business_key].append(run)
                every[run.occurrence_id] = run
                runs_of[run.occurrence_id] = model
                version = model.versions.get(run.version)
                if version is None:
                    self._violate("a run of an unknown version", f"{model.label} {run}")
                    return
                if run.kind is RunKind.SCHEDULED:
                    # One occurrence per slot, whatever the version.
                    other = slots.setdefault(run.scheduled_at, run.occurrence_id)
                    if other != run.occurrence_id:
                        self._violate(
                            "one occurrence per business key",
                            f"{model.label} has {other} and {run.occurrence_id} "
                            f"at {run.scheduled_at.isoformat()}",
                        )
                    # Promise 5: a version's slots come after its edit.
                    if run.scheduled_at <= version.created_at:
                        self._violate(
                            "edits are never retroactive",
                            f"{model.label} v{run.version} (made at "
                            f"{version.created_at.isoformat()}) has a slot at "
                            f"{run.scheduled_at.isoformat()}",
                        )
                    # Promise 6: no slot due while paused is admitted.
                    if (
                        run.admitted_at is not None
                        and model.paused_within(run.scheduled_at)
                        and not _admitted_ahead_before(model, run)
                    ):
                        self._violate(
                            "pause admits nothing",
                            f"{model.label}'s slot {run.scheduled_at.isoformat()} came due "
                            f"while paused and was admitted at {run.admitted_at.isoformat()}",
                        )
                if (
                    run.admitted_at is not None
                    and model.paused_within(run.admitted_at)
                    and not _admitted_ahead_before(model, run)
                ):
                    self._violate(
                        "pause admits nothing",
                        f"{model.label}'s {run.kind.value} {run.scheduled_at.isoformat()} "
                        f"admitted at {run.admitted_at.isoformat()}, while paused or deleted",
                    )
        for key, runs in by_key.items():
            if len(runs) > 1:
                self._violate("one occurrence per business key", f"{key}: {runs}")
        # Promise 3 and 5, as the target saw them.
        keys_by_slot: dict[str, set[str]] = defaultdict(set)
        for call in self.target.calls:
            run = every.get(call.key)
            if run is None:
                self._violate("one idempotency key per occurrence", f"unknown key {call.key}")
                return
            keys_by_slot[run.business_key].add(call.key)
            if (call.schedule_id, call.version, call.scheduled_at) != (
                run.schedule_id,
                run.version,
                run.scheduled_at,
            ):
                self._violate("one idempotency key per occurrence", f"{call} is not {run}")
            model = runs_of[call.key]
            if call.attempt == 1 and model.paused_within(call.at):
                self._violate(
                    "pause admits nothing",
                    f"{model.label}'s {run.kind.value} {run.scheduled_at.isoformat()} "
                    f"started at {call.at.isoformat()}, while paused or deleted",
                )
            self._latest_only_started_on_time(model, run, call)
            self._expire_started_in_window(model, run, call)
            expected = model.versions[run.version].payload
            if call.payload != expected:
                self._violate(
                    "edits are never retroactive",
                    f"{model.label}'s v{run.version} occurrence at "
                    f"{run.scheduled_at.isoformat()} ran with {call.payload}, not {expected}",
                )
        for key, keys in keys_by_slot.items():
            if len(keys) > 1:
                self._violate("one idempotency key per occurrence", f"{key}: {sorted(keys)}")
        # An attempt reaches the target once, unless the worker died between
        # the call and recording its answer (it then calls again, same key).
        attempts = Counter((call.key, call.attempt) for call in self.target.calls)
        for (key, attempt), count in attempts.items():
            if count > 1 and key not in self.redelivered:
                run = every[key]
                self._violate(
                    "no occurrence is delivered twice",
                    f"{runs_of[key].label}'s {run.kind.value} {run.scheduled_at.isoformat()} "
                    f"attempt {attempt} reached the target {count} times",
                )
        # Promise 2: every slot due while active, up to the settled instant, has a record.
        if self.settled_at is not None:
            for model in self.models.values():
                self._every_slot_recorded(model, self.settled_at)

    def _latest_only_started_on_time(self, model: ScheduleModel, run: Run, call: Call) -> None:
        """Overdue policy ``latest_only``, whatever the path to the start (planned
        ahead, found late, a message held back): a slot's first attempt starts
        only while it is the latest due slot of its version, so after an
        outage one run starts, not a burst of late ones."""
        version = model.versions[run.version]
        if run.kind is not RunKind.SCHEDULED or call.attempt != 1:
            return
        if version.overdue is not Overdue.LATEST_ONLY:
            return
        following = next(slots_after(version.spec, version.dst, run.scheduled_at), None)
        if following is not None and following.scheduled_at <= call.at:
            self._violate(
                "latest_only starts only the latest due slot",
                f"{model.label}'s slot {run.scheduled_at.isoformat()} started at "
                f"{call.at.isoformat()}, after the next slot came due at "
                f"{following.scheduled_at.isoformat()}",
            )

    def _expire_started_in_window(self, model: ScheduleModel, run: Run, call: Call) -> None:
        """Overdue policy ``expire``: a slot's first attempt starts at most
        ``catchup_window`` after its slot, whatever the path to the start."""
        version = model.versions[run.version]
        if run.kind is not RunKind.SCHEDULED or call.attempt != 1:
            return
        if version.overdue is not Overdue.EXPIRE or version.catchup_window is None:
            return
        if call.at - run.scheduled_at > version.catchup_window:
            self._violate(
                "expire starts nothing later than its catchup_window",
                f"{model.label}'s slot {run.scheduled_at.isoformat()} started at "
                f"{call.at.isoformat()}",
            )

    def _outage_kept(self, outage: Outage) -> None:
        """After an outage, the pass that found the slots due and the worker
        that took what it sent: under ``latest_only`` the latest slot runs and
        every earlier one is recorded superseded; under ``catch_up_all`` each
        slot runs; under ``expire`` each slot runs that is not later than its
        window, and the others are recorded expired (docs/runs.md). For each
        schedule left alone since the outage began (one version, active)."""
        now = self.clock.now()
        started = {call.key for call in self.target.calls if call.attempt == 1}
        for model in self.models.values():
            version = model.versions[model.current]
            if (
                version.first_due is None
                or version.created_at >= outage.start
                or model.deleted_at is not None
                or any(r is None or r >= outage.start for _, r in model.pauses)
            ):
                continue
            due = []
            for slot in slots_after(version.spec, version.dst, outage.start):
                if slot.scheduled_at > outage.end:
                    break
                if slot.scheduled_at >= version.first_due:
                    due.append(slot)
            for index, slot in enumerate(due):
                key = new_occurrence(
                    model.schedule_id, version.number, slot, bucket=0, shard=0, materialized_at=now
                ).business_key
                run = self.observer.records.get_by_business_key(key)
                where = f"{model.label}'s slot {slot.scheduled_at.isoformat()} after the outage"
                if run is None:
                    self._violate("no lost occurrence", f"{where} has no record")
                    return
                if run.version != version.number:
                    # Its wall time was filled by another version's record (a
                    # zone changed by an edit: one wall time, one occurrence).
                    continue
                ran = run.occurrence_id in started
                if version.skips_overlap and (run.reason or "").startswith(Reason.OVERLAP):
                    continue  # its previous occurrence was still in progress
                if version.overdue is Overdue.LATEST_ONLY:
                    if index < len(due) - 1:
                        if ran or run.reason != Reason.SUPERSEDED:
                            self._violate(
                                "after an outage latest_only runs the latest slot only",
                                f"{where} is {run.status.value} ({run.reason}), not superseded",
                            )
                    elif not ran:
                        following = next(slots_after(version.spec, version.dst, slot.scheduled_at))
                        if following.scheduled_at > now:
                            self._violate(
                                "after an outage latest_only runs the latest slot",
                                f"{where} is {run.status.value} ({run.reason}), never started",
                            )
                elif version.overdue is Overdue.CATCH_UP_ALL:
                    if not ran:
                        self._violate(
                            "after an outage catch_up_all runs every slot",
                            f"{where} is {run.status.value} ({run.reason}), never started",
                        )
                elif not ran:
                    window = version.catchup_window
                    if run.status is not RunStatus.EXPIRED or (
                        window is not None and now - slot.scheduled_at <= window
                    ):
                        self._violate(
                            "after an outage expire runs every slot within its window",
                            f"{where} is {run.status.value} ({run.reason}), never started",
                        )

    def _summarized(self, model: ScheduleModel) -> list[tuple[datetime, datetime]]:
        """The ranges that summary records count instead of one record per slot
        (past the bound of records a resume or an edit writes one by one)."""
        ranges = []
        for run in self._runs(model):
            if run.kind is RunKind.SUMMARY and run.reason:
                first, _, last = run.reason.rpartition(", ")[2].partition(" to ")
                ranges.append((utc(first), utc(last)))
        return ranges

    def _every_slot_recorded(self, model: ScheduleModel, upto: datetime) -> None:
        now = self.clock.now()
        summarized: list[tuple[datetime, datetime]] | None = None
        for number, slot in self._expected_slots(model, upto):
            key = new_occurrence(
                model.schedule_id, number, slot, bucket=0, shard=0, materialized_at=now
            ).business_key
            if self.observer.records.get_by_business_key(key) is None:
                if summarized is None:
                    summarized = self._summarized(model)
                if any(a <= slot.scheduled_at <= b for a, b in summarized):
                    continue
                self._violate(
                    "no lost occurrence",
                    f"{model.label} v{number}'s slot {slot.scheduled_at.isoformat()} "
                    f"({slot.wall.isoformat()} fold {slot.fold}) came due while active, "
                    f"before the pass at {upto.isoformat()}, and has no record",
                )

    # --- the end: settle, then nothing is left stuck ------------------------------------------

    def teardown(self) -> None:
        try:
            if self.checked == self.steps:  # every step so far kept its promises
                self._settle()
        finally:
            self.backend.close()

    def _settle(self) -> None:
        if not self.models:
            return
        for component in self.components.values():
            component.plan.disarm()
            component.interleave.disarm()
        self.backend.lag_index(0)
        end = self.clock.now()
        # Longer than a message can stay out of sight: held back 15 minutes on
        # top of the visibility timeout of a worker that died holding it.
        for _ in range(40):
            self.clock.advance(60)
            self._tick("tick-a")
            for _ in range(200):
                if not self._deliver(0):
                    break
        # Due before the faults stopped, or long enough before the settle's
        # end (a slot planned ahead by a pass that died, then the schedule
        # changed, is one of these).
        settled = max(end, self.clock.now() - timedelta(minutes=20))
        stuck = [
            f"{model.label} {run.kind.value} {run.scheduled_at.isoformat()} {run.status.value}"
            for model in self.models.values()
            for run in self._runs(model)
            if run.scheduled_at <= settled and not run.terminal
        ]
        if stuck:
            self._violate("no run is left stuck", "; ".join(stuck))
        self._still_planned(end)
        self._check()

    def _still_planned(self, since: datetime) -> None:
        """No schedule silently stops: once the faults stop and passes run
        again, every active schedule's slots after ``since`` are recorded (up
        to a few minutes before now, as the passes of the settle period
        reached them), whatever the passes before it missed."""
        upto = self.clock.now() - timedelta(minutes=5)
        for model in self.models.values():
            stored = self.observer.schedules.get(model.schedule_id)
            if stored is None or stored.deleted or stored.state.paused:
                continue
            version = model.versions[model.current]
            for slot in slots_after(version.spec, version.dst, since):
                if slot.scheduled_at > upto:
                    break
                if version.first_due is None or slot.scheduled_at < version.first_due:
                    # Before the version's first slot (an edit plans from the
                    # last slot already planned, which may be after now).
                    continue
                key = new_occurrence(
                    model.schedule_id,
                    model.current,
                    slot,
                    bucket=0,
                    shard=0,
                    materialized_at=upto,
                ).business_key
                if self.observer.records.get_by_business_key(key) is None:
                    self._violate(
                        "no schedule silently stops",
                        f"{model.label} v{model.current} is active, and its slot "
                        f"{slot.scheduled_at.isoformat()} (after the faults stopped at "
                        f"{since.isoformat()}) was never planned",
                    )


def _admitted_ahead_before(model: ScheduleModel, run: Run) -> bool:
    """A slot stored admitted ahead of its time (its admission dated at its
    slot) before the pause or delete began: the pause withdraws it, or, if
    the API died before the withdrawal, the worker's start decision stops
    it. The target check sees that it never runs while paused."""
    stored = run.materialized_at
    return stored is not None and stored < run.scheduled_at and not model.paused_around(stored)
