"""The DLQ on moto, peeked at by the API's dead-letter listing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import DELIVERY_QUEUE, create_queues
from adapters.sqs_dead_letters import SqsDeadLetters


@pytest.fixture
def dlq() -> Iterator[tuple[Any, str]]:
    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1")
        urls = create_queues(client, "peek")
        yield client, urls[DELIVERY_QUEUE.dlq_env_var]


def test_a_message_the_redrive_moved_is_listed_without_a_reason_or_ids(
    dlq: tuple[Any, str],
) -> None:
    client, url = dlq
    client.send_message(QueueUrl=url, MessageBody="not json")
    [letter] = SqsDeadLetters(client, url).page(10).items
    assert (letter.reason, letter.occurrence_id, letter.schedule_id) == (None, None, None)
    assert letter.body == "not json" and letter.dead_lettered_at is not None


def test_a_listing_leaves_every_message_on_the_queue(dlq: tuple[Any, str]) -> None:
    client, url = dlq
    for i in range(3):
        client.send_message(QueueUrl=url, MessageBody=f"m{i}")
    letters = SqsDeadLetters(client, url)
    assert len(letters.page(2).items) == 2
    answer = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    assert sorted(m["Body"] for m in answer["Messages"]) == ["m0", "m1", "m2"]


@pytest.mark.parametrize(("limit", "token"), [(0, None), (10, "1")])
def test_a_limit_below_one_or_any_page_token_is_refused(
    dlq: tuple[Any, str], limit: int, token: str | None
) -> None:
    client, url = dlq
    with pytest.raises(ValueError):
        SqsDeadLetters(client, url).page(limit, token)
