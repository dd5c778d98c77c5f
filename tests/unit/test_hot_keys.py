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
    hot = worst_minute(100_000)
    assert {(h.name, h.phase) for h in hot} >= {
        ("Schedules.due", "plan"),
        ("Runs.outbox", "plan"),
        ("Runs.outbox", "dispatch"),
        ("Runs", "run"),
    }
    assert max(h.per_s for h in hot) <= WRITE_UNITS_PER_KEY
    # The index keys take the burst; a table key is one schedule's.
    assert max(h.units for h in hot if h.name in ("Runs", "Schedules")) <= 2


def test_the_arithmetic_finds_a_hot_key_when_the_writers_outrun_the_shards() -> None:
    crowded = Pace(shards=1, due_shards=1, tick_processes=4, request_s=0.002)
    hot = worst_minute(10_000, crowded)
    assert hot[0].per_s > WRITE_UNITS_PER_KEY
    assert hot[0].name == "Schedules.due"


def test_one_occurrence_writes_eleven_units_on_the_happy_path() -> None:
    writes = occurrence_writes("sch_pattern", datetime(2026, 12, 1, 9, tzinfo=UTC), Pace())
    per_target: dict[str, int] = {}
    for write in writes:
        for name, _, units in key_writes(write):
            per_target[name] = per_target.get(name, 0) + units
    # Runs: record, claim, admit, mark sent, start, finish; the outbox: in once,
    # out once (admission does not touch a KEYS_ONLY index); the HEAD's
    # advance moves its due-index entry (out and in).
    assert per_target == {"Runs": 6, "Runs.outbox": 2, "Schedules": 1, "Schedules.due": 2}


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
