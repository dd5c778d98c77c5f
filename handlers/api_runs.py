"""The run routes: listings with filters, one run, retry, the dead letters, and
the progress and completion reports of long jobs."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Final, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from bootstrap.parts import ApiServices
from domain.run import RunKind, RunStatus
from domain.timeparse import format_instant, parse_instant
from handlers.api_common import _JSON, TokenQuery, _responses, _runs_body, services_of
from handlers.api_errors import NotAvailable
from handlers.api_models import (
    SINCE_PATTERN,
    UNTIL_PATTERN,
    CancelRunIn,
    CompleteIn,
    ProgressIn,
    RetryRunIn,
)
from handlers.api_out import DeadLetterListOut, DeadLetterOut, RunListOut, RunOut
from service.run_views import (
    InvalidListing,
)
from service.runs import RunReports

router = Router()  # type: ignore[no-untyped-call]  # (Powertools leaves it unannotated)


def _services() -> ApiServices:
    return services_of(router)


# --- run listings: their query parameters ----------------------------------------------

_STATUS_NAMES: Final = tuple(status.value for status in RunStatus)
_KIND_NAMES: Final = tuple(kind.value for kind in RunKind)


def _names_pattern(names: tuple[str, ...]) -> str:
    """A comma-separated list of ``names``, as the document describes it (the
    route reads it itself, so that a refusal names the unknown one)."""
    one = f"({'|'.join(names)})"
    return f"^{one}(,{one}){{0,{len(names) - 1}}}$"


_StatusQuery = Annotated[
    str | None,
    Query(
        max_length=200,
        description=f"one or several run statuses, comma-separated: {', '.join(_STATUS_NAMES)}",
        examples=["failed,expired"],
        json_schema_extra={"pattern": _names_pattern(_STATUS_NAMES)},
    ),
]
_KindQuery = Annotated[
    str | None,
    Query(
        max_length=100,
        description=f"one or several kinds, comma-separated: {', '.join(_KIND_NAMES)}",
        json_schema_extra={"pattern": _names_pattern(_KIND_NAMES)},
    ),
]
_SinceQuery = Annotated[
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
_UntilQuery = Annotated[
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
_OrderQuery = Annotated[
    Literal["newest", "oldest"], Query(description="by scheduled_at: newest (default) or oldest")
]
_IncludeQuery = Annotated[
    Literal["planned"] | None,
    Query(description="planned: also the occurrences whose scheduled_at is still in the future"),
]


def _names(text: str | None, field: str, known: tuple[str, ...]) -> frozenset[str]:
    """A comma-separated list of names, each one of ``known`` (422 naming ``field``)."""
    if text is None:
        return frozenset()
    names = [part.strip() for part in text.split(",")]
    for name in names:
        if name not in known:
            shown = repr(name) if name else "an empty name"
            raise InvalidListing(field, f"{shown} is not one of {', '.join(known)}")
    return frozenset(names)


def _run_listing(
    schedule_id: str | None,
    status: str | None,
    kind: str | None,
    since: str | None,
    until: str | None,
    order: str,
    include: str | None,
    limit: int,
    next_token: str | None,
) -> RunListOut:
    services = _services()
    statuses = frozenset(RunStatus(s) for s in _names(status, "status", _STATUS_NAMES))
    kinds = frozenset(RunKind(k) for k in _names(kind, "kind", _KIND_NAMES))
    start = None if since is None else parse_instant(since, "since")
    end = None if until is None else parse_instant(until, "until")
    if start is not None and end is not None and start >= end:
        raise InvalidListing("since", "must be before until")
    page = services.run_views.list(
        schedule_id=schedule_id,
        statuses=statuses,
        kinds=kinds,
        since=start,
        until=end,
        newest_first=order != "oldest",
        include_planned=include == "planned",
        limit=limit,
        token=next_token,
    )
    return RunListOut(runs=_runs_body(services, page.items), next_token=page.next_token)


@router.get(
    "/schedules/<schedule_id>/runs",
    summary="A schedule's runs, newest first, planned ones left out (filters: docs/api.md); "
    "a deleted schedule's: GET /runs?schedule_id=",
    responses=_responses(200, RunListOut, "one page; pass next_token for the next"),
)
def list_runs(
    schedule_id: str,
    status: _StatusQuery = None,
    kind: _KindQuery = None,
    since: _SinceQuery = None,
    until: _UntilQuery = None,
    order: _OrderQuery = "newest",
    include: _IncludeQuery = None,
    limit: Annotated[int, Query(ge=1, le=100, description="page size")] = 50,
    next_token: TokenQuery = None,
) -> RunListOut:
    _services().schedules.get(schedule_id)  # a deleted one: 404 naming GET /runs?schedule_id=
    return _run_listing(schedule_id, status, kind, since, until, order, include, limit, next_token)


@router.get(
    "/runs",
    summary="Runs of every schedule not deleted, or of one (schedule_id, deleted or not), "
    "with the filters of a schedule's runs (docs/api.md)",
    responses=_responses(200, RunListOut, "one page; pass next_token for the next"),
)
def list_all_runs(
    status: _StatusQuery = None,
    kind: _KindQuery = None,
    since: _SinceQuery = None,
    until: _UntilQuery = None,
    order: _OrderQuery = "newest",
    include: _IncludeQuery = None,
    limit: Annotated[int, Query(ge=1, le=100, description="page size")] = 50,
    next_token: TokenQuery = None,
    schedule_id: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=128,
            description="the runs of this schedule only, deleted or not (a deleted "
            "schedule's runs are read here)",
        ),
    ] = None,
) -> RunListOut:
    return _run_listing(schedule_id, status, kind, since, until, order, include, limit, next_token)


@router.post(
    "/runs/<occurrence_id>/retry",
    summary="Run a failed or expired run again: same occurrence id and key, one more attempt",
    responses=_responses(202, RunOut, "the run, admitted again; its intent is sent", 409, 501),
)
def retry_run(
    occurrence_id: str, body: Annotated[RetryRunIn | None, Body()] = None
) -> Response[RunOut]:
    del body  # no fields: an empty object or no body
    services = _services()
    run = services.run_views.retry(occurrence_id)
    return Response(
        HTTPStatus.ACCEPTED,
        _JSON,
        _runs_body(services, (run,))[0],
        headers={"Location": f"/runs/{run.occurrence_id}"},
    )


@router.post(
    "/runs/<occurrence_id>/cancel",
    summary="Cancel a run that has not finished: a waiting one never starts, a running "
    "one's late answer is ignored",
    responses=_responses(200, RunOut, "the run, cancelled", 409, 501),
)
def cancel_run(occurrence_id: str, body: Annotated[CancelRunIn | None, Body()] = None) -> RunOut:
    services = _services()
    run = services.run_views.cancel(occurrence_id, None if body is None else body.reason)
    return _runs_body(services, (run,))[0]


@router.get(
    "/dead-letters",
    summary="Delivery intents that ended in the dead-letter queue, newest first",
    responses=_responses(200, DeadLetterListOut, "one page; pass next_token for the next", 501),
)
def list_dead_letters(
    limit: Annotated[int, Query(ge=1, le=100, description="page size")] = 50,
    next_token: TokenQuery = None,
) -> DeadLetterListOut:
    page = _services().run_views.dead_letter_page(limit, next_token)
    return DeadLetterListOut(
        dead_letters=[
            DeadLetterOut(
                id=letter.id,
                occurrence_id=letter.occurrence_id,
                schedule_id=letter.schedule_id,
                reason=letter.reason,
                dead_lettered_at=None
                if letter.dead_lettered_at is None
                else format_instant(letter.dead_lettered_at),
                receive_count=letter.receive_count,
                body=letter.body,
            )
            for letter in page.items
        ],
        next_token=page.next_token,
    )


@router.get(
    "/runs/<occurrence_id>",
    summary="Read a run",
    responses=_responses(200, RunOut, "the run"),
)
def get_run(occurrence_id: str) -> RunOut:
    services = _services()
    return _runs_body(services, (services.schedules.run(occurrence_id),))[0]


def _reports() -> RunReports:
    reports = _services().runs
    if reports is None:
        raise NotAvailable("run progress and completion are not available in this deployment")
    return reports


@router.post(
    "/runs/<occurrence_id>/progress",
    summary="A long job reports progress with its run token",
    responses=_responses(200, RunOut, "the run with its progress", 409, 501),
)
def report_progress(occurrence_id: str, body: Annotated[ProgressIn, Body()]) -> RunOut:
    run = _reports().progress(occurrence_id, body.run_token, body.progress)
    return _runs_body(_services(), (run,))[0]


@router.post(
    "/runs/<occurrence_id>/complete",
    summary="A long job reports its end with its run token",
    responses=_responses(200, RunOut, "the ended run", 409, 501),
)
def complete_run(occurrence_id: str, body: Annotated[CompleteIn, Body()]) -> RunOut:
    run = _reports().complete(
        occurrence_id,
        body.run_token,
        succeeded=body.succeeded,
        result=body.result,
        error=body.error,
    )
    return _runs_body(_services(), (run,))[0]
