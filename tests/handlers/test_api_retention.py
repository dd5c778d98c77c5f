"""The API's answer to a backfill that reaches before the local store's purge cutoff."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from handlers.api import ApiServices, handler
from service.schedules import ScheduleService
from tests.conftest import FakeClock
from tests.handlers.test_api import REPORT, rest_event


def _call(services: ApiServices, method: str, path: str, body: object) -> tuple[int, dict]:
    event = rest_event(
        method, path, body=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    response = handler(event, None, service=services)
    return response["statusCode"], json.loads(response["body"])


def _occurrences(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as raw:
        return sorted(raw.execute("SELECT * FROM occurrences").fetchall(), key=repr)


def test_a_backfill_before_the_retention_is_refused_naming_start_at(
    tmp_path: Path, clock: FakeClock
) -> None:
    db = tmp_path / "duetime.db"
    store = SqliteStore.open(db)
    services = ApiServices(ScheduleService(store, clock), InMemorySecretStore())
    status, created = _call(services, "POST", "/schedules", REPORT)
    assert status == 201
    clock.advance(timedelta(days=40))
    store.retention.purge_history(clock.now() - timedelta(days=30))
    before = _occurrences(db)

    status, answer = _call(
        services,
        "POST",
        f"/schedules/{created['id']}/backfill",
        {"start_at": "2026-12-01T00:00:00Z", "end_at": "2026-12-20T00:00:00Z"},
    )

    assert status == 422, answer
    assert answer["error"]["field"] == "start_at"
    assert "retention" in answer["error"]["message"]
    assert _occurrences(db) == before
    store.close()
