"""The HTTP API: API Gateway REST proxy events in, JSON out.

Each route is decorators, parse, one use case call, and a mapping of the
result to a response model. Every error the use cases raise becomes an HTTP
response in one place, the ``@app.exception_handler`` functions below, as
``{"error": {"code", "message", "field"}}``. A refused request writes
nothing: validation happens before any use case runs, and each use case
refuses before it writes.

Adapters are built lazily, on the first request, and come in through the
``service`` parameter in tests and in the local stack. On AWS the store is
DynamoDB; with ``DUETIME_DATA_DIR`` set it is the SQLite file in that
directory (the local stack).

``python -m handlers.api --openapi`` prints the OpenAPI document that
docs/openapi.json holds.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from http import HTTPStatus
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar, get_type_hints

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from adapters.secrets import SecretNotFound, SecretStore, SecretStoreFull, new_secret, put_first
from adapters.targets.addresses import AddressPolicy
from adapters.targets.signing import shown_secret
from domain.errors import DuetimeError, InvalidSchedule
from domain.partition import Partitioning
from domain.run import RunKind, RunStatus
from domain.schedule import Schedule
from domain.spec import ScheduleSpec
from domain.targets import WebhookTarget
from domain.text import forbidden_surrogate
from domain.timeparse import format_instant, parse_instant
from handlers.api_models import (
    SINCE_PATTERN,
    UNTIL_PATTERN,
    WEBHOOK_ADDRESSES,
    AcknowledgeIn,
    BackfillIn,
    BackfillOut,
    CompleteIn,
    DeadLetterListOut,
    DeadLetterOut,
    EmptyIn,
    ErrorDetail,
    ErrorOut,
    HealthOut,
    PauseIn,
    ProgressIn,
    RetryRunIn,
    RunListOut,
    RunOut,
    ScheduleIn,
    ScheduleListOut,
    ScheduleOut,
    VersionListOut,
    VersionOut,
    WatchOut,
    run_out,
    schedule_out,
    version_out,
)
from handlers.observability import ledger_not_written, logger
from handlers.settings import Settings
from service import overview
from service.clock import SystemClock
from service.errors import (
    Contention,
    RunNotFound,
    ScheduleNotActive,
    ScheduleNotFound,
    VersionConflict,
)
from service.overview import VersionNotFound
from service.ports import Clock, DeliveryQueue
from service.run_views import (
    DeadLetters,
    DeadLettersUnavailable,
    InvalidListing,
    NotRetryable,
    RetryUnavailable,
    RunViews,
)
from service.runs import RunReports, RunTokenRefused
from service.schedules import ScheduleService, TargetSupport, local_time
from service.watchdog import NothingToAcknowledge, Watchdog, watch_component

API_TITLE: Final = "duetime"
API_VERSION: Final = "1"
# Bodies larger than this are refused (413) before anything reads them.
MAX_BODY_BYTES: Final = 64 * 1024
# How many upcoming occurrences a schedule shows.
NEXT_OCCURRENCES: Final = 5
MAX_IDEMPOTENCY_KEY_CHARS: Final = 255
# Printable ASCII without spaces: what a header value can carry unchanged.
IDEMPOTENCY_KEY_PATTERN: Final = "^[!-~]+$"
IF_MATCH_PATTERN: Final = '^(W/)?"?[0-9]{1,12}"?$'
ENV_DATA_DIR: Final = "DUETIME_DATA_DIR"
SQLITE_FILE: Final = "duetime.db"


@dataclass
class ApiServices:
    """What the routes call: the schedule use cases and the webhook secret store.

    ``secrets`` is None where no secret store is configured: a webhook
    schedule then still gets a signing secret, returned once, but duetime
    keeps no copy to sign with. ``runs`` takes the progress and completion
    reports of long jobs; where it is None those routes answer 501.
    ``views`` lists runs with filters, retries them and reads the dead
    letters; where it is None, runs are still listed (over the schedule
    store), and the retry and the dead letters answer 501.
    ``address_policy`` is the rule the deployment's worker applies to webhook
    addresses; a URL whose host is an address it refuses is refused at save.
    """

    schedules: ScheduleService
    secrets: SecretStore | None = None
    runs: RunReports | None = None
    views: RunViews | None = None
    address_policy: AddressPolicy = field(default_factory=AddressPolicy)


# --- errors the API itself raises -------------------------------------------------------


class PreconditionRequired(DuetimeError):
    """An edit without If-Match (HTTP 428)."""


class NotAvailable(DuetimeError):
    """A route this deployment has no adapter for yet (HTTP 501)."""


class NoWebhookTarget(DuetimeError):
    """A webhook-only operation on a schedule whose target is not a webhook (HTTP 409)."""

    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"schedule {schedule_id!r} has no webhook target, so no signing secret")
        self.schedule_id = schedule_id


class BadHeader(DuetimeError):
    def __init__(self, header: str, reason: str) -> None:
        super().__init__(f"{header}: {reason}")
        self.header = header
        self.reason = reason


app = APIGatewayRestResolver(enable_validation=True)

_JSON = content_types.APPLICATION_JSON
_ERRORS: Final = (
    (400, "malformed JSON, or a header that cannot be read"),
    (404, "no such schedule or run"),
    (413, f"body larger than {MAX_BODY_BYTES} bytes"),
    (415, "the body is not sent as application/json"),
    (422, "a field is invalid; error.field names it"),
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


_E = TypeVar("_E", bound=Exception)


def _maps(
    *errors: type[Exception],
) -> Callable[[Callable[[_E], Response[str]]], Callable[[_E], Response[str]]]:
    """Registers an error-to-response function for ``errors`` (a typed ``exception_handler``)."""

    def register(function: Callable[[_E], Response[str]]) -> Callable[[_E], Response[str]]:
        for error in errors:
            app.exception_handler(error)(function)
        return function

    return register


def _services() -> ApiServices:
    services: ApiServices = app.context["services"]
    return services


def _etag(schedule: Schedule) -> str:
    return f'"{schedule.version}"'


def _local(spec: ScheduleSpec, instant: datetime) -> datetime:
    return local_time(spec, instant)


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


def _runs_body(services: ApiServices, runs: tuple[Any, ...]) -> list[RunOut]:
    """Runs with their local times, reading each version's zone once."""
    specs: dict[tuple[str, int], ScheduleSpec | None] = {}
    out: list[RunOut] = []
    for run in runs:
        key = (run.schedule_id, run.version)
        if key not in specs:
            try:
                specs[key] = services.schedules.version(*key).spec
            except ScheduleNotFound:
                specs[key] = None
        out.append(run_out(run, specs[key], _local))
    return out


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


