"""AWS's limits and conflicts that moto does not enforce, answered as AWS answers them.

- **Transaction conflicts.** DynamoDB cancels a ``TransactWriteItems`` with
  ``TransactionConflict`` when another request changes one of its items
  while it runs, and refuses a plain write (``PutItem``, ``UpdateItem``,
  ``DeleteItem``) to an item a transaction is changing with
  ``TransactionConflictException``. moto runs requests one at a time, so
  nothing overlaps: here a write to an item overlaps the last write to it
  when that one was made less than ``CONFLICT_WINDOW_S`` before (a
  transaction's own duration, an assumption) by another invocation that is
  still running (``running``: two API calls one after the other do not
  overlap, whatever their instants), and is refused when either is a
  transaction.
- **Per-partition throttling.** A partition key value takes at most 1,000
  write units a second, whatever the table's capacity mode; a write past it
  is answered ``ProvisionedThroughputExceededException`` (botocore retries it
  with back-off, in simulated time). Units: one per started KB of the item
  written, twice in a transaction; counted per table and key value, per
  second. GSIs' own partitions are not modelled.
- **TTL deletion lag.** DynamoDB deletes an expired item in the background,
  typically within a few days, not at its expiry: an item stays readable
  (and in its indexes) until then. Here each item is deleted ``TTL_LAG_S``
  after its expiry, drawn per item between 1 and 48 hours (an assumption).
- **SQS.** A message (or a whole ``SendMessageBatch``) over 256 KiB is
  refused; a standard queue with 120,000 messages in flight answers
  ``OverLimit`` to receives until some are deleted or visible again.
- **API Gateway.** An integration that has not answered within 29 s is
  answered 504 to the caller (the function runs on to its own timeout).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from sim.adversity import Adversities
    from sim.aws import Account, Actor

CONFLICT_WINDOW_S = 0.025
PARTITION_WCU_PER_S = 1000
TTL_LAG_HOURS = (1.0, 48.0)
SQS_MAX_MESSAGE_BYTES = 262_144
SQS_IN_FLIGHT_CAP = 120_000
API_GATEWAY_TIMEOUT_S = 29.0
_WRITES = ("PutItem", "UpdateItem", "DeleteItem")


def _error(code: str, message: str, operation: str, **extra: Any) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 400}}
        | extra,
        operation,
    )


def _entries(operation: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """(table, key or item, is the item whole) of each item a write names."""
    if operation in _WRITES:
        if operation == "PutItem":
            return [(params.get("TableName", ""), params.get("Item") or {}, True)]
        return [(params.get("TableName", ""), params.get("Key") or {}, False)]
    if operation == "TransactWriteItems":
        found = []
        for entry in params.get("TransactItems") or []:
            for kind, op in entry.items():
                if kind == "Put":
                    found.append((op.get("TableName", ""), op.get("Item") or {}, True))
                else:
                    found.append((op.get("TableName", ""), op.get("Key") or {}, False))
        return found
    if operation == "BatchWriteItem":
        found = []
        for table, requests in (params.get("RequestItems") or {}).items():
            for request in requests:
                if "PutRequest" in request:
                    found.append((table, request["PutRequest"].get("Item") or {}, True))
                elif "DeleteRequest" in request:
                    found.append((table, request["DeleteRequest"].get("Key") or {}, False))
        return found
    return []


@dataclass
class Limits:
    account: Account
    conflicts: bool = True
    throttling: bool = True
    ttl_lag: bool = True
    sqs: bool = True
    api_timeout: bool = True
    in_flight_cap: int = SQS_IN_FLIGHT_CAP
    # Whether an invocation (by id) is still running: set by the simulation.
    running: Any = field(default=lambda invocation: True)
    # (table, key) -> (when, invocation, by a transaction) of the last write let through
    last_write: dict[tuple[str, str], tuple[float, int, bool]] = field(default_factory=dict)
    # (table, partition key value) -> (second, units written in it)
    partition_units: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)
    counts: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))

    def faults(self) -> list[Any]:
        found: list[Any] = []
        if self.conflicts:
            found.append(self.conflict)
        if self.throttling:
            found.append(self.throttle)
        if self.sqs:
            found.append(self.message_size)
        return found

    def _key(self, table: str, item: dict[str, Any]) -> tuple[str, str, str]:
        """(item key, partition key value) as text; '' when the table is unknown."""
        definition = self.account.tables.get(table)
        if definition is None:
            return "", "", ""
        names = [definition.partition_key.name]
        if definition.sort_key is not None:
            names.append(definition.sort_key.name)
        key = json.dumps([item.get(n) for n in names], sort_keys=True)
        return key, json.dumps(item.get(names[0]), sort_keys=True), names[0]

    # --- DynamoDB ------------------------------------------------------------------------------

    def conflict(
        self, actor: Actor, service: str, operation: str, params: dict[str, Any]
    ) -> ClientError | None:
        if service != "dynamodb" or operation not in (*_WRITES, "TransactWriteItems"):
            return None
        now = self.account.engine.now
        me = self.account._invocation()
        transaction = operation == "TransactWriteItems"
        keys = [(t, self._key(t, item)[0]) for t, item, _ in _entries(operation, params)]
        reasons = []
        clash = False
        for table, key in keys:
            last = self.last_write.get((table, key))
            overlaps = (
                last is not None
                and now - last[0] <= CONFLICT_WINDOW_S
                and last[1] != me
                and (transaction or last[2])
                and self.running(last[1])
            )
            clash = clash or overlaps
            reasons.append({"Code": "TransactionConflict" if overlaps else "None"})
        if clash:
            self.counts["transaction_conflicts"] += 1
            if transaction:
                return _error(
                    "TransactionCanceledException",
                    "Transaction cancelled, please refer cancellation reasons for specific "
                    f"reasons [{', '.join(r['Code'] for r in reasons)}]",
                    operation,
                    CancellationReasons=reasons,
                )
            return _error(
                "TransactionConflictException",
                "Transaction is ongoing for the item",
                operation,
            )
        for table, key in keys:
            self.last_write[(table, key)] = (now, me, transaction)
        return None

    def throttle(
        self, actor: Actor, service: str, operation: str, params: dict[str, Any]
    ) -> ClientError | None:
        if service != "dynamodb":
            return None
        entries = _entries(operation, params)
        if not entries:
            return None
        second = int(self.account.engine.now)
        factor = 2.0 if operation == "TransactWriteItems" else 1.0
        wanted: dict[tuple[str, str], float] = defaultdict(float)
        for table, item, whole in entries:
            _, partition, _ = self._key(table, item)
            size = len(json.dumps(item)) if whole else 1
            wanted[(table, partition)] += factor * max(1, math.ceil(size / 1024))
        for where, units in wanted.items():
            at, used = self.partition_units.get(where, (second, 0.0))
            used = used if at == second else 0.0
            if used + units > PARTITION_WCU_PER_S:
                self.counts["partition_throttles"] += 1
                return _error(
                    "ProvisionedThroughputExceededException",
                    "The level of configured provisioned throughput for the table was "
                    "exceeded. Consider increasing your provisioning level with the "
                    "UpdateTable API.",
                    operation,
                )
        for where, units in wanted.items():
            at, used = self.partition_units.get(where, (second, 0.0))
            self.partition_units[where] = (second, (used if at == second else 0.0) + units)
        return None

    # --- SQS -----------------------------------------------------------------------------------

    def message_size(
        self, actor: Actor, service: str, operation: str, params: dict[str, Any]
    ) -> ClientError | None:
        if service != "sqs" or operation not in ("SendMessage", "SendMessageBatch"):
            return None

        def size(entry: dict[str, Any]) -> int:
            attributes = json.dumps(entry.get("MessageAttributes") or {})
            return len(str(entry.get("MessageBody", "")).encode()) + (
                len(attributes.encode()) if entry.get("MessageAttributes") else 0
            )

        if operation == "SendMessage":
            if size(params) > SQS_MAX_MESSAGE_BYTES:
                self.counts["sqs_too_large"] += 1
                return _error(
                    "InvalidParameterValue",
                    "One or more parameters are invalid. Reason: Message must be shorter "
                    f"than {SQS_MAX_MESSAGE_BYTES} bytes.",
                    operation,
                )
            return None
        total = sum(size(e) for e in params.get("Entries") or [])
        if total > SQS_MAX_MESSAGE_BYTES:
            self.counts["sqs_too_large"] += 1
            return _error(
                "AWS.SimpleQueueService.BatchRequestTooLong",
                f"Batch requests cannot be longer than {SQS_MAX_MESSAGE_BYTES} bytes. "
                f"You have sent {total} bytes.",
                operation,
            )
        return None

    def over_in_flight_cap(self, in_flight: int) -> bool:
        """A receive from a standard queue with this many messages in flight is refused."""
        if self.sqs and in_flight >= self.in_flight_cap:
            self.counts["sqs_over_limit"] += 1
            return True
        return False

    # --- TTL, API Gateway ----------------------------------------------------------------------

    def ttl_due(self, table: str, key: str, expires_at: float, now: float) -> bool:
        """Whether DynamoDB's background sweep has deleted an item expiring at
        ``expires_at`` by ``now``: at expiry without the lag; else 1-48 h after it, drawn
        per item (a hash of its key, so every sweep agrees)."""
        if not self.ttl_lag:
            return expires_at < now
        digest = hashlib.sha256(f"{table}/{key}".encode()).digest()
        share = int.from_bytes(digest[:4], "big") / 2**32
        low, high = TTL_LAG_HOURS
        return expires_at + 3600 * (low + (high - low) * share) < now

    def api_gateway_timed_out(self, duration_s: float) -> bool:
        if self.api_timeout and duration_s > API_GATEWAY_TIMEOUT_S:
            self.counts["api_gateway_timeouts"] += 1
            return True
        return False


def limits_for(adversities: Adversities, account: Account) -> Limits:
    return Limits(
        account,
        conflicts=adversities.transaction_conflicts,
        throttling=adversities.partition_throttling,
        ttl_lag=adversities.ttl_lag,
        sqs=adversities.sqs_limits,
        api_timeout=adversities.api_timeout,
    )
