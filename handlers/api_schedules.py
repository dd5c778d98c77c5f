"""The schedule routes: create, list, read, versions, edit, pause, resume,
delete, rotate the signing secret, trigger, backfill."""

from __future__ import annotations

from dataclasses import replace
from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query

from adapters.secrets import SecretNotFound, new_secret, put_first
from adapters.targets.signing import shown_secret
from bootstrap.parts import ApiServices
from domain.schedule import Schedule
from domain.targets import WebhookTarget
from handlers.api_common import (
    _JSON,
    IDEMPOTENCY_KEY_PATTERN,
    IF_MATCH_PATTERN,
    MAX_IDEMPOTENCY_KEY_CHARS,
    NEXT_OCCURRENCES,
    TokenQuery,
    _responses,
    _runs_body,
    services_of,
)
from handlers.api_errors import BadHeader, NotAvailable, NoWebhookTarget, PreconditionRequired
from handlers.api_models import AcknowledgeIn, BackfillIn, EmptyIn, PauseIn, ScheduleIn
from handlers.api_out import (
    BackfillOut,
    RunOut,
    ScheduleListOut,
    ScheduleOut,
    VersionListOut,
    VersionOut,
    WatchOut,
    schedule_out,
    version_out,
)
from handlers.observability import logger
from service import overview
from service.schedules import local_time
from service.watchdog import watch_component

router = Router()  # type: ignore[no-untyped-call]  # (Powertools leaves it unannotated)


def _services() -> ApiServices:
    return services_of(router)


def _etag(schedule: Schedule) -> str:
    return f'"{schedule.version}"'


def _schedule_body(
    services: ApiServices, schedule: Schedule, *, webhook_secret: str | None = None
) -> ScheduleOut:
    spec = schedule.current.spec
    slots = services.schedules.next_occurrences(schedule, NEXT_OCCURRENCES)
    # next_due as a person reads it: the next slot that will run, queued or not.
    next_due = overview.next_to_run(
        services.schedules.store, schedule, services.schedules.clock.now()
    )
    return schedule_out(
        replace(schedule, next_due=next_due),
        slots,
        lambda instant: local_time(spec, instant),
        status=overview.status(schedule, services.schedules.clock.now()).value,
        dst_notes=[item.dst_note for item in overview.upcoming_occurrences(schedule, slots)],
        webhook_secret=None if webhook_secret is None else shown_secret(webhook_secret),
    )


def _signing_secret(services: ApiServices, schedule: Schedule, created: bool) -> str | None:
    """The signing secret a webhook schedule's creation answers with.

    A retried create (same Idempotency-Key) answers with the same secret; a
    schedule whose first create stopped before its secret was stored gets one now.
    """
    if not isinstance(schedule.current.target, WebhookTarget):
        return None
    store = services.secrets
    if store is None:
        return new_secret() if created else None
    if not created:
        try:
            return store.get(schedule.schedule_id)
        except SecretNotFound:
            pass
    return put_first(store, schedule.schedule_id)


def _edit_secret(services: ApiServices, schedule: Schedule) -> str | None:
    """An edit that gives a schedule its first webhook target also gives it a secret."""
    store = services.secrets
    if store is None or not isinstance(schedule.current.target, WebhookTarget):
        return None
    try:
        store.get(schedule.schedule_id)
    except SecretNotFound:
        return put_first(store, schedule.schedule_id)
    return None


def _expected_version(if_match: str | None) -> int:
    """The version an If-Match header names: ``3``, ``"3"`` or ``W/"3"``."""
    if if_match is None or not if_match.strip():
        raise PreconditionRequired(
            "an edit needs If-Match: <version>, the version you read (GET the schedule first)"
        )
    text = if_match.strip().removeprefix("W/").strip('"')
    if not (text.isascii() and text.isdigit()) or not 1 <= len(text) <= 12:
        raise BadHeader("If-Match", f'{if_match!r} is not a schedule version such as "3"')
    return int(text)


# --- routes -----------------------------------------------------------------------------


