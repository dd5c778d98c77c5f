"""The load ledger on DynamoDB (moto): counts added across senders and shards, read
back by second within a window, a surge claimed once, and items that stay out of the
runs table's indexes and expire."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.load import DynamoLoadLedger, minute_key
from adapters.dynamodb.local import create_store_tables
from tests.conftest import utc

AT = utc("2026-12-01T08:59:59Z")
NINE = utc("2026-12-01T09:00:00Z")


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


@pytest.fixture
def ledger(client: Any) -> DynamoLoadLedger:
    tables = create_store_tables(client, "load")
    return DynamoLoadLedger(client, tables.occurrences)


def test_counts_add_up_across_senders_and_shards(ledger: DynamoLoadLedger) -> None:
    ledger.record({NINE: 3, AT: 1}, shard=0)
    ledger.record({NINE: 4}, shard=1)
    ledger.record({NINE: 5}, shard=1)
    assert ledger.read(AT, NINE) == {AT: 1, NINE: 12}


def test_a_read_returns_only_its_window(ledger: DynamoLoadLedger) -> None:
    ledger.record({NINE: 1, NINE + timedelta(seconds=30): 2, NINE + timedelta(minutes=3): 4}, 2)
    assert ledger.read(NINE + timedelta(seconds=1), NINE + timedelta(seconds=90)) == {
        NINE + timedelta(seconds=30): 2
    }
    assert ledger.read(NINE + timedelta(minutes=10), NINE + timedelta(minutes=11)) == {}


def test_a_long_window_reads_in_batches_of_a_hundred_keys(ledger: DynamoLoadLedger) -> None:
    late = NINE + timedelta(minutes=40)
    ledger.record({late: 7}, 3)
    assert ledger.read(NINE, late) == {late: 7}  # 41 minutes x 4 shards = 164 keys


def test_a_surge_is_claimed_once(ledger: DynamoLoadLedger) -> None:
    assert ledger.claim(NINE, "tick-1") is True
    assert ledger.claim(NINE, "tick-2") is False
    assert ledger.claim(NINE + timedelta(seconds=1), "tick-2") is True


def test_a_claim_does_not_count_as_load(ledger: DynamoLoadLedger) -> None:
    ledger.claim(NINE, "tick-1")
    assert ledger.read(NINE, NINE) == {}


def test_ledger_items_carry_no_index_key_and_expire(ledger: DynamoLoadLedger, client: Any) -> None:
    ledger.record({NINE: 2}, 1)
    item = client.get_item(TableName=ledger.table, Key=minute_key(NINE, 1))["Item"]
    assert set(item) == {"pk", "sk", "s00", "expires_at_epoch"}
    assert int(item["expires_at_epoch"]["N"]) == int((NINE + timedelta(days=1)).timestamp())
