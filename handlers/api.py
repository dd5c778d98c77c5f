"""The HTTP API: API Gateway REST proxy events in, JSON out.

Each route is decorators, parse, one use case call, and a mapping of the
result to a response model; the routes live in ``api_schedules``,
``api_schedule_actions``, ``api_runs`` and ``api_reports``. Every error the
use cases raise becomes an HTTP response in one place, ``api_errors``, as
``{"error": {"code", "message", "field"}}``. A refused request writes
nothing: validation happens before any use case runs, and each use case
refuses before it writes.

What is refused before routing is ``api_edge``'s to say. Adapters are built
by the composition root (``bootstrap``) lazily, on the first request, and
come in through the ``service`` parameter in tests and in the local stack. On AWS the store is
DynamoDB; with ``DUETIME_DATA_DIR`` set it is the SQLite file in that
directory (the local stack).

``python -m handlers.api --openapi`` prints the OpenAPI document that
docs/openapi.json holds.
"""

from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from http import HTTPStatus
from typing import Any, Final

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response

from bootstrap.api import ENV_DATA_DIR, build_services
from bootstrap.parts import SQLITE_FILE, SQLITE_TARGETS, ApiServices, sqlite_targets
from bootstrap.settings import Settings
from domain.targets import TARGET_TYPES
from domain.timeparse import format_instant
from handlers import (
    api_errors,
    api_reports,
    api_runs,
    api_schedule_actions,
    api_schedules,
)
from handlers.api_common import (
    _JSON,
    MAX_BODY_BYTES,
    SERVICES,
    _responses,
    current_services,
)
from handlers.api_edge import (
    MAX_JSON_DEPTH,
    early_refusal,
    plain_json_content_type,
    proxy_response,
    unknown_query_parameter,
)
from handlers.api_errors import error_response
from handlers.api_out import HealthOut
from handlers.api_target import WEBHOOK_ADDRESSES

API_TITLE: Final = "duetime"
API_VERSION: Final = "1"


app = APIGatewayRestResolver(enable_validation=True)
app.include_router(api_schedules.router)
app.include_router(api_schedule_actions.router)
app.include_router(api_runs.router)
app.include_router(api_reports.router)
app.include_router(api_errors.router)


@app.get("/health", summary="Liveness", responses=_responses(200, HealthOut, "the API answers"))
def health() -> HealthOut:
    return HealthOut(status="ok", time=format_instant(current_services().schedules.clock.now()))


@app.get("/openapi.json", include_in_schema=False)
def openapi() -> Response[Any]:
    support = current_services().schedules.target_support
    return Response(HTTPStatus.OK, _JSON, openapi_json(None if support is None else support.types))


@app.not_found
def _no_route(_: Exception) -> Response[str]:
    event = app.current_event
    return error_response(
        404, "no_route", f"no route for {event.http_method} {event.path}; see GET /openapi.json"
    )


# --- the entry point --------------------------------------------------------------------


@lru_cache(maxsize=8)
def openapi_json(target_types: frozenset[str] | None = None) -> str:
    """The OpenAPI document of this API: of a deployment that delivers to
    ``target_types`` (served at /openapi.json), or, with None, of one that
    delivers to every type but ``command`` (AWS: docs/openapi.json holds it;
    a command target needs a local stack's jobs file)."""
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
    if target_types is None:
        target_types = frozenset(TARGET_TYPES) - {"command"}
    _only_target_types(schema["components"]["schemas"]["TargetIn"], target_types)
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _only_target_types(target: dict[str, Any], types: frozenset[str]) -> None:
    """The target schema with only the shapes of ``types`` (one per type, by its ``type``)."""
    target["oneOf"] = [
        shape for shape in target["oneOf"] if shape["properties"]["type"]["const"] in types
    ]
    delivered = ", ".join(sorted(types)) or "none"
    target["description"] = (
        f"{target.get('description', '')} This deployment delivers to: {delivered}."
    ).strip()


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


@lru_cache(maxsize=1)
def _default_services() -> ApiServices:
    """Built on the first request and kept for the life of the process."""
    data_dir = os.environ.get(ENV_DATA_DIR) or None
    return build_services(Settings.from_env(), data_dir=data_dir)


def handler(
    event: dict[str, Any], context: Any, service: ApiServices | None = None
) -> dict[str, Any]:
    refused = early_refusal(app, event)
    if refused is not None:
        return proxy_response(refused)
    if event.get("body"):
        event = plain_json_content_type(event)
    head = str(event.get("httpMethod") or "").upper() == "HEAD"
    if head:  # answered as GET, without the body
        event = {**event, "httpMethod": "GET"}
    unknown = unknown_query_parameter(app, str(event.get("httpMethod") or "").upper(), event)
    if unknown is not None:
        refusal = proxy_response(unknown)
        return {**refusal, "body": ""} if head else refusal
    services = service or _default_services()
    serving = SERVICES.set(services)
    addresses = WEBHOOK_ADDRESSES.set(services.address_policy)
    try:
        answer = app.resolve(event, context)
    finally:
        WEBHOOK_ADDRESSES.reset(addresses)
        SERVICES.reset(serving)
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


__all__ = [
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "SQLITE_FILE",
    "SQLITE_TARGETS",
    "ApiServices",
    "build_services",
    "error_response",
    "handler",
    "openapi_json",
    "sqlite_targets",
]
