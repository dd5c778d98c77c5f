"""The request's edge: what is refused before routing (a method the path does not
serve, a body too large, not JSON, not strict JSON), unknown query parameters,
and the proxy response the handler returns."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from http import HTTPStatus
from typing import Any, Final, get_type_hints

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from domain.text import forbidden_surrogate
from handlers.api_common import _JSON, MAX_BODY_BYTES
from handlers.api_errors import error_response


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


def allowed_methods(app: APIGatewayRestResolver, path: str) -> list[str]:
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


def _method_refusal(app: APIGatewayRestResolver, method: str, path: str) -> Response[str] | None:
    """A method the path does not serve: 405 with Allow (501 for one no path serves)."""
    allowed = allowed_methods(app, path)
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


def early_refusal(app: APIGatewayRestResolver, event: Mapping[str, Any]) -> Response[str] | None:
    """What is refused before routing: a method the path does not serve, or a
    body too large, not sent as JSON, not strict JSON, or not an object.

    (The resolver would read a form-encoded body as fields, a one-element JSON
    array as its element, and NaN or a repeated key without a word.)
    """
    method = str(event.get("httpMethod") or "").upper()
    refused = _method_refusal(app, method, app._remove_prefix(str(event.get("path") or "/")))
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


def unknown_query_parameter(
    app: APIGatewayRestResolver, method: str, event: Mapping[str, Any]
) -> Response[str] | None:
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


def plain_json_content_type(event: dict[str, Any]) -> dict[str, Any]:
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


def proxy_response(response: Response[str]) -> dict[str, Any]:
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
