"""The webhook target against real HTTP servers on 127.0.0.1, started by the tests.

No other network is used: host names are either ``localhost`` or resolved by a
test resolver to 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import Message
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.targets.addresses import AddressPolicy, parse_networks
from adapters.targets.signing import legacy_signature as sign
from adapters.targets.webhook import WebhookSender, parse_retry_after
from domain.delivery import EXCERPT_LIMIT_BYTES, Delivery
from domain.targets import SqsTarget, WebhookTarget

SCHEDULE_ID = "sch_sales_report"
SECRET = "test-secret-for-signing-only"
NOW = datetime(2026, 3, 29, 1, 0, 5, tzinfo=UTC)


def make_delivery(attempt: int = 1) -> Delivery:
    return Delivery(
        occurrence_id="occ_sales_20260329T0100Z",
        schedule_id=SCHEDULE_ID,
        version=2,
        scheduled_at=datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
        attempt=attempt,
        late_by_s=5.0,
        payload={"report": "sales"},
    )


# A receiver: scripted answers, every request recorded.


@dataclass
class Request:
    path: str
    headers: Message
    body: bytes


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b'{"ok": true}'


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A sender that gives up mid-request (a refused certificate, a timeout)
        # resets the connection: expected in these tests, not worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Receiver:
    """An HTTP server on 127.0.0.1 that answers from a script (then 200) and records requests."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[Request] = []
        self.script: list[Answer] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.requests.append(Request(self.path, self.headers, body))
                answer = receiver.script.pop(0) if receiver.script else Answer()
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def url(self, path: str = "/hook", host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def answer(self, *answers: Answer) -> None:
        self.script.extend(answers)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def make_sender(
    policy: AddressPolicy | None = None, resolver: object = None, **kwargs: object
) -> WebhookSender:
    extra: dict[str, Any] = dict(kwargs)
    if resolver is not None:
        extra["resolver"] = resolver
    return WebhookSender(
        InMemorySecretStore({SCHEDULE_ID: SECRET}),
        policy or AddressPolicy.local(),
        clock=lambda: NOW,
        **extra,
    )


def resolve_to(mapping: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def resolver(host: str, port: int) -> list[str]:
        return mapping.get(host, [host])

    return resolver


# The receiver's side of the signature, written the way docs/webhooks.md tells receivers to.


def verify_signature(
    secret: str, headers: Message, body: bytes, now: float, tolerance_s: float = 300
) -> bool:
    timestamp = headers.get("Duetime-Timestamp", "")
    if not timestamp.isdigit() or abs(now - int(timestamp)) > tolerance_s:
        return False
    expected = hmac.new(
        secret.encode("utf-8"), timestamp.encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    for part in headers.get("Duetime-Signature", "").split(","):
        version, _, signature = part.strip().partition("=")
        if version == "v1" and hmac.compare_digest(signature, expected):
            return True
    return False


# Success and what the receiver gets.


def test_a_2xx_answer_is_a_success_and_the_receiver_gets_the_signed_body(
    receiver: Receiver,
) -> None:
    target = WebhookTarget(receiver.url("/hook?team=sales"), headers=(("X-Team", "sales"),))
    delivery = make_delivery()

    outcome = make_sender().deliver(target, delivery, timeout_s=5)

    assert outcome.kind == "succeeded"
    assert outcome.status_code == 200
    assert outcome.excerpt == '{"ok": true}'
    [request] = receiver.requests
    assert request.path == "/hook?team=sales"
    assert request.body == delivery.to_json_body()
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Idempotency-Key"] == "occ_sales_20260329T0100Z"
    assert request.headers["Duetime-Timestamp"] == str(int(NOW.timestamp()))
    assert request.headers["X-Team"] == "sales"
    assert request.headers["Host"] == f"127.0.0.1:{receiver.port}"


def test_the_signature_verifies_as_the_docs_describe(receiver: Receiver) -> None:
    make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    [request] = receiver.requests
    assert verify_signature(SECRET, request.headers, request.body, now=NOW.timestamp())
    assert request.headers["Duetime-Signature"] == sign(SECRET, int(NOW.timestamp()), request.body)


def test_the_signature_fails_for_another_body_secret_or_an_old_timestamp(
    receiver: Receiver,
) -> None:
    make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    [request] = receiver.requests
    now = NOW.timestamp()
    assert not verify_signature(SECRET, request.headers, request.body + b" ", now=now)
    assert not verify_signature("another-secret", request.headers, request.body, now=now)
    assert not verify_signature(SECRET, request.headers, request.body, now=now + 3600)


def test_a_202_means_accepted_the_job_reports_completion_later(receiver: Receiver) -> None:
    receiver.answer(Answer(202, body=b"queued"))

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert outcome.kind == "accepted"
    assert outcome.status_code == 202
    assert outcome.delivered


def test_a_503_then_a_200_is_two_attempts_with_one_idempotency_key(receiver: Receiver) -> None:
    receiver.answer(Answer(503, body=b"down for maintenance"), Answer(200))
    sender, target = make_sender(), WebhookTarget(receiver.url())

    first = sender.deliver(target, make_delivery(attempt=1), timeout_s=5)
    second = sender.deliver(target, make_delivery(attempt=2), timeout_s=5)

    assert (first.kind, first.status_code, first.excerpt) == (
        "transient",
        503,
        "down for maintenance",
    )
    assert (second.kind, second.status_code) == ("succeeded", 200)
    keys = [r.headers["Idempotency-Key"] for r in receiver.requests]
    assert keys == ["occ_sales_20260329T0100Z", "occ_sales_20260329T0100Z"]


def test_a_429_with_retry_after_seconds_is_transient_and_says_when(receiver: Receiver) -> None:
    receiver.answer(Answer(429, headers={"Retry-After": "120"}))

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert (outcome.kind, outcome.status_code, outcome.retry_after_s) == ("transient", 429, 120.0)


def test_a_retry_after_date_is_read_relative_to_now(receiver: Receiver) -> None:
    later = format_datetime(NOW + timedelta(seconds=90), usegmt=True)
    receiver.answer(Answer(503, headers={"Retry-After": later}))

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert (outcome.kind, outcome.retry_after_s) == ("transient", 90.0)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 422])
def test_another_4xx_is_permanent(receiver: Receiver, status: int) -> None:
    receiver.answer(Answer(status, body=b'{"error": "no such report"}'))

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert (outcome.kind, outcome.status_code) == ("permanent", status)
    assert outcome.excerpt == '{"error": "no such report"}'
    assert outcome.error == f"HTTP {status}"


@pytest.mark.parametrize("status", [408, 500, 502, 504])
def test_5xx_and_request_timeout_are_transient(receiver: Receiver, status: int) -> None:
    receiver.answer(Answer(status))

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert (outcome.kind, outcome.status_code, outcome.retry_after_s) == (
        "transient",
        status,
        None,
    )


def test_a_long_answer_is_kept_as_a_bounded_excerpt(receiver: Receiver) -> None:
    receiver.answer(Answer(200, body=b"x" * 50_000))

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert outcome.kind == "succeeded"
    assert outcome.excerpt == "x" * EXCERPT_LIMIT_BYTES


# Timeouts and connection errors.


def test_a_server_that_never_answers_times_out_as_transient(silent_port: int) -> None:
    target = WebhookTarget(f"http://127.0.0.1:{silent_port}/hook", timeout_s=0.3)

    started = time.monotonic()
    outcome = make_sender().deliver(target, make_delivery(), timeout_s=30)
    elapsed = time.monotonic() - started

    assert outcome.kind == "transient"
    assert outcome.error is not None and "timed out" in outcome.error
    assert elapsed < 2.0


def test_the_callers_shorter_timeout_wins(silent_port: int) -> None:
    target = WebhookTarget(f"http://127.0.0.1:{silent_port}/hook", timeout_s=30)

    started = time.monotonic()
    outcome = make_sender().deliver(target, make_delivery(), timeout_s=0.3)

    assert outcome.kind == "transient"
    assert time.monotonic() - started < 2.0


def test_a_refused_connection_is_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]

    outcome = make_sender().deliver(
        WebhookTarget(f"http://127.0.0.1:{closed_port}/"), make_delivery(), timeout_s=2
    )

    assert outcome.kind == "transient"
    assert outcome.error is not None and "connection failed" in outcome.error


