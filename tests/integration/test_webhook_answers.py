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
