"""The DynamoDB run listing's bounds: a call reads at most MAX_EVALUATED
records and visits at most MAX_SCHEDULES schedules, then answers what it found
(maybe nothing) with a token; following the tokens still lists every matching
record once. And it only reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb import run_listing
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.store import DynamoStore
from domain.run import RunStatus
from service.ports import RunQuery
from tests.contract.test_run_listing_contract import MIXED, _all, _schedule_with


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        yield DynamoStore(client, create_store_tables(client, "listing"), due_shards=2)


@pytest.mark.parametrize(("evaluated", "schedules"), [(2, 50), (1000, 1), (3, 2)])
def test_bounded_calls_still_list_every_matching_run_once(
    store: DynamoStore, monkeypatch: pytest.MonkeyPatch, evaluated: int, schedules: int
) -> None:
    made = [_schedule_with(store, *MIXED) for _ in range(4)]
    monkeypatch.setattr(run_listing, "MAX_EVALUATED", evaluated)
    monkeypatch.setattr(run_listing, "MAX_SCHEDULES", schedules)
    query = RunQuery(statuses=frozenset({RunStatus.FAILED, RunStatus.EXPIRED}))
    found, pages = _all(store, query, 2)
    expected = sorted(r.occurrence_id for _, runs in made for r in runs if query.matches(r))
    assert sorted(r.occurrence_id for r in found) == expected
    assert pages > len(expected) // 2  # the bounds cut pages short


def test_a_listing_only_reads(store: DynamoStore) -> None:
    _schedule_with(store, *MIXED)
    calls: list[str] = []

    def record(model: Any, **_: Any) -> None:
        calls.append(model.name)

    store.client.meta.events.register("before-parameter-build.dynamodb.*", record)
    _all(store, RunQuery(), 3)
    assert set(calls) == {"Query"}
