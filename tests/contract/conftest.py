"""The store under test. Every contract test runs once per adapter: add a
DynamoDB fixture as one more param here and the whole suite runs on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.sqlite.store import SqliteStore
from service.ports import Store


def _sqlite(tmp_path: Path) -> Iterator[Store]:
    store = SqliteStore(tmp_path / "duetime.db")
    yield store
    store.close()


def _dynamodb(tmp_path: Path) -> Iterator[Store]:
    import boto3
    from moto import mock_aws

    from adapters.dynamodb.local import create_store_tables
    from adapters.dynamodb.store import DynamoStore

    with mock_aws():
        client = boto3.client(
            "dynamodb",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        # Few due shards: on moto every index query reads the whole table.
        yield DynamoStore(client, create_store_tables(client, "contract"), due_shards=3)


STORES = {"sqlite": _sqlite, "dynamodb": _dynamodb}


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    yield from STORES[request.param](tmp_path)
