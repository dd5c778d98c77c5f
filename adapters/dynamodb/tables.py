"""The DynamoDB adapter's shared table handle: a client, the three tables'
names, and the requests every port's module makes (a conditional update, a
transaction, a query page by page, a batch read).

``DynamoTables`` holds the client and the names and nothing else that changes
(``concurrency`` is a setting; the thread pool it allows is made on first
use): the ports (run records, leases, schedules) inherit it, so each can be
built on its own from a client and table names, and the store that serves them
all is one object over one client.

Page tokens are base64 JSON of the next query's ExclusiveStartKey.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from botocore.config import Config
from botocore.exceptions import ClientError

from adapters.dynamodb import items as it
from adapters.dynamodb.conflicts import CONFLICT_ATTEMPTS, conflict_delay_s

_TRANSIENT_CANCELLATIONS: Final = frozenset({"TransactionConflict", "ThrottlingError"})
# Requests one store object has in flight at once in a deployment (each
# admission, closure and mark-sent is its own conditional write).
CONCURRENCY: Final = 8

_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclass(frozen=True)
class TableNames:
    schedules: str
    occurrences: str
    leases: str


class TableSettings(Protocol):
    """What ``from_settings`` reads (``bootstrap.settings.Settings`` has these fields)."""

    @property
    def schedules_table(self) -> str: ...

    @property
    def occurrences_table(self) -> str: ...

    @property
    def leases_table(self) -> str: ...


def client_config() -> Config:
    """Bounded calls, botocore's standard retries (throttling, 5xx)."""
    return Config(
        retries={"mode": "standard", "max_attempts": 5},
        connect_timeout=3,
        read_timeout=10,
        max_pool_connections=CONCURRENCY * 2,
    )


def _token(key: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, sort_keys=True).encode()).decode()


def _untoken(token: str) -> dict[str, Any]:
    try:
        key = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError):
        raise ValueError("not a page token from this store") from None
    if not isinstance(key, dict):
        raise ValueError("not a page token from this store")
    return key


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _failed_condition(error: ClientError) -> bool:
    return _code(error) == "ConditionalCheckFailedException"


def conditional(call: Callable[..., dict[str, Any]], **params: Any) -> dict[str, Any] | None:
    """One conditional write (``call``: the client's put, update or delete):
    its answer, or None when its condition failed."""
    try:
        return call(**params)
    except ClientError as error:
        if _failed_condition(error):
            return None
        raise


