"""The worker signs with the secret the deployment's store holds, wherever it was stored.

A stack deployed while webhook secrets lived in Secrets Manager moves to SSM
parameters (``duetime:secretStore`` ``ssm``), and one deployed with SSM
parameters moves to the secrets table (``dynamodb``): the schedules made
before keep their old secret until it is replaced, and their deliveries must
stay signed with it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import WEBHOOK_SECRETS, create_table
from adapters.secrets import SecretsManagerSecretStore, aws_secret_store, create_signing_key
from adapters.targets.signing import legacy_signature as sign
from adapters.targets.webhook import _Answer
from bootstrap.aws import build_aws_parts
from bootstrap.settings import Settings
from domain.delivery import Delivery
from domain.targets import WebhookTarget

REGION = "eu-west-1"
PREFIX = "duetime/Duetime/webhooks/"
TABLE = "DuetimeWebhookSecrets"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        create_table(boto3.client("dynamodb"), WEBHOOK_SECRETS, TABLE)
        create_signing_key(boto3.client("secretsmanager"), PREFIX)
        yield


class Receiver:
    """Takes the place of the HTTP exchange and keeps what it was sent."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []

    def __call__(self, url: str, headers: dict[str, str], body: bytes, deadline: float) -> Any:
        self.requests.append((headers, body))
        return _Answer(status=200, location=None, retry_after=None, body=b"")

    def signed_with(self, secret: str) -> bool:
        headers, body = self.requests[-1]
        return headers["Duetime-Signature"] == sign(secret, int(headers["Duetime-Timestamp"]), body)


def settings(store: str) -> Settings:
    return Settings(
        schedules_table="s",
        occurrences_table="o",
        leases_table="l",
        delivery_queue_url=f"https://sqs.{REGION}.amazonaws.com/123456789012/q",
        delivery_dlq_url=f"https://sqs.{REGION}.amazonaws.com/123456789012/d",
        secrets_prefix=PREFIX,
        secret_store=store,  # type: ignore[arg-type]
        secrets_table=TABLE if store == "dynamodb" else "",
    )


def deliver(store: str, receiver: Receiver, schedule_id: str) -> Any:
    parts = build_aws_parts(settings(store), webhook_exchange=receiver)
    delivery = Delivery(
        occurrence_id=f"{schedule_id}:1:2026-12-01T08:00:00Z",
        schedule_id=schedule_id,
        version=1,
        scheduled_at=datetime(2026, 12, 1, 8, 0, tzinfo=UTC),
        attempt=1,
        late_by_s=0.0,
    )
    # A public address: the policy resolves the name, so a literal address is used.
    target = WebhookTarget(url="https://93.184.215.14/hook")
    return parts.targets.deliver(target, delivery, timeout_s=5)


def test_a_schedule_made_before_the_move_still_gets_signed_deliveries(aws: None) -> None:
    schedule_id = f"sch_{uuid.uuid4().hex[:12]}"
    old = SecretsManagerSecretStore(boto3.client("secretsmanager"), PREFIX).put(schedule_id)
    receiver = Receiver()

    outcome = deliver("ssm", receiver, schedule_id)

    assert outcome.delivered, outcome
    assert receiver.signed_with(old)


def test_a_schedule_made_after_the_move_is_signed_with_its_ssm_parameter(aws: None) -> None:
    schedule_id = f"sch_{uuid.uuid4().hex[:12]}"
    new = aws_secret_store("ssm", PREFIX, boto3.client).put(schedule_id)
    receiver = Receiver()

    outcome = deliver("ssm", receiver, schedule_id)

    assert outcome.delivered, outcome
    assert receiver.signed_with(new)
    names = [p["Name"] for p in boto3.client("ssm").describe_parameters()["Parameters"]]
    assert names == [f"/duetime/Duetime/webhooks/{schedule_id}"]