# Redirects.


def test_a_same_origin_redirect_is_followed_with_the_same_signed_post(receiver: Receiver) -> None:
    receiver.answer(Answer(308, headers={"Location": "/v2/hook"}), Answer(200))

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert outcome.kind == "succeeded"
    first, second = receiver.requests
    assert second.path == "/v2/hook"
    assert second.body == first.body
    assert second.headers["Duetime-Signature"] == first.headers["Duetime-Signature"]
    assert second.headers["Idempotency-Key"] == first.headers["Idempotency-Key"]


def test_a_redirect_to_another_origin_does_not_carry_the_targets_headers(
    receiver: Receiver,
) -> None:
    with Receiver() as elsewhere:
        receiver.answer(Answer(307, headers={"Location": elsewhere.url("/moved")}))
        target = WebhookTarget(receiver.url(), headers=(("Authorization", "Bearer t0k3n"),))

        outcome = make_sender().deliver(target, make_delivery(), timeout_s=5)

        assert outcome.kind == "succeeded"
        [moved] = elsewhere.requests
        assert moved.headers.get("Authorization") is None
        assert moved.headers["Idempotency-Key"] == "occ_sales_20260329T0100Z"
        assert receiver.requests[0].headers["Authorization"] == "Bearer t0k3n"


@pytest.mark.parametrize(
    ("location", "policy"),
    [
        ("http://169.254.169.254/latest/meta-data/", AddressPolicy.local()),
        ("http://169.254.169.254/latest/meta-data/", AddressPolicy(allow_private=True)),
        ("http://[fd00:ec2::254]/latest/meta-data/", AddressPolicy(allow_private=True)),
        ("http://10.0.0.7/internal", AddressPolicy.local()),
        ("http://100.64.0.1/", AddressPolicy.local()),
        ("http://[::ffff:169.254.169.254]/", AddressPolicy(allow_private=True)),
    ],
)
def test_a_redirect_to_a_forbidden_address_is_refused(
    receiver: Receiver, location: str, policy: AddressPolicy
) -> None:
    receiver.answer(Answer(302, headers={"Location": location}))

    outcome = make_sender(policy).deliver(
        WebhookTarget(receiver.url()), make_delivery(), timeout_s=5
    )

    assert outcome.kind == "permanent"
    assert outcome.error is not None and "refused" in outcome.error
    assert len(receiver.requests) == 1


