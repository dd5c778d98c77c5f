"""Where an occurrence is delivered: a webhook, an SQS queue, a Lambda function,
an EventBridge bus, or a command of the machine's jobs file.

A target is a plain value. ``target_of`` makes one from the fields a user
wrote (the API's request model calls it) and refuses anything it cannot
deliver to, naming the field (``target.url: ...``); ``target_to_dict`` writes
it for storage and ``parse_target`` reads that back, so that
``parse_target(target_to_dict(t)) == t``. The webhook's signing secret is not
part of a target: it is stored apart, per schedule, and never leaves the
secret store through these values.

Rules the checks follow:
- a webhook URL is ``http`` or ``https`` with a host, and carries no user
  name or password (credentials belong in a header, which is not logged);
- a webhook may add its own headers, but not the ones duetime sets itself
  (``Content-Type``, ``Idempotency-Key``, ``webhook-signature``,
  ``Duetime-*``, ``Host``, ...);
- an SQS queue URL has the shape ``<scheme>://<host>/<12-digit account>/<queue name>``;
- a Lambda target is a function ARN (optionally with a version or alias);
- an EventBridge target is a bus name or bus ARN, and its ``source`` may not
  start with ``aws.`` (EventBridge reserves it);
- a command target names a job of the jobs file the machine's owner wrote
  (docs/commands.md); it never carries a command line. Whether the job
  exists is the deployment's question (``service.schedules.TargetSupport``).

Whether a webhook's host resolves to an address duetime may call is decided
at delivery time, after DNS resolution, by the webhook adapter: a name can
resolve differently tomorrow, so it is not checked here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, Union
from urllib.parse import urlsplit

from domain.errors import InvalidSchedule

DEFAULT_WEBHOOK_TIMEOUT_S: Final = 10.0
# The longest a single call may take. The worker Lambda gets 150 s (its queue's
# visibility timeout, 180 s, follows from that); a job that takes longer answers
# 202 Accepted and reports completion with its run token.
MAX_TARGET_TIMEOUT_S: Final = 120.0
MAX_WEBHOOK_HEADERS: Final = 20
MAX_HEADER_VALUE_CHARS: Final = 4096
MAX_URL_CHARS: Final = 2048

# Headers duetime sets on every webhook call; a target may not override them.
RESERVED_HEADERS: Final = frozenset(
    {
        "content-type",
        "content-length",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "host",
        "idempotency-key",
        "user-agent",
        # The Standard Webhooks signature (adapters.targets.signing).
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
)
RESERVED_HEADER_PREFIX: Final = "duetime-"

InvocationType = Literal["Event", "RequestResponse"]
INVOCATION_TYPES: Final[tuple[str, ...]] = ("Event", "RequestResponse")

# RFC 9110 token characters: what a header name may be made of.
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$")
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_ACCOUNT_ID = re.compile(r"^\d{12}$")
_MESSAGE_GROUP_ID = re.compile(r"^[!-~]{1,128}$")  # printable ASCII, no space
_FUNCTION_ARN = re.compile(
    r"^arn:aws[a-zA-Z-]*:lambda:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:function:"
    r"[A-Za-z0-9_-]{1,64}(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$"
)
# A job's name: also a file name (its lock and its logs), so no / and no leading dot.
JOB_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_JOB_NAME = re.compile(JOB_NAME_PATTERN)
_BUS_NAME = re.compile(r"^[A-Za-z0-9._\-/]{1,256}$")
_BUS_ARN = re.compile(
    r"^arn:aws[a-zA-Z-]*:events:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:event-bus/[A-Za-z0-9._\-/]{1,256}$"
)


@dataclass(frozen=True)
class WebhookTarget:
    """An HTTP(S) endpoint that receives a signed JSON POST per attempt.

    ``headers`` are extra request headers, in order, as ``(name, value)``
    pairs; ``timeout_s`` bounds each call (connecting and reading).
    """

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = DEFAULT_WEBHOOK_TIMEOUT_S

    def __post_init__(self) -> None:
        _check_url(self.url)
        _check_headers(self.headers)
        _check_timeout(self.timeout_s, "target.timeout_s")

    @property
    def type(self) -> Literal["webhook"]:
        return "webhook"


@dataclass(frozen=True)
class SqsTarget:
    """An SQS queue. On a FIFO queue each message is grouped by
    ``message_group_id`` (or, when unset, by the schedule id) and deduplicated
    by the occurrence id."""

    queue_url: str
    message_group_id: str | None = None

    def __post_init__(self) -> None:
        _check_queue_url(self.queue_url)
        if self.message_group_id is not None and not _MESSAGE_GROUP_ID.match(self.message_group_id):
            raise InvalidSchedule(
                "target.message_group_id", "must be 1-128 printable ASCII characters, no spaces"
            )

    @property
    def type(self) -> Literal["sqs"]:
        return "sqs"

    @property
    def is_fifo(self) -> bool:
        return self.queue_url.endswith(".fifo")


@dataclass(frozen=True)
class LambdaTarget:
    """A Lambda function, invoked asynchronously (``Event``, the default, as
    EventBridge Scheduler does) or synchronously (``RequestResponse``, whose
    answer becomes the run's result)."""

    function_arn: str
    invocation_type: InvocationType = "Event"

    def __post_init__(self) -> None:
        if not isinstance(self.function_arn, str) or not _FUNCTION_ARN.match(self.function_arn):
            raise InvalidSchedule(
                "target.function_arn",
                "must be a Lambda function ARN such as "
                "arn:aws:lambda:eu-west-1:123456789012:function:my-job",
            )
        if self.invocation_type not in INVOCATION_TYPES:
            raise InvalidSchedule("target.invocation_type", "must be one of Event, RequestResponse")

    @property
    def type(self) -> Literal["lambda"]:
        return "lambda"


@dataclass(frozen=True)
class EventBridgeTarget:
    """An EventBridge bus; the delivery is the event's ``detail``."""

    event_bus_name: str
    source: str = "duetime"
    detail_type: str = "duetime.occurrence"

    def __post_init__(self) -> None:
        bus = self.event_bus_name
        if not isinstance(bus, str) or not (_BUS_NAME.match(bus) or _BUS_ARN.match(bus)):
            raise InvalidSchedule(
                "target.event_bus_name",
                "must be an event bus name (letters, digits, . _ - /) or an event bus ARN",
            )
        if not isinstance(self.source, str) or not 1 <= len(self.source) <= 256:
            raise InvalidSchedule("target.source", "must be 1-256 characters")
        if self.source.lower().startswith("aws."):
            raise InvalidSchedule("target.source", "may not start with 'aws.' (reserved by AWS)")
        if not isinstance(self.detail_type, str) or not 1 <= len(self.detail_type) <= 128:
            raise InvalidSchedule("target.detail_type", "must be 1-128 characters")

    @property
    def type(self) -> Literal["eventbridge"]:
        return "eventbridge"


def check_job_name(name: object, field: str = "target.job") -> str:
    """A job name as the jobs file and a command target spell it."""
    if not isinstance(name, str) or not _JOB_NAME.match(name):
        raise InvalidSchedule(
            field, "must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class CommandTarget:
    """A job of the jobs file of the machine that runs it (``duetime local
    --jobs FILE``): the schedule names it, the file says what it runs."""

    job: str

    def __post_init__(self) -> None:
        check_job_name(self.job)

    @property
    def type(self) -> Literal["command"]:
        return "command"


Target = Union[WebhookTarget, SqsTarget, LambdaTarget, EventBridgeTarget, CommandTarget]  # noqa: UP007

TARGET_TYPES: Final[tuple[str, ...]] = ("webhook", "sqs", "lambda", "eventbridge", "command")

# The keys each target type accepts, besides "type".
_FIELDS: Final[dict[str, frozenset[str]]] = {
    "webhook": frozenset({"url", "headers", "timeout_s"}),
    "sqs": frozenset({"queue_url", "message_group_id"}),
    "lambda": frozenset({"function_arn", "invocation_type"}),
    "eventbridge": frozenset({"event_bus_name", "source", "detail_type"}),
    "command": frozenset({"job"}),
}


def parse_target(data: object) -> Target:
    """A target from its JSON object (a stored one: ``target_to_dict``), or
    ``InvalidSchedule`` naming the field."""
    if not isinstance(data, Mapping):
        raise InvalidSchedule("target", "must be an object with a 'type'")
    kind = data.get("type")
    if kind is None:
        raise InvalidSchedule("target.type", "is required")
    return target_of(kind, {key: value for key, value in data.items() if key != "type"})


def target_of(kind: object, fields: Mapping[str, Any]) -> Target:
    """The target of type ``kind`` with ``fields`` (the JSON values a user
    wrote, absent ones left out), or ``InvalidSchedule`` naming the field.

    For example ``target_of("webhook", {"url": "https://example.com/hook",
    "headers": {"X-Team": "sales"}})``. A field of another type is refused, so
    a misspelt or misplaced field is not silently ignored.
    """
    if kind not in _FIELDS:
        raise InvalidSchedule("target.type", f"must be one of {', '.join(TARGET_TYPES)}")
    unknown = sorted(str(key) for key in fields if key not in _FIELDS[kind])
    if unknown:
        raise InvalidSchedule(f"target.{unknown[0]}", f"is not a field of a {kind} target")
    data = fields
    if kind == "webhook":
        return WebhookTarget(
            url=_required_str(data, "url"),
            headers=_parse_headers(data.get("headers")),
            timeout_s=_number(data, "timeout_s", DEFAULT_WEBHOOK_TIMEOUT_S),
        )
    if kind == "sqs":
        return SqsTarget(
            queue_url=_required_str(data, "queue_url"),
            message_group_id=_optional_str(data, "message_group_id"),
        )
    if kind == "lambda":
        invocation_type = data.get("invocation_type", "Event")
        if invocation_type not in INVOCATION_TYPES:
            raise InvalidSchedule("target.invocation_type", "must be one of Event, RequestResponse")
        return LambdaTarget(
            function_arn=_required_str(data, "function_arn"),
            invocation_type=invocation_type,
        )
    if kind == "command":
        return CommandTarget(job=_required_str(data, "job"))
    source = _optional_str(data, "source")
    detail_type = _optional_str(data, "detail_type")
    return EventBridgeTarget(
        event_bus_name=_required_str(data, "event_bus_name"),
        source="duetime" if source is None else source,
        detail_type="duetime.occurrence" if detail_type is None else detail_type,
    )


def keep_header_values(target: Target, kept: Sequence[str], current: Target | None) -> Target:
    """``target`` with each header named in ``kept`` (sent as null on an edit)
    given the value it has in the schedule's ``current`` target (None for a new
    schedule). A schedule is shown with its header names and never their values
    (they can be credentials), so an edit that sends back what it read keeps
    them. A null for a header the schedule does not have is refused, naming it."""
    if not kept or not isinstance(target, WebhookTarget):
        return target
    stored = {}
    if isinstance(current, WebhookTarget):
        stored = {name.lower(): value for name, value in current.headers}
    names = {name.lower() for name in kept}
    headers = []
    for name, value in target.headers:
        if name.lower() in names:
            if name.lower() not in stored:
                raise InvalidSchedule(
                    f"target.headers.{name}",
                    "is null, which keeps the value the schedule had for it, and it had "
                    "none: send its value",
                )
            value = stored[name.lower()]
        headers.append((name, value))
    return replace(target, headers=tuple(headers))


def target_to_dict(target: Target) -> dict[str, Any]:
    """The JSON object for a target; ``parse_target`` reads it back unchanged.

    Every field is written, defaults included, so a stored target does not
    change meaning if a default changes later.
    """
    if isinstance(target, WebhookTarget):
        return {
            "type": "webhook",
            "url": target.url,
            "headers": dict(target.headers),
            "timeout_s": target.timeout_s,
        }
    if isinstance(target, SqsTarget):
        out: dict[str, Any] = {"type": "sqs", "queue_url": target.queue_url}
        if target.message_group_id is not None:
            out["message_group_id"] = target.message_group_id
        return out
    if isinstance(target, LambdaTarget):
        return {
            "type": "lambda",
            "function_arn": target.function_arn,
            "invocation_type": target.invocation_type,
        }
    if isinstance(target, CommandTarget):
        return {"type": "command", "job": target.job}
    return {
        "type": "eventbridge",
        "event_bus_name": target.event_bus_name,
        "source": target.source,
        "detail_type": target.detail_type,
    }


def _required_str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        raise InvalidSchedule(f"target.{key}", "is required")
    if not isinstance(value, str):
        raise InvalidSchedule(f"target.{key}", "must be a string")
    return value


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidSchedule(f"target.{key}", "must be a string")
    return value


def _number(data: Mapping[str, Any], key: str, default: float) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidSchedule(f"target.{key}", "must be a number")
    return float(value)


def _parse_headers(value: object) -> tuple[tuple[str, str], ...]:
    """Headers as a JSON object ``{"Name": "value"}`` or a list of ``[name, value]`` pairs."""
    if value is None:
        return ()
    pairs: list[tuple[object, object]]
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, list | tuple):
        pairs = []
        for i, pair in enumerate(value):
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise InvalidSchedule(f"target.headers[{i}]", "must be a [name, value] pair")
            pairs.append((pair[0], pair[1]))
    else:
        raise InvalidSchedule("target.headers", "must be an object of header names to values")
    for name, header_value in pairs:
        if not isinstance(name, str) or not isinstance(header_value, str):
            raise InvalidSchedule(f"target.headers.{name}", "names and values must be strings")
    return tuple((str(name), str(header_value)) for name, header_value in pairs)


def _check_url(url: object) -> None:
    if not isinstance(url, str) or not url:
        raise InvalidSchedule("target.url", "is required")
    if len(url) > MAX_URL_CHARS:
        raise InvalidSchedule("target.url", f"must be at most {MAX_URL_CHARS} characters")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise InvalidSchedule("target.url", "must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidSchedule("target.url", f"is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidSchedule("target.url", "must start with http:// or https://")
    if not parts.hostname:
        raise InvalidSchedule("target.url", "must have a host")
    if parts.username is not None or parts.password is not None:
        raise InvalidSchedule(
            "target.url", "must not carry a user name or password; send credentials in a header"
        )
    if port == 0:
        raise InvalidSchedule("target.url", "port must be 1-65535")
    if parts.fragment:
        raise InvalidSchedule("target.url", "must not have a #fragment")


def _check_headers(headers: object) -> None:
    if not isinstance(headers, tuple):
        raise InvalidSchedule("target.headers", "must be a tuple of (name, value) pairs")
    if len(headers) > MAX_WEBHOOK_HEADERS:
        raise InvalidSchedule("target.headers", f"at most {MAX_WEBHOOK_HEADERS} headers")
    seen: set[str] = set()
    for pair in headers:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise InvalidSchedule("target.headers", "must be (name, value) pairs")
        name, value = pair
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise InvalidSchedule(f"target.headers.{name}", "is not a valid header name")
        lowered = name.lower()
        if lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIX):
            raise InvalidSchedule(f"target.headers.{name}", "is set by duetime and cannot be set")
        if lowered in seen:
            raise InvalidSchedule(f"target.headers.{name}", "is given twice")
        seen.add(lowered)
        if not isinstance(value, str):
            raise InvalidSchedule(f"target.headers.{name}", "value must be a string")
        if len(value) > MAX_HEADER_VALUE_CHARS:
            raise InvalidSchedule(
                f"target.headers.{name}", f"value must be at most {MAX_HEADER_VALUE_CHARS} chars"
            )
        # CR or LF would let a value start a new header (header injection);
        # HTTP/1.1 header values are sent as bytes, so keep them to ASCII.
        if any(not (ch == "\t" or 0x20 <= ord(ch) < 0x7F) for ch in value):
            raise InvalidSchedule(
                f"target.headers.{name}", "value must be printable ASCII (no control characters)"
            )


def _check_timeout(value: object, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidSchedule(field, "must be a number of seconds")
    if not math.isfinite(value) or not 0 < value <= MAX_TARGET_TIMEOUT_S:
        raise InvalidSchedule(field, f"must be more than 0 and at most {MAX_TARGET_TIMEOUT_S:g}")


def _check_queue_url(url: object) -> None:
    if not isinstance(url, str) or not url:
        raise InvalidSchedule("target.queue_url", "is required")
    shape = "must look like https://sqs.<region>.amazonaws.com/<account id>/<queue name>"
    try:
        parts = urlsplit(url)
    except ValueError:
        raise InvalidSchedule("target.queue_url", shape) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise InvalidSchedule("target.queue_url", shape)
    segments = parts.path.strip("/").split("/")
    if len(segments) != 2 or not _ACCOUNT_ID.match(segments[0]):
        raise InvalidSchedule("target.queue_url", shape)
    name = segments[1].removesuffix(".fifo")
    if not _QUEUE_NAME.match(name) or len(segments[1]) > 80:
        raise InvalidSchedule(
            "target.queue_url", "queue name must be 1-80 letters, digits, - or _ (plus .fifo)"
        )