def _views(services: ApiServices) -> RunViews:
    """The run views; where none are wired, listings over the schedule store
    (retry and dead letters then answer 501)."""
    if services.views is not None:
        return services.views
    schedules = services.schedules
    return RunViews(schedules.store, None, schedules.clock, schedules.partitioning)


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
    page = _views(services).list(
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


# --- routes -----------------------------------------------------------------------------


@app.post(
    "/schedules",
    summary="Create a schedule",
    responses=_responses(201, ScheduleOut, "the schedule (also on a retry with the same key)"),
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


@app.get(
    "/schedules",
    summary="List schedules, oldest first",
    responses=_responses(200, ScheduleListOut, "one page; pass next_token for the next"),
)
def list_schedules(
    limit: Annotated[int, Query(ge=1, le=100, description="page size")] = 50,
    next_token: Annotated[str | None, Query(description="from the previous page")] = None,
) -> ScheduleListOut:
    services = _services()
    page = services.schedules.list_schedules(limit, next_token)
    return ScheduleListOut(
        schedules=[_schedule_body(services, schedule) for schedule in page.items],
        next_token=page.next_token,
    )


@app.get(
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


@app.get(
    "/schedules/<schedule_id>/versions",
    summary="A schedule's versions, oldest first, each with what it changed",
    responses=_responses(200, VersionListOut, "one page; pass next_token for the next"),
)
def list_versions(
    schedule_id: str,
    limit: Annotated[int, Query(ge=1, le=100, description="page size")] = 50,
    next_token: Annotated[str | None, Query(description="from the previous page")] = None,
) -> VersionListOut:
    page = overview.versions(_services().schedules.store, schedule_id, limit, next_token)
    return VersionListOut(
        versions=[version_out(view.version, view.changed) for view in page.items],
        next_token=page.next_token,
    )


@app.get(
    "/schedules/<schedule_id>/versions/<number>",
    summary="One version of a schedule, with what it changed",
    responses=_responses(200, VersionOut, "the version as it was saved"),
)
def get_version(schedule_id: str, number: int) -> VersionOut:
    view = overview.version(_services().schedules.store, schedule_id, number)
    return version_out(view.version, view.changed)


@app.post(
    "/schedules/<schedule_id>/acknowledge",
    summary="Acknowledge its newest failed run, so the watchdog stops calling it overdue",
    responses=_responses(200, ScheduleOut, "the schedule, its watch verdict judged again", 409),
)
def acknowledge_schedule(
    schedule_id: str, body: Annotated[AcknowledgeIn | None, Body()] = None
) -> ScheduleOut:
    services = _services()
    schedule = services.schedules.get(schedule_id)
    Watchdog(services.schedules.store, services.schedules.clock).acknowledge(
        schedule, None if body is None else body.note
    )
    return _described(services, schedule)


@app.put(
    "/schedules/<schedule_id>",
    summary="Replace a schedule's definition (version N+1)",
    responses=_responses(200, ScheduleOut, "the schedule at its new version", 412, 428),
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


@app.post(
    "/schedules/<schedule_id>/pause",
    summary="Pause: stop admitting occurrences",
    responses=_responses(200, ScheduleOut, "the paused schedule"),
)
def pause_schedule(schedule_id: str, body: Annotated[PauseIn | None, Body()] = None) -> ScheduleOut:
    services = _services()
    schedule = services.schedules.pause(schedule_id, None if body is None else body.note)
    return _schedule_body(services, schedule)


@app.post(
    "/schedules/<schedule_id>/resume",
    summary="Resume from now",
    responses=_responses(200, ScheduleOut, "the active schedule"),
)
def resume_schedule(schedule_id: str) -> ScheduleOut:
    services = _services()
    return _schedule_body(services, services.schedules.resume(schedule_id))


@app.delete(
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


@app.post(
    "/schedules/<schedule_id>/rotate-secret",
    summary="A new webhook signing secret, returned once",
    responses=_responses(200, ScheduleOut, "the schedule, with its new webhook_secret", 409),
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


@app.post(
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


@app.post(
    "/schedules/<schedule_id>/backfill",
    summary="Materialize the past occurrences of a range that do not exist yet",
    responses=_responses(200, BackfillOut, "the occurrences created (none twice)", 409),
)
def backfill_schedule(schedule_id: str, body: Annotated[BackfillIn, Body()]) -> BackfillOut:
    services = _services()
    runs = services.schedules.backfill(
        schedule_id,
        parse_instant(body.start_at, "start_at"),
        parse_instant(body.end_at, "end_at"),
    )
    return BackfillOut(runs=_runs_body(services, tuple(runs)), created=len(runs))


@app.get(
    "/schedules/<schedule_id>/runs",
    summary="A schedule's runs, newest first, planned ones left out (filters: docs/api.md)",
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
    next_token: Annotated[str | None, Query(description="from the previous page")] = None,
) -> RunListOut:
    return _run_listing(schedule_id, status, kind, since, until, order, include, limit, next_token)


@app.get(
    "/runs",
    summary="Runs of every schedule, with the filters of a schedule's runs (docs/api.md)",
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
    next_token: Annotated[str | None, Query(description="from the previous page")] = None,
) -> RunListOut:
    return _run_listing(None, status, kind, since, until, order, include, limit, next_token)


@app.post(
    "/runs/<occurrence_id>/retry",
    summary="Run a failed or expired run again: same occurrence id and key, one more attempt",
    responses=_responses(202, RunOut, "the run, admitted again; its intent is sent", 409, 501),
)
def retry_run(
    occurrence_id: str, body: Annotated[RetryRunIn | None, Body()] = None
) -> Response[RunOut]:
    del body  # no fields: an empty object or no body
    services = _services()
    run = _views(services).retry(occurrence_id)
    return Response(
        HTTPStatus.ACCEPTED,
        _JSON,
        _runs_body(services, (run,))[0],
        headers={"Location": f"/runs/{run.occurrence_id}"},
    )


@app.get(
    "/dead-letters",
    summary="Delivery intents that ended in the dead-letter queue, newest first",
    responses=_responses(200, DeadLetterListOut, "one page; pass next_token for the next", 501),
)
def list_dead_letters(
    limit: Annotated[int, Query(ge=1, le=100, description="page size")] = 50,
    next_token: Annotated[str | None, Query(description="from the previous page")] = None,
) -> DeadLetterListOut:
    page = _views(_services()).dead_letter_page(limit, next_token)
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


@app.get(
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


@app.post(
    "/runs/<occurrence_id>/progress",
    summary="A long job reports progress with its run token",
    responses=_responses(200, RunOut, "the run with its progress", 409, 501),
)
def report_progress(occurrence_id: str, body: Annotated[ProgressIn, Body()]) -> RunOut:
    run = _reports().progress(occurrence_id, body.run_token, body.progress)
    return _runs_body(_services(), (run,))[0]


@app.post(
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


@app.get("/health", summary="Liveness", responses=_responses(200, HealthOut, "the API answers"))
def health() -> HealthOut:
    return HealthOut(status="ok", time=format_instant(_services().schedules.clock.now()))


@app.get("/openapi.json", include_in_schema=False)
def openapi() -> Response[Any]:
    return Response(HTTPStatus.OK, _JSON, openapi_json())


# --- errors, in one place ---------------------------------------------------------------


def error_response(
    status: int,
    code: str,
    message: str,
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response[str]:
    body = ErrorOut(error=ErrorDetail(code=code, message=message, field=field))
    return Response(status, _JSON, body.model_dump_json(), headers=dict(headers or {}))


def _field_of(loc: tuple[Any, ...] | list[Any]) -> str | None:
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


@_maps(RequestUnsupportedContentType)
def _unsupported_content_type(_: RequestUnsupportedContentType) -> Response[str]:
    return error_response(
        415, "unsupported_media_type", "send the body as JSON (Content-Type: application/json)"
    )


@_maps(RequestValidationError)
def _request_invalid(error: RequestValidationError) -> Response[str]:
    errors = list(error.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        detail = next(e for e in errors if e.get("type") == "json_invalid")
        reason = (detail.get("ctx") or {}).get("error", "not JSON")
        return error_response(400, "invalid_json", f"the body is not valid JSON: {reason}")
    first = errors[0] if errors else {}
    field = _field_of(tuple(first.get("loc", ())))
    message = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden":
        message = "is not a known field"
    elif first.get("type") == "missing":
        message = "is required"
    elif first.get("type") == "model_attributes_type":
        message = "must be a JSON object"
    return error_response(422, "validation_error", f"{field or 'body'}: {message}", field or "body")


@_maps(InvalidSchedule)
def _invalid(error: InvalidSchedule) -> Response[str]:
    return error_response(422, "validation_error", str(error), error.field)


@_maps(ScheduleNotFound)
def _schedule_not_found(error: ScheduleNotFound) -> Response[str]:
    return error_response(404, "schedule_not_found", str(error))


@_maps(VersionNotFound)
def _version_not_found(error: VersionNotFound) -> Response[str]:
    return error_response(404, "version_not_found", str(error))


@_maps(NothingToAcknowledge)
def _nothing_to_acknowledge(error: NothingToAcknowledge) -> Response[str]:
    return error_response(409, "nothing_to_acknowledge", str(error))


@_maps(RunNotFound)
def _run_not_found(error: RunNotFound) -> Response[str]:
    return error_response(404, "run_not_found", str(error))


@_maps(VersionConflict)
def _version_conflict(error: VersionConflict) -> Response[str]:
    return error_response(412, "version_conflict", str(error), "If-Match")


@_maps(PreconditionRequired)
def _precondition_required(error: PreconditionRequired) -> Response[str]:
    return error_response(428, "precondition_required", str(error), "If-Match")


@_maps(BadHeader)
def _bad_header(error: BadHeader) -> Response[str]:
    return error_response(400, "invalid_header", str(error), error.header)


@_maps(ScheduleNotActive)
def _not_active(error: ScheduleNotActive) -> Response[str]:
    return error_response(409, "schedule_not_active", str(error))


@_maps(RunTokenRefused)
def _token_refused(error: RunTokenRefused) -> Response[str]:
    return error_response(409, "run_token_refused", str(error), "run_token")


@_maps(InvalidListing)
def _invalid_listing(error: InvalidListing) -> Response[str]:
    return error_response(422, "validation_error", str(error), error.field)


@_maps(NotRetryable)
def _not_retryable(error: NotRetryable) -> Response[str]:
    return error_response(409, "not_retryable", str(error), "status")


@_maps(DeadLettersUnavailable, RetryUnavailable)
def _run_view_unavailable(error: DuetimeError) -> Response[str]:
    return error_response(501, "not_available", str(error))


@_maps(NotAvailable)
def _not_available(error: NotAvailable) -> Response[str]:
    return error_response(501, "not_available", str(error))


@_maps(Contention)
def _contention(error: Contention) -> Response[str]:
    return error_response(409, "contention", str(error), headers={"Retry-After": "1"})


@_maps(NoWebhookTarget)
def _no_webhook_target(error: NoWebhookTarget) -> Response[str]:
    return error_response(409, "no_webhook_target", str(error))


@_maps(SecretStoreFull)
def _secret_store_full(error: SecretStoreFull) -> Response[str]:
    # The schedule is stored; a retried create (same Idempotency-Key) or an
    # edit gives it its secret once the store has room.
    return error_response(503, "secret_store_full", str(error))


@app.not_found
def _no_route(_: Exception) -> Response[str]:
    event = app.current_event
    return error_response(
        404, "no_route", f"no route for {event.http_method} {event.path}; see GET /openapi.json"
    )


@_maps(Exception)
def _unexpected(error: Exception) -> Response[str]:
    logger().exception("unhandled error")
    return error_response(500, "internal_error", "something went wrong; it has been logged")


# --- the entry point --------------------------------------------------------------------


def openapi_json() -> str:
    """The OpenAPI document of this API, as docs/openapi.json holds it."""
    schema = json.loads(
        app.get_openapi_json_schema(
            title=API_TITLE,
            version=API_VERSION,
            summary="Schedules, their occurrences and runs",
            description=(
                'Errors are {"error": {"code", "message", "field"}}. '
                "Instants are UTC ISO 8601 with Z. See docs/api.md."
            ),
        )
    )
    for operations in schema["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter["in"] == "header":
                    _header_schema(parameter)
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _header_schema(parameter: dict[str, Any]) -> None:
    """A header is a string when sent: its schema says so, without ``null``.

    If-Match is required on an edit; the route reads it itself so that its
    absence is 428 Precondition Required rather than a validation error.
    """
    schema = parameter["schema"]
    options = [option for option in schema.pop("anyOf", ()) if option.get("type") != "null"]
    for option in options:
        schema.update(option)
    if parameter["name"].lower() == "if-match":
        parameter["required"] = True
        schema["maxLength"] = 20


def _body_bytes(event: Mapping[str, Any]) -> bytes:
    body = event.get("body") or ""
    if isinstance(body, bytes):
        return body
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=False)
        except ValueError:
            return body.encode("utf-8", "surrogatepass")
    return str(body).encode("utf-8", "surrogatepass")


# Methods some route serves; any other (TRACE, CONNECT, PATCH, FOO) is answered
# 405 on a path the API has, and 501 on one it has not.
_SERVED_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"})
# JSON bodies nest at most this deep (a schedule needs 4 levels; payloads get the rest).
MAX_JSON_DEPTH: Final = 32


class _BodyRefused(Exception):
    def __init__(self, reason: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _BodyRefused(f"the key {key!r} appears twice in one object", key)
        obj[key] = value
    return obj


def _no_constant(name: str) -> Any:
    raise _BodyRefused(f"{name} is not a JSON number")


def _check_json_tree(data: Any) -> None:
    """Refuses nesting deeper than MAX_JSON_DEPTH and strings that are not text."""
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            if forbidden_surrogate(value):
                raise _BodyRefused(
                    "a string holds a lone surrogate, which is not text", where or None
                )
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            raise _BodyRefused(f"the body nests deeper than {MAX_JSON_DEPTH} levels", where or None)
        if isinstance(value, dict):
            for key, item in value.items():
                path = f"{where}.{key}" if where else str(key)
                if forbidden_surrogate(key):
                    raise _BodyRefused(
                        "a key holds a lone surrogate, which is not text", where or None
                    )
                stack.append((item, depth + 1, path))
        else:
            stack.extend((item, depth + 1, f"{where}[{i}]") for i, item in enumerate(value))


def parse_json_body(body: bytes) -> Any:
    """A request body read strictly: UTF-8 JSON (RFC 8259) without NaN or
    Infinity, without a key twice in one object, nested at most
    MAX_JSON_DEPTH deep, with no lone surrogate in any string.

    Raises ``_BodyRefused`` with the reason.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _BodyRefused(f"the body is not UTF-8 ({error.reason})") from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except RecursionError:
        raise _BodyRefused(f"the body nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as error:  # _BodyRefused from the hooks passes through
        raise _BodyRefused(str(error)) from None
    _check_json_tree(data)
    return data


def allowed_methods(path: str) -> list[str]:
    """The methods served at ``path``, HEAD and OPTIONS included (none: no route has it)."""
    methods = {
        route.method
        for route in (*app._static_routes, *app._dynamic_routes)
        if route.rule.match(path)
    }
    if not methods:
        return []
    if "GET" in methods:
        methods.add("HEAD")
    methods.add("OPTIONS")
    order = ("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS")
    return [method for method in order if method in methods]


def _method_refusal(method: str, path: str) -> Response[str] | None:
    """A method the path does not serve: 405 with Allow (501 for one no path serves)."""
    allowed = allowed_methods(path)
    if not allowed:
        if method in _SERVED_METHODS:
            return None  # the resolver answers 404 no_route
        return error_response(
            501, "method_not_implemented", f"{method} is not a method this API serves"
        )
    allow = {"Allow": ", ".join(allowed)}
    if method == "OPTIONS":
        return Response(HTTPStatus.NO_CONTENT, None, "", headers=allow)
    if method not in allowed:
        return error_response(
            405,
            "method_not_allowed",
            f"{method} is not allowed on {path}; allowed: {allow['Allow']}",
            headers=allow,
        )
    return None


def _early_refusal(event: Mapping[str, Any]) -> Response[str] | None:
    """What is refused before routing: a method the path does not serve, or a
    body too large, not sent as JSON, not strict JSON, or not an object.

    (The resolver would read a form-encoded body as fields, a one-element JSON
    array as its element, and NaN or a repeated key without a word.)
    """
    method = str(event.get("httpMethod") or "").upper()
    refused = _method_refusal(method, app._remove_prefix(str(event.get("path") or "/")))
    if refused is not None:
        return refused
    body = _body_bytes(event)
    if len(body) > MAX_BODY_BYTES:
        return error_response(
            413, "body_too_large", f"the body is larger than {MAX_BODY_BYTES} bytes"
        )
    if not body:
        return None
    headers = {str(k).lower(): v for k, v in (event.get("headers") or {}).items()}
    content_type = str(headers.get("content-type") or "").split(";")[0].strip().lower()
    if content_type != _JSON:
        return error_response(
            415, "unsupported_media_type", "send the body as JSON (Content-Type: application/json)"
        )
    try:
        data = parse_json_body(body)
    except _BodyRefused as error:
        return error_response(
            400, "invalid_json", f"the body is not valid JSON: {error.reason}", error.field
        )
    if data is not None and not isinstance(data, dict):
        # (null is no body: the route's own validation decides whether it needs one)
        return error_response(422, "validation_error", "body: must be a JSON object", "body")
    return None


@lru_cache(maxsize=128)
def _query_names(route: Callable[..., Any]) -> tuple[str, ...]:
    """The query parameters a route function declares (``Query`` annotations), in order."""
    names: list[str] = []
    for name, hint in get_type_hints(route, include_extras=True).items():
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, Query):
                names.append(meta.alias or name)
    return tuple(names)


def _unknown_query_parameter(method: str, event: Mapping[str, Any]) -> Response[str] | None:
    """A query parameter the route does not take: 422 naming it and the ones it
    takes; one it takes, given twice: 422 too (which one would count is a guess).

    Applies to every route (a misspelt filter must not come back as the
    unfiltered list). A path no route serves is left to the 404.
    """
    given = [
        *(event.get("queryStringParameters") or {}),
        *(event.get("multiValueQueryStringParameters") or {}),
    ]
    if not given:
        return None
    path = app._remove_prefix(str(event.get("path") or "/"))
    route = next(
        (
            r
            for r in (*app._static_routes, *app._dynamic_routes)
            if r.method == method and r.rule.match(path)
        ),
        None,
    )
    if route is None:
        return None
    takes = _query_names(route.func)
    repeated = {
        name: len(values)
        for name, values in (event.get("multiValueQueryStringParameters") or {}).items()
        if isinstance(values, list) and len(values) > 1
    }
    for name in dict.fromkeys(given):
        if name in takes and name in repeated:
            return error_response(
                422,
                "validation_error",
                f"query parameter {name!r} is given {repeated[name]} times; give it once "
                "(several values of a filter go in one, comma-separated: status=failed,expired)",
                str(name),
            )
        if name not in takes:
            listed = (
                f"this route takes: {', '.join(takes)}"
                if takes
                else "this route takes no query parameters"
            )
            return error_response(
                422,
                "validation_error",
                f"unknown query parameter {name!r}; {listed}",
                str(name),
            )
    return None


def _plain_json_content_type(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its (accepted) Content-Type written as the resolver reads it.

    Media types are case-insensitive (``Application/JSON`` is JSON); the
    resolver only knows the lower-case form.
    """
    out = dict(event)
    for key in ("headers", "multiValueHeaders"):
        headers = {k: v for k, v in (event.get(key) or {}).items() if k.lower() != "content-type"}
        headers["Content-Type"] = [_JSON] if key == "multiValueHeaders" else _JSON
        out[key] = headers
    return out


def _proxy_response(response: Response[str]) -> dict[str, Any]:
    headers = {"Content-Type": _JSON}
    for name, value in response.headers.items():
        headers[name] = value if isinstance(value, str) else ", ".join(value)
    if response.status_code == HTTPStatus.NO_CONTENT:
        del headers["Content-Type"]
    return {
        "statusCode": int(response.status_code),
        "headers": headers,
        "body": response.body or "",
        "isBase64Encoded": False,
    }


# What the SQLite stack's worker delivers to (handlers.worker.build_sqlite_worker
# builds the webhook sender only); a schedule naming another type is refused when
# saved there, rather than accepted and then failed at every run.
SQLITE_TARGETS: Final = TargetSupport(
    frozenset({"webhook"}),
    "deploy duetime to AWS (cdk deploy), or try them on this machine with "
    "`duetime local --store emulator`, which delivers them to its own emulated "
    "services, not to AWS",
)


def sqlite_targets(jobs: frozenset[str] | None) -> TargetSupport:
    """What the SQLite stack delivers to: SQLITE_TARGETS, and command targets
    naming one of ``jobs`` where a jobs file is loaded (``duetime local --jobs``)."""
    if jobs is None:
        return SQLITE_TARGETS
    return replace(SQLITE_TARGETS, types=SQLITE_TARGETS.types | {"command"}, jobs=jobs)


def build_services(
    settings: Settings,
    *,
    data_dir: str | Path | None = None,
    clock: Clock | None = None,
    secrets: SecretStore | None = None,
    target_support: TargetSupport | None = None,
    address_policy: AddressPolicy | None = None,
) -> ApiServices:
    """The use cases over SQLite (with ``data_dir``) or DynamoDB (without).

    ``target_support`` says which target types the deployment delivers to;
    by default SQLITE_TARGETS over SQLite, and every type over DynamoDB (the
    AWS worker and the emulator's build senders for all of them).
    ``address_policy`` is the webhook address rule, as its worker has it: by
    default ``AddressPolicy.local()`` over SQLite (build_sqlite_worker's) and
    the deployment's settings over DynamoDB (build_aws_parts').
    """
    partitioning = Partitioning(shards=settings.shards, bucket_s=settings.bucket_s)
    clock = clock or SystemClock()
    from handlers.tick import tick_config
    from service.tick import PlanNow

    config = tick_config(settings)
    if data_dir is not None:
        directory = Path(data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        from adapters.sqlite.queue import SqliteQueue
        from adapters.sqlite.runs import SqliteRunStore
        from adapters.sqlite.store import SqliteStore

        store = SqliteStore(directory / SQLITE_FILE)
        if secrets is None:
            from adapters.sqlite.secrets import SqliteSecretStore

            secrets = SqliteSecretStore(directory / SQLITE_FILE)
        run_store = SqliteRunStore(store)
        # Planning at the call: the local tick's queue is a table in the same file.
        queue = SqliteQueue(directory / SQLITE_FILE, clock=clock, connection_of=store)
        planning = PlanNow(store, queue, clock, config)
        return ApiServices(
            ScheduleService(
                store,
                clock,
                partitioning,
                target_support=target_support or SQLITE_TARGETS,
                planning=planning,
            ),
            secrets,
            RunReports(run_store, clock),
            _sqlite_views(store, run_store, clock, partitioning),
            address_policy or AddressPolicy.local(),
        )
    from adapters.dynamodb.runs import DynamoRunStore
    from adapters.dynamodb.store import DynamoStore

    if secrets is None:
        import boto3

        from adapters.secrets import aws_secret_store

        session = boto3.session.Session()
        secrets = aws_secret_store(
            settings.secret_store,
            settings.secrets_prefix,
            session.client,
            table=settings.secrets_table,
        )
    import boto3

    from adapters.sealing import aws_header_seal

    # Webhook header values sealed at rest: opened to keep a value an edit leaves.
    seal = aws_header_seal(settings.secret_store, settings.secrets_prefix, boto3.client)
    dynamo = DynamoStore.from_settings(settings, seal=seal)
    dynamo_runs = DynamoRunStore(dynamo)
    aws_planning: PlanNow | None = None
    if settings.delivery_queue_url:
        from adapters.sqs import SqsDeliveryQueue

        delivery: DeliveryQueue = SqsDeliveryQueue.from_settings(settings)
        if settings.worker_function:  # surges are on: count what the calls queue ahead
            from adapters.dynamodb.load import DynamoLoadLedger
            from service.surge import LoadRecordingQueue

            delivery = LoadRecordingQueue(
                delivery,
                DynamoLoadLedger(dynamo.client, settings.occurrences_table),
                on_error=ledger_not_written,
            )
        aws_planning = PlanNow(dynamo, delivery, clock, config)
    return ApiServices(
        ScheduleService(
            dynamo, clock, partitioning, target_support=target_support, planning=aws_planning
        ),
        secrets,
        RunReports(dynamo_runs, clock),
        _aws_views(settings, dynamo, dynamo_runs, clock, partitioning),
        address_policy or settings.address_policy(),
    )


def _sqlite_views(store: Any, run_store: Any, clock: Clock, partitioning: Partitioning) -> RunViews:
    """Listings, retries (sent on the SQLite delivery queue) and the queue's dead letters."""
    from adapters.sqlite.dead_letters import SqliteDeadLetters
    from adapters.sqlite.queue import SqliteQueue

    queue = SqliteQueue(store.path, clock=clock, connection_of=store)
    dead: DeadLetters = SqliteDeadLetters(store.path, connection_of=store)
    return RunViews(store, run_store, clock, partitioning, queue=queue, dead_letters=dead)


def _aws_views(
    settings: Settings, store: Any, run_store: Any, clock: Clock, partitioning: Partitioning
) -> RunViews:
    """Listings, retries (sent on the SQS delivery queue) and a peek at the DLQ.

    Without the DLQ's URL in the settings, dead letters answer 501.
    """
    queue = None
    if settings.delivery_queue_url:
        from adapters.sqs import SqsDeliveryQueue

        queue = SqsDeliveryQueue.from_settings(settings)
    dead: DeadLetters | None = None
    if settings.delivery_dlq_url:
        from adapters.sqs_dead_letters import SqsDeadLetters

        dead = SqsDeadLetters.from_url(settings.delivery_dlq_url)
    return RunViews(store, run_store, clock, partitioning, queue=queue, dead_letters=dead)


@lru_cache(maxsize=1)
def _default_services() -> ApiServices:
    """Built on the first request and kept for the life of the process."""
    data_dir = os.environ.get(ENV_DATA_DIR) or None
    return build_services(Settings.from_env(), data_dir=data_dir)


def handler(
    event: dict[str, Any], context: Any, service: ApiServices | None = None
) -> dict[str, Any]:
    refused = _early_refusal(event)
    if refused is not None:
        return _proxy_response(refused)
    if event.get("body"):
        event = _plain_json_content_type(event)
    head = str(event.get("httpMethod") or "").upper() == "HEAD"
    if head:  # answered as GET, without the body
        event = {**event, "httpMethod": "GET"}
    unknown = _unknown_query_parameter(str(event.get("httpMethod") or "").upper(), event)
    if unknown is not None:
        refusal = _proxy_response(unknown)
        return {**refusal, "body": ""} if head else refusal
    services = service or _default_services()
    app.context["services"] = services
    addresses = WEBHOOK_ADDRESSES.set(services.address_policy)
    try:
        answer = app.resolve(event, context)
    finally:
        WEBHOOK_ADDRESSES.reset(addresses)
        app.context.pop("services", None)
    if head:
        answer = {**answer, "body": "", "isBase64Encoded": False}
    return answer


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["--openapi"]:
        print("usage: python -m handlers.api --openapi > docs/openapi.json", file=sys.stderr)
        return 2
    sys.stdout.write(openapi_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
