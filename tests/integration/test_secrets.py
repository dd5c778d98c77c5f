"""Webhook signing secrets: generated once, stored encrypted, readable only by name."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import WEBHOOK_SECRETS, create_table
from adapters.secrets import (
    DynamoSecretStore,
    InMemorySecretStore,
    MovingSecretStore,
    SecretNotFound,
    SecretsManagerSecretStore,
    SecretStore,
    SecretStoreFull,
    SigningKey,
    SsmSecretStore,
    aws_secret_store,
    create_signing_key,
    derive_secret,
    new_secret,
    signing_key_name,
)
from adapters.sqlite.secrets import SqliteSecretStore
from adapters.targets.signing import shown_secret

PREFIX = "/duetime/test/webhook-secrets"
SM_PREFIX = "duetime/test/webhooks/"
TABLE = "duetime-test-webhook-secrets"


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
def dynamodb(aws_env: None) -> Iterator[Any]:
    """A DynamoDB client on moto, with the secrets table as the stack makes it
    and the deployment's signing key in Secrets Manager."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        create_table(client, WEBHOOK_SECRETS, TABLE)
        create_signing_key(boto3.client("secretsmanager", region_name="eu-west-1"), SM_PREFIX)
        yield client


@pytest.fixture
def clients(aws_env: None) -> Iterator[Any]:
    """boto3 clients by service name, on one moto account (with the secrets table
    and the signing key)."""
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="eu-west-1"), WEBHOOK_SECRETS, TABLE)
        create_signing_key(boto3.client("secretsmanager", region_name="eu-west-1"), SM_PREFIX)
        yield lambda service: boto3.client(service, region_name="eu-west-1")


def derived_store(dynamodb: Any) -> DynamoSecretStore:
    secretsmanager = boto3.client("secretsmanager", region_name="eu-west-1")
    return DynamoSecretStore(
        dynamodb, TABLE, SigningKey(secretsmanager, signing_key_name(SM_PREFIX))
    )


