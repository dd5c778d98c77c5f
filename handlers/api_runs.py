"""The run routes: listings with filters, one run, retry, cancel and the dead
letters (the reports of long jobs: ``api_reports``)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from handlers.api_bodies import CancelRunIn, RetryRunIn
from handlers.api_common import (
    LimitQuery,
    TokenQuery,
    _responses,
    _run_body,
    _runs_body,
    current_services,
    run_answer,
)
from handlers.api_out import DeadLetterListOut, RunListOut, RunOut, dead_letter_out
from handlers.api_queries import (
    IncludeQuery,
    KindQuery,
    OrderQuery,
    ScheduleIdQuery,
    SinceQuery,
    StatusQuery,
    UntilQuery,
)
from service.run_views import RunFilters

router = Router()  # type: ignore[no-untyped-call]  # (Powertools leaves it unannotated)


def _run_listing(
    schedule_id: str | None, filters: RunFilters, limit: int, next_token: str | None
) -> RunListOut:
    services = current_services()
    page = services.run_views.list(
        schedule_id=schedule_id, filters=filters, limit=limit, token=next_token
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
    status: StatusQuery = None,
    kind: KindQuery = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
    order: OrderQuery = "newest",
    include: IncludeQuery = None,
    limit: LimitQuery = 50,
    next_token: TokenQuery = None,
) -> RunListOut:
    # A deleted schedule: 404 naming GET /runs?schedule_id=
    current_services().schedules.get(schedule_id)
    filters = RunFilters.parse(status, kind, since, until, order, include)
    return _run_listing(schedule_id, filters, limit, next_token)


@router.get(
    "/runs",
    summary="Runs of every schedule not deleted, or of one (schedule_id, deleted or not), "
    "with the filters of a schedule's runs (docs/api.md)",
    responses=_responses(200, RunListOut, "one page; pass next_token for the next"),
)
def list_all_runs(
    status: StatusQuery = None,
    kind: KindQuery = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
    order: OrderQuery = "newest",
    include: IncludeQuery = None,
    limit: LimitQuery = 50,
    next_token: TokenQuery = None,
    schedule_id: ScheduleIdQuery = None,
) -> RunListOut:
    filters = RunFilters.parse(status, kind, since, until, order, include)
    return _run_listing(schedule_id, filters, limit, next_token)


@router.post(
    "/runs/<occurrence_id>/retry",
    summary="Run a failed or expired run again: same occurrence id and key, one more attempt",
    responses=_responses(202, RunOut, "the run, admitted again; its intent is sent", 409, 501),
)
def retry_run(
    occurrence_id: str, body: Annotated[RetryRunIn | None, Body()] = None
) -> Response[RunOut]:
    del body  # no fields: an empty object or no body
    services = current_services()
    run = services.run_views.retry(occurrence_id)
    return run_answer(HTTPStatus.ACCEPTED, services, run)


@router.post(
    "/runs/<occurrence_id>/cancel",
    summary="Cancel a run that has not finished: a waiting one never starts, a running "
    "one's late answer is ignored",
    responses=_responses(200, RunOut, "the run, cancelled", 409, 501),
)
def cancel_run(occurrence_id: str, body: Annotated[CancelRunIn | None, Body()] = None) -> RunOut:
    services = current_services()
    run = services.run_views.cancel(occurrence_id, None if body is None else body.reason)
    return _run_body(services, run)


@router.get(
    "/dead-letters",
    summary="Delivery intents that ended in the dead-letter queue, newest first",
    responses=_responses(200, DeadLetterListOut, "one page; pass next_token for the next", 501),
)
def list_dead_letters(
    limit: LimitQuery = 50,
    next_token: TokenQuery = None,
) -> DeadLetterListOut:
    page = current_services().run_views.dead_letter_page(limit, next_token)
    return DeadLetterListOut(
        dead_letters=[dead_letter_out(letter) for letter in page.items],
        next_token=page.next_token,
    )


@router.get(
    "/runs/<occurrence_id>",
    summary="Read a run",
    responses=_responses(200, RunOut, "the run"),
)
def get_run(occurrence_id: str) -> RunOut:
    services = current_services()
    return _run_body(services, services.schedules.run(occurrence_id))
