"""A webhook's own headers often carry credentials: the API shows their names,
never their values, in every answer (create, edit, read, list, versions), on
SQLite and on DynamoDB; an edit that sends a header back as null keeps its
value, so what a client read can be sent back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from bootstrap.settings import Settings
from domain.errors import InvalidSchedule
from domain.targets import WebhookTarget, keep_header_values, parse_target
from handlers.api import ApiServices, build_services, handler
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition
from tests.handlers.test_api import REPORT, Api, rest_event

TOKEN = "Bearer do-not-show-me-0123456789"
HOOK = {
    "type": "webhook",
    "url": "https://hooks.example.com/duetime",
    "headers": {"Authorization": TOKEN, "X-Team": "sales-team-value"},
}
SECURED = {**REPORT, "target": HOOK}


@pytest.fixture
def api(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    db = tmp_path / "duetime.db"
    store = SqliteStore.open(db)
    secrets = InMemorySecretStore()
    yield Api(ApiServices(ScheduleService(store, clock), secrets), db, clock, secrets)
    store.close()


def stored_headers(api: Api, schedule_id: str) -> tuple[tuple[str, str], ...]:
    target = api.services.schedules.get(schedule_id).current.target
    assert isinstance(target, WebhookTarget)
    return target.headers


def shows_no_value(body: Any) -> bool:
    text = json.dumps(body)
    return TOKEN not in text and "sales-team-value" not in text


def test_no_answer_shows_a_header_value(api: Api) -> None:
    created = api.create(SECURED).body
    schedule_id = created["id"]
    api.clock.advance(60)
    edited = api.call(
        "PUT",
        f"/schedules/{schedule_id}",
        {**SECURED, "name": "renamed"},
        headers={"If-Match": "1"},
    )
    assert edited.status == 200, edited.body

    answers = [
        created,
        edited.body,
        api.call("GET", f"/schedules/{schedule_id}").body,
        api.call("GET", "/schedules").body,
        api.call("GET", f"/schedules/{schedule_id}/versions").body,
        api.call("GET", f"/schedules/{schedule_id}/versions/1").body,
        api.call("POST", f"/schedules/{schedule_id}/pause").body,
    ]

    assert all(shows_no_value(answer) for answer in answers)
    assert created["target"]["headers"] == {"Authorization": None, "X-Team": None}
    assert stored_headers(api, schedule_id) == (
        ("Authorization", TOKEN),
        ("X-Team", "sales-team-value"),
    )


def test_an_edit_that_sends_back_what_it_read_keeps_the_values(api: Api) -> None:
    created = api.create(SECURED).body
    read = api.call("GET", f"/schedules/{created['id']}").body
    target = {k: v for k, v in read["target"].items() if v is not None}

    answer = api.call(
        "PUT",
        f"/schedules/{created['id']}",
        {**SECURED, "target": {**target, "url": "https://hooks.example.com/v2"}},
        headers={"If-Match": "1"},
    )

    assert answer.status == 200, answer.body
    assert stored_headers(api, created["id"]) == (
        ("Authorization", TOKEN),
        ("X-Team", "sales-team-value"),
    )


def test_an_edit_replaces_a_value_it_sends_and_drops_a_header_it_leaves_out(api: Api) -> None:
    created = api.create(SECURED).body
    target = {**HOOK, "headers": {"authorization": None, "X-New": "1"}}

    answer = api.call(
        "PUT",
        f"/schedules/{created['id']}",
        {**SECURED, "target": target},
        headers={"If-Match": "1"},
    )

    assert answer.status == 200, answer.body
    assert dict(stored_headers(api, created["id"])) == {"authorization": TOKEN, "X-New": "1"}


def test_a_null_for_a_header_the_schedule_does_not_have_is_refused(api: Api) -> None:
    created = api.create(SECURED).body
    before = api.snapshot()
    target = {**HOOK, "headers": {"Authorization": None, "X-Missing": None}}

    answer = api.call(
        "PUT",
        f"/schedules/{created['id']}",
        {**SECURED, "target": target},
        headers={"If-Match": "1"},
    )

    assert answer.status == 422
    assert answer.error["field"] == "target.headers.X-Missing"
    assert "send its value" in answer.error["message"]
    assert api.snapshot() == before


def test_a_new_schedule_with_a_null_header_is_refused_and_nothing_is_stored(api: Api) -> None:
    before = api.snapshot()

    answer = api.call(
        "POST", "/schedules", {**SECURED, "target": {**HOOK, "headers": {"Authorization": None}}}
    )

    assert answer.status == 422
    assert answer.error["field"] == "target.headers.Authorization"
    assert api.snapshot() == before
    assert api.secrets._secrets == {}


def test_keeping_values_reads_pairs_and_names_in_any_case() -> None:
    current = parse_target(HOOK)
    sent = definition(
        {**SECURED, "target": {**HOOK, "headers": [["AUTHORIZATION", None], ["X-Other", "2"]]}}
    )

    kept = keep_header_values(sent.target, sent.kept_headers, current)

    assert isinstance(kept, WebhookTarget)
    assert kept.headers == (("AUTHORIZATION", TOKEN), ("X-Other", "2"))
    unknown = definition({**SECURED, "target": {**HOOK, "headers": {"X-Team": None}}})
    with pytest.raises(InvalidSchedule) as refused:
        keep_header_values(unknown.target, unknown.kept_headers, parse_target(REPORT["target"]))
    assert refused.value.field == "target.headers.X-Team"


# --- the Lambda API over DynamoDB (moto) ---------------------------------------------


@pytest.fixture
def dynamodb_api(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServices]:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "api-headers")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
        )
        yield build_services(settings, clock=clock, secrets=InMemorySecretStore())


def call(services: ApiServices, method: str, path: str, body: Any = None, **headers: str) -> Any:
    event = rest_event(
        method,
        path,
        body=None if body is None else json.dumps(body),
        headers={"Content-Type": "application/json", **headers},
    )
    response = handler(event, None, service=services)
    return response["statusCode"], json.loads(response["body"])


def test_on_dynamodb_no_answer_shows_a_header_value_and_an_edit_keeps_it(
    dynamodb_api: ApiServices,
) -> None:
    status, created = call(dynamodb_api, "POST", "/schedules", SECURED)
    assert status == 201, created
    _, read = call(dynamodb_api, "GET", f"/schedules/{created['id']}")
    target = {k: v for k, v in read["target"].items() if v is not None}
    status, edited = call(
        dynamodb_api,
        "PUT",
        f"/schedules/{created['id']}",
        {**SECURED, "name": "renamed", "target": target},
        **{"If-Match": "1"},
    )
    assert status == 200, edited
    _, versions = call(dynamodb_api, "GET", f"/schedules/{created['id']}/versions")

    assert all(shows_no_value(answer) for answer in (created, read, edited, versions))
    current = dynamodb_api.schedules.get(created["id"]).current.target
    assert isinstance(current, WebhookTarget)
    assert dict(current.headers) == HOOK["headers"]