def _expression(
    set_: Mapping[str, Any] | None = None,
    remove: Iterable[str] = (),
    increment: Iterable[str] = (),
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """An UpdateExpression that sets, increments (from 0) and removes
    attributes, every name aliased. A value that is None is removed instead of set.
    """
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    sets: list[str] = []
    removes: list[str] = []
    for name, v in (set_ or {}).items():
        names[f"#{name}"] = name
        if v is None:
            removes.append(f"#{name}")
        else:
            values[f":set_{name}"] = it.attr(v)
            sets.append(f"#{name} = :set_{name}")
    for name in increment:
        names[f"#{name}"] = name
        values[":zero"], values[":one"] = {"N": "0"}, {"N": "1"}
        sets.append(f"#{name} = if_not_exists(#{name}, :zero) + :one")
    for name in remove:
        names[f"#{name}"] = name
        removes.append(f"#{name}")
    parts = []
    if sets:
        parts.append("SET " + ", ".join(sets))
    if removes:
        parts.append("REMOVE " + ", ".join(removes))
    return " ".join(parts), names, values


def _update_params(
    table: str,
    key: Mapping[str, Any],
    set_: Mapping[str, Any] | None,
    remove: Iterable[str],
    increment: Iterable[str],
    condition: str,
    names: Mapping[str, str] | None,
    values: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The parameters of one conditional UpdateItem (alone or in a transaction)."""
    update, all_names, all_values = _expression(set_, remove, increment)
    all_names.update(names or {})
    all_values.update(values or {})
    params: dict[str, Any] = {
        "TableName": table,
        "Key": dict(key),
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ExpressionAttributeNames": all_names,
    }
    if all_values:
        params["ExpressionAttributeValues"] = all_values
    return params


class DynamoTables:
    """A DynamoDB client (low-level API) and the names of the tables it serves."""

    def __init__(self, client: Any, tables: TableNames, *, concurrency: int = 1) -> None:
        """``concurrency``: independent requests (conditional writes, index
        queries) in flight at once. Keep 1 on in-process moto, whose backends
        are not safe under concurrent requests."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.client = client
        self.tables = tables
        self.concurrency = concurrency
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    def _each(self, fn: Callable[[_T], _R], values: Sequence[_T]) -> list[_R]:
        """``fn`` over ``values``, in order; several at once when allowed."""
        if self.concurrency == 1 or len(values) <= 1:
            return [fn(v) for v in values]
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self.concurrency, thread_name_prefix="duetime-dynamodb"
                )
        return list(self._executor.map(fn, values))

    def _update(
        self,
        table: str,
        key: Mapping[str, Any],
        *,
        set_: Mapping[str, Any] | None = None,
        remove: Iterable[str] = (),
        increment: Iterable[str] = (),
        condition: str,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        return_new: bool = False,
    ) -> dict[str, Any] | None:
        """One conditional update; the new item (or {}), or None when the condition failed."""
        params = _update_params(table, key, set_, remove, increment, condition, names, values)
        if return_new:
            params["ReturnValues"] = "ALL_NEW"
        answer = conditional(self.client.update_item, **params)
        return None if answer is None else dict(answer.get("Attributes") or {})

    def _update_op(
        self,
        table: str,
        key: Mapping[str, Any],
        *,
        set_: Mapping[str, Any] | None = None,
        remove: Iterable[str] = (),
        condition: str,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The same update as one TransactWriteItems entry."""
        return {"Update": _update_params(table, key, set_, remove, (), condition, names, values)}

    @staticmethod
    def _put_new(table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": table,
                "Item": dict(item),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def _transact(self, operations: list[dict[str, Any]]) -> list[str] | None:
        """Run a transaction. None if it committed, else the per-operation
        cancellation codes ("None", "ConditionalCheckFailed", ...).

        Transient cancellations (another transaction on the same items) are
        retried with a short full-jitter backoff (adapters/dynamodb/conflicts.py).
        No request token: a token would make an
        identical later call (a real duplicate) look like a success.
        """
        for attempt in range(CONFLICT_ATTEMPTS):
            try:
                self.client.transact_write_items(TransactItems=operations)
                return None
            except ClientError as error:
                if _code(error) != "TransactionCanceledException":
                    raise
                cancellations = error.response.get("CancellationReasons", [])
                reasons = [str(r.get("Code") or "None") for r in cancellations]
                if "ConditionalCheckFailed" in reasons or not reasons:
                    return reasons or ["Unknown"] * len(operations)
                if not set(reasons) & _TRANSIENT_CANCELLATIONS or attempt + 1 == CONFLICT_ATTEMPTS:
                    raise
                time.sleep(conflict_delay_s(attempt + 1))
        raise AssertionError("unreachable")

    def _query(self, params: Mapping[str, Any], *, scan: bool = False) -> Iterator[dict[str, Any]]:
        """Every item a query (or, with ``scan``, a scan) finds, page after page."""
        request = dict(params)
        while True:
            answer = (self.client.scan if scan else self.client.query)(**request)
            yield from answer.get("Items", [])
            last = answer.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last

    def _query_page(
        self, params: Mapping[str, Any], limit: int, token: str | None, key_names: tuple[str, ...]
    ) -> tuple[list[dict[str, Any]], str | None]:
        """At most ``limit`` items, and a token when more follow.

        One more item than asked for is read, so a token is only handed out
        when there is a next page; it is the start key after the last item
        returned.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        request = {**params, "Limit": limit + 1}
        if token:
            request["ExclusiveStartKey"] = _untoken(token)
        found: list[dict[str, Any]] = []
        for item in self._query(request):
            found.append(item)
            if len(found) > limit:
                break
        if len(found) <= limit:
            return found, None
        last = found[limit - 1]
        return found[:limit], _token({name: last[name] for name in key_names})

    def _batch_get(
        self, table: str, keys: list[dict[str, Any]], *, consistent: bool = True
    ) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {
                table: {"Keys": keys[start : start + 100], "ConsistentRead": consistent}
            }
            delay = 0.01
            while request:
                answer = self.client.batch_get_item(RequestItems=request)
                found.extend(answer.get("Responses", {}).get(table, []))
                request = answer.get("UnprocessedKeys") or {}
                if request:
                    time.sleep(delay)
                    delay = min(delay * 2, 1.0)
        return found
