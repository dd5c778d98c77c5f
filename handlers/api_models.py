"""The JSON the HTTP API reads, as pydantic models (what it writes:
``handlers.api_out``).

Request models are the one validation of a body: pydantic checks shapes and
types (a misspelt field is refused, naming it), and each model's validator
asks the domain what a value *means* (a cron expression, a zone, a duration,
a URL, a retry's bounds) by building the domain value from it (``spec_of``,
``target_of``, ``policy_of``, ``Definition``). The use cases receive those
values, typed; nothing parses the body again. A domain refusal
(``InvalidSchedule``) names its field by its path in the body
(``spec.cron.minute``), which ``handlers.api_errors`` answers with.

The OpenAPI document says exactly what each field may hold where JSON Schema
can say it (lengths, ranges, enums, characters refused, unknown fields
refused), and validation here enforces the same. Where the domain's rule is
more than a schema can state (a cron expression that never fires, a date that
does not exist), the document describes a part of what is accepted: every
request it describes is accepted, and the text says what else is. The one
rule it cannot state at all is ``end_at`` not before ``start_at``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from importlib import resources
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from adapters.targets.addresses import AddressPolicy
from domain.backoff import MAX_ATTEMPTS_LIMIT, RetryPolicy
from domain.cron import MAX_CRON_CHARS
from domain.errors import InvalidSchedule
from domain.schedule import (
    MAX_NAME_CHARS,
    Definition,
    SchedulePolicy,
    policy_of,
    retry_of,
)
from domain.spec import WrittenSpec, spec_of
from domain.targets import (
    JOB_NAME_PATTERN,
    MAX_TARGET_TIMEOUT_S,
    MAX_URL_CHARS,
    MAX_WEBHOOK_HEADERS,
    Target,
    target_of,
)
from domain.text import NAME_PATTERN, TEXT_PATTERN, check_text
from domain.timeparse import MAX_TEXT_CHARS, parse_instant


def _text(value: str, info: ValidationInfo) -> str:
    try:
        return check_text(value, str(info.field_name))
    except InvalidSchedule as error:
        raise ValueError(error.reason) from None


# Free text: no control characters, no lone surrogates (domain.text).
Text = Annotated[str, AfterValidator(_text), Field(json_schema_extra={"pattern": TEXT_PATTERN})]

# --- what the document describes (a part of what the domain accepts) ----------------

_ANY_YEAR = r"(197[1-9]|19[89][0-9]|20[0-9]{2}|21[0-8][0-9]|219[0-8])"
_PAST_YEAR = r"(197[1-9]|19[89][0-9]|200[0-9]|201[0-9])"  # for a backfill's start
_RECENT_YEAR = r"(202[0-5])"  # for a backfill's end: the past, and after its start
_START_YEAR = r"(197[1-9]|19[89][0-9]|20[0-8][0-9])"  # a spec's start_at: before 2090
_END_YEAR = r"(21[0-8][0-9]|219[0-8])"  # a spec's end_at: from 2100
_FUTURE_YEAR = r"(20[3-9][0-9]|21[0-8][0-9]|219[0-8])"  # an at: from 2030


def _instant_pattern(year: str, *, offset: bool = True) -> str:
    date = year + r"-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
    time = r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
    zone = r"(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])" if offset else ""
    return f"^{date}{time}{zone}$"


INSTANT_PATTERN = _instant_pattern(_ANY_YEAR)
# A run listing's since and until, shown apart so that since < until always.
SINCE_PATTERN = _instant_pattern(_START_YEAR)
UNTIL_PATTERN = _instant_pattern(_END_YEAR)
_DAYS_366 = r"(36[0-6]|3[0-5][0-9]|[12][0-9]{2}|[1-9]?[0-9])"
EVERY_PATTERN = r"^(P(36[0-6]|3[0-5][0-9]|[12][0-9]{2}|[1-9][0-9]?)D|PT[1-9][0-9]{0,2}[HMS])$"
WINDOW_PATTERN = f"^(P{_DAYS_366}D|PT[0-9]{{1,3}}[HMS])$"
RUN_TIMEOUT_PATTERN = r"^(P1D|PT([1-9]|1[0-9]|2[0-4])H|PT[1-9][0-9]{0,2}[MS])$"
RETRY_BASE_PATTERN = r"^PT[1-9]S$"
RETRY_CAP_PATTERN = r"^PT([1-9][0-9]S|[1-9][0-9]{0,2}M|([1-9]|1[0-2])H)$"


def _list(item: str) -> str:
    return f"{item}(,{item}){{0,3}}"


_MINUTE = r"[0-5]?[0-9]"
_HOUR = r"(1?[0-9]|2[0-3])"
CRON_PATTERN = (
    "^"
    + rf"(\*|\*/([1-9]|[1-5][0-9])|{_list(_MINUTE)}) "
    + rf"(\*|\*/([1-9]|1[0-9]|2[0-3])|{_list(_HOUR)}) "
    + rf"(\*|{_list('([1-9]|1[0-9]|2[0-8])')}) "
    + r"(\*|([1-9]|1[0-2])|JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC) "
    + r"(\*|[0-7]|MON-FRI|SAT,SUN|SUN|MON|TUE|WED|THU|FRI|SAT)"
    + "$"
)


def zone_names() -> list[str]:
    """The IANA zones of the tzdata package, which every deployment carries."""
    return sorted(resources.files("tzdata").joinpath("zones").read_text().split())


_NULL: dict[str, Any] = {"type": "null"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, _NULL]}


def _string(pattern: str, description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "pattern": pattern}
    if description:
        schema["description"] = description
    return schema


def field_of(loc: Sequence[Any]) -> str | None:
    """``("body", "spec", "cron")`` -> ``spec.cron``; ``("header", "if-match")`` -> ``if-match``."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or None


