"""`duetime console`: the web console of a deployed duetime, served on this machine.

The console is a few static files (HTML, CSS and JavaScript, in
``cli/console_files``) that call the duetime HTTP API with ``fetch`` from the
page's own origin. The local stack (`duetime local`) serves them at
``/console`` beside its API. A deployed API takes only SigV4-signed requests,
which a browser cannot make, so this command serves the same files on
127.0.0.1 and forwards the page's API calls (``/schedules...``, ``/runs...``,
``/dead-letters...``, ``/health``) to the deployed API, signed with your AWS
credentials (found the way the AWS CLI finds them). Beside the files it
answers ``/console/preview``: the next runs of a schedule form, from the domain.

It refuses what a web page on another site could send it, exactly as the
local stack does (cli/local_http.py): a ``Host`` other than the address
served (421), an ``Origin`` other than its own or ``Sec-Fetch-Site``
cross-site/same-site (403). Anything else it does not forward: 404.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Final

from cli.client import TIMEOUT_S, ApiClient, ApiError
from domain.errors import DuetimeError, InvalidSchedule
from domain.explain import explain
from domain.spec import parse_dst_policy, parse_spec

HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8090
ENV_API_URL: Final = "DUETIME_API_URL"

CONSOLE_PATH: Final = "/console"
# The files of the console, by the name they are served under.
# The scripts, in the order index.html loads them (core first, the router last).
SCRIPTS: Final = ("core", "model", "forms", "runs", "list", "schedule", "failed", "main")
_FILES: Final = {
    "index.html": "text/html; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    **{f"{name}.js": "text/javascript; charset=utf-8" for name in SCRIPTS},
}
PREVIEW: Final = "preview"
PREVIEW_COUNT: Final = 5
# The page runs only its own script and talks only to its own origin, and no
# other site may frame it (its buttons pause and retry).
_PAGE_HEADERS: Final = (
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-cache"),
)

Answer = tuple[int, list[tuple[str, str]], bytes]


def _error(status: int, code: str, message: str, field: str | None = None) -> Answer:
    body = {"error": {"code": code, "message": message, "field": field}}
    return status, [("Content-Type", "application/json")], json.dumps(body).encode()


def console_page(method: str, path: str, query: str = "") -> Answer | None:
    """The answer for a console path (``/console``, ``/console/core.js``, the
    preview...), else None."""
    if path != CONSOLE_PATH and not path.startswith(CONSOLE_PATH + "/"):
        return None
    name = path[len(CONSOLE_PATH) :].lstrip("/") or "index.html"
    if name == PREVIEW and method in ("GET", "HEAD"):
        status, headers, body = preview(query)
        return status, headers, b"" if method == "HEAD" else body
    if name not in _FILES and name != PREVIEW:
        return _error(404, "not_found", f"the console has no file {path!r}")
    if method not in ("GET", "HEAD"):
        status, headers, body = _error(
            405, "method_not_allowed", f"{method} is not served on {path}; use GET"
        )
        return status, [*headers, ("Allow", "GET, HEAD")], body
    data = resources.files("cli").joinpath("console_files", name).read_bytes()
    headers = [("Content-Type", _FILES[name]), *_PAGE_HEADERS]
    return 200, headers, b"" if method == "HEAD" else data


# --- the preview of a schedule form ------------------------------------------------------


def preview(query: str, now: datetime | None = None) -> Answer:
    """The next runs of the spec a form holds, with their DST notes: ``GET
    /console/preview?kind=cron&when=0+9+*+*+*&time_zone=...&start_at=&end_at=
    &dst_gap=&dst_fold=``, computed by the same domain code the planner runs.

    The API creates a schedule only for real (a dry run of a create is not one
    of its routes), so the page asks the program that serves it, which is
    duetime itself: the local stack, or `duetime console` in front of a
    deployed API of the same version. A field it refuses is ``422`` naming it
    as the API would (``spec.cron``, ``spec.time_zone``, ``policy.dst_gap``...).
    """
    params = {k: v[-1].strip() for k, v in urllib.parse.parse_qs(query).items()}
    now = now or datetime.now(UTC)
    kind = params.get("kind", "")
    if kind not in ("cron", "at", "every"):
        return _error(422, "validation_error", "kind: must be cron, at or every", "kind")
    spec_data = {
        kind: params.get("when", ""),
        "time_zone": params.get("time_zone") or "UTC",
        "start_at": params.get("start_at") or None,
        "end_at": params.get("end_at") or None,
    }
    try:
        spec = parse_spec(spec_data, created_at=now)
        dst = parse_dst_policy(params.get("dst_gap") or None, params.get("dst_fold") or None)
        result = explain(spec, dst, now, PREVIEW_COUNT)
    except InvalidSchedule as error:
        return _error(422, "validation_error", str(error), error.field)
    body = {
        "occurrences": [o.to_dict() for o in result.occurrences],
        "warnings": list(result.warnings),
    }
    return 200, [("Content-Type", "application/json"), *_PAGE_HEADERS], json.dumps(body).encode()


# --- forwarding to a deployed API -------------------------------------------------------

FORWARDED_PREFIXES: Final = ("/schedules", "/runs", "/dead-letters")
FORWARDED_PATHS: Final = frozenset({"/health"})
# What a request keeps of the browser's headers (no cookies, no Origin), and
# what an answer keeps of the API's.
REQUEST_HEADERS: Final = frozenset({"accept", "content-type", "if-match", "idempotency-key"})
RESPONSE_HEADERS: Final = frozenset(
    {"content-type", "etag", "location", "allow", "retry-after", "idempotent-replayed"}
)
# Characters left as they are when a decoded path is encoded again.
_PATH_SAFE: Final = "/-._~!$&'()*+,;=:@"


def forwarded(path: str) -> bool:
    """Whether the console forwards ``path`` to the API."""
    segments = path.split("/")
    if "." in segments or ".." in segments:
        return False
    return path in FORWARDED_PATHS or any(
        path == prefix or path.startswith(prefix + "/") for prefix in FORWARDED_PREFIXES
    )


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered to the browser as it is, never followed with the signature."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _url_region(url: str) -> str | None:
    """The region an API Gateway URL names (``<id>.execute-api.<region>.amazonaws.com``)."""
    parts = (urllib.parse.urlsplit(url).hostname or "").split(".")
    if len(parts) >= 5 and parts[1] == "execute-api" and parts[-2:] == ["amazonaws", "com"]:
        return parts[2]
    return None


class SigningClient(ApiClient):
    """The API client's SigV4 signing, for requests passed through as bytes.

    The credentials are looked up once (a boto3 session costs about 25 ms) and
    kept: botocore refreshes expiring ones (SSO, assumed roles) by itself.
    """

    def __init__(self, base_url: str, *, region: str | None = None) -> None:
        super().__init__(base_url, sigv4=True, region=region)
        self._opener = urllib.request.build_opener(_NoRedirects)
        self._signer: tuple[Any, str] | None = None

    def _signed(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str]
    ) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        if self._signer is None:
            import boto3

            session = boto3.Session(region_name=self.region)
            credentials = session.get_credentials()
            if credentials is None:
                raise ApiError(0, "no AWS credentials found to sign the API calls with")
            region = self.region or _url_region(url) or session.region_name or "us-east-1"
            self._signer = (credentials, region)
        credentials, region = self._signer
        request = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(credentials, "execute-api", region).add_auth(request)
        return dict(request.headers.items())

    def send(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> Answer:
        """One request to ``base_url + target``, signed; its status, headers and body."""
        url = self.base_url + target
        signed = self._signed(method, url, body, headers)
        request = urllib.request.Request(url, data=body, method=method, headers=signed)
        try:
            with self._opener.open(request, timeout=TIMEOUT_S) as answer:
                return answer.status, list(answer.headers.items()), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, list(error.headers.items()), error.read()
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ApiError(0, f"cannot reach the API at {self.base_url}: {reason}") from None


def _proxy_response(answer: Answer) -> dict[str, Any]:
    status, headers, body = answer
    multi: dict[str, list[str]] = {}
    for name, value in headers:
        multi.setdefault(name, []).append(value)
    return {
        "statusCode": status,
        "multiValueHeaders": multi,
        "body": base64.b64encode(body).decode("ascii"),
        "isBase64Encoded": True,
    }


class Forwarder:
    """An API handler (event in, proxy response out) that sends each request on, signed."""

    def __init__(self, client: SigningClient) -> None:
        self.client = client

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return _proxy_response(self.answer(event))

    def answer(self, event: dict[str, Any]) -> Answer:
        method = str(event["httpMethod"])
        path = str(event["path"])
        if path == "/":
            return 302, [("Location", CONSOLE_PATH)], b""
        if not forwarded(path):
            served = ", ".join([*(f"{p}..." for p in FORWARDED_PREFIXES), *FORWARDED_PATHS])
            return _error(404, "no_route", f"the console forwards only {served} ({path!r})")
        target = urllib.parse.quote(path, safe=_PATH_SAFE)
        pairs = [
            (name, value)
            for name, values in (event.get("multiValueQueryStringParameters") or {}).items()
            for value in values
        ]
        if pairs:
            target += "?" + urllib.parse.urlencode(pairs)
        headers: dict[str, str] = {}
        for name, values in (event.get("multiValueHeaders") or {}).items():
            if name.lower() in REQUEST_HEADERS and values:
                headers[name] = values[0]
        raw = event.get("body")
        body = None
        if raw is not None:
            body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode("utf-8")
        try:
            status, answer_headers, data = self.client.send(method, target, body, headers)
        except ApiError as error:
            return _error(502, "upstream_unreachable", str(error))
        kept = [(n, v) for n, v in answer_headers if n.lower() in RESPONSE_HEADERS]
        return status, kept, data


# --- the command ------------------------------------------------------------------------


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "console",
        help="the web console of a deployed duetime, on 127.0.0.1 (API calls signed with SigV4)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--api-url",
        default=os.environ.get(ENV_API_URL),
        help=f"the deployed API, e.g. https://ID.execute-api.REGION.amazonaws.com/prod "
        f"(default ${ENV_API_URL})",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on {HOST} (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--region",
        help="the API's AWS region (default: the one in an execute-api URL, else your AWS config)",
    )
    parser.add_argument("--access-log", action="store_true", help="log one JSON line per request")
    parser.set_defaults(run=run)


def _check_url(url: str | None) -> str:
    if not url:
        raise DuetimeError(f"--api-url is required (or set ${ENV_API_URL})")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise DuetimeError(f"--api-url must be an http(s) URL without a query (got {url!r})")
    return url


def _check_credentials(region: str | None) -> None:
    import boto3

    if boto3.Session(region_name=region).get_credentials() is None:
        raise DuetimeError(
            "no AWS credentials found to sign the API calls with "
            "(set AWS_PROFILE, run `aws configure`, or `aws sso login`)"
        )


def _stop_on_sigterm() -> None:
    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def run(args: argparse.Namespace) -> int:
    from cli.local_http import ApiServer
    from cli.supervisor import log

    url = _check_url(args.api_url)
    _check_credentials(args.region)
    client = SigningClient(url, region=args.region)
    try:
        server = ApiServer(
            Forwarder(client),
            HOST,
            args.port,
            log=log,
            access_log=args.access_log,
            pages=console_page,
        )
    except OSError as error:
        raise DuetimeError(
            f"cannot listen on {HOST}:{args.port}: {error.strerror or error}"
            " (choose another --port)"
        ) from error
    print(
        f"duetime console: {server.url}{CONSOLE_PATH}\n"
        f"  forwarding API calls to {client.base_url}, signed with your AWS credentials\n"
        "  Ctrl-C stops.",
        flush=True,
    )
    _stop_on_sigterm()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
