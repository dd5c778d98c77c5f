"""One CloudWatch dashboard: what was admitted, how runs ended, how late, what waits."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from adapters.definitions import Metric
from infra.alarms import Alarms
from infra.metrics import metric, metrics_service

PERIOD = Duration.minutes(1)
WIDTH = 12


def _sums(service: str, *names: str) -> list[cloudwatch.IMetric]:
    return [metric(name, service=service, period=PERIOD, label=name) for name in names]


def _percentiles(service: str, name: str, *stats: str) -> list[cloudwatch.IMetric]:
    return [
        metric(name, service=service, statistic=stat, period=PERIOD, label=f"{name} {stat}")
        for stat in stats
    ]


class Dashboard(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        alarms: Alarms,
        delivery_dlq: sqs.IQueue,
        delivery_queue: sqs.IQueue,
        schedule_dlq: sqs.IQueue,
    ) -> None:
        super().__init__(scope, id)
        service = metrics_service(self)
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{Stack.of(self).stack_name}-duetime",
            default_interval=Duration.hours(3),
        )

        def graph(
            title: str, left: list[cloudwatch.IMetric], **kwargs: object
        ) -> cloudwatch.GraphWidget:
            return cloudwatch.GraphWidget(title=title, left=left, width=WIDTH, **kwargs)  # type: ignore[arg-type]

        self.dashboard.add_widgets(
            graph(
                "Admissions",
                _sums(
                    service,
                    Metric.OCCURRENCES_MATERIALIZED,
                    Metric.OCCURRENCES_ADMITTED,
                    Metric.OCCURRENCES_SKIPPED,
                    Metric.OCCURRENCES_EXPIRED,
                ),
                stacked=False,
            ),
            graph(
                "Runs by status",
                _sums(service, Metric.RUNS_SUCCEEDED, Metric.RUNS_FAILED, Metric.RUNS_RETRIED),
            ),
        )
        self.dashboard.add_widgets(
            graph(
                "Dispatch lag (s): admitted_at - scheduled_at",
                _percentiles(service, Metric.DISPATCH_LAG, "p50", "p90", "p99", "Maximum"),
            ),
            graph(
                "Start lateness (s): started_at - scheduled_at",
                _percentiles(service, Metric.START_LATENESS, "p50", "p90", "p99", "Maximum"),
            ),
        )
        self.dashboard.add_widgets(
            graph("Attempts started", _sums(service, Metric.RUN_ATTEMPTS)),
            graph(
                "Queues",
                [
                    delivery_queue.metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic="Maximum", label="delivery queue"
                    ),
                    delivery_dlq.metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic="Maximum", label="delivery DLQ"
                    ),
                    schedule_dlq.metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic="Maximum", label="scheduler DLQ"
                    ),
                ],
            ),
        )
        self.dashboard.add_widgets(
            graph(
                "Schedules late and overdue (watchdog)",
                [
                    metric(
                        Metric.OVERDUE_SCHEDULES,
                        service=service,
                        statistic="Maximum",
                        label="overdue",
                    ),
                    metric(
                        Metric.LATE_SCHEDULES, service=service, statistic="Maximum", label="late"
                    ),
                ],
            ),
            graph(
                "Tick heartbeat",
                _sums(service, Metric.TICK_HEARTBEAT),
                right=[
                    metric(
                        Metric.TICK_HEARTBEAT_AGE,
                        service=service,
                        statistic="Maximum",
                        label="heartbeat age (s, watchdog)",
                    )
                ],
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms", alarms=list(alarms.alarms.values()), width=2 * WIDTH
            )
        )
