"""Every AWS request a handler makes is allowed by its role in the template.

The handlers run on moto with tables and queues made from the shared
definitions; botocore's ``before-parameter-build`` event records each request, which is
mapped to the IAM action and resource AWS would check (a transaction item by
item, a batch per table, a query on an index as ``table/NAME/index/INDEX``),
and looked up in the role's statements in the synthesized template. A store
method that starts calling something new fails here before a deployment does.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import (
    DELIVERY_QUEUE,
    LEASES,
    OCCURRENCES,
    SCHEDULES,
    TABLES,
    create_queues,
    create_tables,
)
from tests.conftest import definition
from tests.infra.helpers import (
    _as_list,
    dumps,
    function_role,
    logical_id,
    resources,
    statements,
)

_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}
_SQS_ACTIONS = {"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage"}


class Recorder:
    """(IAM action, table, queue or topic name, index or None) of each request, and
    (action, table, partition key) of each single-item DynamoDB request."""

    def __init__(self) -> None:
        self.requests: set[tuple[str, str, str | None]] = set()
        self.keys: set[tuple[str, str, str]] = set()

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        service = model.service_model.service_name
        op = model.name
        if service == "dynamodb":
            if op == "TransactWriteItems":
                for item in params["TransactItems"]:
                    for kind, body in item.items():
                        self.requests.add((_ITEM_ACTIONS[kind], body["TableName"], None))
            elif op in ("BatchGetItem", "BatchWriteItem"):
                for table in params["RequestItems"]:
                    self.requests.add((f"dynamodb:{op}", table, None))
            else:
                self.requests.add((f"dynamodb:{op}", params["TableName"], params.get("IndexName")))
                item = params.get("Item") or params.get("Key") or {}
                if "pk" in item:
                    self.keys.add((f"dynamodb:{op}", params["TableName"], item["pk"]["S"]))
        elif service == "sqs":
            name = str(params.get("QueueUrl", "")).rsplit("/", 1)[-1]
            self.requests.add((f"sqs:{_SQS_ACTIONS.get(op, op)}", name, None))
        elif service == "sns":
            self.requests.add((f"sns:{op}", str(params.get("TopicArn", "")).split(":")[-1], None))


def allowed(template: dict[str, Any], role: str, action: str, resource: str, index: str | None):
    """Whether a statement without a condition allows ``action`` on the resource
    (and index, if any)."""
    for statement in statements(template, role):
        if action not in _as_list(statement["Action"]) or statement.get("Condition"):
            continue
        for res in _as_list(statement["Resource"]):
            text = dumps(res)
            if index is None and res in ({"Fn::GetAtt": [resource, "Arn"]}, {"Ref": resource}):
                return True
            if index is not None and resource in text and f'/index/{index}"' in text:
                return True
    return False


def allowed_key(template: dict[str, Any], role: str, action: str, resource: str, key: str) -> bool:
    """Whether a statement allows ``action`` on the item of partition key ``key``,
    its ``dynamodb:LeadingKeys`` condition evaluated (``StringLike``: ``*`` and ``?``)."""
    if allowed(template, role, action, resource, None):
        return True
    for statement in statements(template, role):
        if action not in _as_list(statement["Action"]):
            continue
        if {"Fn::GetAtt": [resource, "Arn"]} not in _as_list(statement["Resource"]):
            continue
        condition = statement.get("Condition") or {}
        if set(condition) != {"ForAllValues:StringLike"}:
            continue
        patterns = condition["ForAllValues:StringLike"].get("dynamodb:LeadingKeys", [])
        if any(fnmatch.fnmatchcase(key, p) for p in _as_list(patterns)):
            return True
    return False


def refusals(
    template: dict[str, Any], role: str, recorder: Recorder, ids: dict[str, str]
) -> list[tuple[str, str, str | None]]:
    """The requests (and items, by partition key) the role's statements do not allow."""
    refused = []
    for action, name, index in sorted(recorder.requests, key=str):
        if name not in ids or allowed(template, role, action, ids[name], index):
            continue
        keys = [k for a, t, k in recorder.keys if (a, t) == (action, name)]
        if index is None and keys:
            refused += [
                (action, name, f"pk={k}")
                for k in sorted(keys)
                if not allowed_key(template, role, action, ids[name], k)
            ]
        else:
            refused.append((action, name, index))
    return refused


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Recorder, dict[str, str]]]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        create_tables(dynamodb, {d.logical_id: d.logical_id for d in TABLES})
        sqs = boto3.client("sqs")
        queues = create_queues(sqs, "Delivery")
        target = sqs.create_queue(QueueName="target")["QueueUrl"]
        env = {
            SCHEDULES.env_var: SCHEDULES.logical_id,
            OCCURRENCES.env_var: OCCURRENCES.logical_id,
            LEASES.env_var: LEASES.logical_id,
            **queues,
            "DUETIME_TICK_BUDGET_S": "0",
        }
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        # A new container: the handlers build their clients (and owners) anew.
        from handlers import tick, worker

        monkeypatch.setattr(tick, "_container_ticker", None)
        monkeypatch.setattr(worker, "_container_worker", None)
        recorder = Recorder()
        # Every client made from now on (the handlers build their own) reports here.
        original = boto3.session.Session.client

        def client(self: Any, *args: Any, **kwargs: Any) -> Any:
            made = original(self, *args, **kwargs)
            made.meta.events.register("before-parameter-build.*.*", recorder)
            return made

        monkeypatch.setattr(boto3.session.Session, "client", client)
        yield recorder, {"target": target, **queues}


