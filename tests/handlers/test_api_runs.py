"""Long jobs report progress and completion through the API with their run token."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from domain.run import PendingOccurrence
from handlers.api import ApiServices
from service.runs import RunReports, hash_run_token
from service.schedules import ScheduleService
from tests.conftest import FakeClock
from tests.handlers.test_api import Api

TOKEN = "run-token-for-the-test"


@pytest.fixture
def api(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    db = tmp_path / "duetime.db"
    store = SqliteStore.open(db)
    secrets = InMemorySecretStore()
    services = ApiServices(
        ScheduleService(store, clock), secrets, RunReports(SqliteRunStore(store), clock)
    )
    yield Api(services, db, clock, secrets)
    store.close()


def running_run(api: Api) -> str:
    """A triggered run, admitted and started by a worker that handed out ``TOKEN``."""
    schedule = api.create().body
    run = api.call("POST", f"/schedules/{schedule['id']}/trigger").body
    occurrence_id: str = run["occurrence_id"]
    store = api.services.schedules.store
    now = api.clock.now()
    pending = store.records.get_run(occurrence_id)
    assert pending is not None
    assert store.records.admit([PendingOccurrence.of(pending)], now) == [occurrence_id]
    started = SqliteRunStore(store).start_attempt(  # type: ignore[arg-type]
        occurrence_id,
        now=now,
        lease_until=now + timedelta(minutes=15),
        run_token_hash=hash_run_token(TOKEN),
    )
    assert started is not None
    return occurrence_id


def test_progress_then_completion_with_the_run_token(api: Api) -> None:
    occurrence_id = running_run(api)
    api.clock.advance(30)
    answer = api.call(
        "POST", f"/runs/{occurrence_id}/progress", {"run_token": TOKEN, "progress": {"done": 40}}
    )
    assert answer.status == 200, answer.body
    assert answer.body["status"] == "running"
    assert answer.body["progress"] == {"done": 40}
    assert answer.body["started_at"] == "2026-12-01T08:00:00Z"

    api.clock.advance(30)
    done = api.call(
        "POST",
        f"/runs/{occurrence_id}/complete",
        {"run_token": TOKEN, "succeeded": True, "result": {"rows": 9}},
    )
    assert done.status == 200, done.body
    assert done.body["status"] == "succeeded"
    assert done.body["finished_at"] == "2026-12-01T08:01:00Z"
    assert done.body["result"]["rows"] == 9
    assert api.call("GET", f"/runs/{occurrence_id}").body == done.body


def test_a_job_that_reports_failure_fails_the_run(api: Api) -> None:
    occurrence_id = running_run(api)
    done = api.call(
        "POST",
        f"/runs/{occurrence_id}/complete",
        {"run_token": TOKEN, "succeeded": False, "error": "disk full"},
    )
    assert done.status == 200
    assert done.body["status"] == "failed"


def test_a_wrong_token_is_409_and_changes_nothing(api: Api) -> None:
    occurrence_id = running_run(api)
    before = api.snapshot()
    for path, body in [
        ("progress", {"run_token": "guess", "progress": {"done": 1}}),
        ("complete", {"run_token": "guess"}),
    ]:
        answer = api.call("POST", f"/runs/{occurrence_id}/{path}", body)
        assert answer.status == 409
        assert answer.error["code"] == "run_token_refused"
        assert answer.error["field"] == "run_token"
    assert api.snapshot() == before


def test_a_report_for_an_ended_run_is_409_and_an_unknown_run_404(api: Api) -> None:
    occurrence_id = running_run(api)
    path = f"/runs/{occurrence_id}/complete"
    assert api.call("POST", path, {"run_token": TOKEN}).status == 200
    before = api.snapshot()
    again = api.call("POST", path, {"run_token": TOKEN})
    assert again.status == 409
    assert "succeeded" in again.error["message"]
    unknown = api.call("POST", "/runs/sch_x.v1.20261201T080000Z/complete", {"run_token": TOKEN})
    assert unknown.status == 404
    assert api.snapshot() == before


def test_a_report_without_a_token_is_422_and_changes_nothing(api: Api) -> None:
    occurrence_id = running_run(api)
    before = api.snapshot()
    answer = api.call("POST", f"/runs/{occurrence_id}/progress", {"progress": {"done": 1}})
    assert answer.status == 422
    assert answer.error["field"] == "run_token"
    assert api.snapshot() == before


def test_without_a_run_report_service_the_routes_answer_501(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = SqliteStore.open(tmp_path / "duetime.db")
    try:
        secrets = InMemorySecretStore()
        api = Api(
            ApiServices(ScheduleService(store, clock), secrets),
            tmp_path / "duetime.db",
            clock,
            secrets,
        )
        answer = api.call("POST", "/runs/x/complete", {"run_token": TOKEN})
        assert answer.status == 501
    finally:
        store.close()
