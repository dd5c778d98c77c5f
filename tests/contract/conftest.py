"""The store under test. Every contract test runs once per adapter: SQLite on a
file of its own, DynamoDB on moto. A test that needs a second store object over
the same data (as after a restart, nothing kept in memory) asks for ``reopen``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from adapters.sqlite.store import SqliteStore
from service.ports import Store
from tests.contract.builders import Opener


def _sqlite(tmp_path: Path) -> Iterator[Opener]:
    opened: list[SqliteStore] = []

    def open_store() -> Store:
        store = SqliteStore.open(tmp_path / "duetime.db")
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


def _dynamodb(tmp_path: Path) -> Iterator[Opener]:
    import boto3
    from moto import mock_aws

    from adapters.dynamodb.local import create_store_tables
    from adapters.dynamodb.store import dynamo_store

    with mock_aws():
        client = boto3.client(
            "dynamodb",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        tables = create_store_tables(client, "contract")
        # Few due shards: on moto every index query reads the whole table.
        yield lambda: dynamo_store(client, tables, due_shards=3)


OPENERS = {"sqlite": _sqlite, "dynamodb": _dynamodb}


def _one_store(openers: Callable[[Path], Iterator[Opener]]) -> Callable[[Path], Iterator[Store]]:
    def stores(tmp_path: Path) -> Iterator[Store]:
        for open_store in openers(tmp_path):
            yield open_store()

    return stores


# One store per adapter, for suites outside this one that run on both.
STORES = {name: _one_store(openers) for name, openers in OPENERS.items()}


@pytest.fixture(params=sorted(OPENERS))
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens another store object over the same data."""
    yield from OPENERS[request.param](tmp_path)


@pytest.fixture
def store(reopen: Opener) -> Store:
    return reopen()
