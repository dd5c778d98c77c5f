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
due before the next one (service/planning/surge.py): drains of the worker, invoked
asynchronously a few seconds before a second with many intents due, waiting
inside this invocation for that moment.

``run_tick`` (handlers/tick_pass.py) runs passes for a budget (one, on
Lambda); the local stack runs the same pass on its own interval over SQLite.
The ticker is built by the composition root (``bootstrap.aws.build_aws_ticker``,
``bootstrap.local.build_sqlite_ticker``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from adapters.observability import (
    build_at_init,
    ledger_not_read,
    ledger_not_written,
    logger,
    on_lambda,
)
from bootstrap.aws import build_aws_ticker
from bootstrap.settings import Settings
from handlers.tick_pass import run_tick
from service.planning.surge import Surges
from service.planning.ticker import Ticker

# The ticker of this Lambda container and its surge trigger (service/planning/surge.py; None
# when the deployment names no worker function to start), built once by the
# composition root (bootstrap/aws.py): on Lambda by the init phase
# (``init_container``), elsewhere by the first invocation; kept for the next ones:
# one lease owner per container (a warm container renews its own leases) and one
# set of clients. Its log lines and its invokes are this container's.
_container_ticker: Ticker | None = None
_container_surges: Surges | None = None


def container_ticker(settings: Settings) -> Ticker:
    global _container_ticker, _container_surges
    if _container_ticker is None:
        built = build_aws_ticker(
            settings,
            invoker=_invoker,
            on_ledger_error=ledger_not_written,
            on_ledger_unread=ledger_not_read,
        )
        _container_ticker, _container_surges = built.ticker, built.surges
    return _container_ticker


def init_container() -> None:
    """What Lambda's init phase runs after the imports: this container's ticker and its
    clients, built before the first pass."""
    build_at_init(lambda: container_ticker(Settings.from_env()), "the ticker")


# Kept back from the tick's remaining time when it waits for a surge's moment.
SURGE_MARGIN_S = 5.0
INVOKE_THREADS = 16


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
