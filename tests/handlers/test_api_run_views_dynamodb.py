"""On AWS (DynamoDB and SQS on moto), through the API handler built from the
deployment's settings: run listings, retry (its intent sent on the SQS
delivery queue) and the dead letters, peeked at on the DLQ without consuming them."""

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
from adapters.dynamodb.store import DynamoPorts
from adapters.secrets import InMemorySecretStore
from adapters.sqs_worker import SqsWorkQueue
from bootstrap.settings import Settings
from domain.run import RunStatus
from handlers.api import ApiServices, build_services, handler
from tests.conftest import FakeClock
from tests.handlers.test_api import REPORT, rest_event


@pytest.fixture
def aws(clock: FakeClock) -> Iterator[tuple[ApiServices, str, str]]:
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "api-views")
        queues = create_queues(boto3.client("sqs"), "api-views")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
            delivery_queue_url=queues[DELIVERY_QUEUE.env_var],
            delivery_dlq_url=queues[DELIVERY_QUEUE.dlq_env_var],
        )
        yield (
            build_services(settings, clock=clock, secrets=InMemorySecretStore()),
            queues[DELIVERY_QUEUE.env_var],
            queues[DELIVERY_QUEUE.dlq_env_var],
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
    assert isinstance(store, DynamoPorts)
    # The trigger call stored it admitted and queued its intent.
    queued = store.records.get_run(occurrence_id)
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
    aws: tuple[ApiServices, str, str], clock: FakeClock
) -> None:
    services, queue_url, _ = aws
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
    stored = services.schedules.store.records.get_run(occurrence_id)
    assert stored is not None and not stored.pending  # sent: no dispatcher sends it again

    status, again = call(services, "POST", f"/runs/{occurrence_id}/retry")
    assert status == 409 and again["error"]["code"] == "not_retryable"
    assert "is admitted" in again["error"]["message"]


def test_failed_runs_are_listed_across_schedules_on_aws(
    aws: tuple[ApiServices, str, str], clock: FakeClock
) -> None:
    services, _, _ = aws
    first = failed_run(services, clock)
    second = failed_run(services, clock)
    clock.advance(1)
    status, body = call(services, "GET", "/runs", {"status": "failed"})
    assert status == 200, body
    assert sorted(r["occurrence_id"] for r in body["runs"]) == sorted([first[1], second[1]])
    status, mine = call(services, "GET", f"/schedules/{first[0]}/runs", {"kind": "trigger"})
    assert [r["occurrence_id"] for r in mine["runs"]] == [first[1]]


def dead_letter_queued(queue_url: str, dlq_url: str, reason: str) -> list[str]:
    """The worker's part: every intent on the delivery queue sent to the DLQ with a reason."""
    work = SqsWorkQueue.from_urls(queue_url, dlq_url, boto3.client("sqs"))
    messages = work.receive(10, 0)
    for message in messages:
        work.dead_letter(message, reason)
    return [m.body for m in messages]


def test_a_dead_lettered_intent_is_listed_with_its_reason_and_stays_queued(
    aws: tuple[ApiServices, str, str], clock: FakeClock
) -> None:
    services, queue_url, dlq_url = aws
    schedule_id, occurrence_id = failed_run(services, clock)
    [sent] = dead_letter_queued(queue_url, dlq_url, "permanent error: HTTP 400")

    status, body = call(services, "GET", "/dead-letters")
    assert status == 200, body
    [letter] = body["dead_letters"]
    assert (letter["occurrence_id"], letter["schedule_id"]) == (occurrence_id, schedule_id)
    assert letter["reason"] == "permanent error: HTTP 400"
    assert letter["body"] == sent and letter["id"]
    assert letter["dead_lettered_at"].endswith("Z") and letter["receive_count"] >= 1
    assert body["next_token"] is None

    # A peek, not a consume: the next listing shows it again, and it is still on the DLQ.
    status, again = call(services, "GET", "/dead-letters")
    assert status == 200
    assert [d["id"] for d in again["dead_letters"]] == [letter["id"]]
    assert again["dead_letters"][0]["receive_count"] > letter["receive_count"]
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "1"


def test_an_empty_dead_letter_queue_lists_nothing(aws: tuple[ApiServices, str, str]) -> None:
    services, _, _ = aws
    status, body = call(services, "GET", "/dead-letters")
    assert status == 200, body
    assert body == {"dead_letters": [], "next_token": None}


def test_dead_letters_on_aws_respect_the_limit(
    aws: tuple[ApiServices, str, str], clock: FakeClock
) -> None:
    services, queue_url, dlq_url = aws
    for _ in range(3):
        failed_run(services, clock)
    assert len(dead_letter_queued(queue_url, dlq_url, "gave up")) == 3
    status, body = call(services, "GET", "/dead-letters", {"limit": "2"})
    assert status == 200, body
    assert len(body["dead_letters"]) == 2 and body["next_token"] is None
    status, body = call(services, "GET", "/dead-letters", {"limit": "50"})
    assert len(body["dead_letters"]) == 3
    assert {d["reason"] for d in body["dead_letters"]} == {"gave up"}


def test_a_dead_letter_page_token_is_refused_on_aws(aws: tuple[ApiServices, str, str]) -> None:
    services, _, _ = aws
    status, body = call(services, "GET", "/dead-letters", {"next_token": "10"})
    assert status == 404, body
    assert body["error"]["code"] == "page_not_found" and body["error"]["field"] == "next_token"


def test_dead_letters_answer_501_without_a_dead_letter_queue_setting(
    clock: FakeClock,
) -> None:
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "api-no-dlq")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
        )
        services = build_services(settings, clock=clock, secrets=InMemorySecretStore())
        status, body = call(services, "GET", "/dead-letters")
    assert status == 501
    assert body["error"]["code"] == "not_available"
    assert "GET /runs?status=failed,expired" in body["error"]["message"]


def test_a_retried_dead_letter_leaves_the_listing_on_aws(
    aws: tuple[ApiServices, str, str], clock: FakeClock
) -> None:
    services, queue_url, dlq_url = aws
    _, retried = failed_run(services, clock)
    _, other = failed_run(services, clock)
    assert len(dead_letter_queued(queue_url, dlq_url, "gave up")) == 2
    status, body = call(services, "POST", f"/runs/{retried}/retry")
    assert status == 202, body
    status, body = call(services, "GET", "/dead-letters")
    assert status == 200, body
    # The other run's letter is still there, and visible at once.
    assert [d["occurrence_id"] for d in body["dead_letters"]] == [other]


def test_cancel_on_aws_ends_a_waiting_run_and_refuses_a_finished_one(
    aws: tuple[ApiServices, str, str], clock: FakeClock
) -> None:
    services, _, _ = aws
    _, failed = failed_run(services, clock)
    schedule = services.schedules.store.records.get_run(failed)
    assert schedule is not None
    status, run = call(services, "POST", f"/schedules/{schedule.schedule_id}/trigger")
    assert status == 201, run
    status, body = call(services, "POST", f"/runs/{run['occurrence_id']}/cancel")
    assert status == 200, body
    assert (body["status"], body["reason"]) == ("cancelled", "cancelled by a user")
    status, body = call(services, "POST", f"/runs/{failed}/cancel")
    assert status == 409 and body["error"]["code"] == "not_cancellable"
    assert "is failed: it has already finished" in body["error"]["message"]
