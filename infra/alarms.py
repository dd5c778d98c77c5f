"""Alarms, all to one SNS topic: silence is an alarm, and so is every failure mode.

The watchdog publishes to the same topic one message per schedule whose
verdict changes, so a subscriber learns which schedule the overdue alarm means.

Subscribe with the AlarmEmail stack parameter (or the duetime:alarmEmail
context setting, its default); AWS mails a confirmation link first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aws_cdk import ArnFormat, CfnCondition, CfnParameter, Duration, Fn, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from adapters.definitions import ENV_ALERT_MIN_INTERVAL_S, ENV_ALERT_TOPIC_ARN, Metric
from infra.functions import Functions
from infra.metrics import metric, metrics_service
from infra.nag import acknowledge
from infra.settings import Settings

Cmp = cloudwatch.ComparisonOperator
Missing = cloudwatch.TreatMissingData

ONE_MINUTE: Final = Duration.minutes(1)
FIVE_MINUTES: Final = Duration.minutes(5)


@dataclass(frozen=True)
class AlarmSpec:
    id: str
    description: str
    metric: cloudwatch.IMetric
    threshold: float
    comparison: cloudwatch.ComparisonOperator
    missing: cloudwatch.TreatMissingData
    evaluation_periods: int = 1
    datapoints_to_alarm: int | None = None


class Alarms(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: Settings,
        functions: Functions,
        schedule_dlq: sqs.IQueue,
    ) -> None:
        super().__init__(scope, id)
        self.topic = sns.Topic(self, "Topic", display_name="duetime alarms", enforce_ssl=True)
        acknowledge(
            self.topic,
            "AwsSolutions-SNS2",
            "Alarm notifications carry alarm names and metric values only. CloudWatch "
            "cannot publish to a topic encrypted with the AWS managed SNS key, and a "
            "customer managed key would be the stack's only KMS cost.",
        )
        self._subscribe_email(settings.alarm_email)
        self._allow_cloudwatch_to_publish()
        self._let_the_watchdog_publish(functions, settings)
        service = metrics_service(self)

        self.specs = (
            AlarmSpec(
                "TickHeartbeatMissing",
                "The tick has not reported a heartbeat for 3 minutes: nothing is being "
                "dispatched. Missing data counts as breaching.",
                metric(Metric.TICK_HEARTBEAT, service=service, period=ONE_MINUTE),
                threshold=1,
                comparison=Cmp.LESS_THAN_THRESHOLD,
                missing=Missing.BREACHING,
                evaluation_periods=3,
                datapoints_to_alarm=3,
            ),
            AlarmSpec(
                "DeadLettersArrived",
                "New delivery intents reached the dead-letter queue in the last 5 minutes: "
                "SQS moved messages no worker finished with (the sweep closed their runs "
                "as failed), or the worker met messages it cannot run. A run that failed "
                "for good (a target answering 410) is not a dead letter. Clears by itself "
                "once no new ones arrive.",
                metric(Metric.DEAD_LETTERED, service=service, statistic="Sum", period=FIVE_MINUTES),
                threshold=0,
                comparison=Cmp.GREATER_THAN_THRESHOLD,
                missing=Missing.NOT_BREACHING,
            ),
            AlarmSpec(
                "ScheduleDlqNotEmpty",
                "EventBridge Scheduler could not invoke the tick or the watchdog.",
                schedule_dlq.metric_approximate_number_of_messages_visible(
                    period=ONE_MINUTE, statistic="Maximum"
                ),
                threshold=0,
                comparison=Cmp.GREATER_THAN_THRESHOLD,
                missing=Missing.NOT_BREACHING,
            ),
            AlarmSpec(
                "TickErrors",
                "The tick function failed.",
                functions.tick.function.metric_errors(period=ONE_MINUTE, statistic="Sum"),
                threshold=1,
                comparison=Cmp.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                missing=Missing.NOT_BREACHING,
                evaluation_periods=3,
                datapoints_to_alarm=2,
            ),
            AlarmSpec(
                "WorkerErrors",
                "The worker function failed whole invocations (a failed run is a "
                "partial batch failure and does not count here).",
                functions.worker.function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                threshold=1,
                comparison=Cmp.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                missing=Missing.NOT_BREACHING,
            ),
            AlarmSpec(
                "WatchdogErrors",
                "The watchdog function failed: late and overdue schedules go unnoticed.",
                functions.watchdog.function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                threshold=1,
                comparison=Cmp.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                missing=Missing.NOT_BREACHING,
            ),
            AlarmSpec(
                "WatchdogSilent",
                "The watchdog has not run for 15 minutes. Missing data counts as breaching.",
                functions.watchdog.function.metric_invocations(
                    period=FIVE_MINUTES, statistic="Sum"
                ),
                threshold=1,
                comparison=Cmp.LESS_THAN_THRESHOLD,
                missing=Missing.BREACHING,
                evaluation_periods=3,
                datapoints_to_alarm=3,
            ),
            AlarmSpec(
                "DispatchLagHigh",
                f"p99 of admitted_at - scheduled_at is above "
                f"{settings.dispatch_lag_p99_threshold_s}s for 10 minutes.",
                metric(Metric.DISPATCH_LAG, service=service, statistic="p99", period=FIVE_MINUTES),
                threshold=settings.dispatch_lag_p99_threshold_s,
                comparison=Cmp.GREATER_THAN_THRESHOLD,
                missing=Missing.NOT_BREACHING,
                evaluation_periods=2,
                datapoints_to_alarm=2,
            ),
            AlarmSpec(
                "StartLatenessHigh",
                f"p99 of started_at - scheduled_at of first attempts is above "
                f"{settings.start_lateness_p99_threshold_s}s for 10 minutes: runs start late "
                "(the worker is throttled or capped, or intents reach it late).",
                metric(
                    Metric.START_LATENESS, service=service, statistic="p99", period=FIVE_MINUTES
                ),
                threshold=settings.start_lateness_p99_threshold_s,
                comparison=Cmp.GREATER_THAN_THRESHOLD,
                missing=Missing.NOT_BREACHING,
                evaluation_periods=2,
                datapoints_to_alarm=2,
            ),
            AlarmSpec(
                "SchedulesOverdue",
                "The watchdog found schedules whose last success is older than their "
                "interval plus grace.",
                metric(
                    Metric.OVERDUE_SCHEDULES,
                    service=service,
                    statistic="Maximum",
                    period=FIVE_MINUTES,
                ),
                threshold=0,
                comparison=Cmp.GREATER_THAN_THRESHOLD,
                missing=Missing.NOT_BREACHING,
            ),
        )
        action = actions.SnsAction(self.topic)
        stack_name = Stack.of(self).stack_name
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        for spec in self.specs:
            alarm = cloudwatch.Alarm(
                self,
                spec.id,
                alarm_name=f"{stack_name}-{spec.id}",
                alarm_description=spec.description,
                metric=spec.metric,
                threshold=spec.threshold,
                comparison_operator=spec.comparison,
                treat_missing_data=spec.missing,
                evaluation_periods=spec.evaluation_periods,
                datapoints_to_alarm=spec.datapoints_to_alarm,
            )
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)
            self.alarms[spec.id] = alarm

    def _let_the_watchdog_publish(self, functions: Functions, settings: Settings) -> None:
        """Beside the aggregate alarm, the watchdog publishes one message per schedule
        whose verdict changes (service/alerts.py): Publish on this topic, nothing else."""
        watchdog = functions.watchdog
        watchdog.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sns:Publish"], resources=[self.topic.topic_arn])
        )
        watchdog.function.add_environment(ENV_ALERT_TOPIC_ARN, self.topic.topic_arn)
        watchdog.function.add_environment(
            ENV_ALERT_MIN_INTERVAL_S, str(settings.alert_min_interval_s)
        )

    def _allow_cloudwatch_to_publish(self) -> None:
        """The topic's policy names CloudWatch as the one publisher, for this
        stack's alarms only (``enforce_ssl`` adds only a Deny for plain HTTP)."""
        stack = Stack.of(self)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                effect=iam.Effect.ALLOW,
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name=f"{stack.stack_name}-*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                },
            )
        )

    def _subscribe_email(self, default: str) -> None:
        email = CfnParameter(
            self,
            "AlarmEmail",
            type="String",
            default=default,
            allowed_pattern=r"^$|^[^@\s]+@[^@\s]+\.[^@\s]+$",
            description="Email address that receives duetime alarms (empty: none).",
        )
        email.override_logical_id("AlarmEmail")
        has_email = CfnCondition(
            self,
            "HasAlarmEmail",
            expression=Fn.condition_not(Fn.condition_equals(email.value_as_string, "")),
        )
        subscription = sns.CfnSubscription(
            self,
            "EmailSubscription",
            protocol="email",
            endpoint=email.value_as_string,
            topic_arn=self.topic.topic_arn,
        )
        subscription.cfn_options.condition = has_email
