"""The worst minute for DynamoDB partition keys (docs/sizing.md), computed from
the table definitions and the items the store writes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from bench.hot_keys import (
    WRITE_UNITS_PER_KEY,
    Pace,
    key_writes,
    ledger_units_per_s,
    local_indexes,
    occurrence_writes,
    page_writes,
    worst_minute,
)
from service.planning.surge import TICK_RECORD_MIN


def test_no_table_has_a_local_index_so_no_schedule_has_an_item_collection_cap() -> None:
    assert local_indexes() == []


def test_no_key_takes_more_than_a_thousand_write_units_a_second_when_100000_fire_at_once() -> None:
    sent = worst_minute(100_000)
    # An intent sent as it is planned never touches the outbox.
    # A steady schedule's HEAD is not written, and no index either: the
    # pass's plan pages carry the next slots.
    assert {(h.name, h.phase) for h in sent} == {
        ("Runs", "pages"),
        ("Runs", "plan"),
        ("Runs", "run"),
    }
    # Every send failing is the bound: each record enters the outbox as it is
    # planned and leaves it when dispatch sends it again.
    failed = worst_minute(100_000, send_fails=True)
    assert {(h.name, h.phase) for h in failed} >= {
        ("Runs", "pages"),
        ("Runs.outbox", "plan"),
        ("Runs.outbox", "dispatch"),
        ("Runs", "run"),
    }
    outbox = [h for h in failed if h.name == "Runs.outbox"]
    assert max(outbox, key=lambda h: h.per_s).phase == "dispatch"
    for hot in (sent, failed):
        assert max(h.per_s for h in hot) <= WRITE_UNITS_PER_KEY
        # The index keys and the pages take the burst; a table key of a
        # run is one schedule's.
        assert max(h.units for h in hot if h.phase != "pages" and h.name == "Runs") <= 3
    # The pages of 100,000 next slots (about 22 bytes each) share one due
    # hour's key, written over about 3 seconds.
    pages = next(h for h in sent if h.phase == "pages")
    assert pages.key == "P#2026-12-02T09"
    assert 2_000 <= pages.units <= 3_000
    assert pages.seconds >= pages.units / WRITE_UNITS_PER_KEY


def test_the_arithmetic_finds_a_hot_key_when_the_writers_outrun_the_shards() -> None:
    crowded = Pace(shards=1, due_shards=1, tick_processes=4, request_s=0.002)
    # Pages written as fast as the tick can make requests: one key takes them.
    unpaced = replace(crowded, page_units_per_s=1e9)
    hot = worst_minute(100_000, unpaced)
    assert hot[0].per_s > WRITE_UNITS_PER_KEY
    assert (hot[0].name, hot[0].phase) == ("Runs", "pages")
    assert max(h.per_s for h in worst_minute(100_000, crowded)) <= WRITE_UNITS_PER_KEY
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


def test_one_occurrence_sent_as_it_is_planned_writes_three_units_and_no_index_entry() -> None:
    # Runs: the record (admitted, stamped sent), start, finish. No claim, no
    # HEAD, no index: its next slot is a line of its pass's plan page.
    assert _units_per_target(send_fails=False) == {"Runs": 3}


def test_one_occurrence_whose_send_failed_enters_the_outbox_once_and_leaves_it_once() -> None:
    # Runs: record, into the outbox, mark sent, start, finish.
    assert _units_per_target(send_fails=True) == {"Runs": 5, "Runs.outbox": 2}


def test_a_planned_next_slot_costs_a_few_dozen_bytes_of_a_page() -> None:
    at = datetime(2026, 12, 1, 9, tzinfo=UTC)
    pages = page_writes([f"sch_{n:016x}" for n in range(1000)], at, Pace())
    assert len(pages) == 1
    # 1,000 schedules planned together: about 22 units, not 1,000 index entries.
    assert 15 <= pages[0].units <= 30


def test_the_pace_is_the_deployments_own_defaults() -> None:
    from adapters.dynamodb.schedules import DUE_SHARDS
    from adapters.dynamodb.tables import CONCURRENCY
    from bootstrap.settings import Settings
    from infra.settings import Settings as StackSettings

    pace = Pace()
    assert pace.shards == Settings().shards
    assert pace.bucket_s == Settings().bucket_s
    assert pace.due_shards == DUE_SHARDS
    assert pace.requests_in_flight == CONCURRENCY
    assert pace.tick_processes == StackSettings().tick_reserved_concurrency


def test_the_load_ledger_keys_stay_cool_with_every_sender_on_one_key() -> None:
    # The tick at its fastest (every second of every pass crowded) and the API
    # stage's burst limit, all on one ledger key: still under a key's 1,000 units a second.
    from infra.settings import Settings as StackSettings

    api = StackSettings().api_throttle_burst
    assert ledger_units_per_s(Pace(), api) == 4_000 / TICK_RECORD_MIN + api
    assert ledger_units_per_s(Pace(), api) < WRITE_UNITS_PER_KEY


def test_a_ledger_item_stays_one_write_unit_with_every_second_counted_and_claimed() -> None:
    # DynamoDB's item size: each attribute's name, plus a string's UTF-8 bytes or a
    # number's (about one byte per two significant digits, plus one).
    from adapters.dynamodb.load import minute_key

    item: dict[str, Any] = dict(minute_key(datetime(2026, 12, 1, 9, 0, tzinfo=UTC), 3))
    for second in range(60):
        item[f"s{second:02d}"] = {"N": "1000000"}
        item[f"f{second:02d}"] = {"N": "1"}
    item["expires_at_epoch"] = {"N": "1796202000"}

    def size(value: dict[str, str]) -> int:
        [(kind, text)] = value.items()
        return len(text.encode()) if kind == "S" else (len(text) + 1) // 2 + 1

    assert sum(len(name) + size(value) for name, value in item.items()) <= 1024
