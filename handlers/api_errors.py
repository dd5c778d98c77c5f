"""Every error the use cases raise becomes an HTTP response here, in one place,
as ``{"error": {"code", "message", "field"}}``: ``ERRORS`` is the table from
an error's type to its status, code and field. A request the models refuse
(``RequestValidationError``) is 422 naming the field, as an
``InvalidSchedule`` is; anything else is 500, logged."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from adapters.observability import logger
from adapters.secrets import SecretStoreFull
from domain.errors import DuetimeError, InvalidSchedule
from domain.timeparse import format_instant
from handlers.api_common import _JSON, NEXT_TOKEN, NEXT_TOKEN_FORMAT
from handlers.api_fields import refusal
from handlers.api_out import ErrorDetail, ErrorOut
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
from service.signing_secrets import NoWebhookTarget, SecretsUnavailable
from service.watchdog import NothingToAcknowledge

# --- errors the API itself raises -------------------------------------------------------


class PreconditionRequired(DuetimeError):
    """An edit without If-Match (HTTP 428)."""


class NotAvailable(DuetimeError):
    """A route this deployment has no adapter for yet (HTTP 501)."""


class BadHeader(DuetimeError):
    def __init__(self, header: str, reason: str) -> None:
        super().__init__(f"{header}: {reason}")
        self.header = header
        self.reason = reason


router = Router()  # type: ignore[no-untyped-call]  # (Powertools leaves it unannotated)


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


@dataclass(frozen=True)
class Answer:
    """How the API answers one kind of error: its status and code, the field
    it names (a name, or read from the error), and any headers or extra fields."""

    status: int
    code: str
    field: str | Callable[[Any], str | None] | None = None
    headers: Mapping[str, str] | None = None
    extra: Callable[[Any], dict[str, str]] | None = None


def _own_field(error: Any) -> str | None:
    field: str | None = error.field
    return field


# --- the table: error type -> answer (an error takes the row of its nearest type) -----
ERRORS: Final[dict[type[Exception], Answer]] = {
    InvalidSchedule: Answer(422, "validation_error", _own_field),
    InvalidListing: Answer(422, "validation_error", _own_field),
    BadHeader: Answer(400, "invalid_header", lambda error: error.header),
    ScheduleNotFound: Answer(404, "schedule_not_found"),
    ScheduleDeleted: Answer(
        404,
        "schedule_deleted",
        extra=lambda error: {"deleted_at": format_instant(error.deleted_at)},
    ),
    RunNotFound: Answer(404, "run_not_found"),
    VersionNotFound: Answer(404, "version_not_found"),
    UnknownPageToken: Answer(404, "page_not_found", NEXT_TOKEN),
    VersionConflict: Answer(412, "version_conflict", "If-Match"),
    PreconditionRequired: Answer(428, "precondition_required", "If-Match"),
    ScheduleNotActive: Answer(409, "schedule_not_active"),
    NothingToAcknowledge: Answer(409, "nothing_to_acknowledge"),
    RunTokenRefused: Answer(409, "run_token_refused", "run_token"),
    NotRetryable: Answer(409, "not_retryable", "status"),
    NotCancellable: Answer(409, "not_cancellable", "status"),
    NoWebhookTarget: Answer(409, "no_webhook_target"),
    Contention: Answer(409, "contention", headers={"Retry-After": "1"}),
    NotAvailable: Answer(501, "not_available"),
    CancelUnavailable: Answer(501, "not_available"),
    DeadLettersUnavailable: Answer(501, "not_available"),
    RetryUnavailable: Answer(501, "not_available"),
    SecretsUnavailable: Answer(501, "not_available"),
    # The schedule is stored; a retried create (same Idempotency-Key) or an
    # edit gives it its secret once the store has room.
    SecretStoreFull: Answer(503, "secret_store_full"),
}


def answer(error: Exception) -> Response[str]:
    """The response for ``error``, by the row of its nearest type in ``ERRORS``."""
    row = next(ERRORS[kind] for kind in type(error).__mro__ if kind in ERRORS)
    field = row.field(error) if callable(row.field) else row.field
    extra = row.extra(error) if row.extra is not None else {}
    return error_response(row.status, row.code, str(error), field, row.headers, **extra)


def _unsupported_content_type(_: RequestUnsupportedContentType) -> Response[str]:
    return error_response(
        415, "unsupported_media_type", "send the body as JSON (Content-Type: application/json)"
    )


def _request_invalid(error: RequestValidationError) -> Response[str]:
    """What the request models refused: malformed JSON (400), a page token not
    of its format (400), else the first field refused (422, as InvalidSchedule)."""
    errors = list(error.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        detail = next(e for e in errors if e.get("type") == "json_invalid")
        reason = (detail.get("ctx") or {}).get("error", "not JSON")
        return error_response(400, "invalid_json", f"the body is not valid JSON: {reason}")
    refused = refusal(errors[0] if errors else {})
    if refused.field == NEXT_TOKEN:
        return error_response(
            400,
            "invalid_next_token",
            f"{NEXT_TOKEN}: is not a page token; send it as a previous page returned it "
            f"({NEXT_TOKEN_FORMAT})",
            NEXT_TOKEN,
        )
    return answer(refused)


def _unexpected(error: Exception) -> Response[str]:
    logger().exception("unhandled error")
    return error_response(500, "internal_error", "something went wrong; it has been logged")


for _kind in ERRORS:
    router.exception_handler(_kind)(answer)
router.exception_handler(RequestUnsupportedContentType)(_unsupported_content_type)
router.exception_handler(RequestValidationError)(_request_invalid)
router.exception_handler(Exception)(_unexpected)
