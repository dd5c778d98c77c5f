"""What the DynamoDB store does beyond the shared contract: its item shapes,
transactions larger than one DynamoDB transaction, and its page tokens."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb import items
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.store import OCCURRENCES_PER_TRANSACTION, DynamoStore
from domain.partition import Partitioning
from domain.run import AttemptRecord, Run, RunStatus, new_occurrence
from domain.spec import Slot
from service.ports import Materialization
from tests.conftest import build_schedule, utc

NOW = utc("2026-12-01T08:00:00Z")
PARTS = Partitioning(shards=4, bucket_s=60)


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


@pytest.fixture
def store(client: Any) -> DynamoStore:
    return DynamoStore(client, create_store_tables(client, "it"), due_shards=2)


def _run(schedule_id: str, at: str, version: int = 1) -> Run:
    instant = utc(at)
    return new_occurrence(
        schedule_id,
        version,
        Slot(instant, instant.replace(tzinfo=None)),
        bucket=PARTS.bucket(instant),
        shard=PARTS.shard(schedule_id),
        materialized_at=NOW,
    )


def test_instants_are_fixed_width_utc_text_so_text_order_is_time_order() -> None:
    early = utc("2026-12-01T09:00:00Z")
    late = early + timedelta(microseconds=1)
    assert items.iso(early) == "2026-12-01T09:00:00.000000Z"
    assert items.iso(early) < items.iso(late)
    assert items.from_iso(items.iso(late)) == late


def test_a_run_with_every_field_survives_the_round_trip() -> None:
    run = replace(
        _run("sch_roundtrip", "2026-12-01T09:00:00Z"),
        status=RunStatus.RETRYING,
        attempts=2,
        admitted_at=utc("2026-12-01T09:00:01Z"),
        sent_at=utc("2026-12-01T09:00:02Z"),
        started_at=utc("2026-12-01T09:00:03.5Z"),
        result={"rows": 3, "ratio": 0.25},
        progress={"done": 0.5},
        attempt_log=(AttemptRecord(1, utc("2026-12-01T09:00:03Z"), None, None, "timeout"),),
        run_token_hash="abc",
        run_lease_expires_at=utc("2026-12-01T09:15:00Z"),
    )
    item = items.record_item(run, timedelta(days=90))
    assert items.run_from_item(item) == run
    # TTL: the epoch number DynamoDB expires the item by.
    assert int(item["expires_at_epoch"]["N"]) == int(
        (run.scheduled_at + timedelta(days=90)).timestamp()
    )
    closed = replace(run, pending=False)
    assert "partition" not in items.record_item(closed, timedelta(days=1))


def test_a_materialization_larger_than_one_transaction_is_written_in_order(
    store: DynamoStore,
) -> None:
    schedule = build_schedule(NOW, spec={"every": "PT1M", "start_at": "2026-12-01T08:00:00Z"})
    store.create(schedule)
    sid = schedule.schedule_id
    count = OCCURRENCES_PER_TRANSACTION * 2 + 3
    runs = tuple(_run(sid, (NOW + timedelta(minutes=i)).isoformat()) for i in range(count))
    # One slot in the second transaction is taken already (a trigger, a backfill).
    assert store.insert([runs[60]]) == [runs[60].occurrence_id]
    [outcome] = store.materialize(
        [
            Materialization(
                sid,
                1,
                schedule.next_due,
                NOW + timedelta(minutes=count),
                runs[-1].scheduled_at,
                runs,
            )
        ],
        NOW,
    )
    assert outcome.applied
    assert outcome.inserted == tuple(r.occurrence_id for r in runs if r is not runs[60])
    head = store.get(sid)
    assert head is not None and head.next_due == NOW + timedelta(minutes=count)
    assert head.last_materialized_at == runs[-1].scheduled_at
    assert len(store.runs(sid, 500).items) == count


def test_a_schedule_that_moved_gets_nothing_written(store: DynamoStore) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    run = _run(schedule.schedule_id, "2026-12-01T09:00:00Z")
    store.insert([replace(run, occurrence_id=run.occurrence_id + "x", business_key="other")])
    assert store.pause(schedule.schedule_id, "maintenance", NOW)
    [outcome] = store.materialize(
        [Materialization(schedule.schedule_id, 1, schedule.next_due, None, None, (run,))], NOW
    )
    assert not outcome.applied and outcome.inserted == ()
    assert store.get_run(run.occurrence_id) is None
    assert store.get_by_business_key(run.business_key) is None


def test_a_paused_schedule_leaves_the_due_index_and_comes_back_on_resume(
    store: DynamoStore,
) -> None:
    schedule = build_schedule(NOW)
    store.create(schedule)
    until = NOW + timedelta(days=2)
    assert [s.schedule_id for s in store.due(until, 10).items] == [schedule.schedule_id]
    store.pause(schedule.schedule_id, None, NOW)
    assert store.due(until, 10).items == ()
    store.resume(
        schedule.schedule_id,
        expected_next_due=schedule.next_due,
        next_due=schedule.next_due,
        now=NOW,
    )
    assert [s.schedule_id for s in store.due(until, 10).items] == [schedule.schedule_id]


def test_a_page_token_from_elsewhere_is_refused(store: DynamoStore) -> None:
    with pytest.raises(ValueError):
        store.runs("sch_any", 10, "not a token!")


def test_from_settings_reads_the_table_names(client: Any) -> None:
    names = create_store_tables(client, "settings")

    class Settings:
        schedules_table = names.schedules
        occurrences_table = names.occurrences
        leases_table = names.leases

    store = DynamoStore.from_settings(Settings(), boto3.session.Session(region_name="us-east-1"))
    assert store.tables == names
    assert store.acquire(0, "tick-a", NOW, timedelta(seconds=30)) is not None