@router.post(
    "/schedules",
    summary="Create a schedule",
    responses=_responses(201, ScheduleOut, "the schedule (also on a retry with the same key)", 503),
)
def create_schedule(
    body: Annotated[ScheduleIn, Body()],
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=MAX_IDEMPOTENCY_KEY_CHARS,
            pattern=IDEMPOTENCY_KEY_PATTERN,
            description="a retried create with the same key returns the first schedule",
        ),
    ] = None,
) -> Response[ScheduleOut]:
    services = _services()
    schedule, created = services.schedules.create(body.definition(), idempotency_key)
    secret = _signing_secret(services, schedule, created)
    headers = {"Location": f"/schedules/{schedule.schedule_id}", "ETag": _etag(schedule)}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return Response(
        HTTPStatus.CREATED,
        _JSON,
        _schedule_body(services, schedule, webhook_secret=secret),
        headers=headers,
    )


@router.get(
    "/schedules",
    summary="List schedules, oldest first",
    responses=_responses(200, ScheduleListOut, "one page; pass next_token for the next"),
)
def list_schedules(
    limit: Annotated[int, Query(ge=1, le=100, description="page size")] = 50,
    next_token: TokenQuery = None,
) -> ScheduleListOut:
    services = _services()
    page = services.schedules.list_schedules(limit, next_token)
    return ScheduleListOut(
        schedules=[_schedule_body(services, schedule) for schedule in page.items],
        next_token=page.next_token,
    )


@router.get(
    "/schedules/<schedule_id>",
    summary="Read a schedule",
    responses=_responses(200, ScheduleOut, "the schedule; ETag is its version"),
)
def get_schedule(schedule_id: str) -> Response[ScheduleOut]:
    services = _services()
    schedule = services.schedules.get(schedule_id)
    return Response(
        HTTPStatus.OK, _JSON, _described(services, schedule), headers={"ETag": _etag(schedule)}
    )


# --- schedules: the whole picture, versions, acknowledging a failure ------------------


def _described(services: ApiServices, schedule: Schedule) -> ScheduleOut:
    """A schedule as GET /schedules/{id} shows it: with its watch verdict, its
    recent runs and what is still planned under an older version."""
    body = _schedule_body(services, schedule)
    verdict = services.schedules.store.heartbeat(watch_component(schedule.schedule_id))
    if verdict is not None:
        body.watch = WatchOut.model_validate(dict(verdict.detail))
    seen = overview.overview(services.schedules.store, schedule, services.schedules.clock.now())
    body.recent_runs = _runs_body(services, seen.recent_runs)
    body.planned_under_older_versions = _runs_body(services, seen.planned_under_older_versions)
    return body


@router.get(
    "/schedules/<schedule_id>/versions",
    summary="A schedule's versions, oldest first, each with what it changed",
    responses=_responses(200, VersionListOut, "one page; pass next_token for the next"),
)
def list_versions(
    schedule_id: str,
    limit: Annotated[int, Query(ge=1, le=100, description="page size")] = 50,
    next_token: TokenQuery = None,
) -> VersionListOut:
    page = overview.versions(_services().schedules.store, schedule_id, limit, next_token)
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
    view = overview.version(_services().schedules.store, schedule_id, number)
    return version_out(view.version, view.changed)


@router.post(
    "/schedules/<schedule_id>/acknowledge",
    summary="Acknowledge its newest failed run, so the watchdog stops calling it overdue",
    responses=_responses(200, ScheduleOut, "the schedule, its watch verdict judged again", 409),
)
def acknowledge_schedule(
    schedule_id: str, body: Annotated[AcknowledgeIn | None, Body()] = None
) -> ScheduleOut:
    services = _services()
    schedule = services.schedules.get(schedule_id)
    services.watchdog.acknowledge(schedule, None if body is None else body.note)
    return _described(services, schedule)


