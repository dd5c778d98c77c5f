"""The dashboard shows admissions, runs by status, lag, attempts, DLQs and overdue schedules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.definitions import METRICS_NAMESPACE, Metric
from tests.infra.helpers import only


@pytest.fixture(scope="module")
def body(template: dict[str, Any]) -> str:
    _, dashboard = only(template, "AWS::CloudWatch::Dashboard")
    return json.dumps(dashboard["Properties"]["DashboardBody"])


@pytest.mark.parametrize(
    "metric",
    [
        Metric.OCCURRENCES_MATERIALIZED,
        Metric.OCCURRENCES_ADMITTED,
        Metric.OCCURRENCES_SKIPPED,
        Metric.OCCURRENCES_EXPIRED,
        Metric.RUNS_SUCCEEDED,
        Metric.RUNS_FAILED,
        Metric.RUNS_RETRIED,
        Metric.DISPATCH_LAG,
        Metric.START_LATENESS,
        Metric.RUN_ATTEMPTS,
        Metric.OVERDUE_SCHEDULES,
        Metric.LATE_SCHEDULES,
        Metric.TICK_HEARTBEAT,
        Metric.TICK_HEARTBEAT_AGE,
    ],
)
def test_dashboard_graphs_each_metric_with_the_service_dimension(body: str, metric: str) -> None:
    needle = f'\\"{METRICS_NAMESPACE}\\",\\"{metric}\\",\\"service\\",\\"Duetime\\"'
    assert needle in body


def test_dashboard_shows_lag_percentiles(body: str) -> None:
    for stat in ("p50", "p90", "p99"):
        assert f'\\"stat\\":\\"{stat}\\"' in body


def test_dashboard_shows_queue_depths(body: str) -> None:
    assert body.count("ApproximateNumberOfMessagesVisible") == 3
