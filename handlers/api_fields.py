"""What every request model of the HTTP API shares: the base that refuses an
unknown field, free text, the instants the OpenAPI document describes, the
small schema builders, and the refusal a person reads for one of pydantic's
errors. The models: ``handlers.api_models`` (a schedule),
``handlers.api_target`` (its target) and ``handlers.api_bodies`` (the other
calls' bodies).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo

from domain.errors import InvalidSchedule
from domain.text import TEXT_PATTERN, check_text


def _text(value: str, info: ValidationInfo) -> str:
    try:
        return check_text(value, str(info.field_name))
    except InvalidSchedule as error:
        raise ValueError(error.reason) from None


# Free text: no control characters, no lone surrogates (domain.text).
Text = Annotated[str, AfterValidator(_text), Field(json_schema_extra={"pattern": TEXT_PATTERN})]

# --- what the document describes (a part of what the domain accepts) ----------------

PAST_YEAR = r"(197[1-9]|19[89][0-9]|200[0-9]|201[0-9])"  # for a backfill's start
RECENT_YEAR = r"(202[0-5])"  # for a backfill's end: the past, and after its start
START_YEAR = r"(197[1-9]|19[89][0-9]|20[0-8][0-9])"  # a spec's start_at: before 2090
END_YEAR = r"(21[0-8][0-9]|219[0-8])"  # a spec's end_at: from 2100
FUTURE_YEAR = r"(20[3-9][0-9]|21[0-8][0-9]|219[0-8])"  # an at: from 2030


def instant_pattern(year: str, *, offset: bool = True) -> str:
    date = year + r"-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
    time = r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
    zone = r"(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])" if offset else ""
    return f"^{date}{time}{zone}$"


# A run listing's since and until, shown apart so that since < until always.
SINCE_PATTERN = instant_pattern(START_YEAR)
UNTIL_PATTERN = instant_pattern(END_YEAR)
INSTANT_DESCRIPTION = (
    "ISO 8601 with an offset, from 1970-01-01T00:00:00Z up to (not including) 2200-01-01T00:00:00Z"
)


NULL: dict[str, Any] = {"type": "null"}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, NULL]}


def string_schema(pattern: str, description: str | None = None) -> dict[str, Any]:
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


class In(BaseModel):
    """A request body: a field it does not know is refused."""

    model_config = ConfigDict(extra="forbid")
