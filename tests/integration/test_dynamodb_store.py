"""What the DynamoDB store does beyond the shared contract: its item shapes,
the one conditional put of an occurrence (no transaction), the slots a
zone change can repeat, materializations longer than one advance, and its
page tokens."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb import items
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.materialize import OCCURRENCES_PER_ADVANCE
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import DynamoPorts, dynamo_store, dynamo_store_from_settings
from domain.partition import Partitioning
from domain.run import AttemptRecord, PendingOccurrence, Run, RunStatus, new_occurrence
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
def store(client: Any) -> DynamoPorts:
    return dynamo_store(client, create_store_tables(client, "it"), due_shards=2)


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
    assert items.from_iso(items.iso(late)).tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-01T09:00:00Z",  # no microseconds: not iso's width
        "2026-12-01T09:00:00.000000",  # no zone: would read naive
        "2026-12-01T09:00:00.000000+00:00",
        "2026-13-01T09:00:00.000000Z",  # no 13th month
        "",
    ],
)
def test_a_stored_instant_not_in_iso_form_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        items.from_iso(text)


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
    assert "outbox_key" not in items.record_item(closed, timedelta(days=1))


def test_a_materialization_longer_than_one_advance_is_written_in_order(
    store: DynamoPorts,
) -> None:
    schedule = build_schedule(NOW, spec={"every": "PT1M", "start_at": "2026-12-01T08:00:00Z"})
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    count = OCCURRENCES_PER_ADVANCE * 2 + 3
    runs = tuple(_run(sid, (NOW + timedelta(minutes=i)).isoformat()) for i in range(count))
    # One slot in the second chunk is taken already (a trigger, a backfill).
    assert store.records.insert([runs[60]]) == [runs[60].occurrence_id]
    [outcome] = store.schedules.materialize(
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
    ).outcomes
    assert outcome.applied
    assert outcome.inserted == tuple(r.occurrence_id for r in runs if r is not runs[60])
    head = store.schedules.get(sid)
    assert head is not None and head.next_due == NOW + timedelta(minutes=count)
    assert head.last_materialized_at == runs[-1].scheduled_at
    assert len(store.records.runs(sid, 500).items) == count


def test_a_schedule_that_moved_gets_nothing_written(store: DynamoPorts) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    run = _run(schedule.schedule_id, "2026-12-01T09:00:00Z")
    store.records.insert(
        [replace(run, occurrence_id=run.occurrence_id + "x", business_key="other")]
    )
    assert store.schedules.pause(schedule.schedule_id, "maintenance", NOW)
    [outcome] = store.schedules.materialize(
        [Materialization(schedule.schedule_id, 1, schedule.next_due, None, None, (run,))], NOW
    ).outcomes
    assert not outcome.applied and outcome.inserted == ()
    assert store.records.get_run(run.occurrence_id) is None
    assert store.records.get_by_business_key(run.business_key) is None


def test_a_paused_schedule_leaves_the_due_index_and_comes_back_on_resume(
    store: DynamoPorts,
) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    until = NOW + timedelta(days=2)
    assert [s.schedule_id for s in store.schedules.due(until, 10).items] == [schedule.schedule_id]
    store.schedules.pause(schedule.schedule_id, None, NOW)
    assert store.schedules.due(until, 10).items == ()
    store.schedules.resume(
        schedule.schedule_id,
        expected_next_due=schedule.next_due,
        next_due=schedule.next_due,
        now=NOW,
    )
    assert [s.schedule_id for s in store.schedules.due(until, 10).items] == [schedule.schedule_id]


def test_a_page_token_from_elsewhere_is_refused(store: DynamoPorts) -> None:
    with pytest.raises(ValueError):
        store.records.runs("sch_any", 10, "not a token!")


def test_from_settings_reads_the_table_names(client: Any) -> None:
    names = create_store_tables(client, "settings")

    class Settings:
        schedules_table = names.schedules
        occurrences_table = names.occurrences
        leases_table = names.leases

    store = dynamo_store_from_settings(Settings(), boto3.session.Session(region_name="us-east-1"))
    assert store.records.tables == names
    assert store.leases.acquire(0, "tick-a", NOW, timedelta(seconds=30)) is not None


# --- the occurrence's two items ----------------------------------------------------------


def _items(client: Any, store: DynamoPorts, schedule_id: str) -> dict[str, dict[str, Any]]:
    """Every item of a schedule's partition in the runs table, by sort key."""
    answer = client.query(
        TableName=store.records.tables.occurrences,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": schedule_id}},
        ConsistentRead=True,
    )
    return {item["sk"]["S"]: item for item in answer["Items"]}