def test_a_redirect_to_a_name_that_resolves_to_a_forbidden_address_is_refused(
    receiver: Receiver,
) -> None:
    receiver.answer(Answer(302, headers={"Location": "http://metadata.example.test/"}))
    resolver = resolve_to({"metadata.example.test": ["169.254.169.254"]})

    outcome = make_sender(resolver=resolver).deliver(
        WebhookTarget(receiver.url()), make_delivery(), timeout_s=5
    )

    assert outcome.kind == "permanent"
    assert outcome.error is not None and "169.254.169.254" in outcome.error


def test_a_redirect_loop_stops(receiver: Receiver) -> None:
    receiver.answer(*[Answer(307, headers={"Location": "/hook"})] * 10)

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert outcome.kind == "permanent"
    assert outcome.error == "more than 3 redirects"
    assert len(receiver.requests) == 4


def test_a_303_is_not_followed(receiver: Receiver) -> None:
    receiver.answer(Answer(303, headers={"Location": "/result"}))

    outcome = make_sender().deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert (outcome.kind, outcome.status_code) == ("permanent", 303)
    assert len(receiver.requests) == 1


# The address policy, after DNS resolution.


def test_a_name_that_resolves_to_loopback_is_refused_by_default(receiver: Receiver) -> None:
    target = WebhookTarget(receiver.url(host="localhost"))

    outcome = make_sender(AddressPolicy()).deliver(target, make_delivery(), timeout_s=5)

    assert outcome.kind == "permanent"
    assert outcome.error is not None and "loopback" in outcome.error
    assert receiver.requests == []


