"""Webhook signing secrets: Secrets Manager secrets under one name prefix.

This is the layout of adapters.secrets.SecretsManagerSecretStore.

The stack creates no secret itself. The API stores a schedule's signing
secret as ``<prefix><name>`` when the schedule is created and the worker
reads it to sign deliveries, so both are granted access by name prefix, and
only to that prefix. Secrets use the account's aws/secretsmanager key, which
needs no KMS grant.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.nag import acknowledge

# What adapters.secrets.SecretsManagerSecretStore calls: create (or put a new
# value when the secret exists), delete without a recovery window, and read
# the value. It never describes a secret.
WRITE_ACTIONS: Final = (
    "secretsmanager:CreateSecret",
    "secretsmanager:PutSecretValue",
    "secretsmanager:DeleteSecret",
)
READ_ACTIONS: Final = ("secretsmanager:GetSecretValue",)


class WebhookSecrets(Construct):
    def __init__(self, scope: Construct, id: str, *, prefix: str) -> None:
        super().__init__(scope, id)
        self.prefix = prefix
        # Secrets Manager appends "-" and six random characters to a secret's
        # ARN, and the names are chosen at run time: a prefix wildcard is the
        # narrowest resource that works.
        self.arn_pattern = Stack.of(self).format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=f"{prefix}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def grant_write(self, role: iam.IRole) -> None:
        self._grant(role, WRITE_ACTIONS)

    def grant_read(self, role: iam.IRole) -> None:
        self._grant(role, READ_ACTIONS)

    def _grant(self, role: iam.IRole, actions: tuple[str, ...]) -> None:
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[self.arn_pattern])
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::{self._finding_resource()}]",
            f"Webhook signing secrets are created per schedule at run time under the "
            f"prefix {self.prefix!r}; the grant is limited to that prefix.",
        )

    def _finding_resource(self) -> str:
        return (
            "arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:"
            f"secret:{self.prefix}*"
        )
