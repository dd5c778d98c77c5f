"""What the worker tells of its runs: each attempt a JSON log line, each run
CloudWatch metrics (EMF), through the container's logger and metrics
(``adapters.observability``). The Lambda worker, the local stack's worker
pool and the composition root (``bootstrap``) build ``PowertoolsTelemetry``.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import warnings
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import RESERVED_LOG_ATTRS, LambdaPowertoolsFormatter

from adapters.definitions import Metric
from adapters.observability import logger, metrics, put_count, put_seconds
from domain.run import Run, RunStatus
from service.run_ports import AttemptReport, RunTelemetry


class PowertoolsTelemetry(RunTelemetry):
    """Attempts as JSON log lines, runs as CloudWatch metrics (EMF).

    Where metrics are off (``POWERTOOLS_METRICS_DISABLED``, the local stack's
    default), they are not even added: about 50 us a run in bench/burst.py.
    """

    def __init__(self) -> None:
        from aws_lambda_powertools.metrics.functions import is_metrics_disabled

        self.metrics_on = not is_metrics_disabled()

    def attempt_started(self, run: Run, late_by_s: float) -> None:
        if not self.metrics_on:
            return
        put_count(Metric.RUN_ATTEMPTS, 1)
        if run.attempts == 1:
            put_seconds(Metric.START_LATENESS, late_by_s)

    def attempt_ended(self, report: AttemptReport) -> None:
        # What an operator finds a run by and reads of it. The occurrence id
        # names the schedule, version and scheduled_at (``parse_occurrence_id``):
        # the version is not repeated, the schedule id is (the runbook filters
        # on it). An attempt without an error has no ``error`` key, one without
        # an HTTP answer no ``status_code``.
        line = {
            "occurrence_id": report.occurrence_id,
            "schedule_id": report.schedule_id,
            "attempt": report.attempt,
            "status": report.status,
            "duration_s": round(report.duration_s, 3),
            "late_by_s": round(report.late_by_s, 3),
            "error": report.error or None,
            "status_code": report.status_code,
        }
        level = logging.INFO if report.status in ("succeeded", "accepted") else logging.WARNING
        if _attempt_line(logger(), level, line):
            return
        if level == logging.INFO:
            logger().info("attempt", extra=line)
        else:
            logger().warning("attempt", extra=line)

    def run_retried(self, run: Run, delay_s: float) -> None:
        if not self.metrics_on:
            return
        put_count(Metric.RUNS_RETRIED, 1)

    def run_ended(self, run: Run) -> None:
        if not self.metrics_on:
            return
        if run.status is RunStatus.SUCCEEDED:
            put_count(Metric.RUNS_SUCCEEDED, 1)
        elif run.status is RunStatus.FAILED:
            put_count(Metric.RUNS_FAILED, 1)


class _Instant:
    """What a Powertools formatter's ``formatTime`` reads of a log record."""

    __slots__ = ("created", "msecs")

    def __init__(self, created: float) -> None:
        self.created = created
        self.msecs = (created - int(created)) * 1000


def _attempt_line(log: Logger, level: int, fields: dict[str, Any]) -> bool:
    """Write the attempt line as Powertools would, without a ``LogRecord``.

    The same keys in the same order (the formatter's own keys and their
    ``%(...)s`` templates, the message, the X-Ray trace id, then ``fields``,
    None values left out), the formatter's timestamp and JSON serializer, the
    handler's stream and lock: about 15 us a line against 35 through
    ``logging`` (bench/burst.py), at one line per attempt. Returns False when
    the logger has something this path does not reproduce (filters, another
    handler or formatter, per-thread keys, a key template it cannot fill);
    the caller then logs through Powertools."""
    inner: logging.Logger = log._logger
    if not inner.isEnabledFor(level):
        return True
    formatter = log.registered_formatter
    handler = log.registered_handler
    if (
        type(formatter) is not LambdaPowertoolsFormatter
        or type(handler) is not logging.StreamHandler
        or _handled_above(inner)
        or inner.filters
        or handler.filters
        or len(inner.handlers) != 1
        or inner.handlers[0] is not handler
        or level < handler.level
        or formatter.thread_safe_get_current_keys()
    ):
        return False
    caller = sys._getframe(1)
    now = time.time()
    values = {
        "levelname": logging.getLevelName(level),
        "funcName": caller.f_code.co_name,
        "lineno": caller.f_lineno,
        "asctime": formatter.formatTime(_Instant(now)),  # type: ignore[arg-type]
    }
    out: dict[str, Any] = {}
    try:
        for key, value in formatter.log_format.items():
            out[key] = value % values if value and key in RESERVED_LOG_ATTRS else value
    except (KeyError, TypeError, ValueError):
        return False
    out.update(fields)
    out["message"] = "attempt"
    out["xray_trace_id"] = formatter._get_latest_trace_id()
    out = {key: value for key, value in out.items() if value is not None}
    text = formatter.serialize(out)
    handler.acquire()
    try:
        handler.stream.write(text + handler.terminator)
        handler.flush()
    finally:
        handler.release()
    return True


def _handled_above(log: logging.Logger) -> bool:
    """Whether a record of ``log`` would also reach a handler of an ancestor
    (a test's log capture, an application's ``logging`` setup)."""
    current = log
    while current.propagate and current.parent is not None:
        current = current.parent
        if current.handlers:
            return True
    return False


def flush_metrics() -> None:
    """Publish what was added; a pass with nothing to report is not worth a warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        metrics().flush_metrics()


class LockedTelemetry(RunTelemetry):
    """Telemetry shared by the records of one batch, one report at a time."""

    def __init__(self, inner: RunTelemetry) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def attempt_started(self, run: Run, late_by_s: float) -> None:
        with self._lock:
            self._inner.attempt_started(run, late_by_s)

    def attempt_ended(self, report: AttemptReport) -> None:
        with self._lock:
            self._inner.attempt_ended(report)

    def run_retried(self, run: Run, delay_s: float) -> None:
        with self._lock:
            self._inner.run_retried(run, delay_s)

    def run_ended(self, run: Run) -> None:
        with self._lock:
            self._inner.run_ended(run)
