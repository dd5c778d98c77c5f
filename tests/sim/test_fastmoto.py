"""moto's hot paths, made cheap while a simulation runs, answer as moto answers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
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

    def patched() -> tuple[Any, ...]:
        return (
            sqs_models.unix_time,
            sqs_models.unix_time_millis,
            DynamoDBBackend.transact_write_items,
            DynamoDBBackend.put_item,
            DynamoDBBackend.update_item,
            DynamoDBBackend.delete_item,
            Table.query,
            sqs_models.SQSBackend.is_message_valid_based_on_retention_period,
            sqs_models.SQSBackend.change_message_visibility,
            sqs_models.Queue.__dict__["messages"],
            sqs_models.Queue.__dict__["approximate_number_of_messages_delayed"],
            sqs_models.Queue.__dict__["approximate_number_of_messages_not_visible"],
            sqs_models.Queue.delete_message,
            sqs_models.Message.mark_received,
        )

    before = patched()
    with faster_moto(lambda: NOW_S):
        assert sqs_models.unix_time() == NOW_S
        assert "__deepcopy__" in Table.__dict__
        during = patched()
    assert all(a is not b for a, b in zip(during, before, strict=True))
    assert patched() == before
    assert "__deepcopy__" not in Table.__dict__


# --- the same answers as moto's own, story by story ------------------------------------------


def _answers(story: Any, *, fast: bool) -> list[Any]:
    """What ``story`` was answered, on moto as it is or with the simulator's patches."""
    import os
    from datetime import UTC, datetime

    import time_machine

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    try:
        with (
            time_machine.travel(datetime.fromtimestamp(NOW_S, UTC), tick=False) as traveller,
            mock_aws(),
            ExitStack() as stack,
        ):
            if fast:
                import time

                stack.enter_context(faster_moto(time.time))
            return list(story(traveller))
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _pages(dynamodb: Any, **request: Any) -> list[Any]:
    """Every page of a query: its items, counts and whether it said there was more."""
    pages: list[Any] = []
    try:
        while True:
            answer = dynamodb.query(**request)
            pages.append(
                (
                    answer["Items"],
                    answer["Count"],
                    answer["ScannedCount"],
                    answer.get("LastEvaluatedKey"),
                )
            )
            if "LastEvaluatedKey" not in answer or len(pages) > 50:
                return pages
            request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
    except ClientError as error:
        return [*pages, error.response["Error"]["Code"]]


def _queries(dynamodb: Any) -> list[Any]:
    s = lambda v: {"S": v}  # noqa: E731
    return [
        _pages(dynamodb, TableName="t", KeyConditionExpression="pk = :p", **_v({":p": s("p1")})),
        _pages(
            dynamodb,
            TableName="t",
            KeyConditionExpression="pk = :p AND sk BETWEEN :a AND :b",
            ScanIndexForward=False,
            Limit=2,
            **_v({":p": s("p2"), ":a": s("002"), ":b": s("020")}),
        ),
        _pages(dynamodb, TableName="t", KeyConditionExpression="pk = :p", **_v({":p": s("nope")})),
        _pages(
            dynamodb,
            TableName="t",
            IndexName="due",
            KeyConditionExpression="grp = :h AND #at < :t",
            ExpressionAttributeNames={"#at": "at"},
            Limit=3,
            **_v({":h": s("x1"), ":t": s("0025")}),
        ),
        _pages(
            dynamodb,
            TableName="t",
            IndexName="due",
            KeyConditionExpression="grp = :h",
            FilterExpression="attribute_exists(lbl)",
            **_v({":h": s("x2")}),
        ),
        _pages(
            dynamodb,
            TableName="t",
            IndexName="named",
            KeyConditionExpression="lbl = :l",
            **_v({":l": s("even")}),
        ),
        _pages(
            dynamodb,
            TableName="t",
            IndexName="missing",
            KeyConditionExpression="grp = :h",
            **_v({":h": s("x1")}),
        ),
        _pages(
            dynamodb, TableName="heads", KeyConditionExpression="pk = :p", **_v({":p": s("h3")})
        ),
    ]