def test_a_name_that_resolves_to_loopback_is_allowed_when_private_addresses_are(
    receiver: Receiver,
) -> None:
    target = WebhookTarget(receiver.url(host="localhost"))

    outcome = make_sender(AddressPolicy(allow_private=True)).deliver(
        target, make_delivery(), timeout_s=5
    )

    assert outcome.kind == "succeeded"
    [request] = receiver.requests
    assert request.headers["Host"] == f"localhost:{receiver.port}"


def test_an_allowlisted_network_is_allowed_without_allowing_every_private_address(
    receiver: Receiver,
) -> None:
    policy = AddressPolicy(allowed_networks=parse_networks(["127.0.0.1/32"]))

    allowed = make_sender(policy).deliver(
        WebhookTarget(receiver.url()), make_delivery(), timeout_s=5
    )
    refused = make_sender(policy, resolver=resolve_to({"db.internal": ["10.0.0.9"]})).deliver(
        WebhookTarget("http://db.internal/"), make_delivery(), timeout_s=5
    )

    assert allowed.kind == "succeeded"
    assert refused.kind == "permanent"


def test_the_connection_goes_to_the_checked_address_under_the_original_host_name(
    receiver: Receiver,
) -> None:
    resolver = resolve_to({"hooks.example.test": ["127.0.0.1"]})
    target = WebhookTarget(receiver.url(host="hooks.example.test"))

    outcome = make_sender(resolver=resolver).deliver(target, make_delivery(), timeout_s=5)

    assert outcome.kind == "succeeded"
    [request] = receiver.requests
    assert request.headers["Host"] == f"hooks.example.test:{receiver.port}"


def test_a_name_with_any_forbidden_address_is_refused(receiver: Receiver) -> None:
    # A rebinding name may answer with a public and a private address at once.
    resolver = resolve_to({"rebind.example.test": ["93.184.215.14", "10.0.0.1"]})

    outcome = make_sender(AddressPolicy(), resolver=resolver).deliver(
        WebhookTarget("http://rebind.example.test/"), make_delivery(), timeout_s=5
    )

    assert outcome.kind == "permanent"
    assert outcome.error is not None and "10.0.0.1 is a private address" in outcome.error


@pytest.mark.parametrize(
    ("address", "allowed_by_default", "allowed_when_private_is"),
    [
        ("93.184.215.14", True, True),
        ("2606:4700:4700::1111", True, True),
        ("127.0.0.1", False, True),
        ("::1", False, True),
        ("10.1.2.3", False, True),
        ("172.16.0.1", False, True),
        ("192.168.1.1", False, True),
        ("100.64.0.1", False, True),
        ("fd12:3456::1", False, True),
        ("169.254.169.254", False, False),
        ("169.254.170.2", False, False),
        ("fd00:ec2::254", False, False),
        ("169.254.10.10", False, False),
        ("fe80::1", False, False),
        ("0.0.0.0", False, False),
        ("::", False, False),
        ("224.0.0.1", False, False),
        ("ff02::1", False, False),
        ("240.0.0.1", False, False),
        ("255.255.255.255", False, False),
        ("::ffff:127.0.0.1", False, True),
        ("::ffff:169.254.169.254", False, False),
        ("2002:a9fe:a9fe::1", False, False),  # 6to4 around 169.254.169.254
        ("64:ff9b::a00:1", False, True),  # NAT64 around 10.0.0.1
    ],
)
def test_the_address_policy(
    address: str, allowed_by_default: bool, allowed_when_private_is: bool
) -> None:
    assert (AddressPolicy().refusal(address) is None) is allowed_by_default
    assert (AddressPolicy(allow_private=True).refusal(address) is None) is allowed_when_private_is


