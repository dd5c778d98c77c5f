"""The API handler served over real HTTP on 127.0.0.1, as the local stack serves it."""

from __future__ import annotations

import http.client
import json
from typing import Any

from handlers.api import MAX_BODY_BYTES
from handlers.local_http import ApiServer, from_response, to_event

REPORT = {
    "name": "sales report",
    "spec": {"cron": "0 9 * * MON-FRI", "time_zone": "Europe/London"},
    "target": {"type": "webhook", "url": "https://example.com/hook"},
}


def test_a_request_becomes_a_rest_proxy_event() -> None:
    event = to_event(
        "put",
        "/schedules/sch_1?limit=2&next_token=a%2Bb",
        [("If-Match", '"1"'), ("Content-Type", "application/json")],
        b'{"name": "x"}',
    )
    assert event["httpMethod"] == "PUT"
    assert event["path"] == "/schedules/sch_1"
    assert event["resource"] == "/{proxy+}"
    assert event["pathParameters"] == {"proxy": "schedules/sch_1"}
    assert event["queryStringParameters"] == {"limit": "2", "next_token": "a+b"}
    assert event["multiValueHeaders"]["If-Match"] == ['"1"']
    assert event["body"] == '{"name": "x"}' and event["isBase64Encoded"] is False
    assert event["requestContext"]["identity"]["sourceIp"] == "127.0.0.1"


def test_a_proxy_response_becomes_status_headers_and_bytes() -> None:
    status, headers, body = from_response(
        {
            "statusCode": 201,
            "multiValueHeaders": {"ETag": ['"1"'], "Content-Type": ["application/json"]},
            "body": '{"id": "sch_1"}',
            "isBase64Encoded": False,
        }
    )
    assert status == 201
    assert ("ETag", '"1"') in headers
    assert body == b'{"id": "sch_1"}'


def _request(
    server: ApiServer, method: str, path: str, body: bytes | None = None, **headers: str
) -> tuple[int, dict[str, str], Any]:
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(str(host), port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, dict(response.getheaders()), json.loads(data)
    finally:
        connection.close()


def test_the_api_answers_over_http_on_localhost(server: ApiServer) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    body = json.dumps(REPORT).encode()
    status, headers, created = _request(
        server,
        "POST",
        "/schedules",
        body,
        **{"Content-Type": "application/json", "Idempotency-Key": "first"},
    )
    assert status == 201, created
    assert headers["Location"] == f"/schedules/{created['id']}"
    status, _, again = _request(
        server,
        "POST",
        "/schedules",
        body,
        **{"Content-Type": "application/json", "Idempotency-Key": "first"},
    )
    assert status == 201 and again["id"] == created["id"]
    status, headers, read = _request(server, "GET", f"/schedules/{created['id']}")
    assert status == 200 and headers["ETag"] == '"1"' and read["name"] == "sales report"
    status, _, listed = _request(server, "GET", "/schedules?limit=1")
    assert status == 200 and [s["id"] for s in listed["schedules"]] == [created["id"]]
    status, _, refused = _request(
        server, "PUT", f"/schedules/{created['id']}", body, **{"Content-Type": "application/json"}
    )
    assert status == 428 and refused["error"]["code"] == "precondition_required"
    status, _, health = _request(server, "GET", "/health")
    assert status == 200 and health["status"] == "ok"


def test_a_large_body_is_refused_over_http(server: ApiServer) -> None:
    big = json.dumps({**REPORT, "payload": {"blob": "x" * MAX_BODY_BYTES}}).encode()
    status, _, answer = _request(
        server, "POST", "/schedules", big, **{"Content-Type": "application/json"}
    )
    assert status == 413
    assert answer["error"]["code"] == "body_too_large"
    status, _, listed = _request(server, "GET", "/schedules")
    assert listed["schedules"] == []
