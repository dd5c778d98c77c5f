"""The fault injectors of the model-based tests: a process that dies at a
chosen call, another pass that runs in the middle of one (``Interleave``), a
target that succeeds, fails for a while, fails for good or hangs, and a
delivery queue whose messages the test hands to the worker twice, late or
out of order.

A ``Crash`` is raised by a wrapper around a port (store, run store, queue,
target), before or after the call it was armed for, as a kill -9 at that
instant would leave things: what was written before stays written, nothing
after it happens. The component is then built again from nothing but the
durable state, as a restart would.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from domain.delivery import Delivery, Outcome
from domain.targets import Target
from service.run_ports import QueueMessage, WorkQueue
from tests.conftest import FakeClock

# What the campaign counts: examples, steps, faults by kind, violations.
STATS: Counter[str] = Counter()

When = Literal["before", "after"]

# The calls of each port that change something (or, for the target, that the
# outside world sees): where a process can die with consequences.
STORE_WRITES = frozenset(
    {
        "create",
        "save_version",
        "pause",
        "resume",
        "delete",
        "materialize",
        "advance",
        "into_outbox",
        "insert",
        "admit",
        "close_runs",
        "close_scheduled",
        "withdraw_planned",
        "mark_sent",
        "acquire",
        "release",
        "beat",
    }
)
RUN_WRITES = frozenset({"start_attempt", "finish", "record_retry", "mark_accepted"})
QUEUE_WRITES = frozenset({"send_batch", "send_ahead"})
TARGET_CALLS = frozenset({"deliver"})
# The planner's reads and its end of pass, where another pass may also come in
# (``Interleave``): between a pass's read of what is due and its writes.
PASS_CALLS = frozenset({"due", "due_ahead", "chain_crowd", "planned_through"})


class Crash(BaseException):
    """The process was killed here (a BaseException: nothing in the code under
    test may catch it, as nothing catches a kill -9)."""


@dataclass
class CrashPlan:
    """Kill the component at its ``at``-th write call from now (counted from 1
    over every port it uses, or over the calls of ``method`` alone), ``when``
    before or after that call."""

    at: int | None = None
    when: When = "before"
    method: str | None = None
    calls: int = 0
    fired: str | None = None

    def arm(self, at: int, when: When, method: str | None = None) -> None:
        self.at, self.when, self.method, self.calls, self.fired = at, when, method, 0, None

    def disarm(self) -> None:
        self.at = None

    def count(self, name: str) -> None:
        if self.method is None or self.method == name:
            self.calls += 1

    def check(self, name: str, when: When) -> None:
        if self.at is None or self.calls != self.at or self.when != when:
            return
        if self.method is not None and self.method != name:
            return
        self.at = None
        self.fired = f"crash {when} {name}"
        STATS[f"fault: crash {when} {name}"] += 1
        raise Crash(self.fired)


@dataclass
class Interleave:
    """Run ``action`` (another dispatcher's whole pass) in the middle of a
    component's pass: just before its ``at``-th write or planning call
    (``PASS_CALLS``) from now (over every port, or of ``method`` alone),
    once. Two tick invocations at once, as Lambda's at-least-once async
    delivery and two concurrent executions make them."""

    at: int | None = None
    method: str | None = None
    action: Callable[[], None] | None = None
    calls: int = 0
    fired: bool = False

    def arm(self, at: int, action: Callable[[], None], method: str | None = None) -> None:
        self.at, self.action, self.method, self.calls, self.fired = at, action, method, 0, False

    def disarm(self) -> None:
        self.at, self.action = None, None

    def before(self, name: str) -> None:
        if self.at is None or self.action is None:
            return
        if self.method is not None and self.method != name:
            return
        self.calls += 1
        if self.calls == self.at:
            action, self.at, self.action, self.fired = self.action, None, None, True
            STATS["fault: concurrent tick pass"] += 1
            action()


class Faulty:
    """A port whose write calls count towards its component's crash plan (and
    may let another pass run first: ``interleave``)."""

    def __init__(
        self,
        inner: Any,
        writes: frozenset[str],
        plan: CrashPlan,
        interleave: Interleave | None = None,
    ) -> None:
        self._inner = inner
        self._writes = writes
        self._plan = plan
        self._interleave = interleave

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr
        interleave = self._interleave
        if name not in self._writes:
            if interleave is None or name not in PASS_CALLS:
                return attr

            def read(*args: Any, **kwargs: Any) -> Any:
                interleave.before(name)
                return attr(*args, **kwargs)

            return read
        plan = self._plan

        def call(*args: Any, **kwargs: Any) -> Any:
            if interleave is not None:
                interleave.before(name)
            plan.count(name)
            plan.check(name, "before")
            result = attr(*args, **kwargs)
            plan.check(name, "after")
            return result

        return call


# --- the target -----------------------------------------------------------------------------

Mode = Literal["succeed", "fail_for_a_while", "fail_for_good", "hang"]


@dataclass(frozen=True)
class Call:
    """One call the target received: what it saw, and when."""

    key: str
    schedule_id: str
    version: int
    scheduled_at: datetime
    payload: dict[str, Any]
    attempt: int
    at: datetime


@dataclass
class FakeTarget:
    """Records every call it receives; answers as its mode says. A hanging
    target holds the call until the timeout (the clock moves by it)."""

    clock: FakeClock
    mode: Mode = "succeed"
    failures_left: int = 0
    calls: list[Call] = field(default_factory=list)

    def set_mode(self, mode: Mode, failures: int = 0) -> None:
        self.mode, self.failures_left = mode, failures

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.calls.append(
            Call(
                key=delivery.idempotency_key,
                schedule_id=delivery.schedule_id,
                version=delivery.version,
                scheduled_at=delivery.scheduled_at,
                payload=dict(delivery.payload),
                attempt=delivery.attempt,
                at=self.clock.now(),
            )
        )
        if self.mode == "hang":
            self.clock.advance(timedelta(seconds=timeout_s))
            return Outcome.transient(f"timed out after {timeout_s:g} s")
        if self.mode == "fail_for_good":
            return Outcome.permanent("HTTP 410: gone", status_code=410)
        if self.mode == "fail_for_a_while" and self.failures_left > 0:
            self.failures_left -= 1
            if self.failures_left == 0:
                self.mode = "succeed"
            return Outcome.transient("HTTP 503: unavailable", status_code=503)
        return Outcome.succeeded(200)


# --- the queue as the worker sees it --------------------------------------------------------


@dataclass
class Message:
    message_id: str
    body: str
    visible_at: datetime
    receive_count: int = 0
    receipt: str | None = None


@dataclass
class Transit(WorkQueue):
    """Messages between the real queue and the worker, under the test's control:
    it receives whatever the dispatchers sent through the real adapter, then
    hands any visible one to the worker, copies one (a duplicate delivery) or
    holds one back (a late one). A received message is invisible for the
    queue's visibility timeout, as on SQS; a worker that dies holding it
    leaves it so."""

    clock: FakeClock
    visibility_timeout_s: float
    messages: dict[str, Message] = field(default_factory=dict)
    dead: list[tuple[str, str]] = field(default_factory=list)
    # Ids and receipts in the order they are made, not random ones: messages
    # visible at one instant are taken in the order they arrived, so a
    # replay of an example takes them in the same order.
    _numbers: Iterator[int] = field(default_factory=itertools.count)

    def _next_id(self) -> str:
        return f"{next(self._numbers):012d}"

    def arrive(self, bodies: list[str]) -> None:
        now = self.clock.now()
        for body in bodies:
            message_id = self._next_id()
            self.messages[message_id] = Message(message_id, body, now)

    def visible(self) -> list[Message]:
        now = self.clock.now()
        return sorted(
            (m for m in self.messages.values() if m.visible_at <= now),
            key=lambda m: (m.visible_at, m.message_id),
        )

    def take(self, message: Message) -> QueueMessage:
        message.receipt = self._next_id()
        message.receive_count += 1
        message.visible_at = self.clock.now() + timedelta(seconds=self.visibility_timeout_s)
        return QueueMessage(
            message.message_id, message.receipt, message.body, message.receive_count
        )

    def duplicate(self, message: Message) -> None:
        copy = self._next_id()
        self.messages[copy] = Message(copy, message.body, self.clock.now())

    def hold_back(self, message: Message, seconds: float) -> None:
        message.visible_at = max(message.visible_at, self.clock.now()) + timedelta(seconds=seconds)

    def _holder(self, receipt: str) -> Message | None:
        return next((m for m in self.messages.values() if m.receipt == receipt), None)

    # WorkQueue
    def receive(self, max_messages: int, wait_s: float) -> list[QueueMessage]:
        return [self.take(m) for m in self.visible()[:max_messages]]

    def change_visibility(self, receipt: str, delay_s: float) -> None:
        held = self._holder(receipt)
        if held is not None:
            held.visible_at = self.clock.now() + timedelta(seconds=max(0.0, delay_s))

    def delete(self, receipt: str) -> None:
        held = self._holder(receipt)
        if held is not None:
            del self.messages[held.message_id]

    def dead_letter(self, message: QueueMessage, reason: str) -> None:
        held = self._holder(message.receipt)
        if held is not None:
            del self.messages[held.message_id]
            self.dead.append((held.body, reason))
