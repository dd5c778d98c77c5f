"""``next_due`` in a schedule's answer is the next slot that will run: with a
lookahead, and more for a schedule planned early, slots are created
(admitted and queued) ahead, and the first slot not created yet can be
minutes after them. On both stores (SQLite, and DynamoDB on moto), with and
without planning early, through the handler as each deployment builds it."""

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
from bootstrap.parts import tick_config
from bootstrap.settings import Settings
from handlers.api import ApiServices, build_services, handler
from service.planning.ticker import Ticker
from tests.conftest import FakeClock, FakeQueue, utc
from tests.handlers.test_api import rest_event

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
EVERY_MINUTE = {"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}


@pytest.fixture(params=["sqlite-local", "sqlite-early", "dynamodb-local", "dynamodb-early"])
def deployment(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> Iterator[tuple[ApiServices, Settings]]:
    kind, planning = str(request.param).split("-")
    settings = Settings(shards=2, plan_early=planning == "early")
    if kind == "sqlite":
        built = build_services(
            settings, data_dir=tmp_path, clock=clock, secrets=InMemorySecretStore()
        )
        yield built, settings
        store = built.schedules.store
        assert isinstance(store, SqliteStore)
        store.close()
        return
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "next-due")
        settings = settings.model_copy(
            update={
                "schedules_table": tables.schedules,
                "occurrences_table": tables.occurrences,
                "leases_table": tables.leases,
            }
        )
        yield build_services(settings, clock=clock, secrets=InMemorySecretStore()), settings


def call(services: ApiServices, method: str, path: str, body: Any = None) -> Any:
    path, _, query = path.partition("?")
    event = rest_event(
        method,
        path,
        body=None if body is None else json.dumps(body),
        headers={"Content-Type": "application/json"},
        query=dict(part.split("=", 1) for part in query.split("&")) if query else None,
    )
    response = handler(event, None, service=services)
    return response["statusCode"], json.loads(response["body"])


def shown(services: ApiServices, schedule_id: str) -> tuple[str, str]:
    """``next_due`` as GET /schedules/{id} and the listing show it."""
    _, one = call(services, "GET", f"/schedules/{schedule_id}")
    _, listing = call(services, "GET", "/schedules")
    [listed] = [s for s in listing["schedules"] if s["id"] == schedule_id]
    return one["next_due"], listed["next_due"]


def test_next_due_is_the_next_slot_that_will_run_even_when_slots_are_queued_ahead(
    deployment: tuple[ApiServices, Settings], clock: FakeClock
) -> None:
    services, settings = deployment
    status, created = call(
        services, "POST", "/schedules", {"name": "job", "spec": EVERY_MINUTE, "target": WEBHOOK}
    )
    assert status == 201
    sid = created["id"]
    ticker = Ticker(services.schedules.store, FakeQueue(), clock, tick_config(settings), owner="t")
    ticker.tick_once()  # 08:00: 08:01 (and planning early, 08:02) created, queued
    stored = services.schedules.store.schedules.get(sid)
    assert stored is not None and stored.next_due is not None
    assert stored.next_due > utc("2026-12-01T08:01:00Z")  # the store's: the first not created
    clock.set(utc("2026-12-01T08:00:30Z"))
    assert shown(services, sid) == ("2026-12-01T08:01:00Z", "2026-12-01T08:01:00Z")
    # Strictly after: at 08:01:00 exactly, the next one is 08:02.
    clock.set(utc("2026-12-01T08:01:00Z"))
    ticker.tick_once()
    assert shown(services, sid) == ("2026-12-01T08:02:00Z", "2026-12-01T08:02:00Z")


def test_a_paused_schedule_shows_next_due_as_stored(
    deployment: tuple[ApiServices, Settings], clock: FakeClock
) -> None:
    services, settings = deployment
    _, created = call(
        services, "POST", "/schedules", {"name": "job", "spec": EVERY_MINUTE, "target": WEBHOOK}
    )
    sid = created["id"]
    Ticker(
        services.schedules.store, FakeQueue(), clock, tick_config(settings), owner="t"
    ).tick_once()
    status, paused = call(services, "POST", f"/schedules/{sid}/pause", {})
    assert status == 200
    stored = services.schedules.store.schedules.get(sid)
    assert stored is not None and stored.next_due is not None
    expected = stored.next_due.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert paused["next_due"] == expected
    assert shown(services, sid) == (expected, expected)


def test_a_one_off_40_s_ahead_shows_as_next_and_as_planned(
    deployment: tuple[ApiServices, Settings], clock: FakeClock
) -> None:
    # Given a one-off 40 s ahead, planned (by its call, or by the next pass)
    services, settings = deployment
    body = {"name": "once", "spec": {"at": "2026-12-01T08:00:40Z"}, "target": WEBHOOK}
    status, created = call(services, "POST", "/schedules", body)
    assert status == 201
    sid = created["id"]
    Ticker(
        services.schedules.store, FakeQueue(), clock, tick_config(settings), owner="t"
    ).tick_once()
    # Then next_due says it is next (planned: not among the ones not planned yet)
    _, one = call(services, "GET", f"/schedules/{sid}")
    assert one["next_due"] == "2026-12-01T08:00:40Z"
    assert one["next_occurrences"] == []
    # And the run listing shows it planned (not admitted yet) when asked for planned runs
    _, listed = call(services, "GET", f"/schedules/{sid}/runs?include=planned")
    [run] = listed["runs"]
    assert (run["status"], run["admitted_at"], run["scheduled_at"]) == (
        "planned",
        None,
        "2026-12-01T08:00:40Z",
    )
    _, default = call(services, "GET", f"/schedules/{sid}/runs")
    assert default["runs"] == []
    # When its instant comes, it is admitted as of that instant, not 40 s before
    clock.set(utc("2026-12-01T08:00:40Z"))
    _, listed = call(services, "GET", f"/schedules/{sid}/runs")
    [run] = listed["runs"]
    assert (run["status"], run["admitted_at"]) == ("admitted", "2026-12-01T08:00:40Z")
