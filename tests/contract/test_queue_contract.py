"""One contract for the delivery queue, run over the SQLite queue and over SQS on moto.

The SQLite queue runs on a fake clock that the test moves; SQS on moto uses
real time, so its queue has a 1-second visibility timeout and the test sleeps.
Both have a redrive limit of 2 receives.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from adapters.sqlite.queue import SqliteQueue
from adapters.sqs_worker import REASON_ATTRIBUTE, SqsWorkQueue
from domain.run import DeliveryIntent
from service.ports import second_of
from service.run_ports import QueueMessage
from tests.conftest import FakeClock, utc

VISIBILITY_S = 1
MAX_RECEIVES = 2


@dataclass
class Harness:
    queue: SqliteQueue | SqsWorkQueue
    wait: Callable[[float], None]  # let this much time pass
    dead: Callable[[], list[tuple[str, str | None]]]  # (body, reason) in the DLQ
    now: Callable[[], datetime] = lambda: datetime.now(UTC)  # the queue's own clock


def _sqlite(tmp_path: Path) -> Iterator[Harness]:
    clock = FakeClock(utc("2026-12-01T08:00:00Z"))
    queue = SqliteQueue(
        tmp_path / "duetime.db",
        clock=clock,
        visibility_timeout_s=VISIBILITY_S,
        max_receive_count=MAX_RECEIVES,
        sleep=lambda s: None,
    )
    yield Harness(
        queue,
        lambda s: clock.advance(s),
        lambda: [(body, reason) for _, body, reason in queue.dead_letters()],
        clock.now,
    )
    queue.close()


def _sqs(tmp_path: Path) -> Iterator[Harness]:
    with mock_aws():
        client = boto3.client("sqs", region_name="eu-west-1")
        dlq = client.create_queue(QueueName="contract-dlq")["QueueUrl"]
        dlq_arn = client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        url = client.create_queue(
            QueueName="contract",
            Attributes={
                "VisibilityTimeout": str(VISIBILITY_S),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)}
                ),
            },
        )["QueueUrl"]

        def dead() -> list[tuple[str, str | None]]:
            found = client.receive_message(
                QueueUrl=dlq, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
            ).get("Messages", [])
            return [
                (
                    m["Body"],
                    m.get("MessageAttributes", {}).get(REASON_ATTRIBUTE, {}).get("StringValue"),
                )
                for m in found
            ]

        yield Harness(SqsWorkQueue(client, url, dlq), lambda s: time.sleep(s), dead)


QUEUES = {"sqlite": _sqlite, "sqs": _sqs}


@pytest.fixture(params=sorted(QUEUES))
def h(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    yield from QUEUES[request.param](tmp_path)


def intent(n: int = 1) -> DeliveryIntent:
    at = utc(f"2026-12-0{n}T09:00:00Z")
    return DeliveryIntent(f"sch_q.v1.2026120{n}T090000Z", "sch_q", 1, at)


def receive_all(h: Harness, expected: int = 1) -> list[QueueMessage]:
    found: list[QueueMessage] = []
    for _ in range(5):
        found += h.queue.receive(10, 0)
        if len(found) >= expected:
            break
    return found


def test_a_sent_intent_is_received_once_with_its_body_and_a_receive_count(h: Harness) -> None:
    assert h.queue.send_batch([intent(1), intent(2)]) == []
    got = receive_all(h, 2)
    received = {DeliveryIntent.from_dict(json.loads(m.body)) for m in got}
    assert received == {intent(1), intent(2)}
    assert [m.receive_count for m in got] == [1, 1]
    assert h.queue.receive(10, 0) == []  # invisible while held


def test_an_unanswered_message_comes_back_after_the_visibility_timeout(h: Harness) -> None:
    h.queue.send_batch([intent()])
    (first,) = receive_all(h)
    h.wait(VISIBILITY_S + 0.2)
    (again,) = receive_all(h)
    assert again.message_id == first.message_id
    assert again.receive_count == 2
    assert again.receipt != first.receipt


def test_a_deleted_message_is_gone(h: Harness) -> None:
    h.queue.send_batch([intent()])
    (message,) = receive_all(h)
    h.queue.delete(message.receipt)
    h.wait(VISIBILITY_S + 0.2)
    assert h.queue.receive(10, 0) == []
    assert h.dead() == []


def test_change_visibility_puts_a_retry_off(h: Harness) -> None:
    h.queue.send_batch([intent()])
    (message,) = receive_all(h)
    h.queue.change_visibility(message.receipt, 3)
    h.wait(VISIBILITY_S + 0.2)
    assert h.queue.receive(10, 0) == []  # still put off: 3 s, not the 1 s default
    h.wait(2.2)
    assert [m.message_id for m in receive_all(h)] == [message.message_id]


def test_change_visibility_to_zero_brings_it_back_now(h: Harness) -> None:
    h.queue.send_batch([intent()])
    (message,) = receive_all(h)
    h.queue.change_visibility(message.receipt, 0)
    assert [(m.message_id, m.receive_count) for m in receive_all(h)] == [(message.message_id, 2)]


def test_a_delay_beyond_twelve_hours_is_capped_not_refused(h: Harness) -> None:
    h.queue.send_batch([intent()])
    (message,) = receive_all(h)
    h.queue.change_visibility(message.receipt, 50_000)
    h.wait(VISIBILITY_S + 0.2)
    assert h.queue.receive(10, 0) == []


def test_dead_letter_moves_the_message_with_its_reason(h: Harness) -> None:
    h.queue.send_batch([intent()])
    (message,) = receive_all(h)
    h.queue.dead_letter(message, "permanent error: HTTP 400")
    h.wait(VISIBILITY_S + 0.2)
    assert h.queue.receive(10, 0) == []
    assert h.dead() == [(message.body, "permanent error: HTTP 400")]


def test_a_message_received_more_than_the_redrive_limit_goes_to_the_dlq(h: Harness) -> None:
    h.queue.send_batch([intent()])
    for count in range(1, MAX_RECEIVES + 1):
        (message,) = receive_all(h)
        assert message.receive_count == count
        h.wait(VISIBILITY_S + 0.2)
    assert h.queue.receive(10, 0) == []
    assert [body for body, _ in h.dead()] == [message.body]


def test_one_message_is_never_held_by_two_receivers_at_once(h: Harness) -> None:
    h.queue.send_batch([intent(n) for n in range(1, 6)])
    first = h.queue.receive(3, 0)
    second = receive_all(h, 5 - len(first))
    ids = [m.message_id for m in first + second]
    assert len(ids) == len(set(ids)) == 5


def test_a_batch_delete_removes_every_message_and_skips_a_stale_receipt(h: Harness) -> None:
    h.queue.send_batch([intent(n) for n in range(1, 4)])
    held = receive_all(h, 3)
    stale = held[0]
    h.queue.change_visibility(stale.receipt, 0)
    (again,) = receive_all(h)  # received again: the first receipt is stale now
    h.queue.delete_batch([m.receipt for m in held])
    h.queue.dead_letter(again, "survived the batch")  # its newer receipt still holds it
    h.wait(VISIBILITY_S + 0.2)
    assert h.queue.receive(10, 0) == []  # the other two are gone
    assert h.dead() == [(stale.body, "survived the batch")]


def test_a_heartbeat_keeps_every_held_message_hidden(h: Harness) -> None:
    h.queue.send_batch([intent(n) for n in range(1, 4)])
    held = receive_all(h, 3)
    h.queue.change_visibility_batch([m.receipt for m in held], 30)
    h.wait(VISIBILITY_S + 0.2)
    assert h.queue.receive(10, 0) == []
    h.queue.change_visibility_batch([m.receipt for m in held], 0)
    assert len(receive_all(h, 3)) == 3


def test_an_empty_batch_changes_nothing(h: Harness) -> None:
    h.queue.send_batch([intent()])
    h.queue.delete_batch([])
    h.queue.change_visibility_batch([], 0)
    assert len(receive_all(h)) == 1


def test_an_intent_sent_ahead_is_held_back_until_its_scheduled_time(h: Harness) -> None:
    now = h.now()
    due = DeliveryIntent("sch_q.v1.ahead", "sch_q", 1, now + timedelta(seconds=1.2))
    ready = DeliveryIntent("sch_q.v1.ready", "sch_q", 1, now - timedelta(seconds=5))
    assert h.queue.send_ahead([due, ready], now) == []
    # The one already due is visible at once, the other not before its time.
    [first] = receive_all(h)
    assert json.loads(first.body)["occurrence_id"] == "sch_q.v1.ready"
    h.queue.delete(first.receipt)
    assert h.queue.receive(10, 0) == []
    h.wait(2.1)  # SQS rounds the 1.2 s up to 2 s
    [later] = receive_all(h)
    assert json.loads(later.body)["occurrence_id"] == "sch_q.v1.ahead"


def test_sqs_delays_round_up_to_the_second_and_stop_at_fifteen_minutes() -> None:
    from adapters.sqs import entry

    now = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)

    def delay(seconds: float) -> object:
        found = entry(0, DeliveryIntent("o", "s", 1, now + timedelta(seconds=seconds)), now)
        return found.get("DelaySeconds")

    assert delay(-3) is None and delay(0) is None
    assert delay(0.2) == 1 and delay(59.0) == 59 and delay(59.001) == 60
    assert delay(3600) == 900
    assert "DelaySeconds" not in entry(0, DeliveryIntent("o", "s", 1, now), None)


def test_sqs_delays_of_an_early_second_round_down_never_past_fifteen_minutes() -> None:
    from adapters.sqs import entry

    now = datetime(2026, 12, 1, 8, 0, 0, 300_000, tzinfo=UTC)  # a pass sends at .3 s
    crowded = datetime(2026, 12, 1, 8, 1, tzinfo=UTC)

    def delay(due: datetime, early: set[datetime]) -> object:
        return entry(0, DeliveryIntent("o", "s", 1, due), now, early).get("DelaySeconds")

    assert delay(crowded, set()) == 60  # visible at 08:01:00.3, after its time
    assert delay(crowded, {crowded}) == 59  # visible at 08:00:59.3, held until its time
    # Only the seconds named go early; a second named is the one it is counted in.
    assert delay(crowded + timedelta(seconds=1), {crowded}) == 61
    assert delay(crowded - timedelta(seconds=0.5), {crowded}) == 59
    assert delay(now + timedelta(seconds=0.5), {second_of(now + timedelta(seconds=0.5))}) is None
    assert delay(now + timedelta(hours=1), {second_of(now + timedelta(hours=1))}) == 900


def test_sqs_receive_asks_for_the_workers_visibility_timeout() -> None:
    with mock_aws():
        client = boto3.client("sqs", region_name="eu-west-1")
        url = client.create_queue(QueueName="held", Attributes={"VisibilityTimeout": "900"})[
            "QueueUrl"
        ]
        queue = SqsWorkQueue(client, url, url, visibility_timeout_s=1)
        queue.send_batch([intent()])
        (first,) = queue.receive(10, 0)
        time.sleep(1.2)  # the queue's own 900 s would hide it for 15 minutes
        (again,) = queue.receive(10, 0)
        assert again.message_id == first.message_id
