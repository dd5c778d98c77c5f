"""Run listings with filters over the runs table (``Store.find_runs``).

No index serves them, so a run costs no write for them:

- a schedule's listing is a Query of that schedule's partition in the table
  itself, whose records are keyed ``R#<scheduled_at>#<occurrence_id>`` (see
  items): ``since`` and ``until`` bound the sort key, the order is the scan
  direction, status and kind a filter expression (read units count the
  records the key range holds, matching or not; the claims, ``B#...``, sort
  before every record and are never in the range);
- a listing across schedules walks the schedules in their listing order (the
  ``listing`` index of the schedules table, keys only, which a deleted
  schedule leaves) and lists each one's records as above, one schedule after the
  other: each schedule's records come in the asked order, the schedules do
  not interleave.

One call reads at most ``MAX_EVALUATED`` records and visits at most
``MAX_SCHEDULES`` schedules; when it stops there it answers the runs found so
far (maybe none) with a token to go on. Eventually consistent reads (half the
read units): a listing may miss a change made within the last second.

A page token is base64 JSON: the order and schedule it was made for, the
listing key of the schedule the walk is in, and the start key (a record's
``pk`` and ``sk``) inside it.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, Final

from adapters.dynamodb import items as it
from domain.run import Run
from service.ports import Page, RunQuery

if TYPE_CHECKING:
    from adapters.dynamodb.tables import DynamoTables

# Records one call evaluates at most (about 2 read units per 4 KiB page read
# eventually consistent; a record is under 1 KiB).
MAX_EVALUATED: Final = 1000
# Schedules one call of a listing across schedules visits at most (one Query each).
MAX_SCHEDULES: Final = 50
_SCHEDULE_PREFIX: Final = "S#"
# The keys of a schedule in the schedules table's ``listing`` index.
_WALK_KEY: Final = ("pk", "sk", "entity", "created_key")


def _encode(values: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values, sort_keys=True).encode()).decode()


def _decode(token: str, query: RunQuery) -> dict[str, Any]:
    try:
        values = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError):
        raise ValueError("not a page token from this store") from None
    order = "newest" if query.newest_first else "oldest"
    if (
        not isinstance(values, dict)
        or values.get("order") != order
        or values.get("scope") != query.schedule_id
        or not isinstance(values.get("walk"), dict | None)
        or not isinstance(values.get("start"), dict | None)
    ):
        raise ValueError("not a page token of this listing (order or schedule differ)")
    walk, start = values["walk"], values["start"]
    if walk is not None and (
        set(walk) != set(_WALK_KEY)
        or not all(_text(walk[name]) for name in _WALK_KEY)
        or not _text(walk["pk"]).startswith(_SCHEDULE_PREFIX)
    ):
        raise ValueError("not a page token from this store")
    if start is not None:
        # A record of the schedule the listing is in (its own, or the walk's).
        owner = query.schedule_id
        if owner is None:
            owner = None if walk is None else _text(walk["pk"]).removeprefix(_SCHEDULE_PREFIX)
        if (
            set(start) != {"pk", "sk"}
            or _text(start["pk"]) != owner
            or not _text(start["sk"]).startswith(it.RECORD_PREFIX)
        ):
            raise ValueError("not a page token from this store")
    return values


def _text(attribute: Any) -> str:
    """The text of a string attribute in a token ("" for anything else)."""
    if isinstance(attribute, dict) and isinstance(attribute.get("S"), str):
        return str(attribute["S"])
    return ""


class _Budget:
    def __init__(self) -> None:
        self.evaluated = 0
        self.schedules = 0

    @property
    def spent(self) -> bool:
        return self.evaluated >= MAX_EVALUATED or self.schedules >= MAX_SCHEDULES


def _schedule_request(store: DynamoTables, schedule_id: str, query: RunQuery) -> dict[str, Any]:
    # "R#<since>" sorts before every "R#<since>#<id>": an inclusive lower
    # bound; "R#<until>" sorts before every "R#<until>#<id>" and is no key
    # itself: an exclusive upper bound under BETWEEN.
    low = it.RECORD_PREFIX if query.since is None else it.record_bound(query.since)
    high = (
        it.RECORD_PREFIX + it.KEY_CEILING if query.until is None else it.record_bound(query.until)
    )
    names = {"#pk": "pk", "#sk": "sk"}
    values: dict[str, Any] = {":pk": {"S": schedule_id}, ":low": {"S": low}, ":high": {"S": high}}
    filters: list[str] = []
    for field, chosen in (("status", query.statuses), ("kind", query.kinds)):
        if not chosen:
            continue
        names[f"#{field}"] = field
        placeholders = []
        for number, value in enumerate(sorted(item.value for item in chosen)):
            values[f":{field}{number}"] = {"S": value}
            placeholders.append(f":{field}{number}")
        filters.append(f"#{field} IN ({', '.join(placeholders)})")
    request: dict[str, Any] = {
        "TableName": store.tables.occurrences,
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :low AND :high",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ScanIndexForward": not query.newest_first,
    }
    if filters:
        request["FilterExpression"] = " AND ".join(filters)
    return request


def _one_schedule(
    store: DynamoTables,
    schedule_id: str,
    query: RunQuery,
    want: int,
    start: dict[str, Any] | None,
    budget: _Budget,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Up to ``want`` matching records of one schedule from ``start``, and the
    start key to go on from (None: the schedule has no more)."""
    request = _schedule_request(store, schedule_id, query)
    found: list[dict[str, Any]] = []
    key_names = ("pk", "sk")
    while True:
        request["Limit"] = max(1, min(want + 1 - len(found), MAX_EVALUATED - budget.evaluated))
        if start:
            request["ExclusiveStartKey"] = start
        answer = store.client.query(**request)
        budget.evaluated += int(answer.get("ScannedCount", 0))
        found.extend(answer.get("Items", []))
        last = answer.get("LastEvaluatedKey")
        if len(found) > want:
            # One more than wanted: the page ends after the last one kept.
            kept = found[want - 1]
            return found[:want], {name: kept[name] for name in key_names}
        if not last:
            return found, None
        start = last
        if len(found) == want or budget.evaluated >= MAX_EVALUATED:
            return found, start