def test_a_moved_secret_signs_the_next_deliveries_and_the_old_one_is_gone(aws: None) -> None:
    schedule_id = f"sch_{uuid.uuid4().hex[:12]}"
    old = SecretsManagerSecretStore(boto3.client("secretsmanager"), PREFIX).put(schedule_id)
    new = aws_secret_store("ssm", PREFIX, boto3.client).put(schedule_id)  # the API rotating it
    receiver = Receiver()

    outcome = deliver("ssm", receiver, schedule_id)

    assert outcome.delivered, outcome
    assert receiver.signed_with(new) and not receiver.signed_with(old)
    secrets = boto3.client("secretsmanager").list_secrets()["SecretList"]
    assert [found["Name"] for found in secrets if found["Name"].startswith(PREFIX)] == []


def test_a_schedule_with_no_secret_anywhere_fails_without_a_request(aws: None) -> None:
    receiver = Receiver()

    outcome = deliver("ssm", receiver, f"sch_{uuid.uuid4().hex[:12]}")

    assert outcome.kind == "permanent"
    assert outcome.error is not None and "no signing secret" in outcome.error
    assert receiver.requests == []


def requests_of(store: str, receiver: Receiver, schedule_id: str) -> tuple[Any, list[str]]:
    """The delivery's outcome, and every AWS request the worker's clients made."""
    asked: list[str] = []

    def record(model: Any, **_: Any) -> None:
        asked.append(f"{model.service_model.service_name}:{model.name}")

    original = boto3.session.Session.client

    def client(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        made = original(self, name, *args, **kwargs)
        made.meta.events.register("before-parameter-build", record)
        return made

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boto3.session.Session, "client", client)
        outcome = deliver(store, receiver, schedule_id)
    return outcome, asked


def test_with_secrets_manager_chosen_the_worker_reads_only_secrets_manager(aws: None) -> None:
    schedule_id = f"sch_{uuid.uuid4().hex[:12]}"
    secret = SecretsManagerSecretStore(boto3.client("secretsmanager"), PREFIX).put(schedule_id)
    receiver = Receiver()

    outcome, asked = requests_of("secretsmanager", receiver, schedule_id)

    assert outcome.delivered, outcome
    assert receiver.signed_with(secret)
    assert asked == ["secretsmanager:GetSecretValue"]


# --- the secrets table (duetime:secretStore dynamodb), after SSM ----------------------------


def test_with_the_table_a_secret_is_one_get_item_and_the_signing_key(aws: None) -> None:
    schedule_id = f"sch_{uuid.uuid4().hex[:12]}"
    secret = aws_secret_store("dynamodb", PREFIX, boto3.client, table=TABLE).put(schedule_id)
    receiver = Receiver()

    outcome, asked = requests_of("dynamodb", receiver, schedule_id)

    assert outcome.delivered, outcome
    assert receiver.signed_with(secret)
    # The key the secret is derived with, read when the container's parts are
    # built (its init phase; kept for SIGNING_KEY_TTL_S after), then the
    # item's generation: nothing more at delivery.
    assert asked == ["secretsmanager:GetSecretValue", "dynamodb:GetItem"]


def test_a_schedule_made_on_ssm_before_the_table_still_gets_signed_deliveries(
    aws: None,
) -> None:
    schedule_id = f"sch_{uuid.uuid4().hex[:12]}"
    old = aws_secret_store("ssm", PREFIX, boto3.client).put(schedule_id)
    receiver = Receiver()

    outcome, asked = requests_of("dynamodb", receiver, schedule_id)

    assert outcome.delivered, outcome
    assert receiver.signed_with(old)
    # The signing key, read at init whatever the schedule's secret needs; the
    # table's item, eventually then (not found) strongly; then the old store.
    assert asked == [
        "secretsmanager:GetSecretValue",
        "dynamodb:GetItem",
        "dynamodb:GetItem",
        "ssm:GetParameter",
    ]


def test_a_schedule_moved_to_the_table_is_signed_with_its_new_secret(aws: None) -> None:
    schedule_id = f"sch_{uuid.uuid4().hex[:12]}"
    old = aws_secret_store("ssm", PREFIX, boto3.client).put(schedule_id)
    new = aws_secret_store("dynamodb", PREFIX, boto3.client, table=TABLE).put(schedule_id)
    receiver = Receiver()

    outcome = deliver("dynamodb", receiver, schedule_id)

    assert outcome.delivered, outcome
    assert receiver.signed_with(new) and not receiver.signed_with(old)
    assert boto3.client("ssm").describe_parameters()["Parameters"] == []
