"""Each port of the DynamoDB adapter serves on its own, built from a client and
the table names (moto): the schedules, the run records and the leases and
heartbeats, with no state of their own beyond their settings (and the
schedules' cache of immutable versions)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.leases import DynamoLeases
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.run_records import DynamoRunRecords
from adapters.dynamodb.schedules import DynamoSchedules
from adapters.dynamodb.store import dynamo_store
from adapters.dynamodb.tables import TableNames
from domain.partition import Partitioning
from domain.run import PendingOccurrence, Run, RunStatus, new_occurrence
from domain.spec import Slot
from service.ports import Closure, Heartbeat, RunQuery
from tests.conftest import build_schedule, utc

NOW = utc("2026-12-01T08:00:00Z")
PARTS = Partitioning(shards=4, bucket_s=60)
# What a port object may hold: its client, the table names, its settings, and
# the thread pool its concurrency setting allows (made on first use).
HANDLE = {"client", "tables", "concurrency", "_executor", "_executor_lock"}
# The schedules' settings and their caches of what immutable versions say.
SCHEDULES = {"seal", "due_shards", "_versions", "_versions_lock", "_unreadable"}


@dataclass
class Tables:
    client: Any
    names: TableNames


@pytest.fixture
def tables() -> Iterator[Tables]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        yield Tables(client, create_store_tables(client, "ports"))


def _slot(sid: str, version: int, at: str, wall: str | None = None) -> Run:
    instant = utc(at)
    return new_occurrence(
        sid,
        version,
        Slot(instant, utc(wall or at).replace(tzinfo=None)),
        bucket=PARTS.bucket(instant),
        shard=PARTS.shard(sid),
        materialized_at=NOW,
    )


def _records(tables: Tables) -> DynamoRunRecords:
    """The run records alone, reading versions through a schedules port of their own."""
    versions = DynamoSchedules(tables.client, tables.names).get_versions
    return DynamoRunRecords(tables.client, tables.names, versions=versions)


def test_the_ports_hold_a_client_table_names_and_settings_only(tables: Tables) -> None:
    records = _records(tables)
    leases = DynamoLeases(tables.client, tables.names)
    assert set(vars(records)) == HANDLE | {"history_retention", "versions"}
    assert set(vars(leases)) == HANDLE | {"lease_shards"}
    # The store is one object per port over one client, none of them the others.
    store = dynamo_store(tables.client, tables.names)
    assert isinstance(store.records, DynamoRunRecords) and isinstance(store.leases, DynamoLeases)
    assert store.schedules.records is store.records  # the slots are stored through it
    assert store.records.client is store.schedules.client is store.leases.client
    assert not isinstance(store.schedules, DynamoRunRecords | DynamoLeases)


def _saved(tables: Tables, schedule_id: str) -> None:
    """The schedule, active at version 1: admission checks its HEAD."""
    dynamo_store(tables.client, tables.names).schedules.create(
        build_schedule(NOW, schedule_id=schedule_id)
    )


def test_the_store_keeps_nothing_of_a_planning_pass(tables: Tables) -> None:
    # A pass's memory is the session it asks for, held by the pass; the
    # store keeps its handle, settings and version caches.
    schedules = DynamoSchedules(tables.client, tables.names)
    assert set(vars(schedules)) == HANDLE | SCHEDULES
    store = dynamo_store(tables.client, tables.names)
    assert set(vars(store.schedules)) == HANDLE | SCHEDULES | {"history_retention", "records"}
    assert store.schedules.plan_session() is not store.schedules.plan_session()


def test_two_passes_over_one_store_are_two_holders_of_the_plan_lease(tables: Tables) -> None:
    # Overlapping invocations in one process share the store object; each pass
    # is its own holder, so the second plans nothing while the first holds.
    store = dynamo_store(tables.client, tables.names)
    first, second = store.schedules.plan_session(), store.schedules.plan_session()
    until = NOW + timedelta(minutes=5)
    store.schedules.due(until, 10, session=first)
    assert store.schedules.due(until, 10, session=second).items == ()
    assert first.held and not second.held
    # When the first pass ends and lets go, the next one takes it.
    store.schedules.planned_through(until, session=first)
    store.schedules.due(until, 10, session=second)
    assert second.held


def test_schedules_alone_create_read_edit_and_pause(tables: Tables) -> None:
    schedules = DynamoSchedules(tables.client, tables.names)
    schedule = build_schedule(NOW)
    created, fresh = schedules.create(schedule, "key-1")
    assert fresh and created == schedule
    assert schedules.create(schedule, "key-1") == (schedule, False)  # the same key: the first
    assert schedules.get(schedule.schedule_id) == schedule
    assert schedules.pause(schedule.schedule_id, "maintenance", NOW)
    paused = schedules.head(schedule.schedule_id)
    assert paused is not None and paused.state.paused
    assert [v.version for v in schedules.versions(schedule.schedule_id, 10).items] == [1]
    assert schedules.delete(schedule.schedule_id, NOW)
    deleted = schedules.get(schedule.schedule_id)
    assert deleted is not None and deleted.deleted_at == NOW


def test_run_records_alone_write_read_admit_close_and_list(tables: Tables) -> None:
    records = _records(tables)
    _saved(tables, "sch_alone")
    first = _slot("sch_alone", 1, "2026-12-01T09:00:00Z")
    second = _slot("sch_alone", 1, "2026-12-01T10:00:00Z")
    assert records.insert([first, second]) == [first.occurrence_id, second.occurrence_id]
    assert records.insert([first]) == []  # one record an instant
    assert records.get_run(first.occurrence_id) == first
    assert records.get_by_business_key(first.business_key) == first
    assert [r.occurrence_id for r in records.runs("sch_alone", 10).items] == [
        second.occurrence_id,
        first.occurrence_id,
    ]
    found = records.find_runs(RunQuery(schedule_id="sch_alone"), 10)
    assert {r.occurrence_id for r in found.items} == {first.occurrence_id, second.occurrence_id}
    shard = PARTS.shard("sch_alone")
    bucket = PARTS.bucket(first.scheduled_at)
    assert records.earliest_pending_bucket(shard) == bucket
    due = records.pending_due(shard, bucket, bucket, first.scheduled_at, 10)
    assert [o.occurrence_id for o in due] == [first.occurrence_id]
    assert records.admit(due, NOW) == [first.occurrence_id]
    assert records.admit(due, NOW) == []  # admitted once
    store = dynamo_store(tables.client, tables.names)
    assert store.schedules.pause("sch_alone", None, NOW)
    assert (
        records.admit([PendingOccurrence.of(second)], NOW) == []
    )  # a paused schedule's record waits, for dispatch to close
    assert records.mark_sent([first.occurrence_id], NOW) == 1
    admitted = records.get_run(first.occurrence_id)
    assert admitted is not None and admitted.status is RunStatus.ADMITTED
    closed = records.close_runs([Closure(second.occurrence_id, RunStatus.SKIPPED, "paused")], NOW)
    assert closed == [second.occurrence_id]
    assert records.earliest_pending_bucket(shard) is None
    assert records.withdraw_planned("sch_alone", NOW) == 1  # the admitted, unstarted slot
    assert records.get_run(first.occurrence_id) is None


def test_run_records_alone_close_what_waits_and_withdraw_what_is_planned(tables: Tables) -> None:
    records = _records(tables)
    _saved(tables, "sch_pause")
    waiting = _slot("sch_pause", 1, "2026-12-01T09:00:00Z")
    planned = _slot("sch_pause", 1, "2026-12-01T10:00:00Z")
    records.insert([waiting, planned])
    assert records.admit([PendingOccurrence.of(planned)], NOW) == [planned.occurrence_id]
    assert records.close_scheduled("sch_pause", RunStatus.SKIPPED, "paused", NOW) == 1
    assert records.withdraw_planned("sch_pause", NOW) == 1
    closed = records.get_run(waiting.occurrence_id)
    assert closed is not None and closed.status is RunStatus.SKIPPED
    assert records.get_run(planned.occurrence_id) is None


def test_run_records_alone_refuse_a_slot_a_zone_change_repeats(tables: Tables) -> None:
    # The versions are the schedules' (written here by the whole store); the
    # run records read them to know the zone changed, without its cache.
    store = dynamo_store(tables.client, tables.names)
    sid = "sch_zone"
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    schedule = store.schedules.get(sid)
    assert schedule is not None
    spec = {"cron": "0 9 * * *", "time_zone": "America/New_York"}
    at = utc("2026-12-01T10:00:00Z")
    edited = build_schedule(at, schedule_id=sid, spec=spec, version=2).current
    assert store.schedules.save_version(
        edited, expected_next_due=schedule.next_due, next_due=schedule.next_due, now=at
    )
    records = _records(tables)
    london = _slot(sid, 1, "2026-12-01T09:00:00Z")
    assert records.insert([london]) == [london.occurrence_id]
    new_york = _slot(sid, 2, "2026-12-01T14:00:00Z", "2026-12-01T09:00:00Z")
    assert new_york.business_key == london.business_key
    assert records.insert([new_york]) == []
    assert records._zone_changed_at(sid, 2) == store.records._zone_changed_at(sid, 2) == at


def test_leases_alone_take_renew_and_release(tables: Tables) -> None:
    leases = DynamoLeases(tables.client, tables.names)
    ttl = timedelta(seconds=30)
    held = leases.acquire(0, "a", NOW, ttl)
    assert held is not None and held.owner == "a"
    assert leases.acquire(0, "b", NOW, ttl) is None  # live and another's
    renewed = leases.acquire(0, "a", NOW + timedelta(seconds=10), ttl)
    assert renewed is not None and renewed.epoch == held.epoch
    assert leases.release(0, "a", held.epoch, NOW + timedelta(seconds=11))
    taken = leases.acquire(0, "b", NOW + timedelta(seconds=12), ttl)
    assert taken is not None and taken.owner == "b" and taken.epoch == held.epoch + 1
    assert [(lease.shard, lease.owner) for lease in leases.leases()] == [(0, "b")]
    # With the deployment's shard count, read by key: the same answer.
    keyed = DynamoLeases(tables.client, tables.names, lease_shards=2)
    assert keyed.leases() == leases.leases()


def test_leases_alone_keep_heartbeats_of_components(tables: Tables) -> None:
    leases = DynamoLeases(tables.client, tables.names)
    leases.beat(Heartbeat("watch:sch_x", NOW, {"ok": True}))
    assert leases.heartbeat("watch:sch_x") == Heartbeat("watch:sch_x", NOW, {"ok": True})
    assert set(leases.heartbeats_of(["watch:sch_x", "watch:none"])) == {"watch:sch_x"}
    later = Heartbeat("watch:sch_x", NOW + timedelta(minutes=1), {"ok": False})
    assert not leases.beat_if(later, None)  # there is one already
    assert leases.beat_if(later, NOW)
    assert not leases.beat_if(later, NOW)  # the beat it replaced is gone
