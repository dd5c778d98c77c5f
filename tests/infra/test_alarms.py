"""Alarms: silence is an alarm, and every one of them reaches the SNS topic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.definitions import METRICS_NAMESPACE, Metric
from tests.infra.conftest import Synthesized
from tests.infra.helpers import function, logical_id, only, resources

# The stack's own metrics carry service=<stack name>, as its functions emit them.
OWN_DIMENSIONS = [{"Name": "service", "Value": "Duetime"}]

# alarm id: (namespace, metric, statistic, period, threshold, comparison,
#            missing data, evaluation periods)
EXPECTED = {
    "TickHeartbeatMissing": (
        METRICS_NAMESPACE, Metric.TICK_HEARTBEAT, "Sum", 60, 1,
        "LessThanThreshold", "breaching", 3,
    ),
    # New dead letters in the last 5 minutes, not "the DLQ holds one": it clears
    # by itself, and a run that failed for good is no dead letter.
    "DeadLettersArrived": (
        METRICS_NAMESPACE, Metric.DEAD_LETTERED, "Sum", 300, 0,
        "GreaterThanThreshold", "notBreaching", 1,
    ),
    "ScheduleDlqNotEmpty": (
        "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 60, 0,
        "GreaterThanThreshold", "notBreaching", 1,
    ),
    "TickErrors": (
        "AWS/Lambda", "Errors", "Sum", 60, 1,
        "GreaterThanOrEqualToThreshold", "notBreaching", 3,
    ),
    "WorkerErrors": (
        "AWS/Lambda", "Errors", "Sum", 300, 1,
        "GreaterThanOrEqualToThreshold", "notBreaching", 1,
    ),
    "WatchdogErrors": (
        "AWS/Lambda", "Errors", "Sum", 300, 1,
        "GreaterThanOrEqualToThreshold", "notBreaching", 1,
    ),
    "WatchdogSilent": (
        "AWS/Lambda", "Invocations", "Sum", 300, 1,
        "LessThanThreshold", "breaching", 3,
    ),
    "DispatchLagHigh": (
        METRICS_NAMESPACE, Metric.DISPATCH_LAG, "p99", 300, 60,
        "GreaterThanThreshold", "notBreaching", 2,
    ),
    "StartLatenessHigh": (
        METRICS_NAMESPACE, Metric.START_LATENESS, "p99", 300, 10,
        "GreaterThanThreshold", "notBreaching", 2,
    ),
    "SchedulesOverdue": (
        METRICS_NAMESPACE, Metric.OVERDUE_SCHEDULES, "Maximum", 300, 0,
        "GreaterThanThreshold", "notBreaching", 1,
    ),
}  # fmt: skip


def alarm(template: dict[str, Any], name: str, stack: str = "Duetime") -> dict[str, Any]:
    _, found = only(template, "AWS::CloudWatch::Alarm", AlarmName=f"{stack}-{name}")
    props: dict[str, Any] = found["Properties"]
    return props


def test_there_are_exactly_the_expected_alarms(template: dict[str, Any]) -> None:
    names = {
        a["Properties"]["AlarmName"] for a in resources(template, "AWS::CloudWatch::Alarm").values()
    }
    assert names == {f"Duetime-{name}" for name in EXPECTED}


@pytest.mark.parametrize("name", EXPECTED)
def test_alarm_metric_threshold_and_missing_data(template: dict[str, Any], name: str) -> None:
    namespace, metric, statistic, period, threshold, comparison, missing, periods = EXPECTED[name]
    props = alarm(template, name)
    assert props["Namespace"] == namespace
    assert props["MetricName"] == metric
    if statistic.startswith("p"):
        assert props["ExtendedStatistic"] == statistic
    else:
        assert props["Statistic"] == statistic
    assert props["Period"] == period
    assert props["Threshold"] == threshold
    assert props["ComparisonOperator"] == comparison
    assert props["TreatMissingData"] == missing
    assert props["EvaluationPeriods"] == periods
    if namespace == METRICS_NAMESPACE:
        # Powertools Metrics emits exactly this one dimension.
        assert props["Dimensions"] == OWN_DIMENSIONS


def test_silence_alarms_need_every_period_silent(template: dict[str, Any]) -> None:
    for name in ("TickHeartbeatMissing", "WatchdogSilent"):
        props = alarm(template, name)
        assert props["DatapointsToAlarm"] == props["EvaluationPeriods"]


@pytest.mark.parametrize(
    ("name", "handler"),
    [
        ("TickErrors", "handlers.tick.handler"),
        ("WorkerErrors", "handlers.worker.handler"),
        ("WatchdogErrors", "handlers.watchdog.handler"),
        ("WatchdogSilent", "handlers.watchdog.handler"),
    ],
)
def test_function_alarms_watch_their_function(
    template: dict[str, Any], name: str, handler: str
) -> None:
    function_id, _ = function(template, handler)
    assert alarm(template, name)["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": function_id}}
    ]


@pytest.mark.parametrize(
    ("name", "queue_prefix"),
    [("ScheduleDlqNotEmpty", "ScheduleDlq")],
)
def test_dlq_alarms_watch_their_queue(
    template: dict[str, Any], name: str, queue_prefix: str
) -> None:
    queue_id = logical_id(template, "AWS::SQS::Queue", queue_prefix)
    assert alarm(template, name)["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}
    ]


def test_every_alarm_notifies_the_topic_when_raised_and_cleared(template: dict[str, Any]) -> None:
    topic_id, _ = only(template, "AWS::SNS::Topic")
    for found in resources(template, "AWS::CloudWatch::Alarm").values():
        props = found["Properties"]
        assert props["AlarmActions"] == [{"Ref": topic_id}]
        assert props["OKActions"] == [{"Ref": topic_id}]


def test_the_dispatch_lag_threshold_is_a_setting(synthesized: Synthesized) -> None:
    props = alarm(synthesized.template("DuetimeSandbox"), "DispatchLagHigh", "DuetimeSandbox")
    assert props["Threshold"] == 30


def test_email_subscription_is_a_parameter_and_only_exists_when_given(
    synthesized: Synthesized,
) -> None:
    for stack, default in (("Duetime", ""), ("DuetimeSandbox", "ops@example.com")):
        t = synthesized.template(stack)
        assert t["Parameters"]["AlarmEmail"]["Default"] == default
        topic_id, _ = only(t, "AWS::SNS::Topic")
        _, subscription = only(t, "AWS::SNS::Subscription")
        assert subscription["Properties"] == {
            "Protocol": "email",
            "Endpoint": {"Ref": "AlarmEmail"},
            "TopicArn": {"Ref": topic_id},
        }
        condition = t["Conditions"][subscription["Condition"]]
        assert condition == {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]}


def test_the_topic_refuses_plain_http(template: dict[str, Any]) -> None:
    _, policy = only(template, "AWS::SNS::TopicPolicy")
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )


@pytest.mark.parametrize("stack", ["Duetime", "DuetimeSandbox"])
def test_own_metric_alarms_watch_the_service_their_own_functions_emit(
    synthesized: Synthesized, stack: str
) -> None:
    # Two stacks side by side: each alarm asks for the dimension value its own
    # functions write, so one stack's heartbeat cannot keep another's alarm OK.
    t = synthesized.template(stack)
    services = {
        fn["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
        for fn in resources(t, "AWS::Lambda::Function").values()
        if "POWERTOOLS_SERVICE_NAME" in fn["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert services == {stack}
    own = [
        a["Properties"]
        for a in resources(t, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Namespace") == METRICS_NAMESPACE
    ]
    assert len(own) == sum(1 for spec in EXPECTED.values() if spec[0] == METRICS_NAMESPACE)
    for props in own:
        assert props["Dimensions"] == [{"Name": "service", "Value": stack}]


def test_only_this_stacks_alarms_may_publish_to_the_alarm_topic(template: dict[str, Any]) -> None:
    [policy] = resources(template, "AWS::SNS::TopicPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    [allow] = [s for s in statements if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source = json.dumps(allow["Condition"]["ArnLike"]["aws:SourceArn"])
    assert ":cloudwatch:" in source and ":alarm:Duetime-*" in source
    # the Deny of plain HTTP stays
    assert any(s["Effect"] == "Deny" for s in statements)
