"""EventBridge Scheduler: the tick every minute, the watchdog and the dead-letter
sweep (the worker, ``{"duetime": "sweep"}``) on their own rates.

EventBridge Scheduler only wakes duetime's own functions; the occurrences of
user schedules are computed by duetime. Invocations the scheduler cannot make
after its retries land in a dead-letter queue that raises an alarm.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import CfnElement, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge

TICK_RATE: Final = Duration.minutes(1)
WATCHDOG_RATE: Final = Duration.minutes(5)

# A tick that cannot start within two minutes is superseded by later ones.
TICK_RETRIES: Final = 3
TICK_MAX_EVENT_AGE: Final = Duration.minutes(2)
WATCHDOG_RETRIES: Final = 3
WATCHDOG_MAX_EVENT_AGE: Final = Duration.minutes(10)
# The dead-letter sweep (handlers/sweep.py): a missed one is made up by the next.
SWEEP_RATE: Final = Duration.minutes(5)
SWEEP_RETRIES: Final = 1
SWEEP_MAX_EVENT_AGE: Final = Duration.minutes(5)


class Schedules(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        tick: lambda_.IFunction,
        watchdog: lambda_.IFunction,
        worker: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
    ) -> None:
        super().__init__(scope, id)
        self.tick = _every(
            self,
            "Tick",
            tick,
            TICK_RATE,
            "duetime tick: plan and dispatch due occurrences",
            dead_letter_queue,
            TICK_RETRIES,
            TICK_MAX_EVENT_AGE,
        )
        self.watchdog = _every(
            self,
            "Watchdog",
            watchdog,
            WATCHDOG_RATE,
            "duetime watchdog: flag late and overdue schedules",
            dead_letter_queue,
            WATCHDOG_RETRIES,
            WATCHDOG_MAX_EVENT_AGE,
        )
        self.sweep = _every(
            self,
            "DeadLetterSweep",
            worker,
            SWEEP_RATE,
            "duetime dead-letter sweep: close runs whose message SQS dead-lettered",
            dead_letter_queue,
            SWEEP_RETRIES,
            SWEEP_MAX_EVENT_AGE,
            {"duetime": "sweep"},
        )


def _every(
    scope: Construct,
    id: str,
    function: lambda_.IFunction,
    rate: Duration,
    description: str,
    dead_letter_queue: sqs.IQueue,
    retries: int,
    max_event_age: Duration,
    fields: dict[str, str] | None = None,
) -> scheduler.Schedule:
    # The payload carries the nominal fire time: the tick logs how late an
    # invocation started (invocation_late_s). What it plans and admits comes
    # from durable state, so a late or retried invocation covers its minute.
    # ``fields`` tell a function what to do (the worker: sweep).
    payload = scheduler.ScheduleTargetInput.from_object(
        {
            "source": "duetime.scheduler",
            "scheduled_at": scheduler.ContextAttribute.scheduled_time,
            **(fields or {}),
        }
    )
    role = iam.Role(
        scope,
        f"{id}Role",
        description=f"EventBridge Scheduler: invoke the {id.lower()} function only",
        # Only schedules of this account may use the role (confused deputy).
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com",
            conditions={"StringEquals": {"aws:SourceAccount": Stack.of(scope).account}},
        ),
    )
    stack = Stack.of(scope)
    function_id = stack.resolve(stack.get_logical_id(_cfn(function)))
    acknowledge(
        role,
        f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]",
        "lambda:InvokeFunction on the function and its versions (ARN:*), which is "
        "how CDK grants invoke; the role can invoke this one function and nothing else.",
    )
    return scheduler.Schedule(
        scope,
        id,
        schedule=scheduler.ScheduleExpression.rate(rate),
        description=description,
        time_window=scheduler.TimeWindow.off(),
        target=targets.LambdaInvoke(
            function,
            input=payload,
            dead_letter_queue=dead_letter_queue,
            retry_attempts=retries,
            max_event_age=max_event_age,
            role=role,
        ),
    )


def _cfn(function: lambda_.IFunction) -> CfnElement:
    resource = function.node.default_child
    if not isinstance(resource, CfnElement):
        raise TypeError(f"{function.node.path} is not a function defined in this app")
    return resource
