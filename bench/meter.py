"""Requests and capacity units, metered from botocore's events (``Meter``).

DynamoDB's item sizes by its published rules, the write and read units they imply,
and the product code each request comes from (``call_site``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any, Final

from adapters.definitions import TableDefinition
from adapters.dynamodb.items import PAGE_PREFIX

KB: Final = 1024
READ_UNIT_BYTES: Final = 4 * KB


# --- item sizes and units ---------------------------------------------------------------------


def _number_size(text: str) -> int:
    digits = len(text.lstrip("-").replace(".", "").lstrip("0")) or 1
    return math.ceil(digits / 2) + 1


def value_size(value: Mapping[str, Any]) -> int:
    """DynamoDB's size of one attribute value, in bytes (its published rules)."""
    [(kind, inner)] = value.items()
    if kind == "S":
        return len(str(inner).encode("utf-8"))
    if kind == "N":
        return _number_size(str(inner))
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: v}) for v in inner)
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item: Mapping[str, Any] | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / KB))


# --- where a request comes from ----------------------------------------------------------------

_ROOT: Final = str(Path(__file__).resolve().parent.parent) + os.sep
# The store's generic request helpers: a call site names the method that called them.
_HELPERS: Final = frozenset(
    {
        "_query",
        "_query_page",
        "_batch_get",
        "_update",
        "_update_op",
        "conditional",
        "_put_new",
        "_transact",
        "_each",
        "one",
        "many",
        "_one",
    }
)


def call_site() -> str:
    """The product code that made the request in flight: the innermost store
    method (not a generic request helper) and the innermost service or handler
    function above it, as ``service.fn > adapter.fn``."""
    frame: FrameType | None = sys._getframe(1)
    adapter: str | None = None
    caller: str | None = None
    while frame is not None:
        path = frame.f_code.co_filename
        name = frame.f_code.co_name
        if path.startswith(_ROOT) and not name.startswith("<"):
            where = path[len(_ROOT) :]
            module = Path(where).stem
            if where.startswith("adapters" + os.sep):
                if adapter is None and name not in _HELPERS:
                    adapter = f"{module}.{name}"
            elif where.startswith(("service" + os.sep, "handlers" + os.sep)):
                caller = f"{module}.{name}"
                break
        frame = frame.f_back
    return " > ".join(part for part in (caller, adapter) if part) or "?"