def _operations(client: Any) -> list[str]:
    calls: list[str] = []
    client.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: calls.append(model.name)
    )
    return calls


def test_an_occurrence_is_one_record_by_instant_written_by_one_conditional_put(
    client: Any, store: DynamoPorts
) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    run = _run(schedule.schedule_id, "2026-12-01T09:00:00Z")
    calls = _operations(client)
    [outcome] = store.schedules.materialize(
        [Materialization(schedule.schedule_id, 1, schedule.next_due, None, None, (run,))], NOW
    ).outcomes
    assert outcome.applied and outcome.inserted == (run.occurrence_id,)
    assert "TransactWriteItems" not in calls
    assert calls.count("PutItem") == 1 and calls.count("UpdateItem") == 1
    found = _items(client, store, schedule.schedule_id)
    record_sk = "R#2026-12-01T09:00:00.000000Z#"
    assert sorted(found) == [record_sk]
    record = items.plain(found[record_sk])
    assert record["occurrence_id"] == run.occurrence_id
    assert record["business_key"] == run.business_key
    assert record["outbox_key"] == f"{run.bucket:012d}#2026-12-01T09:00:00.000000Z#" + (
        run.occurrence_id
    )
    described = client.describe_table(TableName=store.records.tables.occurrences)["Table"]
    assert not described.get("LocalSecondaryIndexes")


def test_a_gap_shifted_slot_is_found_by_its_occurrence_id_and_its_business_key(
    store: DynamoPorts,
) -> None:
    # 02:30 on 2026-03-08 does not exist in New York; dst_gap "shift" runs it at
    # 03:30 EDT (07:30Z), whose wall time is not the slot's.
    sid = "sch_gapshifted"
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    at = utc("2026-03-08T07:30:00Z")
    run = new_occurrence(
        sid,
        1,
        Slot(at, utc("2026-03-08T02:30:00Z").replace(tzinfo=None)),
        bucket=PARTS.bucket(at),
        shard=PARTS.shard(sid),
        materialized_at=NOW,
    )
    assert store.records.insert([run]) == [run.occurrence_id]
    assert store.records.get_run(run.occurrence_id) == run
    assert store.records.get_by_business_key(f"{sid}#2026-03-08T02:30:00#0") == run


def test_another_versions_occurrence_at_a_taken_instant_is_refused_and_nothing_changes(
    client: Any, store: DynamoPorts
) -> None:
    sid = "sch_sameinstant"
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    held = _run(sid, "2026-12-01T09:00:00Z")
    assert store.records.insert([held]) == [held.occurrence_id]
    before = _items(client, store, sid)
    twin = _run(sid, "2026-12-01T09:00:00Z", version=2)
    assert twin.occurrence_id != held.occurrence_id
    assert store.records.insert([twin]) == []
    assert _items(client, store, sid) == before
    assert store.records.get_run(twin.occurrence_id) is None
    assert store.records.get_run(held.occurrence_id) == held
    assert store.records.get_by_business_key(held.business_key) == held
    # Nothing addressed to the twin lands on the record at its instant.
    assert store.records.admit([PendingOccurrence.of(twin)], NOW) == []
    runs = DynamoRunStore(store)
    assert not runs.compare_and_set(twin, replace(twin, status=RunStatus.SKIPPED))
    assert runs.get_run_and_schedule(twin.occurrence_id, sid)[0] is None
    assert _items(client, store, sid) == before


def _zone_changed(store: DynamoPorts, sid: str, zone: str, at: Any) -> None:
    """Version 2 of ``sid`` (created at ``at``) runs the same cron in ``zone``."""
    schedule = store.schedules.get(sid)
    assert schedule is not None
    spec = {"cron": "0 9 * * *", "time_zone": zone}
    edited = build_schedule(at, schedule_id=sid, spec=spec, version=2).current
    assert store.schedules.save_version(
        edited, expected_next_due=schedule.next_due, next_due=schedule.next_due, now=at
    )


