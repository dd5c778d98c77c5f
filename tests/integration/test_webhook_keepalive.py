"""The webhook sender keeps connections alive, per origin *and checked address*.

Receivers here count the TCP connections they accept, so reuse is asserted
as a count of connections, never as a timing.
"""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from adapters.targets import webhook
from adapters.targets.addresses import AddressPolicy, parse_networks
from domain.delivery import EXCERPT_LIMIT_BYTES
from domain.targets import WebhookTarget
from tests.integration.test_webhook_target import (
    Receiver,
    make_certificate,
    make_delivery,
    make_sender,
    resolve_to,
)


class CountingServer(http.server.ThreadingHTTPServer):
    """HTTP/1.1 with keep-alive; counts connections and requests.

    ``close_after_answer``: answers, then closes the connection without saying
    so (a server whose idle timeout passed). ``say_close``: answers with
    ``Connection: close``. ``body``: the answer's body.
    """

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _CountingHandler)
        self.lock = threading.Lock()
        self.connections = 0
        self.requests: list[str] = []  # the Host header of each request
        self.close_after_answer = False
        self.say_close = False
        self.body = b"{}"
        threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.connections += 1
        super().process_request(request, client_address)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _CountingHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: CountingServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.requests.append(self.headers.get("Host", ""))
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.body)))
        if self.server.say_close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(self.server.body)
        self.wfile.flush()
        if self.server.close_after_answer:
            self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[CountingServer]:
    running = CountingServer()
    yield running
    running.stop()


def deliver(sender: webhook.WebhookSender, url: str) -> str:
    return sender.deliver(WebhookTarget(url), make_delivery(), timeout_s=5).kind


def test_deliveries_to_one_origin_share_one_connection(server: CountingServer) -> None:
    sender = make_sender()
    url = f"http://127.0.0.1:{server.port}/hook"

    kinds = [deliver(sender, url) for _ in range(5)]

    assert kinds == ["succeeded"] * 5
    assert len(server.requests) == 5
    assert server.connections == 1
    sender.close()


def test_worker_threads_share_the_pool_without_sharing_a_connection_at_once(
    server: CountingServer,
) -> None:
    sender = make_sender()
    url = f"http://127.0.0.1:{server.port}/hook"

    with ThreadPoolExecutor(4) as threads:
        kinds = list(threads.map(lambda _: deliver(sender, url), range(40)))

    assert kinds == ["succeeded"] * 40
    assert len(server.requests) == 40
    assert 1 <= server.connections <= 4
    sender.close()


def test_a_rebound_name_never_reuses_the_connection_for_a_forbidden_address(
    server: CountingServer,
) -> None:
    # Given a connection kept alive to 127.0.0.1, the only allowed address
    addresses = {"hooks.example.test": ["127.0.0.1"]}
    policy = AddressPolicy(allowed_networks=parse_networks(["127.0.0.1/32"]))
    sender = make_sender(policy, resolver=resolve_to(addresses))
    url = f"http://hooks.example.test:{server.port}/hook"
    assert deliver(sender, url) == "succeeded"
    assert sender.pool.idle_count() == 1

    # When the name now resolves to a refused address
    addresses["hooks.example.test"] = ["127.0.0.2"]
    outcome = sender.deliver(WebhookTarget(url), make_delivery(), timeout_s=5)

    # Then nothing is sent, not even over the connection still open to the old address
    assert outcome.kind == "permanent"
    assert outcome.error is not None and "127.0.0.2 is a loopback address" in outcome.error
    assert len(server.requests) == 1
    assert server.connections == 1
    sender.close()


def test_a_name_that_moves_to_another_allowed_address_gets_a_connection_there(
    server: CountingServer,
) -> None:
    try:
        moved = CountingServer("127.0.0.2", server.port)
    except OSError:
        pytest.skip("127.0.0.2 is not a usable loopback address here")
    try:
        addresses = {"hooks.example.test": ["127.0.0.1"]}
        sender = make_sender(resolver=resolve_to(addresses))
        url = f"http://hooks.example.test:{server.port}/hook"
        assert deliver(sender, url) == "succeeded"

        addresses["hooks.example.test"] = ["127.0.0.2"]
        assert deliver(sender, url) == "succeeded"

        # Same scheme, name and port, another checked address: another connection.
        assert (len(server.requests), len(moved.requests)) == (1, 1)
        assert moved.connections == 1
        sender.close()
    finally:
        moved.stop()


