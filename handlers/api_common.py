"""What the route modules share: documented answers, the services of the
request, schedules and runs as the API shows them (from the service's views),
and the paging query parameters."""

from __future__ import annotations

from contextvars import ContextVar
from datetime import datetime
from http import HTTPStatus
from typing import Annotated, Any, Final

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from adapters.targets.signing import shown_secret
from bootstrap.parts import ApiServices
from domain.schedule import Schedule
from domain.spec import ScheduleSpec
from handlers.api_out import ErrorOut, RunOut, ScheduleOut, WatchOut, run_out, schedule_view_out
from service import overview
from service.errors import (
    ScheduleNotFound,
)
from service.schedules import local_time

# How many upcoming occurrences a schedule shows.
# Bodies larger than this are refused (413) before anything reads them.
MAX_BODY_BYTES: Final = 64 * 1024
NEXT_OCCURRENCES: Final = 5
MAX_IDEMPOTENCY_KEY_CHARS: Final = 255
# Printable ASCII without spaces: what a header value can carry unchanged.
IDEMPOTENCY_KEY_PATTERN: Final = "^[!-~]+$"
IF_MATCH_PATTERN: Final = '^(W/)?"?[0-9]{1,12}"?$'


_JSON = content_types.APPLICATION_JSON
NEXT_TOKEN: Final = "next_token"
NEXT_TOKEN_FORMAT: Final = "letters, digits, '-' and '_', up to two '=' at the end"
# Every page token any store issues: base64url (with its padding) or digits.
NEXT_TOKEN_PATTERN: Final = "^[A-Za-z0-9_-]{1,4000}={0,2}$"
_ERRORS: Final = (
    (
        400,
        "malformed JSON, a header that cannot be read, or a next_token not of its format "
        "(error.code invalid_next_token)",
    ),
    (
        404,
        "no such schedule or run; a deleted schedule (error.code schedule_deleted, with "
        "error.deleted_at); a next_token that names no page of this listing "
        "(error.code page_not_found)",
    ),
    (413, f"body larger than {MAX_BODY_BYTES} bytes"),
    (415, "the body is not sent as application/json"),
    (422, "a field is invalid; error.field names it"),
    (500, "an unexpected error; it has been logged (error.code internal_error)"),
)


def _responses(
    ok: int, model: type[BaseModel], description: str, *extra: int
) -> dict[int, OpenAPIResponse]:
    """The documented answers of a route: its success and the errors it can give."""
    out: dict[int, OpenAPIResponse] = {
        ok: {"description": description, "content": {_JSON: {"model": model}}}
    }
    errors = [*_ERRORS, *((status, HTTPStatus(status).phrase) for status in extra)]
    for status, text in errors:
        out[status] = {"description": text, "content": {_JSON: {"model": ErrorOut}}}
    return out


# The services of the request being answered, set by ``handlers.api.handler``
# for each call: a context variable, not the resolver's context, which a router
# shares with whichever resolver included it last (the simulator loads a copy
# of the API module per Lambda container, each including the same routers).
SERVICES: ContextVar[ApiServices] = ContextVar("api_services")


def current_services() -> ApiServices:
    """The services the handler set for the request being answered."""
    return SERVICES.get()


def schedule_body(
    services: ApiServices, schedule: Schedule, *, webhook_secret: str | None = None
) -> ScheduleOut:
    """A schedule as the routes answer it, with a signing secret shown once."""
    view = overview.shown(services.schedules, schedule, NEXT_OCCURRENCES)
    shown = None if webhook_secret is None else shown_secret(webhook_secret)
    return schedule_view_out(view, shown)


def described_body(services: ApiServices, schedule: Schedule) -> ScheduleOut:
    """A schedule as GET /schedules/{id} shows it: with its watch verdict, its
    recent runs and what is still planned under an older version."""
    seen = overview.described(services.schedules, schedule, NEXT_OCCURRENCES)
    body = schedule_view_out(seen.view)
    if seen.watch is not None:
        body.watch = WatchOut.model_validate(dict(seen.watch))
    body.recent_runs = _runs_body(services, seen.recent_runs)
    body.planned_under_older_versions = _runs_body(services, seen.planned_under_older_versions)
    return body


def _local(spec: ScheduleSpec, instant: datetime) -> datetime:
    return local_time(spec, instant)


def _runs_body(services: ApiServices, runs: tuple[Any, ...]) -> list[RunOut]:
    """Runs with their local times, reading each version's zone once."""
    specs: dict[tuple[str, int], ScheduleSpec | None] = {}
    out: list[RunOut] = []
    now = services.schedules.clock.now()
    for run in runs:
        key = (run.schedule_id, run.version)
        if key not in specs:
            try:
                specs[key] = services.schedules.version(*key).spec
            except ScheduleNotFound:
                specs[key] = None
        out.append(run_out(run, specs[key], _local, now))
    return out


def _run_body(services: ApiServices, run: Any) -> RunOut:
    return _runs_body(services, (run,))[0]


def run_answer(status: HTTPStatus, services: ApiServices, run: Any) -> Response[RunOut]:
    """A run made or admitted again by this call, with where to read it."""
    return Response(
        status, _JSON, _run_body(services, run), headers={"Location": f"/runs/{run.occurrence_id}"}
    )


TokenQuery = Annotated[
    str | None,
    Query(
        max_length=4002,
        description=(
            "the next_token of the previous page, as it was returned: an opaque string of "
            f"{NEXT_TOKEN_FORMAT}; one of another format is 400 (invalid_next_token), one "
            "that names no page of this listing (another listing's, or other filters') is "
            "404 (page_not_found)"
        ),
        pattern=NEXT_TOKEN_PATTERN,
    ),
]
LimitQuery = Annotated[int, Query(ge=1, le=100, description="page size")]