def _slot(sid: str, version: int, at: str, wall: str) -> Run:
    instant = utc(at)
    return new_occurrence(
        sid,
        version,
        Slot(instant, utc(wall).replace(tzinfo=None)),
        bucket=PARTS.bucket(instant),
        shard=PARTS.shard(sid),
        materialized_at=NOW,
    )


def test_a_slot_a_zone_change_gives_a_second_instant_is_refused_by_its_business_key(
    client: Any, store: DynamoPorts
) -> None:
    # 09:00 in London ran at 09:00Z; the schedule moves to New York, where the
    # same wall time falls at 14:00Z: one slot, refused the second time.
    sid = "sch_zonechange"
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    london = _slot(sid, 1, "2026-12-01T09:00:00Z", "2026-12-01T09:00:00Z")
    assert store.records.insert([london]) == [london.occurrence_id]
    _zone_changed(store, sid, "America/New_York", utc("2026-12-01T10:00:00Z"))
    before = _items(client, store, sid)
    new_york = _slot(sid, 2, "2026-12-01T14:00:00Z", "2026-12-01T09:00:00Z")
    assert new_york.business_key == london.business_key
    assert store.records.insert([new_york]) == []
    assert _items(client, store, sid) == before
    # The next day's slot is another business key: written.
    tomorrow = _slot(sid, 2, "2026-12-02T14:00:00Z", "2026-12-02T09:00:00Z")
    assert store.records.insert([tomorrow]) == [tomorrow.occurrence_id]


def test_slots_out_of_reach_of_a_zone_change_are_not_looked_up(
    client: Any, store: DynamoPorts
) -> None:
    sid = "sch_nochange"
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    _zone_changed(store, sid, "UTC", utc("2026-12-01T10:00:00Z"))  # an edit, same zone
    calls = _operations(client)
    run = _slot(sid, 2, "2026-12-01T14:00:00Z", "2026-12-01T14:00:00Z")
    assert store.records.insert([run]) == [run.occurrence_id]
    assert "Query" not in calls
    changed = "sch_changedlongago"
    store.schedules.create(build_schedule(NOW, schedule_id=changed))
    _zone_changed(store, changed, "Europe/Paris", utc("2026-11-01T10:00:00Z"))
    calls.clear()  # the edit reads its newest records (``requeue_unsent``)
    late = _slot(changed, 2, "2026-12-01T08:00:00Z", "2026-12-01T09:00:00Z")
    assert store.records.insert([late]) == [late.occurrence_id]
    assert "Query" not in calls


