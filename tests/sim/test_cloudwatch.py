"""Alarms are evaluated on the datapoints with their own settings, as CloudWatch does."""

from __future__ import annotations

import json
from typing import Any

from sim.cloudwatch import MetricStore, evaluate

HEARTBEAT: dict[str, Any] = {
    "Namespace": "app",
    "MetricName": "Beat",
    "Dimensions": [{"Name": "service", "Value": "x"}],
    "Period": 60,
    "EvaluationPeriods": 3,
    "DatapointsToAlarm": 3,
    "Threshold": 1,
    "ComparisonOperator": "LessThanThreshold",
    "Statistic": "Sum",
    "TreatMissingData": "breaching",
}


def _beats(store: MetricStore, minutes: range) -> None:
    for minute in minutes:
        store.put("app", "Beat", {"service": "x"}, minute * 60 + 1, 1.0)


def test_missing_data_treated_as_breaching_fires_after_the_evaluation_periods() -> None:
    store = MetricStore()
    _beats(store, range(0, 5))
    _beats(store, range(12, 20))
    history = evaluate(HEARTBEAT, store, 0, 20 * 60, "a")
    # minutes 5, 6, 7 missing: ALARM at the end of minute 7 (480 s); OK again after minute 12.
    assert history.into_alarm_s == [480.0]
    assert history.out_of_alarm_s == [780.0]
    assert history.final_state == "OK"


def test_a_beat_with_another_dimension_does_not_keep_the_alarm_ok() -> None:
    store = MetricStore()
    for minute in range(10):
        store.put("app", "Beat", {"service": "y"}, minute * 60 + 1, 1.0)
    assert evaluate(HEARTBEAT, store, 0, 600, "a").fired


def test_not_breaching_missing_data_never_fires() -> None:
    alarm = {**HEARTBEAT, "TreatMissingData": "notBreaching"}
    assert not evaluate(alarm, MetricStore(), 0, 3600, "a").fired


def test_datapoints_to_alarm_needs_that_many_breaching_periods() -> None:
    alarm = {
        **HEARTBEAT,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "DatapointsToAlarm": 2,
    }
    one = MetricStore()
    one.put("app", "Beat", {"service": "x"}, 61, 1.0)
    assert not evaluate(alarm, one, 0, 600, "a").fired
    two = MetricStore()
    two.put("app", "Beat", {"service": "x"}, 61, 1.0)
    two.put("app", "Beat", {"service": "x"}, 181, 1.0)
    assert evaluate(alarm, two, 0, 600, "a").into_alarm_s == [240.0]


def test_emf_lines_become_datapoints_with_their_dimensions() -> None:
    store = MetricStore()
    line = json.dumps(
        {
            "_aws": {
                "Timestamp": 120_000,
                "CloudWatchMetrics": [
                    {"Namespace": "app", "Dimensions": [["service"]], "Metrics": [{"Name": "Beat"}]}
                ],
            },
            "service": "x",
            "Beat": [1, 1],
        }
    )
    assert store.read_emf(["not json", line], 0) == 2
    assert store.points[("app", "Beat", frozenset({("service", "x")}))] == [(120.0, 1.0)] * 2
