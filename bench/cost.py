"""What duetime costs on AWS per million runs, from counted requests.

N schedules (every minute) each run a few slots end to end on moto in-process,
through the same code the Lambda functions run: the tick (``run_tick``: plan,
admit, send over ``DynamoStore`` + ``SqsDeliveryQueue``), then the worker
handler (``handlers.worker.handler`` over ``DynamoRunStore`` + ``SqsWorkQueue``)
fed by a stand-in for Lambda's SQS event source mapping (receive up to 10,
invoke, delete the successes in one batch), with a target that succeeds at
once. botocore's event system counts every AWS request by service and
operation, and for each DynamoDB write looks at the item before and after
(through a second, uncounted client) to count the write units it implies:

- table writes: the larger of the item before and after, in 1 KB units
  (a TransactWriteItems item counts double); a refused conditional write
  still costs the item it was checked against;
- index writes: per index, a record entering or leaving it is one write, a
  key change two (delete + put), and any change to a record inside an
  ``ALL``-projection index one more write, each in 1 KB units of the item;
- reads: GetItem and BatchGetItem by item size, Query by the size of the
  items it returned (filtered-out items are not seen here, so a filtered
  query is under-counted), in 4 KB units, halved when eventually consistent.

The worker's duration is modelled per invocation: its records run at once,
so a batch lasts its longest record's AWS calls (``AWS_CALL_MS`` each) and
target call (``TARGET_MS``), plus the batch's CPU time at the function's
share of a vCPU. That CPU time, the function's memory and its output are
measured by running the worker function in a process of its own
(``bench/worker_probe.py``) against a moto server and a webhook receiver
answering in ``TARGET_MS``, both on 127.0.0.1 in this process. The report
gives $ per million runs by service, for runs in batches as measured and for
runs that come due alone (batches of one), against the floor: the fewest
writes that record every state a run must record (admitted, started,
finished) and the least of everything else a queued, batched delivery needs.

Then an idle tick invocation (one pass with nothing due, as deployed) and an
idle watchdog invocation give the fixed cost of a deployment, which does not
depend on how many runs there are; each one's duration is modelled as its
AWS requests times ``AWS_CALL_MS`` plus ``TICK_PASS_MS`` of Python. The
custom metrics an idle deployment is billed for are the ones those two
invocations print (EMF); CloudWatch bills a metric for the hours it
receives data.

The tick queues intents ahead of their time (DelaySeconds); moto's SQS delays
run on the wall clock, not on this script's clock, so the run phase holds
each intent in the script until its due second, then sends it (without the
delay) and runs the worker on a clock set to that second: every slot runs at
its own time, as the queue would release it (``_Held``). Each steady-state
row also prints its requests and units a run by request and call site.

    .venv/bin/python bench/cost.py                      # 100 schedules x 3 slots
    .venv/bin/python bench/cost.py --schedules 50 --slots 2
    .venv/bin/python bench/cost.py --every 60 --every 300 --every 3600

``--every SECONDS`` (repeatable) adds the steady state per cadence: schedules
of that cadence, after a warm-up that hands every one to its chain, over many
passes, DynamoDB write and read units a run, with the schedules due together
and spread; $ a million runs all in adds the main run's SQS, Lambda and logs a
run to each cadence's DynamoDB.

Prices are list prices (us-east-1, on demand, no free tier) as read on the
date in ``PRICES_READ_ON``; prices change, so check the pricing pages.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import io
import json
import logging
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

for _name, _value in {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_SERVICE_NAME": "duetime",
    "POWERTOOLS_METRICS_NAMESPACE": "duetime",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}.items():
    os.environ[_name] = _value
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from adapters.definitions import (  # noqa: E402
    OCCURRENCES,
    SCHEDULES,
    TABLES,
    WEBHOOK_SECRETS,
    Metric,
    TableDefinition,
    create_queues,
    create_table,
)
from adapters.dynamodb.items import PAGE_PREFIX  # noqa: E402
from adapters.dynamodb.local import create_store_tables  # noqa: E402
from adapters.dynamodb.runs import DynamoRunStore  # noqa: E402
from adapters.dynamodb.store import DynamoStore  # noqa: E402
from adapters.secrets import SECRET_CACHE_TTL_S  # noqa: E402
from adapters.sqs import SqsDeliveryQueue  # noqa: E402
from adapters.sqs_worker import SqsWorkQueue  # noqa: E402
from adapters.targets.addresses import AddressPolicy  # noqa: E402
from adapters.telemetry import PowertoolsTelemetry  # noqa: E402
from bootstrap.parts import Ticker, tick_config  # noqa: E402
from bootstrap.settings import Settings  # noqa: E402
from domain.delivery import Delivery, Outcome  # noqa: E402
from domain.partition import Partitioning  # noqa: E402
from domain.run import DeliveryIntent  # noqa: E402
from domain.targets import Target  # noqa: E402
from handlers import watchdog as watchdog_handler  # noqa: E402
from handlers import worker as worker_handler  # noqa: E402
from handlers.api_models import definition_of as definition  # noqa: E402
from handlers.tick_pass import run_tick  # noqa: E402
from service.runs import RunWorker  # noqa: E402
from service.schedules import ScheduleService  # noqa: E402
from service.watchdog import Watchdog  # noqa: E402

# --- prices ----------------------------------------------------------------------------------
# us-east-1 list prices, on demand, without free tiers. Read from the AWS pricing
# pages on PRICES_READ_ON. Prices change: check before relying on them.
PRICES_READ_ON: Final = "2026-11-29"
DYNAMODB_PER_MILLION_WRU: Final = 0.625  # on-demand write request units
DYNAMODB_PER_MILLION_RRU: Final = 0.125  # on-demand read request units
SQS_PER_MILLION_REQUESTS: Final = 0.40  # standard queue, each 64 KB chunk of a request
LAMBDA_PER_MILLION_REQUESTS: Final = 0.20
LAMBDA_ARM64_PER_GB_SECOND: Final = 0.0000133334
SCHEDULER_PER_MILLION_INVOCATIONS: Final = 1.00  # EventBridge Scheduler
LOGS_INGESTION_PER_GB: Final = 0.50  # CloudWatch Logs, standard class
ALARM_PER_MONTH: Final = 0.10  # standard-resolution metric alarm
DASHBOARD_PER_MONTH: Final = 3.00  # beyond the 3 free dashboards per account
CUSTOM_METRIC_PER_MONTH: Final = 0.30  # first 10,000 metrics
SECRETS_MANAGER_PER_10K_CALLS: Final = 0.05
# SSM Parameter Store: standard parameters have no fee and their API calls at
# standard throughput none; SSM decrypts (and encrypts) a SecureString with a
# KMS request, $0.03 per 10,000 past the 20,000 free a month (aws/ssm, an AWS
# managed key, has no monthly fee). Higher throughput, once turned on for the
# account and region, is $0.05 per 10,000 interactions.
KMS_PER_10K_REQUESTS: Final = 0.03
KMS_KEY_PER_MONTH: Final = 1.00  # a customer managed key (the AWS managed ones: no fee)
SSM_HIGHER_THROUGHPUT_PER_10K: Final = 0.05
SSM_ADVANCED_PARAMETER_PER_MONTH: Final = 0.05

# --- assumptions ---------------------------------------------------------------------------
MONTH_S: Final = 30 * 24 * 3600
AWS_CALL_MS: Final = 8.0  # one in-region DynamoDB/SQS round trip from Lambda
TARGET_MS: Final = 200.0  # one webhook call (the worker waits for the answer)
TICK_PASS_MS: Final = 50.0  # an idle pass's own Python, besides its AWS requests
LAMBDA_PLATFORM_LOG_BYTES: Final = 350  # START, END and REPORT lines per invocation
ESM_IDLE_POLLERS: Final = 5  # Lambda's SQS event source mapping: concurrent long polls
ESM_LONG_POLL_S: Final = 20
ALARMS_IN_STACK: Final = 10  # the synthesized stack (cdk.out) has 10 CloudWatch alarms
KB: Final = 1024
# Lambda gives a function one vCPU at 1,769 MB and CPU in proportion below it.
LAMBDA_MB_PER_VCPU: Final = 1769
MIN_LAMBDA_MB: Final = 128
MEMORY_SIZES_MB: Final = (128, 256, 384, 512, 768, 1024)
# A size fits when the worker's measured peak resident memory is at most this
# share of it (the rest: the runtime's own process, larger payloads, growth).
MEMORY_HEADROOM: Final = 0.8
# A size is not CPU-bound when a warm full batch's CPU time at its vCPU share
# takes at most this share of the longest record's wait: the rest is margin
# for run-to-run noise (about 6% here) and for Lambda's arm64 CPU, not measured.
CPU_MARGIN: Final = 0.8
MAX_BATCH: Final = 10  # SQS gives at most 10 messages a receive
FLOOR_WRU: Final = 3  # admitted, started, finished: one write each
# Webhook signing secrets with duetime:secretStore secretsmanager: a secret per webhook schedule.
SECRETS_MANAGER_SECRET_PER_MONTH: Final = 0.40
# The stack's webhook signing key (infra/secrets.py): one Secrets Manager secret, from
# which each schedule's secret is derived, whatever the number of schedules.
SIGNING_KEY_SECRETS: Final = 1
# The idle budgets: compute, DynamoDB and SQS at most $1.00 a month; with the secrets'
# key (or store) at most $1.50.
IDLE_CORE_LIMIT: Final = 1.00
IDLE_WITH_KEY_LIMIT: Final = 1.50
SECRET_CADENCES: Final = {
    "every minute": 60,
    "every 5 minutes": 300,
    "hourly": 3600,
    "daily": 86400,
}
PROBE_SCHEDULES: Final = 40  # webhook schedules the worker probe runs
PROBE_PHASES: Final = 3  # slots of each: the first on a cold worker, the others warm
READ_UNIT_BYTES: Final = 4 * KB

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


class BenchClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


class Succeeds:
    """A target that answers 2xx at once, for every kind of target."""

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        return Outcome.succeeded(200, '{"ok":true}')


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


# --- the run ---------------------------------------------------------------------------------


def infra_numbers() -> dict[str, Any]:
    """Memory sizes and the tick budget, from the CDK stack's own definitions."""
    from infra.functions import (
        WATCHDOG,
        WORKER,
        WORKER_BATCH_SIZE,
        WORKER_BATCH_WINDOW,
        tick_spec,
    )
    from infra.settings import Settings as StackSettings

    settings = StackSettings()
    tick = tick_spec(settings)
    return {
        "worker_mb": WORKER.memory_mb,
        "tick_mb": tick.memory_mb,
        "watchdog_mb": WATCHDOG.memory_mb,
        "worker_batch": WORKER_BATCH_SIZE,
        "worker_batch_window_s": WORKER_BATCH_WINDOW.to_seconds(),
        "tick_budget_s": settings.tick_budget_s,
    }


