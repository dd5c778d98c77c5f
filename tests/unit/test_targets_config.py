"""Targets as API input: what is accepted, what is refused, and the field each refusal names."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from domain.delivery import EXCERPT_LIMIT_BYTES, Delivery, Outcome
from domain.errors import InvalidSchedule
from domain.targets import (
    EventBridgeTarget,
    LambdaTarget,
    SqsTarget,
    WebhookTarget,
    parse_target,
    target_to_dict,
)

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/reports"
FUNCTION = "arn:aws:lambda:eu-west-1:123456789012:function:nightly-report"


@pytest.mark.parametrize(
    "data",
    [
        {"type": "webhook", "url": "https://hooks.example.com/duetime"},
        {
            "type": "webhook",
            "url": "http://10.0.0.5:8080/run?job=sales",
            "headers": {"Authorization": "Bearer abc", "X-Team": "sales"},
            "timeout_s": 2.5,
        },
        {"type": "sqs", "queue_url": QUEUE},
        {"type": "sqs", "queue_url": QUEUE + ".fifo", "message_group_id": "reports"},
        {"type": "sqs", "queue_url": "http://127.0.0.1:4566/000000000000/local-queue"},
        {"type": "lambda", "function_arn": FUNCTION},
        {
            "type": "lambda",
            "function_arn": FUNCTION + ":live",
            "invocation_type": "RequestResponse",
        },
        {"type": "eventbridge", "event_bus_name": "default"},
        {
            "type": "eventbridge",
            "event_bus_name": "arn:aws:events:eu-west-1:123456789012:event-bus/ops",
            "source": "com.example.scheduler",
            "detail_type": "Report due",
        },
    ],
)
def test_a_valid_target_reads_back_unchanged(data: dict[str, Any]) -> None:
    target = parse_target(data)

    assert parse_target(target_to_dict(target)) == target
    assert target_to_dict(target)["type"] == data["type"]
    json.dumps(target_to_dict(target))  # storable as JSON as it is


def test_defaults_are_written_out() -> None:
    assert target_to_dict(parse_target({"type": "webhook", "url": "https://a.example"})) == {
        "type": "webhook",
        "url": "https://a.example",
        "headers": {},
        "timeout_s": 10.0,
    }
    assert parse_target({"type": "lambda", "function_arn": FUNCTION}) == LambdaTarget(
        FUNCTION, "Event"
    )
    assert parse_target({"type": "eventbridge", "event_bus_name": "b"}) == EventBridgeTarget(
        "b", "duetime", "duetime.occurrence"
    )


def test_headers_keep_their_order_and_may_be_pairs() -> None:
    target = parse_target(
        {"type": "webhook", "url": "https://a.example", "headers": [["X-B", "2"], ["X-A", "1"]]}
    )

    assert isinstance(target, WebhookTarget)
    assert target.headers == (("X-B", "2"), ("X-A", "1"))
    assert target_to_dict(target)["headers"] == {"X-B": "2", "X-A": "1"}


def test_no_secret_is_part_of_a_target() -> None:
    for data in (
        {"type": "webhook", "url": "https://a.example"},
        {"type": "webhook", "url": "https://a.example", "secret": "s3cr3t"},
    ):
        try:
            target = parse_target(data)
        except InvalidSchedule as refused:
            assert refused.field == "target.secret"
            continue
        assert "secret" not in json.dumps(target_to_dict(target))


def test_fifo_is_known_from_the_queue_url() -> None:
    assert SqsTarget(QUEUE + ".fifo").is_fifo
    assert not SqsTarget(QUEUE).is_fifo


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (None, "target"),
        ("https://a.example", "target"),
        ({}, "target.type"),
        ({"type": "email"}, "target.type"),
        ({"type": "webhook"}, "target.url"),
        ({"type": "webhook", "url": 42}, "target.url"),
        ({"type": "webhook", "url": ""}, "target.url"),
        ({"type": "webhook", "url": "ftp://a.example/x"}, "target.url"),
        ({"type": "webhook", "url": "file:///etc/passwd"}, "target.url"),
        ({"type": "webhook", "url": "a.example/hook"}, "target.url"),
        ({"type": "webhook", "url": "https:///no-host"}, "target.url"),
        ({"type": "webhook", "url": "https://user:pw@a.example/"}, "target.url"),
        ({"type": "webhook", "url": "https://a.example:99999/"}, "target.url"),
        ({"type": "webhook", "url": "https://a.example/with space"}, "target.url"),
        ({"type": "webhook", "url": "https://a.example/\r\nX-Evil: 1"}, "target.url"),
        ({"type": "webhook", "url": "https://a.example/" + "x" * 3000}, "target.url"),
        ({"type": "webhook", "url": "https://a.example", "timeout_s": 0}, "target.timeout_s"),
        ({"type": "webhook", "url": "https://a.example", "timeout_s": -1}, "target.timeout_s"),
        ({"type": "webhook", "url": "https://a.example", "timeout_s": 121}, "target.timeout_s"),
        ({"type": "webhook", "url": "https://a.example", "timeout_s": "5"}, "target.timeout_s"),
        ({"type": "webhook", "url": "https://a.example", "timeout_s": True}, "target.timeout_s"),
        ({"type": "webhook", "url": "https://a.example", "headers": "X: 1"}, "target.headers"),
        (
            {"type": "webhook", "url": "https://a.example", "headers": {"Bad Name": "1"}},
            "target.headers.Bad Name",
        ),
        (
            {"type": "webhook", "url": "https://a.example", "headers": {"X-A": "1\r\nX-B: 2"}},
            "target.headers.X-A",
        ),
        (
            {"type": "webhook", "url": "https://a.example", "headers": {"X-A": 1}},
            "target.headers.X-A",
        ),
        (
            {"type": "webhook", "url": "https://a.example", "headers": {"Idempotency-Key": "k"}},
            "target.headers.Idempotency-Key",
        ),
        (
            {"type": "webhook", "url": "https://a.example", "headers": {"Host": "internal"}},
            "target.headers.Host",
        ),
        (
            {
                "type": "webhook",
                "url": "https://a.example",
                "headers": {"duetime-signature": "v1=forged"},
            },
            "target.headers.duetime-signature",
        ),
        (
            {
                "type": "webhook",
                "url": "https://a.example",
                "headers": {"Webhook-Signature": "v1,forged"},
            },
            "target.headers.Webhook-Signature",
        ),
        (
            {"type": "webhook", "url": "https://a.example", "headers": {"webhook-id": "other"}},
            "target.headers.webhook-id",
        ),
        (
            {
                "type": "webhook",
                "url": "https://a.example",
                "headers": [["X-A", "1"], ["x-a", "2"]],
            },
            "target.headers.x-a",
        ),
        (
            {"type": "webhook", "url": "https://a.example", "headers": [["X-A"]]},
            "target.headers[0]",
        ),
        ({"type": "webhook", "url": "https://a.example", "secret": "x"}, "target.secret"),
        ({"type": "sqs"}, "target.queue_url"),
        ({"type": "sqs", "queue_url": "reports"}, "target.queue_url"),
        ({"type": "sqs", "queue_url": "https://sqs.a.amazonaws.com/reports"}, "target.queue_url"),
        ({"type": "sqs", "queue_url": "https://sqs.x.amazonaws.com/12345/q"}, "target.queue_url"),
        ({"type": "sqs", "queue_url": QUEUE + "/extra"}, "target.queue_url"),
        ({"type": "sqs", "queue_url": QUEUE + "!"}, "target.queue_url"),
        ({"type": "sqs", "queue_url": QUEUE, "message_group_id": ""}, "target.message_group_id"),
        (
            {"type": "sqs", "queue_url": QUEUE, "message_group_id": "has space"},
            "target.message_group_id",
        ),
        ({"type": "sqs", "queue_url": QUEUE, "message_group_id": 7}, "target.message_group_id"),
        ({"type": "sqs", "queue_url": QUEUE, "url": "https://a.example"}, "target.url"),
        ({"type": "lambda"}, "target.function_arn"),
        ({"type": "lambda", "function_arn": "nightly-report"}, "target.function_arn"),
        (
            {"type": "lambda", "function_arn": "arn:aws:sqs:eu-west-1:123456789012:q"},
            "target.function_arn",
        ),
        (
            {"type": "lambda", "function_arn": FUNCTION, "invocation_type": "DryRun"},
            "target.invocation_type",
        ),
        (
            {"type": "lambda", "function_arn": FUNCTION, "invocation_type": "event"},
            "target.invocation_type",
        ),
        ({"type": "eventbridge"}, "target.event_bus_name"),
        ({"type": "eventbridge", "event_bus_name": "bad bus"}, "target.event_bus_name"),
        (
            {"type": "eventbridge", "event_bus_name": "default", "source": "aws.events"},
            "target.source",
        ),
        ({"type": "eventbridge", "event_bus_name": "default", "source": ""}, "target.source"),
        (
            {"type": "eventbridge", "event_bus_name": "default", "detail_type": "x" * 129},
            "target.detail_type",
        ),
    ],
)
def test_a_bad_target_is_refused_naming_the_field(data: object, field: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_target(data)

    assert refused.value.field == field
    assert str(refused.value).startswith(f"{field}: ")


def test_targets_built_in_code_are_checked_too() -> None:
    with pytest.raises(InvalidSchedule, match=r"^target\.url: "):
        WebhookTarget("gopher://a.example")
    with pytest.raises(InvalidSchedule, match=r"^target\.queue_url: "):
        SqsTarget("not a url")


# The delivery body every target receives.

SCHEDULED_AT = datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def make_delivery(**changes: object) -> Delivery:
    fields: dict[str, Any] = {
        "occurrence_id": "occ_01",
        "schedule_id": "sch_sales",
        "version": 3,
        "scheduled_at": SCHEDULED_AT,
        "attempt": 2,
        "late_by_s": 1.25,
        "payload": {"report": "sales", "region": "emea"},
    }
    fields.update(changes)
    return Delivery(**fields)


def test_the_body_carries_identity_attempt_lateness_and_payload() -> None:
    body = json.loads(make_delivery().to_json_body())

    assert body == {
        "occurrence_id": "occ_01",
        "schedule_id": "sch_sales",
        "version": 3,
        "scheduled_at": "2026-03-29T01:00:00Z",
        "attempt": 2,
        "late_by_s": 1.25,
        "payload": {"report": "sales", "region": "emea"},
    }


def test_the_body_carries_the_run_token_only_when_there_is_one() -> None:
    body = json.loads(make_delivery(run_token="tok_123").to_json_body())

    assert body["run_token"] == "tok_123"


def test_scheduled_at_is_written_in_utc_whatever_zone_it_came_in() -> None:
    london_summer = timezone(timedelta(hours=1))
    delivery = make_delivery(scheduled_at=datetime(2026, 3, 29, 2, 0, tzinfo=london_summer))

    assert json.loads(delivery.to_json_body())["scheduled_at"] == "2026-03-29T01:00:00Z"


def test_the_body_is_the_same_bytes_every_time() -> None:
    assert make_delivery().to_json_body() == make_delivery().to_json_body()


@pytest.mark.parametrize(
    "changes",
    [
        {"scheduled_at": datetime(2026, 3, 29, 1, 0)},
        {"attempt": 0},
        {"version": 0},
        {"late_by_s": -1.0},
        {"late_by_s": float("nan")},
        {"occurrence_id": ""},
    ],
)
def test_a_delivery_refuses_values_that_cannot_be_true(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        make_delivery(**changes)


def test_an_outcome_keeps_a_bounded_excerpt() -> None:
    outcome = Outcome.transient("HTTP 503", status_code=503, body="é" * 5000)

    assert len(outcome.excerpt.encode("utf-8")) <= EXCERPT_LIMIT_BYTES
    assert outcome.excerpt == "é" * (EXCERPT_LIMIT_BYTES // 2)
    assert outcome.retryable and not outcome.delivered


def test_accepted_and_succeeded_both_count_as_delivered() -> None:
    assert Outcome.succeeded(200).delivered
    assert Outcome.accepted().delivered
    assert not Outcome.permanent("HTTP 400", 400).delivered