def refusal(detail: Mapping[str, Any]) -> InvalidSchedule:
    """One of pydantic's errors (``ValidationError.errors()``) as the refusal a
    person reads: the field by its path in the request, and why. A domain
    check's refusal is itself (it names its field)."""
    error = (detail.get("ctx") or {}).get("error")
    if isinstance(error, InvalidSchedule):
        return error
    field = field_of(detail.get("loc", ())) or "body"
    kind = detail.get("type")
    message = str(detail.get("msg", "invalid request")).removeprefix("Value error, ")
    if kind == "extra_forbidden":
        message = "is not a known field"
    elif kind == "missing":
        message = "is required"
    elif kind == "model_attributes_type":
        message = "must be a JSON object"
    elif kind == "too_long" and isinstance(detail.get("input"), str):
        # A text field's length is checked after its text check, where pydantic
        # says "items"; a person reads characters.
        most = (detail.get("ctx") or {}).get("max_length")
        message = f"must be at most {most} characters (got {len(detail['input'])})"
    return InvalidSchedule(field, message)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- requests ---------------------------------------------------------------------


def _spec_schema(schema: dict[str, Any]) -> None:
    """The spec as the document describes it: one of four shapes."""
    zone = {"type": "string", "enum": zone_names()}
    bounds = {
        "start_at": _string(
            _instant_pattern(_START_YEAR), "inclusive; shown here before 2090 (see end_at)"
        ),
        "end_at": _string(
            _instant_pattern(_END_YEAR),
            "inclusive; not before start_at, and leaving an occurrence after now: "
            "shown here from 2100, any instant that does so is accepted",
        ),
    }

    def shape(
        kind: str, value: dict[str, Any], *, zone_required: bool = False, ranged: bool = True
    ) -> dict[str, Any]:
        # A field written as null is a field left out.
        others = {other: _NULL for other in ("cron", "at", "every") if other != kind}
        optional = {"time_zone": zone, **(bounds if ranged else {})}
        if zone_required:
            optional = {
                key: _nullable(value) for key, value in optional.items() if key != "time_zone"
            }
            optional["time_zone"] = zone
        else:
            optional = {key: _nullable(value) for key, value in optional.items()}
        return {
            "type": "object",
            "properties": {kind: value, **optional, **others},
            "required": [kind, "time_zone"] if zone_required else [kind],
            "additionalProperties": False,
        }

    at = "one instant, with an offset; shown here from 2030, any instant still to come is accepted"
    wall = "a wall time read in time_zone; shown here from 2030, any still to come is accepted"

    description = schema.get("description", "")
    schema.clear()
    schema["description"] = description
    schema["oneOf"] = [
        shape("cron", _string(CRON_PATTERN, CRON_DESCRIPTION)),
        shape("at", _string(_instant_pattern(_FUTURE_YEAR), at), ranged=False),
        shape(
            "at",
            _string(_instant_pattern(_FUTURE_YEAR, offset=False), wall),
            zone_required=True,
            ranged=False,
        ),
        shape("every", _string(EVERY_PATTERN, EVERY_DESCRIPTION)),
    ]


