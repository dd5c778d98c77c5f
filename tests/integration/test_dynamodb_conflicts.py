"""A plain write that meets a transaction on its item is sent again, a few times.

moto never conflicts, so each test answers the store's first writes itself
with DynamoDB's ``TransactionConflictException`` (an HTTP 400 that botocore's
standard retry mode does not retry) before moto sees them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core.botocore_stubber import MockRawResponse

from adapters.dynamodb.conflicts import CONFLICT_ATTEMPTS, CONFLICT_BASE_S, retry_on_conflict
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.store import DynamoPorts, dynamo_store_from_settings

NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


class Conflicts:
    """Answers the next ``count`` writes with a conflict, then lets them through."""

    def __init__(self, count: int) -> None:
        self.left = count
        self.answered = 0

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        if self.left <= 0:
            return None
        self.left -= 1
        self.answered += 1
        body = json.dumps(
            {
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
                "message": "Transaction is ongoing for the item",
            }
        )
        return AWSResponse(request.url, 400, {}, MockRawResponse(body))


@pytest.fixture
def store() -> Iterator[DynamoPorts]:
    with mock_aws():
        client = boto3.client("dynamodb")
        names = create_store_tables(client, "conflict")
        settings = SimpleNamespace(
            schedules_table=names.schedules,
            occurrences_table=names.occurrences,
            leases_table=names.leases,
            shards=2,
        )
        yield dynamo_store_from_settings(settings, boto3.session.Session())


def _acquire(store: DynamoPorts) -> Any:
    return store.leases.acquire(0, "tick-1", NOW, timedelta(seconds=60))


def test_a_write_that_meets_a_transaction_is_sent_again(store: DynamoPorts) -> None:
    conflicts = Conflicts(CONFLICT_ATTEMPTS - 1)
    store.records.client.meta.events.register_first("before-send.dynamodb.UpdateItem", conflicts)

    lease = _acquire(store)

    assert lease is not None and lease.owner == "tick-1"
    assert conflicts.answered == CONFLICT_ATTEMPTS - 1


def test_conflicts_are_retried_a_bounded_number_of_times(store: DynamoPorts) -> None:
    conflicts = Conflicts(CONFLICT_ATTEMPTS + 5)
    store.records.client.meta.events.register_first("before-send.dynamodb.UpdateItem", conflicts)

    with pytest.raises(ClientError, match="TransactionConflictException"):
        _acquire(store)
    assert conflicts.answered == CONFLICT_ATTEMPTS


def test_other_errors_are_left_to_the_retry_mode() -> None:
    conditional = ({}, {"Error": {"Code": "ConditionalCheckFailedException"}})
    conflict = ({}, {"Error": {"Code": "TransactionConflictException"}})
    assert retry_on_conflict(attempts=1, response=conditional) is None
    assert retry_on_conflict(attempts=1, response=None, caught_exception=OSError()) is None
    assert retry_on_conflict(attempts=CONFLICT_ATTEMPTS, response=conflict) is None
    delay = retry_on_conflict(attempts=2, response=conflict)
    assert delay is not None and 0 <= delay <= CONFLICT_BASE_S * 2**2
