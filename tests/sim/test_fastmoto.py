"""moto's hot paths, made cheap while a simulation runs, answer as moto answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from sim.aws import forget_moto_instances
from sim.fastmoto import faster_moto

REGION = "us-east-1"
NOW_S = 1_796_112_000.0  # 2026-12-01T08:00:00Z


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    clock = [NOW_S]
    with mock_aws(), faster_moto(lambda: clock[0]):
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(
            TableName="runs",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        dynamodb.create_table(
            TableName="heads",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield {"dynamodb": dynamodb, "sqs": boto3.client("sqs", region_name=REGION), "clock": clock}


def _items(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    return sorted(
        dynamodb.scan(TableName=table, ConsistentRead=True)["Items"],
        key=lambda item: (item["pk"]["S"], item.get("sk", {}).get("S", "")),
    )


def _seed(dynamodb: Any) -> None:
    dynamodb.put_item(
        TableName="runs", Item={"pk": {"S": "s1"}, "sk": {"S": "a"}, "status": {"S": "queued"}}
    )
    dynamodb.put_item(
        TableName="runs", Item={"pk": {"S": "s1"}, "sk": {"S": "gone"}, "n": {"N": "1"}}
    )
    dynamodb.put_item(TableName="heads", Item={"pk": {"S": "h1"}, "next": {"N": "5"}})


def test_a_cancelled_transaction_leaves_every_table_as_it_found_it(aws: dict[str, Any]) -> None:
    dynamodb = aws["dynamodb"]
    _seed(dynamodb)
    before = {table: _items(dynamodb, table) for table in ("runs", "heads")}
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_write_items(
            TransactItems=[
                # Applied by moto before the last item's condition fails: each is undone.
                {"Put": {"TableName": "runs", "Item": {"pk": {"S": "s1"}, "sk": {"S": "new"}}}},
                {
                    "Update": {
                        "TableName": "runs",
                        "Key": {"pk": {"S": "s1"}, "sk": {"S": "a"}},
                        "UpdateExpression": "SET #s = :s",
                        "ExpressionAttributeNames": {"#s": "status"},
                        "ExpressionAttributeValues": {":s": {"S": "running"}},
                    }
                },
                {"Delete": {"TableName": "runs", "Key": {"pk": {"S": "s1"}, "sk": {"S": "gone"}}}},
                {
                    "Update": {
                        "TableName": "heads",
                        "Key": {"pk": {"S": "h1"}},
                        "UpdateExpression": "SET #n = :n",
                        "ExpressionAttributeNames": {"#n": "next"},
                        "ExpressionAttributeValues": {":n": {"N": "6"}},
                    }
                },
                {"Put": {"TableName": "heads", "Item": {"pk": {"S": "h2"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "heads",
                        "Key": {"pk": {"S": "h0"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )
    assert refused.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert {table: _items(dynamodb, table) for table in ("runs", "heads")} == before


def test_a_transaction_that_succeeds_writes_every_item(aws: dict[str, Any]) -> None:
    dynamodb = aws["dynamodb"]
    _seed(dynamodb)
    dynamodb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "runs", "Item": {"pk": {"S": "s1"}, "sk": {"S": "new"}}}},
            {"Delete": {"TableName": "runs", "Key": {"pk": {"S": "s1"}, "sk": {"S": "gone"}}}},
            {
                "Update": {
                    "TableName": "heads",
                    "Key": {"pk": {"S": "h1"}},
                    "UpdateExpression": "SET #n = :n",
                    "ConditionExpression": "#n = :was",
                    "ExpressionAttributeNames": {"#n": "next"},
                    "ExpressionAttributeValues": {":n": {"N": "6"}, ":was": {"N": "5"}},
                }
            },
        ]
    )
    assert [item["sk"]["S"] for item in _items(dynamodb, "runs")] == ["a", "new"]
    assert _items(dynamodb, "heads") == [{"pk": {"S": "h1"}, "next": {"N": "6"}}]


def test_a_transaction_naming_one_item_twice_is_refused_and_changes_nothing(
    aws: dict[str, Any],
) -> None:
    dynamodb = aws["dynamodb"]
    _seed(dynamodb)
    before = _items(dynamodb, "heads")
    with pytest.raises(ClientError):
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "heads", "Item": {"pk": {"S": "h1"}, "next": {"N": "9"}}}},
                {"Delete": {"TableName": "heads", "Key": {"pk": {"S": "h1"}}}},
            ]
        )
    assert _items(dynamodb, "heads") == before


def test_sqs_delays_visibility_and_retention_follow_the_simulated_clock(
    aws: dict[str, Any],
) -> None:
    sqs, clock = aws["sqs"], aws["clock"]
    url = sqs.create_queue(
        QueueName="intents", Attributes={"MessageRetentionPeriod": "60", "VisibilityTimeout": "30"}
    )["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="due-in-10", DelaySeconds=10)
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []
    clock[0] += 10.001
    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    assert message["Body"] == "due-in-10"
    clock[0] += 29
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []  # still in flight
    clock[0] += 2
    [again] = sqs.receive_message(QueueUrl=url)["Messages"]  # its visibility ran out
    assert again["Body"] == "due-in-10"
    clock[0] += 60
    # Past its retention period (sent 101 s ago, kept 60 s): never received again.
    assert sqs.receive_message(QueueUrl=url, VisibilityTimeout=0).get("Messages", []) == []


def test_moto_keeps_no_instance_once_forgotten(aws: dict[str, Any]) -> None:
    from moto.dynamodb.models.dynamo_type import Item

    dynamodb = aws["dynamodb"]
    _seed(dynamodb)
    assert Item.instances_tracked
    forget_moto_instances()
    assert Item.instances_tracked == []
    # The tables still answer from moto's backends.
    assert len(_items(dynamodb, "runs")) == 2


def test_the_patches_are_undone_when_the_simulation_ends() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table
    from moto.sqs import models as sqs_models

    before = (
        sqs_models.unix_time,
        sqs_models.unix_time_millis,
        DynamoDBBackend.transact_write_items,
        sqs_models.SQSBackend.is_message_valid_based_on_retention_period,
    )
    with faster_moto(lambda: NOW_S):
        assert sqs_models.unix_time() == NOW_S
        assert "__deepcopy__" in Table.__dict__
    after = (
        sqs_models.unix_time,
        sqs_models.unix_time_millis,
        DynamoDBBackend.transact_write_items,
        sqs_models.SQSBackend.is_message_valid_based_on_retention_period,
    )
    assert after == before
    assert "__deepcopy__" not in Table.__dict__