CRON_DESCRIPTION = (
    "five fields (minute hour day_of_month month day_of_week), matched in time_zone. "
    "Also accepted: ranges a-b, steps a-b/n and a/n, lists, names in any case, L "
    "(last day of the month), DOW#n and @hourly..@yearly, as docs/api.md explains; "
    "an expression that can never fire is refused"
)
EVERY_DESCRIPTION = (
    "an ISO 8601 duration from PT1S to P366D, whole seconds "
    "(combined forms such as P1DT2H and weeks are accepted too)"
)
INSTANT_DESCRIPTION = (
    "ISO 8601 with an offset, from 1970-01-01T00:00:00Z up to (not including) 2200-01-01T00:00:00Z"
)


class SpecIn(_In):
    """When a schedule fires: exactly one of ``cron``, ``at`` or ``every``.

    Instants are bounded (1970 to 2200), so that every computation with them
    stays within what the scheduler can represent; see docs/api.md.
    """

    model_config = ConfigDict(json_schema_extra=_spec_schema)

    cron: str | None = Field(
        default=None,
        max_length=MAX_CRON_CHARS,
        description=CRON_DESCRIPTION,
        examples=["0 9 * * MON-FRI"],
    )
    at: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="one instant with an offset, or a wall time read in time_zone",
        examples=["2026-12-01T09:00:00Z", "2026-12-01T09:00:00"],
    )
    every: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description=EVERY_DESCRIPTION,
        examples=["PT15M"],
    )
    time_zone: str | None = Field(
        default=None,
        max_length=64,
        description="IANA zone (default UTC)",
        examples=["Europe/London"],
    )
    start_at: str | None = Field(
        default=None, max_length=MAX_TEXT_CHARS, description=INSTANT_DESCRIPTION
    )
    end_at: str | None = Field(
        default=None, max_length=MAX_TEXT_CHARS, description=INSTANT_DESCRIPTION
    )
    _spec: WrittenSpec = PrivateAttr()

    @model_validator(mode="after")
    def _domain(self) -> Self:
        self._spec = spec_of(
            cron=self.cron,
            at=self.at,
            every=self.every,
            time_zone=self.time_zone,
            start_at=self.start_at,
            end_at=self.end_at,
        )
        return self

    @property
    def value(self) -> WrittenSpec:
        """The spec, as the domain checked it."""
        return self._spec


class RetryIn(_In):
    model_config = ConfigDict(
        json_schema_extra=lambda schema: _narrow(
            schema,
            base=_string(RETRY_BASE_PATTERN),
            cap=_string(RETRY_CAP_PATTERN),
        )
    )

    max_attempts: int | None = Field(
        default=None, ge=1, le=MAX_ATTEMPTS_LIMIT, description="default 5"
    )
    base: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="ISO 8601 duration, default PT1S, at most PT12H and not above cap",
    )
    cap: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="ISO 8601 duration, default PT30S, at most PT12H",
    )
    _retry: RetryPolicy = PrivateAttr()

    @model_validator(mode="after")
    def _domain(self) -> Self:
        self._retry = retry_of(max_attempts=self.max_attempts, base=self.base, cap=self.cap)
        return self

    @property
    def value(self) -> RetryPolicy:
        return self._retry