@router.put(
    "/schedules/<schedule_id>",
    summary="Replace a schedule's definition (version N+1)",
    responses=_responses(200, ScheduleOut, "the schedule at its new version", 409, 412, 428, 503),
)
def edit_schedule(
    schedule_id: str,
    body: Annotated[ScheduleIn, Body()],
    if_match: Annotated[
        str | None,
        Header(
            alias="If-Match",
            description="the version you read (required: 428 without it)",
            json_schema_extra={"pattern": IF_MATCH_PATTERN},
        ),
    ] = None,
) -> Response[ScheduleOut]:
    services = _services()
    schedule = services.schedules.edit(schedule_id, _expected_version(if_match), body.definition())
    secret = _edit_secret(services, schedule)
    return Response(
        HTTPStatus.OK,
        _JSON,
        _schedule_body(services, schedule, webhook_secret=secret),
        headers={"ETag": _etag(schedule)},
    )


@router.post(
    "/schedules/<schedule_id>/pause",
    summary="Pause: stop admitting occurrences",
    responses=_responses(200, ScheduleOut, "the paused schedule"),
)
def pause_schedule(schedule_id: str, body: Annotated[PauseIn | None, Body()] = None) -> ScheduleOut:
    services = _services()
    schedule = services.schedules.pause(schedule_id, None if body is None else body.note)
    return _schedule_body(services, schedule)


@router.post(
    "/schedules/<schedule_id>/resume",
    summary="Resume from now",
    responses=_responses(200, ScheduleOut, "the active schedule", 409),
)
def resume_schedule(schedule_id: str) -> ScheduleOut:
    services = _services()
    return _schedule_body(services, services.schedules.resume(schedule_id))


@router.delete(
    "/schedules/<schedule_id>",
    summary="Delete: stop everything, keep the history readable",
    responses=_responses(200, ScheduleOut, "the deleted schedule"),
)
def delete_schedule(schedule_id: str) -> ScheduleOut:
    services = _services()
    schedule = services.schedules.delete(schedule_id)
    if services.secrets is not None:
        try:
            services.secrets.delete(schedule_id)
        except Exception:  # the schedule is deleted either way; the secret is left behind
            logger().exception("could not delete the signing secret of a deleted schedule")
    return _schedule_body(services, schedule)


@router.post(
    "/schedules/<schedule_id>/rotate-secret",
    summary="A new webhook signing secret, returned once",
    responses=_responses(
        200, ScheduleOut, "the schedule, with its new webhook_secret", 409, 501, 503
    ),
)
def rotate_secret(schedule_id: str, body: Annotated[EmptyIn | None, Body()] = None) -> ScheduleOut:
    del body  # no fields: an empty object or no body
    services = _services()
    schedule = services.schedules.get(schedule_id)
    if not isinstance(schedule.current.target, WebhookTarget):
        raise NoWebhookTarget(schedule_id)
    if services.secrets is None:
        raise NotAvailable("this deployment keeps no signing secrets to rotate")
    secret = services.secrets.put(schedule_id)
    return _schedule_body(services, schedule, webhook_secret=secret)


@router.post(
    "/schedules/<schedule_id>/trigger",
    summary="One extra run now, with its own identity",
    responses=_responses(201, RunOut, "the new occurrence; the next tick admits it", 409),
)
def trigger_schedule(
    schedule_id: str, body: Annotated[EmptyIn | None, Body()] = None
) -> Response[RunOut]:
    del body  # no fields: an empty object or no body
    services = _services()
    run = services.schedules.trigger(schedule_id)
    return Response(
        HTTPStatus.CREATED,
        _JSON,
        _runs_body(services, (run,))[0],
        headers={"Location": f"/runs/{run.occurrence_id}"},
    )


@router.post(
    "/schedules/<schedule_id>/backfill",
    summary="Materialize the past occurrences of a range that do not exist yet "
    "(dry_run: only list them)",
    responses=_responses(
        200, BackfillOut, "the occurrences created (none twice), or with dry_run listed", 409
    ),
)
def backfill_schedule(schedule_id: str, body: Annotated[BackfillIn, Body()]) -> BackfillOut:
    services = _services()
    start_at, end_at = body.range
    runs = services.schedules.backfill(schedule_id, start_at, end_at, dry_run=body.dry_run)
    return BackfillOut(
        runs=_runs_body(services, tuple(runs)),
        created=0 if body.dry_run else len(runs),
        dry_run=body.dry_run,
    )
