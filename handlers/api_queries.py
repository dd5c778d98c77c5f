"""The query parameters of the run listings, as the OpenAPI document describes
them. The routes read statuses and kinds themselves (``RunFilters.parse``), so
that a refusal names the unknown one; their patterns here only document them."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.openapi.params import Query

from handlers.api_fields import SINCE_PATTERN, UNTIL_PATTERN
from service.run_views import KIND_NAMES, STATUS_NAMES


def _names_pattern(names: tuple[str, ...]) -> str:
    """A comma-separated list of ``names``."""
    one = f"({'|'.join(names)})"
    return f"^{one}(,{one}){{0,{len(names) - 1}}}$"


StatusQuery = Annotated[
    str | None,
    Query(
        max_length=200,
        description=f"one or several run statuses, comma-separated: {', '.join(STATUS_NAMES)}",
        examples=["failed,expired"],
        json_schema_extra={"pattern": _names_pattern(STATUS_NAMES)},
    ),
]
KindQuery = Annotated[
    str | None,
    Query(
        max_length=100,
        description=f"one or several kinds, comma-separated: {', '.join(KIND_NAMES)}",
        json_schema_extra={"pattern": _names_pattern(KIND_NAMES)},
    ),
]
SinceQuery = Annotated[
    str | None,
    Query(
        max_length=64,
        description=(
            "scheduled_at at or after this instant (ISO 8601 with an offset), before until; "
            "shown here before 2090 (see until), any instant from 1970 to 2200 is accepted"
        ),
        json_schema_extra={"pattern": SINCE_PATTERN},
    ),
]
UntilQuery = Annotated[
    str | None,
    Query(
        max_length=64,
        description=(
            "scheduled_at before this instant (ISO 8601 with an offset), after since; "
            "shown here from 2100, any instant from 1970 to 2200 is accepted"
        ),
        json_schema_extra={"pattern": UNTIL_PATTERN},
    ),
]
OrderQuery = Annotated[
    Literal["newest", "oldest"], Query(description="by scheduled_at: newest (default) or oldest")
]
IncludeQuery = Annotated[
    Literal["planned"] | None,
    Query(description="planned: also the occurrences whose scheduled_at is still in the future"),
]
ScheduleIdQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=128,
        description="the runs of this schedule only, deleted or not (a deleted "
        "schedule's runs are read here)",
    ),
]