def _narrow(schema: dict[str, Any], **fields: dict[str, Any]) -> None:
    """Describe ``fields`` by the narrower schemas given (absent or null still allowed)."""
    properties = schema["properties"]
    for name, narrow in fields.items():
        described = {k: v for k, v in properties[name].items() if k in ("description", "default")}
        properties[name] = {"anyOf": [narrow, {"type": "null"}], **described}


def _policy_schema(schema: dict[str, Any]) -> None:
    _narrow(
        schema,
        catchup_window=_string(WINDOW_PATTERN),
        grace=_string(WINDOW_PATTERN),
        run_timeout=_string(RUN_TIMEOUT_PATTERN),
    )
    # catchup_window goes with overdue=expire, and only with it.
    schema["if"] = {"properties": {"overdue": {"const": "expire"}}, "required": ["overdue"]}
    schema["then"] = {
        "required": ["catchup_window"],
        "properties": {"catchup_window": _string(WINDOW_PATTERN)},
    }
    schema["else"] = {"properties": {"catchup_window": {"type": "null"}}}


class PolicyIn(_In):
    """How occurrences behave when things are not on time. Every field is optional."""

    model_config = ConfigDict(json_schema_extra=_policy_schema)

    overdue: Literal["catch_up_all", "latest_only", "expire"] | None = Field(
        default=None, description="default latest_only"
    )
    catchup_window: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="ISO 8601 duration up to P366D; required with overdue=expire, only then",
    )
    dst_gap: Literal["cron", "shift", "next_valid", "skip"] | None = Field(
        default=None, description="default cron"
    )
    dst_fold: Literal["cron", "first", "second", "both"] | None = Field(
        default=None, description="default cron"
    )
    overlap: Literal["skip", "allow_all"] | None = Field(
        default=None, description="default allow_all"
    )
    retry: RetryIn | None = None
    run_timeout: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="ISO 8601 duration from PT1S to P1D, default PT15M",
    )
    grace: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="up to P366D: how late a success may be before the watchdog says overdue",
    )
    _policy: SchedulePolicy = PrivateAttr()

    @model_validator(mode="after")
    def _domain(self) -> Self:
        self._policy = policy_of(
            overdue=self.overdue,
            catchup_window=self.catchup_window,
            dst_gap=self.dst_gap,
            dst_fold=self.dst_fold,
            overlap=self.overlap,
            retry=None if self.retry is None else self.retry.value,
            run_timeout=self.run_timeout,
            grace=self.grace,
        )
        return self

    @property
    def value(self) -> SchedulePolicy:
        return self._policy


_HEADER_NAME_PATTERN = "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]{1,128}$"
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
            name: value if name in required else _nullable(value)
            for name, value in properties.items()
        }
        others = {name: _NULL for name in fields if name not in properties}
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
            url=_string(
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
            queue_url=_string(_QUEUE_URL_PATTERN),
            message_group_id=_string("^[!-~]{1,128}$", "FIFO queues"),
        ),
        shape(
            "lambda",
            ["function_arn"],
            function_arn=_string(_FUNCTION_ARN_PATTERN),
            invocation_type={"type": "string", "enum": ["Event", "RequestResponse"]},
        ),
        shape(
            "eventbridge",
            ["event_bus_name"],
            event_bus_name=_string(_BUS_NAME_PATTERN, "a bus name or ARN"),
            source=_string("^(?![aA][wW][sS]\\.)[ -~]{1,256}$", "not aws.*; default duetime"),
            detail_type=_string(_PRINTABLE, "default duetime.occurrence"),
        ),
        shape(
            "command",
            ["job"],
            job=_string(JOB_NAME_PATTERN, "a job of the jobs file `duetime local --jobs` read"),
        ),
    ]


# The deployment's rule for webhook addresses, while a request is validated:
# handlers.api sets it from ApiServices.address_policy, the rule its worker
# applies at each delivery. Unset, it is the strictest (AWS without settings).
_STRICTEST = AddressPolicy()  # a frozen value
WEBHOOK_ADDRESSES: ContextVar[AddressPolicy] = ContextVar("webhook_addresses", default=_STRICTEST)


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


class TargetIn(_In):
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