class Meter:
    """Counts requests and capacity units, by phase, service and operation."""

    def __init__(self, shadow: Any, definitions: Mapping[str, TableDefinition]) -> None:
        self.shadow = shadow  # an uncounted client on the same backend
        self.definitions = definitions
        self.phase = "setup"
        self.requests: Counter[tuple[str, str, str]] = Counter()
        self.units: defaultdict[tuple[str, str], float] = defaultdict(float)
        # Write units by (phase, table or "table.index", what was written).
        self.writes: defaultdict[tuple[str, str], float] = defaultdict(float)
        # The same write units by (phase, where): a table's name, or "<table>/index/<name>".
        self.write_units: defaultdict[tuple[str, str], float] = defaultdict(float)
        self.largest_item = 0
        # Per (phase, request): requests, read units and write units, where a
        # request is "<operation> <table[/index/name]> [strong|eventual] @ <call site>".
        self.by_request: defaultdict[tuple[str, str], list[float]] = defaultdict(
            lambda: [0.0, 0.0, 0.0]
        )
        # Per thread (the worker runs a batch's records at once): the request in
        # flight's consistency, and the items a DynamoDB write in flight
        # touches, as they were before it.
        self._local = threading.local()
        self._lock = threading.Lock()

    def attach(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-parameter-build.*.*", self._before_call)
        events.register("after-call.*.*", self._after_call)

    # DynamoDB writes: the items each request touches, before it runs.
    def _targets(self, operation: str, params: Mapping[str, Any]) -> list[tuple[str, Any, int]]:
        """(table, key, multiplier) per item written."""
        found: list[tuple[str, Any, int]] = []
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            table = params["TableName"]
            key = params.get("Key") or self._key_of(table, params["Item"])
            found.append((table, key, 1))
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                [(kind, op)] = entry.items()
                if kind == "ConditionCheck":
                    continue
                key = op.get("Key") or self._key_of(op["TableName"], op["Item"])
                found.append((op["TableName"], key, 2))
        elif operation == "BatchWriteItem":
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        found.append((table, self._key_of(table, request["PutRequest"]["Item"]), 1))
                    else:
                        found.append((table, request["DeleteRequest"]["Key"], 1))
        return found

    def _key_of(self, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        d = self.definitions[table]
        names = [d.partition_key.name] + ([d.sort_key.name] if d.sort_key else [])
        return {n: item[n] for n in names}

    def _get(self, table: str, key: Any) -> dict[str, Any] | None:
        item = self.shadow.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return None if item is None else dict(item)

    def _before_call(self, model: Any, params: Mapping[str, Any], **kwargs: Any) -> None:
        if model.service_model.service_name != "dynamodb":
            return
        self._local.consistent = bool(params.get("ConsistentRead", False))
        self._local.site = call_site()
        self._local.params = params
        # BatchGetItem asks for consistency per table.
        self._local.batch_consistent = {
            table: bool(spec.get("ConsistentRead", False))
            for table, spec in params.get("RequestItems", {}).items()
            if isinstance(spec, Mapping)
        }
        self._local.pending = [
            (table, key, mult, self._get(table, key))
            for table, key, mult in self._targets(model.name, params)
        ]

    def _after_call(self, model: Any, parsed: Mapping[str, Any], **kwargs: Any) -> None:
        with self._lock:
            self._counted(model, parsed)

    def _counted(self, model: Any, parsed: Mapping[str, Any]) -> None:
        service = model.service_model.service_name
        operation = model.name
        self.requests[(self.phase, service, operation)] += 1
        failed = "Error" in parsed and bool(parsed["Error"].get("Code"))
        if service == "sqs":
            self.units[(self.phase, "sqs")] += 1  # every payload here is far below 64 KB
            self.by_request[(self.phase, f"sqs {operation}")][0] += 1
            return
        if service != "dynamodb":
            return
        pending, self._local.pending = getattr(self._local, "pending", []), []
        label = self._label(operation, getattr(self._local, "params", {}), bool(pending))
        self._local.label = label
        self.by_request[(self.phase, label)][0] += 1
        if pending:
            for table, key, mult, old in pending:
                self._count_write(table, key, old, mult, failed)
            return
        self._count_read(operation, parsed)

    def _table(self, name: str) -> str:
        definition = self.definitions.get(name)
        return definition.logical_id if definition is not None else name

    def _label(self, operation: str, params: Mapping[str, Any], writes: bool) -> str:
        """``<operation> <tables> [strong|eventual] @ <call site>``."""
        if "TableName" in params:
            names = [params["TableName"]]
        elif operation == "TransactWriteItems":
            names = [next(iter(op.values()))["TableName"] for op in params["TransactItems"]]
        else:
            names = list(params.get("RequestItems", {}))
        where = "+".join(sorted({self._table(n) for n in names}))
        if params.get("IndexName"):
            where += f"/index/{params['IndexName']}"
        if not writes:
            if operation == "BatchGetItem":
                consistent = any(getattr(self._local, "batch_consistent", {}).values())
            else:
                consistent = getattr(self._local, "consistent", False)
            where += " strong" if consistent else " eventual"
        return f"{operation} {where} @ {getattr(self._local, 'site', '?')}"

    def _count_write(
        self, table: str, key: Any, old: dict[str, Any] | None, mult: int, failed: bool
    ) -> None:
        new = old if failed else self._get(table, key)
        size = max(item_size(old), item_size(new))
        self.largest_item = max(self.largest_item, size)
        definition = self.definitions[table]
        self.units[(self.phase, "wru")] += write_units(size) * mult
        request = getattr(self._local, "label", "?")
        self.by_request[(self.phase, request)][2] += write_units(size) * mult
        self.writes[(self.phase, definition.logical_id)] += write_units(size) * mult
        if str(key.get("pk", {}).get("S", "")).startswith(PAGE_PREFIX):
            self.writes[(self.phase, f"{definition.logical_id}.pages")] += write_units(size) * mult
        self.write_units[(self.phase, table)] += write_units(size) * mult
        if failed or old == new:
            return
        indexes = [(i, i.partition_key, i.sort_key) for i in definition.global_indexes] + [
            (i, definition.partition_key, i.sort_key) for i in definition.local_indexes
        ]
        for index, pk, sk in indexes:
            names = [pk.name] + ([sk.name] if sk else [])

            def keys(item: dict[str, Any] | None, names: list[str] = names) -> Any:
                if item is None or not all(n in item for n in names):
                    return None
                return [json.dumps(item[n], sort_keys=True) for n in names]

            before, after = keys(old), keys(new)
            projected = size if index.projection == "ALL" else 100
            if before is None and after is None:
                continue
            if before is None or after is None:
                writes = 1
            elif before != after:
                writes = 2
            else:
                writes = 1 if index.projection == "ALL" else 0
            self.units[(self.phase, "wru")] += writes * write_units(projected)
            if writes:
                self.by_request[(self.phase, f"{request} -> index {index.name}")][2] += (
                    writes * write_units(projected)
                )
                label = f"{definition.logical_id}.{index.name}"
                self.writes[(self.phase, label)] += writes * write_units(projected)
                where = f"{table}/index/{index.name}"
                self.write_units[(self.phase, where)] += writes * write_units(projected)

    def _count_read(self, operation: str, parsed: Mapping[str, Any]) -> None:
        # A strongly consistent read costs a unit per 4 KB, an eventually
        # consistent one half that.
        factor = 1.0 if getattr(self._local, "consistent", False) else 0.5
        units = 0.0
        if operation == "GetItem":
            size = item_size(parsed.get("Item"))
            units = factor * max(1, math.ceil(size / READ_UNIT_BYTES))
        elif operation == "BatchGetItem":
            for table, items in parsed.get("Responses", {}).items():
                consistent = getattr(self._local, "batch_consistent", {})
                per_table = 1.0 if consistent.get(table, True) else 0.5
                for item in items:
                    units += per_table * max(1, math.ceil(item_size(item) / READ_UNIT_BYTES))
        elif operation in ("Query", "Scan"):
            size = sum(item_size(item) for item in parsed.get("Items", []))
            units = factor * max(1, math.ceil(size / READ_UNIT_BYTES))
        self.units[(self.phase, "rru")] += units
        self.by_request[(self.phase, getattr(self._local, "label", "?"))][1] += units
