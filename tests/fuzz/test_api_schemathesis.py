"""The API, fuzzed from its own OpenAPI document by schemathesis.

Schemathesis reads the served ``/openapi.json`` and sends what it describes
(and what it forbids) to the Lambda handler: examples, the coverage phase
(boundaries, missing headers, methods a path does not serve), random valid
and invalid requests, and stateful sequences that create, read, edit and
delete schedules. Every check runs and must pass: no 5xx, only documented
statuses, content types and bodies, valid data accepted, invalid data
refused, a deleted schedule stays gone, a created one can be read.

The handler is called in-process, through a small WSGI adapter (``serve_api``
is the one place that decides how requests reach it). Each session gets its
own SQLite directory (each stateful sequence a fresh one); nothing here
delivers, so no target is ever called and no network is used.
"""

from __future__ import annotations

import tempfile
import tomllib
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from bootstrap.settings import Settings
from cli.local_http import from_response, to_event
from handlers.api import ApiServices, build_services, handler

pytestmark = pytest.mark.fuzz

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# Examples per operation and phase: enough to reach every refusal path, small
# enough that the whole file runs in about a minute on two busy cores.
MAX_EXAMPLES = 15

# Which statuses each check accepts beyond its defaults, and why: the same file
# the schemathesis CLI reads from the repository (one place for both).
JUDGING = tomllib.loads((Path(__file__).parents[2] / "schemathesis.toml").read_text("utf-8"))

CONFIG = {
    **JUDGING,
    "generation": {"max-examples": MAX_EXAMPLES, "database": "none"},
    "phases": {
        "examples": {"enabled": True},
        "coverage": {"enabled": True},
        "fuzzing": {"enabled": True},
        "stateful": {"enabled": True},
    },
    "checks": {"enabled": True, **JUDGING.get("checks", {})},
}


def _event(environ: dict[str, Any]) -> dict[str, Any]:
    """The API Gateway REST proxy event for one WSGI request, made as the local
    server makes it (``cli.local_http.to_event``)."""
    # WSGI hands the path over decoded, as latin-1 text of its bytes.
    path = str(environ.get("PATH_INFO") or "/").encode("latin-1").decode("utf-8", "replace")
    query = str(environ.get("QUERY_STRING") or "")
    target = quote(path, safe="/") + (f"?{query}" if query else "")
    headers = [
        (key[5:].replace("_", "-").title(), str(value))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    headers += [
        (key.replace("_", "-").title(), str(environ[key]))
        for key in ("CONTENT_TYPE", "CONTENT_LENGTH")
        if environ.get(key)
    ]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    return to_event(str(environ["REQUEST_METHOD"]), target, headers, body)


def serve_api(services: ApiServices) -> WsgiApp:
    """The one place that decides how the fuzzer reaches the handler."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        status, headers, data = from_response(handler(_event(environ), None, service=services))
        start_response(f"{status} {_reason(status)}", headers)
        return [data]

    return app


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class _LazyApi:
    """The API over a fresh SQLite directory, built on its first request.

    schemathesis reads the schema when this module is collected (its lazy
    pytest loader does not run on this pytest), so the directory is made then
    and removed when the interpreter exits.
    """

    def __init__(self) -> None:
        self._directory: tempfile.TemporaryDirectory[str] | None = None
        self._app: WsgiApp | None = None

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self._app is None:
            self.reset()
        assert self._app is not None
        return self._app(environ, start_response)

    def reset(self) -> None:
        """Start again over an empty store."""
        if self._directory is not None:
            self._directory.cleanup()
        self._directory = tempfile.TemporaryDirectory(prefix="duetime-fuzz-")
        # The SQLite stack as `duetime local` builds it: its served document
        # offers only the target types it delivers, so every target a
        # schema-valid request names is accepted. Nothing here delivers.
        services = build_services(
            Settings(allow_private_targets=True), data_dir=self._directory.name
        )
        self._app = serve_api(services)


API = _LazyApi()
schema = schemathesis.openapi.from_wsgi(
    "/openapi.json", API, config=schemathesis.Config.from_dict(CONFIG)
)


def _instant(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _reversed_range(data: object) -> bool:
    """Whether ``data`` holds an end_at before its start_at."""
    if not isinstance(data, dict):
        return False
    start, end = _instant(data.get("start_at")), _instant(data.get("end_at"))
    return start is not None and end is not None and end < start


@schema.hook
def filter_case(context: schemathesis.HookContext, case: schemathesis.Case) -> bool:
    """Valid data the document cannot describe as invalid is left to the handler tests.

    JSON Schema cannot compare two fields: a schema-valid request with end_at
    before start_at is refused (422), and tests/handlers say so. Only positive
    cases are left out; negative ones run. (A made-up next_token of the
    documented format is 404 page_not_found, which the check accepts.)
    """
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return True
    body = case.body if isinstance(case.body, dict) else {}
    return not (_reversed_range(body) or _reversed_range(body.get("spec")))


@schema.parametrize()
def test_every_operation_conforms_to_its_openapi_document(case: schemathesis.Case) -> None:
    case.call_and_validate()


class ApiWorkflow(schema.as_state_machine()):  # type: ignore[misc]
    """Sequences of calls linked by the ids answers carry: create, read, edit, delete.

    Each sequence starts over an empty store, so that replaying one (as
    Hypothesis does to shrink a failure) meets the same answers.
    """

    def setup(self) -> None:
        API.reset()

    def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
        case.validate_response(response)


TestApiWorkflow = ApiWorkflow.TestCase
TestApiWorkflow.settings = settings(
    max_examples=MAX_EXAMPLES,
    stateful_step_count=6,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
