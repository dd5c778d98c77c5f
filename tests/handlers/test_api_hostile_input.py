"""Hostile input to the HTTP API is refused with a 4xx error naming the field,
and nothing is stored.

Each case here was once accepted, or answered 500, or never answered at all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from handlers.api import MAX_JSON_DEPTH, handler
from tests.handlers.test_api import REPORT, Answer, Api, api, rest_event, unchanged

__all__ = ["api", "unchanged"]  # fixtures used by name


def with_spec(spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**REPORT, "spec": spec, **extra}


FAR_FUTURE = "9999-12-31T23:59:59Z"

# (case id, body, field the refusal names)
REFUSED_BODIES: list[tuple[str, dict[str, Any], str]] = [
    ("far_future_at", with_spec({"at": FAR_FUTURE}), "spec.at"),
    ("year_2200_at", with_spec({"at": "2200-01-01T00:00:00Z"}), "spec.at"),
    ("before_1970_at", with_spec({"at": "1969-12-31T23:59:59Z"}), "spec.at"),
    ("offset_out_of_datetime_range", with_spec({"at": "0001-01-01T00:00:00+01:00"}), "spec.at"),
    (
        "far_future_wall_time",
        with_spec({"at": "9999-12-31T23:59:59", "time_zone": "Pacific/Kiritimati"}),
        "spec.at",
    ),
    (
        "far_future_start_at",
        with_spec({"every": "PT60S", "start_at": FAR_FUTURE}),
        "spec.start_at",
    ),
    (
        "far_future_end_at",
        with_spec({"cron": "0 9 * * *", "end_at": FAR_FUTURE}),
        "spec.end_at",
    ),
    ("every_a_million_days", with_spec({"every": "P1000000D"}), "spec.every"),
    ("every_p99999999d", with_spec({"every": "P99999999D"}), "spec.every"),
    ("every_10e21_seconds", with_spec({"every": "PT1000000000000000000000S"}), "spec.every"),
    ("every_over_366_days", with_spec({"every": "P367D"}), "spec.every"),
    ("every_non_ascii_digits", with_spec({"every": "PT\u0661\u0665M"}), "spec.every"),
    ("cron_non_ascii_digit", with_spec({"cron": "\u0661 * * * *"}), "spec.cron"),
    ("cron_fullwidth_digit", with_spec({"cron": "\uff11 * * * *"}), "spec.cron"),
    ("cron_nul", with_spec({"cron": "0 9 * * *\x00"}), "spec.cron"),
    ("grace_over_bound", {**REPORT, "policy": {"grace": "P99999999D"}}, "policy.grace"),
    ("name_nul", {**REPORT, "name": "report\x00"}, "name"),
    ("name_esc", {**REPORT, "name": "\x1b[31mred"}, "name"),
    ("name_crlf", {**REPORT, "name": "a\r\nforged log line"}, "name"),
    ("name_del", {**REPORT, "name": "a\x7f"}, "name"),
    ("name_c1", {**REPORT, "name": "a\x85b"}, "name"),
]


@pytest.mark.parametrize(
    ("body", "field"),
    [pytest.param(body, field, id=name) for name, body, field in REFUSED_BODIES],
)
def test_bad_input_is_refused_and_changes_nothing(
    api: Api, unchanged: None, body: dict[str, Any], field: str
) -> None:
    answer = api.call("POST", "/schedules", body)
    assert answer.status == 422, answer.body
    assert answer.error["code"] == "validation_error"
    assert answer.error["field"] == field
    assert field in answer.error["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [pytest.param(body, field, id=name) for name, body, field in REFUSED_BODIES],
)
def test_bad_input_is_refused_by_an_edit_and_changes_nothing(
    api: Api, body: dict[str, Any], field: str
) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call("PUT", f"/schedules/{created['id']}", body, headers={"If-Match": '"1"'})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == field
    assert api.snapshot() == before


def test_bad_input_is_refused_and_changes_nothing_far_future_at(api: Api, unchanged: None) -> None:
    answer = api.call("POST", "/schedules", with_spec({"at": FAR_FUTURE}))
    assert answer.status == 422
    assert answer.error == {
        "code": "validation_error",
        "message": answer.error["message"],
        "field": "spec.at",
    }
    assert "2200-01-01T00:00:00Z" in answer.error["message"]


def test_after_refusals_the_list_still_answers(api: Api) -> None:
    api.create()
    for _, body, _ in REFUSED_BODIES:
        api.call("POST", "/schedules", body)
    listed = api.call("GET", "/schedules")
    assert listed.status == 200
    assert len(listed.body["schedules"]) == 1


def test_the_edges_of_the_bounds_are_accepted(api: Api) -> None:
    last = api.create(with_spec({"at": "2199-12-31T23:59:59Z"})).body
    assert last["next_due"] == "2199-12-31T23:59:59Z"
    assert api.create(with_spec({"every": "P366D", "start_at": "2199-12-31T00:00:00Z"}))
    assert api.create(with_spec({"every": "PT1S"}))
    assert api.create({**REPORT, "name": "Ünïcode names are fine: 日本 ✓"})
    assert api.call("GET", "/schedules").status == 200


# --- bodies that are not strict JSON -----------------------------------------------------

STRICT_JSON_REFUSALS = [
    pytest.param('{"name": NaN}', id="nan"),
    pytest.param('{"name": "x", "payload": {"n": Infinity}}', id="infinity"),
    pytest.param('{"name": "x", "payload": {"n": -Infinity}}', id="minus_infinity"),
    pytest.param('{"name": "a", "name": "b"}', id="duplicate_key"),
    pytest.param('{"name": "x", "payload": {"k": 1, "k": 2}}', id="nested_duplicate_key"),
    pytest.param('{"name": "\\ud800"}', id="lone_surrogate_name"),
    pytest.param('{"name": "x", "payload": {"t": "\\udfff"}}', id="lone_surrogate_payload"),
    pytest.param('{"name": "x", "payload": {"\\ud800": 1}}', id="lone_surrogate_key"),
    pytest.param('{"payload": ' + "[" * 5000 + "]" * 5000 + "}", id="nested_5000_deep"),
    pytest.param(
        '{"payload": ' + '{"a": ' * MAX_JSON_DEPTH + "1" + "}" * MAX_JSON_DEPTH + "}",
        id="nested_one_over_the_limit",
    ),
]


@pytest.mark.parametrize("raw", STRICT_JSON_REFUSALS)
def test_a_body_that_is_not_strict_json_is_400_and_changes_nothing(
    api: Api, unchanged: None, raw: str
) -> None:
    assert len(raw.encode()) < 64 * 1024
    answer = api.call("POST", "/schedules", raw=raw)
    assert answer.status == 400, answer.body
    assert answer.error["code"] == "invalid_json"


def test_a_payload_nested_to_the_limit_is_accepted(api: Api) -> None:
    depth = MAX_JSON_DEPTH - 1  # the body itself is the first level
    payload = json.loads('{"a": ' * (depth - 1) + "1" + "}" * (depth - 1))
    answer = api.call("POST", "/schedules", {**REPORT, "payload": payload})
    assert answer.status == 201, answer.body


def test_a_duplicate_key_names_the_key(api: Api, unchanged: None) -> None:
    answer = api.call("POST", "/schedules", raw='{"name": "a", "name": "b"}')
    assert answer.error["field"] == "name"
    assert "twice" in answer.error["message"]


# --- Content-Type ------------------------------------------------------------------------


def _post_with_headers(api: Api, headers: dict[str, str]) -> dict[str, Any]:
    event = rest_event("POST", "/schedules", body=json.dumps(REPORT), headers=headers)
    return handler(event, None, service=api.services)


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no_content_type"),
        pytest.param({"Content-Type": "text/plain"}, id="text_plain"),
        pytest.param({"Content-Type": "text/plain;charset=UTF-8"}, id="text_plain_charset"),
        pytest.param({"Content-Type": "multipart/form-data; boundary=x"}, id="multipart"),
        pytest.param({"Content-Type": "application/jsonx"}, id="look_alike"),
    ],
)
def test_a_json_body_not_sent_as_application_json_is_415_and_changes_nothing(
    api: Api, unchanged: None, headers: dict[str, str]
) -> None:
    response = _post_with_headers(api, headers)
    assert response["statusCode"] == 415
    assert json.loads(response["body"])["error"]["code"] == "unsupported_media_type"


def test_application_json_with_a_charset_is_accepted(api: Api) -> None:
    response = _post_with_headers(api, {"Content-Type": "Application/JSON; charset=utf-8"})
    assert response["statusCode"] == 201, response["body"]


# --- methods -----------------------------------------------------------------------------


def _send(api: Api, method: str, path: str) -> tuple[int, dict[str, str], str]:
    response = handler(rest_event(method, path), None, service=api.services)
    headers = dict(response.get("headers") or {})
    for key, values in (response.get("multiValueHeaders") or {}).items():
        headers[key] = values[-1]
    return response["statusCode"], headers, response["body"]


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PATCH", "/schedules", "GET, HEAD, POST, OPTIONS"),
        ("PUT", "/schedules", "GET, HEAD, POST, OPTIONS"),
        ("DELETE", "/schedules", "GET, HEAD, POST, OPTIONS"),
        ("TRACE", "/schedules", "GET, HEAD, POST, OPTIONS"),
        ("FOO", "/schedules/abc", "GET, HEAD, PUT, DELETE, OPTIONS"),
        ("POST", "/schedules/abc", "GET, HEAD, PUT, DELETE, OPTIONS"),
        ("GET", "/schedules/abc/pause", "POST, OPTIONS"),
        ("DELETE", "/health", "GET, HEAD, OPTIONS"),
    ],
)
def test_a_method_the_path_does_not_serve_is_405_with_allow(
    api: Api, unchanged: None, method: str, path: str, allow: str
) -> None:
    status, headers, body = _send(api, method, path)
    assert status == 405
    assert headers["Allow"] == allow
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("method", ["TRACE", "FOO", "PATCH"])
def test_a_method_no_path_serves_is_501_in_the_error_shape_on_an_unknown_path(
    api: Api, unchanged: None, method: str
) -> None:
    status, headers, body = _send(api, method, "/nowhere")
    assert status == 501
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["error"]["code"] == "method_not_implemented"


def test_options_lists_the_allowed_methods(api: Api) -> None:
    status, headers, body = _send(api, "OPTIONS", "/schedules")
    assert (status, headers["Allow"], body) == (204, "GET, HEAD, POST, OPTIONS", "")


def test_head_answers_like_get_without_a_body(api: Api) -> None:
    status, headers, body = _send(api, "HEAD", "/health")
    assert (status, body) == (200, "")
    assert headers["Content-Type"] == "application/json"


def test_the_handler_answers_405_to_a_lambda_event_without_touching_the_store(
    api: Api, unchanged: None
) -> None:
    answer: Answer = api.call("PATCH", "/schedules", REPORT)
    assert answer.status == 405
    assert answer.headers["Allow"] == "GET, HEAD, POST, OPTIONS"


# --- other free text and headers ----------------------------------------------------------


def test_a_pause_note_with_control_characters_is_refused_and_changes_nothing(api: Api) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call("POST", f"/schedules/{created['id']}/pause", {"note": "ok\x1b[2J"})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "note"
    assert api.snapshot() == before


def test_an_eventbridge_source_with_control_characters_is_refused_and_changes_nothing(
    api: Api, unchanged: None
) -> None:
    target = {"type": "eventbridge", "event_bus_name": "default", "source": "app\r\nx"}
    answer = api.call("POST", "/schedules", {**REPORT, "target": target})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "target.source"


def test_a_completion_error_with_control_characters_is_refused(api: Api, unchanged: None) -> None:
    body = {"run_token": "t", "succeeded": False, "error": "bad\x00"}
    answer = api.call("POST", "/runs/occ_x/complete", body)
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "error"


def test_an_end_before_the_start_is_refused_and_changes_nothing(api: Api, unchanged: None) -> None:
    spec = {
        "cron": "0 9 * * *",
        "start_at": "2030-01-02T00:00:00Z",
        "end_at": "2030-01-01T00:00:00Z",
    }
    answer = api.call("POST", "/schedules", with_spec(spec))
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "spec.end_at"


@pytest.mark.parametrize("key", ["has space", "tab\tkey", "caf\u00e9"])
def test_an_idempotency_key_that_is_not_printable_ascii_is_refused(
    api: Api, unchanged: None, key: str
) -> None:
    answer = api.call("POST", "/schedules", REPORT, headers={"Idempotency-Key": key})
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "idempotency-key"


def test_an_if_match_with_a_non_ascii_digit_is_400_and_changes_nothing(api: Api) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call(
        "PUT", f"/schedules/{created['id']}", REPORT, headers={"If-Match": '"\u0661"'}
    )
    assert answer.status == 400, answer.body
    assert answer.error["code"] == "invalid_header"
    assert api.snapshot() == before


@pytest.mark.parametrize("if_match", ['""1""', '"1"x', "W/W/1", "1 1", "v1", '"1""'])
def test_an_if_match_outside_the_documented_pattern_is_400_and_changes_nothing(
    api: Api, if_match: str
) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call("PUT", f"/schedules/{created['id']}", REPORT, headers={"If-Match": if_match})
    assert answer.status == 400, answer.body
    assert answer.error["code"] == "invalid_header"
    assert api.snapshot() == before


def test_a_null_body_where_a_schedule_is_needed_is_422(api: Api, unchanged: None) -> None:
    answer = api.call("POST", "/schedules", raw="null")
    assert answer.status == 422, answer.body
    assert answer.error["code"] == "validation_error"
