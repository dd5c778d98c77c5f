"""One tick pass after another, as the tick function and the benchmarks run them:
``run_tick`` repeats ``Ticker.tick_once`` for a budget, sends each pass's
metrics (``emit``), releases what it holds and writes the invocation's log
line. handlers/tick.py is the Lambda entry point around it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from adapters.definitions import Metric
from adapters.observability import logger, metrics, put_count, put_seconds
from service.planning.pass_state import TickReport
from service.planning.ticker import Ticker


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
    then release the shards, also when a pass fails: the
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
