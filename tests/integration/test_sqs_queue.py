"""The dispatcher's SQS queue on moto: batches of ten, failures reported by occurrence id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from adapters.definitions import DELIVERY_QUEUE, create_queues
from adapters.sqs import SqsDeliveryQueue
from domain.run import DeliveryIntent
from tests.conftest import utc

AT = utc("2026-12-01T09:00:00Z")


def _intents(n: int) -> list[DeliveryIntent]:
    return [
        DeliveryIntent(f"sch_q{i:03d}.v1.20261201T090000Z", f"sch_q{i:03d}", 1, AT)
        for i in range(n)
    ]


@pytest.fixture
def sqs() -> Iterator[tuple[Any, str]]:
    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1")
        urls = create_queues(client, "test")
        yield client, urls[DELIVERY_QUEUE.env_var]


def _drain(client: Any, url: str) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    while True:
        answer = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        messages = answer.get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            bodies.append(json.loads(message["Body"]))
            client.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def test_every_intent_arrives_once_as_json_the_worker_reads_back(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    intents = _intents(23)  # three calls: 10, 10 and 3
    assert SqsDeliveryQueue(client, url).send_batch(intents) == []
    bodies = _drain(client, url)
    assert sorted(DeliveryIntent.from_dict(b).occurrence_id for b in bodies) == sorted(
        i.occurrence_id for i in intents
    )
    assert bodies[0]["scheduled_at"] == "2026-12-01T09:00:00Z" and bodies[0]["attempt"] == 0


def test_an_empty_batch_sends_nothing(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    with Stubber(client) as stub:  # any call would fail: nothing is stubbed
        assert SqsDeliveryQueue(client, url).send_batch([]) == []
        stub.assert_no_pending_responses()


def test_entries_sqs_refuses_are_returned_by_occurrence_id(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    intents = _intents(12)
    stub = Stubber(client)
    stub.add_response(
        "send_message_batch",
        {
            "Successful": [
                {"Id": str(i), "MessageId": f"m{i}", "MD5OfMessageBody": "x"}
                for i in range(10)
                if i != 7
            ],
            "Failed": [{"Id": "7", "SenderFault": False, "Code": "InternalError"}],
        },
    )
    stub.add_client_error("send_message_batch", "AWS.SimpleQueueService.RequestThrottled")
    with stub:
        failed = SqsDeliveryQueue(client, url).send_batch(intents)
    # Entry 7 of the first call, and the whole second call (10 and 11).
    assert failed == [
        intents[7].occurrence_id,
        intents[10].occurrence_id,
        intents[11].occurrence_id,
    ]


def test_from_settings_uses_the_deployment_queue(sqs: tuple[Any, str]) -> None:
    _, url = sqs

    class Settings:
        delivery_queue_url = url

    session = boto3.session.Session(region_name="us-east-1")
    queue = SqsDeliveryQueue.from_settings(Settings(), session)
    intent = DeliveryIntent("sch_one.v1.20261201T090000Z", "sch_one", 1, AT)
    assert queue.send_batch([intent]) == []
    assert [b["occurrence_id"] for b in _drain(queue.client, url)] == [intent.occurrence_id]


def test_a_delay_counts_from_when_its_batch_is_sent_not_from_the_pass_s_now(
    sqs: tuple[Any, str],
) -> None:
    """A pass reads ``now`` once and may send its last intents seconds later: the
    queue counts each batch's delays from its own clock, read before the request."""
    from datetime import timedelta

    client, url = sqs
    seen: list[list[dict[str, Any]]] = []
    client.meta.events.register(
        "provide-client-params.sqs.SendMessageBatch",
        lambda params, **_: seen.append(params["Entries"]),
    )
    pass_now = AT - timedelta(seconds=60)
    late = iter([pass_now + timedelta(seconds=4), pass_now + timedelta(seconds=7)])
    queue = SqsDeliveryQueue(client, url, clock=lambda: next(late))
    assert queue.send_ahead(_intents(20), pass_now) == []
    assert [{e["DelaySeconds"] for e in entries} for entries in seen] == [{56}, {53}]
    # A clock behind the pass's now (a test's fixed instant) never lengthens a delay.
    seen.clear()
    behind = SqsDeliveryQueue(client, url, clock=lambda: pass_now - timedelta(seconds=30))
    assert behind.send_ahead(_intents(1), pass_now) == []
    assert seen[0][0]["DelaySeconds"] == 60


@pytest.mark.parametrize(
    ("into_s", "early", "due_in_s", "slept", "delay"),
    [
        # Past the window: it waits for the next second, so the intent shows at AT.
        (0.7, False, 60, [0.3], 59),
        # Inside the window: sent at once, visible 0.2 s after AT at most.
        (0.2, False, 60, [], 60),
        # An early second is rounded down and held by the worker: no wait.
        (0.7, True, 60, [], 59),
        # Due within the second: waiting would not bring it closer, so no wait.
        (0.7, False, 0.5, [], 1),
    ],
)
def test_the_ticks_queue_sends_a_chunk_due_later_near_the_start_of_a_second(
    sqs: tuple[Any, str],
    into_s: float,
    early: bool,
    due_in_s: float,
    slept: list[float],
    delay: int | None,
) -> None:
    """SQS rounds a delay up to whole seconds, so an intent sent 0.7 s into a second
    would show 0.7 s after its own: the tick's queue waits for the next second."""
    from datetime import timedelta

    from service.ports import second_of

    client, url = sqs
    seen: list[list[dict[str, Any]]] = []
    client.meta.events.register(
        "provide-client-params.sqs.SendMessageBatch",
        lambda params, **_: seen.append(params["Entries"]),
    )
    sent_at = [AT - timedelta(seconds=60 - into_s)]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(round(seconds, 6))
        sent_at[0] += timedelta(seconds=seconds)

    queue = SqsDeliveryQueue(client, url, clock=lambda: sent_at[0], align_s=0.5, sleep=sleep)
    due = sent_at[0] + timedelta(seconds=due_in_s) if due_in_s < 1 else AT
    intent = DeliveryIntent("sch_a.v1.x", "sch_a", 1, due)
    assert queue.send_ahead([intent], sent_at[0], {second_of(due)} if early else ()) == []
    assert waits == slept
    assert seen[0][0].get("DelaySeconds") == delay


def test_an_alignment_outside_a_second_is_refused(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    with pytest.raises(ValueError, match="align_s is a fraction of a second"):
        SqsDeliveryQueue(client, url, align_s=1.0)
