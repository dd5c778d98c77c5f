"""The API handler served over real HTTP on 127.0.0.1, as the local stack serves it.

Framing is tried with a raw socket, the way a hostile or broken client sends it.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from cli.local_http import READ_LIMIT, ApiServer, from_response, refusal, to_event
from handlers.api import MAX_BODY_BYTES

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


# --- HTTP framing, as a hostile client sends it ----------------------------------------------


class RawClient:
    """A client that writes bytes on one connection and reads HTTP/1.1 responses back."""

    def __init__(self, server: ApiServer) -> None:
        self.sock = socket.create_connection(server.server_address, timeout=10)
        self.file = self.sock.makefile("rb")
        self.host = f"127.0.0.1:{server.server_address[1]}"

    def send(self, data: bytes) -> None:
        self.sock.sendall(data.replace(b"{HOST}", self.host.encode()))

    def response(self) -> tuple[int, dict[str, str], bytes]:
        status_line = self.file.readline()
        assert status_line, "the server closed the connection without an answer"
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := self.file.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = self.file.read(int(headers["content-length"]))
        else:  # framed by the end of the connection
            assert headers.get("connection") == "close"
            body = self.file.read()
        return status, headers, body

    def closed_by_server(self) -> bool:
        try:
            return self.file.read(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture
def raw(server: ApiServer) -> Iterator[RawClient]:
    client = RawClient(server)
    yield client
    client.close()


def _schedules(server: ApiServer) -> list[Any]:
    status, _, listed = _request(server, "GET", "/schedules")
    assert status == 200
    schedules: list[Any] = listed["schedules"]
    return schedules


BODY = json.dumps(REPORT).encode()


def test_a_non_numeric_content_length_is_answered_400_and_the_connection_closed(
    server: ApiServer, raw: RawClient
) -> None:
    raw.send(
        b"POST /schedules HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        b"Content-Length: abc\r\n\r\n" + BODY
    )
    status, _, _ = raw.response()
    assert status == 400
    assert raw.closed_by_server()
    assert _schedules(server) == []


def test_a_chunked_body_is_read_whole_and_the_connection_stays_usable(
    server: ApiServer, raw: RawClient
) -> None:
    first, second = BODY[:20], BODY[20:]
    raw.send(
        b"POST /schedules HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
        % (len(first), first, len(second), second)
    )
    status, headers, body = raw.response()
    assert status == 201, body
    created = json.loads(body)
    assert headers["content-type"] == "application/json"
    # The chunks were not read as a second request: the next one is answered normally.
    raw.send(b"GET /schedules/%s HTTP/1.1\r\nHost: {HOST}\r\n\r\n" % created["id"].encode())
    status, _, body = raw.response()
    assert status == 200 and json.loads(body)["name"] == "sales report"
    assert [s["id"] for s in _schedules(server)] == [created["id"]]


def test_pipelined_requests_are_answered_in_order_on_one_connection(
    server: ApiServer, raw: RawClient
) -> None:
    raw.send(
        b"GET /health HTTP/1.1\r\nHost: {HOST}\r\n\r\n"
        b"GET /schedules/sch_missing HTTP/1.1\r\nHost: {HOST}\r\n\r\n"
        b"GET /health HTTP/1.1\r\nHost: {HOST}\r\n\r\n"
    )
    answers = [raw.response() for _ in range(3)]
    assert [status for status, _, _ in answers] == [200, 404, 200]
    assert json.loads(answers[1][2])["error"]["code"] == "schedule_not_found"


def test_keep_alive_serves_many_requests_on_one_connection(server: ApiServer) -> None:
    host, port = server.server_address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        for _ in range(5):
            connection.request("GET", "/health")
            response = connection.getresponse()
            assert response.status == 200
            assert not response.will_close
            response.read()
        assert connection.sock is not None  # the same socket throughout
    finally:
        connection.close()


def test_a_body_over_the_read_limit_is_refused_before_it_is_sent(
    server: ApiServer, raw: RawClient
) -> None:
    raw.send(
        b"POST /schedules HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (READ_LIMIT + 1) + b"{" + b" " * 1000
    )
    # Only a kilobyte of the declared megabyte was sent, and the answer comes.
    status, headers, body = raw.response()
    assert status == 413
    assert json.loads(body)["error"]["code"] == "body_too_large"
    assert headers["connection"] == "close"
    assert raw.closed_by_server()
    assert _schedules(server) == []


def test_a_chunked_body_over_the_read_limit_is_refused_when_it_crosses_it(
    server: ApiServer, raw: RawClient
) -> None:
    raw.send(
        b"POST /schedules HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b" " * 65536
    for _ in range(READ_LIMIT // len(chunk) + 1):
        raw.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    status, _, body = raw.response()
    assert status == 413 and json.loads(body)["error"]["code"] == "body_too_large"
    assert raw.closed_by_server()


def test_a_body_without_length_is_no_body_and_what_follows_is_a_bad_request(
    server: ApiServer, raw: RawClient
) -> None:
    # HTTP/1.1: a request without Content-Length or Transfer-Encoding has no body.
    # The handler sees an empty body, and the bytes after the headers are read as
    # the next request, which is malformed: uvicorn answers 400 and closes. (Stray
    # bytes that never end a line wait for the keep-alive timeout, then are dropped.)
    raw.send(
        b"POST /schedules HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n\r\n"
        + BODY
        + b"\r\n\r\n"
    )
    status, headers, _ = raw.response()
    assert status == 422 and headers["content-type"] == "application/json"
    status, _, _ = raw.response()
    assert status == 400
    assert raw.closed_by_server()
    assert _schedules(server) == []


# --- any method reaches the handler ---------------------------------------------------------


class RecordingApi:
    """An API handler that answers 405 with Allow for every request, and records it."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.bodies: list[str | None] = []

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.methods.append(event["httpMethod"])
        self.bodies.append(event["body"])
        if event["path"] == "/boom":
            raise RuntimeError("the handler failed")
        return {
            "statusCode": 405,
            "headers": {"Content-Type": "application/json", "Allow": "GET"},
            "body": '{"error": {"code": "method_not_allowed"}}',
        }


