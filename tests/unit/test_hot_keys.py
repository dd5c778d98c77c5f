"""The worst minute for DynamoDB partition keys (docs/sizing.md), computed from
the table definitions and the items the store writes."""

from __future__ import annotations

from datetime import UTC, datetime

from adapters.dynamodb.hot_keys import (
    WRITE_UNITS_PER_KEY,
    Pace,
    key_writes,
    local_indexes,
    occurrence_writes,
    worst_minute,
)


def test_no_table_has_a_local_index_so_no_schedule_has_an_item_collection_cap() -> None:
    assert local_indexes() == []


def test_no_key_takes_more_than_a_thousand_write_units_a_second_when_100000_fire_at_once() -> None:
    sent = worst_minute(100_000)
    # An intent sent as it is planned never touches the outbox.
    # A steady schedule's HEAD is not written: its record carries it on.
    assert {(h.name, h.phase) for h in sent} == {
        ("Runs.next", "plan"),
        ("Runs", "plan"),
        ("Runs", "run"),
    }
    # Every send failing is the bound: each record enters the outbox as it is
    # planned and leaves it when dispatch sends it again.
    failed = worst_minute(100_000, send_fails=True)
    assert {(h.name, h.phase) for h in failed} >= {
        ("Runs.next", "plan"),
        ("Runs.outbox", "plan"),
        ("Runs.outbox", "dispatch"),
        ("Runs", "run"),
    }
    assert (failed[0].name, failed[0].phase) == ("Runs.outbox", "dispatch")
    for hot in (sent, failed):
        assert max(h.per_s for h in hot) <= WRITE_UNITS_PER_KEY
        # The index keys take the burst; a table key is one schedule's.
        assert max(h.units for h in hot if h.name in ("Runs", "Schedules")) <= 3


def test_the_arithmetic_finds_a_hot_key_when_the_writers_outrun_the_shards() -> None:
    crowded = Pace(shards=1, due_shards=1, tick_processes=4, request_s=0.002)
    hot = worst_minute(10_000, crowded)
    assert hot[0].per_s > WRITE_UNITS_PER_KEY
    assert hot[0].name == "Runs.next"
    failed = worst_minute(10_000, crowded, send_fails=True)
    assert failed[0].per_s > WRITE_UNITS_PER_KEY
    assert failed[0].name == "Runs.outbox"


def _units_per_target(*, send_fails: bool) -> dict[str, int]:
    at = datetime(2026, 12, 1, 9, tzinfo=UTC)
    per_target: dict[str, int] = {}
    for write in occurrence_writes("sch_pattern", at, Pace(), send_fails=send_fails):
        for name, _, units in key_writes(write):
            per_target[name] = per_target.get(name, 0) + units
    return per_target


def test_one_occurrence_sent_as_it_is_planned_writes_four_units_and_no_outbox_entry() -> None:
    # Runs: the record (admitted, stamped sent), start, finish; the record's
    # entry in the ``next`` index, written once with it. No claim, no HEAD.
    assert _units_per_target(send_fails=False) == {"Runs": 3, "Runs.next": 1}


def test_one_occurrence_whose_send_failed_enters_the_outbox_once_and_leaves_it_once() -> None:
    # Runs: record, into the outbox, mark sent, start, finish.
    assert _units_per_target(send_fails=True) == {
        "Runs": 5,
        "Runs.outbox": 2,
        "Runs.next": 1,
    }


def test_the_pace_is_the_deployments_own_defaults() -> None:
    from adapters.dynamodb.store import CONCURRENCY, DUE_SHARDS
    from handlers.settings import Settings
    from infra.settings import Settings as StackSettings

    pace = Pace()
    assert pace.shards == Settings().shards
    assert pace.bucket_s == Settings().bucket_s
    assert pace.due_shards == DUE_SHARDS
    assert pace.requests_in_flight == CONCURRENCY
    assert pace.tick_processes == StackSettings().tick_reserved_concurrency
