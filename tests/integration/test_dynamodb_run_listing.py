"""The DynamoDB run listing's bounds: a call reads at most MAX_EVALUATED
records and visits at most MAX_SCHEDULES schedules, then answers what it found
(maybe nothing) with a token; following the tokens still lists every matching
record once. And it only reads."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb import run_listing
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.store import DynamoPorts, dynamo_store
from domain.run import RunStatus
from service.ports import RunQuery
from tests.contract.test_run_listing_contract import MIXED, _all, _schedule_with


@pytest.fixture
def store() -> Iterator[DynamoPorts]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        yield dynamo_store(client, create_store_tables(client, "listing"), due_shards=2)


@pytest.mark.parametrize(("evaluated", "schedules"), [(2, 50), (1000, 1), (3, 2)])
def test_bounded_calls_still_list_every_matching_run_once(
    store: DynamoPorts, monkeypatch: pytest.MonkeyPatch, evaluated: int, schedules: int
) -> None:
    made = [_schedule_with(store, *MIXED) for _ in range(4)]
    monkeypatch.setattr(run_listing, "MAX_EVALUATED", evaluated)
    monkeypatch.setattr(run_listing, "MAX_SCHEDULES", schedules)
    query = RunQuery(statuses=frozenset({RunStatus.FAILED, RunStatus.EXPIRED}))
    found, pages = _all(store, query, 2)
    expected = sorted(r.occurrence_id for _, runs in made for r in runs if query.matches(r))
    assert sorted(r.occurrence_id for r in found) == expected
    assert pages > len(expected) // 2  # the bounds cut pages short


def test_a_listing_only_reads(store: DynamoPorts) -> None:
    _schedule_with(store, *MIXED)
    calls: list[str] = []

    def record(model: Any, **_: Any) -> None:
        calls.append(model.name)

    store.records.client.meta.events.register("before-parameter-build.dynamodb.*", record)
    _all(store, RunQuery(), 3)
    assert set(calls) == {"Query"}


def test_a_listing_reads_the_runs_table_itself_and_no_index_of_it(store: DynamoPorts) -> None:
    # Records are filed by instant in their schedule's partition; the claims
    # (B#...) share it and are never listed.
    sid, made = _schedule_with(store, *MIXED)
    requests: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        requests.append(params)

    store.records.client.meta.events.register("before-parameter-build.dynamodb.Query", record)
    found, _ = _all(store, RunQuery(schedule_id=sid, newest_first=False), 3)
    assert [r.occurrence_id for r in found] == [r.occurrence_id for r in made]
    assert {(r["TableName"], r.get("IndexName")) for r in requests} == {
        (store.records.tables.occurrences, None)
    }


def _token_with(token: str, **changes: Any) -> str:
    values = json.loads(base64.urlsafe_b64decode(token.encode()))
    values.update(changes)
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode()


def test_a_token_whose_start_key_is_not_a_record_of_its_schedule_is_refused(
    store: DynamoPorts,
) -> None:
    sid, _ = _schedule_with(store, *MIXED)
    other, theirs = _schedule_with(store, *MIXED)
    page = store.records.find_runs(RunQuery(schedule_id=sid), 2)
    assert page.next_token is not None
    foreign = {"pk": {"S": other}, "sk": {"S": f"R#{theirs[0].occurrence_id}"}}
    claim = {"pk": {"S": sid}, "sk": {"S": "B#" + theirs[0].business_key}}
    extra = {"pk": {"S": sid}, "sk": {"S": "R#x"}, "scheduled_key": {"S": "x"}}
    for start in (foreign, claim, extra, {"pk": {"N": "1"}, "sk": {"S": "R#x"}}):
        with pytest.raises(ValueError, match="not a page token"):
            store.records.find_runs(
                RunQuery(schedule_id=sid), 2, _token_with(page.next_token, start=start)
            )
    across = store.records.find_runs(RunQuery(), 2)
    assert across.next_token is not None
    with pytest.raises(ValueError, match="not a page token"):  # a start key with no walk
        store.records.find_runs(
            RunQuery(), 2, _token_with(across.next_token, walk=None, start=foreign)
        )
    with pytest.raises(ValueError, match="not a page token"):  # a walk that is no schedule
        store.records.find_runs(
            RunQuery(), 2, _token_with(across.next_token, walk=foreign, start=None)
        )