def test_a_schedule_that_moves_while_its_occurrences_are_written_gets_them_withdrawn(
    client: Any, store: DynamoPorts, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    run = _run(sid, "2026-12-01T09:00:00Z")
    put = store.records._write_occurrence

    def put_then_pause(written: Run, **kwargs: Any) -> tuple[bool, Run | None]:
        done = put(written, **kwargs)
        assert store.schedules.pause(sid, "paused meanwhile", NOW)
        return done

    monkeypatch.setattr(store.records, "_write_occurrence", put_then_pause)
    [outcome] = store.schedules.materialize(
        [Materialization(sid, 1, schedule.next_due, None, None, (run,))], NOW
    ).outcomes
    assert not outcome.applied and outcome.inserted == ()
    assert store.records.get_run(run.occurrence_id) is None
    assert _items(client, store, sid) == {}
    head = store.schedules.get(sid)
    assert head is not None and head.next_due == schedule.next_due


def test_admission_leaves_a_record_in_the_outbox_and_sending_takes_it_out(
    client: Any, store: DynamoPorts
) -> None:
    sid = "sch_outbox"
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    run = _run(sid, "2026-12-01T08:01:00Z")
    store.records.insert([run])
    entry = f"{run.bucket:012d}#2026-12-01T08:01:00.000000Z#{run.occurrence_id}"

    def outbox() -> list[str]:
        answer = client.query(
            TableName=store.records.tables.occurrences,
            IndexName="outbox",
            KeyConditionExpression="pending_shard = :shard",
            ExpressionAttributeValues={":shard": {"N": str(run.shard)}},
        )
        return [item["outbox_key"]["S"] for item in answer["Items"]]

    assert outbox() == [entry]
    store.records.admit([PendingOccurrence.of(run)], NOW)
    assert outbox() == [entry]
    assert store.records.mark_sent([run.occurrence_id], NOW) == 1
    assert outbox() == []


def test_a_planner_that_loses_the_advance_keeps_the_occurrences_the_winner_found_written(
    client: Any, store: DynamoPorts, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    run = _run(sid, "2026-12-01T09:00:00Z")
    plan = Materialization(sid, 1, schedule.next_due, None, run.scheduled_at, (run,))
    winner = dynamo_store(client, store.records.tables)
    put = store.records._write_occurrence
    outcomes = []

    def put_then_other_planner(written: Run, **kwargs: Any) -> tuple[bool, Run | None]:
        done = put(written, **kwargs)
        # The other planner finds the record written and advances first.
        outcomes.extend(winner.schedules.materialize([plan], NOW).outcomes)
        return done

    monkeypatch.setattr(store.records, "_write_occurrence", put_then_other_planner)
    [lost] = store.schedules.materialize([plan], NOW).outcomes
    assert outcomes == [(sid, True, ())]
    # Not applied, but the occurrence it wrote stays, and is reported as its own.
    assert lost == (sid, False, (run.occurrence_id,))
    assert store.records.get_run(run.occurrence_id) == run


def test_a_pause_closes_a_record_the_outbox_index_does_not_show_yet(
    store: DynamoPorts, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = "sch_lagging"
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    run = _run(sid, "2026-12-01T08:01:00Z")
    store.records.insert([run])
    query = store.records._query

    def index_behind(params: Any) -> Any:
        if params.get("IndexName") == "outbox":
            return iter(())  # the index has not caught up with the put yet
        return query(params)

    monkeypatch.setattr(store.records, "_query", index_behind)
    assert store.records.close_scheduled(sid, RunStatus.SKIPPED, "paused", NOW) == 1
    closed = store.records.get_run(run.occurrence_id)
    assert closed is not None and closed.status is RunStatus.SKIPPED and not closed.pending


# --- admitted as it stores: out of the outbox, the advance held until sent ----


def _plan_admitted(store: DynamoPorts, at: str) -> tuple[str, Run, Materialization]:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    run = _run(sid, at).admitted(NOW)
    plan = Materialization(sid, 1, schedule.next_due, None, run.scheduled_at, (run,))
    return sid, run, plan


def test_an_occurrence_admitted_as_it_is_stored_holds_its_advance_and_stays_out_of_the_outbox(
    client: Any, store: DynamoPorts
) -> None:
    sid, run, plan = _plan_admitted(store, "2026-12-01T08:01:00Z")
    stored = store.schedules.materialize([plan], NOW)
    assert [r.occurrence_id for r in stored.to_send] == [run.occurrence_id]
    head = store.schedules.get(sid)
    assert head is not None and head.next_due == plan.expected_next_due  # held
    record = _items(client, store, sid)[items.record_sort_key(run.scheduled_at)]
    assert "outbox_key" not in record and "pending_shard" not in record
    [outcome] = store.schedules.advance(stored, {run.occurrence_id})
    assert outcome == (sid, True, (run.occurrence_id,))
    head = store.schedules.get(sid)
    assert head is not None and head.next_due is None
    found = store.records.get_run(run.occurrence_id)
    assert found is not None and found.status is RunStatus.ADMITTED and not found.pending
    assert found.sent_at == NOW


def test_a_pass_that_died_before_its_advance_is_given_the_intent_to_send_again(
    store: DynamoPorts,
) -> None:
    sid, run, plan = _plan_admitted(store, "2026-12-01T08:01:00Z")
    store.schedules.materialize([plan], NOW)  # the dead pass: stored, maybe sent, not advanced
    again = store.schedules.materialize([plan], NOW)
    assert [r.occurrence_id for r in again.to_send] == [run.occurrence_id]  # at least once
    [outcome] = store.schedules.advance(again, {run.occurrence_id})
    assert outcome == (sid, True, ())  # not written by this call


def test_a_plain_materialization_finding_an_unsent_occurrence_puts_it_in_the_outbox(
    store: DynamoPorts,
) -> None:
    _, run, plan = _plan_admitted(store, "2026-12-01T08:01:00Z")
    store.schedules.materialize([plan], NOW)  # stored by a pass that died before sending
    waiting = replace(run, status=RunStatus.SCHEDULED, admitted_at=None)
    stored = store.schedules.materialize([plan._replace(occurrences=(waiting,))], NOW)
    assert stored.to_send == () and stored.held is None
    [outcome] = stored.outcomes
    assert outcome.applied
    found = store.records.get_run(run.occurrence_id)
    assert found is not None and found.pending
    [pending] = store.records.pending_due(run.shard, run.bucket, run.bucket, run.scheduled_at, 10)
    assert pending.occurrence_id == run.occurrence_id


def _mark_started(store: DynamoPorts, run: Run) -> None:
    """A worker took the run: its first attempt started."""
    store.records.client.update_item(
        TableName=store.records.tables.occurrences,
        Key=items.record_key_of_run(run),
        UpdateExpression="SET #s = :running, attempts = :one",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":running": {"S": "running"}, ":one": {"N": "1"}},
    )


def test_a_change_puts_back_in_the_outbox_what_a_pass_that_died_left_unsent(
    store: DynamoPorts,
) -> None:
    sid, run, plan = _plan_admitted(store, "2026-12-01T08:01:00Z")
    store.schedules.materialize([plan], NOW)  # the pass dies: stored, never sent
    assert store.records.pending_due(run.shard, run.bucket, run.bucket, run.scheduled_at, 10) == []
    assert store.records.requeue_unsent(sid) == 1
    [pending] = store.records.pending_due(run.shard, run.bucket, run.bucket, run.scheduled_at, 10)
    assert pending.occurrence_id == run.occurrence_id and pending.status is RunStatus.ADMITTED
    assert store.records.requeue_unsent(sid) == 0  # in the outbox already: nothing changes


@pytest.mark.parametrize("slots", [3, 40])  # within the newest read, and beyond it
def test_a_pause_closes_every_slot_the_last_pass_left_unsent_and_no_earlier_one(
    store: DynamoPorts, slots: int
) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    # An earlier pass's slot, sent and not started yet: out of the outbox too.
    before = NOW - timedelta(hours=1)
    earlier = replace(_run(sid, "2026-12-01T07:00:00Z"), materialized_at=before).admitted(before)
    early = Materialization(sid, 1, schedule.next_due, None, earlier.scheduled_at, (earlier,))
    [sent] = store.schedules.materialize([early], before).to_send
    assert sent.occurrence_id == earlier.occurrence_id
    # The last pass caught slots up and died before it sent them or advanced.
    runs = tuple(
        _run(sid, f"2026-12-01T07:{minute:02d}:30Z").admitted(NOW)
        for minute in range(10, 10 + slots)
    )
    plan = Materialization(sid, 1, schedule.next_due, None, runs[-1].scheduled_at, runs)
    store.schedules.materialize([plan], NOW)
    assert store.records.close_scheduled(sid, RunStatus.SKIPPED, "paused", NOW) == len(runs)
    statuses = {r.occurrence_id: r.status for r in store.records.runs(sid, 100).items}
    assert all(statuses[run.occurrence_id] is RunStatus.SKIPPED for run in runs)
    assert statuses[earlier.occurrence_id] is RunStatus.ADMITTED  # the worker decides it


def test_a_started_occurrence_is_not_put_back_in_the_outbox(store: DynamoPorts) -> None:
    sid, run, plan = _plan_admitted(store, "2026-12-01T08:01:00Z")
    store.schedules.materialize([plan], NOW)
    _mark_started(store, run)
    assert store.records.requeue_unsent(sid) == 0
    found = store.records.get_run(run.occurrence_id)
    assert found is not None and found.status is RunStatus.RUNNING and not found.pending


def test_a_started_occurrence_found_again_is_not_sent_again(store: DynamoPorts) -> None:
    _, run, plan = _plan_admitted(store, "2026-12-01T08:01:00Z")
    store.schedules.materialize([plan], NOW)
    _mark_started(store, run)
    stored = store.schedules.materialize([plan], NOW)
    assert stored.to_send == ()
    [outcome] = stored.outcomes
    assert outcome.applied


def test_a_sent_occurrence_whose_schedule_moved_before_the_advance_is_closed_and_frees_its_slot(
    client: Any, store: DynamoPorts
) -> None:
    sid, run, plan = _plan_admitted(store, "2026-12-01T08:01:00Z")
    stored = store.schedules.materialize([plan], NOW)
    assert store.schedules.pause(sid, "paused meanwhile", NOW)
    [outcome] = store.schedules.advance(stored, {run.occurrence_id})
    assert not outcome.applied and outcome.inserted == ()
    # Its intent is on its way: the worker finds it ended, not missing.
    closed = store.records.get_run(run.occurrence_id)
    assert closed is not None and closed.status is RunStatus.SKIPPED and not closed.pending
    # The slot is free for the schedule as it is now: version 2's occurrence
    # at that instant replaces the withdrawn record.
    again = replace(run, occurrence_id=f"{sid}.v2.20261201T080100Z", version=2)
    assert store.records.insert([again]) == [again.occurrence_id]
    assert store.records.get_run(run.occurrence_id) is None
    assert store.records.get_by_business_key(run.business_key) == again
    head = store.schedules.get(sid)
    assert head is not None and head.next_due == plan.expected_next_due


def test_an_unsent_occurrence_whose_schedule_moved_before_the_advance_is_deleted(
    store: DynamoPorts,
) -> None:
    sid, run, plan = _plan_admitted(store, "2026-12-01T08:01:00Z")
    stored = store.schedules.materialize([plan], NOW)
    assert store.records.into_outbox(stored.to_send) == 1  # its send failed
    assert store.schedules.pause(sid, "paused meanwhile", NOW)
    [outcome] = store.schedules.advance(stored, set())
    assert not outcome.applied
    assert store.records.get_run(run.occurrence_id) is None
    assert store.records.pending_due(run.shard, run.bucket, run.bucket, run.scheduled_at, 10) == []


def test_a_backlog_admitting_its_slots_holds_one_advance_for_all_of_them(
    store: DynamoPorts,
) -> None:
    schedule = build_schedule(NOW, spec={"every": "PT1M", "start_at": "2026-12-01T08:00:00Z"})
    store.schedules.create(schedule)
    assert schedule.next_due is not None
    sid, first = schedule.schedule_id, schedule.next_due
    count = OCCURRENCES_PER_ADVANCE + 11
    runs = tuple(
        _run(sid, (first + timedelta(minutes=i)).isoformat()).admitted(NOW) for i in range(count)
    )
    following = first + timedelta(minutes=count)
    plan = Materialization(sid, 1, first, following, runs[-1].scheduled_at, runs)
    stored = store.schedules.materialize([plan], NOW)
    assert len(stored.to_send) == count
    head = store.schedules.get(sid)
    assert head is not None and head.next_due == first  # none advanced before the send
    [outcome] = store.schedules.advance(stored, {r.occurrence_id for r in runs})
    assert outcome.applied and len(outcome.inserted) == count
    head = store.schedules.get(sid)
    assert head is not None and head.next_due == following


def test_records_of_two_schedules_at_one_instant_are_both_dispatched(
    store: DynamoPorts,
) -> None:
    # Their sort keys are equal (one instant): the pending read must tell them apart.
    runs = []
    for sid in ("sch_first", "sch_second"):
        store.schedules.create(build_schedule(NOW, schedule_id=sid))
        run = replace(_run(sid, "2026-12-01T08:01:00Z"), shard=0)
        assert store.records.insert([run]) == [run.occurrence_id]
        runs.append(run)
    due = store.records.pending_due(
        0, runs[0].bucket, runs[0].bucket, utc("2026-12-01T08:02:00Z"), 10
    )
    assert sorted(p.occurrence_id for p in due) == sorted(r.occurrence_id for r in runs)
