"""The watchdog: EventBridge Scheduler invokes it on its own schedule, apart from the tick.

It records a verdict per schedule (ok / late / overdue) and emits the number
of overdue and late schedules and the age of the tick's last heartbeat. The
alarms on those metrics are what make silence loud. With the stack's alarm
topic in its environment, each schedule whose verdict changes is also a
message of its own on that topic (service/alerts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.definitions import Metric
from adapters.observability import (
    build_at_init,
    logger,
    metrics,
    on_lambda,
    put_count,
    put_seconds,
)
from bootstrap.aws import build_aws_watchdog
from bootstrap.settings import Settings
from domain.watch import WatchStatus
from service.watchdog import Watchdog, WatchReport

# When the tick has never beaten, report the age as this (a day): the alarm fires.
NEVER_BEATEN_AGE_S = 86400.0
# Kept back from the function's remaining time for the last page, the metrics
# and the cursor: a pass stops judging once less than this is left.
SAFETY_MARGIN_S = 15.0


# The watchdog of this Lambda container (its store and its channel), built once
# (on Lambda by the init phase, ``init_container``; elsewhere by the first
# invocation) and kept: a pass every few minutes need not build its clients
# each time. The composition root builds it (bootstrap/aws.py).
_container_watchdog: Watchdog | None = None


def container_watchdog() -> Watchdog:
    global _container_watchdog
    if _container_watchdog is None:
        _container_watchdog = build_aws_watchdog(Settings.from_env())
    return _container_watchdog


def init_container() -> None:
    """What Lambda's init phase runs after the imports: this container's store, its
    channel and their clients, built before the first pass."""
    build_at_init(container_watchdog, "the watchdog's store")


def emit(report: WatchReport) -> None:
    """The pass's metrics: the heartbeat's age always (the dashboard graphs
    it), the overdue and late counts when not 0 (``put_count``); the
    quarantined schedules are on the pass's log line."""
    put_count(Metric.OVERDUE_SCHEDULES, report.count(WatchStatus.OVERDUE))
    put_count(Metric.LATE_SCHEDULES, report.count(WatchStatus.LATE))
    age = report.tick_heartbeat_age_s
    put_seconds(Metric.TICK_HEARTBEAT_AGE, NEVER_BEATEN_AGE_S if age is None else age)


def summary(report: WatchReport) -> dict[str, Any]:
    return {
        "checked_at": report.checked_at.isoformat(),
        "counts": {status.value: n for status, n in sorted(report.counts.items())},
        "overdue": report.overdue[:100],
        "tick_heartbeat_age_s": report.tick_heartbeat_age_s,
        "unknown": report.unknown[:100],
        "unread": report.unread[:100],
        "set_aside": report.set_aside,
        "judged": report.judged,
        "complete": report.complete,
        "alerts": {
            "sent": report.alerts.sent,
            "held": report.alerts.held,
            "failed": report.alerts.failed,
        },
    }


def run_watchdog(
    watchdog: Watchdog, time_left: Callable[[], float] | None = None
) -> dict[str, Any]:
    """One watchdog pass: verdicts, metrics, one log line. Shared with the local
    stack. With ``time_left``, the pass resumes where the last one stopped and
    stops when it runs out (``service.watchdog``)."""
    log = logger()  # built first: the pass's own log lines (a quarantine) go through it
    report = watchdog.run(time_left)
    emit(report)
    result = summary(report)
    troubled = report.unknown or report.unread or report.alerts.failed
    if report.overdue or troubled or report.tick_heartbeat_age_s is None:
        log.warning("watchdog pass", extra=result)
    else:
        log.info("watchdog pass", extra=result)
    return result


def handler(
    event: dict[str, Any], context: Any, watchdog: Watchdog | None = None
) -> dict[str, Any]:
    if watchdog is None:
        watchdog = container_watchdog()
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    time_left = None
    if callable(remaining_ms):

        def time_left() -> float:
            return float(remaining_ms()) / 1000 - SAFETY_MARGIN_S

    try:
        return run_watchdog(watchdog, time_left)
    finally:
        metrics().flush_metrics()


if on_lambda():
    init_container()
