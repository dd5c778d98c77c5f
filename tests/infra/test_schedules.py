"""EventBridge Scheduler wakes the tick every minute and the watchdog on its own rate."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Match

from tests.infra.helpers import function, logical_id, only, statements


def test_the_tick_fires_every_minute_exactly_with_retries_and_a_dlq(
    template: dict[str, Any], cdk_template: Any
) -> None:
    tick_id, _ = function(template, "handlers.tick.handler")
    dlq_id = logical_id(template, "AWS::SQS::Queue", "ScheduleDlq")
    cdk_template.has_resource_properties(
        "AWS::Scheduler::Schedule",
        {
            "ScheduleExpression": "rate(1 minute)",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "State": "ENABLED",
            "Target": Match.object_like(
                {
                    "Arn": {"Fn::GetAtt": [tick_id, "Arn"]},
                    "RetryPolicy": {
                        "MaximumRetryAttempts": Match.any_value(),
                        "MaximumEventAgeInSeconds": Match.any_value(),
                    },
                    "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [dlq_id, "Arn"]}},
                }
            ),
        },
    )
    _, schedule = only(template, "AWS::Scheduler::Schedule", ScheduleExpression="rate(1 minute)")
    retry = schedule["Properties"]["Target"]["RetryPolicy"]
    assert retry["MaximumRetryAttempts"] >= 1
    # A tick older than a couple of minutes is superseded by the later ones.
    assert 60 <= retry["MaximumEventAgeInSeconds"] <= 300


def test_the_tick_is_told_which_minute_it_stands_for(template: dict[str, Any]) -> None:
    _, schedule = only(template, "AWS::Scheduler::Schedule", ScheduleExpression="rate(1 minute)")
    payload = json.loads(schedule["Properties"]["Target"]["Input"])
    assert payload["scheduled_at"] == "<aws.scheduler.scheduled-time>"


def test_the_watchdog_runs_on_its_own_schedule(template: dict[str, Any], cdk_template: Any) -> None:
    watchdog_id, _ = function(template, "handlers.watchdog.handler")
    cdk_template.has_resource_properties(
        "AWS::Scheduler::Schedule",
        {
            "ScheduleExpression": "rate(5 minutes)",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": Match.object_like({"Arn": {"Fn::GetAtt": [watchdog_id, "Arn"]}}),
        },
    )


def test_each_scheduler_role_invokes_only_its_function_for_this_account(
    template: dict[str, Any],
) -> None:
    for handler in (
        "handlers.tick.handler",
        "handlers.watchdog.handler",
        "handlers.worker.handler",
    ):
        function_id, _ = function(template, handler)
        _, schedule = only(template, "AWS::Scheduler::Schedule", Target=_targeting(function_id))
        role_id = schedule["Properties"]["Target"]["RoleArn"]["Fn::GetAtt"][0]
        trust = template["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]
        (principal,) = trust["Statement"]
        assert principal["Principal"] == {"Service": "scheduler.amazonaws.com"}
        assert principal["Condition"] == {
            "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
        }
        invokes = [
            s for s in statements(template, role_id) if s["Action"] == "lambda:InvokeFunction"
        ]
        assert invokes
        for statement in invokes:
            assert all(function_id in json.dumps(r) for r in statement["Resource"])


def _targeting(function_id: str) -> Any:
    """Matches (==) the Target of a schedule that invokes ``function_id``."""

    class Targeting:
        def __eq__(self, target: object) -> bool:
            return isinstance(target, dict) and target.get("Arn") == {
                "Fn::GetAtt": [function_id, "Arn"]
            }

    return Targeting()


def test_the_dead_letter_sweep_runs_in_the_worker_every_five_minutes(
    template: dict[str, Any],
) -> None:
    # Without it, a run whose intent SQS dead-lettered by itself stays open forever.
    worker_id, _ = function(template, "handlers.worker.handler")
    _, schedule = only(template, "AWS::Scheduler::Schedule", Target=_targeting(worker_id))
    assert schedule["Properties"]["ScheduleExpression"] == "rate(5 minutes)"
    payload = json.loads(schedule["Properties"]["Target"]["Input"])
    assert payload["duetime"] == "sweep"