class _Undelayed(SqsDeliveryQueue):
    """The tick's queue, sending ahead without DelaySeconds: moto holds a
    delayed message back by the wall clock, which this script does not move
    (the requests are the same SendMessageBatch calls)."""

    def send_ahead(
        self, intents: Sequence[DeliveryIntent], now: datetime, early: Collection[datetime] = ()
    ) -> list[str]:
        return self.send_batch(intents)


class _Held(SqsDeliveryQueue):
    """The tick's queue in the steady state: each intent is held here until its
    due second and then sent (``release``), as SQS's DelaySeconds would hold
    it, so the worker runs every slot at its own time. A worker that met a
    schedule's queued slots all at once would find all but the last overdue and record
    them superseded (``latest_only``): one write instead of two, and no call."""

    def __init__(self, client: Any, queue_url: str) -> None:
        super().__init__(client, queue_url)
        self.held: list[DeliveryIntent] = []

    def send_ahead(
        self, intents: Sequence[DeliveryIntent], now: datetime, early: Collection[datetime] = ()
    ) -> list[str]:
        self.held.extend(intents)
        return []

    def release(self, until: datetime) -> list[tuple[datetime, list[DeliveryIntent]]]:
        """The held intents due by ``until``, by due second, earliest first."""
        due = [i for i in self.held if i.scheduled_at <= until]
        due.sort(key=lambda i: i.scheduled_at)
        self.held = [i for i in self.held if i.scheduled_at > until]
        groups: dict[datetime, list[DeliveryIntent]] = {}
        for intent in due:
            groups.setdefault(intent.scheduled_at.replace(microsecond=0), []).append(intent)
        return sorted(groups.items())


def measure(schedules: int, slots: int, batch_size: int = MAX_BATCH) -> dict[str, Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        tables = create_store_tables(dynamodb, "cost")
        urls = create_queues(sqs, "cost")
        definitions = {
            tables.schedules: SCHEDULES,
            tables.occurrences: OCCURRENCES,
            tables.leases: next(t for t in TABLES if t.logical_id == "Leases"),
        }
        meter = Meter(boto3.client("dynamodb", region_name="us-east-1"), definitions)
        meter.attach(dynamodb)
        meter.attach(sqs)

        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
            delivery_queue_url=urls["DUETIME_DELIVERY_QUEUE_URL"],
            delivery_dlq_url=urls["DUETIME_DELIVERY_DLQ_URL"],
        )
        clock = BenchClock(T0)
        # lease_shards as deployed (from_settings): leases are read by key.
        store = DynamoStore(dynamodb, tables, lease_shards=settings.shards)
        service = ScheduleService(
            store, clock, Partitioning(shards=settings.shards, bucket_s=settings.bucket_s)
        )
        held = _Held(sqs, settings.delivery_queue_url)
        ticker = Ticker(store, held, clock, tick_config(settings), owner="bench")
        worker_clock = BenchClock(T0)
        # One idle tick invocation before any schedule exists: the dispatcher's fixed
        # work (index reads, heartbeat), one pass, as deployed; after the
        # deployment's first pass, which sets the plan cursor (uncounted).
        meter.phase = "first"
        with contextlib.redirect_stdout(io.StringIO()):
            run_tick(ticker, 0.0, sleep=lambda s: None)
        meter.phase = "idle"
        tick_logs = io.StringIO()
        with contextlib.redirect_stdout(tick_logs):
            idle = run_tick(ticker, 0.0, sleep=lambda s: None)
        # And one idle watchdog invocation (every 5 minutes, as deployed).
        meter.phase = "watchdog"
        watchdog_logs = io.StringIO()
        with contextlib.redirect_stdout(watchdog_logs):
            watchdog_handler.handler({}, _LambdaContext(), watchdog=Watchdog(store, clock))

        meter.phase = "setup"
        ids = []
        for i in range(schedules):
            schedule, _ = service.create(
                definition(
                    {
                        "name": f"cost {i}",
                        "spec": {"every": "PT1M"},
                        "target": {"type": "webhook", "url": "https://example.com/hook"},
                        "payload": {"report": "daily", "n": i},
                    }
                )
            )
            ids.append(schedule.schedule_id)
        worker = RunWorker(
            # Its own store, as the worker function has (nothing cached from the tick).
            DynamoRunStore(DynamoStore(dynamodb, tables, lease_shards=settings.shards)),
            Succeeds(),
            worker_clock,
            random.Random(0),
            telemetry=PowertoolsTelemetry(),
        )
        queue = SqsWorkQueue(sqs, settings.delivery_queue_url, settings.delivery_dlq_url)

        worker_logs = io.StringIO()
        invocations = 0
        batch_sizes: list[int] = []
        started = time.perf_counter()
        # One tick pass per minute of schedule time, each followed by the worker
        # draining what it sent (the event source mapping's receive and delete
        # are its own phase: Lambda makes those calls, the account pays them).
        for _ in range(slots + 1):
            clock.advance(60)
            meter.phase = "tick"
            with contextlib.redirect_stdout(io.StringIO()):
                run_tick(ticker, 0.0, sleep=lambda s: None)
            # Each second's intents reach the worker at that second, until the next pass.
            for at, intents in held.release(clock.now() + timedelta(seconds=60)):
                meter.phase = "tick"
                held.send_batch(intents)
                worker_clock.at = max(worker_clock.at, at)
                while True:
                    meter.phase = "esm"
                    answer = sqs.receive_message(
                        QueueUrl=settings.delivery_queue_url,
                        MaxNumberOfMessages=batch_size,
                        MessageSystemAttributeNames=["ApproximateReceiveCount"],
                    )
                    messages = answer.get("Messages", [])
                    if not messages:
                        break
                    event = {"Records": [_record(m) for m in messages]}
                    meter.phase = "worker"
                    with contextlib.redirect_stdout(worker_logs):
                        result = worker_handler.handler(event, None, worker=worker, queue=queue)
                    invocations += 1
                    batch_sizes.append(len(messages))
                    failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
                    done = [m for m in messages if m["MessageId"] not in failed]
                    meter.phase = "esm"
                    if done:
                        sqs.delete_message_batch(
                            QueueUrl=settings.delivery_queue_url,
                            Entries=[
                                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                for i, m in enumerate(done)
                            ],
                        )
        elapsed = time.perf_counter() - started
        meter.phase = "setup"
        runs = sum(
            1
            for sid in ids
            for run in store.runs(sid, 100).items
            if run.status.value == "succeeded"
        )

        return {
            "schedules": schedules,
            "slots": slots,
            "runs": runs,
            "requests": meter.requests,
            "units": meter.units,
            "writes": meter.writes,
            "largest_item": meter.largest_item,
            "invocations": invocations,
            "batch_sizes": batch_sizes,
            "worker_log_bytes": len(worker_logs.getvalue().encode()),
            "idle_passes": idle["passes"],
            "idle_log_bytes": len(tick_logs.getvalue().encode()),
            "watchdog_log_bytes": len(watchdog_logs.getvalue().encode()),
            "idle_metrics": sorted(
                emf_metric_names(tick_logs.getvalue()) | emf_metric_names(watchdog_logs.getvalue())
            ),
            "elapsed_s": elapsed,
        }