def test_every_request_of_tick_worker_and_watchdog_is_granted(
    template: dict[str, Any], aws: tuple[Recorder, dict[str, str]]
) -> None:
    from adapters.dynamodb.store import dynamo_store_from_settings
    from bootstrap.settings import Settings
    from handlers import tick, watchdog, worker
    from service.clock import SystemClock
    from service.schedules import ScheduleService

    recorder, queues = aws
    store = dynamo_store_from_settings(Settings.from_env())
    ScheduleService(store, SystemClock()).create(
        definition(
            {
                "name": "every second",
                "spec": {"every": "PT1S"},
                "target": {"type": "sqs", "queue_url": queues["target"]},
            }
        )
    )
    roles = {
        name: function_role(template, f"handlers.{name}.handler")
        for name in ("tick", "worker", "watchdog")
    }
    ids = {
        # moto tables are named by their definition's logical id
        **{
            d.logical_id: logical_id(template, "AWS::DynamoDB::Table", f"Tables{d.logical_id}")
            for d in TABLES
        },
        "Delivery-delivery": next(
            k
            for k, q in resources(template, "AWS::SQS::Queue").items()
            if "RedrivePolicy" in q["Properties"]
        ),
        "Delivery-delivery-dlq": logical_id(template, "AWS::SQS::Queue", "DeliveryDeliveryDlq"),
    }
    seen: dict[str, set[tuple[str, str, str | None]]] = {}

    recorder.requests = set()
    time.sleep(1.1)
    tick.handler({}, None)
    time.sleep(1.1)
    tick.handler({}, None)
    seen["tick"] = recorder.requests

    recorder.requests = set()
    sqs = boto3.client("sqs")
    messages = sqs.receive_message(
        QueueUrl=queues[DELIVERY_QUEUE.env_var], MaxNumberOfMessages=10, AttributeNames=["All"]
    )["Messages"]
    event = {"Records": [_record(m) for m in messages]}
    recorder.requests = set()
    assert worker.handler(event, None) == {"batchItemFailures": []}
    # The dead-letter sweep, in the worker: a letter SQS moved (no reason) is
    # received, its run read and closed, the letter sent back with a reason.
    sqs.send_message(QueueUrl=queues[DELIVERY_QUEUE.dlq_env_var], MessageBody=messages[0]["Body"])
    assert worker.handler({"duetime": "sweep"}, None)["found"] == 1
    seen["worker"] = {r for r in recorder.requests if r[1] != "target"}  # targets: own grants

    recorder.requests = set()
    watchdog.handler({}, None)
    seen["watchdog"] = recorder.requests

    assert ("dynamodb:PutItem", LEASES.logical_id, None) in seen["watchdog"]
    refused = [
        (name, action, resource, index)
        for name, requests in seen.items()
        for action, resource, index in sorted(requests, key=str)
        if not allowed(template, roles[name], action, ids[resource], index)
    ]
    assert refused == [], refused


def _record(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:Delivery-delivery",
        "awsRegion": "eu-west-1",
    }


