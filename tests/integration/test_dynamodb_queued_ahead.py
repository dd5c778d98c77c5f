"""Slots queued ahead on DynamoDB (moto), planned as the stack plans (a 90 s
lookahead, planning early on): a schedule selected by the lookahead is filled
up to it, every slot admitted and queued ahead; pause and delete withdraw the
slots already queued, and an edit lands within the lookahead.

Each test drives the real planner (``Ticker`` passes, queueing ahead as
deployed) and the real worker over moto, and counts requests from their own
parameters. The queue is a fake that holds each intent until its due second
(moto's SQS holds messages back by the real clock).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import dynamo_store
from domain.delivery import Delivery, Outcome
from domain.partition import Partitioning
from domain.run import DeliveryIntent, RunStatus
from domain.targets import Target
from service.planning.config import TickConfig
from service.planning.ticker import PlanNow, Ticker
from service.ports import DeliveryQueue
from service.runs import RunWorker
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition, utc

START = utc("2026-12-01T08:00:00Z")
WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
PARTS = Partitioning(shards=2, bucket_s=60)
LOOKAHEAD = timedelta(seconds=90)
# As the stack's tick: a budget, and planning early on (beyond the lookahead,
# for seeds and crowds only).
DEPLOYED = TickConfig(partitioning=PARTS, lookahead=LOOKAHEAD, plan_budget=timedelta(seconds=50))
EVERY_MINUTE = {"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}


class HeldQueue(DeliveryQueue):
    """Keeps every intent sent; ``due`` hands out, once, those due by then."""

    def __init__(self) -> None:
        self.held: list[DeliveryIntent] = []

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        self.held.extend(intents)
        return []

    def due(self, now: datetime) -> list[DeliveryIntent]:
        ready = sorted(
            (i for i in self.held if i.scheduled_at <= now), key=lambda i: i.scheduled_at
        )
        self.held = [i for i in self.held if i.scheduled_at > now]
        return ready


class Calls:
    """A target that succeeds and remembers each delivery."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.deliveries.append(delivery)
        return Outcome.succeeded(200)


class World:
    def __init__(self, client: Any, config: TickConfig, name: str = "ahead") -> None:
        self.client = client
        self.clock = FakeClock(START)
        self.tables = create_store_tables(client, name)
        self.store = dynamo_store(client, self.tables, due_shards=2)
        self.queue = HeldQueue()
        self.ticker = Ticker(self.store, self.queue, self.clock, config, owner="tick-1")
        self.target = Calls()
        worker_store = DynamoRunStore(dynamo_store(client, self.tables, due_shards=2))
        self.worker = RunWorker(worker_store, self.target, self.clock, random.Random(1))
        self.service = ScheduleService(
            self.store,
            self.clock,
            PARTS,
            planning=PlanNow(self.store, self.queue, self.clock, config),
        )

    def create(self, spec: dict[str, Any], payload: dict[str, Any] | None = None) -> str:
        body = {"name": "job", "spec": spec, "target": WEBHOOK, "payload": payload or {}}
        return self.service.create(definition(body))[0].schedule_id

    def minutes(self, count: int, *, work: bool = True) -> None:
        """A tick pass each minute, as EventBridge Scheduler invokes it, and
        the worker running every intent as it comes due, second by second."""
        for _ in range(count):
            self.ticker.tick_once()
            self.work_until(self.clock.now() + timedelta(seconds=60), work=work)

    def work_until(self, end: datetime, *, work: bool = True) -> None:
        while True:
            upcoming = sorted(i.scheduled_at for i in self.queue.held)
            if not upcoming or upcoming[0] >= end or not work:
                break
            self.clock.set(max(self.clock.now(), upcoming[0]))
            for intent in self.queue.due(self.clock.now()):
                self.worker.handle(intent)
        self.clock.set(end)

    def slots(self, schedule_id: str) -> list[tuple[datetime, RunStatus, int, str | None]]:
        runs = self.store.records.runs(schedule_id, 500).items
        return sorted((r.scheduled_at, r.status, r.version, r.reason) for r in runs)

    def called(self) -> list[str]:
        return [d.occurrence_id for d in self.target.deliveries]


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


