"""The plan cursor and the plan lease: one item of the leases table
(``C#plan``).

Only the holder of the plan lease (the item's ``owner``, for ``PLAN_LEASE``)
plans; it reads the plan pages from the cursor's ``through`` (and
``partial``) to its horizon, and moves the cursor when it lets go,
conditioned on still owning the lease. The cursor also says where the next
page line is (``next_line``: no line has a next slot between ``through`` and
it), kept by each holder's let-go, so a pass whose horizon falls before it
reads no page (docs/decisions.md, "A pass reads the plan pages only when the
cursor says a line is due").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from adapters.dynamodb import items as it
from adapters.dynamodb.tables import DynamoTables, conditional

# The leases table item that holds how far planning has read the plan pages,
# and the plan lease: the one pass that plans, for at most this long (longer
# than the tick function's timeout, so no holder outlives it).
PLAN_CURSOR: Final = "C#plan"
PLAN_LEASE: Final = timedelta(seconds=120)


@dataclass(frozen=True)
class Cursor:
    """The plan cursor item, as planning reads it."""

    through: datetime | None  # the last complete holder's horizon
    partial: str | None  # the due_key up to which a holder out of time planned
    # No page line has a next slot in (through, next_line); None: not known.
    next_line: datetime | None
    owned: bool  # a holder took the plan lease and has not let it go

    @classmethod
    def of(cls, item: Mapping[str, Any] | None) -> Cursor:
        def text(name: str) -> str | None:
            return None if item is None or name not in item else str(it.value(item[name]))

        through, line = text("through"), text("next_line")
        return cls(
            None if through is None else it.from_iso(through),
            text("partial"),
            None if line is None else it.from_iso(line),
            item is not None and "owner" in item,
        )

    def quiet_until(self) -> datetime | None:
        """Before when no page line can be due, if the cursor says so: its
        ``next_line``, unless a holder has not let go (it may have written
        lines its let-go would have counted)."""
        return None if self.owned else self.next_line


def read_cursor(table: DynamoTables) -> Cursor:
    """The cursor as it stands, read consistently."""
    answer = table.client.get_item(
        TableName=table.tables.leases, Key=it.attrs({"pk": PLAN_CURSOR}), ConsistentRead=True
    )
    return Cursor.of(answer.get("Item"))


def take(table: DynamoTables, owner: str) -> Cursor | None:
    """Take the plan lease for ``owner`` (free, already ``owner``'s, or run
    out): the cursor as the holder before left it, or None when another
    holds it."""
    now = datetime.now(UTC)
    answer = conditional(
        table.client.update_item,
        TableName=table.tables.leases,
        Key=it.attrs({"pk": PLAN_CURSOR}),
        UpdateExpression="SET #owner = :me, #held_until = :held_until",
        ConditionExpression="attribute_not_exists(#owner) OR #owner = :me OR #held_until < :now",
        ExpressionAttributeNames={"#owner": "owner", "#held_until": "held_until"},
        ExpressionAttributeValues={
            ":me": {"S": owner},
            ":held_until": {"S": it.iso(now + PLAN_LEASE)},
            ":now": {"S": it.iso(now)},
        },
        ReturnValues="ALL_OLD",
    )
    return None if answer is None else Cursor.of(answer.get("Attributes"))


def let_go(
    table: DynamoTables,
    owner: str,
    through: datetime | None,
    partial: str | None = None,
    line: datetime | None = None,
) -> bool:
    """Let go of ``owner``'s plan lease, moving the cursor to ``through`` if
    given, setting its ``partial`` ("": removed; None: left as it is) and its
    ``next_line`` (None: removed, not known); False if the lease was no
    longer ``owner``'s (it ran out and another holder took it)."""
    sets, removes = [], ["#owner", "#held_until"]
    values: dict[str, Any] = {":me": {"S": owner}}
    names = {"#owner": "owner", "#held_until": "held_until", "#line": "next_line"}
    if line is not None:
        sets.append("#line = :line")
        values[":line"] = {"S": it.iso(line)}
    else:
        removes.append("#line")
    if partial is not None:
        names["#partial"] = "partial"
        if partial:
            sets.append("#partial = :partial")
            values[":partial"] = {"S": partial}
        else:
            removes.append("#partial")
    if through is not None:
        sets.append("#through = :through")
        values[":through"] = {"S": it.iso(through)}
        names["#through"] = "through"
    update = ("SET " + ", ".join(sets) + " " if sets else "") + "REMOVE " + ", ".join(removes)
    answer = conditional(
        table.client.update_item,
        TableName=table.tables.leases,
        Key=it.attrs({"pk": PLAN_CURSOR}),
        UpdateExpression=update,
        ConditionExpression="#owner = :me",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )
    return answer is not None


def moved(floor: datetime | None, until: datetime | None) -> datetime | None:
    """Where a pass that read from ``floor`` leaves the cursor: at ``until``
    if it planned through it and that is forward, else where it was."""
    return floor if until is None or (floor is not None and floor >= until) else until
