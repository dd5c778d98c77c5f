"""A schedule names a target the running deployment can deliver to, or it is
refused when saved (not accepted and then failed at every run)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from bootstrap.local import build_sqlite_worker
from bootstrap.settings import Settings
from handlers.api import SQLITE_FILE, SQLITE_TARGETS, build_services
from tests.conftest import FakeClock, definition
from tests.handlers.test_api import REPORT, Api

OTHER_TARGETS: dict[str, dict[str, Any]] = {
    "sqs": {
        "type": "sqs",
        "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs",
    },
    "lambda": {
        "type": "lambda",
        "function_arn": "arn:aws:lambda:eu-west-1:123456789012:function:job",
    },
    "eventbridge": {"type": "eventbridge", "event_bus_name": "default"},
}


@pytest.fixture
def local_api(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    """The API as the SQLite local stack builds it."""
    secrets = InMemorySecretStore()
    services = build_services(Settings(), data_dir=tmp_path, clock=clock, secrets=secrets)
    yield Api(services, tmp_path / SQLITE_FILE, clock, secrets)
    store = services.schedules.store
    assert isinstance(store, SqliteStore)
    store.close()


@pytest.mark.parametrize("kind", sorted(OTHER_TARGETS))
def test_the_sqlite_stack_refuses_a_target_it_cannot_deliver_to_on_create(
    local_api: Api, kind: str
) -> None:
    before = local_api.snapshot()
    answer = local_api.call("POST", "/schedules", {**REPORT, "target": OTHER_TARGETS[kind]})
    assert answer.status == 422
    assert answer.error["code"] == "validation_error"
    assert answer.error["field"] == "target.type"
    assert answer.error["message"] == (
        f"target.type: {kind} targets cannot be delivered by this deployment (it delivers "
        "to: webhook); to use them, deploy duetime to AWS (cdk deploy), or try them on this "
        "machine with `duetime local --store emulator`, which delivers them to its own "
        "emulated services, not to AWS"
    )
    assert local_api.snapshot() == before


@pytest.mark.parametrize("kind", sorted(OTHER_TARGETS))
def test_the_sqlite_stack_refuses_an_edit_to_a_target_it_cannot_deliver_to(
    local_api: Api, kind: str
) -> None:
    created = local_api.create().body
    before = local_api.snapshot()
    answer = local_api.call(
        "PUT",
        f"/schedules/{created['id']}",
        {**REPORT, "target": OTHER_TARGETS[kind]},
        headers={"If-Match": '"1"'},
    )
    assert answer.status == 422
    assert answer.error["field"] == "target.type"
    assert local_api.snapshot() == before
    shown = local_api.call("GET", f"/schedules/{created['id']}").body
    assert shown["version"] == 1 and shown["target"]["type"] == "webhook"


def test_the_sqlite_stack_refuses_only_what_its_worker_cannot_deliver(tmp_path: Path) -> None:
    # The API's list is the worker's: the SQLite worker builds a sender per type it delivers.
    worker, _ = build_sqlite_worker(tmp_path / "duetime.db", InMemorySecretStore())
    assert worker.targets.types == SQLITE_TARGETS.types == {"webhook"}  # type: ignore[attr-defined]


def test_a_deployment_on_dynamodb_accepts_every_target_type(clock: FakeClock) -> None:
    # On AWS (and the emulator) the worker builds a sender for every type.
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "targets")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
        )
        services = build_services(settings, clock=clock, secrets=InMemorySecretStore())
        for target in OTHER_TARGETS.values():
            schedule, created = services.schedules.create(definition({**REPORT, "target": target}))
            assert created and schedule.current.target.type == target["type"]


def _target_types(document: dict[str, Any]) -> list[str]:
    target = document["components"]["schemas"]["TargetIn"]
    return [shape["properties"]["type"]["const"] for shape in target["oneOf"]]


def test_the_served_document_offers_only_the_target_types_this_deployment_delivers(
    local_api: Api,
) -> None:
    answer = local_api.call("GET", "/openapi.json")
    assert answer.status == 200
    assert _target_types(answer.body) == sorted(SQLITE_TARGETS.types)
    assert (
        "This deployment delivers to: webhook."
        in (answer.body["components"]["schemas"]["TargetIn"]["description"])
    )


def test_the_served_document_on_dynamodb_offers_every_target_type(clock: FakeClock) -> None:
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "targets-doc")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
        )
        services = build_services(settings, clock=clock, secrets=InMemorySecretStore())
        answer = Api(services, Path("unused"), clock, InMemorySecretStore()).call(
            "GET", "/openapi.json"
        )
    assert sorted(_target_types(answer.body)) == sorted(["webhook", *OTHER_TARGETS])
