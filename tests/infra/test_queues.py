"""The delivery queue: redrive to a DLQ, encrypted, TLS only, and a worker that keeps up."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.definitions import DELIVERY_QUEUE
from tests.infra.conftest import Synthesized
from tests.infra.helpers import dumps, function, only, resources


@pytest.fixture(scope="module")
def delivery(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    found = [
        (k, v)
        for k, v in resources(template, "AWS::SQS::Queue").items()
        if "RedrivePolicy" in v["Properties"]
    ]
    assert len(found) == 1
    return found[0]


def test_delivery_queue_redrives_to_its_dlq_after_the_defined_receive_count(
    delivery: tuple[str, dict[str, Any]],
) -> None:
    _, queue = delivery
    redrive = queue["Properties"]["RedrivePolicy"]
    assert redrive["maxReceiveCount"] == DELIVERY_QUEUE.max_receive_count
    assert redrive["deadLetterTargetArn"]["Fn::GetAtt"][0].startswith("DeliveryDeliveryDlq")
    assert queue["Properties"]["VisibilityTimeout"] == DELIVERY_QUEUE.visibility_timeout_s
    assert queue["Properties"]["MessageRetentionPeriod"] == DELIVERY_QUEUE.retention_s


def test_every_queue_is_encrypted_and_refuses_plain_http(template: dict[str, Any]) -> None:
    queues = resources(template, "AWS::SQS::Queue")
    assert len(queues) == 4  # delivery, its DLQ, the scheduler's DLQ, the smoke queue
    policies = resources(template, "AWS::SQS::QueuePolicy").values()
    for queue_id, queue in queues.items():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
        denies_http = [
            s
            for p in policies
            if {"Ref": queue_id} in p["Properties"]["Queues"]
            for s in p["Properties"]["PolicyDocument"]["Statement"]
            if s["Effect"] == "Deny"
            and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        ]
        assert denies_http, f"{queue_id} accepts requests without TLS"


def test_worker_reports_partial_batch_failures_and_does_not_hold_a_due_message(
    template: dict[str, Any], delivery: tuple[str, dict[str, Any]]
) -> None:
    worker_id, _ = function(template, "handlers.worker.handler")
    _, mapping = only(template, "AWS::Lambda::EventSourceMapping")
    props = mapping["Properties"]
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["EventSourceArn"] == {"Fn::GetAtt": [delivery[0], "Arn"]}
    assert props["FunctionName"] == {"Ref": worker_id}
    # An intent becomes visible at its due second: a batching window would
    # start every run up to the window late.
    assert props.get("MaximumBatchingWindowInSeconds", 0) == 0
    assert 1 <= props["BatchSize"] <= 10


def test_the_queue_trigger_is_capped_so_a_burst_leaves_concurrency_to_the_rest(
    synthesized: Synthesized,
) -> None:
    # Without MaximumConcurrency a burst scales the queue trigger up to the
    # account's unreserved concurrency, throttling the API and the tick.
    _, default = only(synthesized.template("Duetime"), "AWS::Lambda::EventSourceMapping")
    _, sandbox = only(synthesized.template("DuetimeSandbox"), "AWS::Lambda::EventSourceMapping")
    assert default["Properties"]["ScalingConfig"] == {"MaximumConcurrency": 100}
    assert sandbox["Properties"]["ScalingConfig"] == {"MaximumConcurrency": 20}


def test_a_crashed_invocation_s_messages_come_back_soon_after_its_timeout(
    template: dict[str, Any], delivery: tuple[str, dict[str, Any]]
) -> None:
    # A message must not reappear while the invocation that received it may
    # still run, and must reappear soon after it cannot: a worker that crashed
    # or timed out delays its runs by the visibility timeout.
    _, worker = function(template, "handlers.worker.handler")
    _, mapping = only(template, "AWS::Lambda::EventSourceMapping")
    window = mapping["Properties"].get("MaximumBatchingWindowInSeconds", 0)
    visibility = delivery[1]["Properties"]["VisibilityTimeout"]
    assert visibility > worker["Properties"]["Timeout"] + window
    assert visibility <= 180


def test_the_scheduler_dlq_is_not_the_delivery_dlq(template: dict[str, Any]) -> None:
    targets = [
        dumps(s["Properties"]["Target"]["DeadLetterConfig"])
        for s in resources(template, "AWS::Scheduler::Schedule").values()
    ]
    assert targets and all("ScheduleDlq" in t for t in targets)


def test_the_smoke_queue_is_an_output_keeps_messages_briefly_and_refuses_plain_http(
    template: dict[str, Any],
) -> None:
    from tests.infra.helpers import logical_id

    smoke = logical_id(template, "AWS::SQS::Queue", "SmokeQueue")
    props = template["Resources"][smoke]["Properties"]
    assert props["MessageRetentionPeriod"] == 600
    assert props["SqsManagedSseEnabled"] is True
    outputs = template["Outputs"]
    assert outputs["SmokeQueueUrl"]["Value"] == {"Ref": smoke}
    assert outputs["SmokeQueueArn"]["Value"] == {"Fn::GetAtt": [smoke, "Arn"]}
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in template["Resources"].values()
        if p["Type"] == "AWS::SQS::QueuePolicy" and {"Ref": smoke} in p["Properties"]["Queues"]
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for statements in policies
        for s in statements
    )
