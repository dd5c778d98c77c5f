"""Planning on DynamoDB when global secondary indexes lag their table, as
DynamoDB promises they may: a Query on a GSI is eventually consistent, so an
item written a moment ago may be missing from it, or be there as it was.

moto updates its indexes with the write itself. Here a stand-in answers a
Query on a lagging table's GSIs from a copy of that table taken before the
previous tick pass began: what the last pass wrote (and anything written
since) is not in the index yet, what it removed is still there. Tables' own
reads (GetItem, BatchGetItem, Query without an index) see every write.

Every test drives the real planner (``Ticker`` passes a minute apart,
queueing ahead as deployed) over moto.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import DELIVERY_QUEUE, create_queues
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.plan_seeds import due_schedules
from adapters.dynamodb.store import dynamo_store
from adapters.sqs import SqsDeliveryQueue
from domain.partition import Partitioning
from domain.run import RunStatus
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition, utc

START = utc("2026-12-01T08:00:00Z")
WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
CONFIG = TickConfig(
    partitioning=Partitioning(shards=2, bucket_s=60),
    lookahead=timedelta(seconds=90),
)


class LaggingIndexes:
    """GSI queries on the chosen tables answered one pass late.

    ``pass_begins`` (called before each pass) copies each lagging table as it
    is now, and from then on that table's GSI queries read the copy taken
    before the previous pass: the writes of the last pass, and of the calls
    since it, are not in its indexes yet."""

    def __init__(self, client: Any, raw: Any, tables: list[str]) -> None:
        self.raw = raw  # the same backend, without the redirect
        self.tables = tables
        self.copies: dict[str, list[str]] = {name: [] for name in tables}
        self.serving: dict[str, str] = {}
        client.meta.events.register("before-parameter-build.dynamodb.Query", self._redirect)

    def _redirect(self, params: Any, **_: Any) -> None:
        if "IndexName" in params and params["TableName"] in self.serving:
            params["TableName"] = self.serving[params["TableName"]]

    def pass_begins(self) -> None:
        for name in self.tables:
            copies = self.copies[name]
            copies.append(self._copy(name, len(copies)))
            if len(copies) >= 2:
                self.serving[name] = copies[-2]

    def _copy(self, name: str, number: int) -> str:
        table = self.raw.describe_table(TableName=name)["Table"]
        copy = f"{name}-as-of-{number}"
        self.raw.create_table(
            TableName=copy,
            KeySchema=table["KeySchema"],
            AttributeDefinitions=table["AttributeDefinitions"],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": index["IndexName"],
                    "KeySchema": index["KeySchema"],
                    "Projection": index["Projection"],
                }
                for index in table.get("GlobalSecondaryIndexes", [])
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        for page in self.raw.get_paginator("scan").paginate(TableName=name):
            for item in page["Items"]:
                self.raw.put_item(TableName=copy, Item=item)
        return copy


class World:
    def __init__(self, client: Any, raw: Any, sqs: Any) -> None:
        self.client = client
        self.clock = FakeClock(START)
        self.tables = create_store_tables(raw, "lag")
        self.store = dynamo_store(client, self.tables, due_shards=2)
        url = create_queues(sqs, "lag")[DELIVERY_QUEUE.env_var]
        self.ticker = Ticker(
            self.store, SqsDeliveryQueue(sqs, url), self.clock, CONFIG, owner="tick-1"
        )
        self.service = ScheduleService(self.store, self.clock, CONFIG.partitioning)
        self.raw = raw
        self.lag: LaggingIndexes | None = None

    def lagging(self, *tables: str) -> None:
        self.lag = LaggingIndexes(self.client, self.raw, list(tables))

    def create(self, spec: dict[str, Any]) -> str:
        schedule, _ = self.service.create(
            definition({"name": "job", "spec": spec, "target": WEBHOOK})
        )
        return schedule.schedule_id

    def passes(self, minutes: int) -> None:
        for _ in range(minutes):
            if self.lag is not None:
                self.lag.pass_begins()
            self.ticker.tick_once()
            self.clock.advance(60)

    def slots(self, schedule_id: str) -> list[tuple[str, RunStatus]]:
        runs = self.store.records.runs(schedule_id, 500).items
        return sorted((r.scheduled_at.isoformat(), r.status) for r in runs)


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        yield World(
            boto3.client("dynamodb", region_name="us-east-1"),
            boto3.client("dynamodb", region_name="us-east-1"),
            boto3.client("sqs", region_name="us-east-1"),
        )


def _every_minute(first: str, last: str) -> list[str]:
    at, end = utc(first), utc(last)
    found = []
    while at <= end:
        found.append(at.isoformat())
        at += timedelta(minutes=1)
    return found


def test_a_seeds_hand_over_is_not_lost_when_the_runs_index_lags(world: World) -> None:
    # Given a schedule already on its chain, so that every pass has work and
    # moves the plan cursor.
    steady = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(3)
    # And, from now on, the runs table's indexes a pass late (the schedules
    # table's as current as moto's: the two tables' indexes lag apart).
    world.lagging(world.tables.occurrences)
    world.passes(1)
    # When a new schedule's first pass hands it from its HEAD to its chain,
    # and the passes after it read on past its next slot.
    new = world.create({"every": "PT1M", "start_at": "2026-12-01T08:05:00Z"})
    world.passes(6)
    # Then it is still planned: every minute from its first slot, once, up to
    # the last pass's horizon (as is the steady one).
    horizon = world.clock.now() - timedelta(seconds=60) + CONFIG.lookahead
    assert [at for at, _ in world.slots(new)] == _every_minute(
        "2026-12-01T08:05:00Z", horizon.isoformat()
    )
    assert [at for at, _ in world.slots(steady)] == _every_minute(
        "2026-12-01T08:01:00Z", horizon.isoformat()
    )


def test_every_index_a_pass_late_delays_a_new_schedule_and_loses_or_doubles_nothing(
    world: World,
) -> None:
    # Both tables' indexes a pass late: a new seed is not in ``due`` at the
    # first pass after its create, and a HEAD handed to its chain is still
    # there, as it was, at the pass after that.
    world.lagging(world.tables.schedules, world.tables.occurrences)
    world.passes(2)
    ids = [
        world.create({"every": "PT1M", "start_at": "2026-12-01T08:04:00Z"}),
        world.create({"every": "PT2M", "start_at": "2026-12-01T08:04:00Z"}),
        world.create({"at": "2026-12-01T08:06:30Z"}),
    ]
    world.passes(10)
    horizon = world.clock.now() - timedelta(seconds=60) + CONFIG.lookahead
    every, every_other, once = (world.slots(sid) for sid in ids)
    assert [at for at, _ in every] == _every_minute("2026-12-01T08:04:00Z", horizon.isoformat())
    assert [at for at, _ in every_other] == [
        at
        for at in _every_minute("2026-12-01T08:04:00Z", horizon.isoformat())
        if utc(at).minute % 2 == 0
    ]
    assert [at for at, _ in once] == ["2026-12-01T08:06:30+00:00"]


def test_a_due_entry_whose_head_no_longer_names_it_is_set_aside(world: World) -> None:
    # The ``due`` index may still show a HEAD as it was: a seed since handed
    # to its chain, or paused. Planning reads the HEAD consistently and sets
    # such an entry aside, so it neither plans the slot again nor starts a
    # second chain.
    handed, paused = (
        world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}) for _ in range(2)
    )

    def head(sid: str) -> dict[str, Any]:
        key = {"pk": {"S": f"S#{sid}"}, "sk": {"S": "HEAD"}}
        item: dict[str, Any] = world.raw.get_item(
            TableName=world.tables.schedules, Key=key, ConsistentRead=True
        )["Item"]
        return item

    stale = [head(handed), head(paused)]
    world.service.pause(paused)
    world.passes(1)
    assert "due_key" not in head(handed)  # handed over
    assert due_schedules(world.store.schedules, stale, world.store.schedules.plan_session()) == []