def _schedules_after(
    store: DynamoTables, walk: dict[str, Any] | None, count: int
) -> list[dict[str, Any]]:
    """The listing keys of up to ``count`` schedules after ``walk`` (from the first when None)."""
    request: dict[str, Any] = {
        "TableName": store.tables.schedules,
        "IndexName": "listing",
        "KeyConditionExpression": "#entity = :entity",
        "ExpressionAttributeNames": {"#entity": "entity"},
        "ExpressionAttributeValues": {":entity": {"S": it.ENTITY_SCHEDULE}},
        "Limit": count,
    }
    if walk:
        request["ExclusiveStartKey"] = walk
    answer = store.client.query(**request)
    return list(answer.get("Items", []))


def find_runs(store: DynamoTables, query: RunQuery, limit: int, token: str | None) -> Page[Run]:
    if limit < 1:
        raise ValueError("limit must be at least 1")
    state = _decode(token, query) if token else {"walk": None, "start": None}
    order = "newest" if query.newest_first else "oldest"
    budget = _Budget()

    def token_at(walk: dict[str, Any] | None, start: dict[str, Any] | None) -> str:
        return _encode({"order": order, "scope": query.schedule_id, "walk": walk, "start": start})

    if query.schedule_id is not None:
        found, after = _one_schedule(store, query.schedule_id, query, limit, state["start"], budget)
        return Page(_runs(found), None if after is None else token_at(None, after))

    items: list[dict[str, Any]] = []
    walk: dict[str, Any] | None = state["walk"]
    start: dict[str, Any] | None = state["start"]
    # A token with a start key goes on inside the schedule ``walk`` names.
    queue: list[dict[str, Any]] = [walk] if start is not None and walk is not None else []
    while len(items) < limit:
        if budget.spent:
            return Page(_runs(items), token_at(walk, None))
        if not queue:
            queue = _schedules_after(store, walk, MAX_SCHEDULES)
            if not queue:
                return Page(_runs(items), None)
        current = queue.pop(0)
        walk = {name: current[name] for name in _WALK_KEY}
        schedule_id = str(it.value(current["pk"])).removeprefix(_SCHEDULE_PREFIX)
        budget.schedules += 1
        found, start = _one_schedule(store, schedule_id, query, limit - len(items), start, budget)
        items.extend(found)
        if start is not None:
            # More in this schedule: the next page goes on inside it.
            return Page(_runs(items), token_at(walk, start))
    # The page is full and its last schedule had no more: go on after it.
    return Page(_runs(items), token_at(walk, None))


def _runs(items: list[dict[str, Any]]) -> tuple[Run, ...]:
    return tuple(it.run_from_item(item) for item in items)