@pytest.fixture
def recording() -> Iterator[tuple[ApiServer, RecordingApi]]:
    api = RecordingApi()
    server = ApiServer(api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, api
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.mark.parametrize("method", ["TRACE", "FROB", "PROPFIND", "CONNECT"])
def test_any_method_reaches_the_handler_and_gets_its_json(
    recording: tuple[ApiServer, RecordingApi], method: str
) -> None:
    server, api = recording
    client = RawClient(server)
    try:
        target = b"127.0.0.1:1" if method == "CONNECT" else b"/schedules"
        client.send(method.encode() + b" " + target + b" HTTP/1.1\r\nHost: {HOST}\r\n\r\n")
        status, headers, body = client.response()
    finally:
        client.close()
    assert api.methods == [method]
    assert status == 405 and headers["allow"] == "GET"
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["code"] == "method_not_allowed"


def test_the_real_handler_answers_an_unknown_method_with_json_not_html(
    server: ApiServer,
) -> None:
    for method in ("TRACE", "FROB"):
        status, headers, answer = _request(server, method, "/schedules")
        assert 400 <= status < 500
        assert headers["Content-Type"] == "application/json"
        assert "code" in answer["error"]


def test_a_failing_handler_gets_a_json_500_and_the_server_keeps_serving(
    recording: tuple[ApiServer, RecordingApi],
) -> None:
    server, api = recording
    status, headers, answer = _request(server, "GET", "/boom")
    assert status == 500 and headers["Content-Type"] == "application/json"
    assert answer["error"]["code"] == "internal_error"
    status, _, _ = _request(server, "GET", "/health")
    assert status == 405 and api.methods == ["GET", "GET"]


def test_parallel_clients_are_all_answered(server: ApiServer) -> None:
    def health(number: int) -> int:
        status, _, _ = _request(server, "GET", "/health")
        return status

    with ThreadPoolExecutor(max_workers=20) as pool:
        statuses = list(pool.map(health, range(200)))
    assert statuses == [200] * 200


# --- what a web page could send is refused --------------------------------------------------


@pytest.mark.parametrize(
    "host", ["evil.example:{PORT}", "evil.example", "127.0.0.1:1", "localhost", "0.0.0.0:{PORT}"]
)
def test_a_request_for_another_host_is_refused_and_changes_nothing(
    server: ApiServer, host: str
) -> None:
    # DNS rebinding: evil.example resolves to 127.0.0.1, the page posts to it.
    port = server.server_address[1]
    status, headers, answer = _request(
        server,
        "POST",
        "/schedules",
        BODY,
        **{"Host": host.replace("{PORT}", str(port)), "Content-Type": "application/json"},
    )
    assert status == 421 and headers["Content-Type"] == "application/json"
    assert answer["error"]["code"] == "misdirected_request"
    assert f"127.0.0.1:{port}" in answer["error"]["message"]
    assert _schedules(server) == []


def test_a_request_without_host_is_refused(server: ApiServer, raw: RawClient) -> None:
    raw.send(b"GET /health HTTP/1.0\r\n\r\n")
    status, _, body = raw.response()
    assert status == 421 and json.loads(body)["error"]["code"] == "misdirected_request"


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_the_served_host_names_are_accepted(server: ApiServer, name: str) -> None:
    port = server.server_address[1]
    status, _, _ = _request(server, "GET", "/health", Host=f"{name}:{port}")
    assert status == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://localhost:1"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
def test_a_cross_site_request_is_refused_and_changes_nothing(
    server: ApiServer, headers: dict[str, str]
) -> None:
    status, answer_headers, answer = _request(
        server, "POST", "/schedules", BODY, **{"Content-Type": "application/json", **headers}
    )
    assert status == 403 and answer_headers["Content-Type"] == "application/json"
    assert answer["error"]["code"] == "cross_origin_refused"
    assert _schedules(server) == []


def test_a_browser_form_post_from_another_site_is_refused(server: ApiServer) -> None:
    # What <form method=post action=http://127.0.0.1:PORT/schedules> sends.
    form = b"name=x&spec=y"
    for content_type in ("application/x-www-form-urlencoded", "text/plain"):
        status, _, answer = _request(
            server,
            "POST",
            "/schedules",
            form,
            **{
                "Content-Type": content_type,
                "Origin": "https://evil.example",
                "Sec-Fetch-Site": "cross-site",
                "Sec-Fetch-Mode": "navigate",
            },
        )
        assert status == 403 and answer["error"]["code"] == "cross_origin_refused"
    # The same form from the served origin still is not JSON: refused by the API.
    origin = server.url
    status, _, answer = _request(
        server,
        "POST",
        "/schedules",
        form,
        **{"Content-Type": "application/x-www-form-urlencoded", "Origin": origin},
    )
    assert status == 415
    assert _schedules(server) == []


def test_a_same_origin_page_may_call_the_api(server: ApiServer) -> None:
    # The console served by this server at /console is same-origin.
    for origin in (server.url, server.url.replace("127.0.0.1", "localhost")):
        status, _, created = _request(
            server,
            "POST",
            "/schedules",
            BODY,
            **{
                "Content-Type": "application/json",
                "Origin": origin,
                "Sec-Fetch-Site": "same-origin",
                "Host": origin.removeprefix("http://"),
            },
        )
        assert status == 201, created


def test_the_refusal_rules() -> None:
    assert refusal([("Host", "127.0.0.1:8080")], 8080) is None
    assert refusal([("host", "localhost:8080"), ("sec-fetch-site", "none")], 8080) is None
    assert refusal([("host", "127.0.0.1:8080"), ("host", "127.0.0.1:8080")], 8080) == (
        421,
        "misdirected_request",
        "this server answers only requests for Host 127.0.0.1:8080, [::1]:8080, "
        "localhost:8080 (got several)",
    )
    refused = refusal([("host", "127.0.0.1:8080"), ("origin", "http://127.0.0.1:8081")], 8080)
    assert refused is not None and refused[0] == 403
    assert refusal([("host", "127.0.0.1")], 80) is None


# --- binding --------------------------------------------------------------------------------


def test_a_port_in_use_fails_when_the_server_is_made(server: ApiServer) -> None:
    with pytest.raises(OSError):
        ApiServer(RecordingApi(), "127.0.0.1", server.server_address[1])


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "localhost", "::"])
def test_only_a_loopback_address_is_served(host: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        ApiServer(RecordingApi(), host, 0)


def test_shutdown_with_an_idle_keep_alive_connection_releases_the_port() -> None:
    server = ApiServer(RecordingApi())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    idle = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    idle.request("GET", "/health")
    idle.getresponse().read()
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)
    assert not thread.is_alive()
    again = ApiServer(RecordingApi(), "127.0.0.1", port)  # the port is free again
    again.server_close()
    idle.close()


