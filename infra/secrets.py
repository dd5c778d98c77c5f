"""Webhook signing secrets: a DynamoDB table, or SSM parameters (or Secrets Manager
secrets) under one prefix.

This is the layout of ``adapters.secrets.aws_secret_store``. The stack
creates no secret itself: the API stores a schedule's signing secret when the
schedule is created (and reads it back for a retried create or an edit,
deletes it with the schedule), and the worker reads it to sign deliveries. So
only those two are granted anything here, each the calls it makes.

With ``duetime:secretStore`` ``dynamodb`` (the default) a secret is an item of
the stack's own secrets table (``adapters.definitions.WEBHOOK_SECRETS``),
made as the other tables are: on demand, encrypted at rest with the AWS
managed key, point-in-time recovery on, kept with ``duetime:retain``. The API
may put, get and delete items of that table and the worker may get them,
nothing else of it; the name reaches the two by ``DUETIME_SECRETS_TABLE``. A
secret stored before, while the stack used SSM parameters (or, before them,
Secrets Manager), is read from there until a new secret for the schedule
replaces it (the store deletes the old copy), so those grants stay, narrowed
to reading and deleting.

With ``ssm`` or ``ssm-intelligent-tiering`` a secret is the SecureString
parameter ``/<prefix>/<schedule id>`` under the account's ``aws/ssm`` key,
whose key policy lets any principal of the account use it through SSM: no KMS
grant. Secrets stored before in Secrets Manager are read from
``<prefix><schedule id>`` there, with grants narrowed as above. With
``secretsmanager`` the secrets are Secrets Manager secrets under the
``aws/secretsmanager`` key. None of these three makes the table.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from adapters.definitions import WEBHOOK_SECRETS
from adapters.secrets import DYNAMODB, SECRETS_MANAGER, STORE_KINDS, ssm_path
from infra.nag import acknowledge
from infra.tables import durable_table

# What adapters.secrets.SecretsManagerSecretStore calls: create (or put a new
# value when the secret exists), read the value (a retried create, an edit),
# delete without a recovery window. It never describes a secret.
WRITE_ACTIONS: Final = (
    "secretsmanager:CreateSecret",
    "secretsmanager:PutSecretValue",
    "secretsmanager:DeleteSecret",
    "secretsmanager:GetSecretValue",
)
READ_ACTIONS: Final = ("secretsmanager:GetSecretValue",)
# What adapters.secrets.SsmSecretStore calls: PutParameter (Overwrite, so a
# rotation is the same call), GetParameter with decryption, DeleteParameter.
SSM_WRITE_ACTIONS: Final = ("ssm:PutParameter", "ssm:GetParameter", "ssm:DeleteParameter")
SSM_READ_ACTIONS: Final = ("ssm:GetParameter",)
# What the moving store asks of the secrets stored before in Secrets Manager:
# the API reads (a retried create, an edit) and deletes them (a new secret or
# the schedule's deletion); the worker reads them.
LEGACY_WRITE_ACTIONS: Final = ("secretsmanager:GetSecretValue", "secretsmanager:DeleteSecret")
LEGACY_READ_ACTIONS: Final = READ_ACTIONS
# What adapters.secrets.DynamoSecretStore calls on its table: PutItem (a new
# or rotated secret replaces the item), GetItem (strongly consistent),
# DeleteItem. It never queries, scans or updates.
TABLE_WRITE_ACTIONS: Final = ("dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:DeleteItem")
TABLE_READ_ACTIONS: Final = ("dynamodb:GetItem",)
# What the moving store asks of the secrets stored before as SSM parameters,
# with the table chosen: the API reads and deletes them, the worker reads them.
LEGACY_SSM_WRITE_ACTIONS: Final = ("ssm:GetParameter", "ssm:DeleteParameter")
LEGACY_SSM_READ_ACTIONS: Final = SSM_READ_ACTIONS


class WebhookSecrets(Construct):
    """Where the signing secrets live, and the grants of the API and the worker.

    ``table`` is the secrets table with the ``dynamodb`` store, else None.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        prefix: str,
        store: str = DYNAMODB,
        retain: bool = True,
    ) -> None:
        super().__init__(scope, id)
        if store not in STORE_KINDS:
            raise ValueError(f"secret store {store!r} is not one of {', '.join(STORE_KINDS)}")
        self.prefix = prefix
        self.store = store
        self.parameter_path = ssm_path(prefix)
        self.table: dynamodb.Table | None = (
            durable_table(self, WEBHOOK_SECRETS, retain) if store == DYNAMODB else None
        )
        # Secrets Manager appends "-" and six random characters to a secret's
        # ARN, and the names are chosen at run time: a prefix wildcard is the
        # narrowest resource that works. A parameter's ARN is its name after
        # "parameter" (the name begins with "/").
        self.arn_pattern = Stack.of(self).format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=f"{prefix}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.parameter_arn_pattern = Stack.of(self).format_arn(
            service="ssm",
            resource="parameter",
            resource_name=f"{self.parameter_path.lstrip('/')}/*",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )

    @property
    def uses_ssm(self) -> bool:
        return self.store != SECRETS_MANAGER

    def grant_write(self, role: iam.IRole) -> None:
        """The API: create, read back, replace and delete a schedule's secret."""
        if self.table is not None:
            self._grant_table(role, self.table, TABLE_WRITE_ACTIONS)
            self._grant_ssm(role, LEGACY_SSM_WRITE_ACTIONS)
            self._grant(role, LEGACY_WRITE_ACTIONS)
        elif self.uses_ssm:
            self._grant_ssm(role, SSM_WRITE_ACTIONS)
            self._grant(role, LEGACY_WRITE_ACTIONS)
        else:
            self._grant(role, WRITE_ACTIONS)

    def grant_read(self, role: iam.IRole) -> None:
        """The worker: read a schedule's secret."""
        if self.table is not None:
            self._grant_table(role, self.table, TABLE_READ_ACTIONS)
            self._grant_ssm(role, LEGACY_SSM_READ_ACTIONS)
            self._grant(role, LEGACY_READ_ACTIONS)
        elif self.uses_ssm:
            self._grant_ssm(role, SSM_READ_ACTIONS)
            self._grant(role, LEGACY_READ_ACTIONS)
        else:
            self._grant(role, READ_ACTIONS)

    @staticmethod
    def _grant_table(role: iam.IRole, table: dynamodb.Table, actions: tuple[str, ...]) -> None:
        # The table itself: it has no index.
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[table.table_arn])
        )

    def _grant(self, role: iam.IRole, actions: tuple[str, ...]) -> None:
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[self.arn_pattern])
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:"
            f"<AWS::AccountId>:secret:{self.prefix}*]",
            f"Webhook signing secrets are created per schedule at run time under the "
            f"prefix {self.prefix!r}; the grant is limited to that prefix.",
        )

    def _grant_ssm(self, role: iam.IRole, actions: tuple[str, ...]) -> None:
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[self.parameter_arn_pattern])
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:"
            f"<AWS::AccountId>:parameter{self.parameter_path}/*]",
            f"Webhook signing secrets are SSM parameters created per schedule at run time "
            f"under the path {self.parameter_path!r}; the grant is limited to that path.",
        )
