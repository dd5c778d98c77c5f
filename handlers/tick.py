"""The dispatcher: EventBridge Scheduler invokes this every minute.

Each invocation is one short pass (docs/decisions.md, "Why the tick looks the
way it does"): it plans the slots due before the next invocation plus a
margin (the lookahead), admits each in the write that stores it, and sends
its delivery intent with a delay, so the message becomes visible at its due
second; then it releases what it holds and ends, in about a second. The
pass emits a heartbeat metric and the dispatch lag (how late an intent was
queued: 0 for one queued ahead), and the ticker records a heartbeat item in
the store for the watchdog.

After the pass, with its leases released, the invocation starts the surges
due before the next one (service/surge.py): drains of the worker, invoked
asynchronously a few seconds before a second with many intents due, waiting
inside this invocation for that moment.

``run_tick`` runs passes for a budget (one, on Lambda); the local stack runs
the same pass on its own interval over SQLite (``build_sqlite_ticker``).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.definitions import Metric
from domain.partition import Partitioning
from handlers.observability import (
    build_at_init,
    ledger_not_written,
    logger,
    metrics,
    on_lambda,
    put_count,
    put_seconds,
)
from handlers.settings import Settings
from service.clock import SystemClock
from service.planning.config import TickConfig
from service.planning.pass_state import TickReport
from service.planning.surge import TICK_RECORD_MIN, LoadRecordingQueue, Surges
from service.planning.ticker import Ticker
from service.ports import Clock, DeliveryQueue


def new_owner() -> str:
    """A name for this tick process, unique among processes sharing a store."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# The ticker of this Lambda container, built once (on Lambda by the init phase,
# ``init_container``; elsewhere by the first invocation) and kept for the next
# ones: one lease owner per container (a warm container renews its own leases)
# and one set of clients.
_container_ticker: Ticker | None = None


def container_ticker(settings: Settings) -> Ticker:
    global _container_ticker
    if _container_ticker is None:
        _container_ticker = build_aws_ticker(settings)
    return _container_ticker


def init_container() -> None:
    """What Lambda's init phase runs after the imports: this container's ticker and its
    clients, built before the first pass."""
    build_at_init(lambda: container_ticker(Settings.from_env()), "the ticker")


def tick_config(settings: Settings) -> TickConfig:
    """The pass of a deployment (AWS or local): it queues ahead, up to the
    lookahead, so it needs to run only once per lookahead less a margin. A crowd
    on the chain, which a pass with time to spare plans early, is as many
    schedules at one instant as a surge starts for (``surgeMin``)."""
    return TickConfig(
        crowd_min=settings.surge_min,
        partitioning=Partitioning(shards=settings.shards, bucket_s=settings.bucket_s),
        lookahead=timedelta(seconds=settings.lookahead_s),
        plan_block=timedelta(seconds=settings.plan_block_s),
        direct_window=timedelta(seconds=settings.direct_window_s),
        lease_ttl=timedelta(seconds=settings.lease_ttl_s),
        queue_ahead=True,
        plan_budget=timedelta(seconds=settings.tick_budget_s) if settings.tick_budget_s else None,
    )


def build_sqlite_ticker(
    db_path: str | Path,
    queue: DeliveryQueue,
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    owner: str | None = None,
) -> Ticker:
    """The tick over the one-machine store (the local stack)."""
    from adapters.sqlite.store import SqliteStore

    settings = settings or Settings()
    return Ticker(
        SqliteStore(db_path),
        queue,
        clock or SystemClock(),
        tick_config(settings),
        owner=owner or new_owner(),
    )


def build_aws_ticker(settings: Settings) -> Ticker:
    """The tick over DynamoDB and SQS, built from the deployment's settings. Its
    sends count their crowded seconds in the load ledger, and the container keeps
    the surge trigger that reads it (``_container_surges``), when the deployment
    names its worker function."""
    try:
        from adapters.dynamodb.load import DynamoLoadLedger
        from adapters.dynamodb.store import DynamoStore
        from adapters.sqs import TICK_ALIGN_S, SqsDeliveryQueue
    except ImportError as error:  # pragma: no cover - until both adapters exist
        raise RuntimeError(f"the AWS adapters are not available: {error}") from error
    global _container_surges
    store = DynamoStore.from_settings(settings)
    queue: DeliveryQueue = SqsDeliveryQueue.from_settings(settings, align_s=TICK_ALIGN_S)
    owner = new_owner()
    if settings.worker_function:
        ledger = DynamoLoadLedger(store.client, settings.occurrences_table)
        recording = LoadRecordingQueue(
            queue,
            ledger,
            min_count=TICK_RECORD_MIN,
            deferred=True,
            on_error=ledger_not_written,
            early_min=settings.surge_min,
        )
        queue = recording
        _container_surges = Surges(
            ledger,
            _invoker(settings.worker_function),
            SystemClock(),
            time.sleep,
            owner=owner,
            surge_min=settings.surge_min,
            counted=recording.flush,
        )
        quiet_until = _quiet_until(_container_surges, recording)
    else:
        quiet_until = None
    return Ticker(
        store, queue, SystemClock(), tick_config(settings), owner=owner, quiet_until=quiet_until
    )