def _every_minute_from(first: datetime, last: datetime) -> list[datetime]:
    count = int((last - first).total_seconds() // 60) + 1
    return [first + timedelta(minutes=m) for m in range(count)]


def test_a_pause_withdraws_the_queued_slots_and_a_resume_runs_on(client: Any) -> None:
    # Given a minutely schedule planned ahead (slots queued to ~08:04:30)
    world = World(client, DEPLOYED)
    sid = world.create(EVERY_MINUTE)
    world.minutes(3)  # 08:00 .. 08:03, 08:01 .. 08:03 run
    queued = [i.scheduled_at for i in world.queue.held]
    assert queued  # a slot already admitted and queued
    # When it is paused at 08:03:30 and resumed at 08:06:30
    world.work_until(utc("2026-12-01T08:03:30Z"))  # 08:03 runs
    world.service.pause(sid, "maintenance")
    world.work_until(utc("2026-12-01T08:04:00Z"))
    world.minutes(2)  # 08:04, 08:05
    world.work_until(utc("2026-12-01T08:06:30Z"))
    called_while_paused = list(world.called())
    world.service.resume(sid)
    world.work_until(utc("2026-12-01T08:07:00Z"))
    world.minutes(10)
    # Then the slots planned after the pause were withdrawn: not called, no
    # record each; the resume recorded the pause as one summary of them
    slots = world.slots(sid)
    paused = [s for s in slots if utc("2026-12-01T08:03:30Z") < s[0] < utc("2026-12-01T08:06:30Z")]
    assert paused == [
        (
            utc("2026-12-01T08:04:00Z"),
            RunStatus.SKIPPED,
            1,
            "paused: 3 slots skipped, 2026-12-01T08:04:00Z to 2026-12-01T08:06:00Z",
        )
    ]
    slots = [s for s in slots if s not in paused]
    assert len(called_while_paused) == 3  # 08:01 .. 08:03, nothing while paused
    # And every other slot is there once, none missing; the ones after the resume ran
    instants = [s[0] for s in slots]
    assert len(instants) == len(set(instants))
    end = world.clock.now()
    assert [at for at in instants if at < end] == [
        at
        for at in _every_minute_from(utc("2026-12-01T08:01:00Z"), end - timedelta(minutes=1))
        if not utc("2026-12-01T08:03:30Z") < at < utc("2026-12-01T08:06:30Z")
    ]
    ran = [s for s in slots if s[1] is RunStatus.SUCCEEDED]
    assert [s[0] for s in ran] == [
        at
        for at in instants
        if at < end and not (utc("2026-12-01T08:03:30Z") < at < utc("2026-12-01T08:06:30Z"))
    ]
    assert len(world.called()) == len(set(world.called())) == len(ran)


def test_a_delete_runs_none_of_the_queued_slots(client: Any) -> None:
    world = World(client, DEPLOYED)
    sid = world.create(EVERY_MINUTE)
    world.minutes(2)
    assert world.queue.held
    called = len(world.called())
    world.clock.set(utc("2026-12-01T08:02:30Z"))
    world.service.delete(sid)
    world.work_until(utc("2026-12-01T08:03:00Z"))
    world.minutes(10)
    assert len(world.called()) == called
    # The slots queued after the delete were withdrawn with it.
    assert [s for s in world.slots(sid) if s[0] > utc("2026-12-01T08:02:30Z")] == []


def test_an_edit_lands_within_the_lookahead(client: Any) -> None:
    # Given a minutely schedule (payload v1) planned ahead
    world = World(client, DEPLOYED)
    sid = world.create(EVERY_MINUTE, {"v": 1})
    world.minutes(3)
    schedule = world.store.schedules.get(sid)
    assert schedule is not None and schedule.last_materialized_at is not None
    planned_through = schedule.last_materialized_at
    assert planned_through <= world.clock.now() + LOOKAHEAD  # queued up to the lookahead
    # When it is edited at 08:03:30 to every two minutes with payload v2
    edited_at = utc("2026-12-01T08:03:30Z")
    world.clock.set(edited_at)
    world.service.edit(
        sid,
        schedule.version,
        definition(
            {
                "name": "job",
                "spec": {"every": "PT2M", "start_at": "2026-12-01T08:00:00Z"},
                "target": WEBHOOK,
                "payload": {"v": 2},
            }
        ),
    )
    world.work_until(utc("2026-12-01T08:04:00Z"))
    world.minutes(15)
    slots = world.slots(sid)
    instants = [s[0] for s in slots]
    # Then no instant twice; the slots queued before the edit ran as version 1,
    # every one after them is version 2's (every two minutes), none before
    assert len(instants) == len(set(instants))
    old = [s for s in slots if s[2] == 1]
    new = [s for s in slots if s[2] == 2]
    assert [s[0] for s in old] == _every_minute_from(utc("2026-12-01T08:01:00Z"), planned_through)
    assert new and min(s[0] for s in new) > planned_through
    # What was queued before the edit is at most a lookahead's worth: every
    # slot after it is version 2's (a plan block ran 5 more minutes as version 1).
    assert all(s[2] == 2 for s in slots if s[0] > edited_at + LOOKAHEAD)
    assert min(s[0] for s in new) <= edited_at + LOOKAHEAD + timedelta(minutes=2)
    assert all(s[0].minute % 2 == 0 for s in new)
    payloads = {d.occurrence_id: d.payload for d in world.target.deliveries}
    runs = {r.occurrence_id: r for r in world.store.records.runs(sid, 500).items}
    assert payloads and all(payloads[oid] == {"v": runs[oid].version} for oid in payloads), (
        "each run was delivered with its own version's payload"
    )
    assert len(world.called()) == len(set(world.called()))
