"""Webhook signing secrets: generated once, stored encrypted, readable only by name."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.secrets import (
    InMemorySecretStore,
    MovingSecretStore,
    SecretNotFound,
    SecretsManagerSecretStore,
    SecretStore,
    SecretStoreFull,
    SsmSecretStore,
    aws_secret_store,
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


@pytest.fixture
def clients(aws_env: None) -> Iterator[Any]:
    """boto3 clients by service name, on one moto account."""
    with mock_aws():
        yield lambda service: boto3.client(service, region_name="eu-west-1")


@pytest.fixture(params=["memory", "sqlite", "ssm", "secretsmanager", "moving"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SecretStore:
    if request.param == "memory":
        return InMemorySecretStore()
    if request.param == "sqlite":
        return SqliteSecretStore(tmp_path / "duetime.db")
    if request.param == "ssm":
        return SsmSecretStore(request.getfixturevalue("ssm"), PREFIX)
    if request.param == "moving":
        return aws_secret_store("ssm", SM_PREFIX, request.getfixturevalue("clients"))
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


# --- a stack that kept its secrets in Secrets Manager, now on SSM ---------------------------


def test_the_ssm_store_of_a_deployment_names_parameters_from_the_same_prefix(
    clients: Any,
) -> None:
    store = aws_secret_store("ssm", SM_PREFIX, clients)
    schedule_id = random_schedule_id()

    secret = store.put(schedule_id)

    stored = clients("ssm").get_parameter(
        Name=f"/duetime/test/webhooks/{schedule_id}", WithDecryption=True
    )["Parameter"]
    assert stored["Type"] == "SecureString"
    assert stored["Value"] == secret


def test_a_secret_stored_in_secrets_manager_before_is_still_read(clients: Any) -> None:
    before = SecretsManagerSecretStore(clients("secretsmanager"), SM_PREFIX)
    schedule_id = random_schedule_id()
    old = before.put(schedule_id)

    after = aws_secret_store("ssm", SM_PREFIX, clients)

    assert after.get(schedule_id) == old


def test_a_new_secret_moves_the_schedule_to_ssm_and_deletes_the_old_one(clients: Any) -> None:
    before = SecretsManagerSecretStore(clients("secretsmanager"), SM_PREFIX)
    schedule_id = random_schedule_id()
    old = before.put(schedule_id)
    after = aws_secret_store("ssm", SM_PREFIX, clients)

    new = after.put(schedule_id)

    assert new != old
    assert after.get(schedule_id) == new
    with pytest.raises(SecretNotFound):
        before.get(schedule_id)  # its $0.40 a month stops


def test_deleting_a_schedule_forgets_its_secret_in_both_stores(clients: Any) -> None:
    before = SecretsManagerSecretStore(clients("secretsmanager"), SM_PREFIX)
    moved, unmoved = random_schedule_id(), random_schedule_id()
    before.put(unmoved)
    after = aws_secret_store("ssm", SM_PREFIX, clients)
    after.put(moved)

    after.delete(moved)
    after.delete(unmoved)

    for schedule_id in (moved, unmoved):
        with pytest.raises(SecretNotFound):
            after.get(schedule_id)
        with pytest.raises(SecretNotFound):
            before.get(schedule_id)


def test_a_failure_of_the_old_store_is_not_taken_for_a_missing_secret(clients: Any) -> None:
    class Throttled(InMemorySecretStore):
        def get(self, schedule_id: str) -> str:
            raise RuntimeError("throttled")

    store = MovingSecretStore(InMemorySecretStore(), Throttled())

    with pytest.raises(RuntimeError, match="throttled"):
        store.get(random_schedule_id())


@pytest.mark.parametrize(
    ("kind", "tier"), [("ssm", "Standard"), ("ssm-intelligent-tiering", "Intelligent-Tiering")]
)
def test_the_deployment_setting_chooses_the_parameter_tier(
    clients: Any, kind: str, tier: str
) -> None:
    ssm = clients("ssm")
    asked: list[str] = []
    ssm.meta.events.register(
        "provide-client-params.ssm.PutParameter", lambda params, **_: asked.append(params["Tier"])
    )
    store = aws_secret_store(
        kind, SM_PREFIX, lambda service: ssm if service == "ssm" else clients(service)
    )

    store.put(random_schedule_id())

    assert asked == [tier]


def test_secrets_manager_can_still_be_chosen(clients: Any) -> None:
    store = aws_secret_store("secretsmanager", SM_PREFIX, clients)
    schedule_id = random_schedule_id()

    secret = store.put(schedule_id)

    assert isinstance(store, SecretsManagerSecretStore)
    stored = clients("secretsmanager").get_secret_value(SecretId=f"{SM_PREFIX}{schedule_id}")
    assert stored["SecretString"] == secret
    assert clients("ssm").describe_parameters()["Parameters"] == []


def test_an_unknown_store_is_refused_by_name(clients: Any) -> None:
    with pytest.raises(ValueError, match="'vault' is not one of ssm"):
        aws_secret_store("vault", SM_PREFIX, clients)


def test_ssm_refuses_a_path_it_keeps_for_itself(ssm: object) -> None:
    with pytest.raises(ValueError, match="aws or ssm"):
        SsmSecretStore(ssm, "/aws-hooks/webhooks")


def test_a_full_parameter_store_is_refused_with_the_setting_to_change(ssm: Any) -> None:
    # moto does not count parameters: AWS's answer past 10,000 standard ones
    # is stubbed.
    from botocore.stub import Stubber

    store = SsmSecretStore(ssm, PREFIX)
    with Stubber(ssm) as stub:
        stub.add_client_error("put_parameter", service_error_code="ParameterLimitExceeded")
        with pytest.raises(SecretStoreFull, match="duetime:secretStore"):
            store.put(random_schedule_id())
