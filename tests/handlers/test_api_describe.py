"""What GET /schedules/{id} tells a person, the versions routes and acknowledging
a failure, on both stores (SQLite, and DynamoDB on moto), through the handler
as each deployment builds it (``build_services``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import DynamoPorts
from adapters.secrets import InMemorySecretStore
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from bootstrap.parts import tick_config
from bootstrap.settings import Settings
from domain.run import PendingOccurrence, RunStatus
from domain.schedule import Quarantine, QuarantineComponent
from handlers.api import ApiServices, build_services, handler
from service.planning.ticker import Ticker
from service.watchdog import Watchdog
from tests.conftest import FakeClock, FakeQueue, utc
from tests.handlers.test_api import rest_event

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
SETTINGS = Settings(shards=2)


@pytest.fixture(params=["sqlite", "dynamodb"])
def services(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> Iterator[ApiServices]:
    if request.param == "sqlite":
        built = build_services(
            SETTINGS, data_dir=tmp_path, clock=clock, secrets=InMemorySecretStore()
        )
        yield built
        store = built.schedules.store
        assert isinstance(store, SqliteStore)
        store.close()
        return
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "api-sched")
        settings = SETTINGS.model_copy(
            update={
                "schedules_table": tables.schedules,
                "occurrences_table": tables.occurrences,
                "leases_table": tables.leases,
            }
        )
        yield build_services(settings, clock=clock, secrets=InMemorySecretStore())


def call(services: ApiServices, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    """(status, body) of one request."""
    event = rest_event(
        method,
        path,
        body=None if body is None else json.dumps(body),
        headers={"Content-Type": "application/json", **kw.get("headers", {})},
        query=kw.get("query"),
    )
    response = handler(event, None, service=services)
    return response["statusCode"], json.loads(response["body"])


def create(services: ApiServices, spec: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body = {"name": "report", "spec": spec, "target": WEBHOOK, **fields}
    status, created = call(services, "POST", "/schedules", body)
    assert status == 201, created
    return dict(created)


def tick(services: ApiServices, clock: FakeClock) -> None:
    """One pass of the dispatcher: plan what falls due within the lookahead, admit what is due."""
    Ticker(
        services.schedules.store, FakeQueue(), clock, tick_config(SETTINGS), owner="test-tick"
    ).tick_once()


def fail_run(services: ApiServices, occurrence_id: str, clock: FakeClock) -> None:
    """A worker starts the run and its target refuses it for good."""
    store = services.schedules.store
    runs = SqliteRunStore(store) if isinstance(store, SqliteStore) else None
    if isinstance(store, DynamoPorts):
        runs = DynamoRunStore(store)
    assert runs is not None
    run = store.records.get_run(occurrence_id)
    assert run is not None
    if run.status is RunStatus.SCHEDULED:
        store.records.admit([PendingOccurrence.of(run)], clock.now())
    started = runs.start_attempt(  # type: ignore[attr-defined]
        occurrence_id,
        now=clock.now(),
        lease_until=clock.now() + timedelta(minutes=15),
        run_token_hash=None,
    )
    assert started is not None
    failed = runs.finish(  # type: ignore[attr-defined]
        occurrence_id,
        attempt=started.attempts,
        status=RunStatus.FAILED,
        now=clock.now(),
        reason="HTTP 400 from the target",
    )
    assert failed is not None and failed.status is RunStatus.FAILED


def get(services: ApiServices, schedule_id: str) -> dict[str, Any]:
    status, body = call(services, "GET", f"/schedules/{schedule_id}")
    assert status == 200, body
    return dict(body)


def listed(services: ApiServices) -> dict[str, dict[str, Any]]:
    status, body = call(services, "GET", "/schedules")
    assert status == 200, body
    return {item["id"]: item for item in body["schedules"]}


# --- status -----------------------------------------------------------------------------


def test_a_one_off_that_came_due_shows_as_ended_not_active(
    services: ApiServices, clock: FakeClock
) -> None:
    one_off = create(services, {"at": "2026-12-01T09:00:00Z"})
    assert one_off["status"] == "active"
    clock.advance(timedelta(minutes=59))
    tick(services, clock)  # materialized: nothing left to plan, but it has not come due
    assert get(services, one_off["id"])["status"] == "active"
    clock.advance(timedelta(minutes=2))
    tick(services, clock)
    shown = get(services, one_off["id"])
    assert shown["status"] == "ended"
    assert shown["state"] == {"paused": False, "note": None}
    assert listed(services)[one_off["id"]]["status"] == "ended"


def test_a_schedule_past_its_end_at_shows_as_ended(services: ApiServices, clock: FakeClock) -> None:
    bounded = create(services, {"every": "PT1M", "end_at": "2026-12-01T08:03:00Z"})
    for _ in range(5):
        clock.advance(60)
        tick(services, clock)
    assert get(services, bounded["id"])["status"] == "ended"
    assert get(services, bounded["id"])["next_occurrences"] == []


def test_paused_quarantined_and_deleted_schedules_say_so(
    services: ApiServices, clock: FakeClock
) -> None:
    paused = create(services, {"cron": "0 9 * * *"})
    status, body = call(services, "POST", f"/schedules/{paused['id']}/pause", {"note": "audit"})
    assert status == 200 and body["status"] == "paused"
    assert listed(services)[paused["id"]]["status"] == "paused"

    set_aside = create(services, {"cron": "0 9 * * *"})
    quarantine = Quarantine("OverflowError: boom", QuarantineComponent.PLAN, clock.now())
    assert services.schedules.store.schedules.quarantine(set_aside["id"], 1, quarantine)
    assert get(services, set_aside["id"])["status"] == "quarantined"

    status, deleted = call(services, "DELETE", f"/schedules/{paused['id']}")
    assert status == 200
    # The answer to a delete says the schedule is deleted, not active.
    assert deleted["status"] == "deleted"
    assert deleted["deleted_at"] == "2026-12-01T08:00:00Z"
    assert paused["id"] not in listed(services)


# --- recent runs, next occurrences, planned under older versions --------------------------


def test_recent_runs_leave_out_the_occurrences_still_to_come(
    services: ApiServices, clock: FakeClock
) -> None:
    frequent = create(services, {"every": "PT10S"})
    for _ in range(8):
        clock.advance(10)
        tick(services, clock)
    now = "2026-12-01T08:01:20Z"
    status, runs = call(
        services, "GET", f"/schedules/{frequent['id']}/runs", query={"include": "planned"}
    )
    assert status == 200
    # The lookahead has planned occurrences after now ...
    assert any(run["scheduled_at"] > now for run in runs["runs"])
    shown = get(services, frequent["id"])
    # ... which the recent runs leave out: the last 5 that came due, newest first.
    assert [run["scheduled_at"] for run in shown["recent_runs"]] == [
        "2026-12-01T08:01:20Z",
        "2026-12-01T08:01:10Z",
        "2026-12-01T08:01:00Z",
        "2026-12-01T08:00:50Z",
        "2026-12-01T08:00:40Z",
    ]
    assert shown["planned_under_older_versions"] == []


def test_next_occurrences_carry_their_version_and_a_dst_note(
    services: ApiServices, clock: FakeClock
) -> None:
    # America/New_York springs forward on 2027-03-14 at 02:00 EST (07:00Z) to 03:00 EDT:
    # 02:30 does not exist that day.
    clock.set(utc("2027-03-12T12:00:00Z"))
    nightly = create(
        services,
        {"cron": "30 2 * * *", "time_zone": "America/New_York"},
        policy={"dst_gap": "next_valid"},
    )
    upcoming = get(services, nightly["id"])["next_occurrences"]
    assert upcoming[:3] == [
        {
            "scheduled_at": "2027-03-13T07:30:00Z",
            "local": "2027-03-13T02:30:00-05:00",
            "version": 1,
            "dst_note": None,
        },
        {
            "scheduled_at": "2027-03-14T07:00:00Z",
            "local": "2027-03-14T03:00:00-04:00",
            "version": 1,
            "dst_note": (
                "02:30 does not exist (clocks jumped forward); "
                "runs at the first valid time, 03:00 EDT"
            ),
        },
        {
            "scheduled_at": "2027-03-15T06:30:00Z",
            "local": "2027-03-15T02:30:00-04:00",
            "version": 1,
            "dst_note": None,
        },
    ]


def test_an_edit_shows_the_occurrences_still_planned_under_the_older_version(
    services: ApiServices, clock: FakeClock
) -> None:
    frequent = create(services, {"every": "PT30S"})
    tick(services, clock)  # plans the next 90 s under version 1
    planned = [
        run["scheduled_at"]
        for run in call(
            services, "GET", f"/schedules/{frequent['id']}/runs", query={"include": "planned"}
        )[1]["runs"]
    ]
    assert planned == ["2026-12-01T08:01:30Z", "2026-12-01T08:01:00Z", "2026-12-01T08:00:30Z"]
    edited = {"name": "report", "spec": {"every": "PT1M"}, "target": WEBHOOK}
    status, body = call(
        services, "PUT", f"/schedules/{frequent['id']}", edited, headers={"If-Match": '"1"'}
    )
    assert status == 200, body
    shown = get(services, frequent["id"])
    assert shown["version"] == 2
    older = shown["planned_under_older_versions"]
    assert [(run["scheduled_at"], run["version"], run["status"]) for run in older] == [
        # Planned by the pass (their intents queued, delayed to their instant).
        ("2026-12-01T08:00:30Z", 1, "planned"),
        ("2026-12-01T08:01:00Z", 1, "planned"),
        ("2026-12-01T08:01:30Z", 1, "planned"),
    ]
    # The new version starts after what is already planned, and says so.
    assert shown["next_occurrences"][0]["scheduled_at"] > "2026-12-01T08:01:30Z"
    assert {item["version"] for item in shown["next_occurrences"]} == {2}
    # Once they come due and are handed to a worker, they are no longer planned.
    clock.advance(95)
    tick(services, clock)
    assert get(services, frequent["id"])["planned_under_older_versions"] == []


# --- versions -----------------------------------------------------------------------------


def test_versions_list_every_version_oldest_first_with_what_it_changed(
    services: ApiServices, clock: FakeClock
) -> None:
    first = create(services, {"cron": "0 9 * * *"})
    path = f"/schedules/{first['id']}"
    renamed = {"name": "renamed", "spec": {"cron": "0 9 * * *"}, "target": WEBHOOK}
    assert call(services, "PUT", path, renamed, headers={"If-Match": '"1"'})[0] == 200
    clock.advance(60)
    moved = {
        **renamed,
        "spec": {"cron": "30 7 * * *"},
        "policy": {"overdue": "catch_up_all"},
        "payload": {"a": 1},
    }
    assert call(services, "PUT", path, moved, headers={"If-Match": '"2"'})[0] == 200

    status, body = call(services, "GET", f"{path}/versions")
    assert status == 200, body
    assert body["next_token"] is None
    assert [(v["version"], v["changed"]) for v in body["versions"]] == [
        (1, []),
        (2, ["name"]),
        (3, ["payload", "policy.overdue", "spec.cron"]),
    ]
    third = body["versions"][2]
    assert third["created_at"] == "2026-12-01T08:01:00Z"
    assert third["spec"]["cron"] == "30 7 * * *" and third["name"] == "renamed"
    assert third["policy"]["overdue"] == "catch_up_all" and third["payload"] == {"a": 1}
    assert third["target"]["url"] == "https://example.com/hook"

    # One at a time, by token, the same versions and changes.
    seen: list[int] = []
    token: str | None = None
    while True:
        query = {"limit": "1", **({"next_token": token} if token else {})}
        status, page = call(services, "GET", f"{path}/versions", query=query)
        assert status == 200, page
        seen += [v["version"] for v in page["versions"]]
        assert all(
            v["changed"] == body["versions"][v["version"] - 1]["changed"] for v in page["versions"]
        )
        token = page["next_token"]
        if token is None:
            break
    assert seen == [1, 2, 3]

    status, second = call(services, "GET", f"{path}/versions/2")
    assert status == 200 and second == body["versions"][1]


def test_a_deleted_schedule_and_its_versions_are_404_saying_when_and_where_its_runs_are(
    services: ApiServices, clock: FakeClock
) -> None:
    first = create(services, {"cron": "0 9 * * *"})
    sid = first["id"]
    clock.advance(90)
    assert call(services, "DELETE", f"/schedules/{sid}")[0] == 200
    for path in (f"/schedules/{sid}", f"/schedules/{sid}/versions", f"/schedules/{sid}/versions/1"):
        status, body = call(services, "GET", path)
        assert status == 404, (path, body)
        assert body["error"] == {
            "code": "schedule_deleted",
            "message": f"schedule {sid!r} was deleted at 2026-12-01T08:01:30Z; "
            f"its runs stay readable: GET /runs?schedule_id={sid}",
            "field": None,
            "deleted_at": "2026-12-01T08:01:30Z",
        }
    # Where the message points: the runs answer; its own runs path says it is deleted.
    status, body = call(services, "GET", "/runs", query={"schedule_id": sid})
    assert status == 200, body
    status, body = call(services, "GET", f"/schedules/{sid}/runs")
    assert status == 404 and body["error"]["code"] == "schedule_deleted"
    # Every other operation on it says the same.
    status, body = call(services, "POST", f"/schedules/{sid}/pause")
    assert status == 404 and body["error"]["code"] == "schedule_deleted"


@pytest.mark.parametrize("number", ["2", "0", "999999999999"])
def test_an_unknown_version_is_404_version_not_found(services: ApiServices, number: str) -> None:
    first = create(services, {"cron": "0 9 * * *"})
    status, body = call(services, "GET", f"/schedules/{first['id']}/versions/{number}")
    assert status == 404
    assert body["error"]["code"] == "version_not_found"
    assert body["error"]["message"] == f"schedule {first['id']!r} has no version {int(number)}"


def test_versions_of_an_unknown_schedule_are_404_schedule_not_found(
    services: ApiServices,
) -> None:
    for path in ("/schedules/sch_missing/versions", "/schedules/sch_missing/versions/1"):
        status, body = call(services, "GET", path)
        assert status == 404 and body["error"]["code"] == "schedule_not_found"


def test_a_version_that_is_not_a_number_is_refused_naming_it(services: ApiServices) -> None:
    first = create(services, {"cron": "0 9 * * *"})
    status, body = call(services, "GET", f"/schedules/{first['id']}/versions/two")
    assert status == 422
    assert body["error"]["field"] == "number"


def test_a_versions_token_the_api_did_not_hand_out_is_refused(services: ApiServices) -> None:
    first = create(services, {"cron": "0 9 * * *"})
    status, body = call(
        services, "GET", f"/schedules/{first['id']}/versions", query={"next_token": "bo gus"}
    )
    assert status == 400
    assert body["error"]["field"] == "next_token"
    assert body["error"]["code"] == "invalid_next_token"
    status, body = call(
        services, "GET", f"/schedules/{first['id']}/versions", query={"next_token": "12x"}
    )
    assert status == 404 and body["error"]["code"] == "page_not_found"


# --- acknowledging a failure ----------------------------------------------------------------


def test_an_acknowledged_failed_one_off_stops_showing_as_overdue(
    services: ApiServices, clock: FakeClock
) -> None:
    one_off = create(services, {"at": "2026-12-01T08:10:00Z"})
    clock.set(utc("2026-12-01T08:10:00Z"))
    tick(services, clock)
    [run] = get(services, one_off["id"])["recent_runs"]
    fail_run(services, run["occurrence_id"], clock)
    clock.advance(timedelta(minutes=10))
    watchdog = Watchdog(services.schedules.store, clock)
    watchdog.run()
    before = get(services, one_off["id"])
    assert before["watch"]["status"] == "overdue"
    assert before["status"] == "ended"
    assert before["recent_runs"][0]["status"] == "failed"

    status, body = call(
        services, "POST", f"/schedules/{one_off['id']}/acknowledge", {"note": "fixed by hand"}
    )
    assert status == 200, body
    assert body["watch"]["status"] == "ended"
    assert body["watch"]["checked_at"] == "2026-12-01T08:20:00Z"
    # The failure itself is not rewritten: it stays failed, with its reason.
    assert body["recent_runs"][0]["status"] == "failed"
    # Later passes of the watchdog keep to the acknowledgement.
    clock.advance(timedelta(days=3))
    watchdog.run()
    assert get(services, one_off["id"])["watch"]["status"] == "ended"
    # The acknowledgement is kept fresh while it counts (heartbeat items expire on DynamoDB).
    acknowledged = services.schedules.store.leases.heartbeat(f"ack:{one_off['id']}")
    assert acknowledged is not None and acknowledged.at == clock.now()
    assert acknowledged.detail["note"] == "fixed by hand"

    # Acknowledged already: nothing more to acknowledge, and nothing changes.
    clock.advance(60)
    status, again = call(services, "POST", f"/schedules/{one_off['id']}/acknowledge")
    assert status == 409
    assert again["error"] == {
        "code": "nothing_to_acknowledge",
        "message": (
            f"schedule {one_off['id']!r} has its newest failed run "
            f"({run['occurrence_id']}) acknowledged already"
        ),
        "field": None,
    }
    assert get(services, one_off["id"])["watch"]["checked_at"] == "2026-12-04T08:20:00Z"
    assert services.schedules.store.leases.heartbeat(f"ack:{one_off['id']}") == acknowledged


def test_an_acknowledged_failure_of_a_recurring_schedule_waits_for_its_next_slot(
    services: ApiServices, clock: FakeClock
) -> None:
    hourly = create(services, {"cron": "0 * * * *"})
    clock.set(utc("2026-12-01T09:00:00Z"))
    tick(services, clock)
    [run] = get(services, hourly["id"])["recent_runs"]
    fail_run(services, run["occurrence_id"], clock)
    clock.set(utc("2026-12-01T09:30:00Z"))
    Watchdog(services.schedules.store, clock).run()
    assert get(services, hourly["id"])["watch"]["status"] == "overdue"
    status, body = call(services, "POST", f"/schedules/{hourly['id']}/acknowledge")
    assert status == 200, body
    assert body["watch"]["status"] == "ok"
    assert body["watch"]["expected_at"] == "2026-12-01T10:00:00Z"
    # A new failure counts again, and needs its own acknowledgement.
    clock.set(utc("2026-12-01T10:00:00Z"))
    tick(services, clock)
    newest = get(services, hourly["id"])["recent_runs"][0]
    assert newest["scheduled_at"] == "2026-12-01T10:00:00Z"
    fail_run(services, newest["occurrence_id"], clock)
    clock.set(utc("2026-12-01T10:30:00Z"))
    Watchdog(services.schedules.store, clock).run()
    assert get(services, hourly["id"])["watch"]["status"] == "overdue"
    status, body = call(services, "POST", f"/schedules/{hourly['id']}/acknowledge")
    assert status == 200, body
    assert body["watch"]["expected_at"] == "2026-12-01T11:00:00Z"


def test_acknowledge_without_a_failure_is_refused_and_changes_nothing(
    services: ApiServices, clock: FakeClock
) -> None:
    fresh = create(services, {"cron": "0 9 * * *"})
    before = get(services, fresh["id"])
    status, body = call(services, "POST", f"/schedules/{fresh['id']}/acknowledge")
    assert status == 409
    assert body["error"] == {
        "code": "nothing_to_acknowledge",
        "message": (
            f"schedule {fresh['id']!r} has no failed or expired run since its last "
            "success to acknowledge"
        ),
        "field": None,
    }
    assert get(services, fresh["id"]) == before
    assert services.schedules.store.leases.heartbeat(f"ack:{fresh['id']}") is None


def test_acknowledge_of_an_unknown_schedule_is_404(services: ApiServices) -> None:
    status, body = call(services, "POST", "/schedules/sch_missing/acknowledge")
    assert status == 404 and body["error"]["code"] == "schedule_not_found"


def test_acknowledge_refuses_an_unknown_field_and_writes_nothing(
    services: ApiServices, clock: FakeClock
) -> None:
    one_off = create(services, {"at": "2026-12-01T08:10:00Z"})
    clock.set(utc("2026-12-01T08:10:00Z"))
    tick(services, clock)
    [run] = get(services, one_off["id"])["recent_runs"]
    fail_run(services, run["occurrence_id"], clock)
    status, body = call(
        services, "POST", f"/schedules/{one_off['id']}/acknowledge", {"reason": "x"}
    )
    assert status == 422
    assert body["error"] == {
        "code": "validation_error",
        "message": "reason: is not a known field",
        "field": "reason",
    }
    assert services.schedules.store.leases.heartbeat(f"ack:{one_off['id']}") is None
    assert services.schedules.store.leases.heartbeat(f"watch:{one_off['id']}") is None
