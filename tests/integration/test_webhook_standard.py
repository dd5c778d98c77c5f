"""A receiver that verifies deliveries with the ``standardwebhooks`` package,
a Standard Webhooks library nobody here wrote, given the secret the API
answered with: on the local stack's SQLite store (a real HTTP receiver on
127.0.0.1) and on DynamoDB (moto, the secrets table, the worker's own parts).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from adapters.definitions import WEBHOOK_SECRETS, create_table
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.store import dynamo_store_from_settings
from adapters.sealing import CannotOpen, HeaderSeal
from adapters.secrets import InMemorySecretStore, create_signing_key, new_secret
from adapters.sqlite.secrets import SqliteSecretStore
from adapters.sqlite.store import SqliteStore
from adapters.targets import AddressPolicy, WebhookSender
from adapters.targets.signing import shown_secret
from adapters.targets.webhook import _Answer
from bootstrap.aws import build_aws_parts
from bootstrap.settings import Settings
from domain.delivery import Delivery
from domain.targets import WebhookTarget
from handlers.api import ApiServices, build_services, handler
from service.schedules import ScheduleService
from tests.conftest import FakeClock
from tests.handlers.test_api import REPORT, rest_event

Headers = dict[str, str]


class Receiver:
    """An HTTP receiver on 127.0.0.1 that answers 204 to what ``Webhook(secret)``
    verifies and 401 to anything else; it keeps every request it was sent."""

    def __init__(self) -> None:
        self.secret = ""
        self.requests: list[tuple[Headers, bytes]] = []
        self.verified: list[Any] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = dict(self.headers.items())
                receiver.requests.append((headers, body))
                try:
                    receiver.verified.append(Webhook(receiver.secret).verify(body, headers))
                except WebhookVerificationError:
                    self.send_response(401)
                else:
                    self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


def call(services: ApiServices, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    event = rest_event(
        method,
        path,
        body=None if body is None else json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    response = handler(event, None, service=services)
    return response["statusCode"], json.loads(response["body"])


def delivery_of(schedule_id: str, occurrence_id: str | None = None) -> Delivery:
    return Delivery(
        occurrence_id=occurrence_id or f"{schedule_id}:1:2026-12-01T08:00:00Z",
        schedule_id=schedule_id,
        version=1,
        scheduled_at=datetime(2026, 12, 1, 8, 0, tzinfo=UTC),
        attempt=1,
        late_by_s=0.0,
        payload={"report": "sales"},
    )


def legacy_verifies(secret: str, headers: Headers, body: bytes) -> bool:
    """The ``Duetime-Signature`` check of earlier releases, as docs/webhooks.md gave it."""
    timestamp = headers["Duetime-Timestamp"]
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest(headers["Duetime-Signature"], f"v1={expected.hexdigest()}")


# --- the local stack: the SQLite store and its secrets table -------------------------


@pytest.fixture
def local(tmp_path: Path, clock: FakeClock) -> Iterator[tuple[ApiServices, SqliteSecretStore]]:
    store = SqliteStore.open(tmp_path / "duetime.db")
    secrets = SqliteSecretStore(tmp_path / "duetime.db")
    services = ApiServices(
        ScheduleService(store, clock), secrets, address_policy=AddressPolicy.local()
    )
    yield services, secrets
    store.close()


def test_the_secret_the_api_answers_verifies_a_delivery_with_the_library(
    local: tuple[ApiServices, SqliteSecretStore], receiver: Receiver
) -> None:
    services, secrets = local
    target = {"type": "webhook", "url": receiver.url}
    status, created = call(services, "POST", "/schedules", {**REPORT, "target": target})
    assert status == 201, created
    receiver.secret = created["webhook_secret"]
    assert receiver.secret.startswith("whsec_")
    delivery = delivery_of(created["id"])

    outcome = WebhookSender(secrets, AddressPolicy.local()).deliver(
        WebhookTarget(receiver.url), delivery, timeout_s=5
    )

    assert outcome.kind == "succeeded", outcome
    assert receiver.verified == [json.loads(delivery.to_json_body())]
    [(headers, _body)] = receiver.requests
    assert headers["webhook-id"] == headers["Idempotency-Key"] == delivery.idempotency_key


def test_a_rotated_secret_verifies_and_the_old_one_no_longer_does(
    local: tuple[ApiServices, SqliteSecretStore], receiver: Receiver
) -> None:
    services, secrets = local
    target = {"type": "webhook", "url": receiver.url}
    _, created = call(services, "POST", "/schedules", {**REPORT, "target": target})
    status, rotated = call(services, "POST", f"/schedules/{created['id']}/rotate-secret")
    assert status == 200, rotated
    sender = WebhookSender(secrets, AddressPolicy.local())

    receiver.secret = created["webhook_secret"]
    refused = sender.deliver(WebhookTarget(receiver.url), delivery_of(created["id"]), timeout_s=5)
    receiver.secret = rotated["webhook_secret"]
    accepted = sender.deliver(WebhookTarget(receiver.url), delivery_of(created["id"]), timeout_s=5)

    assert (refused.status_code, accepted.status_code) == (401, 204)


def captured(receiver: Receiver, secret: str) -> tuple[Headers, bytes]:
    """One delivery as the receiver got it (and verified it)."""
    stored = InMemorySecretStore({"sch_replayed": secret})
    receiver.secret = shown_secret(secret)
    outcome = WebhookSender(stored, AddressPolicy.local()).deliver(
        WebhookTarget(receiver.url), delivery_of("sch_replayed"), timeout_s=5
    )
    assert outcome.kind == "succeeded", outcome
    return receiver.requests[-1]


def test_a_replay_under_another_id_does_not_verify(receiver: Receiver) -> None:
    # A receiver deduplicates on webhook-id; a captured delivery sent again
    # with a new id (and Idempotency-Key) would be done twice if it verified.
    headers, body = captured(receiver, new_secret())
    webhook = Webhook(receiver.secret)
    webhook.verify(body, headers)  # as captured

    replayed = {**headers, "webhook-id": "sch_replayed:1:2026-12-02T08:00:00Z"}
    replayed["Idempotency-Key"] = replayed["webhook-id"]
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        webhook.verify(body, replayed)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"webhook-timestamp": "+1"}, id="timestamp"),
        pytest.param({"body": b" "}, id="body"),
        pytest.param({"webhook-signature": "drop"}, id="no-signature"),
    ],
)
def test_a_changed_timestamp_or_body_does_not_verify(
    receiver: Receiver, change: dict[str, Any]
) -> None:
    headers, body = captured(receiver, new_secret())
    if "webhook-timestamp" in change:
        headers = {**headers, "webhook-timestamp": str(int(headers["webhook-timestamp"]) + 1)}
    if "body" in change:
        body += change["body"]
    if "webhook-signature" in change:
        headers = {k: v for k, v in headers.items() if k != "webhook-signature"}

    with pytest.raises(WebhookVerificationError):
        Webhook(receiver.secret).verify(body, headers)


def test_a_secret_stored_before_signs_both_headers_with_one_key(receiver: Receiver) -> None:
    # A secret made by an earlier release, as its receiver was given it (URL-safe
    # characters included): Duetime-Signature still verifies with that text, and
    # the whsec_ form a Standard Webhooks receiver is given decodes back to it.
    old = "Ab-_" + new_secret()[4:]
    headers, body = captured(receiver, old)

    assert legacy_verifies(old, headers, body)
    Webhook(shown_secret(old)).verify(body, headers)
    assert base64.b64decode(shown_secret(old).removeprefix("whsec_")).decode() == old
    assert headers["Duetime-Timestamp"] == headers["webhook-timestamp"]


# --- AWS: DynamoDB and the secrets table, on moto ------------------------------------

REGION = "eu-west-1"
SECRETS_TABLE = "DuetimeWebhookSecrets"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        client = boto3.client("dynamodb")
        tables = create_store_tables(client, f"std-{uuid.uuid4().hex[:6]}")
        create_table(client, WEBHOOK_SECRETS, SECRETS_TABLE)
        create_signing_key(boto3.client("secretsmanager"), "duetime/Duetime/webhooks/")
        yield Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
            delivery_queue_url=f"https://sqs.{REGION}.amazonaws.com/123456789012/q",
            delivery_dlq_url=f"https://sqs.{REGION}.amazonaws.com/123456789012/d",
            secrets_prefix="duetime/Duetime/webhooks/",
            secret_store="dynamodb",
            secrets_table=SECRETS_TABLE,
        )


class InProcessReceiver:
    """The webhook's HTTP exchange, answered in process by the library's verify."""

    def __init__(self) -> None:
        self.secret = ""
        self.requests: list[tuple[Headers, bytes]] = []

    def __call__(self, url: str, headers: Headers, body: bytes, deadline: float) -> _Answer:
        self.requests.append((headers, body))
        try:
            Webhook(self.secret).verify(body, headers)
        except WebhookVerificationError:
            return _Answer(status=401, location=None, retry_after=None, body=b"")
        return _Answer(status=204, location=None, retry_after=None, body=b"")


def test_on_dynamodb_the_api_secret_verifies_what_the_worker_signs(
    aws: Settings, clock: FakeClock
) -> None:
    services = build_services(aws.model_copy(update={"delivery_queue_url": ""}), clock=clock)
    status, created = call(services, "POST", "/schedules", REPORT)
    assert status == 201, created
    receiver = InProcessReceiver()
    receiver.secret = created["webhook_secret"]
    parts = build_aws_parts(aws, webhook_exchange=receiver)

    outcome = parts.targets.deliver(
        WebhookTarget(url="https://93.184.215.14/hook"), delivery_of(created["id"]), timeout_s=5
    )

    assert outcome.kind == "succeeded", outcome
    [(headers, body)] = receiver.requests
    replayed = {**headers, "webhook-id": "another-occurrence"}
    with pytest.raises(WebhookVerificationError):
        Webhook(receiver.secret).verify(body, replayed)


# --- header values sealed at rest (adapters.sealing) ----------------------------------------


def test_on_dynamodb_header_values_are_sealed_and_the_worker_sends_them(
    aws: Settings, clock: FakeClock
) -> None:
    services = build_services(aws.model_copy(update={"delivery_queue_url": ""}), clock=clock)
    target = {"type": "webhook", "url": "https://93.184.215.14/hook"}
    target["headers"] = {"Authorization": "Bearer s3cr3t-value", "X-Team": "team-blue-value"}  # type: ignore[assignment]
    status, created = call(services, "POST", "/schedules", {**REPORT, "target": target})
    assert status == 201, created

    # Nothing stored in the schedules table carries a header value...
    items = boto3.client("dynamodb").scan(TableName=aws.schedules_table)["Items"]
    assert items and "s3cr3t-value" not in repr(items) and "team-blue-value" not in repr(items)
    [version] = [i for i in items if "sealed_headers" in i]
    assert json.loads(version["body"]["S"])["target"]["headers"] == {
        "Authorization": "",
        "X-Team": "",
    }
    # ...the tick and the watchdog, which hold no key, see the names only...
    tick_store = dynamo_store_from_settings(aws)
    seen = tick_store.schedules.get_version(created["id"], 1)
    assert seen is not None and dict(seen.target.headers) == {"Authorization": "", "X-Team": ""}

    # ...and the worker opens them and sends them, signed as ever.
    receiver = InProcessReceiver()
    receiver.secret = created["webhook_secret"]
    parts = build_aws_parts(aws, webhook_exchange=receiver)
    stored = parts.runs.get_version(created["id"], 1)
    assert stored is not None
    outcome = parts.targets.deliver(stored.target, delivery_of(created["id"]), timeout_s=5)

    assert outcome.kind == "succeeded", outcome
    [(headers, _)] = receiver.requests
    assert headers["Authorization"] == "Bearer s3cr3t-value"
    assert headers["X-Team"] == "team-blue-value"


def test_sealed_header_values_do_not_open_on_another_version_or_with_another_key() -> None:
    seal = HeaderSeal(lambda: b"the signing key")
    sealed = seal.seal("sch_a", 1, {"Authorization": "Bearer x"})

    assert seal.open("sch_a", 1, sealed) == {"Authorization": "Bearer x"}
    with pytest.raises(CannotOpen):
        seal.open("sch_a", 2, sealed)  # copied onto another version
    with pytest.raises(CannotOpen):
        seal.open("sch_b", 1, sealed)
    with pytest.raises(CannotOpen):
        HeaderSeal(lambda: b"another key").open("sch_a", 1, sealed)


def test_an_edit_that_leaves_a_header_keeps_its_sealed_value(
    aws: Settings, clock: FakeClock
) -> None:
    services = build_services(aws.model_copy(update={"delivery_queue_url": ""}), clock=clock)
    target = {"type": "webhook", "url": "https://93.184.215.14/hook"}
    target["headers"] = {"Authorization": "Bearer kept"}  # type: ignore[assignment]
    status, created = call(services, "POST", "/schedules", {**REPORT, "target": target})
    assert status == 201, created
    # A client sends back what it read: the name, with null for its value.
    edited = {**REPORT, "name": "renamed", "target": {**target, "headers": {"Authorization": None}}}
    edit = rest_event(
        "PUT",
        f"/schedules/{created['id']}",
        body=json.dumps(edited),
        headers={"Content-Type": "application/json", "If-Match": "1"},
    )
    response = handler(edit, None, service=services)
    assert response["statusCode"] == 200, response["body"]

    parts = build_aws_parts(aws, webhook_exchange=InProcessReceiver())
    stored = parts.runs.get_version(created["id"], 2)
    assert stored is not None and dict(stored.target.headers) == {"Authorization": "Bearer kept"}
    items = boto3.client("dynamodb").scan(TableName=aws.schedules_table)["Items"]
    assert "Bearer kept" not in repr(items)


def test_a_version_saved_before_sealing_keeps_its_header_values(
    aws: Settings, clock: FakeClock
) -> None:
    # Given a version written by a store without a seal, as earlier releases wrote it
    before = build_services(
        aws.model_copy(update={"delivery_queue_url": "", "secret_store": "ssm"}), clock=clock
    )
    target = {"type": "webhook", "url": "https://93.184.215.14/hook"}
    target["headers"] = {"Authorization": "Bearer from-before"}  # type: ignore[assignment]
    status, created = call(before, "POST", "/schedules", {**REPORT, "target": target})
    assert status == 201, created
    items = boto3.client("dynamodb").scan(TableName=aws.schedules_table)["Items"]
    assert "Bearer from-before" in repr(items) and "sealed_headers" not in repr(items)

    # the worker of this release, which holds a seal, reads the values from the body.
    parts = build_aws_parts(aws, webhook_exchange=InProcessReceiver())
    stored = parts.runs.get_version(created["id"], 1)
    assert stored is not None
    assert dict(stored.target.headers) == {"Authorization": "Bearer from-before"}
