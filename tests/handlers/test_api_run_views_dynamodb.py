"""On AWS (DynamoDB and SQS on moto), through the API handler built from the
deployment's settings: run listings, retry (its intent sent on the SQS
delivery queue) and the dead letters' 501."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import DELIVERY_QUEUE, create_queues
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import DynamoStore
from adapters.secrets import InMemorySecretStore
from domain.run import RunStatus
from handlers.api import ApiServices, build_services, handler
from handlers.settings import Settings
from tests.conftest import FakeClock
from tests.handlers.test_api import REPORT, rest_event


@pytest.fixture
def aws(clock: FakeClock) -> Iterator[tuple[ApiServices, str]]:
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "api-views")
        queues = create_queues(boto3.client("sqs"), "api-views")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
            delivery_queue_url=queues[DELIVERY_QUEUE.env_var],
        )
        yield (
            build_services(settings, clock=clock, secrets=InMemorySecretStore()),
            queues[DELIVERY_QUEUE.env_var],
        )


def call(
    services: ApiServices, method: str, path: str, query: dict[str, str] | None = None
) -> tuple[int, Any]:
    event = rest_event(method, path, headers={"Content-Type": "application/json"}, query=query)
    response = handler(event, None, service=services)
    return response["statusCode"], json.loads(response["body"])


def failed_run(services: ApiServices, clock: FakeClock) -> tuple[str, str]:
    """A schedule and a triggered run of it, attempted once and failed."""
    event = rest_event(
        "POST", "/schedules", body=json.dumps(REPORT), headers={"Content-Type": "application/json"}
    )
    schedule = json.loads(handler(event, None, service=services)["body"])
    status, run = call(services, "POST", f"/schedules/{schedule['id']}/trigger")
    assert status == 201, run
    occurrence_id: str = run["occurrence_id"]
    store = services.schedules.store
    assert isinstance(store, DynamoStore)
    # The trigger call stored it admitted and queued its intent.
    queued = store.get_run(occurrence_id)
    assert queued is not None and queued.status is RunStatus.ADMITTED and not queued.pending
    runs = DynamoRunStore(store)
    now = clock.now()
    assert runs.start_attempt(
        occurrence_id, now=now, lease_until=now + timedelta(minutes=1), run_token_hash=None
    )
    assert runs.finish(
        occurrence_id,
        attempt=1,
        status=RunStatus.FAILED,
        now=now,
        reason="permanent error: HTTP 400",
        outcome="permanent",
        error="HTTP 400",
    )
    return schedule["id"], occurrence_id


def test_retry_on_aws_sends_the_intent_on_the_delivery_queue(
    aws: tuple[ApiServices, str], clock: FakeClock
) -> None:
    services, queue_url = aws
    _, occurrence_id = failed_run(services, clock)
    clock.advance(30)
    status, body = call(services, "POST", f"/runs/{occurrence_id}/retry")
    assert status == 202, body
    assert (body["status"], body["attempts"]) == ("admitted", 1)
    assert body["attempts_log"][0]["outcome"] == "permanent"

    messages = boto3.client("sqs").receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
    bodies = [json.loads(m["Body"]) for m in messages["Messages"]]
    # The trigger's own intent (attempt 0), and the retry's.
    [intent] = [b for b in bodies if b["attempt"] == 1]
    assert (intent["occurrence_id"], intent["attempt"]) == (occurrence_id, 1)
    stored = services.schedules.store.get_run(occurrence_id)
    assert stored is not None and not stored.pending  # sent: no dispatcher sends it again

    status, again = call(services, "POST", f"/runs/{occurrence_id}/retry")
    assert status == 409 and again["error"]["code"] == "not_retryable"
    assert "is admitted" in again["error"]["message"]


def test_failed_runs_are_listed_across_schedules_on_aws(
    aws: tuple[ApiServices, str], clock: FakeClock
) -> None:
    services, _ = aws
    first = failed_run(services, clock)
    second = failed_run(services, clock)
    clock.advance(1)
    status, body = call(services, "GET", "/runs", {"status": "failed"})
    assert status == 200, body
    assert sorted(r["occurrence_id"] for r in body["runs"]) == sorted([first[1], second[1]])
    status, mine = call(services, "GET", f"/schedules/{first[0]}/runs", {"kind": "trigger"})
    assert [r["occurrence_id"] for r in mine["runs"]] == [first[1]]


def test_dead_letters_on_aws_answer_501_saying_why(aws: tuple[ApiServices, str]) -> None:
    services, _ = aws
    status, body = call(services, "GET", "/dead-letters")
    assert status == 501
    assert body["error"]["code"] == "not_available"
    assert "GET /runs?status=failed,expired" in body["error"]["message"]
