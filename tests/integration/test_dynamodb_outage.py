"""Overdue policies after an outage on DynamoDB (moto), as deployed: a pass a
minute plans its lookahead ahead (and early, with its budget), every slot
admitted and queued with a delay.

Stopped for 2 minutes (no pass, no worker), the deployment comes back to
every intent that became visible meanwhile. The worker asks the start
decision before each first attempt, so ``latest_only`` delivers one run per
schedule and records the other slots as superseded, as it does for slots
found late; ``expire`` ends the ones beyond the catchup window.

The queue is a fake that holds each intent until its due second (moto's SQS
holds messages back by the real clock).
"""

from __future__ import annotations

import random
from collections import Counter
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
from domain.run import DeliveryIntent, Reason, RunStatus
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
DEPLOYED = TickConfig(
    partitioning=PARTS,
    lookahead=timedelta(seconds=90),
    plan_budget=timedelta(seconds=50),
)


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
    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.deliveries.append(delivery)
        return Outcome.succeeded(200)


class Deployment:
    def __init__(self, client: Any) -> None:
        self.clock = FakeClock(START)
        tables = create_store_tables(client, "outage")
        self.store = dynamo_store(client, tables, due_shards=2)
        self.queue = HeldQueue()
        self.ticker = Ticker(self.store, self.queue, self.clock, DEPLOYED, owner="tick-1")
        self.target = Calls()
        worker_store = DynamoRunStore(dynamo_store(client, tables, due_shards=2))
        self.worker = RunWorker(worker_store, self.target, self.clock, random.Random(1))
        self.service = ScheduleService(
            self.store,
            self.clock,
            PARTS,
            planning=PlanNow(self.store, self.queue, self.clock, DEPLOYED),
        )

    def create(self, every: str, policy: dict[str, str]) -> str:
        body = {"name": every, "spec": {"every": every}, "target": WEBHOOK, "policy": policy}
        return self.service.create(definition(body))[0].schedule_id

    def work(self) -> None:
        for intent in self.queue.due(self.clock.now()):
            self.worker.handle(intent)

    def minute(self) -> None:
        """A pass, then the worker taking each intent at its due second."""
        self.ticker.tick_once()
        end = self.clock.now() + timedelta(seconds=60)
        while (upcoming := sorted(i.scheduled_at for i in self.queue.held)) and (upcoming[0] < end):
            self.clock.set(max(self.clock.now(), upcoming[0]))
            self.work()
        self.clock.set(end)

    def delivered(self, schedule_id: str) -> int:
        return sum(1 for d in self.target.deliveries if d.schedule_id == schedule_id)

    def outcomes(self, schedule_id: str) -> Counter[str]:
        return Counter(
            r.reason or r.status.value
            for r in self.store.records.runs(schedule_id, 500).items
            if r.scheduled_at <= self.clock.now() and r.status is not RunStatus.SUCCEEDED
        )


@pytest.fixture
def deployment() -> Iterator[Deployment]:
    with mock_aws():
        yield Deployment(boto3.client("dynamodb", region_name="us-east-1"))


def test_after_a_two_minute_outage_latest_only_delivers_one_run_per_schedule(
    deployment: Deployment,
) -> None:
    # Given every-10 s and every-20 s schedules under latest_only, deployed
    # and running for two minutes (each pass plans up to 90 s ahead)
    ten = deployment.create("PT10S", {})
    twenty = deployment.create("PT20S", {})
    deployment.minute()
    deployment.minute()
    before = {sid: deployment.delivered(sid) for sid in (ten, twenty)}
    assert before == {ten: 11, twenty: 5}
    # When nothing runs for 2 minutes (no pass, no worker), then it comes back
    deployment.clock.advance(125)
    deployment.work()
    deployment.ticker.tick_once()
    deployment.work()
    # Then each schedule delivered one run, and the other slots that came
    # due meanwhile are recorded as superseded
    assert deployment.delivered(ten) == before[ten] + 1
    assert deployment.delivered(twenty) == before[twenty] + 1
    assert deployment.outcomes(ten) == Counter({Reason.SUPERSEDED: 12})
    assert deployment.outcomes(twenty) == Counter({Reason.SUPERSEDED: 6})


def test_after_a_two_minute_outage_expire_ends_what_is_beyond_its_window(
    deployment: Deployment,
) -> None:
    sid = deployment.create("PT10S", {"overdue": "expire", "catchup_window": "PT30S"})
    deployment.minute()
    before = deployment.delivered(sid)
    deployment.clock.advance(120)  # 08:01:00 -> 08:03:00: 08:01:00 ... 08:03:00 due
    deployment.work()
    deployment.ticker.tick_once()  # the slots not queued before the outage
    deployment.work()
    # Late by at most 30 s (08:02:30 ... 08:03:00) run; the 9 before expire.
    assert deployment.delivered(sid) == before + 4
    expired = deployment.outcomes(sid)
    assert sum(n for reason, n in expired.items() if reason.startswith("expired: found")) == 9