def _quiet_until(
    surges: Surges, recording: LoadRecordingQueue
) -> Callable[[datetime, datetime], datetime]:
    """Until when a pass may plan early: ``EARLY_MARGIN_S`` before the first surge
    the invocation starts after its pass (``Surges.quiet_until``). A ledger that
    cannot be read bounds nothing: the surge it would have shown is lost anyway."""
    margin = timedelta(seconds=EARLY_MARGIN_S)

    def quiet_until(now: datetime, until: datetime) -> datetime:
        try:
            return surges.quiet_until(now, until, recording.pending, margin=margin)
        except Exception as error:  # planning early is an optimisation too
            logger().warning(
                "load ledger not read: planning early up to the budget",
                extra={"error": repr(error)},
            )
            return until

    return quiet_until


# Kept back from the tick's remaining time when it waits for a surge's moment.
SURGE_MARGIN_S = 5.0
# How long before a surge's moment a pass stops planning early: it looks at the
# time between pages, and a page of 500 seeds takes about 8 s at the tick's 512 MB.
EARLY_MARGIN_S = 10.0
INVOKE_THREADS = 16

# The surge trigger of this container (service/surge.py), built with its ticker;
# None when the deployment names no worker function to start.
_container_surges: Surges | None = None


def _invoker(function_name: str) -> Callable[[list[dict[str, Any]]], int]:
    """Send each event as an asynchronous invoke of ``function_name``, a few at a
    time; how many Lambda refused."""
    import boto3
    from botocore.config import Config

    client = boto3.session.Session().client(
        "lambda",
        config=Config(
            retries={"mode": "standard", "max_attempts": 3},
            connect_timeout=3,
            read_timeout=10,
            max_pool_connections=INVOKE_THREADS,
        ),
    )

    def one(event: dict[str, Any]) -> bool:
        try:
            client.invoke(
                FunctionName=function_name,
                InvocationType="Event",
                Payload=json.dumps(event).encode(),
            )
        except Exception:
            logger().exception("drain not invoked")
            return False
        return True

    def invoke(events: list[dict[str, Any]]) -> int:
        with ThreadPoolExecutor(max_workers=INVOKE_THREADS) as pool:
            return sum(1 for ok in pool.map(one, events) if not ok)

    return invoke


def start_surges(surges: Surges, nominal: datetime, remaining_s: float | None) -> dict[str, Any]:
    """After the pass: start the surges due before the next invocation (``nominal``
    plus a minute), within this invocation's time less a margin."""
    until = nominal + timedelta(seconds=60)
    if remaining_s is not None:
        until = min(until, surges.clock.now() + timedelta(seconds=remaining_s - SURGE_MARGIN_S))
    try:
        report = surges.run(until)
    except Exception:  # the mapping delivers the intents, later
        logger().exception("surges not started")
        return {"surges_failed": True}
    return {
        "surges_started": report.started,
        "drains": report.drains,
        "drains_refused": report.refused,
        "surge_wait_s": round(report.waited_s, 3),
    }


def emit(report: TickReport) -> None:
    """The metrics of one pass: an idle pass sends the heartbeat alone (a
    count of 0 is not sent, see ``put_count``). Quarantines are on their own
    log line (``schedule quarantined``) and the pass's line."""
    put_count(Metric.TICK_HEARTBEAT, 1)
    put_count(Metric.OCCURRENCES_MATERIALIZED, report.plan.materialized)
    put_count(Metric.OCCURRENCES_ADMITTED, report.dispatch.admitted)
    put_count(Metric.OCCURRENCES_SKIPPED, report.plan.skipped + report.dispatch.skipped)
    put_count(Metric.OCCURRENCES_EXPIRED, report.plan.expired + report.dispatch.expired)
    if report.dispatch.max_lag_s is not None:
        put_seconds(Metric.DISPATCH_LAG, report.dispatch.max_lag_s)


