"""The cost model's main run on moto in-process: schedules every minute, a few slots
end to end through the tick and the worker handler, every request metered
(``measure``); and the parts the steady state shares with it: the clock, a target
that succeeds at once, the tick's queue held to each intent's due second (``Held``),
the event source mapping's record.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from adapters.definitions import OCCURRENCES, SCHEDULES, TABLES, create_queues
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import dynamo_store
from adapters.sqs import SqsDeliveryQueue
from adapters.sqs_worker import SqsWorkQueue
from adapters.telemetry import PowertoolsTelemetry
from bench.meter import Meter
from bench.prices import MAX_BATCH
from bootstrap.parts import Ticker, tick_config
from bootstrap.settings import Settings
from domain.delivery import Delivery, Outcome
from domain.partition import Partitioning
from domain.run import DeliveryIntent
from domain.targets import Target
from handlers import watchdog as watchdog_handler
from handlers import worker as worker_handler
from handlers.api_models import definition_of as definition
from handlers.tick_pass import run_tick
from service.runs import RunWorker
from service.schedules import ScheduleService
from service.watchdog import Watchdog

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


class Held(SqsDeliveryQueue):
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


def stack_settings(tables: Any, urls: Mapping[str, str], **more: Any) -> Settings:
    """The settings a deployment's functions read, over the bench's tables and queues."""
    return Settings(
        schedules_table=tables.schedules,
        occurrences_table=tables.occurrences,
        leases_table=tables.leases,
        delivery_queue_url=urls["DUETIME_DELIVERY_QUEUE_URL"],
        delivery_dlq_url=urls["DUETIME_DELIVERY_DLQ_URL"],
        **more,
    )


def metered_stack(prefix: str) -> tuple[Any, Any, Any, dict[str, str], Meter]:
    """Inside ``mock_aws``: the store's tables and the queues, named by
    ``prefix``, with a ``Meter`` counting every request of both clients."""
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    sqs = boto3.client("sqs", region_name="us-east-1")
    tables = create_store_tables(dynamodb, prefix)
    urls = create_queues(sqs, prefix)
    definitions = {
        tables.schedules: SCHEDULES,
        tables.occurrences: OCCURRENCES,
        tables.leases: next(t for t in TABLES if t.logical_id == "Leases"),
    }
    meter = Meter(boto3.client("dynamodb", region_name="us-east-1"), definitions)
    meter.attach(dynamodb)
    meter.attach(sqs)
    return dynamodb, sqs, tables, urls, meter


def succeeding_worker(dynamodb: Any, tables: Any, settings: Settings, clock: Any) -> RunWorker:
    """The worker function's use case over its own store (nothing cached from
    the tick), every target call succeeding."""
    return RunWorker(
        DynamoRunStore(dynamo_store(dynamodb, tables, lease_shards=settings.shards)),
        Succeeds(),
        clock,
        random.Random(0),
        telemetry=PowertoolsTelemetry(),
    )


def measure(schedules: int, slots: int, batch_size: int = MAX_BATCH) -> dict[str, Any]:
    with mock_aws():
        dynamodb, sqs, tables, urls, meter = metered_stack("cost")
        settings = stack_settings(tables, urls)
        clock = BenchClock(T0)
        # lease_shards as deployed (from_settings): leases are read by key.
        store = dynamo_store(dynamodb, tables, lease_shards=settings.shards)
        service = ScheduleService(
            store, clock, Partitioning(shards=settings.shards, bucket_s=settings.bucket_s)
        )
        held = Held(sqs, settings.delivery_queue_url)
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
        worker = succeeding_worker(dynamodb, tables, settings, worker_clock)
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
                    event = {"Records": [sqs_record(m) for m in messages]}
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
            for run in store.records.runs(sid, 100).items
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


def sqs_record(message: Mapping[str, Any]) -> dict[str, Any]:
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
