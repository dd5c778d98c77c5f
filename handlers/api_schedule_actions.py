"""The routes that act on a schedule or read its history: its versions,
acknowledging a failure, pause, resume, rotating the signing secret, trigger
and backfill."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from handlers.api_bodies import AcknowledgeIn, BackfillIn, EmptyIn, PauseIn
from handlers.api_common import (
    LimitQuery,
    TokenQuery,
    _responses,
    _runs_body,
    current_services,
    described_body,
    run_answer,
    schedule_body,
)
from handlers.api_out import (
    BackfillOut,
    RunOut,
    ScheduleOut,
    VersionListOut,
    VersionOut,
    version_out,
)
from service import overview

router = Router()  # type: ignore[no-untyped-call]  # (Powertools leaves it unannotated)


@router.get(
    "/schedules/<schedule_id>/versions",
    summary="A schedule's versions, oldest first, each with what it changed",
    responses=_responses(200, VersionListOut, "one page; pass next_token for the next"),
)
def list_versions(
    schedule_id: str, limit: LimitQuery = 50, next_token: TokenQuery = None
) -> VersionListOut:
    page = overview.versions(current_services().schedules.store, schedule_id, limit, next_token)
    return VersionListOut(
        versions=[version_out(view.version, view.changed) for view in page.items],
        next_token=page.next_token,
    )


@router.get(
    "/schedules/<schedule_id>/versions/<number>",
    summary="One version of a schedule, with what it changed",
    responses=_responses(200, VersionOut, "the version as it was saved"),
)
def get_version(schedule_id: str, number: int) -> VersionOut:
    view = overview.version(current_services().schedules.store, schedule_id, number)
    return version_out(view.version, view.changed)


@router.post(
    "/schedules/<schedule_id>/acknowledge",
    summary="Acknowledge its newest failed run, so the watchdog stops calling it overdue",
    responses=_responses(200, ScheduleOut, "the schedule, its watch verdict judged again", 409),
)
def acknowledge_schedule(
    schedule_id: str, body: Annotated[AcknowledgeIn | None, Body()] = None
) -> ScheduleOut:
    services = current_services()
    schedule = services.schedules.get(schedule_id)
    services.watchdog.acknowledge(schedule, None if body is None else body.note)
    return described_body(services, schedule)


@router.post(
    "/schedules/<schedule_id>/pause",
    summary="Pause: stop admitting occurrences",
    responses=_responses(200, ScheduleOut, "the paused schedule"),
)
def pause_schedule(schedule_id: str, body: Annotated[PauseIn | None, Body()] = None) -> ScheduleOut:
    services = current_services()
    schedule = services.schedules.pause(schedule_id, None if body is None else body.note)
    return schedule_body(services, schedule)


@router.post(
    "/schedules/<schedule_id>/resume",
    summary="Resume from now",
    responses=_responses(200, ScheduleOut, "the active schedule", 409),
)
def resume_schedule(schedule_id: str) -> ScheduleOut:
    services = current_services()
    return schedule_body(services, services.schedules.resume(schedule_id))


@router.post(
    "/schedules/<schedule_id>/rotate-secret",
    summary="A new webhook signing secret, returned once",
    responses=_responses(
        200, ScheduleOut, "the schedule, with its new webhook_secret", 409, 501, 503
    ),
)
def rotate_secret(schedule_id: str, body: Annotated[EmptyIn | None, Body()] = None) -> ScheduleOut:
    del body  # no fields: an empty object or no body
    services = current_services()
    schedule = services.schedules.get(schedule_id)
    secret = services.signing_secrets.rotate(schedule)
    return schedule_body(services, schedule, webhook_secret=secret)


@router.post(
    "/schedules/<schedule_id>/trigger",
    summary="One extra run now, with its own identity",
    responses=_responses(201, RunOut, "the new occurrence; the next tick admits it", 409),
)
def trigger_schedule(
    schedule_id: str, body: Annotated[EmptyIn | None, Body()] = None
) -> Response[RunOut]:
    del body  # no fields: an empty object or no body
    services = current_services()
    run = services.schedules.trigger(schedule_id)
    return run_answer(HTTPStatus.CREATED, services, run)


@router.post(
    "/schedules/<schedule_id>/backfill",
    summary="Materialize the past occurrences of a range that do not exist yet "
    "(dry_run: only list them)",
    responses=_responses(
        200, BackfillOut, "the occurrences created (none twice), or with dry_run listed", 409
    ),
)
def backfill_schedule(schedule_id: str, body: Annotated[BackfillIn, Body()]) -> BackfillOut:
    services = current_services()
    start_at, end_at = body.range
    runs = services.schedules.backfill(schedule_id, start_at, end_at, dry_run=body.dry_run)
    return BackfillOut(
        runs=_runs_body(services, tuple(runs)),
        created=0 if body.dry_run else len(runs),
        dry_run=body.dry_run,
    )
