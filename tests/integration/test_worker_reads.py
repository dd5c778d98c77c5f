"""What the worker asks DynamoDB for each message (moto): the run and its
schedule's state in one strongly consistent request, then the two writes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import DynamoPorts, dynamo_store
from adapters.dynamodb.tables import TableNames
from domain.delivery import Delivery, Outcome
from domain.run import DeliveryIntent, Reason, Run, RunStatus
from domain.targets import Target
from service.runs import RunWorker
from tests.conftest import FakeClock, build_occurrence, build_schedule, utc

NOW = utc("2026-12-01T08:00:00Z")


class Succeeds:
    def __init__(self) -> None:
        self.calls: list[Delivery] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.calls.append(delivery)
        return Outcome.succeeded(200, "ok")


class Requests:
    """(operation, {table: strongly consistent?}) of each DynamoDB request."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, bool]]] = []

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if "RequestItems" in params:
            tables = {
                table: bool(spec.get("ConsistentRead", False))
                for table, spec in params["RequestItems"].items()
            }
        else:
            tables = {params["TableName"]: bool(params.get("ConsistentRead", False))}
        self.seen.append((model.name, tables))


@dataclass
class World:
    store: DynamoPorts
    tables: TableNames
    runs: DynamoRunStore  # the worker's own store and client, as deployed
    requests: Requests


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        tables = create_store_tables(client, "reads")
        worker_client = boto3.client("dynamodb", region_name="us-east-1")
        requests = Requests()
        worker_client.meta.events.register("before-parameter-build.dynamodb.*", requests)
        yield World(
            dynamo_store(client, tables),
            tables,
            DynamoRunStore(dynamo_store(worker_client, tables)),
            requests,
        )


def queued(world: World) -> tuple[Run, DeliveryIntent]:
    """A schedule due at 08:01 and its occurrence stored admitted, its intent sent."""
    schedule = build_schedule(NOW, spec={"cron": "1 8 * * *"})
    world.store.schedules.create(schedule)
    run = replace(
        build_occurrence(schedule, NOW), status=RunStatus.ADMITTED, admitted_at=NOW, pending=False
    )
    assert world.store.records.insert([run]) == [run.occurrence_id]
    intent = DeliveryIntent(
        occurrence_id=run.occurrence_id,
        schedule_id=run.schedule_id,
        version=run.version,
        scheduled_at=run.scheduled_at,
    )
    return run, intent


def worker(world: World, target: Succeeds, run: Run) -> RunWorker:
    return RunWorker(world.runs, target, FakeClock(run.scheduled_at), random.Random(0))


def test_a_first_attempt_reads_its_run_and_schedule_in_one_request(world: World) -> None:
    run, intent = queued(world)
    world.runs.get_version(run.schedule_id, run.version)  # a warm worker has it
    world.requests.seen.clear()
    target = Succeeds()

    decision = worker(world, target, run).handle(intent, 1)

    assert decision.action == "delete" and len(target.calls) == 1
    runs, schedules = world.tables.occurrences, world.tables.schedules
    # The record as it was a moment ago (half a unit), the schedule's state as it is.
    assert world.requests.seen == [
        ("BatchGetItem", {runs: False, schedules: True}),
        ("UpdateItem", {runs: False}),
        ("UpdateItem", {runs: False}),
    ]
    stored = world.runs.get_run(run.occurrence_id)
    assert stored is not None and stored.status is RunStatus.SUCCEEDED


def test_a_pause_after_the_intent_was_queued_is_seen_by_the_one_read(world: World) -> None:
    run, intent = queued(world)
    assert world.store.schedules.pause(run.schedule_id, "maintenance", NOW)
    target = Succeeds()

    decision = worker(world, target, run).handle(intent, 1)

    assert decision.action == "delete" and target.calls == []
    stored = world.runs.get_run(run.occurrence_id)
    assert stored is not None and stored.status is RunStatus.SKIPPED
    assert stored.reason == Reason.PAUSED and stored.attempts == 0


def test_an_intent_naming_another_schedule_is_dead_lettered_and_changes_nothing(
    world: World,
) -> None:
    run, intent = queued(world)
    other, _ = queued(world)
    target = Succeeds()

    decision = worker(world, target, run).handle(replace(intent, schedule_id=other.schedule_id), 1)

    assert decision.action == "dead_letter"
    assert decision.reason == "the intent does not match its occurrence"
    assert target.calls == []
    assert world.runs.get_run(run.occurrence_id) == world.store.records.get_run(run.occurrence_id)
    stored = world.runs.get_run(run.occurrence_id)
    assert stored is not None and stored.status is RunStatus.ADMITTED and stored.attempts == 0


def test_a_duplicate_of_a_finished_run_is_deleted_only_on_a_strong_read(world: World) -> None:
    run, intent = queued(world)
    target = Succeeds()
    assert worker(world, target, run).handle(intent, 1).action == "delete"
    world.requests.seen.clear()

    decision = worker(world, target, run).handle(intent, 2)

    assert decision.action == "delete" and len(target.calls) == 1
    runs = world.tables.occurrences
    assert [r for r in world.requests.seen if r[0] == "GetItem"] == [("GetItem", {runs: True})]
