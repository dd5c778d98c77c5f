"""The duetime stack: composes one construct per capability, nothing else."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.alarms import Alarms
from infra.api import Api
from infra.dashboard import Dashboard
from infra.functions import Functions
from infra.nag import SIGNING_KEY_CMK_REASON, TABLE_CMK_REASON, skip_checkov
from infra.queues import DeliveryQueues, ScheduleDeadLetterQueue, SmokeQueue
from infra.schedules import Schedules
from infra.secrets import WebhookSecrets
from infra.settings import Settings
from infra.tables import Tables


class DuetimeStack(Stack):
    def __init__(self, scope: Construct, id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(
            scope,
            id,
            description="duetime: schedules with one recorded run per occurrence",
            **kwargs,
        )
        self.settings = settings
        self.tables = Tables(self, "Tables", retain=settings.retain)
        self.delivery = DeliveryQueues(self, "Delivery")
        self.secrets = WebhookSecrets(
            self,
            "Secrets",
            prefix=settings.webhook_secrets_prefix,
            store=settings.secret_store,
            retain=settings.retain,
        )
        # Checkov's findings accepted, each with its reason in the template.
        tables = [self.tables.table(d) for d in self.tables.definitions]
        for table in [*tables, *([self.secrets.table] if self.secrets.table else [])]:
            skip_checkov(table, "CKV_AWS_119", TABLE_CMK_REASON)
        if self.secrets.signing_key is not None:
            skip_checkov(self.secrets.signing_key, "CKV_AWS_149", SIGNING_KEY_CMK_REASON)
        self.functions = Functions(
            self,
            "Functions",
            settings=settings,
            tables=self.tables,
            queues=self.delivery,
            secrets=self.secrets,
        )
        self.schedule_dlq = ScheduleDeadLetterQueue(self, "ScheduleDlq")
        self.smoke = SmokeQueue(self, "Smoke", sender=self.functions.worker.role)
        self.schedules = Schedules(
            self,
            "Schedules",
            tick=self.functions.tick.function,
            watchdog=self.functions.watchdog.function,
            worker=self.functions.worker.function,
            dead_letter_queue=self.schedule_dlq.queue,
        )
        self.api = Api(self, "Api", handler=self.functions.api.function, settings=settings)
        self.alarms = Alarms(
            self,
            "Alarms",
            settings=settings,
            functions=self.functions,
            schedule_dlq=self.schedule_dlq.queue,
        )
        self.dashboard = Dashboard(
            self,
            "Dashboard",
            alarms=self.alarms,
            delivery_queue=self.delivery.queue,
            delivery_dlq=self.delivery.dead_letter_queue,
            schedule_dlq=self.schedule_dlq.queue,
        )
        CfnOutput(self, "AlarmTopicArn", value=self.alarms.topic.topic_arn)
        CfnOutput(self, "DeliveryDlqUrl", value=self.delivery.dead_letter_queue.queue_url)
        CfnOutput(self, "WebhookSecretsPrefix", value=self.secrets.prefix)
        CfnOutput(self, "WebhookSecretStore", value=self.secrets.store)
        if self.secrets.uses_ssm:
            CfnOutput(self, "WebhookSecretsParameterPath", value=self.secrets.parameter_path)
        if self.secrets.table is not None:
            CfnOutput(self, "WebhookSecretsTable", value=self.secrets.table.table_name)
        if self.secrets.signing_key is not None:
            CfnOutput(self, "WebhookSigningKey", value=self.secrets.signing_key.secret_name)
        CfnOutput(
            self,
            "SmokeQueueUrl",
            value=self.smoke.queue.queue_url,
            description="target of `duetime smoke --queue-url`",
        )
        CfnOutput(self, "SmokeQueueArn", value=self.smoke.queue.queue_arn)