@pytest.fixture(
    params=["memory", "sqlite", "dynamodb", "ssm", "secretsmanager", "moving", "moving-dynamodb"]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SecretStore:
    if request.param == "memory":
        return InMemorySecretStore()
    if request.param == "sqlite":
        return SqliteSecretStore(tmp_path / "duetime.db")
    if request.param == "dynamodb":
        return derived_store(request.getfixturevalue("dynamodb"))
    if request.param == "ssm":
        return SsmSecretStore(request.getfixturevalue("ssm"), PREFIX)
    if request.param == "moving":
        return aws_secret_store("ssm", SM_PREFIX, request.getfixturevalue("clients"))
    if request.param == "moving-dynamodb":
        clients = request.getfixturevalue("clients")
        return aws_secret_store("dynamodb", SM_PREFIX, clients, table=TABLE)
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


def test_a_bad_schedule_id_names_no_secret(store: SecretStore) -> None:
    if isinstance(store, (InMemorySecretStore, SqliteSecretStore)):
        pytest.skip("a local store names nothing by the schedule id")
    for bad in ("", "../other-prefix/x", "a b", "x" * 129):
        with pytest.raises(ValueError, match="cannot name a secret"):
            store.put(bad)
        with pytest.raises(ValueError, match="cannot name a secret"):
            store.get(bad)
        with pytest.raises(ValueError, match="cannot name a secret"):
            store.delete(bad)


# --- DynamoDB: one item per schedule in the stack's secrets table ----------------------------


def test_dynamodb_keeps_only_a_generation_number_never_the_secret(dynamodb: Any) -> None:
    store = derived_store(dynamodb)
    schedule_id = random_schedule_id()

    secret = store.put(schedule_id)

    items = dynamodb.scan(TableName=TABLE)["Items"]
    assert items == [{"pk": {"S": schedule_id}, "generation": {"N": "1"}}]
    assert secret not in repr(items)
    assert shown_secret(secret).removeprefix("whsec_") not in repr(items)


def test_dynamodb_secret_is_derived_from_the_signing_key_and_generation(dynamodb: Any) -> None:
    key = boto3.client("secretsmanager", region_name="eu-west-1").get_secret_value(
        SecretId=signing_key_name(SM_PREFIX)
    )["SecretString"]
    store = derived_store(dynamodb)
    schedule_id = random_schedule_id()

    secret = store.put(schedule_id)

    assert secret == derive_secret(key.encode(), schedule_id, 1)
    assert len(secret) == len(new_secret()) == 43  # the shape receivers already have
    other = DynamoSecretStore(dynamodb, TABLE, lambda: b"another deployment's key")
    assert other.get(schedule_id) != secret  # the table alone signs nothing


def test_dynamodb_second_put_bumps_the_generation_it_does_not_add_an_item(dynamodb: Any) -> None:
    store = derived_store(dynamodb)
    schedule_id = random_schedule_id()
    store.put(schedule_id)

    second = store.put(schedule_id)

    assert dynamodb.scan(TableName=TABLE)["Items"] == [
        {"pk": {"S": schedule_id}, "generation": {"N": "2"}}
    ]
    assert store.get(schedule_id) == second


def test_dynamodb_item_of_earlier_releases_is_read_until_rotated_then_gone(dynamodb: Any) -> None:
    # Given a secret stored in clear, as earlier releases kept it
    schedule_id = random_schedule_id()
    dynamodb.put_item(
        TableName=TABLE, Item={"pk": {"S": schedule_id}, "secret": {"S": "old-plain-secret"}}
    )
    store = derived_store(dynamodb)

    # it still signs
    assert store.get(schedule_id) == "old-plain-secret"

    # and a rotation replaces it with a derived one, removing the clear text
    rotated = store.put(schedule_id)
    assert rotated != "old-plain-secret"
    assert dynamodb.scan(TableName=TABLE)["Items"] == [
        {"pk": {"S": schedule_id}, "generation": {"N": "1"}}
    ]
    assert store.get(schedule_id) == rotated


def test_the_signing_key_is_read_once_per_ttl() -> None:
    reads: list[str] = []

    class Client:
        def get_secret_value(self, SecretId: str) -> dict[str, str]:
            reads.append(SecretId)
            return {"SecretString": f"key-{len(reads)}"}

    now = [0.0]
    key = SigningKey(Client(), "k", ttl_s=300, monotonic=lambda: now[0])

    assert key() == key() == b"key-1"
    now[0] = 299.0
    assert key() == b"key-1"
    now[0] = 300.0
    assert key() == b"key-2"
    assert reads == ["k", "k"]


def test_derive_refuses_a_generation_below_one() -> None:
    with pytest.raises(ValueError, match="generation"):
        derive_secret(b"k", "sch_x", 0)


def test_dynamodb_reads_eventually_and_strongly_only_when_nothing_was_found(
    dynamodb: Any,
) -> None:
    # Half a read unit for a secret that is there; a missing item may be one the
    # API stored moments before the first delivery, not yet replicated.
    asked: list[Any] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.GetItem",
        lambda params, **_: asked.append(params.get("ConsistentRead")),
    )
    store = derived_store(dynamodb)
    schedule_id = random_schedule_id()
    store.put(schedule_id)

    store.get(schedule_id)
    assert asked == [False]
    with pytest.raises(SecretNotFound):
        store.get(random_schedule_id())
    assert asked == [False, False, True]


