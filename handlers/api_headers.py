"""The headers of the schedule routes: a create's Idempotency-Key, an edit's
If-Match, and the ETag every answer about one schedule carries."""

from __future__ import annotations

import re
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header

from domain.schedule import Schedule
from handlers.api_common import IDEMPOTENCY_KEY_PATTERN, IF_MATCH_PATTERN, MAX_IDEMPOTENCY_KEY_CHARS
from handlers.api_errors import BadHeader, PreconditionRequired

IdempotencyKeyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_IDEMPOTENCY_KEY_CHARS,
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="a retried create with the same key returns the first schedule",
    ),
]
IfMatchHeader = Annotated[
    str | None,
    Header(
        alias="If-Match",
        description="the version you read (required: 428 without it)",
        json_schema_extra={"pattern": IF_MATCH_PATTERN},
    ),
]

# The pattern of the document, with the digits named; ASCII digits only.
_IF_MATCH = re.compile(
    IF_MATCH_PATTERN.replace("[0-9]{1,12}", "(?P<version>[0-9]{1,12})"), re.ASCII
)


def etag(schedule: Schedule) -> str:
    return f'"{schedule.version}"'


def expected_version(if_match: str | None) -> int:
    """The version an If-Match header names: ``3``, ``"3"`` or ``W/"3"``."""
    if if_match is None or not if_match.strip():
        raise PreconditionRequired(
            "an edit needs If-Match: <version>, the version you read (GET the schedule first)"
        )
    # Exactly what the API document says (IF_MATCH_PATTERN), around the spaces
    # a header value may carry: ``""3""`` or ``"3`` plus a letter are refused,
    # not read as version 3.
    found = _IF_MATCH.fullmatch(if_match.strip())
    if found is None:
        raise BadHeader("If-Match", f'{if_match!r} is not a schedule version such as "3"')
    return int(found.group("version"))
