"""Overdue policies after an outage of the local stack (SQLite), with slots
planned ahead before it stopped.

The stack plans 90 s ahead and queues each intent to become visible at its
due second. Stopped for 2 minutes, it comes back to intents that all became
visible while it was down, and to slots nobody planned. Whether a slot was
planned ahead or found late, the start decision judges it the same way:
``latest_only`` runs one slot per schedule and records the others as
superseded, ``expire`` runs the ones within the catchup window,
``catch_up_all`` runs them all.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from domain.delivery import Delivery, Outcome
from domain.run import DeliveryIntent, Reason, RunStatus
from domain.targets import Target
from service.runs import RunWorker
from tests.conftest import FakeClock, World, definition, make_world

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


class Calls:
    def __init__(self) -> None:
        self.ids: list[str] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.ids.append(delivery.occurrence_id)
        return Outcome.succeeded(200)


class LocalStack:
    """The local stack's tick (queue ahead, lookahead 90 s) and worker, over one file."""

    def __init__(self, world: World, clock: FakeClock, path: Path) -> None:
        self.world = world
        self.clock = clock
        self.queue = SqliteQueue(path, clock=clock, connection_of=world.store.retention)
        self.target = Calls()
        self.worker = RunWorker(SqliteRunStore(world.store), self.target, clock, random.Random(1))

    def create(self, every: str, policy: dict[str, str]) -> str:
        body = {"name": every, "spec": {"every": every}, "target": WEBHOOK, "policy": policy}
        return self.world.schedules.create(definition(body))[0].schedule_id

    def tick(self) -> None:
        self.world.ticker(queue=self.queue).tick_once()

    def run_for(self, seconds: int) -> None:
        """Run as the local stack does: a pass a second, the worker after it."""
        for _ in range(seconds):
            self.tick()
            self.drain()
            self.clock.advance(1)

    def drain(self) -> None:
        while messages := self.queue.receive(10, 0):
            for message in messages:
                intent = DeliveryIntent.from_dict(json.loads(message.body))
                if self.worker.handle(intent).action == "delete":
                    self.queue.delete(message.receipt)

    def outcomes(self, schedule_id: str) -> Counter[str]:
        """How each slot of the schedule ended: succeeded, or its reason."""
        return Counter(
            r.status.value if r.status is RunStatus.SUCCEEDED else (r.reason or r.status.value)
            for r in self.world.store.records.runs(schedule_id, 1000).items
            if r.scheduled_at <= self.clock.now()
        )


@pytest.fixture
def stack(tmp_path: Path, clock: FakeClock) -> Iterator[LocalStack]:
    world = make_world(tmp_path / "d.db", clock)
    made = LocalStack(world, clock, tmp_path / "d.db")
    yield made
    made.queue.close()
    world.store.close()


def test_after_a_two_minute_outage_latest_only_runs_once_per_schedule(
    stack: LocalStack, clock: FakeClock
) -> None:
    # Given every-10 s and every-20 s schedules under latest_only (the default),
    # running for a while on the local stack (each pass plans 90 s ahead)
    ten = stack.create("PT10S", {})
    twenty = stack.create("PT20S", {})
    stack.run_for(25)
    before = {sid: stack.outcomes(sid)["succeeded"] for sid in (ten, twenty)}
    assert before == {ten: 2, twenty: 1}
    # When the stack stops for 2 minutes and starts again
    clock.advance(120)
    stack.tick()
    stack.drain()
    # Then each schedule has run once more, and every other slot that came due
    # while it was down is recorded as superseded: none is delivered late
    ten_after = stack.outcomes(ten)
    assert ten_after["succeeded"] == before[ten] + 1
    assert ten_after[Reason.SUPERSEDED] == 11
    twenty_after = stack.outcomes(twenty)
    assert twenty_after["succeeded"] == before[twenty] + 1
    assert twenty_after[Reason.SUPERSEDED] == 5
    assert sum(ten_after.values()) == 14 and sum(twenty_after.values()) == 7


def test_after_a_two_minute_outage_expire_runs_what_is_within_its_window(
    stack: LocalStack, clock: FakeClock
) -> None:
    sid = stack.create("PT10S", {"overdue": "expire", "catchup_window": "PT30S"})
    stack.run_for(5)
    clock.advance(120)  # down from 08:00:05 to 08:02:05
    stack.tick()
    stack.drain()
    outcomes = stack.outcomes(sid)
    # 08:00:10 ... 08:02:00 came due while down: late by 115 s down to 5 s.
    # Late by at most 30 s (08:01:40 ... 08:02:00) run; the other 9 expire.
    assert outcomes["succeeded"] == 3
    assert sum(n for reason, n in outcomes.items() if reason.startswith("expired: found")) == 9


def test_after_a_two_minute_outage_catch_up_all_runs_every_slot(
    stack: LocalStack, clock: FakeClock
) -> None:
    sid = stack.create("PT10S", {"overdue": "catch_up_all"})
    stack.run_for(5)
    clock.advance(120)
    stack.tick()
    stack.drain()
    assert stack.outcomes(sid) == Counter({"succeeded": 12})