class _Lagging:
    """A DynamoDB client whose eventually consistent reads have not yet seen any write."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def get_item(self, **params: Any) -> dict[str, Any]:
        if not params.get("ConsistentRead"):
            return {}
        answer: dict[str, Any] = self._client.get_item(**params)
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_dynamodb_finds_a_new_secret_its_replica_has_not_seen_yet(dynamodb: Any) -> None:
    writer = derived_store(dynamodb)
    schedule_id = random_schedule_id()
    secret = writer.put(schedule_id)
    secretsmanager = boto3.client("secretsmanager", region_name="eu-west-1")
    lagging = DynamoSecretStore(
        _Lagging(dynamodb), TABLE, SigningKey(secretsmanager, signing_key_name(SM_PREFIX))
    )

    assert lagging.get(schedule_id) == secret


def test_dynamodb_store_needs_its_table(dynamodb: Any) -> None:
    with pytest.raises(ValueError, match="table"):
        DynamoSecretStore(dynamodb, "", lambda: b"k")
    with pytest.raises(ValueError, match="DUETIME_SECRETS_TABLE"):
        aws_secret_store("dynamodb", SM_PREFIX, lambda _: dynamodb)


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


# --- a stack that kept its secrets in SSM (and Secrets Manager), now on DynamoDB -------------


def test_secrets_stored_in_ssm_and_secrets_manager_before_are_still_read(clients: Any) -> None:
    in_ssm, in_secrets_manager = random_schedule_id(), random_schedule_id()
    ssm_secret = aws_secret_store("ssm", SM_PREFIX, clients).put(in_ssm)
    sm_secret = SecretsManagerSecretStore(clients("secretsmanager"), SM_PREFIX).put(
        in_secrets_manager
    )

    after = aws_secret_store("dynamodb", SM_PREFIX, clients, table=TABLE)

    assert after.get(in_ssm) == ssm_secret
    assert after.get(in_secrets_manager) == sm_secret
    assert clients("dynamodb").scan(TableName=TABLE)["Items"] == []  # a read moves nothing


def test_a_new_secret_moves_the_schedule_from_ssm_to_the_table(clients: Any) -> None:
    schedule_id = random_schedule_id()
    old = aws_secret_store("ssm", SM_PREFIX, clients).put(schedule_id)
    after = aws_secret_store("dynamodb", SM_PREFIX, clients, table=TABLE)

    new = after.put(schedule_id)

    assert new != old
    assert after.get(schedule_id) == new
    assert derived_store(clients("dynamodb")).get(schedule_id) == new
    assert clients("ssm").describe_parameters()["Parameters"] == []  # the old copy is gone


def test_a_new_secret_moves_the_schedule_from_secrets_manager_to_the_table(clients: Any) -> None:
    before = SecretsManagerSecretStore(clients("secretsmanager"), SM_PREFIX)
    schedule_id = random_schedule_id()
    old = before.put(schedule_id)
    after = aws_secret_store("dynamodb", SM_PREFIX, clients, table=TABLE)

    new = after.put(schedule_id)

    assert new != old
    assert derived_store(clients("dynamodb")).get(schedule_id) == new
    with pytest.raises(SecretNotFound):
        before.get(schedule_id)


def test_the_table_is_read_before_the_old_stores(clients: Any) -> None:
    # A schedule moved to the table keeps no old copy; were one left behind (a
    # delete that failed), the table's secret is the one that signs.
    schedule_id = random_schedule_id()
    after = aws_secret_store("dynamodb", SM_PREFIX, clients, table=TABLE)
    new = after.put(schedule_id)
    aws_secret_store("ssm", SM_PREFIX, clients).put(schedule_id)

    assert after.get(schedule_id) == new


def test_deleting_a_schedule_forgets_its_secret_in_all_three_stores(clients: Any) -> None:
    ssm_only = aws_secret_store("ssm", SM_PREFIX, clients)
    before = SecretsManagerSecretStore(clients("secretsmanager"), SM_PREFIX)
    moved, in_ssm, in_secrets_manager = (random_schedule_id() for _ in range(3))
    ssm_only.put(in_ssm)
    before.put(in_secrets_manager)
    after = aws_secret_store("dynamodb", SM_PREFIX, clients, table=TABLE)
    after.put(moved)

    for schedule_id in (moved, in_ssm, in_secrets_manager):
        after.delete(schedule_id)

    for schedule_id in (moved, in_ssm, in_secrets_manager):
        with pytest.raises(SecretNotFound):
            after.get(schedule_id)
    assert clients("dynamodb").scan(TableName=TABLE)["Items"] == []
    assert clients("ssm").describe_parameters()["Parameters"] == []
    # What is left in Secrets Manager is the deployment's signing key alone.
    left = [found["Name"] for found in clients("secretsmanager").list_secrets()["SecretList"]]
    assert left == [signing_key_name(SM_PREFIX)]


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
    assert clients("dynamodb").scan(TableName=TABLE)["Items"] == []


def test_ssm_can_still_be_chosen_and_leaves_the_table_alone(clients: Any) -> None:
    store = aws_secret_store("ssm", SM_PREFIX, clients, table=TABLE)

    store.put(random_schedule_id())

    assert len(clients("ssm").describe_parameters()["Parameters"]) == 1
    assert clients("dynamodb").scan(TableName=TABLE)["Items"] == []


def test_an_unknown_store_is_refused_by_name(clients: Any) -> None:
    with pytest.raises(ValueError, match="'vault' is not one of dynamodb, ssm"):
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
