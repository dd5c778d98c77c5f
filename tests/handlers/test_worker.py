"""The worker handler: an SQS event in, partial batch failures out.

The run store is SQLite on a temporary file, the queue a fake that records
what the handler asked of it, the target a scripted fake.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import DELIVERY_QUEUE, Metric, create_queues
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqs_worker import REASON_ATTRIBUTE, SqsWorkQueue
from adapters.telemetry import PowertoolsTelemetry
from domain.delivery import Outcome
from domain.identity import parse_occurrence_id
from domain.run import DeliveryIntent, Run, RunStatus
from handlers.worker import handler
from service.run_ports import QueueMessage, WorkQueue
from service.runs import RunWorker
from tests.conftest import WEBHOOK, FakeClock, World, definition, utc
from tests.unit.test_runs import FakeTarget


class FakeWorkQueue(WorkQueue):
    def __init__(self) -> None:
        self.visibility: list[tuple[str, float]] = []
        self.deleted: list[str] = []
        self.dead: list[tuple[str, str]] = []

    def receive(self, max_messages: int, wait_s: float) -> list[QueueMessage]:
        return []

    def change_visibility(self, receipt: str, delay_s: float) -> None:
        self.visibility.append((receipt, delay_s))

    def delete(self, receipt: str) -> None:
        self.deleted.append(receipt)

    def dead_letter(self, message: QueueMessage, reason: str) -> None:
        self.dead.append((message.message_id, reason))


class BrokenRuns(SqliteRunStore):
    """A store that is down for one occurrence."""

    broken: str = ""

    def get_run(self, occurrence_id: str) -> Run | None:
        if occurrence_id == self.broken:
            raise ConnectionError("store unavailable")
        return super().get_run(occurrence_id)


class ByScheduleTarget:
    """Answers each schedule's calls with its own outcome (200 for the others)."""

    def __init__(self, answers: dict[str, Outcome]) -> None:
        self.answers = answers

    def deliver(self, target: Any, delivery: Any, *, timeout_s: float) -> Outcome:
        return self.answers.get(delivery.schedule_id, Outcome.succeeded(200))


def admitted(world: World, clock: FakeClock, count: int) -> list[DeliveryIntent]:
    spec = {"cron": "1 8 * * *"}
    ids = [
        world.schedules.create(definition({"name": f"job {i}", "spec": spec, "target": WEBHOOK}))[
            0
        ].schedule_id
        for i in range(count)
    ]
    world.ticker().tick_once()
    clock.set(utc("2026-12-01T08:01:04Z"))
    world.ticker().tick_once()
    by_schedule = {i.schedule_id: i for i in world.queue.sent}
    return [by_schedule[s] for s in ids]


def record(message_id: str, body: str, receive_count: int = 1) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": f"receipt-{message_id}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": "1764576000000",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1764576000000",
        },
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:duetime-delivery",
        "awsRegion": "eu-west-1",
    }


def event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


def body(intent: DeliveryIntent) -> str:
    return json.dumps(intent.to_dict())


def emitted(output: str) -> tuple[dict[str, list[float]], list[dict[str, Any]]]:
    """(metrics by name, attempt log lines) from captured stdout."""
    found: dict[str, list[float]] = {}
    attempts: list[dict[str, Any]] = []
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        blob = json.loads(line)
        if "_aws" in blob:
            for definition in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                value = blob[definition["Name"]]
                found.setdefault(definition["Name"], []).extend(
                    value if isinstance(value, list) else [value]
                )
        elif blob.get("message") == "attempt":
            attempts.append(blob)
    return found, attempts


def worker_for(
    world: World, clock: FakeClock, target: FakeTarget, runs: SqliteRunStore | None = None
) -> RunWorker:
    return RunWorker(
        runs or SqliteRunStore(world.store),
        target,
        clock,
        random.Random(3),
        telemetry=PowertoolsTelemetry(),
    )


