"""The delivery-intent queue and its dead-letter queue (from adapters.definitions),
the Scheduler's dead-letter queue and the smoke-test queue."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Tags
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from adapters.definitions import DELIVERY_QUEUE, QueueDefinition
from infra.nag import acknowledge


def secure_queue(scope: Construct, id: str, **props: object) -> sqs.Queue:
    """A standard queue with SQS-managed encryption that refuses plain HTTP."""
    return sqs.Queue(
        scope,
        id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        removal_policy=RemovalPolicy.DESTROY,
        **props,  # type: ignore[arg-type]
    )


class DeliveryQueues(Construct):
    """Delivery intents: one message per occurrence to run, redriven to a DLQ.

    The worker retries by changing a message's visibility, so the message is
    received once per attempt; the redrive limit comes from the definition and
    sits above the highest allowed max_attempts.
    """

    def __init__(
        self, scope: Construct, id: str, *, definition: QueueDefinition = DELIVERY_QUEUE
    ) -> None:
        super().__init__(scope, id)
        self.definition = definition
        self.dead_letter_queue = secure_queue(
            self,
            f"{definition.logical_id}Dlq",
            retention_period=Duration.days(14),
        )
        self.queue = secure_queue(
            self,
            definition.logical_id,
            visibility_timeout=Duration.seconds(definition.visibility_timeout_s),
            retention_period=Duration.seconds(definition.retention_s),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=definition.max_receive_count
            ),
        )
        for key, value in definition.tags.items():
            Tags.of(self).add(key, value)


class ScheduleDeadLetterQueue(Construct):
    """Where EventBridge Scheduler puts tick and watchdog invocations it gave up on."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.queue = secure_queue(self, "Queue", retention_period=Duration.days(14))
        acknowledge(
            self.queue,
            "AwsSolutions-SQS3",
            (
                "This queue is itself a dead-letter queue: EventBridge Scheduler's target "
                "DLQ for the tick and watchdog schedules, which cdk-nag cannot see from "
                "an SQS redrive policy. An alarm fires as soon as it holds a message."
            ),
        )


class SmokeQueue(Construct):
    """The target of ``duetime smoke``: one schedule delivers to it, and the
    person running the smoke test receives from it with their own credentials.

    Only the worker may send to it. Messages live ten minutes, so a smoke run
    that stopped half-way leaves nothing behind for long.
    """

    RETENTION = Duration.minutes(10)

    def __init__(self, scope: Construct, id: str, *, sender: iam.IGrantable) -> None:
        super().__init__(scope, id)
        self.queue = secure_queue(self, "Queue", retention_period=self.RETENTION)
        # SendMessage only (grant_send_messages would add GetQueueAttributes
        # and GetQueueUrl, which the worker never calls).
        sender.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.queue.queue_arn])
        )
        acknowledge(
            self.queue,
            "AwsSolutions-SQS3",
            (
                "The smoke queue receives one test message per `duetime smoke` run, which "
                "the command reads and deletes; a message it misses expires in ten "
                "minutes. A dead-letter queue would hold nothing worth keeping."
            ),
        )
