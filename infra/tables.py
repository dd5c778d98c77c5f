"""The DynamoDB tables, built from adapters.definitions so code and stack agree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from adapters.definitions import TABLES, Index, Key, TableDefinition

# Reads the stores make (adapters/dynamodb), on the table and on each of its
# indexes: key reads and queries. Nothing scans a table, checks a condition
# without writing, or describes a table at run time.
READ_ACTIONS: Final = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
)
# Writes, on the table only (indexes are never written directly). A
# TransactWriteItems call is authorized item by item with these actions.
# Old records leave by TTL.
WRITE_ACTIONS: Final = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)
# The one delete: the runs table's writers (api, tick) withdraw, by a
# conditional delete, the key of an occurrence whose record was refused and
# the occurrences of a materialization that was refused.
WITHDRAW_ACTIONS: Final = ("dynamodb:DeleteItem",)

_ATTRIBUTE_TYPES: Final = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_PROJECTIONS: Final = {
    "ALL": dynamodb.ProjectionType.ALL,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
}


class Tables(Construct):
    """One on-demand table per definition: PITR on, TTL where defined.

    ``retain`` turns on deletion protection and keeps the data when the stack
    is deleted; without it the tables are deleted with the stack.
    """

    def __init__(self, scope: Construct, id: str, *, retain: bool) -> None:
        super().__init__(scope, id)
        self._tables: dict[str, tuple[TableDefinition, dynamodb.Table]] = {}
        for definition in TABLES:
            self._tables[definition.logical_id] = (
                definition,
                durable_table(self, definition, retain),
            )

    def table(self, definition: TableDefinition) -> dynamodb.Table:
        return self._tables[definition.logical_id][1]

    @property
    def definitions(self) -> tuple[TableDefinition, ...]:
        return tuple(d for d, _ in self._tables.values())

    def grant_read(self, grantee: iam.IGrantable, definition: TableDefinition) -> None:
        table = self.table(definition)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=list(READ_ACTIONS), resources=_arns(table, definition))
        )

    def grant_read_write(self, grantee: iam.IGrantable, definition: TableDefinition) -> None:
        self.grant_read(grantee, definition)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=list(WRITE_ACTIONS), resources=[self.table(definition).table_arn]
            )
        )

    def grant_withdraw(self, grantee: iam.IGrantable, definition: TableDefinition) -> None:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=list(WITHDRAW_ACTIONS), resources=[self.table(definition).table_arn]
            )
        )

    def grant_put_keys(
        self, grantee: iam.IGrantable, definition: TableDefinition, leading_keys: Sequence[str]
    ) -> None:
        """PutItem of the items whose partition key matches one of ``leading_keys``
        (``*`` wildcards) and of no other item: IAM's ``dynamodb:LeadingKeys``."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:PutItem"],
                resources=[self.table(definition).table_arn],
                conditions={
                    "ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(leading_keys)}
                },
            )
        )


def _arns(table: dynamodb.Table, definition: TableDefinition) -> list[str]:
    """The table and each index it has, by name: no ``index/*`` wildcard."""
    indexes = (*definition.global_indexes, *definition.local_indexes)
    return [table.table_arn, *(f"{table.table_arn}/index/{i.name}" for i in indexes)]


def _attribute(key: Key) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=_ATTRIBUTE_TYPES[key.type])


def durable_table(scope: Construct, definition: TableDefinition, retain: bool) -> dynamodb.Table:
    """A table as every duetime table is: on demand, encrypted at rest with the
    AWS managed key, point-in-time recovery on, kept and protected with ``retain``."""
    table = dynamodb.Table(
        scope,
        definition.logical_id,
        partition_key=_attribute(definition.partition_key),
        sort_key=_attribute(definition.sort_key) if definition.sort_key else None,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        time_to_live_attribute=definition.ttl_attribute,
        deletion_protection=retain,
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
    )
    for index in definition.global_indexes:
        table.add_global_secondary_index(
            index_name=index.name,
            partition_key=_attribute(index.partition_key),
            sort_key=_attribute(index.sort_key) if index.sort_key else None,
            projection_type=_PROJECTIONS[index.projection],
        )
    for index in definition.local_indexes:
        table.add_local_secondary_index(
            index_name=index.name,
            sort_key=_attribute(_local_sort_key(definition, index)),
            projection_type=_PROJECTIONS[index.projection],
        )
    return table


def _local_sort_key(definition: TableDefinition, index: Index) -> Key:
    # A local index shares the table's partition key and must have a sort key.
    if index.partition_key != definition.partition_key or index.sort_key is None:
        raise ValueError(
            f"{definition.logical_id}.{index.name}: a local index needs the table's "
            "partition key and its own sort key"
        )
    return index.sort_key
