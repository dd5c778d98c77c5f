"""The one place the Powertools logger and metrics are built.

No tracer: the functions do not enable X-Ray, and the X-Ray SDK is not a
dependency; structured logs carry the occurrence id through every step.

Built lazily: nothing here reads the environment at import time beyond what
Powertools itself reads when an object is first created.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from functools import lru_cache
from typing import IO, cast

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from adapters.definitions import METRIC_NAMES, METRICS_NAMESPACE, SERVICE_NAME


class _Stdout(io.TextIOBase):
    """Standard output as it is at each write, not as it was when the logger was built
    (a local stack or a test may swap ``sys.stdout`` after the first log line)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def service_name() -> str:
    """The ``service`` dimension of every metric and the service of every log
    line: the deployment's stack name, which the stack passes as
    POWERTOOLS_SERVICE_NAME, so two stacks in one account keep their metrics
    apart; SERVICE_NAME when unset (the local stack)."""
    return os.environ.get("POWERTOOLS_SERVICE_NAME") or SERVICE_NAME


def on_lambda() -> bool:
    """Whether this process is a Lambda function (Lambda sets the variable)."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def build_at_init(build: Callable[[], object], what: str) -> None:
    """A handler module's last statement on Lambda: build its container's clients in
    the init phase rather than in the first invocation (docs/decisions.md, "Why the
    worker builds its clients in Lambda's init phase"). A build that fails here is
    logged and left to the first invocation, which builds again and fails with the
    reason in its own error, instead of a function that cannot start."""
    try:
        build()
    except Exception:
        logger().exception(f"{what} not built in the init phase: its first invocation builds it")


# The keys Powertools puts on every line that duetime leaves out (a key set
# to None is left out), and why:
# - ``location`` (the logging call's function and line): the message names the
#   event, and an error carries its whole stack trace;
# - ``service``: the log group (one per function, named after the stack) says
#   it; on one machine every line is duetime's;
# - ``xray_trace_id``: the functions do not enable X-Ray, so the id Lambda
#   passes leads to no trace (and put 50 bytes on every line);
# - ``timestamp``, on Lambda only: CloudWatch Logs stamps every line it
#   receives (``@timestamp``, to the millisecond); on one machine the line
#   keeps it, as nothing else stamps standard output.
_TIMESTAMP = "%(asctime)s"  # Powertools' own template


def build_logger(service: str, *, lambda_function: bool) -> Logger:
    """A Powertools JSON logger whose lines carry ``level``, ``message``,
    ``timestamp`` (not on Lambda, see above) and each call's fields;
    errors logged with ``exception`` keep their exception and stack trace."""
    log = Logger(
        service=service,
        stream=cast(IO[str], _Stdout()),
        location=None,
        xray_trace_id=None,
        timestamp=None if lambda_function else _TIMESTAMP,
    )
    log.remove_keys(["service"])
    return log


@lru_cache(maxsize=1)
def logger() -> Logger:
    return build_logger(service_name(), lambda_function=on_lambda())


@lru_cache(maxsize=1)
def metrics() -> Metrics:
    return Metrics(namespace=METRICS_NAMESPACE, service=service_name())


def _declared(name: str) -> str:
    if name not in METRIC_NAMES:
        raise ValueError(
            f"{name!r} is not a declared metric (adapters.definitions.Metric): "
            "a metric no alarm or dashboard reads belongs on the log line"
        )
    return name


def put_count(name: str, count: int) -> None:
    """Add a count to this invocation's metrics, unless it is 0.

    CloudWatch bills a custom metric for each hour it receives data, so a
    zero sent every minute by an idle deployment costs the full $0.30 a
    month and tells the dashboard nothing a gap does not; the alarms on
    counts treat missing data as not breaching, or (the heartbeat, never 0)
    as breaching."""
    _declared(name)
    if count:
        metrics().add_metric(name=name, unit=MetricUnit.Count, value=count)


def put_seconds(name: str, seconds: float) -> None:
    """Add a duration (a lag, an age) to this invocation's metrics; 0 is a
    value here, part of its percentiles."""
    metrics().add_metric(name=_declared(name), unit=MetricUnit.Seconds, value=seconds)


def ledger_not_written(error: Exception) -> None:
    """A load ledger count that could not be written (service/planning/surge.py): that second
    may get no surge, and its runs are delivered all the same."""
    logger().warning(
        "load ledger not written: no surge for these seconds", extra={"error": repr(error)}
    )


def ledger_not_read(error: Exception) -> None:
    """A load ledger that could not be read before a pass plans early: the pass
    plans early up to its budget (the surge it would have shown is lost anyway)."""
    logger().warning(
        "load ledger not read: planning early up to the budget", extra={"error": repr(error)}
    )
