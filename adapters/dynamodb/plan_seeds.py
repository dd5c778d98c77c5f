"""The seeds and the HEAD check of planning.

A schedule's next slot lives in one of two places: its HEAD (a seed, in the
Schedules table's ``due`` index) or a line of a plan page (its chain,
plan_pages.py), written by the pass that planned it. Every row a pass plans
from, of either kind, is checked against its HEAD, read consistently: the
index may lag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from adapters.dynamodb import items as it
from adapters.dynamodb.plan_pages import CHAIN
from adapters.dynamodb.plan_session import DynamoPlanSession
from adapters.dynamodb.schedules import DynamoSchedules
from service.ports import DueSchedule


def seeds(
    schedules: DynamoSchedules, low: str | None, upper: str, after: str | None, limit: int
) -> list[dict[str, Any]]:
    """Up to ``limit + 1`` entries of each shard of the ``due`` index with
    a key in ``[low, upper]`` and past ``after`` (the page token's)."""

    def one(shard: int) -> list[dict[str, Any]]:
        values: dict[str, Any] = {":shard": {"S": str(shard)}, ":upper": {"S": upper}}
        condition = "#shard = :shard AND #key <= :upper"
        if low is not None:
            values[":low"] = {"S": low}
            condition = "#shard = :shard AND #key BETWEEN :low AND :upper"
        request = {
            "TableName": schedules.tables.schedules,
            "IndexName": "due",
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {"#shard": "due_shard", "#key": "due_key"},
            "ExpressionAttributeValues": values,
            # One more than a page, and one for the item the token names.
            "Limit": limit + 2,
        }
        found: list[dict[str, Any]] = []
        for item in schedules._query(request):
            if after is not None and str(it.value(item["due_key"])) <= after:
                continue
            found.append(item)
            if len(found) > limit:
                break
        return found

    return [item for found in schedules._each(one, range(schedules.due_shards)) for item in found]


def due_schedules(
    schedules: DynamoSchedules, page: Sequence[Mapping[str, Any]], s: DynamoPlanSession
) -> list[DueSchedule]:
    """The planning view of a page of ``due`` index items (seeds) and plan
    page entries, each checked against its schedule's HEAD, read
    consistently: a seed counts only while its HEAD still names it (the
    index may lag: a HEAD since planned, edited, paused or deleted is
    still there as it was); a page entry only while its schedule is at
    the entry's version, active, and not named by its HEAD (a seed there
    supersedes the chain)."""
    wanted = list({str(it.value(i["schedule_id"])) for i in page})
    current = {
        str(it.value(head["schedule_id"])): head
        for head in schedules._batch_get(
            schedules.tables.schedules, [it.head_key(sid) for sid in wanted], consistent=True
        )
    }
    with s.lock:
        # Read consistently a moment ago: the materialization's check uses
        # them once instead of reading each HEAD again (``_head_mode``).
        s.heads_read.update(current)
    rows: list[tuple[Mapping[str, Any], datetime]] = []
    for item in page:
        head = current.get(str(it.value(item["schedule_id"])))
        if head is None:
            continue
        if CHAIN not in item:
            if head.get("due_key") != item["due_key"] or not it.head_active(head):
                continue
        elif not _carried_by_chain(head, int(it.value(item["version"]))):
            continue
        rows.append((head, it.from_iso(str(it.value(item["next_due"])))))
    found = schedules._schedules([head for head, _ in rows], quarantine=True)
    by_id = {schedule.schedule_id: schedule for schedule in found}
    due: list[DueSchedule] = []
    for row, next_due in rows:
        schedule = by_id.get(str(it.value(row["schedule_id"])))
        if schedule is None:
            continue
        v = schedule.current
        due.append(DueSchedule(schedule.schedule_id, schedule.version, next_due, v.spec, v.policy))
    return due


def _carried_by_chain(head: Mapping[str, Any], version: int) -> bool:
    """Whether a HEAD leaves its schedule, at ``version``, to its chain: the
    version is current, no seed names the next slot, and it is active."""
    return (
        head.get("version") == {"N": str(version)}
        and "due_key" not in head
        and "next_due" in head
        and it.head_active(head)
    )
