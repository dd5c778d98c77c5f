"""How the webhook sender reads answers written byte for byte: the header
reader that replaces the e-mail parser keeps http.client's meaning."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from domain.delivery import Outcome
from domain.targets import WebhookTarget
from tests.integration.test_webhook_target import make_delivery, make_sender


class RawServer:
    """Answers each request on a connection with the next canned reply, byte for byte."""

    def __init__(self, *replies: bytes) -> None:
        self.replies = list(replies)
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.replies:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                while self.replies:
                    request = b""
                    while b"\r\n\r\n" not in request:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        request += chunk
                    if not request:
                        break
                    head, _, body = request.partition(b"\r\n\r\n")
                    length = next(
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                    while len(body) < length:
                        body += conn.recv(65536)
                    reply = self.replies.pop(0)
                    conn.sendall(reply)
                    if b"Connection: close" in reply or b"HTTP/1.0" in reply[:8]:
                        break

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw() -> Iterator[list[RawServer]]:
    servers: list[RawServer] = []
    yield servers
    for server in servers:
        server.close()


def deliver(raw: list[RawServer], *replies: bytes) -> tuple[list[Outcome], RawServer]:
    server = RawServer(*replies)
    raw.append(server)
    sender = make_sender()
    target = WebhookTarget(f"http://127.0.0.1:{server.port}/hook")
    outcomes = [sender.deliver(target, make_delivery(), timeout_s=5) for _ in replies]
    return outcomes, server


def test_a_chunked_answer_is_read_whole_and_the_connection_kept(raw: list[RawServer]) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    (first, second), server = deliver(raw, chunked, chunked)
    assert (first.kind, first.status_code, first.excerpt) == ("succeeded", 200, "hello world")
    assert second.kind == "succeeded"
    assert server.connections == 1


def test_a_100_continue_is_skipped_and_retry_after_is_read_from_the_real_answer(
    raw: list[RawServer],
) -> None:
    (outcome,), _ = deliver(
        raw,
        b"HTTP/1.1 100 Continue\r\nX-Ignored: yes\r\n\r\n"
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After:   7\r\nContent-Length: 4\r\n\r\nbusy",
    )
    assert (outcome.kind, outcome.status_code, outcome.retry_after_s) == ("transient", 503, 7.0)
    assert outcome.excerpt == "busy"


def test_a_folded_header_continues_the_one_before_it(raw: list[RawServer]) -> None:
    (outcome,), _ = deliver(
        raw,
        b"HTTP/1.1 429 Too Many\r\nX-Note: first\r\n  second\r\nRetry-After: 3\r\n"
        b"Content-Length: 0\r\n\r\n",
    )
    assert (outcome.kind, outcome.retry_after_s) == ("transient", 3.0)


def test_an_http_1_0_answer_without_length_is_read_to_the_close_and_not_reused(
    raw: list[RawServer],
) -> None:
    reply = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\ndone"
    (first, second), server = deliver(raw, reply, reply)
    assert (first.kind, first.excerpt, second.kind) == ("succeeded", "done", "succeeded")
    assert server.connections == 2


def test_an_answer_with_too_many_headers_is_a_transient_failure(raw: list[RawServer]) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(101))
    (outcome,), _ = deliver(raw, b"HTTP/1.1 200 OK\r\n" + headers + b"Content-Length: 0\r\n\r\n")
    assert outcome.kind == "transient"
    assert "more than 100 headers" in (outcome.error or "")


def test_an_unknown_protocol_is_a_transient_failure(raw: list[RawServer]) -> None:
    (outcome,), _ = deliver(raw, b"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n")
    assert outcome.kind == "transient"
    assert "UnknownProtocol" in (outcome.error or "")


def test_header_names_are_read_without_regard_to_case_and_a_repeated_one_is_joined(
    raw: list[RawServer],
) -> None:
    (lower, repeated, closing), server = deliver(
        raw,
        b"HTTP/1.1 503 Busy\r\nretry-after: 4\r\ncontent-length: 0\r\n\r\n",
        # two Retry-After fields read as "5, 6", as http.client joins them: not a delay
        b"HTTP/1.1 503 Busy\r\nRetry-After: 5\r\nRETRY-AFTER: 6\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nCONNECTION: Close\r\nContent-Length: 2\r\n\r\nok",
    )
    assert (lower.kind, lower.retry_after_s) == ("transient", 4.0)
    assert (repeated.kind, repeated.retry_after_s) == ("transient", None)
    assert (closing.kind, closing.excerpt) == ("succeeded", "ok")
    assert server.connections == 1


class _Recording:
    """A socket that keeps what is sent on it."""

    def __init__(self) -> None:
        self.sent = b""

    def sendall(self, data: bytes) -> None:
        self.sent += data

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("host", "port", "path", "headers"),
    [
        ("example.com", 80, "/hook", {"X-Team": "sales"}),
        ("example.com", 8443, "/hook?a=1&b=2", {}),
        ("::1", 80, "/", {"Authorization": "Bearer t"}),
        ("fe80::1%eth0", 9000, "/x", {}),
        ("bücher.example", 80, "/", {}),
    ],
)
def test_a_request_is_written_byte_for_byte_as_http_client_writes_it(
    host: str, port: int, path: str, headers: dict[str, str]
) -> None:
    from adapters.targets.webhook import _PinnedConnection, request_block

    headers = {**headers, "Content-Type": "application/json", "Idempotency-Key": "sch_a.v1.x"}
    body = b'{"occurrence_id":"sch_a.v1.x"}'
    connection = _PinnedConnection(host, port, "127.0.0.1", 1.0)
    connection.sock = _Recording()  # type: ignore[assignment]
    connection.request("POST", path, body=body, headers=headers)
    assert request_block(connection, path, headers, body) == connection.sock.sent  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/hook\r\nX-Injected: 1", {}),
        ("/a b", {}),
        ("/hook", {"X-Note": "one\r\nX-Injected: 1"}),
        ("/hook", {"Bad Name:": "v"}),
    ],
)
def test_a_request_http_client_would_refuse_is_refused(path: str, headers: dict[str, str]) -> None:
    import http.client

    from adapters.targets.webhook import _PinnedConnection, request_block

    connection = _PinnedConnection("example.com", 80, "127.0.0.1", 1.0)
    connection.sock = _Recording()  # type: ignore[assignment]
    with pytest.raises((ValueError, http.client.InvalidURL)) as refused_by_http_client:
        connection.request("POST", path, body=b"{}", headers=headers)
    with pytest.raises(type(refused_by_http_client.value)):
        request_block(connection, path, headers, b"{}")
