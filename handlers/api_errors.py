"""Every error the use cases raise becomes an HTTP response here, in one place,
as ``{"error": {"code", "message", "field"}}``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from adapters.secrets import SecretStoreFull
from domain.errors import DuetimeError, InvalidSchedule
from domain.timeparse import format_instant
from handlers.api_common import _JSON, NEXT_TOKEN, NEXT_TOKEN_FORMAT
from handlers.api_out import ErrorDetail, ErrorOut
from handlers.observability import logger
from service.errors import (
    Contention,
    RunNotFound,
    ScheduleDeleted,
    ScheduleNotActive,
    ScheduleNotFound,
    UnknownPageToken,
    VersionConflict,
)
from service.overview import VersionNotFound
from service.run_views import (
    CancelUnavailable,
    DeadLettersUnavailable,
    InvalidListing,
    NotCancellable,
    NotRetryable,
    RetryUnavailable,
)
from service.runs import RunTokenRefused
from service.watchdog import NothingToAcknowledge

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


router = Router()  # type: ignore[no-untyped-call]  # (Powertools leaves it unannotated)

_E = TypeVar("_E", bound=Exception)


def _maps(
    *errors: type[Exception],
) -> Callable[[Callable[[_E], Response[str]]], Callable[[_E], Response[str]]]:
    """Registers an error-to-response function for ``errors`` (a typed ``exception_handler``)."""

    def register(function: Callable[[_E], Response[str]]) -> Callable[[_E], Response[str]]:
        for error in errors:
            router.exception_handler(error)(function)
        return function

    return register


# --- errors, in one place ---------------------------------------------------------------


def error_response(
    status: int,
    code: str,
    message: str,
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: str,
) -> Response[str]:
    """The error body; ``extra`` adds the optional fields of ErrorDetail (deleted_at)."""
    body = ErrorOut(error=ErrorDetail(code=code, message=message, field=field, **extra))
    return Response(
        status, _JSON, body.model_dump_json(exclude_unset=True), headers=dict(headers or {})
    )


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
    if field == NEXT_TOKEN:
        return error_response(
            400,
            "invalid_next_token",
            f"{NEXT_TOKEN}: is not a page token; send it as a previous page returned it "
            f"({NEXT_TOKEN_FORMAT})",
            NEXT_TOKEN,
        )
    message = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden":
        message = "is not a known field"
    elif first.get("type") == "missing":
        message = "is required"
    elif first.get("type") == "model_attributes_type":
        message = "must be a JSON object"
    elif first.get("type") == "too_long" and isinstance(first.get("input"), str):
        # A text field's length is checked after its text check, where pydantic
        # says "items"; a person reads characters.
        most = (first.get("ctx") or {}).get("max_length")
        message = f"must be at most {most} characters (got {len(first['input'])})"
    return error_response(422, "validation_error", f"{field or 'body'}: {message}", field or "body")


@_maps(InvalidSchedule)
def _invalid(error: InvalidSchedule) -> Response[str]:
    return error_response(422, "validation_error", str(error), error.field)


@_maps(ScheduleNotFound)
def _schedule_not_found(error: ScheduleNotFound) -> Response[str]:
    return error_response(404, "schedule_not_found", str(error))


@_maps(ScheduleDeleted)
def _schedule_deleted(error: ScheduleDeleted) -> Response[str]:
    return error_response(
        404, "schedule_deleted", str(error), deleted_at=format_instant(error.deleted_at)
    )


@_maps(UnknownPageToken)
def _unknown_page_token(error: UnknownPageToken) -> Response[str]:
    return error_response(404, "page_not_found", str(error), NEXT_TOKEN)


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


@_maps(NotCancellable)
def _not_cancellable(error: NotCancellable) -> Response[str]:
    return error_response(409, "not_cancellable", str(error), "status")


@_maps(CancelUnavailable, DeadLettersUnavailable, RetryUnavailable)
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


@_maps(Exception)
def _unexpected(error: Exception) -> Response[str]:
    logger().exception("unhandled error")
    return error_response(500, "internal_error", "something went wrong; it has been logged")
