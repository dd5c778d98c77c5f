"""The routes a long job calls with its run token: progress, and its end."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from handlers.api_bodies import CompleteIn, ProgressIn
from handlers.api_common import _responses, _run_body, current_services
from handlers.api_errors import NotAvailable
from handlers.api_out import RunOut
from service.runs import RunReports

router = Router()  # type: ignore[no-untyped-call]  # (Powertools leaves it unannotated)


def _reports() -> RunReports:
    reports = current_services().runs
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
    return _run_body(current_services(), run)


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
    return _run_body(current_services(), run)
