"""SQS, Lambda and EventBridge targets on moto, and the dispatcher that picks an adapter.

moto cannot run a Lambda function (no Docker here), so the Lambda tests check
the request that reaches it, and stub AWS's answers with botocore's Stubber to
check how each answer is read.
"""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from moto import mock_aws

from adapters.targets import (
    EventBridgeSender,
    LambdaInvoker,
    SqsSender,
    Targets,
    client_config,
)
from domain.delivery import Delivery, Outcome
from domain.targets import EventBridgeTarget, LambdaTarget, SqsTarget, Target, WebhookTarget

REGION = "eu-west-1"
ACCOUNT = "123456789012"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:nightly-report"


def random_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def make_delivery(attempt: int = 1, schedule_id: str = "sch_sales") -> Delivery:
    return Delivery(
        occurrence_id=f"occ_{schedule_id}_20260329T0100Z",
        schedule_id=schedule_id,
        version=1,
        scheduled_at=datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
        attempt=attempt,
        late_by_s=0.5,
        payload={"report": "sales"},
    )


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials and region: nothing here may reach real AWS."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


# SQS


def receive_all(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    return sqs.receive_message(  # type: ignore[no-any-return]
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["MessageGroupId", "MessageDeduplicationId"],
    ).get("Messages", [])


def test_sqs_sends_the_delivery_with_the_occurrence_id_attribute(aws: None) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = sqs.create_queue(QueueName=random_name("reports"))["QueueUrl"]
    delivery = make_delivery()

    outcome = SqsSender(sqs).deliver(SqsTarget(queue_url), delivery, timeout_s=5)

    assert (outcome.kind, outcome.status_code) == ("succeeded", 200)
    assert "MessageId" in json.loads(outcome.excerpt)
    [message] = receive_all(sqs, queue_url)
    assert message["Body"].encode() == delivery.to_json_body()
    attributes = message["MessageAttributes"]
    assert attributes["occurrence_id"]["StringValue"] == delivery.occurrence_id
    assert attributes["schedule_id"]["StringValue"] == "sch_sales"
    assert attributes["attempt"]["StringValue"] == "1"


def test_sqs_fifo_deduplicates_attempts_of_one_occurrence_grouped_by_schedule(aws: None) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = sqs.create_queue(
        QueueName=random_name("reports") + ".fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    sender, target = SqsSender(sqs), SqsTarget(queue_url)

    first = sender.deliver(target, make_delivery(attempt=1), timeout_s=5)
    second = sender.deliver(target, make_delivery(attempt=2), timeout_s=5)

    assert first.kind == second.kind == "succeeded"
    [message] = receive_all(sqs, queue_url)
    assert message["Attributes"]["MessageDeduplicationId"] == "occ_sch_sales_20260329T0100Z"
    assert message["Attributes"]["MessageGroupId"] == "sch_sales"


def test_sqs_fifo_uses_the_targets_group_when_it_has_one(aws: None) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = sqs.create_queue(
        QueueName=random_name("reports") + ".fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]

    SqsSender(sqs).deliver(SqsTarget(queue_url, "all-reports"), make_delivery(), timeout_s=5)

    [message] = receive_all(sqs, queue_url)
    assert message["Attributes"]["MessageGroupId"] == "all-reports"


def test_sqs_to_a_missing_queue_is_permanent(aws: None) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    target = SqsTarget(f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/no-such-queue")

    outcome = SqsSender(sqs).deliver(target, make_delivery(), timeout_s=5)

    assert outcome.kind == "permanent"
    assert outcome.error is not None and "NonExistentQueue" in outcome.error


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("RequestThrottled", 403, "transient"),
        ("ThrottlingException", 400, "transient"),
        ("InternalError", 500, "transient"),
        ("ServiceUnavailable", 503, "transient"),
        ("KMS.ThrottlingException", 400, "transient"),
        ("AccessDenied", 403, "permanent"),
        ("AWS.SimpleQueueService.NonExistentQueue", 400, "permanent"),
        ("InvalidParameterValue", 400, "permanent"),
    ],
)
def test_sqs_errors_are_sorted_into_transient_and_permanent(
    code: str, status: int, kind: str
) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/reports"
    with Stubber(sqs) as stub:
        stub.add_client_error("send_message", code, "said no", status)

        outcome = SqsSender(sqs).deliver(SqsTarget(queue_url), make_delivery(), timeout_s=5)

    assert (outcome.kind, outcome.status_code, outcome.error) == (kind, status, f"{code}: said no")


# Lambda


def create_function(name: str) -> str:
    iam = boto3.client("iam", region_name=REGION)
    role = iam.create_role(
        RoleName=random_name("role"),
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("job.py", "def handler(event, context):\n    return {'ok': True}\n")
    return str(
        boto3.client("lambda", region_name=REGION).create_function(
            FunctionName=name,
            Runtime="python3.11",
            Role=role,
            Handler="job.handler",
            Code={"ZipFile": code.getvalue()},
        )["FunctionArn"]
    )


@pytest.mark.parametrize("invocation_type", ["Event", "RequestResponse"])
def test_lambda_is_invoked_with_the_delivery_and_the_targets_invocation_type(
    aws: None, invocation_type: str
) -> None:
    function_arn = create_function(random_name("job"))
    client = boto3.client("lambda", region_name=REGION)
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.lambda.Invoke", lambda params, **_: sent.append(dict(params))
    )
    delivery = make_delivery()

    outcome = LambdaInvoker(client).deliver(
        LambdaTarget(function_arn, invocation_type),  # type: ignore[arg-type]
        delivery,
        timeout_s=5,
    )

    assert sent == [
        {
            "FunctionName": function_arn,
            "InvocationType": invocation_type,
            "Payload": delivery.to_json_body(),
        }
    ]
    # moto answers without running the code; what it answered is read by the stubbed tests.
    assert outcome.status_code == (202 if invocation_type == "Event" else 200)


def test_lambda_to_a_missing_function_is_permanent(aws: None) -> None:
    client = boto3.client("lambda", region_name=REGION)

    outcome = LambdaInvoker(client).deliver(
        LambdaTarget(FUNCTION_ARN), make_delivery(), timeout_s=5
    )

    assert outcome.kind == "permanent"
    assert outcome.error is not None and outcome.error.startswith("ResourceNotFoundException")


def streaming(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


def invoke_stubbed(response: dict[str, Any], invocation_type: str = "RequestResponse") -> Outcome:
    client = boto3.client("lambda", region_name=REGION)
    delivery = make_delivery()
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            response,
            {
                "FunctionName": FUNCTION_ARN,
                "InvocationType": invocation_type,
                "Payload": delivery.to_json_body(),
            },
        )
        return LambdaInvoker(client).deliver(
            LambdaTarget(FUNCTION_ARN, invocation_type),  # type: ignore[arg-type]
            delivery,
            timeout_s=5,
        )


def test_lambda_request_response_result_is_the_runs_result() -> None:
    outcome = invoke_stubbed({"StatusCode": 200, "Payload": streaming(b'{"rows": 42}')})

    assert (outcome.kind, outcome.status_code, outcome.excerpt) == (
        "succeeded",
        200,
        '{"rows": 42}',
    )


def test_lambda_event_invocation_succeeds_when_lambda_queues_it() -> None:
    outcome = invoke_stubbed({"StatusCode": 202, "Payload": streaming(b"")}, "Event")

    assert (outcome.kind, outcome.status_code) == ("succeeded", 202)


@pytest.mark.parametrize("function_error", ["Unhandled", "Handled"])
def test_a_function_error_is_transient_and_names_the_error(function_error: str) -> None:
    error = b'{"errorType": "KeyError", "errorMessage": "\'region\'", "stackTrace": []}'

    outcome = invoke_stubbed(
        {"StatusCode": 200, "FunctionError": function_error, "Payload": streaming(error)}
    )

    assert outcome.kind == "transient"
    assert outcome.error == f"the function failed ({function_error}): KeyError: 'region'"
    assert "stackTrace" in outcome.excerpt


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("TooManyRequestsException", 429, "transient"),
        ("ServiceException", 500, "transient"),
        ("EC2ThrottledException", 502, "transient"),
        ("ResourceNotReadyException", 502, "transient"),
        ("ResourceConflictException", 409, "transient"),
        ("ResourceNotFoundException", 404, "permanent"),
        ("AccessDeniedException", 403, "permanent"),
        ("RequestTooLargeException", 413, "permanent"),
        ("InvalidRequestContentException", 400, "permanent"),
    ],
)
def test_lambda_errors_are_sorted_into_transient_and_permanent(
    code: str, status: int, kind: str
) -> None:
    client = boto3.client("lambda", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_client_error("invoke", code, "said no", status)

        outcome = LambdaInvoker(client).deliver(
            LambdaTarget(FUNCTION_ARN), make_delivery(), timeout_s=5
        )

    assert (outcome.kind, outcome.status_code) == (kind, status)


# EventBridge


def bus_with_sink(events: Any, sqs: Any, source: str = "duetime") -> tuple[str, str]:
    """A bus whose rule forwards every event from ``source`` to a queue."""
    bus = random_name("ops")
    events.create_event_bus(Name=bus)
    sink = sqs.create_queue(QueueName=random_name("sink"))["QueueUrl"]
    sink_arn = sqs.get_queue_attributes(QueueUrl=sink, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(Name="all", EventBusName=bus, EventPattern=json.dumps({"source": [source]}))
    events.put_targets(Rule="all", EventBusName=bus, Targets=[{"Id": "sink", "Arn": sink_arn}])
    return bus, sink


def test_eventbridge_puts_the_delivery_as_the_events_detail(aws: None) -> None:
    events = boto3.client("events", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    bus, sink = bus_with_sink(events, sqs)
    delivery = make_delivery()

    outcome = EventBridgeSender(events).deliver(EventBridgeTarget(bus), delivery, timeout_s=5)

    assert outcome.kind == "succeeded"
    assert "EventId" in json.loads(outcome.excerpt)
    [message] = receive_all(sqs, sink)
    event = json.loads(message["Body"])
    assert event["source"] == "duetime"
    assert event["detail-type"] == "duetime.occurrence"
    assert event["detail"] == delivery.to_dict()


def test_eventbridge_uses_the_targets_source_and_detail_type(aws: None) -> None:
    events = boto3.client("events", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    bus, sink = bus_with_sink(events, sqs, source="com.example.reports")
    target = EventBridgeTarget(bus, source="com.example.reports", detail_type="Report due")

    outcome = EventBridgeSender(events).deliver(target, make_delivery(), timeout_s=5)

    assert outcome.kind == "succeeded"
    [message] = receive_all(sqs, sink)
    assert json.loads(message["Body"])["detail-type"] == "Report due"


def test_eventbridge_to_a_missing_bus_is_permanent(aws: None) -> None:
    events = boto3.client("events", region_name=REGION)

    outcome = EventBridgeSender(events).deliver(
        EventBridgeTarget("no-such-bus"), make_delivery(), timeout_s=5
    )

    assert outcome.kind == "permanent"


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("ThrottlingException", "transient"),
        ("InternalFailure", "transient"),
        ("AccessDeniedException", "permanent"),
        ("MalformedDetail", "permanent"),
        ("NotAuthorizedForSourceException", "permanent"),
    ],
)
def test_a_failed_eventbridge_entry_is_sorted_by_its_error_code(code: str, kind: str) -> None:
    events = boto3.client("events", region_name=REGION)
    with Stubber(events) as stub:
        stub.add_response(
            "put_events",
            {"FailedEntryCount": 1, "Entries": [{"ErrorCode": code, "ErrorMessage": "said no"}]},
        )

        outcome = EventBridgeSender(events).deliver(
            EventBridgeTarget("ops"), make_delivery(), timeout_s=5
        )

    assert (outcome.kind, outcome.error) == (kind, f"{code}: said no")


# The dispatcher


@dataclass
class RecordingAdapter:
    """A target adapter that records what it was asked to deliver."""

    answer: Outcome = field(default_factory=lambda: Outcome.succeeded(200))
    calls: list[tuple[Target, Delivery, float]] = field(default_factory=list)

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.calls.append((target, delivery, timeout_s))
        return self.answer


class BrokenAdapter:
    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        raise RuntimeError("bug")


def test_targets_picks_the_adapter_by_the_targets_type() -> None:
    webhook, sqs = RecordingAdapter(), RecordingAdapter(Outcome.accepted())
    targets = Targets({"webhook": webhook, "sqs": sqs})
    hook = WebhookTarget("https://hooks.example.com/run")
    queue = SqsTarget(f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/reports")

    assert targets.deliver(hook, make_delivery(), timeout_s=3).kind == "succeeded"
    assert targets.deliver(queue, make_delivery(), timeout_s=4).kind == "accepted"
    assert [(call[0], call[2]) for call in webhook.calls] == [(hook, 3)]
    assert [(call[0], call[2]) for call in sqs.calls] == [(queue, 4)]


def test_a_target_type_without_an_adapter_fails_permanently() -> None:
    outcome = Targets({}).deliver(LambdaTarget(FUNCTION_ARN), make_delivery(), timeout_s=3)

    assert outcome.kind == "permanent"
    assert outcome.error == "lambda targets are not enabled in this deployment"


def test_an_adapter_that_raises_gives_a_transient_outcome() -> None:
    outcome = Targets({"eventbridge": BrokenAdapter()}).deliver(
        EventBridgeTarget("ops"), make_delivery(), timeout_s=3
    )

    assert outcome.kind == "transient"
    assert outcome.error == "eventbridge adapter failed: RuntimeError: bug"


def test_targets_build_delivers_to_every_aws_kind_on_moto(aws: None) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    events = boto3.client("events", region_name=REGION)
    queue_url = sqs.create_queue(QueueName=random_name("reports"))["QueueUrl"]
    bus, _ = bus_with_sink(events, sqs)
    webhook = RecordingAdapter()
    targets = Targets.build(
        webhook=webhook,
        sqs_client=sqs,
        lambda_client=boto3.client("lambda", region_name=REGION),
        events_client=events,
    )

    assert targets.types == {"webhook", "sqs", "lambda", "eventbridge"}
    assert targets.deliver(SqsTarget(queue_url), make_delivery(), timeout_s=5).delivered
    assert targets.deliver(EventBridgeTarget(bus), make_delivery(), timeout_s=5).delivered
    assert targets.deliver(
        WebhookTarget("https://a.example"), make_delivery(), timeout_s=5
    ).delivered
    assert len(webhook.calls) == 1


def test_client_config_bounds_every_aws_call() -> None:
    config = client_config(timeout_s=20)

    assert (config.connect_timeout, config.read_timeout) == (5.0, 20)
    assert config.retries == {"max_attempts": 2, "mode": "standard"}