def run_tick(
    ticker: Ticker,
    budget_s: float,
    *,
    interval_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
    fields: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Plan + dispatch passes until ``budget_s`` is used up (at least one pass),
    then release the shards and the membership, also when a pass fails: the
    next invocation (here or in another container) takes every shard at once
    rather than waiting for these leases to expire."""
    logger()  # built first: a pass's own log lines (a quarantine) go through it
    deadline = monotonic() + budget_s
    totals: dict[str, Any] = {
        "passes": 0,
        "materialized": 0,
        "planned_early": 0,
        "admitted": 0,
        "skipped": 0,
        "expired": 0,
        "quarantined": 0,
        "sent": 0,
        "max_lag_s": None,
        "owner": ticker.owner,
        **(fields or {}),
    }
    try:
        while True:
            report = ticker.tick_once()
            emit(report)
            totals["passes"] += 1
            totals["materialized"] += report.plan.materialized
            totals["planned_early"] += report.plan.early
            totals["admitted"] += report.dispatch.admitted
            totals["skipped"] += report.plan.skipped + report.dispatch.skipped
            totals["expired"] += report.plan.expired + report.dispatch.expired
            totals["quarantined"] += len(report.plan.quarantined) + len(report.dispatch.quarantined)
            totals["sent"] += report.dispatch.sent
            lag = report.dispatch.max_lag_s
            if lag is not None:
                totals["max_lag_s"] = max(lag, totals["max_lag_s"] or lag)
            if report.plan.out_of_time:
                totals["out_of_planning_time"] = True
                logger().warning(
                    "planning stopped at its budget: the next pass plans the rest",
                    extra={"materialized": report.plan.materialized},
                )
            if report.dispatch.out_of_time:
                totals["out_of_dispatch_time"] = True
                logger().warning(
                    "dispatch stopped at its deadline: the next pass dispatches the rest",
                    extra={"admitted": report.dispatch.admitted},
                )
            if report.dispatch.checkpoint_refused:
                logger().warning(
                    "lease lost while dispatching",
                    extra={"shards": report.dispatch.checkpoint_refused},
                )
            if monotonic() + interval_s >= deadline:
                break
            sleep(interval_s)
    finally:
        try:
            ticker.release()
        except Exception:  # the leases then expire by their TTL
            logger().exception("tick leases not released")
        metrics().flush_metrics()
    logger().info("tick", extra=totals)
    return totals


def stands_for(event: Any) -> datetime | None:
    """The minute an EventBridge Scheduler invocation stands for: the
    ``scheduled_at`` its target input carries (infra/schedules.py), or None
    (another caller, or a value that is not an aware ISO 8601 instant)."""
    text = event.get("scheduled_at") if isinstance(event, dict) else None
    if not isinstance(text, str):
        return None
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        logger().warning("tick event: scheduled_at is not an instant", extra={"value": text})
        return None
    return at.astimezone(UTC) if at.tzinfo is not None else None


def handler(
    event: dict[str, Any],
    context: Any,
    service: Ticker | None = None,
    surges: Surges | None = None,
) -> dict[str, Any]:
    """One invocation, one pass. What it plans and admits comes from durable
    state (each schedule's ``next_due``, the pending records), not from the
    minute the invocation stands for, so a late or retried invocation still
    covers everything that fell due; how late it started is logged
    (``invocation_late_s``) from the event's ``scheduled_at``. Then it starts the
    surges due before the next invocation (``start_surges``): ``surges`` replaces
    the container's trigger (tests)."""
    settings = Settings.from_env()
    ticker = service or container_ticker(settings)
    began = ticker.clock.now()
    nominal = stands_for(event)
    late_s = None if nominal is None else (began - nominal).total_seconds()
    totals = run_tick(
        ticker,
        0.0,
        fields={
            "stands_for": None if nominal is None else nominal.isoformat(),
            "invocation_late_s": late_s,
        },
    )
    if surges is None and service is None:
        surges = _container_surges
    if surges is not None:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        remaining_s = float(remaining()) / 1000 if callable(remaining) else None
        fired = start_surges(surges, nominal or began, remaining_s)
        if fired.get("surges_started") or fired.get("surges_failed"):
            logger().info("surges", extra=fired)
        totals.update(fired)
    return totals


if on_lambda():
    init_container()
