"""Deliver an occurrence to an AWS service: SQS, Lambda, EventBridge.

Each adapter sends the same JSON as the webhook (``Delivery.to_json_body()``)
and answers with an ``Outcome``; none of them raises for what AWS answered.

An AWS error is transient when waiting may fix it (throttling, a service
error, a timeout or a dropped connection, any HTTP 5xx or 429) and permanent
otherwise (no such queue, function or bus; no permission; a request AWS
refuses as invalid). The client's own retries (botocore's retry modes) run
before that: build the clients with ``control_client_config`` (SQS,
EventBridge) and ``lambda_client_config`` (Lambda) so a call is bounded and
a Lambda target is never invoked twice by botocore.

Lambda: ``Event`` invocations succeed when Lambda queues the event (HTTP
202); Lambda then retries a failing function itself (twice, by default).
``RequestResponse`` invocations succeed when the function returns; a
``FunctionError`` in the answer (the function raised, timed out or ran out of
memory, ``Handled`` or ``Unhandled``) is transient, so the schedule's retry
policy decides how often to try again. A function that knows retrying is
pointless should return normally and say so in its result.
"""

from __future__ import annotations

import json
from typing import Any, Final

from botocore.config import Config
from botocore.exceptions import ClientError, ParamValidationError

from domain.delivery import EXCERPT_LIMIT_BYTES, Delivery, Outcome
from domain.targets import EventBridgeTarget, LambdaTarget, SqsTarget, Target

# Error codes that mean "try again later" whatever the HTTP status says.
TRANSIENT_ERROR_CODES: Final = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "ServiceException",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "RequestTimeout",
        "RequestTimeoutException",
        "EC2ThrottledException",
        "ResourceNotReadyException",
        "ResourceConflictException",
        "KMSThrottlingException",
        "KMS.ThrottlingException",
        "AWS.SimpleQueueService.RequestThrottled",
    }
)


# A Lambda RequestResponse target may run this long before the worker stops
# waiting for it (the worker function's timeout leaves room for it and the
# recording of its outcome: infra.functions.WORKER_TIMEOUT).
LAMBDA_TARGET_READ_TIMEOUT_S: Final = 120.0
CONNECT_TIMEOUT_S: Final = 3.0
# SendMessage, PutEvents and the worker's own SQS and Secrets Manager calls
# answer in milliseconds; a read that takes longer is a failed attempt.
CONTROL_READ_TIMEOUT_S: Final = 10.0


def control_client_config() -> Config:
    """Quick calls: bounded, one retry by botocore (standard mode) on a
    throttle or a 5xx; the schedule's retry policy does the rest."""
    return Config(
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=CONTROL_READ_TIMEOUT_S,
        retries={"mode": "standard", "total_max_attempts": 2},
    )


def lambda_client_config() -> Config:
    """Lambda ``Invoke``: exactly one attempt (a retried invoke runs the target
    function again, outside the schedule's retry policy), and a read timeout
    that covers a RequestResponse function's run."""
    return Config(
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=LAMBDA_TARGET_READ_TIMEOUT_S,
        retries={"mode": "standard", "total_max_attempts": 1},
        tcp_keepalive=True,
    )


def client_config(timeout_s: float, max_attempts: int = 2) -> Config:
    """A botocore config whose calls are bounded by ``timeout_s`` (connect and read).

    For a Lambda ``RequestResponse`` target the read timeout must cover the
    function's own run time.
    """
    return Config(
        connect_timeout=min(timeout_s, 5.0),
        read_timeout=timeout_s,
        retries={"max_attempts": max_attempts, "mode": "standard"},
    )


