"""The plan pages: items on the Runs table that hold the next slots a
planning pass's chain carries (see items for their layout, and
docs/decisions.md, "The next slot's one home"): read back consistently by
due hour, the next line past an instant found with a query of one item, and
written no faster than one partition takes them.
"""

from __future__ import annotations

import bisect
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from adapters.dynamodb import items as it
from adapters.dynamodb.tables import DynamoTables

# A pass writes the next slots its chain carries as plan pages (see items),
# at most this many write units a second to one page partition (DynamoDB's
# ceiling for a key is 1,000; half is left for the estimate of a page's size).
# With no cursor yet, the pages of this long before the horizon are read.
PAGE_UNITS_PER_S: Final = 500
PAGE_REACH: Final = timedelta(days=1)
# A page entry read as a ``due`` entry is marked so (a seed is not).
CHAIN: Final = "chain"


def read_pages(
    table: DynamoTables, low: datetime, upper: datetime, *, consistent: bool = True
) -> tuple[list[tuple[str, dict[str, Any]]], datetime | None]:
    """Every entry of the plan pages with a next slot in ``(low, upper]``,
    once each, in ``due_key`` order: a query of each due hour's partition
    between the two minutes, read consistently (the last holder wrote
    them before it let the plan lease go); and the earliest line after
    ``upper`` in the minutes read (``upper``'s own), if any."""
    first, last = it.page_minute(low), it.page_minute(upper)
    hours = []
    hour = first.replace(minute=0)
    while hour <= last:
        hours.append(hour)
        hour += timedelta(hours=1)
    bounds = {":low": {"S": it.iso(first)}, ":high": {"S": f"{it.iso(last)}#{it.KEY_CEILING}"}}

    def one(hour: datetime) -> list[dict[str, Any]]:
        return list(
            table._query(
                {
                    "TableName": table.tables.occurrences,
                    "KeyConditionExpression": "pk = :pk AND sk BETWEEN :low AND :high",
                    "ExpressionAttributeValues": {":pk": {"S": it.page_pk(hour)}, **bounds},
                    "ConsistentRead": consistent,
                }
            )
        )

    found: dict[tuple[str, int], dict[str, Any]] = {}
    beyond: datetime | None = None
    for items in table._each(one, hours):
        for item in items:
            for at, schedule_id, version in it.page_entries(item):
                if low < at <= upper:
                    found[(it.due_key(at, schedule_id), version)] = _chain_entry(
                        at, schedule_id, version
                    )
                elif at > upper and (beyond is None or at < beyond):
                    beyond = at
    return [(key[0], found[key]) for key in sorted(found)], beyond


def first_line_after(table: DynamoTables, after: datetime) -> datetime:
    """A bound below every page line with a next slot in a minute after
    ``after``'s: the minute of the first page item of a later minute (a
    query of one item in the rest of ``after``'s hour, then one in the next
    hour), else the end of the next hour."""
    hour = after.replace(minute=0, second=0, microsecond=0)
    for partition, start in (
        (hour, f"{it.iso(it.page_minute(after))}#{it.KEY_CEILING}"),
        (hour + timedelta(hours=1), None),
    ):
        values: dict[str, Any] = {":pk": {"S": it.page_pk(partition)}}
        condition = "pk = :pk"
        if start is not None:
            values[":start"] = {"S": start}
            condition += " AND sk > :start"
        answer = table.client.query(
            TableName=table.tables.occurrences,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ConsistentRead=True,
            Limit=1,
        )
        for item in answer.get("Items", []):
            return it.from_iso(str(it.value(item["sk"])).split("#", 1)[0])
    return hour + timedelta(hours=2)


def write_pages(
    table: DynamoTables, entries: Sequence[tuple[datetime, str, int]], retention: timedelta
) -> None:
    """Write next slots as plan pages (expiring ``retention`` after their
    minute), at most ``PAGE_UNITS_PER_S`` write units a second to one
    partition (a due hour's)."""
    token = uuid.uuid4().hex[:12]
    opened: dict[str, tuple[float, int]] = {}  # partition: its second's start, units spent
    for item in it.page_items(entries, token, retention):
        pk, units = str(it.value(item["pk"])), it.item_units(item)
        now = time.monotonic()
        start, spent = opened.get(pk, (now, 0))
        if now - start >= 1.0:
            start, spent = now, 0
        elif spent and spent + units > PAGE_UNITS_PER_S:
            time.sleep(1.0 - (now - start))
            start, spent = time.monotonic(), 0
        table.client.put_item(TableName=table.tables.occurrences, Item=item)
        opened[pk] = (start, spent + units)


def _chain_entry(at: datetime, schedule_id: str, version: int) -> dict[str, Any]:
    """A plan page's entry as a ``due`` entry."""
    return {
        "due_key": {"S": it.due_key(at, schedule_id)},
        "schedule_id": {"S": schedule_id},
        "version": {"N": str(version)},
        "next_due": {"S": it.iso(at)},
        CHAIN: True,
    }


def entries_past(
    entries: Sequence[tuple[str, dict[str, Any]]], after: str | None, limit: int
) -> list[dict[str, Any]]:
    """Up to ``limit + 1`` of ``entries`` (sorted (due_key, entry) pairs) with
    a ``due_key`` past ``after``: a page of ``due`` and whether there is more."""
    start = 0 if after is None else bisect.bisect_right(entries, after, key=lambda e: e[0])
    return [entry for _, entry in entries[start : start + limit + 1]]
