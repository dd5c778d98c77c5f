"""The schedule routes: create, list, read, edit, delete (what acts on a
schedule or reads its history: ``api_schedule_actions``)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from handlers.api_common import (
    _JSON,
    LimitQuery,
    TokenQuery,
    _responses,
    current_services,
    described_body,
    schedule_body,
)
from handlers.api_headers import IdempotencyKeyHeader, IfMatchHeader, etag, expected_version
from handlers.api_models import ScheduleIn
from handlers.api_out import ScheduleListOut, ScheduleOut

router = Router()  # type: ignore[no-untyped-call]  # (Powertools leaves it unannotated)


@router.post(
    "/schedules",
    summary="Create a schedule",
    responses=_responses(201, ScheduleOut, "the schedule (also on a retry with the same key)", 503),
)
def create_schedule(
    body: Annotated[ScheduleIn, Body()], idempotency_key: IdempotencyKeyHeader = None
) -> Response[ScheduleOut]:
    services = current_services()
    schedule, created = services.schedules.create(body.definition(), idempotency_key)
    secret = services.signing_secrets.on_create(schedule, created)
    headers = {"Location": f"/schedules/{schedule.schedule_id}", "ETag": etag(schedule)}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return Response(
        HTTPStatus.CREATED,
        _JSON,
        schedule_body(services, schedule, webhook_secret=secret),
        headers=headers,
    )


@router.get(
    "/schedules",
    summary="List schedules, oldest first",
    responses=_responses(200, ScheduleListOut, "one page; pass next_token for the next"),
)
def list_schedules(limit: LimitQuery = 50, next_token: TokenQuery = None) -> ScheduleListOut:
    services = current_services()
    page = services.schedules.list_schedules(limit, next_token)
    return ScheduleListOut(
        schedules=[schedule_body(services, schedule) for schedule in page.items],
        next_token=page.next_token,
    )


@router.get(
    "/schedules/<schedule_id>",
    summary="Read a schedule",
    responses=_responses(200, ScheduleOut, "the schedule; ETag is its version"),
)
def get_schedule(schedule_id: str) -> Response[ScheduleOut]:
    services = current_services()
    schedule = services.schedules.get(schedule_id)
    return Response(
        HTTPStatus.OK, _JSON, described_body(services, schedule), headers={"ETag": etag(schedule)}
    )


@router.put(
    "/schedules/<schedule_id>",
    summary="Replace a schedule's definition (version N+1)",
    responses=_responses(200, ScheduleOut, "the schedule at its new version", 409, 412, 428, 503),
)
def edit_schedule(
    schedule_id: str, body: Annotated[ScheduleIn, Body()], if_match: IfMatchHeader = None
) -> Response[ScheduleOut]:
    services = current_services()
    schedule = services.schedules.edit(schedule_id, expected_version(if_match), body.definition())
    secret = services.signing_secrets.on_edit(schedule)
    return Response(
        HTTPStatus.OK,
        _JSON,
        schedule_body(services, schedule, webhook_secret=secret),
        headers={"ETag": etag(schedule)},
    )


@router.delete(
    "/schedules/<schedule_id>",
    summary="Delete: stop everything, keep the history readable",
    responses=_responses(200, ScheduleOut, "the deleted schedule"),
)
def delete_schedule(schedule_id: str) -> ScheduleOut:
    services = current_services()
    schedule = services.schedules.delete(schedule_id)
    services.signing_secrets.forget(schedule_id)
    return schedule_body(services, schedule)
