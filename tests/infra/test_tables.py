"""The tables: what adapters.definitions says, durable, and cheap when idle."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.definitions import OCCURRENCES, TABLES, WEBHOOK_SECRETS, Index, TableDefinition
from tests.infra.conftest import Synthesized
from tests.infra.helpers import logical_id


def table(template: dict[str, Any], definition: TableDefinition) -> dict[str, Any]:
    resource_id = logical_id(template, "AWS::DynamoDB::Table", f"Tables{definition.logical_id}")
    resource: dict[str, Any] = template["Resources"][resource_id]
    return resource


def key_schema(partition: str, sort: str | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": partition, "KeyType": "HASH"}]
    if sort:
        schema.append({"AttributeName": sort, "KeyType": "RANGE"})
    return schema


def index_schema(index: Index) -> dict[str, Any]:
    return {
        "IndexName": index.name,
        "KeySchema": key_schema(
            index.partition_key.name, index.sort_key.name if index.sort_key else None
        ),
        "Projection": {"ProjectionType": index.projection},
    }


@pytest.mark.parametrize("definition", TABLES, ids=lambda d: d.logical_id)
def test_table_keys_and_indexes_are_the_shared_definition(
    template: dict[str, Any], definition: TableDefinition
) -> None:
    props = table(template, definition)["Properties"]
    assert props["KeySchema"] == key_schema(
        definition.partition_key.name,
        definition.sort_key.name if definition.sort_key else None,
    )
    assert sorted(props.get("GlobalSecondaryIndexes", []), key=lambda i: i["IndexName"]) == sorted(
        (index_schema(i) for i in definition.global_indexes), key=lambda i: i["IndexName"]
    )
    assert sorted(props.get("LocalSecondaryIndexes", []), key=lambda i: i["IndexName"]) == sorted(
        (index_schema(i) for i in definition.local_indexes), key=lambda i: i["IndexName"]
    )
    declared = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    keys = [definition.partition_key, definition.sort_key]
    for index in (*definition.global_indexes, *definition.local_indexes):
        keys += [index.partition_key, index.sort_key]
    assert declared == {k.name: k.type for k in keys if k is not None}


@pytest.mark.parametrize("definition", TABLES, ids=lambda d: d.logical_id)
def test_tables_are_on_demand_with_point_in_time_recovery(
    template: dict[str, Any], definition: TableDefinition
) -> None:
    props = table(template, definition)["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"] == {"SSEEnabled": True}


def test_old_run_history_expires_by_ttl_on_the_defined_attribute(template: dict[str, Any]) -> None:
    assert OCCURRENCES.ttl_attribute
    props = table(template, OCCURRENCES)["Properties"]
    assert props["TimeToLiveSpecification"] == {
        "AttributeName": OCCURRENCES.ttl_attribute,
        "Enabled": True,
    }
    for definition in TABLES:
        if definition.ttl_attribute is None:
            assert "TimeToLiveSpecification" not in table(template, definition)["Properties"]


@pytest.mark.parametrize("definition", TABLES, ids=lambda d: d.logical_id)
def test_by_default_tables_are_protected_and_kept_when_the_stack_is_deleted(
    template: dict[str, Any], definition: TableDefinition
) -> None:
    resource = table(template, definition)
    assert resource["Properties"]["DeletionProtectionEnabled"] is True
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["UpdateReplacePolicy"] == "Retain"


@pytest.mark.parametrize("definition", TABLES, ids=lambda d: d.logical_id)
def test_with_retain_false_tables_are_deleted_with_the_stack(
    synthesized: Synthesized, definition: TableDefinition
) -> None:
    resource = table(synthesized.template("DuetimeSandbox"), definition)
    assert resource["Properties"]["DeletionProtectionEnabled"] is False
    assert resource["DeletionPolicy"] == "Delete"


def test_heartbeats_leave_the_leases_table_by_ttl_on_the_attribute_the_store_writes(
    template: dict[str, Any],
) -> None:
    from adapters.definitions import LEASES
    from adapters.dynamodb.leases import LEASES_TTL_ATTRIBUTE

    assert table(template, LEASES)["Properties"]["TimeToLiveSpecification"] == {
        "AttributeName": LEASES_TTL_ATTRIBUTE,
        "Enabled": True,
    }


# --- the secrets table (duetime:secretStore dynamodb, the default) ---------------------------


def secrets_table(template: dict[str, Any]) -> dict[str, Any]:
    resource_id = logical_id(template, "AWS::DynamoDB::Table", "SecretsWebhookSecrets")
    resource: dict[str, Any] = template["Resources"][resource_id]
    return resource


def test_the_secrets_table_is_one_item_per_schedule_by_its_key(template: dict[str, Any]) -> None:
    props = secrets_table(template)["Properties"]
    assert props["KeySchema"] == key_schema(WEBHOOK_SECRETS.partition_key.name, None)
    assert props["AttributeDefinitions"] == [{"AttributeName": "pk", "AttributeType": "S"}]
    # Read by key only; a secret lasts as long as its schedule, so no TTL.
    assert "GlobalSecondaryIndexes" not in props
    assert "LocalSecondaryIndexes" not in props
    assert "TimeToLiveSpecification" not in props


def test_the_secrets_table_is_encrypted_on_demand_and_recoverable(
    template: dict[str, Any],
) -> None:
    resource = secrets_table(template)
    props = resource["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"] == {"SSEEnabled": True}
    assert props["DeletionProtectionEnabled"] is True
    assert resource["DeletionPolicy"] == "Retain"


def test_with_retain_false_the_secrets_table_is_deleted_with_the_stack() -> None:
    from aws_cdk import App, Stack
    from aws_cdk.assertions import Template

    from infra.secrets import WebhookSecrets

    stack = Stack(App(), "Sandbox")
    WebhookSecrets(stack, "Secrets", prefix="duetime/Sandbox/webhooks/", retain=False)
    [resource] = Template.from_stack(stack).find_resources("AWS::DynamoDB::Table").values()
    assert resource["Properties"]["DeletionProtectionEnabled"] is False
    assert resource["DeletionPolicy"] == "Delete"
