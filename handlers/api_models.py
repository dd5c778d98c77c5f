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

from importlib import resources
from typing import Any, Literal, Self

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from adapters.targets.addresses import AddressPolicy
from domain.backoff import MAX_ATTEMPTS_LIMIT, RetryPolicy
from domain.cron import MAX_CRON_CHARS
from domain.schedule import MAX_NAME_CHARS, Definition, SchedulePolicy, policy_of, retry_of
from domain.spec import WrittenSpec, spec_of
from domain.text import NAME_PATTERN
from domain.timeparse import MAX_TEXT_CHARS
from handlers.api_fields import (
    END_YEAR,
    FUTURE_YEAR,
    INSTANT_DESCRIPTION,
    NULL,
    START_YEAR,
    In,
    Text,
    instant_pattern,
    nullable,
    refusal,
    string_schema,
)
from handlers.api_target import STRICTEST, WEBHOOK_ADDRESSES, TargetIn

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


# --- requests ---------------------------------------------------------------------


def _spec_schema(schema: dict[str, Any]) -> None:
    """The spec as the document describes it: one of four shapes."""
    zone = {"type": "string", "enum": zone_names()}
    bounds = {
        "start_at": string_schema(
            instant_pattern(START_YEAR), "inclusive; shown here before 2090 (see end_at)"
        ),
        "end_at": string_schema(
            instant_pattern(END_YEAR),
            "inclusive; not before start_at, and leaving an occurrence after now: "
            "shown here from 2100, any instant that does so is accepted",
        ),
    }

    def shape(
        kind: str, value: dict[str, Any], *, zone_required: bool = False, ranged: bool = True
    ) -> dict[str, Any]:
        # A field written as null is a field left out.
        others = {other: NULL for other in ("cron", "at", "every") if other != kind}
        optional = {"time_zone": zone, **(bounds if ranged else {})}
        if zone_required:
            optional = {
                key: nullable(value) for key, value in optional.items() if key != "time_zone"
            }
            optional["time_zone"] = zone
        else:
            optional = {key: nullable(value) for key, value in optional.items()}
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
        shape("cron", string_schema(CRON_PATTERN, CRON_DESCRIPTION)),
        shape("at", string_schema(instant_pattern(FUTURE_YEAR), at), ranged=False),
        shape(
            "at",
            string_schema(instant_pattern(FUTURE_YEAR, offset=False), wall),
            zone_required=True,
            ranged=False,
        ),
        shape("every", string_schema(EVERY_PATTERN, EVERY_DESCRIPTION)),
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


class SpecIn(In):
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


class RetryIn(In):
    model_config = ConfigDict(
        json_schema_extra=lambda schema: _narrow(
            schema,
            base=string_schema(RETRY_BASE_PATTERN),
            cap=string_schema(RETRY_CAP_PATTERN),
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
        catchup_window=string_schema(WINDOW_PATTERN),
        grace=string_schema(WINDOW_PATTERN),
        run_timeout=string_schema(RUN_TIMEOUT_PATTERN),
    )
    # catchup_window goes with overdue=expire, and only with it.
    schema["if"] = {"properties": {"overdue": {"const": "expire"}}, "required": ["overdue"]}
    schema["then"] = {
        "required": ["catchup_window"],
        "properties": {"catchup_window": string_schema(WINDOW_PATTERN)},
    }
    schema["else"] = {"properties": {"catchup_window": {"type": "null"}}}


class PolicyIn(In):
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


class ScheduleIn(In):
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


def definition_of(body: object, addresses: AddressPolicy = STRICTEST) -> Definition:
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