def outcome_of_error(exc: Exception) -> Outcome:
    """A failed AWS call as an outcome: transient or permanent, with the error code."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "Unknown"))
        message = str(error.get("Message", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        text = f"{code}: {message}" if message else code
        if code in TRANSIENT_ERROR_CODES or (isinstance(status, int) and _retryable_status(status)):
            return Outcome.transient(text, status)
        return Outcome.permanent(text, status)
    if isinstance(exc, ParamValidationError):
        return Outcome.permanent(f"request refused before sending: {exc}")
    # Timeouts, dropped connections, and credential or endpoint trouble (which
    # belongs to the deployment, not the schedule): retry, and let the
    # attempts run out if it persists.
    return Outcome.transient(f"{type(exc).__name__}: {exc}")


def _retryable_status(status: int) -> bool:
    return status == 429 or 500 <= status < 600


class SqsSender:
    """The ``sqs`` target adapter: one ``SendMessage`` per attempt.

    The message carries the occurrence id as the ``occurrence_id`` string
    attribute. On a FIFO queue, ``MessageDeduplicationId`` is the occurrence
    id (SQS drops a repeat within its 5-minute window; past it, the consumer
    still has the attribute) and ``MessageGroupId`` is the target's group or,
    when it has none, the schedule id, so a schedule's occurrences stay in order.
    """

    def __init__(self, client: Any) -> None:
        self._client = client

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        if not isinstance(target, SqsTarget):
            return Outcome.permanent(f"the sqs adapter cannot deliver to a {target.type}")
        params: dict[str, Any] = {
            "QueueUrl": target.queue_url,
            "MessageBody": delivery.to_json_body().decode("utf-8"),
            "MessageAttributes": {
                "occurrence_id": {"DataType": "String", "StringValue": delivery.occurrence_id},
                "schedule_id": {"DataType": "String", "StringValue": delivery.schedule_id},
                "attempt": {"DataType": "Number", "StringValue": str(delivery.attempt)},
            },
        }
        if target.is_fifo:
            params["MessageDeduplicationId"] = delivery.occurrence_id
            params["MessageGroupId"] = target.message_group_id or delivery.schedule_id
        elif target.message_group_id is not None:
            params["MessageGroupId"] = target.message_group_id  # fair queues
        try:
            answer = self._client.send_message(**params)
        except Exception as exc:
            return outcome_of_error(exc)
        message_id = answer.get("MessageId")
        return Outcome.succeeded(_status(answer), json.dumps({"MessageId": message_id}))


class LambdaInvoker:
    """The ``lambda`` target adapter: one ``Invoke`` per attempt (see the module doc)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        if not isinstance(target, LambdaTarget):
            return Outcome.permanent(f"the lambda adapter cannot deliver to a {target.type}")
        try:
            answer = self._client.invoke(
                FunctionName=target.function_arn,
                InvocationType=target.invocation_type,
                Payload=delivery.to_json_body(),
            )
        except Exception as exc:
            return outcome_of_error(exc)
        status = answer.get("StatusCode")
        payload = answer.get("Payload")
        content = payload.read(EXCERPT_LIMIT_BYTES) if payload is not None else b""
        function_error = answer.get("FunctionError")
        if function_error:
            return Outcome.transient(
                f"the function failed ({function_error}){_error_summary(content)}", status, content
            )
        return Outcome.succeeded(status, content)


class EventBridgeSender:
    """The ``eventbridge`` target adapter: one ``PutEvents`` entry per attempt,
    the delivery as the event's ``detail``."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        if not isinstance(target, EventBridgeTarget):
            return Outcome.permanent(f"the eventbridge adapter cannot deliver to a {target.type}")
        entry = {
            "Source": target.source,
            "DetailType": target.detail_type,
            "Detail": delivery.to_json_body().decode("utf-8"),
            "EventBusName": target.event_bus_name,
        }
        try:
            answer = self._client.put_events(Entries=[entry])
        except Exception as exc:
            return outcome_of_error(exc)
        entries = answer.get("Entries") or [{}]
        result = entries[0]
        if answer.get("FailedEntryCount", 0) or result.get("ErrorCode"):
            code = str(result.get("ErrorCode", "Unknown"))
            text = f"{code}: {result.get('ErrorMessage', '')}".rstrip(": ")
            if code in TRANSIENT_ERROR_CODES:
                return Outcome.transient(text, _status(answer))
            return Outcome.permanent(text, _status(answer))
        return Outcome.succeeded(_status(answer), json.dumps({"EventId": result.get("EventId")}))


def _status(answer: dict[str, Any]) -> int | None:
    status = answer.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def _error_summary(content: bytes) -> str:
    """``: <errorType>: <errorMessage>`` from a Lambda error payload, when it has them."""
    try:
        data = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return ""
    if not isinstance(data, dict):
        return ""
    parts = [str(data[k]) for k in ("errorType", "errorMessage") if data.get(k)]
    return ": " + ": ".join(parts) if parts else ""