class ScheduleIn(_In):
    """A schedule as a user writes it (POST creates it; PUT replaces it)."""

    name: Text = Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        json_schema_extra={"pattern": NAME_PATTERN},
        description="a short text; no control characters",
        examples=["sales report"],
    )
    spec: SpecIn
    target: TargetIn
    payload: dict[str, Any] | None = Field(
        default=None, description="any JSON object, sent with every occurrence"
    )
    policy: PolicyIn | None = None
    _definition: Definition = PrivateAttr()

    @model_validator(mode="after")
    def _domain(self) -> Self:
        self._definition = Definition(
            name=self.name,
            spec=self.spec.value,
            target=self.target.value,
            policy=SchedulePolicy() if self.policy is None else self.policy.value,
            payload=self.payload or {},
            kept_headers=self.target.kept_headers,
        )
        return self

    def definition(self) -> Definition:
        """The schedule the use cases save, as the domain checked it."""
        return self._definition


def definition_of(body: object, addresses: AddressPolicy = _STRICTEST) -> Definition:
    """The schedule a JSON body describes, validated as the API of a deployment
    whose rule for webhook addresses is ``addresses`` validates it (for callers
    that hold a body but no HTTP request: the demo, benches); a refusal is
    ``InvalidSchedule`` naming the field, as the API answers."""
    token = WEBHOOK_ADDRESSES.set(addresses)
    try:
        return ScheduleIn.model_validate(body).definition()
    except ValidationError as error:
        raise refusal(error.errors()[0]) from None
    finally:
        WEBHOOK_ADDRESSES.reset(token)


class PauseIn(_In):
    note: Text | None = Field(
        default=None, max_length=1000, description="why it is paused; no control characters"
    )


class BackfillIn(_In):
    start_at: str = Field(
        max_length=MAX_TEXT_CHARS,
        description=INSTANT_DESCRIPTION + "; inclusive",
        examples=["2026-11-30T00:00:00Z"],
        json_schema_extra={"pattern": _instant_pattern(_PAST_YEAR)},
    )
    end_at: str = Field(
        max_length=MAX_TEXT_CHARS,
        description=INSTANT_DESCRIPTION + "; inclusive, not before start_at, not in the future",
        examples=["2026-12-01T00:00:00Z"],
        json_schema_extra={"pattern": _instant_pattern(_RECENT_YEAR)},
    )
    dry_run: bool = Field(
        default=False,
        strict=True,
        description="true: store nothing, answer the occurrences that would be created",
    )
    _range: tuple[datetime, datetime] = PrivateAttr()

    @model_validator(mode="after")
    def _domain(self) -> Self:
        start_at = parse_instant(self.start_at, "start_at")
        self._range = (start_at, parse_instant(self.end_at, "end_at"))
        return self

    @property
    def range(self) -> tuple[datetime, datetime]:
        """``start_at`` and ``end_at`` as instants."""
        return self._range


class ProgressIn(_In):
    """What a long job (its target answered 202) reports while it runs."""

    run_token: str = Field(min_length=1, max_length=512, description="from the delivery body")
    progress: dict[str, Any] = Field(description="anything the job wants shown on the run")


class CompleteIn(_In):
    """A long job's end. A failure it reports fails the run: the job itself decided."""

    run_token: str = Field(min_length=1, max_length=512, description="from the delivery body")
    succeeded: bool = True
    result: dict[str, Any] | None = Field(default=None, description="kept on the run's result")
    error: Text | None = Field(
        default=None, max_length=2000, description="why it failed; no control characters"
    )


class AcknowledgeIn(_In):
    note: Text | None = Field(
        default=None, max_length=1000, description="why; kept with the acknowledgement"
    )


class EmptyIn(_In):
    """A request that takes no fields (a trigger, a secret's rotation): send
    no body, or ``{}``; a field is refused."""


class RetryRunIn(_In):
    """A retry takes no fields: send no body, or ``{}``."""


class CancelRunIn(_In):
    reason: Text | None = Field(
        default=None,
        max_length=500,
        description="why it is cancelled, recorded after 'cancelled by a user: '; "
        "no control characters",
    )