# TLS: the name is verified although the connection goes to a checked address.


def make_certificate(tmp_path: Path, host: str) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{host}.crt", tmp_path / f"{host}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_receiver(tmp_path: Path) -> Iterator[tuple[Receiver, Path, list[str | None]]]:
    cert_path, key_path = make_certificate(tmp_path, "hooks.example.test")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_path, key_path)
    server_names: list[str | None] = []

    def remember_sni(sock: ssl.SSLObject, name: str | None, context: ssl.SSLContext) -> None:
        server_names.append(name)

    server_context.sni_callback = remember_sni
    with Receiver(tls=server_context) as running:
        yield running, cert_path, server_names


def test_https_sends_the_host_name_for_sni_and_verifies_the_certificate(
    tls_receiver: tuple[Receiver, Path, list[str | None]],
) -> None:
    receiver, cert_path, server_names = tls_receiver
    client_context = ssl.create_default_context(cafile=str(cert_path))
    resolver = resolve_to({"hooks.example.test": ["127.0.0.1"]})
    target = WebhookTarget(receiver.url(host="hooks.example.test", scheme="https"))

    outcome = make_sender(resolver=resolver, ssl_context=client_context).deliver(
        target, make_delivery(), timeout_s=5
    )

    assert outcome.kind == "succeeded"
    assert server_names == ["hooks.example.test"]
    assert receiver.requests[0].headers["Host"] == f"hooks.example.test:{receiver.port}"


def test_https_refuses_a_certificate_for_another_name(
    tls_receiver: tuple[Receiver, Path, list[str | None]],
) -> None:
    receiver, cert_path, _ = tls_receiver
    client_context = ssl.create_default_context(cafile=str(cert_path))
    resolver = resolve_to({"other.example.test": ["127.0.0.1"]})
    target = WebhookTarget(receiver.url(host="other.example.test", scheme="https"))

    outcome = make_sender(resolver=resolver, ssl_context=client_context).deliver(
        target, make_delivery(), timeout_s=5
    )

    assert outcome.kind == "permanent"
    assert outcome.error is not None and "certificate" in outcome.error
    assert receiver.requests == []


def test_a_redirect_from_https_to_http_is_refused(
    tls_receiver: tuple[Receiver, Path, list[str | None]],
) -> None:
    receiver, cert_path, _ = tls_receiver
    receiver.answer(Answer(307, headers={"Location": "http://hooks.example.test/plain"}))
    resolver = resolve_to({"hooks.example.test": ["127.0.0.1"]})
    sender = make_sender(
        resolver=resolver, ssl_context=ssl.create_default_context(cafile=str(cert_path))
    )

    outcome = sender.deliver(
        WebhookTarget(receiver.url(host="hooks.example.test", scheme="https")),
        make_delivery(),
        timeout_s=5,
    )

    assert outcome.kind == "permanent"
    assert outcome.error is not None and "https to http" in outcome.error


# What is refused before any request.


def test_no_secret_means_no_request(receiver: Receiver) -> None:
    sender = WebhookSender(InMemorySecretStore(), AddressPolicy.local())

    outcome = sender.deliver(WebhookTarget(receiver.url()), make_delivery(), timeout_s=5)

    assert outcome.kind == "permanent"
    assert receiver.requests == []


def test_another_kind_of_target_is_not_the_webhooks() -> None:
    target = SqsTarget("https://sqs.eu-west-1.amazonaws.com/123456789012/q")

    outcome = make_sender().deliver(target, make_delivery(), timeout_s=5)

    assert outcome.kind == "permanent"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 5 ", 5.0),
        ("0", 0.0),
        (format_datetime(NOW + timedelta(minutes=2), usegmt=True), 120.0),
        (format_datetime(NOW - timedelta(minutes=2), usegmt=True), 0.0),
        ("Sun, 29 Mar 2026 01:00:35 GMT", 30.0),
        ("soon", None),
        ("-5", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(
    value: str | None, seconds: float | None
) -> None:
    assert parse_retry_after(value, NOW) == seconds
