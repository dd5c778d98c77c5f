"""A small HTTP client for the duetime API, used by `duetime schedules` and `duetime runs`.

Against a deployed stack the API takes AWS IAM (SigV4) authorization: with
``--sigv4`` (automatic for ``*.amazonaws.com`` URLs) requests are signed with
the caller's AWS credentials, found the way the AWS CLI finds them.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from domain.errors import DuetimeError

DEFAULT_API_URL = "http://127.0.0.1:8080"
ENV_API_URL = "DUETIME_API_URL"
TIMEOUT_S = 30.0


class ApiError(DuetimeError):
    """The API answered with an error (or could not be reached)."""

    def __init__(
        self, status: int, message: str, field: str | None = None, body: Any = None
    ) -> None:
        text = f"HTTP {status}: {message}" if status else message
        if field:
            text += f" (field: {field})"
        super().__init__(text)
        self.status = status
        self.message = message
        self.field = field
        self.body = body


@dataclass(frozen=True)
class Response:
    status: int
    body: Any
    headers: dict[str, str]


class ApiClient:
    def __init__(self, base_url: str, *, sigv4: bool | None = None, region: str | None = None):
        self.base_url = base_url.rstrip("/")
        host = urllib.parse.urlsplit(self.base_url).hostname or ""
        self.sigv4 = host.endswith(".amazonaws.com") if sigv4 is None else sigv4
        self.region = region

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
    ) -> Response:
        url = self.base_url + path
        if query:
            pairs = {k: v for k, v in query.items() if v is not None}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        data = None if body is None else json.dumps(body).encode()
        all_headers = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        if self.sigv4:
            all_headers = self._signed(method, url, data, all_headers)
        request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                return Response(answer.status, _json(answer.read()), dict(answer.headers))
        except urllib.error.HTTPError as error:
            payload = _json(error.read())
            detail = payload.get("error", {}) if isinstance(payload, dict) else {}
            message = detail.get("message") or (
                payload.get("message") if isinstance(payload, dict) else None
            )
            raise ApiError(
                error.code, str(message or error.reason), detail.get("field"), payload
            ) from None
        except (urllib.error.URLError, OSError) as error:
            raise ApiError(0, self._unreachable(getattr(error, "reason", error))) from None

    def _unreachable(self, reason: object) -> str:
        """Why the API could not be reached, and where to point the command instead."""
        if isinstance(reason, ConnectionRefusedError):
            why = "nothing answers there (connection refused)"
        elif isinstance(reason, TimeoutError):
            why = f"no answer within {TIMEOUT_S:g}s"
        else:
            why = str(getattr(reason, "strerror", None) or reason)
        hint = f"give the API's URL with --api-url or ${ENV_API_URL}"
        if self.base_url == DEFAULT_API_URL:
            hint += ", or start a local stack with `duetime local`"
        return f"cannot reach the API at {self.base_url}: {why}; {hint}"

    def _signed(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str]
    ) -> dict[str, str]:
        import boto3
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        session = boto3.Session(region_name=self.region)
        credentials = session.get_credentials()
        if credentials is None:
            raise ApiError(0, "--sigv4: no AWS credentials found")
        region = self.region or session.region_name or _region_of(url)
        aws_request = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(credentials, "execute-api", region).add_auth(aws_request)
        return dict(aws_request.headers.items())


def _region_of(url: str) -> str:
    # https://<id>.execute-api.<region>.amazonaws.com/<stage>
    parts = (urllib.parse.urlsplit(url).hostname or "").split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "execute-api" else "us-east-1"


def _json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"message": raw[:500].decode(errors="replace")}
