"""Webhook signing secrets: generated once, stored encrypted, readable only by name."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from adapters.secrets import (
    InMemorySecretStore,
    SecretNotFound,
    SecretsManagerSecretStore,
    SecretStore,
    SsmSecretStore,
)
from adapters.sqlite.secrets import SqliteSecretStore

PREFIX = "/duetime/test/webhook-secrets"
SM_PREFIX = "duetime/test/webhooks/"


def random_schedule_id() -> str:
    return f"sch_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials and region: moto must never see real ones."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")


@pytest.fixture
def ssm(aws_env: None) -> Iterator[object]:
    with mock_aws():
        yield boto3.client("ssm", region_name="eu-west-1")


@pytest.fixture
def secretsmanager(aws_env: None) -> Iterator[object]:
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="eu-west-1")


@pytest.fixture(params=["memory", "sqlite", "ssm", "secretsmanager"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SecretStore:
    if request.param == "memory":
        return InMemorySecretStore()
    if request.param == "sqlite":
        return SqliteSecretStore(tmp_path / "duetime.db")
    if request.param == "ssm":
        return SsmSecretStore(request.getfixturevalue("ssm"), PREFIX)
    return SecretsManagerSecretStore(request.getfixturevalue("secretsmanager"), SM_PREFIX)


def test_put_returns_a_fresh_secret_that_get_reads_back(store: SecretStore) -> None:
    schedule_id = random_schedule_id()

    secret = store.put(schedule_id)

    assert len(secret) >= 43
    assert store.get(schedule_id) == secret


def test_every_schedule_gets_its_own_secret(store: SecretStore) -> None:
    a, b = random_schedule_id(), random_schedule_id()

    assert store.put(a) != store.put(b)
    assert store.get(a) != store.get(b)


def test_put_again_rotates_the_secret(store: SecretStore) -> None:
    schedule_id = random_schedule_id()
    first = store.put(schedule_id)

    second = store.put(schedule_id)

    assert second != first
    assert store.get(schedule_id) == second


def test_a_missing_secret_is_reported_as_such(store: SecretStore) -> None:
    with pytest.raises(SecretNotFound):
        store.get(random_schedule_id())


def test_delete_forgets_and_is_idempotent(store: SecretStore) -> None:
    schedule_id = random_schedule_id()
    store.put(schedule_id)

    store.delete(schedule_id)
    store.delete(schedule_id)

    with pytest.raises(SecretNotFound):
        store.get(schedule_id)


def test_ssm_keeps_the_secret_as_a_securestring_under_the_prefix(ssm: object) -> None:
    store = SsmSecretStore(ssm, PREFIX)
    schedule_id = random_schedule_id()
    secret = store.put(schedule_id)

    stored = ssm.get_parameter(Name=f"{PREFIX}/{schedule_id}")["Parameter"]  # type: ignore[attr-defined]

    assert stored["Type"] == "SecureString"
    assert stored["Value"] != secret  # not readable without decryption


def test_ssm_store_refuses_names_it_cannot_scope(ssm: object) -> None:
    with pytest.raises(ValueError):
        SsmSecretStore(ssm, "duetime/no-leading-slash")
    with pytest.raises(ValueError):
        SsmSecretStore(ssm, PREFIX).put("../other-prefix/x")


def test_secrets_manager_names_the_secret_under_the_prefix(secretsmanager: object) -> None:
    store = SecretsManagerSecretStore(secretsmanager, SM_PREFIX)
    schedule_id = random_schedule_id()
    secret = store.put(schedule_id)

    stored = secretsmanager.get_secret_value(SecretId=f"{SM_PREFIX}{schedule_id}")  # type: ignore[attr-defined]

    assert stored["SecretString"] == secret


def test_a_deleted_secret_name_can_be_used_again(secretsmanager: object) -> None:
    store = SecretsManagerSecretStore(secretsmanager, SM_PREFIX)
    schedule_id = random_schedule_id()
    store.put(schedule_id)
    store.delete(schedule_id)

    secret = store.put(schedule_id)

    assert store.get(schedule_id) == secret


def test_secrets_manager_store_refuses_a_prefix_without_a_trailing_slash(
    secretsmanager: object,
) -> None:
    with pytest.raises(ValueError):
        SecretsManagerSecretStore(secretsmanager, "duetime/test/webhooks")