def test_one_batch_succeeds_retries_fails_and_dead_letters_each_message_on_its_own(
    world: World, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    ok, flaky, refused = admitted(world, clock, 3)
    # The records run at once, so the target answers by schedule, not by turn.
    target = ByScheduleTarget(
        {
            ok.schedule_id: Outcome.succeeded(200),
            flaky.schedule_id: Outcome.transient("HTTP 503", 503),
            refused.schedule_id: Outcome.permanent("HTTP 400"),
        }
    )
    queue = FakeWorkQueue()
    capsys.readouterr()

    response = handler(
        event(
            record("m-ok", body(ok)),
            record("m-flaky", body(flaky)),
            record("m-refused", body(refused)),
            record("m-garbage", '{"occurrence_id": 5}'),
        ),
        None,
        worker=worker_for(world, clock, target),  # type: ignore[arg-type]
        queue=queue,
    )

    # Only the retry is reported failed, so SQS delivers it again after its delay.
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-flaky"}]}
    [(receipt, delay_s)] = queue.visibility
    assert receipt == "receipt-m-flaky" and 0 <= delay_s <= 2.0
    # The run that failed for good is recorded as failed; only the message that
    # is no intent at all is a dead letter.
    dead = dict(queue.dead)
    assert sorted(dead) == ["m-garbage"]
    assert dead["m-garbage"].startswith("not a delivery intent")
    stored = [world.store.records.get_run(i.occurrence_id) for i in (ok, flaky, refused)]
    statuses = [getattr(run, "status", None) for run in stored]
    assert statuses == [RunStatus.SUCCEEDED, RunStatus.RETRYING, RunStatus.FAILED]

    metrics, attempts = emitted(capsys.readouterr().out)
    assert metrics[Metric.RUN_ATTEMPTS] == [1.0, 1.0, 1.0]
    assert metrics[Metric.START_LATENESS] == [4.0, 4.0, 4.0]
    assert metrics[Metric.RUNS_SUCCEEDED] == [1.0]
    assert metrics[Metric.RUNS_RETRIED] == [1.0]
    assert metrics[Metric.RUNS_FAILED] == [1.0]
    assert sorted((a["occurrence_id"], a["status"], a.get("error")) for a in attempts) == sorted(
        [
            (ok.occurrence_id, "succeeded", None),
            (flaky.occurrence_id, "retrying", "HTTP 503"),
            (refused.occurrence_id, "failed", "HTTP 400"),
        ]
    )
    [line] = [a for a in attempts if a["occurrence_id"] == ok.occurrence_id]
    key = parse_occurrence_id(line["occurrence_id"])
    assert (line["schedule_id"], key.version, line["attempt"]) == (ok.schedule_id, 1, 1)
    assert "duration_s" in line and "error" not in line


def test_a_message_whose_store_is_down_fails_alone_and_comes_back(
    world: World, clock: FakeClock
) -> None:
    down, fine = admitted(world, clock, 2)
    runs = BrokenRuns(world.store)
    runs.broken = down.occurrence_id
    queue = FakeWorkQueue()
    response = handler(
        event(record("m-down", body(down)), record("m-fine", body(fine))),
        None,
        worker=worker_for(world, clock, FakeTarget(), runs),
        queue=queue,
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-down"}]}
    assert queue.visibility == [] and queue.dead == []


def test_a_batch_where_every_message_retries_does_not_fail_the_invocation(
    world: World, clock: FakeClock
) -> None:
    (only,) = admitted(world, clock, 1)
    queue = FakeWorkQueue()
    response = handler(
        event(record("m-1", body(only))),
        None,
        worker=worker_for(world, clock, FakeTarget(Outcome.transient("HTTP 502"))),
        queue=queue,
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}


def test_a_redelivered_message_of_a_finished_run_is_removed_without_a_call(
    world: World, clock: FakeClock
) -> None:
    (only,) = admitted(world, clock, 1)
    target = FakeTarget()
    queue = FakeWorkQueue()
    worker = worker_for(world, clock, target)
    handler(event(record("m-1", body(only))), None, worker=worker, queue=queue)
    again = handler(event(record("m-1", body(only), receive_count=2)), None, worker, queue)
    assert again == {"batchItemFailures": []}
    assert len(target.calls) == 1 and queue.dead == [] and queue.visibility == []


@pytest.fixture
def sqs() -> Iterator[tuple[Any, SqsWorkQueue]]:
    with mock_aws():
        client = boto3.client("sqs", region_name="eu-west-1")
        urls = create_queues(client, "worker-test")
        yield (
            client,
            SqsWorkQueue(client, urls[DELIVERY_QUEUE.env_var], urls[DELIVERY_QUEUE.dlq_env_var]),
        )


COUNT = "ApproximateReceiveCount"


def sqs_event(client: Any, queue: SqsWorkQueue) -> dict[str, Any]:
    """What the event source mapping would hand the function: received messages as records."""
    answer = client.receive_message(
        QueueUrl=queue.queue_url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
    )
    return event(
        *(
            {
                **record(m["MessageId"], m["Body"], int(m["Attributes"][COUNT])),
                "receiptHandle": m["ReceiptHandle"],
            }
            for m in answer.get("Messages", [])
        )
    )


def _counts(client: Any, url: str) -> dict[str, str]:
    attributes = client.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return {
        "visible": attributes["ApproximateNumberOfMessages"],
        "in_flight": attributes["ApproximateNumberOfMessagesNotVisible"],
        "delayed": attributes["ApproximateNumberOfMessagesDelayed"],
    }


def test_on_sqs_a_retry_is_a_new_delayed_message_not_one_held_in_flight(
    world: World, clock: FakeClock, sqs: tuple[Any, SqsWorkQueue]
) -> None:
    # A standard queue holds about 120,000 messages in flight: retries that each
    # held theirs for up to 12 hours could fill it during one target's outage.
    client, queue = sqs
    [flaky] = admitted(world, clock, 1)
    queue.send_batch([flaky])
    target = ByScheduleTarget(
        {flaky.schedule_id: Outcome.transient("HTTP 503", 503, retry_after_s=3600.0)}
    )
    incoming = sqs_event(client, queue)

    response = handler(
        incoming,
        None,
        worker=worker_for(world, clock, target),  # type: ignore[arg-type]
        queue=queue,
    )

    # Answered as done, so the event source deletes the received message...
    assert response == {"batchItemFailures": []}
    client.delete_message(
        QueueUrl=queue.queue_url, ReceiptHandle=incoming["Records"][0]["receiptHandle"]
    )
    # ...and a new one carries the intent, delayed, not in flight.
    assert _counts(client, queue.queue_url) == {"visible": "0", "in_flight": "0", "delayed": "1"}
    run = world.store.records.get_run(flaky.occurrence_id)
    assert run is not None and run.status is RunStatus.RETRYING
    # The run keeps its backoff: a message that comes back before it (the next
    # link of the hour's wait, or a duplicate) waits again and calls nobody.
    assert run.run_lease_expires_at == clock.now() + timedelta(seconds=3600)
    clock.advance(900)
    early = worker_for(world, clock, target).handle(flaky)
    assert early.action == "retry" and early.delay_s == pytest.approx(2700)


def test_on_sqs_a_permanent_failure_fails_the_run_and_leaves_no_dead_letter(
    world: World,
    clock: FakeClock,
    sqs: tuple[Any, SqsWorkQueue],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A user's webhook answering 410 is the user's error, recorded on the run: it
    # must not look like a dead letter (and raise DeadLettersArrived).
    client, queue = sqs
    [gone] = admitted(world, clock, 1)
    queue.send_batch([gone])
    target = ByScheduleTarget({gone.schedule_id: Outcome.permanent("HTTP 410", 410)})
    capsys.readouterr()

    response = handler(
        sqs_event(client, queue),
        None,
        worker=worker_for(world, clock, target),  # type: ignore[arg-type]
        queue=queue,
    )

    assert response == {"batchItemFailures": []}  # deleted by the event source
    run = world.store.records.get_run(gone.occurrence_id)
    assert run is not None and run.status is RunStatus.FAILED
    assert run.reason == "permanent error: HTTP 410"
    assert _counts(client, queue.dlq_url) == {"visible": "0", "in_flight": "0", "delayed": "0"}
    metrics, _ = emitted(capsys.readouterr().out)
    assert Metric.DEAD_LETTERED not in metrics
    assert metrics[Metric.RUNS_FAILED] == [1]


def test_on_sqs_a_message_that_is_no_intent_is_dead_lettered_and_counted(
    world: World,
    clock: FakeClock,
    sqs: tuple[Any, SqsWorkQueue],
    capsys: pytest.CaptureFixture[str],
) -> None:
    client, queue = sqs
    client.send_message(QueueUrl=queue.queue_url, MessageBody='{"hello": "world"}')
    capsys.readouterr()

    handler(
        sqs_event(client, queue),
        None,
        worker=worker_for(world, clock, FakeTarget()),  # type: ignore[arg-type]
        queue=queue,
    )

    dead = client.receive_message(
        QueueUrl=queue.dlq_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10
    )["Messages"]
    assert [m["Body"] for m in dead] == ['{"hello": "world"}']
    reason = dead[0]["MessageAttributes"][REASON_ATTRIBUTE]["StringValue"]
    assert reason.startswith("not a delivery intent")
    metrics, _ = emitted(capsys.readouterr().out)
    assert metrics[Metric.DEAD_LETTERED] == [1]
