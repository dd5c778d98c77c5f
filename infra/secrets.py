"""Webhook signing secrets: a DynamoDB table, or SSM parameters (or Secrets Manager
secrets) under one prefix.

This is the layout of ``adapters.secrets.aws_secret_store``. The stack
creates no secret itself: the API stores a schedule's signing secret when the
schedule is created (and reads it back for a retried create or an edit,
deletes it with the schedule), and the worker reads it to sign deliveries. So
only those two are granted anything here, each the calls it makes.

With ``duetime:secretStore`` ``dynamodb`` (the default) a secret is derived
from the stack's signing key, one Secrets Manager secret the stack generates
(``adapters.secrets.signing_key_name``), and a generation number that is an
item of the stack's own secrets table (``adapters.definitions.WEBHOOK_SECRETS``),
made as the other tables are: on demand, encrypted at rest with the AWS
managed key, point-in-time recovery on, kept with ``duetime:retain``. The
table holds nothing that signs; the key does, and only the API and worker
roles may read it: each has ``GetSecretValue`` on it, and the secret's own
resource policy denies reading it to every other principal of the account
(an administrator can still change that policy, which CloudTrail records).
The API may update, get and delete items of the table and the worker may get
them, nothing else of it; the name reaches the two by
``DUETIME_SECRETS_TABLE``. A secret stored before, while the stack used SSM
parameters (or, before them, Secrets Manager), is read from there until a new
secret for the schedule replaces it (the store deletes the old copy), so
those grants stay, narrowed to reading and deleting.

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

import jsii
from aws_cdk import ArnFormat, IStableListProducer, Lazy, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from adapters.definitions import WEBHOOK_SECRETS
from adapters.secrets import DYNAMODB, SECRETS_MANAGER, STORE_KINDS, signing_key_name, ssm_path
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
# What adapters.secrets.DynamoSecretStore calls on its table: UpdateItem (a
# new or rotated secret adds one to the generation), GetItem (strongly
# consistent), DeleteItem. It never queries, scans or puts.
TABLE_WRITE_ACTIONS: Final = ("dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:DeleteItem")
TABLE_READ_ACTIONS: Final = ("dynamodb:GetItem",)
# What the moving store asks of the secrets stored before as SSM parameters,
# with the table chosen: the API reads and deletes them, the worker reads them.
LEGACY_SSM_WRITE_ACTIONS: Final = ("ssm:GetParameter", "ssm:DeleteParameter")
LEGACY_SSM_READ_ACTIONS: Final = SSM_READ_ACTIONS
# What adapters.secrets.SigningKey calls on the signing key: the API (to
# answer a new secret) and the worker (to sign) read it, nothing else.
SIGNING_KEY_ACTIONS: Final = ("secretsmanager:GetSecretValue",)
# What the signing key's resource policy denies every principal but the API
# and worker roles: reading its value, and writing one (a new value would
# change every schedule's secret at once).
SIGNING_KEY_DENIED: Final = (
    "secretsmanager:GetSecretValue",
    "secretsmanager:PutSecretValue",
    "secretsmanager:UpdateSecret",
)


@jsii.implements(IStableListProducer)
class _Readers:
    """The ARNs of the roles granted the signing key, as the grants are made."""

    def __init__(self, arns: list[str]) -> None:
        self._arns = arns

    def produce(self) -> list[str]:
        return list(self._arns)


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
        self._key_readers: list[str] = []
        self.signing_key: secretsmanager.Secret | None = (
            self._signing_key(prefix, retain) if store == DYNAMODB else None
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

    def _signing_key(self, prefix: str, retain: bool) -> secretsmanager.Secret:
        key = secretsmanager.Secret(
            self,
            "SigningKey",
            secret_name=signing_key_name(prefix),
            description="duetime: the key every webhook signing secret is derived from",
            # 64 letters and digits: about 380 bits, as the HMAC key's UTF-8 bytes.
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True, include_space=False
            ),
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        # Every principal but the API and worker roles is refused the value,
        # whatever its identity policy allows (ReadOnlyAccess does not grant
        # GetSecretValue, a broad administrator policy does).
        key.add_to_resource_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(SIGNING_KEY_DENIED),
                resources=["*"],
                conditions={
                    "StringNotEquals": {"aws:PrincipalArn": Lazy.list(_Readers(self._key_readers))}
                },
            )
        )
        acknowledge(
            key,
            "AwsSolutions-SMG4",
            "Every schedule's signing secret is derived from this key: rotating it would "
            "change every receiver's secret at once. A schedule's own secret is rotated "
            "by POST /schedules/{id}/rotate-secret (docs/webhooks.md).",
        )
        return key

    @property
    def uses_ssm(self) -> bool:
        return self.store != SECRETS_MANAGER

    def grant_write(self, role: iam.IRole) -> None:
        """The API: create, read back, replace and delete a schedule's secret."""
        if self.table is not None:
            self._grant_table(role, self.table, TABLE_WRITE_ACTIONS)
            self._grant_signing_key(role)
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
            self._grant_signing_key(role)
            self._grant_ssm(role, LEGACY_SSM_READ_ACTIONS)
            self._grant(role, LEGACY_READ_ACTIONS)
        elif self.uses_ssm:
            self._grant_ssm(role, SSM_READ_ACTIONS)
            self._grant(role, LEGACY_READ_ACTIONS)
        else:
            self._grant(role, READ_ACTIONS)

    def _grant_signing_key(self, role: iam.IRole) -> None:
        # By name and Secrets Manager's six-character suffix, the way AWS
        # authorizes a read by name (adapters.secrets.SigningKey reads it so).
        assert self.signing_key is not None
        arn = Stack.of(self).format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=f"{signing_key_name(self.prefix)}-??????",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(SIGNING_KEY_ACTIONS), resources=[arn])
        )
        self._key_readers.append(role.role_arn)

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