def _v(values: dict[str, Any]) -> dict[str, Any]:
    return {"ExpressionAttributeValues": values}


def _dynamodb_story(_: Any) -> Iterator[Any]:
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    dynamodb.create_table(
        TableName="t",
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "grp", "at", "lbl")
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "due",
                "KeySchema": [
                    {"AttributeName": "grp", "KeyType": "HASH"},
                    {"AttributeName": "at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": "named",
                "KeySchema": [{"AttributeName": "lbl", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.create_table(
        TableName="heads",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for i in range(30):
        item = {"pk": {"S": f"p{i % 4}"}, "sk": {"S": f"{i:03}"}, "at": {"S": f"{30 - i:04}"}}
        if i % 5:
            item["grp"] = {"S": f"x{i % 3}"}
        if i % 2 == 0:
            item["lbl"] = {"S": "even"}
        dynamodb.put_item(TableName="t", Item=item)
    for i in range(5):
        dynamodb.put_item(TableName="heads", Item={"pk": {"S": f"h{i}"}, "n": {"N": str(i)}})
    yield _queries(dynamodb)

    key = lambda i: {"pk": {"S": f"p{i % 4}"}, "sk": {"S": f"{i:03}"}}  # noqa: E731
    # An update moves an item to another grp, another leaves every index.
    dynamodb.update_item(
        TableName="t",
        Key=key(1),
        UpdateExpression="SET grp = :x",
        ExpressionAttributeValues={":x": {"S": "x2"}},
    )
    dynamodb.update_item(TableName="t", Key=key(2), UpdateExpression="REMOVE grp, lbl")
    dynamodb.delete_item(TableName="t", Key=key(4))
    # An update that creates its item, and a put that replaces one.
    dynamodb.update_item(
        TableName="t",
        Key={"pk": {"S": "p9"}, "sk": {"S": "new"}},
        UpdateExpression="SET grp = :x, #at = :a",
        ExpressionAttributeNames={"#at": "at"},
        ExpressionAttributeValues={":x": {"S": "x1"}, ":a": {"S": "0001"}},
    )
    dynamodb.put_item(TableName="t", Item={**key(7), "grp": {"S": "x0"}, "at": {"S": "0099"}})
    refused: list[str] = []
    try:  # a refused write changes no index
        dynamodb.update_item(
            TableName="t",
            Key=key(8),
            UpdateExpression="SET grp = :x",
            ConditionExpression="attribute_not_exists(pk)",
            ExpressionAttributeValues={":x": {"S": "x1"}},
        )
    except ClientError as error:
        refused.append(error.response["Error"]["Code"])
    try:  # a cancelled transaction neither
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": "t",
                        "Key": key(10),
                        "UpdateExpression": "SET grp = :x",
                        "ExpressionAttributeValues": {":x": {"S": "x0"}},
                    }
                },
                {"Delete": {"TableName": "t", "Key": key(11)}},
                {"Put": {"TableName": "t", "Item": {**key(99), "grp": {"S": "x1"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "heads",
                        "Key": {"pk": {"S": "none"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )
    except ClientError as error:
        refused.append(error.response["Error"]["Code"])
    dynamodb.transact_write_items(
        TransactItems=[
            {"Delete": {"TableName": "t", "Key": key(13)}},
            {
                "Put": {
                    "TableName": "t",
                    "Item": {**key(98), "grp": {"S": "x1"}, "at": {"S": "0000"}},
                }
            },
            {"Delete": {"TableName": "heads", "Key": {"pk": {"S": "h3"}}}},
        ]
    )
    dynamodb.batch_write_item(
        RequestItems={
            "t": [
                {"DeleteRequest": {"Key": key(16)}},
                {"PutRequest": {"Item": {**key(97), "grp": {"S": "x2"}, "lbl": {"S": "even"}}}},
            ]
        }
    )
    yield refused
    yield _queries(dynamodb)
    yield _reads_of_every_kind(dynamodb)


EVERY_KIND: dict[str, Any] = {
    "s": {"S": "héllo"},
    "n": {"N": "-12.50"},
    "b": {"B": b"\x00\x01binary"},
    "yes": {"BOOL": True},
    "nothing": {"NULL": True},
    "list": {"L": [{"S": "a"}, {"N": "1"}, {"B": b"\xff"}, {"M": {"x": {"N": "2"}}}]},
    "map": {"M": {"inner": {"L": [{"BOOL": False}]}, "bin": {"B": b"\x10"}}},
    "plain": {"M": {"inner": {"L": [{"BOOL": False}, {"NULL": True}]}, "s": {"SS": ["q"]}}},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x01", b"\x02"]},
}


def _reads_of_every_kind(dynamodb: Any) -> list[Any]:
    """Items holding every kind of attribute value, read back every way."""
    key = {"pk": {"S": "p5"}, "sk": {"S": "all"}}
    dynamodb.put_item(TableName="t", Item={**key, **EVERY_KIND})
    dynamodb.put_item(
        TableName="t", Item={"pk": {"S": "p5"}, "sk": {"S": "small"}, "n": {"N": "1"}}
    )
    return [
        dynamodb.get_item(TableName="t", Key=key)["Item"],
        dynamodb.update_item(
            TableName="t",
            Key=key,
            UpdateExpression="SET n = n + :one, #l = list_append(#l, :more) ADD c :two",
            ExpressionAttributeNames={"#l": "list"},
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":two": {"N": "2"},
                ":more": {"L": [{"S": "z"}]},
            },
            ReturnValues="ALL_NEW",
        )["Attributes"],
        dynamodb.update_item(
            TableName="t",
            Key=key,
            UpdateExpression="SET s = :s",
            ExpressionAttributeValues={":s": {"S": "bye"}},
            ReturnValues="UPDATED_OLD",
        )["Attributes"],
        _pages(
            dynamodb, TableName="t", KeyConditionExpression="pk = :p", **_v({":p": {"S": "p5"}})
        ),
        dynamodb.batch_get_item(RequestItems={"t": {"Keys": [key]}})["Responses"],
        dynamodb.transact_get_items(TransactItems=[{"Get": {"TableName": "t", "Key": key}}])[
            "Responses"
        ],
        sorted(
            dynamodb.scan(TableName="t", ConsistentRead=True)["Items"],
            key=lambda item: (item["pk"]["S"], item["sk"]["S"]),
        ),
    ]


def test_queries_answer_as_moto_answers_them_after_every_kind_of_write() -> None:
    fast = _answers(_dynamodb_story, fast=True)
    assert fast == _answers(_dynamodb_story, fast=False)
    refused = fast[1]
    assert refused == ["ConditionalCheckFailedException", "TransactionCanceledException"]
    assert fast[0] != fast[2]  # the writes changed what the queries answer


def _sqs_story(traveller: Any) -> Iterator[Any]:
    sqs = boto3.client("sqs", region_name=REGION)
    dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    url = sqs.create_queue(
        QueueName="work",
        Attributes={
            "VisibilityTimeout": "30",
            "RedrivePolicy": f'{{"deadLetterTargetArn": "{dlq_arn}", "maxReceiveCount": "2"}}',
        },
    )["QueueUrl"]
    for i in range(14):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{i}", DelaySeconds=5 if i % 4 == 0 else 0)

    def counts() -> dict[str, str]:
        return sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]

    def receive(**kwargs: Any) -> list[dict[str, Any]]:
        return sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"], **kwargs
        ).get("Messages", [])

    def refused(call: Any, **kwargs: Any) -> str:
        try:
            call(QueueUrl=url, **kwargs)
        except ClientError as error:
            return str(error.response["Error"]["Code"])
        return "answered"

    yield counts()
    first = receive()
    yield [m["Body"] for m in first], counts()
    handles = {m["Body"]: m["ReceiptHandle"] for m in first}
    deleted = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": str(i), "ReceiptHandle": handles[b]} for i, b in enumerate(list(handles)[:4])
        ]
        + [{"Id": "bogus", "ReceiptHandle": "not-a-handle"}],
    )
    yield (
        sorted(e["Id"] for e in deleted.get("Successful", [])),
        [(e["Id"], e["Code"]) for e in deleted.get("Failed", [])],
    )
    # Deleted again: moto lets it be; an unknown handle is refused.
    yield refused(sqs.delete_message, ReceiptHandle=handles[next(iter(handles))])
    yield refused(sqs.delete_message, ReceiptHandle="not-a-handle")
    back = list(handles)[4:6]
    for body in back:
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=handles[body], VisibilityTimeout=0
        )
    yield refused(sqs.change_message_visibility, ReceiptHandle="nope", VisibilityTimeout=0)
    yield refused(
        sqs.change_message_visibility, ReceiptHandle=handles[back[0]], VisibilityTimeout=43201
    )
    yield counts()
    traveller.shift(6)
    second = receive(VisibilityTimeout=10)
    yield [(m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in second], counts()
    # A handle of an earlier receive still deletes its message.
    yield refused(sqs.delete_message, ReceiptHandle=handles[back[1]])
    traveller.shift(31)
    third = receive()
    yield [(m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in third], counts()
    traveller.shift(31)
    fourth = receive()
    yield [m["Body"] for m in fourth], counts()
    dead = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", [])
    yield sorted(m["Body"] for m in dead)
    # A message moved to the dead-letter queue is no longer the source queue's.
    stale = next(m["ReceiptHandle"] for m in third if m["Body"] in {d["Body"] for d in dead})
    yield refused(sqs.delete_message, ReceiptHandle=stale)


def test_sqs_receives_deletes_and_visibility_changes_answer_as_moto_answers_them() -> None:
    fast = _answers(_sqs_story, fast=True)
    assert fast == _answers(_sqs_story, fast=False)
    assert fast[3] == "answered" and fast[4] == "ReceiptHandleIsInvalid"
    assert fast[-2], "some messages reached the dead-letter queue"


def test_the_meters_reads_of_an_item_are_what_a_client_reads(aws: dict[str, Any]) -> None:
    from sim.aws import _UNANSWERED, stored_item

    dynamodb = aws["dynamodb"]
    every_kind = {
        "pk": {"S": "s1"},
        "sk": {"S": "all"},
        "s": {"S": "héllo"},
        "n": {"N": "-12.50"},
        "b": {"B": b"\x00\x01binary"},
        "yes": {"BOOL": True},
        "nothing": {"NULL": True},
        "list": {"L": [{"S": "a"}, {"N": "1"}, {"B": b"\xff"}, {"M": {"x": {"N": "2"}}}]},
        "map": {"M": {"inner": {"L": [{"BOOL": False}]}, "bin": {"B": b"\x10"}}},
        "ss": {"SS": ["x", "y"]},
        "ns": {"NS": ["1", "2.5"]},
        "bs": {"BS": [b"\x01", b"\x02"]},
    }
    dynamodb.put_item(TableName="runs", Item=every_kind)
    dynamodb.put_item(TableName="heads", Item={"pk": {"S": "h1"}, "next": {"N": "5"}})
    for table, key in (
        ("runs", {"pk": {"S": "s1"}, "sk": {"S": "all"}}),
        ("heads", {"pk": {"S": "h1"}}),
    ):
        expected = dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
        assert stored_item(table, key) == expected
    assert stored_item("runs", {"pk": {"S": "s1"}, "sk": {"S": "none"}}) is None
    assert "Item" not in dynamodb.get_item(
        TableName="runs", Key={"pk": {"S": "s1"}, "sk": {"S": "none"}}
    )
    # What a request would refuse is left to the request.
    assert stored_item("runs", {"pk": {"S": "s1"}}) is _UNANSWERED
    assert stored_item("missing", {"pk": {"S": "s1"}}) is _UNANSWERED