def test_every_request_of_the_api_is_granted(
    template: dict[str, Any], aws: tuple[Recorder, dict[str, str]]
) -> None:
    import json
    from datetime import UTC, datetime, timedelta

    from adapters.dynamodb.runs import DynamoRunStore
    from adapters.dynamodb.store import dynamo_store_from_settings
    from bootstrap.settings import Settings
    from domain.run import PendingOccurrence, RunStatus
    from handlers import api
    from tests.handlers.test_api import rest_event

    recorder, _ = aws
    api._default_services.cache_clear()
    role = function_role(template, "handlers.api.handler")
    ids = {
        **{
            d.logical_id: logical_id(template, "AWS::DynamoDB::Table", f"Tables{d.logical_id}")
            for d in TABLES
        },
        "Delivery-delivery": next(
            k
            for k, q in resources(template, "AWS::SQS::Queue").items()
            if "RedrivePolicy" in q["Properties"]
        ),
        "Delivery-delivery-dlq": logical_id(template, "AWS::SQS::Queue", "DeliveryDeliveryDlq"),
    }

    def call(method: str, path: str, body: Any = None, query: Any = None) -> dict[str, Any]:
        event = rest_event(
            method,
            path,
            body=None if body is None else json.dumps(body),
            headers={"Content-Type": "application/json"},
            query=query,
        )
        answer = api.handler(event, None)
        assert answer["statusCode"] < 300, answer
        return dict(json.loads(answer["body"]))

    schedule = call(
        "POST",
        "/schedules",
        {
            "name": "r",
            "spec": {"every": "PT1M"},
            "target": {"type": "webhook", "url": "https://example.com/h"},
        },
    )
    run = call("POST", f"/schedules/{schedule['id']}/trigger")
    # A worker's part, not the API's: admit, attempt and fail it.
    store = dynamo_store_from_settings(Settings.from_env())
    now = datetime.now(UTC)
    pending = store.records.get_run(run["occurrence_id"])
    assert pending is not None
    store.records.admit([PendingOccurrence.of(pending)], now)
    runs = DynamoRunStore(store)
    runs.start_attempt(
        run["occurrence_id"], now=now, lease_until=now + timedelta(minutes=1), run_token_hash=None
    )
    runs.finish(run["occurrence_id"], attempt=1, status=RunStatus.FAILED, now=now, reason="x")

    recorder.requests = set()
    call("POST", f"/schedules/{schedule['id']}/acknowledge", {"note": "known outage"})
    call(
        "GET",
        f"/schedules/{schedule['id']}/runs",
        query={"status": "failed", "since": "2026-01-01T00:00:00Z"},
    )
    call("GET", "/runs", query={"status": "failed,expired", "order": "oldest"})
    call("POST", f"/runs/{run['occurrence_id']}/retry")
    call("GET", f"/runs/{run['occurrence_id']}")
    call("GET", "/dead-letters")
    assert ("sqs:SendMessage", "Delivery-delivery", None) in recorder.requests
    assert ("sqs:ReceiveMessage", "Delivery-delivery-dlq", None) in recorder.requests
    assert ("dynamodb:PutItem", LEASES.logical_id, f"H#ack:{schedule['id']}") in recorder.keys
    assert refusals(template, role, recorder, ids) == []
    assert {r[1] for r in recorder.requests} <= set(ids)
    api._default_services.cache_clear()  # its clients belong to this moto


def test_a_watchdog_pass_that_cannot_judge_a_schedule_is_granted_and_publishes(
    template: dict[str, Any],
    aws: tuple[Recorder, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It records the schedule as unknown (its verdict, in the leases table) and
    tells the alarm topic; it writes neither the schedules nor the runs table,
    which its role may only read."""
    from adapters.definitions import ENV_ALERT_TOPIC_ARN
    from adapters.dynamodb.store import dynamo_store_from_settings
    from bootstrap.settings import Settings
    from handlers import watchdog
    from service import watchdog as service_watchdog
    from service.clock import SystemClock
    from service.schedules import ScheduleService

    recorder, queues = aws
    topic = boto3.client("sns").create_topic(Name="alarms")["TopicArn"]
    monkeypatch.setenv(ENV_ALERT_TOPIC_ARN, topic)
    monkeypatch.setattr(watchdog, "_container_watchdog", None)
    store = dynamo_store_from_settings(Settings.from_env())
    ScheduleService(store, SystemClock()).create(
        definition(
            {
                "name": "poisoned",
                "spec": {"every": "PT1M"},
                "target": {"type": "sqs", "queue_url": queues["target"]},
            }
        )
    )

    def broken(*args: Any) -> Any:
        raise OverflowError("date value out of range")

    monkeypatch.setattr(service_watchdog, "watch", broken)
    recorder.requests = set()
    result = watchdog.handler({}, None)

    assert len(result["unknown"]) == 1 and result["alerts"]["sent"] == 1
    role = function_role(template, "handlers.watchdog.handler")
    ids = {
        **{
            d.logical_id: logical_id(template, "AWS::DynamoDB::Table", f"Tables{d.logical_id}")
            for d in TABLES
        },
        "alarms": logical_id(template, "AWS::SNS::Topic", "AlarmsTopic"),
    }
    assert ("sns:Publish", "alarms", None) in recorder.requests
    assert not {
        r
        for r in recorder.requests
        if r[1] in (SCHEDULES.logical_id, OCCURRENCES.logical_id)
        and r[0] in ("dynamodb:PutItem", "dynamodb:UpdateItem")
    }
    assert refusals(template, role, recorder, ids) == []
