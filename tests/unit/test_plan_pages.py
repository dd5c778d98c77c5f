"""Plan pages: the items a planning pass writes for the next slots its chain
carries (one per due minute, chunked), read back entry for entry, and
written no faster than a partition takes them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from adapters.dynamodb import items
from adapters.dynamodb import plan_pages as store_module
from adapters.dynamodb.plan_pages import PAGE_UNITS_PER_S
from adapters.dynamodb.store import DynamoPorts, dynamo_store
from adapters.dynamodb.tables import TableNames
from tests.conftest import utc

MINUTE = utc("2026-12-01T09:00:00Z")
DAY = timedelta(days=1)


def test_entries_come_back_from_their_pages_with_their_exact_instants() -> None:
    entries = [
        (MINUTE, "a", 1),
        (MINUTE + timedelta(seconds=30, microseconds=7), "b", 12),
        (MINUTE + timedelta(minutes=1), "c", 3),
        (MINUTE + timedelta(hours=1, minutes=5), "d", 4),
    ]
    pages = items.page_items(entries, "0123456789ab", DAY)
    # One page a due minute, each in the partition of its due hour.
    assert [(p["pk"]["S"], p["sk"]["S"]) for p in pages] == [
        ("P#2026-12-01T09", "2026-12-01T09:00:00.000000Z#0123456789ab#0000"),
        ("P#2026-12-01T09", "2026-12-01T09:01:00.000000Z#0123456789ab#0000"),
        ("P#2026-12-01T10", "2026-12-01T10:05:00.000000Z#0123456789ab#0000"),
    ]
    assert [entry for page in pages for entry in items.page_entries(page)] == entries
    # A slot on the minute's start names no offset; one past it does.
    assert pages[0]["entries"]["S"] == "a#1\nb#12#30000007"
    # Each page expires the retention after its minute.
    assert int(pages[0]["expires_at_epoch"]["N"]) == int((MINUTE + DAY).timestamp())


def test_a_crowded_minute_is_split_into_chunks_none_above_the_item_limit() -> None:
    count = items.PAGE_ENTRIES * 2 + 1
    entries = [(MINUTE, f"{n:026d}", 1) for n in range(count)]
    pages = items.page_items(entries, "t", DAY)
    assert [p["sk"]["S"].rsplit("#", 1)[1] for p in pages] == ["0000", "0001", "0002"]
    assert sorted(e for p in pages for e in items.page_entries(p)) == sorted(entries)
    # DynamoDB refuses an item above 400 KB.
    assert max(items.item_units(p) for p in pages) * 1024 < 400 * 1024


def test_a_slot_named_twice_in_a_pass_is_written_once() -> None:
    pages = items.page_items([(MINUTE, "a", 1), (MINUTE, "a", 1)], "t", DAY)
    assert [items.page_entries(p) for p in pages] == [[(MINUTE, "a", 1)]]


def test_the_units_of_a_page_follow_its_size() -> None:
    small = items.page_items([(MINUTE, "a" * 26, 1)] * 1, "t", DAY)[0]
    assert items.item_units(small) == 1
    many = items.page_items([(MINUTE, f"{n:026d}", 1) for n in range(100)], "t", DAY)[0]
    # 100 entries of 29 bytes and a newline each: about 3 KB.
    assert items.item_units(many) == 3


class Puts:
    """A client that records each put and the (fake) second it was sent at."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.sent: list[tuple[float, str, int]] = []

    def put_item(self, *, TableName: str, Item: dict[str, Any]) -> None:
        self.sent.append((self.clock[0], str(Item["pk"]["S"]), items.item_units(Item)))


@pytest.fixture
def paced(monkeypatch: pytest.MonkeyPatch) -> tuple[DynamoPorts, Puts]:
    """A store whose clock moves only when it sleeps, over a recording client."""
    clock = [1000.0]
    monkeypatch.setattr(store_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(store_module.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    client = Puts(clock)
    return dynamo_store(client, TableNames("s", "r", "l")), client


def test_pages_are_written_no_faster_than_a_partition_takes_them(
    paced: tuple[DynamoPorts, Puts],
) -> None:
    store, client = paced
    # 8,000 slots in each minute of one due hour: 120 pages of about 115
    # units each, all in one partition.
    entries = [
        (MINUTE + timedelta(minutes=m), f"{n:026d}", 1)
        for m in range(60)
        for n in range(items.PAGE_ENTRIES * 2)
    ]
    store.schedules._write_pages(entries, store.schedules.plan_session())
    assert len(client.sent) == 120
    units = sum(units for _, _, units in client.sent)
    assert units > PAGE_UNITS_PER_S * 3
    # No second of one partition got more than its share.
    by_second: dict[tuple[str, int], int] = {}
    for at, pk, spent in client.sent:
        key = (pk, int(at - 1000.0))
        by_second[key] = by_second.get(key, 0) + spent
    assert max(by_second.values()) <= PAGE_UNITS_PER_S
    # And it took as long as that share asks: a second holds whole pages, so
    # at worst a page's units short of the share.
    elapsed = client.sent[-1][0] - 1000.0
    largest = max(units for _, _, units in client.sent)
    assert units / PAGE_UNITS_PER_S - 1 <= elapsed <= units / (PAGE_UNITS_PER_S - largest)


def test_pages_of_different_hours_do_not_wait_for_each_other(
    paced: tuple[DynamoPorts, Puts],
) -> None:
    store, client = paced
    # One small page in each of 48 due hours: nothing waits.
    entries = [(MINUTE + timedelta(hours=h), "a", 1) for h in range(48)]
    store.schedules._write_pages(entries, store.schedules.plan_session())
    assert len({pk for _, pk, _ in client.sent}) == 48
    assert client.sent[-1][0] == 1000.0
