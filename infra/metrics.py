"""duetime's own CloudWatch metrics, as the handlers emit them.

Powertools Metrics writes EMF with the namespace METRICS_NAMESPACE and the
single dimension service=SERVICE_NAME, so alarms and the dashboard must ask
for exactly that dimension.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from adapters.definitions import METRICS_NAMESPACE, SERVICE_NAME

DIMENSIONS = {"service": SERVICE_NAME}
DEFAULT_PERIOD = Duration.minutes(5)


def metric(
    name: str,
    *,
    statistic: str = "Sum",
    period: Duration = DEFAULT_PERIOD,
    label: str | None = None,
) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map=DIMENSIONS,
        statistic=statistic,
        period=period,
        label=label,
    )
