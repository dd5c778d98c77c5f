"""A failure while writing a schedule leaves nothing stored, and one schedule that
cannot be shown never fails the answers about the others.

The failures are injected where the computation happens (monkeypatch), or the
schedule is written straight into the store, as a value that slipped past the
API's checks would be.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import service.schedules as schedules_module
from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from domain.schedule import Quarantine, QuarantineComponent
from domain.spec import ScheduleSpec
from handlers.api import ApiServices
from service.schedules import ScheduleService
from tests.conftest import FakeClock, build_schedule, utc
from tests.handlers.test_api import REPORT, Api

NOW = utc("2026-12-01T08:00:00Z")
POISON = {"cron": "13 13 13 * *", "time_zone": "UTC"}  # the spec the injected failure hits


@pytest.fixture
def api(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    db = tmp_path / "duetime.db"
    store = SqliteStore.open(db)
    secrets = InMemorySecretStore()
    yield Api(ApiServices(ScheduleService(store, clock), secrets), db, clock, secrets)
    store.close()


@pytest.fixture
def poisoned_local_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Showing an occurrence of the POISON spec in its zone raises."""
    real = schedules_module.local_time

    def local_time(spec: ScheduleSpec, instant: datetime) -> datetime:
        if spec == _poison_spec():
            raise OverflowError("date value out of range")
        return real(spec, instant)

    monkeypatch.setattr(schedules_module, "local_time", local_time)


def _poison_spec() -> ScheduleSpec:
    return build_schedule(NOW, spec=POISON).current.spec


def _store(api: Api) -> SqliteStore:
    store = api.services.schedules.store
    assert isinstance(store, SqliteStore)
    return store


def test_a_create_whose_occurrences_cannot_be_computed_stores_nothing(
    api: Api, poisoned_local_time: None
) -> None:
    before = api.snapshot()
    answer = api.call("POST", "/schedules", {**REPORT, "spec": POISON})
    assert answer.status == 422
    assert answer.error["field"] == "spec"
    assert "cannot be computed" in answer.error["message"]
    assert "OverflowError" in answer.error["message"]
    assert api.snapshot() == before


def test_an_edit_whose_occurrences_cannot_be_computed_stores_nothing(
    api: Api, poisoned_local_time: None
) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call(
        "PUT",
        f"/schedules/{created['id']}",
        {**REPORT, "spec": POISON},
        headers={"If-Match": '"1"'},
    )
    assert answer.status == 422 and answer.error["field"] == "spec"
    assert api.snapshot() == before
    shown = api.call("GET", f"/schedules/{created['id']}")
    assert shown.status == 200 and shown.body["version"] == 1


def test_one_poisoned_schedule_does_not_fail_the_listing(
    api: Api, poisoned_local_time: None
) -> None:
    healthy = api.create().body
    poisoned = build_schedule(NOW, spec=POISON)
    _store(api).schedules.create(poisoned)  # slipped through: written straight into the store

    listing = api.call("GET", "/schedules")

    assert listing.status == 200
    by_id = {s["id"]: s for s in listing.body["schedules"]}
    assert by_id[healthy["id"]]["next_occurrences"] != []
    assert by_id[poisoned.schedule_id]["next_occurrences"] == []
    shown = api.call("GET", f"/schedules/{poisoned.schedule_id}")
    assert shown.status == 200 and shown.body["next_occurrences"] == []


@pytest.mark.usefixtures("without_range_rules")  # stored before the range rule
@pytest.mark.parametrize(
    "spec",
    [
        {"at": "9999-12-31T23:59:59Z"},
        {"every": "PT60S", "start_at": "9999-12-31T23:59:59Z"},
        {"every": "P1000000D"},
        {"every": "PT60S", "start_at": "9999-12-31T23:59:59Z", "time_zone": "Pacific/Kiritimati"},
    ],
)
def test_a_schedule_at_the_end_of_time_is_listed_and_shown(api: Api, spec: dict[str, Any]) -> None:
    healthy = api.create().body
    edge = build_schedule(NOW, spec=spec)
    _store(api).schedules.create(edge)

    listing = api.call("GET", "/schedules")

    assert listing.status == 200
    assert {s["id"] for s in listing.body["schedules"]} == {healthy["id"], edge.schedule_id}
    shown = api.call("GET", f"/schedules/{edge.schedule_id}")
    assert shown.status == 200 and shown.body["quarantine"] is None


def test_a_quarantined_schedule_shows_its_quarantine_and_a_healthy_one_null(api: Api) -> None:
    healthy = api.create().body
    poisoned = api.create().body
    quarantine = Quarantine.of(
        OverflowError("date value out of range"), QuarantineComponent.WATCH, NOW
    )
    assert _store(api).schedules.quarantine(poisoned["id"], 1, quarantine)

    shown = api.call("GET", f"/schedules/{poisoned['id']}")

    assert shown.status == 200
    assert shown.body["quarantine"] == {
        "reason": "OverflowError: date value out of range",
        "component": "watch",
        "at": "2026-12-01T08:00:00Z",
    }
    assert shown.body["next_occurrences"] == []
    listing = {s["id"]: s for s in api.call("GET", "/schedules").body["schedules"]}
    assert listing[healthy["id"]]["quarantine"] is None
    assert listing[poisoned["id"]]["quarantine"]["component"] == "watch"


def test_an_edit_clears_the_quarantine_in_the_answer(api: Api) -> None:
    created = api.create().body
    quarantine = Quarantine.of(ValueError("x"), QuarantineComponent.PLAN, NOW)
    _store(api).schedules.quarantine(created["id"], 1, quarantine)
    answer = api.call(
        "PUT", f"/schedules/{created['id']}", dict(REPORT), headers={"If-Match": '"1"'}
    )
    assert answer.status == 200
    assert answer.body["version"] == 2 and answer.body["quarantine"] is None
    assert answer.body["next_occurrences"] != []
