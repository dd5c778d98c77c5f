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


STORES = {"sqlite": _sqlite}


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    yield from STORES[request.param](tmp_path)