def _drain(
    sqs: Any, url: str, worker: RunWorker, queue: SqsWorkQueue, meter: Meter, batch_size: int
) -> int:
    """Receive and run what the queue holds, as the event source mapping
    does; the number of records that succeeded."""
    done_count = 0
    while True:
        meter.phase = "esm"
        answer = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=batch_size,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
        )
        messages = answer.get("Messages", [])
        if not messages:
            return done_count
        meter.phase = "worker"
        with contextlib.redirect_stdout(io.StringIO()):
            result = worker_handler.handler(
                {"Records": [_record(m) for m in messages]}, None, worker=worker, queue=queue
            )
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        done = [m for m in messages if m["MessageId"] not in failed]
        done_count += len(done)
        meter.phase = "esm"
        if done:
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )


def steady_state(
    every_s: int, schedules: int, batch_size: int, *, spread: bool = False
) -> dict[str, Any]:
    """DynamoDB units a run at steady state, for schedules every ``every_s``,
    planned as the stack plans (planning early on): a warm-up hands every
    schedule from its HEAD to its chain (a reach and a slot), then passes a minute for
    at least 60 minutes and three slots, each followed by the worker running
    what it queued, each intent at its due second (``_Held``). Tick units
    less as many idle passes, plus the worker's.

    The schedules start together (they come due in the same minutes and so
    share plan pages), or with ``spread`` evenly over the cadence, whole
    minutes apart where the cadence has room: as few to a page as they can be."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        tables = create_store_tables(dynamodb, "steady")
        urls = create_queues(sqs, "steady")
        definitions = {
            tables.schedules: SCHEDULES,
            tables.occurrences: OCCURRENCES,
            tables.leases: next(t for t in TABLES if t.logical_id == "Leases"),
        }
        meter = Meter(boto3.client("dynamodb", region_name="us-east-1"), definitions)
        meter.attach(dynamodb)
        meter.attach(sqs)
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
            delivery_queue_url=urls["DUETIME_DELIVERY_QUEUE_URL"],
            delivery_dlq_url=urls["DUETIME_DELIVERY_DLQ_URL"],
            plan_early=True,  # as the stack deploys it
        )
        config = tick_config(settings)
        clock = BenchClock(T0)
        store = DynamoStore(dynamodb, tables, lease_shards=settings.shards)
        service = ScheduleService(store, clock, config.partitioning)
        held = _Held(sqs, settings.delivery_queue_url)
        ticker = Ticker(store, held, clock, config, owner="steady")
        worker_clock = BenchClock(T0)
        worker = RunWorker(
            DynamoRunStore(DynamoStore(dynamodb, tables, lease_shards=settings.shards)),
            Succeeds(),
            worker_clock,
            random.Random(0),
            telemetry=PowertoolsTelemetry(),
        )
        queue = SqsWorkQueue(sqs, settings.delivery_queue_url, settings.delivery_dlq_url)
        meter.phase = "first"  # the deployment's first pass sets the plan cursor
        with contextlib.redirect_stdout(io.StringIO()):
            run_tick(ticker, 0.0, sleep=lambda s: None)
        meter.phase = "idle"
        with contextlib.redirect_stdout(io.StringIO()):
            run_tick(ticker, 0.0, sleep=lambda s: None)
        idle_rru = meter.units[("idle", "rru")]
        meter.phase = "setup"
        for i in range(schedules):
            spec: dict[str, Any] = {"every": f"PT{every_s}S"}
            if spread:
                offset = (i * every_s // schedules) // 60 * 60
                spec["start_at"] = (T0 + timedelta(seconds=60 + offset)).isoformat()
            service.create(
                definition(
                    {
                        "name": f"steady {i}",
                        "spec": spec,
                        "target": {"type": "webhook", "url": "https://example.com/hook"},
                        "payload": {"n": i},
                    }
                )
            )

        def passes(count: int, phase: str) -> int:
            ran = 0
            for _ in range(count):
                clock.advance(60)
                meter.phase = phase
                with contextlib.redirect_stdout(io.StringIO()):
                    run_tick(ticker, 0.0, sleep=lambda s: None)
                # Until the next pass, each second's intents reach the worker at that second.
                for at, intents in held.release(clock.now() + timedelta(seconds=60)):
                    meter.phase = phase  # the tick's sends
                    held.send_batch(intents)
                    worker_clock.at = max(worker_clock.at, at)
                    ran += _drain(
                        sqs, settings.delivery_queue_url, worker, queue, meter, batch_size
                    )
            return ran

        fill_s = config.reach.total_seconds()
        passes(math.ceil((fill_s + every_s) / 60) + 2, "warm")
        # The worker's and the poller's requests of the warm-up are not the run phase's.
        for counted in (meter.units, meter.by_request):
            for key in list(counted):
                if key[0] in ("tick", "worker", "esm"):
                    del counted[key]
        count = max(60, 3 * every_s // 60)
        runs = passes(count, "tick")
        wru = meter.units[("tick", "wru")] + meter.units[("worker", "wru")]
        # The reads every pass makes anyway (index reads) are left out.
        rru = meter.units[("tick", "rru")] - count * idle_rru + meter.units[("worker", "rru")]
        tick_writes = {w: n for (ph, w), n in meter.writes.items() if ph == "tick"}
        leases = tick_writes.get("Leases", 0.0)
        return {
            "breakdown": request_breakdown(meter, count, runs),
            "every_s": every_s,
            "spread": spread,
            "schedules": schedules,
            "passes": count,
            "runs": runs,
            # A run's own units: its record, the chain's entry, a HEAD or
            # outbox write, the worker's. The leases table's (the pass's
            # heartbeat, the shard leases it takes and lets go, the plan
            # cursor) are a cost a pass, whatever the number of runs.
            "wru": (wru - leases) / runs if runs else float("nan"),
            "next_per_run": tick_writes.get("Runs.next", 0.0) / runs if runs else float("nan"),
            "pages_per_run": tick_writes.get("Runs.pages", 0.0) / runs if runs else float("nan"),
            "lease_wru_per_pass": leases / count,
            "rru": rru / runs if runs else float("nan"),
        }


def request_breakdown(meter: Meter, passes: int, runs: int) -> dict[str, Any]:
    """Per request kind and call site: requests, read units and write units a
    run (the run phase's passes less as many idle passes, the worker's, the
    event source mapping's), and the same a pass for the idle pass."""
    idle_passes = 1  # the idle phase is one pass
    idle = {label: list(v) for (ph, label), v in meter.by_request.items() if ph == "idle"}
    per_run: dict[str, list[float]] = {}
    for (phase, label), values in meter.by_request.items():
        if phase not in ("tick", "worker", "esm"):
            continue
        row = per_run.setdefault(f"{phase:<6} {label}", [0.0, 0.0, 0.0])
        less = idle.get(label) if phase == "tick" else None
        for i, v in enumerate(values):
            row[i] += v - (passes * less[i] / idle_passes if less else 0.0)
    for label, values in idle.items():
        if not any(k == ("tick", label) for k in meter.by_request):
            row = per_run.setdefault(f"tick   {label}", [0.0, 0.0, 0.0])
            for i, v in enumerate(values):
                row[i] -= passes * v / idle_passes
    return {
        "per_run": {
            k: [v / runs for v in vs]
            for k, vs in per_run.items()
            if runs and any(abs(v) > 1e-9 for v in vs)
        },
        "idle_pass": idle,
    }


def breakdown_report(rows: Sequence[Mapping[str, Any]]) -> str:
    """Each steady row's requests and units a run, by request and call site."""
    out: list[str] = []
    for row in rows:
        start = "spread" if row["spread"] else "together"
        out += [
            "",
            f"Per run, by request and call site: every {row['every_s']} s, {start} "
            f"({row['runs']} runs, {row['passes']} passes; tick rows less as many idle passes)",
            f"  {'requests':>8} {'RRU':>7} {'WRU':>7}  phase  request @ call site",
        ]
        items = sorted(row["breakdown"]["per_run"].items(), key=lambda kv: -kv[1][1] - kv[1][2])
        for label, (n, rru, wru) in items:
            out.append(f"  {n:8.3f} {rru:7.3f} {wru:7.3f}  {label}")
        totals = [sum(v[i] for v in row["breakdown"]["per_run"].values()) for i in range(3)]
        out.append(f"  {totals[0]:8.3f} {totals[1]:7.3f} {totals[2]:7.3f}  total (Leases included)")
    if rows:
        out += [
            "",
            "An idle pass, by request and call site (the tick rows above leave it out of"
            " every pass)",
            f"  {'requests':>8} {'RRU':>7} {'WRU':>7}  request @ call site",
        ]
        idle = rows[0]["breakdown"]["idle_pass"]
        for label, (n, rru, wru) in sorted(idle.items(), key=lambda kv: -kv[1][1]):
            out.append(f"  {n:8.3f} {rru:7.3f} {wru:7.3f}  {label}")
    return "\n".join(out)


def steady_report(rows: Sequence[Mapping[str, Any]], r: Mapping[str, Any]) -> str:
    """The steady state per cadence, the schedules due together and spread."""
    others = sum(
        v for k, v in r["dollars"].items() if not k.startswith("DynamoDB")
    )  # SQS, Lambda, logs a run, from the main run
    out = [
        "",
        f"Steady state per cadence (measured; {rows[0]['schedules']} schedules each, "
        f"after a warm-up; lookahead {Settings().lookahead_s} s)",
        f"  {'cadence':<16} {'start':<8} {'runs':>5} {'WRU/run':>8} "
        f"{'next/run':>9} {'pages/run':>10} {'RRU/run':>8} {'$/M all in':>11} "
        f"{'Leases WRU/pass':>16}",
    ]
    for row in rows:
        dollars = (
            row["wru"] * DYNAMODB_PER_MILLION_WRU + row["rru"] * DYNAMODB_PER_MILLION_RRU + others
        )
        every = row["every_s"]
        name = {60: "every minute", 300: "every 5 minutes", 3600: "hourly"}.get(
            every, f"every {every} s"
        )
        start = "spread" if row["spread"] else "together"
        out.append(
            f"  {name:<16} {start:<8} {row['runs']:>5} {row['wru']:>8.2f} "
            f"{row['next_per_run']:>9.2f} {row['pages_per_run']:>10.2f} {row['rru']:>8.2f} "
            f"{dollars:>11.2f} {row['lease_wru_per_pass']:>16.2f}"
        )
    out.append(
        f"  ($/M all in: these DynamoDB units, plus {others:.2f} a million runs of SQS, Lambda "
        "and logs from the run above; the tick's fixed cost a month is not in it)"
    )
    out.append(
        "  (WRU/run leaves out the leases table: the pass's heartbeat, the shard leases a pass"
        " with work takes and lets go, the plan cursor; a cost a pass, whatever the number"
        " of runs: Leases WRU/pass. RRU/run leaves out the reads of an idle pass)"
    )
    out.append(
        "  (start: together, the schedules come due in the same minutes and share plan pages;"
        " spread, evenly over the cadence, whole minutes apart where it has room: next/run"
        " and pages/run are the write units of the chain's next slots, in its index and in"
        " plan pages, included in WRU/run)"
    )
    return "\n".join(out)


class _LambdaContext:
    """Time left in an invocation, as Lambda's context tells it: the watchdog
    then resumes from its cursor and stores it, as deployed."""

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def emf_metric_names(output: str) -> set[str]:
    """The metric names (each with its dimension set) of the EMF documents in ``output``."""
    names: set[str] = set()
    for line in output.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]:
            for dimensions in directive["Dimensions"]:
                names |= {f"{m['Name']} ({', '.join(dimensions)})" for m in directive["Metrics"]}
    return names


