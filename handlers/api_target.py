"""A schedule's target as the HTTP API reads it (``TargetIn``): one shape per
type in the OpenAPI document, the domain's ``target_of`` as its one check,
and the deployment's rule for webhook addresses applied while a request is
validated (``WEBHOOK_ADDRESSES``).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, ConfigDict, Field, PrivateAttr, model_validator

from adapters.targets.addresses import AddressPolicy
from domain.targets import (
    JOB_NAME_PATTERN,
    MAX_TARGET_TIMEOUT_S,
    MAX_URL_CHARS,
    MAX_WEBHOOK_HEADERS,
    Target,
    target_of,
)
from handlers.api_fields import NULL, In, Text, nullable, string_schema

_PRINTABLE = "^[ -~]{1,128}$"
_BUS_NAME_PATTERN = "^[A-Za-z0-9._/-]{1,256}$"
_FUNCTION_ARN_PATTERN = (
    "^arn:aws:lambda:[a-z]{2}-[a-z]+-[1-9]:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}"
    "(:(\\$LATEST|[A-Za-z0-9_-]{1,128}))?$"
)
_QUEUE_URL_PATTERN = (
    "^https://sqs\\.[a-z]{2}-[a-z]+-[1-9]\\.amazonaws\\.com/[0-9]{12}/"
    "[A-Za-z0-9_-]{1,75}(\\.fifo)?$"
)
# A host shown here starts with a letter: a name, never an address in any form.
_URL_PATTERN = (
    "^https?://[a-z]([a-z0-9-]{0,20}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?){0,3}"
    "(:[1-9][0-9]{0,3})?(/[A-Za-z0-9._~-]{0,20}){0,4}$"
)


def _target_schema(schema: dict[str, Any]) -> None:
    """The target as the document describes it: one shape per type."""

    fields = [name for name in TargetIn.model_fields if name != "type"]

    def shape(kind: str, required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
        # A field written as null is a field left out, also another type's field.
        described = {
            name: value if name in required else nullable(value)
            for name, value in properties.items()
        }
        others = {name: NULL for name in fields if name not in properties}
        return {
            "type": "object",
            "properties": {"type": {"type": "string", "const": kind}, **described, **others},
            "required": ["type", *required],
            "additionalProperties": False,
        }

    description = schema.get("description", "")
    schema.clear()
    schema["description"] = description
    schema["oneOf"] = [
        shape(
            "webhook",
            ["url"],
            url=string_schema(
                _URL_PATTERN,
                "http(s), no user info, no #fragment; a host written as an address the "
                "deployment does not deliver to is refused (docs/webhooks.md)",
            ),
            headers={
                "type": "object",
                "description": (
                    "extra request headers, at most 20; names are HTTP tokens, each once in any "
                    "case, not Content-Type, Idempotency-Key, Host and the like nor Duetime-*; "
                    "values printable ASCII"
                ),
                "maxProperties": MAX_WEBHOOK_HEADERS,
                "propertyNames": {"pattern": "^X-[A-Z][a-z0-9]{0,30}$"},
                "additionalProperties": {
                    "type": "string",
                    "pattern": "^[ -~]{0,256}$",
                    "description": (
                        "the value. Also accepted on an edit: null, which keeps the value "
                        "the schedule has for that header (answers show each name with null)"
                    ),
                },
            },
            timeout_s={
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TARGET_TIMEOUT_S,
                "description": "default 10",
            },
        ),
        shape(
            "sqs",
            ["queue_url"],
            queue_url=string_schema(_QUEUE_URL_PATTERN),
            message_group_id=string_schema("^[!-~]{1,128}$", "FIFO queues"),
        ),
        shape(
            "lambda",
            ["function_arn"],
            function_arn=string_schema(_FUNCTION_ARN_PATTERN),
            invocation_type={"type": "string", "enum": ["Event", "RequestResponse"]},
        ),
        shape(
            "eventbridge",
            ["event_bus_name"],
            event_bus_name=string_schema(_BUS_NAME_PATTERN, "a bus name or ARN"),
            source=string_schema("^(?![aA][wW][sS]\\.)[ -~]{1,256}$", "not aws.*; default duetime"),
            detail_type=string_schema(_PRINTABLE, "default duetime.occurrence"),
        ),
        shape(
            "command",
            ["job"],
            job=string_schema(
                JOB_NAME_PATTERN, "a job of the jobs file `duetime local --jobs` read"
            ),
        ),
    ]


# The deployment's rule for webhook addresses, while a request is validated:
# handlers.api sets it from ApiServices.address_policy, the rule its worker
# applies at each delivery. Unset, it is the strictest (AWS without settings).
STRICTEST = AddressPolicy()  # a frozen value
WEBHOOK_ADDRESSES: ContextVar[AddressPolicy] = ContextVar("webhook_addresses", default=STRICTEST)


def _deliverable(url: str | None) -> str | None:
    """A webhook URL whose host is an address the deployment never delivers to
    (metadata, link-local, private or, on AWS, loopback) is refused when saved."""
    reason = None if url is None else WEBHOOK_ADDRESSES.get().url_refusal(url)
    if reason is not None:
        raise ValueError(reason)
    return url


WEBHOOK_URL_DESCRIPTION = (
    "webhook. A host written as an address the deployment does not deliver to is "
    "refused: metadata, link-local, unspecified, multicast, reserved, private "
    "(10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) and, on AWS, loopback, in "
    "any form (IPv4-mapped IPv6, decimal, octal, hex)"
)


class TargetIn(In):
    """Where occurrences are delivered. Which fields apply depends on ``type``."""

    model_config = ConfigDict(json_schema_extra=_target_schema)

    type: Literal["webhook", "sqs", "lambda", "eventbridge", "command"]
    url: Annotated[str | None, AfterValidator(_deliverable)] = Field(
        default=None, max_length=MAX_URL_CHARS, description=WEBHOOK_URL_DESCRIPTION
    )
    headers: dict[str, str | None] | list[tuple[str, str | None]] | None = Field(
        default=None,
        description=(
            "webhook: extra request headers; on an edit, a null value keeps the value "
            "the schedule has for that header"
        ),
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=MAX_TARGET_TIMEOUT_S, description="webhook: default 10"
    )
    queue_url: str | None = Field(default=None, max_length=MAX_URL_CHARS, description="sqs")
    message_group_id: str | None = Field(
        default=None, max_length=128, description="sqs (FIFO queues)"
    )
    function_arn: str | None = Field(default=None, max_length=512, description="lambda")
    invocation_type: Literal["Event", "RequestResponse"] | None = Field(
        default=None, description="lambda: default Event"
    )
    event_bus_name: str | None = Field(
        default=None, max_length=1600, description="eventbridge: name or ARN"
    )
    source: Text | None = Field(
        default=None, max_length=256, description="eventbridge: default duetime"
    )
    detail_type: Text | None = Field(
        default=None, max_length=128, description="eventbridge: default duetime.occurrence"
    )
    job: str | None = Field(
        default=None, max_length=64, description="command: a job of the machine's jobs file"
    )
    _target: Target = PrivateAttr()
    _kept: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _domain(self) -> Self:
        fields = {
            name: value
            for name, value in self
            if name not in ("type", "headers") and value is not None
        }
        if self.headers is not None:
            pairs = list(self.headers.items() if isinstance(self.headers, dict) else self.headers)
            # A null keeps the value the schedule has (checked when it is saved).
            self._kept = tuple(name for name, value in pairs if value is None)
            fields["headers"] = [(name, "" if value is None else value) for name, value in pairs]
        self._target = target_of(self.type, fields)
        return self

    @property
    def value(self) -> Target:
        """The target, as the domain checked it (a header sent as null holds "")."""
        return self._target

    @property
    def kept_headers(self) -> tuple[str, ...]:
        """The names of the headers sent as null."""
        return self._kept