def test_a_connection_the_server_closed_is_not_reused(server: CountingServer) -> None:
    server.close_after_answer = True
    sender = make_sender()
    url = f"http://127.0.0.1:{server.port}/hook"

    assert [deliver(sender, url) for _ in range(3)] == ["succeeded"] * 3

    assert server.connections == 3
    sender.close()


def test_a_reused_connection_that_fails_before_an_answer_is_retried_once_on_a_new_one(
    server: CountingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server closes between the pool's check and the request (a race the
    # check cannot see): the request goes once more, on a new connection.
    server.close_after_answer = True
    monkeypatch.setattr(webhook, "_still_open", lambda connection: True)
    sender = make_sender()
    url = f"http://127.0.0.1:{server.port}/hook"
    assert deliver(sender, url) == "succeeded"
    wait_closed_by_server(sender)

    assert deliver(sender, url) == "succeeded"

    assert len(server.requests) == 2
    assert server.connections == 2
    sender.close()


def wait_closed_by_server(sender: webhook.WebhookSender) -> None:
    """Block until the pooled connection's socket reads EOF (the server closed it)."""
    (idle,) = [c for conns in sender.pool._idle.values() for _, c in conns]
    assert idle.sock is not None
    idle.sock.settimeout(5)
    assert idle.sock.recv(1, socket.MSG_PEEK) == b""


def test_an_answer_that_asks_to_close_is_not_pooled(server: CountingServer) -> None:
    server.say_close = True
    sender = make_sender()
    url = f"http://127.0.0.1:{server.port}/hook"

    assert [deliver(sender, url) for _ in range(2)] == ["succeeded"] * 2

    assert sender.pool.idle_count() == 0
    assert server.connections == 2


def test_an_answer_longer_than_the_excerpt_is_not_drained_and_not_pooled(
    server: CountingServer,
) -> None:
    server.body = b"x" * (EXCERPT_LIMIT_BYTES * 4)
    sender = make_sender()

    assert deliver(sender, f"http://127.0.0.1:{server.port}/hook") == "succeeded"

    assert sender.pool.idle_count() == 0


def test_a_tls_connection_is_reused_for_its_host_name_only(tmp_path: Path) -> None:
    cert_path, key_path = make_certificate(tmp_path, "hooks.example.test")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_path, key_path)
    server_names: list[str | None] = []

    def remember_sni(sock: ssl.SSLObject, name: str | None, context: ssl.SSLContext) -> None:
        server_names.append(name)

    server_context.sni_callback = remember_sni
    with Receiver(tls=server_context) as receiver:
        tls_reuse(receiver, cert_path, server_names)


def tls_reuse(receiver: Receiver, cert_path: Path, server_names: list[str | None]) -> None:
    context = ssl.create_default_context(cafile=str(cert_path))
    resolver = resolve_to(
        {"hooks.example.test": ["127.0.0.1"], "other.example.test": ["127.0.0.1"]}
    )
    sender = make_sender(resolver=resolver, ssl_context=context)
    good = receiver.url(host="hooks.example.test", scheme="https")

    assert [deliver(sender, good) for _ in range(3)] == ["succeeded"] * 3
    assert server_names == ["hooks.example.test"]  # one handshake, verified once

    # Another name on the same address and port gets its own handshake, and
    # the certificate (for hooks.example.test) is refused for it.
    other = sender.deliver(
        WebhookTarget(receiver.url(host="other.example.test", scheme="https")),
        make_delivery(),
        timeout_s=5,
    )
    assert other.kind == "permanent"
    assert other.error is not None and "certificate" in other.error
    assert len(receiver.requests) == 3
    sender.close()


def test_idle_connections_past_the_idle_timeout_are_closed_not_reused(
    server: CountingServer,
) -> None:
    sender = make_sender(pool=webhook.ConnectionPool(idle_timeout_s=0.0))
    url = f"http://127.0.0.1:{server.port}/hook"

    assert [deliver(sender, url) for _ in range(2)] == ["succeeded"] * 2

    assert server.connections == 2
    sender.close()