def _record(message: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            "ApproximateReceiveCount": message.get("Attributes", {}).get(
                "ApproximateReceiveCount", "1"
            )
        },
        "messageAttributes": {},
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:cost-delivery",
        "awsRegion": "us-east-1",
    }


# --- the worker's CPU time and memory, in a process of its own ------------------------------


class _SlowReceiver(http.server.BaseHTTPRequestHandler):
    """A webhook receiver that answers 200 after ``TARGET_MS``."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        time.sleep(TARGET_MS / 1000)
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def probe_worker(schedules: int) -> dict[str, Any]:
    """Run ``schedules`` webhook runs (one slot each) through the worker function in
    a child process (``bench/worker_probe.py``) against a moto server and a
    receiver answering in ``TARGET_MS``, both in this process on 127.0.0.1; the
    child's CPU time, memory and output are the function's alone."""
    from moto.server import ThreadedMotoServer

    from adapters.secrets import aws_secret_store, signing_key_name

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowReceiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        dynamodb = boto3.client("dynamodb", endpoint_url=endpoint)
        sqs = boto3.client("sqs", endpoint_url=endpoint)
        tables = create_store_tables(dynamodb, "probe")
        urls = create_queues(sqs, "probe")
        secrets_table = f"probe-{WEBHOOK_SECRETS.logical_id}"
        create_table(dynamodb, WEBHOOK_SECRETS, secrets_table)
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
            delivery_queue_url=urls["DUETIME_DELIVERY_QUEUE_URL"],
            delivery_dlq_url=urls["DUETIME_DELIVERY_DLQ_URL"],
            # The stack's default store: each secret an item of its own table.
            secret_store="dynamodb",
            secrets_table=secrets_table,
        )
        # The stack's signing key, which each schedule's secret is derived from.
        boto3.client("secretsmanager", endpoint_url=endpoint).create_secret(
            Name=signing_key_name(settings.secrets_prefix), SecretString="k" * 64
        )
        secrets = aws_secret_store(
            settings.secret_store,
            settings.secrets_prefix,
            lambda service: boto3.client(service, endpoint_url=endpoint),
            table=settings.secrets_table,
        )
        clock = BenchClock(T0)
        store = DynamoStore(dynamodb, tables, lease_shards=settings.shards)
        service = ScheduleService(
            store, clock, Partitioning(shards=settings.shards, bucket_s=settings.bucket_s)
        )
        hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        for i in range(schedules):
            schedule, _ = service.create(
                definition(
                    {
                        "name": f"probe {i}",
                        "spec": {"every": "PT1M"},
                        "target": {"type": "webhook", "url": hook},
                        "payload": {"report": "daily", "n": i},
                    },
                    AddressPolicy.local(),
                )
            )
            secrets.put(schedule.schedule_id)
        # A lookahead shorter than a minute: each pass plans one slot of each
        # schedule, so the first phase finds every schedule new to the worker.
        ticker = Ticker(
            store, _Undelayed(sqs, settings.delivery_queue_url), clock,
            tick_config(settings.model_copy(update={"lookahead_s": 30})), owner="probe",
        )  # fmt: skip
        with tempfile.TemporaryDirectory() as folder:
            result_path = Path(folder) / "probe.json"
            log_path = Path(folder) / "probe.log"
            env = {
                **os.environ,
                "AWS_ENDPOINT_URL": endpoint,
                "POWERTOOLS_SERVICE_NAME": "duetime",
                "POWERTOOLS_METRICS_NAMESPACE": "duetime",
            }
            drained_r, drained_w = os.pipe()
            with log_path.open("wb") as log, os.fdopen(drained_r) as drained:
                child = subprocess.Popen(
                    [
                        sys.executable,
                        str(Path(__file__).resolve().parent / "worker_probe.py"),
                        settings.model_dump_json(),
                        str(result_path),
                        str(drained_w),
                    ],
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.PIPE,
                    pass_fds=(drained_w,),
                    text=True,
                )
                os.close(drained_w)
                assert child.stdin is not None
                for _ in range(PROBE_PHASES):
                    clock.advance(60)
                    with contextlib.redirect_stdout(io.StringIO()):
                        run_tick(ticker, 0.0, sleep=lambda s: None)
                    child.stdin.write(f"{(clock.now() + timedelta(seconds=30)).isoformat()}\n")
                    child.stdin.flush()
                    if drained.readline().strip() != "drained":
                        break
                _, errors = child.communicate(timeout=600)
            if child.returncode != 0:
                raise RuntimeError(f"worker probe failed: {errors[-2000:]}")
            probe: dict[str, Any] = json.loads(result_path.read_text())
            output = log_path.read_bytes()
        probe["log_bytes"] = len(output)
        probe["log_lines"] = output.decode().splitlines()
        return probe
    finally:
        receiver.shutdown()
        receiver.server_close()
        server.stop()


# --- the model -------------------------------------------------------------------------------


def model(m: dict[str, Any], infra: dict[str, Any]) -> dict[str, Any]:
    runs = m["runs"]
    units, requests = m["units"], m["requests"]
    per_pass = {k: units[("idle", k)] / m["idle_passes"] for k in ("wru", "rru")}
    run_passes = m["slots"] + 1
    # The run phase's tick passes, less what an idle pass costs anyway.
    tick_wru = units[("tick", "wru")] - run_passes * per_pass["wru"]
    tick_rru = units[("tick", "rru")] - run_passes * per_pass["rru"]
    per_run = {
        "dynamodb_wru": (tick_wru + units[("worker", "wru")]) / runs,
        "dynamodb_rru": (tick_rru + units[("worker", "rru")]) / runs,
        "sqs_requests": (units[("tick", "sqs")] + units[("worker", "sqs")] + units[("esm", "sqs")])
        / runs,
    }
    worker_calls = sum(n for (phase, _, _), n in requests.items() if phase == "worker") / runs
    invocations_per_run = m["invocations"] / runs
    batch = m["runs_per_batch"]
    probe = m["probe"]
    cpu_per_record_s = probe["cpu_per_record_s"]
    # One invocation runs its batch's records at once: it lasts as long as its
    # longest record (its AWS calls one after another, then the target), plus
    # the batch's CPU time at the function's share of a vCPU (as if none of it
    # overlapped a wait: an upper bound).
    record_calls = sum(probe["calls_per_record"].values())
    io_path_s = (record_calls * AWS_CALL_MS + TARGET_MS) / 1000
    worker_mb = infra["worker_mb"]
    sizing = {
        mb: worker_duration(mb, batch, io_path_s, cpu_per_record_s, probe)
        for mb in sorted({*MEMORY_SIZES_MB, worker_mb})
    }
    chosen = sizing[worker_mb]
    gb_s_per_run = chosen["gb_s_per_run"]
    log_bytes_per_run = probe["log_bytes_per_run"] + LAMBDA_PLATFORM_LOG_BYTES / batch
    million = 1_000_000
    dollars = {
        "DynamoDB writes": per_run["dynamodb_wru"] * DYNAMODB_PER_MILLION_WRU,
        "DynamoDB reads": per_run["dynamodb_rru"] * DYNAMODB_PER_MILLION_RRU,
        "SQS": per_run["sqs_requests"] * SQS_PER_MILLION_REQUESTS,
        "Lambda requests (worker)": invocations_per_run * LAMBDA_PER_MILLION_REQUESTS,
        "Lambda duration (worker)": gb_s_per_run * million * LAMBDA_ARM64_PER_GB_SECOND,
        "CloudWatch Logs": log_bytes_per_run * million / 1024**3 * LOGS_INGESTION_PER_GB,
    }
    # Runs that come due alone: with no batching window, each is a batch of one
    # (its own send, receive, delete and invocation).
    alone = worker_duration(worker_mb, 1, io_path_s, cpu_per_record_s, probe)
    dollars_alone = {
        **dollars,
        "SQS": 3 * SQS_PER_MILLION_REQUESTS,
        "Lambda requests (worker)": LAMBDA_PER_MILLION_REQUESTS,
        "Lambda duration (worker)": alone["usd"],
        "CloudWatch Logs": (probe["log_bytes_per_run"] + LAMBDA_PLATFORM_LOG_BYTES)
        * million
        / 1024**3
        * LOGS_INGESTION_PER_GB,
    }
    not_starved = [
        mb
        for mb in range(MIN_LAMBDA_MB, LAMBDA_MB_PER_VCPU + 1, 64)
        if (row := worker_duration(mb, MAX_BATCH, io_path_s, cpu_per_record_s, probe))[
            "within_margin"
        ]
        and row["fits"]
    ]
    secrets_by_cadence = {
        name: secret_dollars(every_s) for name, every_s in SECRET_CADENCES.items()
    }
    # The floor: the fewest writes that record every state a run must record
    # (admitted, started, finished), and the least of everything else a queued,
    # batched delivery needs.
    floor_batch = MAX_BATCH
    floor = {
        "DynamoDB writes": FLOOR_WRU * DYNAMODB_PER_MILLION_WRU,
        "DynamoDB reads": 0.0,
        "SQS": 3 / floor_batch * SQS_PER_MILLION_REQUESTS,
        "Lambda requests (worker)": 1 / floor_batch * LAMBDA_PER_MILLION_REQUESTS,
        "Lambda duration (worker)": MIN_LAMBDA_MB
        / 1024
        * (TARGET_MS / 1000)
        / floor_batch
        * million
        * LAMBDA_ARM64_PER_GB_SECOND,
        "CloudWatch Logs": LAMBDA_PLATFORM_LOG_BYTES
        / floor_batch
        * million
        / 1024**3
        * LOGS_INGESTION_PER_GB,
    }

    # Fixed per month.
    tick_invocations = MONTH_S / 60
    passes_per_month = tick_invocations * m["idle_passes"]
    watchdog_invocations = MONTH_S / 300
    idle_requests = sum(n for (phase, _, _), n in m["requests"].items() if phase == "idle")
    tick_pass_s = (idle_requests / m["idle_passes"] * AWS_CALL_MS + TICK_PASS_MS) / 1000
    tick_gb_s = tick_invocations * tick_pass_s * infra["tick_mb"] / 1024
    watchdog_requests = sum(n for (phase, _, _), n in m["requests"].items() if phase == "watchdog")
    watchdog_s = (watchdog_requests * AWS_CALL_MS + TICK_PASS_MS) / 1000
    watchdog_gb_s = watchdog_invocations * watchdog_s * infra["watchdog_mb"] / 1024
    esm_polls = MONTH_S / ESM_LONG_POLL_S * ESM_IDLE_POLLERS
    log_bytes = tick_invocations * (
        m["idle_log_bytes"] + LAMBDA_PLATFORM_LOG_BYTES
    ) + watchdog_invocations * (m["watchdog_log_bytes"] + LAMBDA_PLATFORM_LOG_BYTES)
    declared = sum(1 for name in vars(Metric) if name.isupper())
    idle_metrics = len(m["idle_metrics"])
    compute = {
        f"tick Lambda (one pass a minute, {tick_pass_s:.2f} s)": tick_gb_s
        * LAMBDA_ARM64_PER_GB_SECOND
        + tick_invocations * LAMBDA_PER_MILLION_REQUESTS / million,
        "tick DynamoDB (idle passes: index reads, heartbeat)": (
            passes_per_month * per_pass["wru"] * DYNAMODB_PER_MILLION_WRU
            + passes_per_month * per_pass["rru"] * DYNAMODB_PER_MILLION_RRU
        )
        / million,
        f"watchdog Lambda (every 5 minutes, {watchdog_s:.2f} s)": watchdog_gb_s
        * LAMBDA_ARM64_PER_GB_SECOND
        + watchdog_invocations * LAMBDA_PER_MILLION_REQUESTS / million,
        "watchdog DynamoDB (idle: cursor, heartbeat, one empty page)": watchdog_invocations
        * (
            units[("watchdog", "wru")] * DYNAMODB_PER_MILLION_WRU
            + units[("watchdog", "rru")] * DYNAMODB_PER_MILLION_RRU
        )
        / million,
        "SQS idle polling by the event source mapping": esm_polls
        * SQS_PER_MILLION_REQUESTS
        / million,
    }
    around = {
        "EventBridge Scheduler (tick + watchdog)": (tick_invocations + watchdog_invocations)
        * SCHEDULER_PER_MILLION_INVOCATIONS
        / million,
        "CloudWatch Logs (tick + watchdog lines, EMF, START/END/REPORT)": log_bytes
        / 1024**3
        * LOGS_INGESTION_PER_GB,
    }
    cloudwatch = {
        f"CloudWatch alarms ({ALARMS_IN_STACK})": ALARMS_IN_STACK * ALARM_PER_MONTH,
        "CloudWatch dashboard (1)": DASHBOARD_PER_MONTH,
        f"CloudWatch custom metrics sent idle ({idle_metrics} of {declared})": idle_metrics
        * CUSTOM_METRIC_PER_MONTH,
    }
    key = {
        f"webhook signing key ({SIGNING_KEY_SECRETS} Secrets Manager secret)": SIGNING_KEY_SECRETS
        * SECRETS_MANAGER_SECRET_PER_MONTH,
    }
    fixed = {**compute, **key, **around, **cloudwatch}
    return {
        "per_run": per_run,
        "per_pass": per_pass,
        "worker_calls": worker_calls,
        "invocations_per_run": invocations_per_run,
        "io_path_s": io_path_s,
        "record_calls": record_calls,
        "sizing": sizing,
        "gb_s_per_run": gb_s_per_run,
        "secrets_by_cadence": secrets_by_cadence,
        "dollars_alone": dollars_alone,
        "least_not_starved_mb": not_starved[0] if not_starved else None,
        "floor": floor,
        "log_bytes_per_run": log_bytes_per_run,
        "dollars": dollars,
        "fixed": fixed,
        "idle_core": sum(compute.values()),
        "idle_core_with_key": sum(compute.values()) + sum(key.values()),
        "fixed_groups": {
            "compute, DynamoDB, SQS": compute,
            "the secrets' key": key,
            "Scheduler and logs": around,
            "CloudWatch": cloudwatch,
        },
        "busy_metrics": declared * CUSTOM_METRIC_PER_MONTH,
        "passes_per_month": passes_per_month,
    }


def worker_duration(
    mb: int, batch: float, io_path_s: float, cpu_per_record_s: float, probe: Mapping[str, Any]
) -> dict[str, Any]:
    """One invocation of ``batch`` records at ``mb``: the longest record's waits
    plus the batch's CPU time at the function's share of a vCPU."""
    share = min(1.0, mb / LAMBDA_MB_PER_VCPU)
    cpu_s = batch * cpu_per_record_s / share
    batch_s = io_path_s + cpu_s
    gb_s_per_run = mb / 1024 * batch_s / batch
    return {
        "share": share,
        "cpu_s": cpu_s,
        "batch_s": batch_s,
        "lower_s": max(io_path_s, cpu_s),
        "gb_s_per_run": gb_s_per_run,
        "usd": gb_s_per_run * 1_000_000 * LAMBDA_ARM64_PER_GB_SECOND,
        "starved": cpu_s > io_path_s,
        "within_margin": cpu_s <= CPU_MARGIN * io_path_s,
        "fits": probe["peak_rss_mb"] <= MEMORY_HEADROOM * mb,
        # The init phase (imports and clients: handlers.worker.init_container) runs with
        # Lambda's burst CPU, a full core whatever the memory (docs/decisions.md, "Why the
        # worker builds its clients in Lambda's init phase").
        "init_s": probe["init_cpu_s"],
    }


def secret_dollars(every_s: float) -> dict[str, float]:
    """Per million runs of one webhook schedule that runs every ``every_s``: its
    secret's reads (one per cache lifetime on a warm worker, at most one a run)
    and its monthly fee spread over its runs, in each store.

    Secrets Manager: a GetSecretValue call each read, $0.40 a month a secret.
    SSM standard parameter: no fee, the call free at standard throughput, one
    KMS Decrypt each read (``ssm_*``); with higher throughput turned on the
    call is charged too (``ssm_ht_calls``); an advanced parameter (past 10,000
    standard ones, with intelligent tiering) has a fee (``ssm_advanced_fee``).
    The KMS free tier (20,000 requests a month an account) is left out."""
    reads_per_run = min(1.0, every_s / SECRET_CACHE_TTL_S)
    runs_per_month = MONTH_S / every_s
    per_million_reads = reads_per_run * 1_000_000 / 10_000
    sm_calls = per_million_reads * SECRETS_MANAGER_PER_10K_CALLS
    sm_fee = SECRETS_MANAGER_SECRET_PER_MONTH / runs_per_month * 1_000_000
    ssm_kms = per_million_reads * KMS_PER_10K_REQUESTS
    return {
        "reads_per_run": reads_per_run,
        # The stack's default: an eventually consistent GetItem of the secrets table,
        # half a read unit (an item far under 4 KB) each read; no fee, no KMS request.
        "table": reads_per_run * DYNAMODB_PER_MILLION_RRU / 2,
        "calls": sm_calls,
        "fee": sm_fee,
        "secrets_manager": sm_calls + sm_fee,
        "ssm_kms": ssm_kms,
        "ssm_fee": 0.0,
        "ssm": ssm_kms,
        "ssm_ht_calls": per_million_reads * SSM_HIGHER_THROUGHPUT_PER_10K,
        "ssm_advanced_fee": SSM_ADVANCED_PARAMETER_PER_MONTH / runs_per_month * 1_000_000,
    }


def summarize_probe(probe: Mapping[str, Any]) -> dict[str, Any]:
    """The worker probe's figures. Steady state from the warm phases (the median
    CPU seconds per record over their full batches, the AWS requests per record);
    the cold phase (each schedule's secret and version read once) beside it."""
    calls = probe["invocations"]

    def full(phases: Any) -> list[dict[str, Any]]:
        chosen = [c for c in calls if phases(c["phase"])]
        return [c for c in chosen if c["records"] == MAX_BATCH] or chosen

    warm, cold = full(lambda p: p > 0), full(lambda p: p == 0)
    runs = sum(c["records"] for c in calls)
    warm_runs = sum(c["records"] for c in calls if c["phase"] > 0)
    warm_calls: Counter[str] = Counter()
    for c in calls:
        if c["phase"] > 0:
            warm_calls.update(c["calls"])
    return {
        "runs": runs,
        "batches": len(calls),
        "failed": sum(c["failed"] for c in calls),
        "cpu_per_batch_s": statistics.median(c["cpu_s"] for c in warm),
        "cpu_per_record_s": statistics.median(c["cpu_s"] / c["records"] for c in warm),
        "cold_cpu_per_batch_s": statistics.median(c["cpu_s"] for c in cold),
        "wall_per_batch_s": statistics.median(c["wall_s"] for c in warm),
        "calls_per_record": {op: n / warm_runs for op, n in sorted(warm_calls.items())},
        "log_bytes_per_run": probe["log_bytes"] / runs,
        "attempt_line_bytes": statistics.median(
            len(line) + 1 for line in probe["log_lines"] if '"message":"attempt"' in line
        ),
        "emf_bytes_per_batch": statistics.median(
            [len(line) + 1 for line in probe["log_lines"] if '"_aws"' in line] or [0]
        ),
        "init_cpu_s": probe["init_cpu_s"],
        "init_rss_mb": probe["init_rss_mb"],
        "peak_rss_mb": probe["peak_rss_mb"],
    }


def _priced(items: dict[str, float], name_width: int, width: int) -> list[str]:
    """One line per priced item, then their total."""
    lines = [f"  {name:<{name_width}} {dollars:{width}.2f}" for name, dollars in items.items()]
    total = sum(items.values())
    return [*lines, f"  {'total':<{name_width}} {total:{width}.2f}"]


def report(m: dict[str, Any], infra: dict[str, Any], r: dict[str, Any]) -> str:
    runs = m["runs"]
    out = [
        f"duetime cost model: {m['schedules']} schedules x {m['slots']} slots = {runs} runs "
        f"on moto in-process ({m['elapsed_s']:.1f} s), {date_line()}",
        f"prices: us-east-1 list, on demand, read {PRICES_READ_ON}; prices change",
        "",
        "AWS requests per run, by phase and operation (measured)",
    ]
    requests = m["requests"]
    passes = m["slots"] + 1
    idle = {
        (svc, op): n / m["idle_passes"] for (ph, svc, op), n in requests.items() if ph == "idle"
    }
    for (phase, service, op), n in sorted(requests.items()):
        if phase not in ("tick", "worker", "esm"):
            continue
        if phase == "tick":  # less what the same passes cost with nothing due
            n = n - passes * idle.get((service, op), 0.0)
        out.append(f"  {phase:<7} {service:<9} {op:<22} {n / runs:7.3f}")
    p = r["per_run"]
    pr = m["probe"]
    batch = m["runs_per_batch"]
    out += [
        "  (tick: the run phase's passes less as many idle passes; esm: Lambda's SQS poller)",
        "",
        "DynamoDB write units per run, by table and index (measured)",
    ]
    writes = m["writes"]
    for (phase, label), units in sorted(writes.items()):
        if phase not in ("tick", "worker"):
            continue
        if phase == "tick":  # less what the same passes write with nothing due
            units = units - passes * writes.get(("idle", label), 0.0) / m["idle_passes"]
        if abs(units) > 1e-9:
            out.append(f"  {phase:<7} {label:<32} {units / runs:7.3f}")
    out += [
        "  (Leases: the shards a pass leases to queue ahead, a cost per pass, not per run:",
        "  at most one lease write per shard a minute, however many runs)",
        "",
        "AWS requests per idle tick pass (measured)",
        *(f"  tick    {svc:<9} {op:<22} {n:7.2f}" for (svc, op), n in sorted(idle.items())),
        "",
        "The worker function, measured in a process of its own (bench/worker_probe.py:",
        f"  {pr['runs']} webhook runs in {pr['batches']} invocations, {PROBE_PHASES} slots of "
        f"{PROBE_SCHEDULES} schedules, a receiver answering in {TARGET_MS:g} ms, on this"
        " machine's CPU)",
        f"  cold start (import, clients)   {pr['init_cpu_s']:6.2f} s CPU, "
        f"{pr['init_rss_mb']:.0f} MB resident",
        f"  a batch of {MAX_BATCH}, warm          {pr['cpu_per_batch_s']:6.3f} s CPU "
        f"({pr['cpu_per_record_s'] * 1000:.1f} ms a record), {pr['wall_per_batch_s']:.3f} s "
        "wall here",
        f"  a batch of {MAX_BATCH}, cold          {pr['cold_cpu_per_batch_s']:6.3f} s CPU "
        "(each schedule's first run on this worker: its secret and version read)",
        "  AWS requests a record, warm     "
        + ", ".join(f"{op} {n:.2f}" for op, n in pr["calls_per_record"].items()),
        f"  peak resident memory           {pr['peak_rss_mb']:6.0f} MB",
        f"  output a run                   {pr['log_bytes_per_run']:6.0f} B "
        f"(attempt line {pr['attempt_line_bytes']:.0f} B; EMF {pr['emf_bytes_per_batch']:.0f} B"
        " a batch)",
        "",
        f"Event source mapping (infra/functions.py): BatchSize {infra['worker_batch']}, "
        f"MaximumBatchingWindow {infra['worker_batch_window_s']:g} s: a batch is what is visible"
        " when a poller receives",
        f"Worker sizing: a batch of {batch:g} (the mean here) lasts its longest record's"
        f" {r['record_calls']:.1f} AWS calls x {AWS_CALL_MS:g} ms + {TARGET_MS:g} ms target"
        f" = {r['io_path_s']:.3f} s,",
        "  plus the batch's CPU at the size's share of a vCPU (1 vCPU at "
        f"{LAMBDA_MB_PER_VCPU} MB; an upper bound: no CPU overlaps a wait)",
        f"  {'MB':>5} {'vCPU':>5} {'CPU s':>6} {'batch s':>8} {'(at least)':>10} "
        f"{'cold start s':>12} {'$/M':>6}  fits / CPU-bound",
    ]
    for mb, row in r["sizing"].items():
        notes = [
            "fits" if row["fits"] else f"does not fit ({pr['peak_rss_mb']:.0f} MB peak)",
            "CPU-bound" if row["starved"] else "waits on the target",
        ]
        mark = " <- deployed" if mb == infra["worker_mb"] else ""
        out.append(
            f"  {mb:5d} {row['share']:5.2f} {row['cpu_s']:6.3f} {row['batch_s']:8.3f} "
            f"{row['lower_s']:10.3f} {row['init_s']:12.2f} {row['usd']:6.2f}  "
            f"{', '.join(notes)}{mark}"
        )
    least = r["least_not_starved_mb"]
    out += [
        f"  the least memory (in 64 MB steps) at which a warm batch of {MAX_BATCH}'s CPU takes at"
        f" most {CPU_MARGIN:.0%} of its longest wait: {least} MB;"
        f" deployed: {infra['worker_mb']} MB",
        "",
        "Units per run",
        f"  DynamoDB write request units  {p['dynamodb_wru']:7.2f}  "
        f"(largest item seen {m['largest_item']} B: every write is one 1 KB unit)",
        f"  DynamoDB read request units   {p['dynamodb_rru']:7.2f}",
        f"  SQS requests (64 KB chunks)   {p['sqs_requests']:7.2f}",
        f"  worker invocations            {r['invocations_per_run']:7.2f}  "
        f"(batches of {batch:g} on average: the bench's schedules come due at the same second)",
        f"  worker GB-seconds             {r['gb_s_per_run']:7.4f}  "
        f"({infra['worker_mb']} MB x {r['sizing'][infra['worker_mb']]['batch_s']:.3f} s"
        f" / {batch:g} runs)",
        f"  log bytes                     {r['log_bytes_per_run']:7.0f}  (the probe's output, "
        f"START/END/REPORT {LAMBDA_PLATFORM_LOG_BYTES} B an invocation)",
        "",
        f"$ per million runs, all in         {'measured':>8} {'floor':>8} {'alone':>8}",
    ]
    total = sum(r["dollars"].values())
    floor_total = sum(r["floor"].values())
    for name, dollars in r["dollars"].items():
        out.append(
            f"  {name:<32} {dollars:8.2f} {r['floor'][name]:8.2f} {r['dollars_alone'][name]:8.2f}"
        )
    out += [
        f"  {'total':<32} {total:8.2f} {floor_total:8.2f} {sum(r['dollars_alone'].values()):8.2f}",
        "  (alone: runs that come due at a second of their own, each a batch of one: no"
        " batching window)",
        f"  ratio to the floor: {total / floor_total:.2f}; without the writes: "
        f"{total - r['dollars']['DynamoDB writes']:.2f} against "
        f"{floor_total - r['floor']['DynamoDB writes']:.2f}",
        f"  (floor: {FLOOR_WRU} WRU a run (admitted, started, finished), no read, a send, a "
        f"receive and a delete per {MAX_BATCH} runs,",
        f"  one invocation of {MIN_LAMBDA_MB} MB per {MAX_BATCH} runs waiting "
        f"{TARGET_MS:g} ms, START/END/REPORT only)",
        "",
        "Webhook signing secrets, per million runs of a schedule, on top: read once per "
        f"{SECRET_CACHE_TTL_S:g} s cache",
        "  lifetime on a warm worker, at most once a run (each cold worker reads it again).",
        f"  Secrets Manager: ${SECRETS_MANAGER_SECRET_PER_MONTH:.2f} a secret a month, "
        f"${SECRETS_MANAGER_PER_10K_CALLS:.2f} per 10,000 GetSecretValue.",
        "  DynamoDB table (the default): an eventually consistent GetItem, half a read unit "
        f"(${DYNAMODB_PER_MILLION_RRU / 2:.4f} a million), no fee.",
        "  SSM standard parameter: no fee, GetParameter free at standard",
        f"  throughput, ${KMS_PER_10K_REQUESTS:.2f} per 10,000 KMS decrypts; higher throughput "
        f"adds ${SSM_HIGHER_THROUGHPUT_PER_10K:.2f} per 10,000",
        f"  calls, an advanced parameter ${SSM_ADVANCED_PARAMETER_PER_MONTH:.2f} a month "
        "(the KMS free tier, 20,000 requests a month, left out).",
        f"  {'cadence':<16} {'reads/run':>9} | {'table':>6} | {'SM calls':>8} {'SM fee':>10} "
        f"{'SM total':>10} | {'SSM (KMS)':>9} {'+higher tput':>12} {'+advanced':>10}",
    ]
    for name, row in r["secrets_by_cadence"].items():
        out.append(
            f"  {name:<16} {row['reads_per_run']:9.2f} | {row['table']:6.3f} | {row['calls']:8.2f} "
            f"{row['fee']:10.2f} {row['secrets_manager']:10.2f} | {row['ssm']:9.2f} "
            f"{row['ssm_ht_calls']:12.2f} {row['ssm_advanced_fee']:10.2f}"
        )
    out += [
        "",
        "Fixed $ per month (independent of runs), idle",
    ]
    for group, items in r["fixed_groups"].items():
        out += [f" {group}", *_priced(items, 73, 7)]
    core, with_key = r["idle_core"], r["idle_core_with_key"]
    core_name = f"compute, DynamoDB, SQS (at most {IDLE_CORE_LIMIT:.2f})"
    key_name = f"compute, DynamoDB, SQS and the signing key (at most {IDLE_WITH_KEY_LIMIT:.2f})"
    out += [
        f"  {core_name:<73} {core:7.2f}  {verdict(core <= IDLE_CORE_LIMIT)}",
        f"  {key_name:<73} {with_key:7.2f}  {verdict(with_key <= IDLE_WITH_KEY_LIMIT)}",
        f"  {'all fixed, idle':<73} {sum(r['fixed'].values()):7.2f}",
        f"  custom metrics sent idle: {', '.join(m['idle_metrics']) or 'none'}; every declared"
        f" metric sent every hour would be {r['busy_metrics']:.2f}",
        "  AWS requests per idle watchdog invocation (measured): "
        + ", ".join(
            f"{svc} {op} {n:g}" for (ph, svc, op), n in sorted(requests.items()) if ph == "watchdog"
        ),
        "",
        f"idle tick pass: {r['per_pass']['wru']:.1f} WRU, {r['per_pass']['rru']:.1f} RRU; "
        f"{r['passes_per_month']:,.0f} passes a month ({m['idle_passes']} per invocation)",
        f"idle log bytes per invocation (besides START/END/REPORT): tick {m['idle_log_bytes']},"
        f" watchdog {m['watchdog_log_bytes']}",
    ]
    return "\n".join(out)


def verdict(held: bool) -> str:
    return "pass" if held else "FAIL"


def date_line() -> str:
    return (
        f"{datetime.now(UTC).date().isoformat()}, {platform.machine()} "
        f"{platform.processor() or platform.system()}, Python {platform.python_version()}"
    )


class NothingMeasured(RuntimeError):
    """The bench's runs did not succeed: no figure to report."""


def run_model(
    schedules: int = 100, slots: int = 3
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Measure on moto, probe the worker, and model: (measured, infra, modelled), what
    ``report`` prints (bench/floors.py reads the same figures)."""
    infra = infra_numbers()
    measured = measure(schedules, slots, infra["worker_batch"])
    if measured["runs"] == 0:
        raise NothingMeasured("no run succeeded: nothing to divide by")
    measured["runs_per_batch"] = measured["runs"] / measured["invocations"]
    measured["probe"] = summarize_probe(probe_worker(PROBE_SCHEDULES))
    if measured["probe"]["failed"]:
        raise NothingMeasured("the worker probe's runs did not all succeed")
    return measured, infra, model(measured, infra)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=100)
    parser.add_argument("--slots", type=int, default=3)
    parser.add_argument(
        "--every",
        type=int,
        action="append",
        default=[],
        metavar="SECONDS",
        help="add the steady state of schedules of this cadence (repeatable)",
    )
    parser.add_argument("--steady-schedules", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        measured, infra, modelled = run_model(args.schedules, args.slots)
    except NothingMeasured as error:
        print(error, file=sys.stderr)
        return 1
    print(report(measured, infra, modelled))
    if args.every:
        rows = [
            steady_state(every, args.steady_schedules, infra["worker_batch"], spread=spread)
            for every in args.every
            for spread in (False, True)
        ]
        print(steady_report(rows, modelled))
        print(breakdown_report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
