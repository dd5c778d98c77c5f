"""Run listings with filters over the ``occurrences`` table (``Store.find_runs``).

One statement per page. A schedule's listing walks the
``occurrences_by_schedule`` index; a listing across schedules walks
``occurrences_by_time`` (``scheduled_at, occurrence_id``), so both come in one
order by ``scheduled_at`` and every page but the last is full; the listing
across schedules leaves out deleted schedules (their own listing keeps them). Status and kind
filters are tested on the rows the index yields.

A page token holds the direction and scope it was made for and the position
after the last row returned: ``[order, schedule or null, scheduled_at,
occurrence_id]``, base64 JSON.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Any

from domain.run import Run
from service.ports import Page, RunQuery


def _token(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode()


def _position(token: str, query: RunQuery) -> tuple[int, str]:
    """The (scheduled_at, occurrence_id) a token continues after, for this query only."""
    try:
        values = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError):
        raise ValueError("not a page token from this store") from None
    order = "newest" if query.newest_first else "oldest"
    if (
        not isinstance(values, list)
        or len(values) != 4
        or values[0] != order
        or values[1] != query.schedule_id
        or not isinstance(values[2], int)
        or not isinstance(values[3], str)
    ):
        raise ValueError("not a page token of this listing (order or schedule differ)")
    return values[2], values[3]


def find_runs(
    read: Callable[[str, Sequence[Any]], list[Any]],
    columns: str,
    decode: Callable[[Sequence[Any]], Run],
    us: Callable[[Any], int],
    query: RunQuery,
    limit: int,
    token: str | None,
) -> Page[Run]:
    """``Store.find_runs`` over ``read`` (the store's reader); ``columns`` and
    ``decode`` are its run columns and row mapping (``scheduled_at`` is the
    sixth column, ``occurrence_id`` the first)."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    where: list[str] = []
    params: list[Any] = []
    if query.schedule_id is not None:
        where.append("schedule_id = ?")
        params.append(query.schedule_id)
    else:
        # Across schedules: those not deleted (as the DynamoDB walk lists them).
        where.append(
            "EXISTS (SELECT 1 FROM schedules s WHERE s.schedule_id = occurrences.schedule_id "
            "AND s.deleted_at IS NULL)"
        )
    if query.statuses:
        statuses = sorted(status.value for status in query.statuses)
        where.append(f"status IN ({', '.join('?' * len(statuses))})")
        params.extend(statuses)
    if query.kinds:
        kinds = sorted(kind.value for kind in query.kinds)
        where.append(f"kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    if query.since is not None:
        where.append("scheduled_at >= ?")
        params.append(us(query.since))
    if query.until is not None:
        where.append("scheduled_at < ?")
        params.append(us(query.until))
    if token:
        at, occurrence_id = _position(token, query)
        where.append(f"(scheduled_at, occurrence_id) {'<' if query.newest_first else '>'} (?, ?)")
        params.extend((at, occurrence_id))
    direction = "DESC" if query.newest_first else "ASC"
    index = "occurrences_by_schedule" if query.schedule_id is not None else "occurrences_by_time"
    rows = read(
        f"SELECT {columns} FROM occurrences INDEXED BY {index} "
        f"WHERE {' AND '.join(where) or '1'} "
        f"ORDER BY scheduled_at {direction}, occurrence_id {direction} LIMIT ?",
        (*params, limit + 1),
    )
    items = tuple(decode(row) for row in rows[:limit])
    next_token = None
    if len(rows) > limit:
        last = rows[limit - 1]
        order = "newest" if query.newest_first else "oldest"
        next_token = _token([order, query.schedule_id, last[5], last[0]])
    return Page(items, next_token)
