"""duetime's own CloudWatch metrics, as the handlers emit them.

Powertools Metrics writes EMF with the namespace METRICS_NAMESPACE and the
single dimension ``service``, whose value is the function's
POWERTOOLS_SERVICE_NAME. The stack sets it to its own name, so two stacks in
one account and region (docs/deploy.md) keep apart: one stack's heartbeat
cannot keep another's alarm quiet, and each dashboard shows its own stack.
Alarms and the dashboard ask for exactly that dimension.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from adapters.definitions import METRICS_NAMESPACE

DEFAULT_PERIOD = Duration.minutes(5)


def metrics_service(scope: Construct) -> str:
    """The ``service`` dimension of the stack's own metrics: the stack's name."""
    return Stack.of(scope).stack_name


def metric(
    name: str,
    *,
    service: str,
    statistic: str = "Sum",
    period: Duration = DEFAULT_PERIOD,
    label: str | None = None,
) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service},
        statistic=statistic,
        period=period,
        label=label,
    )
