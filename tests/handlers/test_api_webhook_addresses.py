"""A webhook URL whose host is an address the deployment never delivers to is
refused when saved (422 naming target.url, nothing stored), on the local
stack's SQLite API and on the Lambda API over DynamoDB (moto), by the rule
the worker applies at delivery; a name is still judged at each delivery.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.secrets import InMemorySecretStore
from adapters.targets import AddressPolicy, WebhookSender
from adapters.targets.webhook import system_resolver
from bootstrap.settings import Settings
from domain.delivery import Delivery
from domain.targets import WebhookTarget
from handlers.api import ApiServices, build_services, handler
from tests.conftest import FakeClock, utc
from tests.handlers.test_api import REPORT, rest_event

# Never delivered to, by any deployment's rule (loopback apart).
NEVER = [
    "169.254.169.254",  # EC2 instance metadata
    "[fd00:ec2::254]",  # the same over IPv6
    "169.254.170.2",  # ECS task credentials
    "169.254.10.20",  # link-local
    "[fe80::1]",
    "[fe80::1%25eth0]",
    "0.0.0.0",
    "0",
    "[::]",
    "224.0.0.1",  # multicast
    "[ff02::1]",
    "[::ffff:169.254.169.254]",  # IPv4-mapped IPv6
    "[::ffff:a9fe:a9fe]",
    "2852039166",  # 169.254.169.254 in decimal
    "0xa9fea9fe",  # ... in hex
    "0251.0376.0251.0376",  # ... in octal
    "169.254.43518",  # ... in the short form
    "169.254.169.254.",  # with a final dot
]
# Private: refused unless the deployment allows private targets.
PRIVATE = [
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.10",
    "100.64.0.1",  # shared address space (CGNAT)
    "[fc00::1]",  # unique local
    "[fd12:3456::1]",
    "[::ffff:10.0.0.1]",
    "[64:ff9b::a00:1]",  # NAT64 of 10.0.0.1
    "167772161",  # 10.0.0.1 in decimal
    "012.0.0.1",  # ... in octal
    "0x0a.0.0.1",  # ... in hex
    "10.1",  # ... in the short form
]
LOOPBACK = ["127.0.0.1", "127.1.2.3", "[::1]", "2130706433", "0x7f.1", "[::ffff:127.0.0.1]"]


def webhook(host: str) -> dict[str, Any]:
    return {**REPORT, "target": {"type": "webhook", "url": f"http://{host}:8080/hook"}}


def call(
    services: ApiServices,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    event = rest_event(
        method,
        path,
        body=None if body is None else json.dumps(body),
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    response = handler(event, None, service=services)
    return response["statusCode"], json.loads(response["body"])


def assert_refused(status: int, body: Any, host: str) -> None:
    assert status == 422, body
    assert body["error"]["field"] == "target.url"
    message = body["error"]["message"]
    assert message.startswith("target.url: ") and "where webhooks are not delivered" in message
    assert host.strip("[]").split("%")[0].rstrip(".") in message


# --- the local stack: SQLite -------------------------------------------------------------


@pytest.fixture
def local(tmp_path: Path, clock: FakeClock) -> ApiServices:
    return build_services(Settings(), data_dir=tmp_path, clock=clock)


def rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the local stack's file."""
    with sqlite3.connect(db) as connection:
        names = [
            r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        return {
            name: sorted(connection.execute(f"SELECT * FROM {name}").fetchall(), key=repr)
            for name in names
        }


@pytest.mark.parametrize("host", NEVER + PRIVATE)
def test_the_local_stack_refuses_an_address_it_never_delivers_to(
    local: ApiServices, tmp_path: Path, host: str
) -> None:
    before = rows(tmp_path / "duetime.db")

    status, body = call(local, "POST", "/schedules", webhook(host))

    assert_refused(status, body, host)
    assert rows(tmp_path / "duetime.db") == before


@pytest.mark.parametrize("host", LOOPBACK)
def test_the_local_stack_takes_a_receiver_on_this_machine(local: ApiServices, host: str) -> None:
    status, body = call(local, "POST", "/schedules", webhook(host))

    assert status == 201, body


@pytest.mark.parametrize("host", ["169.254.169.254", "10.0.0.1", "[::ffff:10.0.0.1]"])
def test_an_edit_to_such_an_address_is_refused_and_changes_nothing(
    local: ApiServices, tmp_path: Path, host: str
) -> None:
    status, created = call(local, "POST", "/schedules", webhook("127.0.0.1"))
    assert status == 201, created
    before = rows(tmp_path / "duetime.db")

    status, body = call(
        local, "PUT", f"/schedules/{created['id']}", webhook(host), headers={"If-Match": "1"}
    )

    assert_refused(status, body, host)
    assert rows(tmp_path / "duetime.db") == before
    _, now = call(local, "GET", f"/schedules/{created['id']}")
    assert now["version"] == 1 and now["target"]["url"] == created["target"]["url"]


# --- the Lambda API over DynamoDB (moto) -------------------------------------------------


@pytest.fixture
def tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        made = create_store_tables(boto3.client("dynamodb"), "api-addresses")
        yield Settings(
            schedules_table=made.schedules,
            occurrences_table=made.occurrences,
            leases_table=made.leases,
        )


def items(settings: Settings) -> int:
    client = boto3.client("dynamodb")
    tables = (settings.schedules_table, settings.occurrences_table, settings.leases_table)
    return sum(client.scan(TableName=table)["Count"] for table in tables)


@pytest.mark.parametrize("host", NEVER + PRIVATE + LOOPBACK)
def test_on_aws_every_such_address_and_loopback_is_refused(
    tables: Settings, clock: FakeClock, host: str
) -> None:
    secrets = InMemorySecretStore()
    services = build_services(tables, clock=clock, secrets=secrets)

    status, body = call(services, "POST", "/schedules", webhook(host))

    assert_refused(status, body, host)
    assert items(tables) == 0 and secrets._secrets == {}


def test_on_aws_an_edit_to_a_metadata_address_is_refused(
    tables: Settings, clock: FakeClock
) -> None:
    services = build_services(tables, clock=clock, secrets=InMemorySecretStore())
    status, created = call(services, "POST", "/schedules", webhook("hooks.example.com"))
    assert status == 201, created

    status, body = call(
        services,
        "PUT",
        f"/schedules/{created['id']}",
        webhook("169.254.169.254"),
        headers={"If-Match": "1"},
    )

    assert_refused(status, body, "169.254.169.254")
    _, now = call(services, "GET", f"/schedules/{created['id']}")
    assert now["version"] == 1


@pytest.mark.parametrize(
    ("host", "status"),
    [("10.0.0.1", 201), ("127.0.0.1", 201), ("[fc00::1]", 201), ("169.254.169.254", 422)],
)
def test_a_stack_that_allows_private_targets_takes_them_and_still_refuses_metadata(
    tables: Settings, clock: FakeClock, host: str, status: int
) -> None:
    settings = tables.model_copy(update={"allow_private_targets": True})
    services = build_services(settings, clock=clock, secrets=InMemorySecretStore())

    answer, body = call(services, "POST", "/schedules", webhook(host))

    assert answer == status, body


# --- one rule at save and at delivery ----------------------------------------------------


@pytest.mark.parametrize(
    "policy",
    [AddressPolicy(), AddressPolicy.local(), AddressPolicy(allow_private=True)],
    ids=["aws", "local", "aws-private"],
)
@pytest.mark.parametrize(
    "host",
    [h for h in NEVER + PRIVATE + LOOPBACK if not h.endswith(".")]
    + ["93.184.215.14", "[2606:4700::1]"],
)
def test_a_url_is_refused_at_save_exactly_when_delivery_would_refuse_its_address(
    policy: AddressPolicy, host: str
) -> None:
    url = f"http://{host}:8080/hook"
    # What a delivery connects to: the resolver answers a numeric host without
    # a lookup (a final dot would make it a name, left out here).
    [address] = system_resolver(urlsplit(url).hostname or "", 8080)

    assert (policy.url_refusal(url) is None) == (policy.refusal(address) is None)


def delivery() -> Delivery:
    return Delivery(
        occurrence_id="sch_a.v1.20261201T080000Z",
        schedule_id="sch_a",
        version=1,
        scheduled_at=utc("2026-12-01T08:00:00Z"),
        attempt=1,
        late_by_s=0.0,
    )


def test_a_name_is_taken_at_save_and_refused_at_delivery_when_it_resolves_to_one(
    tmp_path: Path, clock: FakeClock
) -> None:
    services = build_services(Settings(), data_dir=tmp_path, clock=clock)
    status, created = call(services, "POST", "/schedules", webhook("internal.example.com"))
    assert status == 201, created
    sender = WebhookSender(
        InMemorySecretStore({"sch_a": "secret"}),
        services.address_policy,
        resolver=lambda host, port: ["93.184.215.14", "169.254.169.254"],
    )

    outcome = sender.deliver(WebhookTarget(created["target"]["url"]), delivery(), timeout_s=1)

    assert outcome.kind == "permanent"
    assert outcome.error == (
        "refused to call internal.example.com: 169.254.169.254 is a cloud metadata address"
    )