def test_the_listening_socket_is_tcp_so_asyncio_sets_nodelay_on_each_connection() -> None:
    # asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP; without it a
    # keep-alive response waits for the client's delayed ACK (bench/http_local.py).
    server = ApiServer(RecordingApi())
    try:
        assert server._socket.proto == socket.IPPROTO_TCP
    finally:
        server.server_close()


def _collect(lines: list[tuple[str, dict[str, Any]]]) -> Callable[..., None]:
    def log(event: str, **fields: Any) -> None:
        lines.append((event, fields))

    return log


def test_the_access_log_is_off_unless_asked_and_then_one_line_per_request() -> None:
    for access_log in (False, True):
        lines: list[tuple[str, dict[str, Any]]] = []
        server = ApiServer(RecordingApi(), access_log=access_log, log=_collect(lines))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            _request(server, "GET", "/schedules?limit=1")
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
        requests = [fields for event, fields in lines if event == "http request"]
        if access_log:
            [line] = requests
            assert (line["method"], line["path"], line["status"]) == ("GET", "/schedules", 405)
        else:
            assert requests == []


def test_a_malformed_request_is_logged_as_a_structured_line() -> None:
    lines: list[tuple[str, dict[str, Any]]] = []
    server = ApiServer(RecordingApi(), log=_collect(lines))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = RawClient(server)
    try:
        client.send(b"GET /health HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: abc\r\n\r\n")
        status, _, _ = client.response()
    finally:
        client.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert status == 400
    assert ("http server", {"level": "warning", "message": "Invalid HTTP request received."}) in (
        lines
    )
