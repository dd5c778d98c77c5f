"""On AWS, a long job's progress and completion reach the run through the API
handler built from the deployment's settings (DynamoDB, on moto)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import DynamoPorts
from adapters.secrets import InMemorySecretStore
from bootstrap.settings import Settings
from domain.run import PendingOccurrence
from handlers.api import ApiServices, build_services, handler
from service.runs import hash_run_token
from tests.conftest import FakeClock
from tests.handlers.test_api import REPORT, rest_event

TOKEN = "run-token-for-the-dynamodb-test"


@pytest.fixture
def services(clock: FakeClock) -> Iterator[ApiServices]:
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "api-runs")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
        )
        yield build_services(settings, clock=clock, secrets=InMemorySecretStore())


def call(services: ApiServices, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    event = rest_event(
        method,
        path,
        body=None if body is None else json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    response = handler(event, None, service=services)
    return response["statusCode"], json.loads(response["body"])


def running_run(services: ApiServices, clock: FakeClock) -> str:
    """A triggered run, admitted and started by a worker that handed out ``TOKEN``."""
    status, schedule = call(services, "POST", "/schedules", REPORT)
    assert status == 201, schedule
    status, run = call(services, "POST", f"/schedules/{schedule['id']}/trigger")
    assert status in (200, 201, 202), run
    occurrence_id: str = run["occurrence_id"]
    store = services.schedules.store
    assert isinstance(store, DynamoPorts)
    pending = store.records.get_run(occurrence_id)
    assert pending is not None
    assert store.records.admit([PendingOccurrence.of(pending)], clock.now()) == [occurrence_id]
    started = DynamoRunStore(store).start_attempt(
        occurrence_id,
        now=clock.now(),
        lease_until=clock.now() + timedelta(minutes=15),
        run_token_hash=hash_run_token(TOKEN),
    )
    assert started is not None
    return occurrence_id


def test_the_dynamodb_api_takes_progress_then_completion(
    services: ApiServices, clock: FakeClock
) -> None:
    occurrence_id = running_run(services, clock)
    clock.advance(30)
    status, body = call(
        services,
        "POST",
        f"/runs/{occurrence_id}/progress",
        {"run_token": TOKEN, "progress": {"done": 40}},
    )
    assert status == 200, body
    assert (body["status"], body["progress"]) == ("running", {"done": 40})

    clock.advance(30)
    status, done = call(
        services,
        "POST",
        f"/runs/{occurrence_id}/complete",
        {"run_token": TOKEN, "succeeded": True, "result": {"rows": 9}},
    )
    assert status == 200, done
    assert done["status"] == "succeeded"
    assert done["finished_at"] == "2026-12-01T08:01:00Z"
    assert done["result"]["rows"] == 9
    assert call(services, "GET", f"/runs/{occurrence_id}") == (200, done)


def test_a_wrong_token_or_a_second_completion_is_409(
    services: ApiServices, clock: FakeClock
) -> None:
    occurrence_id = running_run(services, clock)
    path = f"/runs/{occurrence_id}/complete"
    status, body = call(services, "POST", path, {"run_token": "guess"})
    assert (status, body["error"]["code"]) == (409, "run_token_refused")
    assert call(services, "POST", path, {"run_token": TOKEN})[0] == 200
    status, body = call(services, "POST", path, {"run_token": TOKEN})
    assert status == 409 and "succeeded" in body["error"]["message"]
