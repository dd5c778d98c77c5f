"""The HTTP API, specified by API Gateway REST proxy events sent to the handler.

Every request goes through ``handlers.api.handler`` with a SQLite store in a
temporary directory and a fake clock. Every refusal is followed by a check
that the database holds exactly what it held before.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from adapters.targets.signing import shown_secret
from handlers.api import MAX_BODY_BYTES, ApiServices, handler, openapi_json
from service.schedules import ScheduleService
from service.watchdog import Watchdog
from tests.conftest import FakeClock, utc

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
REPORT = {
    "name": "sales report",
    "spec": {"cron": "0 9 * * MON-FRI", "time_zone": "America/New_York"},
    "target": WEBHOOK,
    "payload": {"report": "sales"},
}
REPO = Path(__file__).resolve().parents[2]


def rest_event(
    method: str,
    path: str,
    *,
    body: str | None = None,
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway REST proxy event as the ``{proxy+}`` resource sends it."""
    headers = dict(headers or {})
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": headers or None,
        "multiValueHeaders": {k: [v] for k, v in headers.items()} or None,
        "queryStringParameters": dict(query) if query else None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": f"/prod{path}",
            "stage": "prod",
            "requestId": "test-request",
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": body,
        "isBase64Encoded": False,
    }


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]

    @property
    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = self.body["error"]
        return error


@dataclass
class Api:
    services: ApiServices
    db: Path
    clock: FakeClock
    secrets: InMemorySecretStore

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: str | None = None,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
    ) -> Answer:
        sent_headers = {"Content-Type": "application/json", **(headers or {})}
        text = raw if raw is not None else (None if body is None else json.dumps(body))
        event = rest_event(method, path, body=text, headers=sent_headers, query=query)
        response = handler(event, None, service=self.services)
        found = {k: v for k, v in (response.get("headers") or {}).items()}
        for key, values in (response.get("multiValueHeaders") or {}).items():
            found[key] = values[-1]
        return Answer(response["statusCode"], json.loads(response["body"]), found)

    def create(
        self, body: Mapping[str, Any] = REPORT, headers: Mapping[str, str] | None = None
    ) -> Answer:
        answer = self.call("POST", "/schedules", dict(body), headers=headers)
        assert answer.status == 201, answer.body
        return answer

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table, to show that a refused request wrote nothing."""
        with sqlite3.connect(self.db) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return {
                t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables
            }


@pytest.fixture
def api(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    db = tmp_path / "duetime.db"
    store = SqliteStore.open(db)
    secrets = InMemorySecretStore()
    yield Api(ApiServices(ScheduleService(store, clock), secrets), db, clock, secrets)
    store.close()


@pytest.fixture
def unchanged(api: Api) -> Iterator[None]:
    """Asserts, after the test, that the store holds what it held when the test began."""
    before = api.snapshot()
    secrets_before = dict(api.secrets._secrets)
    yield
    assert api.snapshot() == before
    assert api.secrets._secrets == secrets_before


# --- create ----------------------------------------------------------------------------


def test_create_returns_the_schedule_with_its_next_occurrences_in_utc_and_local(
    api: Api,
) -> None:
    # 2026-12-01 is a Tuesday; New York is on EST (UTC-5) all December.
    answer = api.create()
    body = answer.body
    assert body["id"].startswith("sch_")
    assert body["version"] == 1
    assert body["state"] == {"paused": False, "note": None}
    assert body["name"] == "sales report"
    assert body["spec"]["cron"] == "0 9 * * MON-FRI"
    assert body["spec"]["time_zone"] == "America/New_York"
    assert body["target"]["type"] == "webhook"
    assert body["target"]["url"] == "https://example.com/hook"
    assert body["payload"] == {"report": "sales"}
    assert body["policy"]["overdue"] == "latest_only"
    assert body["policy"]["retry"] == {"max_attempts": 5, "base": "PT1S", "cap": "PT30S"}
    assert body["next_occurrences"][:2] == [
        {
            "scheduled_at": "2026-12-01T14:00:00Z",
            "local": "2026-12-01T09:00:00-05:00",
            "version": 1,
            "dst_note": None,
        },
        {
            "scheduled_at": "2026-12-02T14:00:00Z",
            "local": "2026-12-02T09:00:00-05:00",
            "version": 1,
            "dst_note": None,
        },
    ]
    assert len(body["next_occurrences"]) == 5
    assert body["created_at"] == "2026-12-01T08:00:00Z"
    assert answer.headers["Location"] == f"/schedules/{body['id']}"
    assert answer.headers["ETag"] == '"1"'


def test_create_with_every_policy_and_at_specs(api: Api) -> None:
    every = api.create(
        {
            "name": "poll",
            "spec": {"every": "PT15M", "start_at": "2026-12-01T08:05:00Z"},
            "target": {
                "type": "sqs",
                "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs",
            },
            "policy": {
                "overdue": "expire",
                "catchup_window": "PT1H",
                "overlap": "skip",
                "retry": {"max_attempts": 3, "base": "PT2S", "cap": "PT10S"},
                "run_timeout": "PT5M",
            },
        }
    ).body
    assert [o["scheduled_at"] for o in every["next_occurrences"][:2]] == [
        "2026-12-01T08:05:00Z",
        "2026-12-01T08:20:00Z",
    ]
    assert every["policy"]["overdue"] == "expire" and every["policy"]["catchup_window"] == "PT1H"
    assert every["policy"]["retry"] == {"max_attempts": 3, "base": "PT2S", "cap": "PT10S"}
    assert every["webhook_secret"] is None

    at = api.create(
        {
            "name": "once",
            "spec": {"at": "2026-12-24T18:00", "time_zone": "Europe/Berlin"},
            "target": {
                "type": "lambda",
                "function_arn": "arn:aws:lambda:eu-west-1:123456789012:function:job",
            },
        }
    ).body
    assert at["next_occurrences"] == [
        {
            "scheduled_at": "2026-12-24T17:00:00Z",
            "local": "2026-12-24T18:00:00+01:00",
            "version": 1,
            "dst_note": None,
        }
    ]


def test_a_webhook_schedule_gets_its_signing_secret_once(api: Api) -> None:
    created = api.create().body
    secret = created["webhook_secret"]
    assert isinstance(secret, str) and secret.startswith("whsec_") and len(secret) >= 49
    assert shown_secret(api.secrets.get(created["id"])) == secret
    again = api.call("GET", f"/schedules/{created['id']}").body
    assert again["webhook_secret"] is None


def test_a_retried_create_with_the_same_idempotency_key_returns_the_first_schedule(
    api: Api,
) -> None:
    first = api.create(headers={"Idempotency-Key": "create-report-1"})
    api.clock.advance(30)
    retry = api.create(headers={"Idempotency-Key": "create-report-1"})
    assert retry.body["id"] == first.body["id"]
    assert retry.body["webhook_secret"] == first.body["webhook_secret"]
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    other = api.create(headers={"Idempotency-Key": "create-report-2"})
    assert other.body["id"] != first.body["id"]
    listed = api.call("GET", "/schedules").body["schedules"]
    assert sorted(s["id"] for s in listed) == sorted([first.body["id"], other.body["id"]])


def test_an_idempotency_key_longer_than_255_characters_is_refused(
    api: Api, unchanged: None
) -> None:
    answer = api.call("POST", "/schedules", REPORT, headers={"Idempotency-Key": "k" * 256})
    assert answer.status == 422
    assert answer.error["field"] == "Idempotency-Key".lower()


# --- read and list ---------------------------------------------------------------------


def test_get_returns_the_schedule_and_its_version_as_etag(api: Api) -> None:
    created = api.create().body
    answer = api.call("GET", f"/schedules/{created['id']}")
    assert answer.status == 200
    assert answer.headers["ETag"] == '"1"'
    # GET adds the watch verdict, the recent runs and what is planned under older versions.
    only_get = ("webhook_secret", "watch", "recent_runs", "planned_under_older_versions")
    assert {k: v for k, v in answer.body.items() if k not in only_get} == {
        k: v for k, v in created.items() if k not in only_get
    }
    assert answer.body["recent_runs"] == []
    assert answer.body["planned_under_older_versions"] == []
    assert created["recent_runs"] is None


def test_get_shows_the_watchdogs_last_verdict(api: Api) -> None:
    created = api.create().body
    assert api.call("GET", f"/schedules/{created['id']}").body["watch"] is None
    # Tuesday 09:00 New York (14:00Z) came due and nothing succeeded for 20 minutes.
    api.clock.set(utc("2026-12-01T14:20:00Z"))
    Watchdog(api.services.schedules.store, api.clock).run()
    watch = api.call("GET", f"/schedules/{created['id']}").body["watch"]
    assert watch["status"] == "overdue"
    assert watch["expected_at"] == "2026-12-01T14:00:00Z"
    assert watch["last_success_at"] is None


def test_an_unknown_schedule_is_404(api: Api, unchanged: None) -> None:
    for method, path in [
        ("GET", "/schedules/sch_nope"),
        ("POST", "/schedules/sch_nope/pause"),
        ("POST", "/schedules/sch_nope/resume"),
        ("DELETE", "/schedules/sch_nope"),
        ("POST", "/schedules/sch_nope/trigger"),
        ("GET", "/schedules/sch_nope/runs"),
    ]:
        answer = api.call(method, path)
        assert answer.status == 404, (method, path)
        assert answer.error["code"] == "schedule_not_found"
    answer = api.call(
        "POST",
        "/schedules/sch_nope/backfill",
        {"start_at": "2026-11-30T00:00:00Z", "end_at": "2026-12-01T00:00:00Z"},
    )
    assert answer.status == 404
    answer = api.call("PUT", "/schedules/sch_nope", REPORT, headers={"If-Match": "1"})
    assert answer.status == 404


def test_list_pages_through_every_schedule_oldest_first(api: Api) -> None:
    ids = []
    for n in range(5):
        ids.append(api.create({**REPORT, "name": f"report {n}"}).body["id"])
        api.clock.advance(1)
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        query = {"limit": "2"} | ({"next_token": token} if token else {})
        body = api.call("GET", "/schedules", query=query).body
        seen += [s["id"] for s in body["schedules"]]
        pages += 1
        token = body["next_token"]
        if token is None:
            break
    assert seen == ids
    assert pages == 3


def test_list_refuses_a_bad_limit_or_token(api: Api) -> None:
    api.create()
    before = api.snapshot()
    for query, field in [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"next_token": "not-a-token"}, "next_token"),
    ]:
        answer = api.call("GET", "/schedules", query=query)
        assert answer.status == (404 if field == "next_token" else 422), query
        assert answer.error["field"] == field
    assert api.snapshot() == before


# --- edit ------------------------------------------------------------------------------


def test_put_with_the_current_version_writes_the_next_one(api: Api) -> None:
    created = api.create().body
    edited = {**REPORT, "spec": {"cron": "30 7 * * *", "time_zone": "Europe/London"}}
    answer = api.call("PUT", f"/schedules/{created['id']}", edited, headers={"If-Match": '"1"'})
    assert answer.status == 200, answer.body
    assert answer.body["version"] == 2
    assert answer.headers["ETag"] == '"2"'
    assert answer.body["spec"]["cron"] == "30 7 * * *"
    assert answer.body["next_occurrences"][0] == {
        "scheduled_at": "2026-12-02T07:30:00Z",
        "local": "2026-12-02T07:30:00+00:00",
        "version": 2,
        "dst_note": None,
    }
    # A bare number and a weak ETag name a version too.
    answer = api.call("PUT", f"/schedules/{created['id']}", edited, headers={"if-match": "2"})
    assert answer.body["version"] == 3
    answer = api.call("PUT", f"/schedules/{created['id']}", edited, headers={"If-Match": 'W/"3"'})
    assert answer.body["version"] == 4


def test_put_with_a_bad_policy_and_a_stale_if_match_is_422_naming_the_field(api: Api) -> None:
    # The body is judged first: a stale version is only news for a valid edit.
    created = api.create().body
    before = api.snapshot()
    answer = api.call(
        "PUT",
        f"/schedules/{created['id']}",
        {**REPORT, "policy": {"overdue": "expire"}},
        headers={"If-Match": '"7"'},
    )
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "policy.catchup_window"
    assert api.snapshot() == before


def test_put_without_if_match_is_428_and_changes_nothing(api: Api) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call("PUT", f"/schedules/{created['id']}", REPORT)
    assert answer.status == 428
    assert answer.error["code"] == "precondition_required"
    assert answer.error["field"] == "If-Match"
    assert api.snapshot() == before


def test_put_with_a_stale_version_is_412_and_changes_nothing(api: Api) -> None:
    created = api.create().body
    path = f"/schedules/{created['id']}"
    assert api.call("PUT", path, REPORT, headers={"If-Match": "1"}).status == 200
    before = api.snapshot()
    stale = api.call("PUT", path, {**REPORT, "name": "lost update"}, headers={"If-Match": "1"})
    assert stale.status == 412
    assert stale.error["code"] == "version_conflict"
    assert api.snapshot() == before
    assert api.call("GET", path).body["name"] == "sales report"


def test_put_with_an_unreadable_if_match_is_400_and_changes_nothing(api: Api) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call("PUT", f"/schedules/{created['id']}", REPORT, headers={"If-Match": "*"})
    assert answer.status == 400
    assert answer.error["field"] == "If-Match"
    assert api.snapshot() == before


def test_put_with_an_invalid_body_is_422_and_changes_nothing(api: Api) -> None:
    created = api.create().body
    before = api.snapshot()
    bad = {**REPORT, "spec": {"cron": "0 9 * * FUNDAY"}}
    answer = api.call("PUT", f"/schedules/{created['id']}", bad, headers={"If-Match": "1"})
    assert answer.status == 422
    assert answer.error["field"].startswith("spec.cron")
    assert api.snapshot() == before


def test_an_edit_to_a_webhook_gives_a_schedule_its_first_secret(api: Api) -> None:
    queue = {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"}
    created = api.create({**REPORT, "target": queue}).body
    assert created["webhook_secret"] is None
    answer = api.call("PUT", f"/schedules/{created['id']}", REPORT, headers={"If-Match": "1"}).body
    assert answer["webhook_secret"] == shown_secret(api.secrets.get(created["id"]))
    again = api.call("PUT", f"/schedules/{created['id']}", REPORT, headers={"If-Match": "2"})
    assert again.body["webhook_secret"] is None


# --- pause, resume, delete -------------------------------------------------------------


def test_pause_with_a_note_then_resume(api: Api) -> None:
    created = api.create().body
    path = f"/schedules/{created['id']}"
    paused = api.call("POST", f"{path}/pause", {"note": "quarter close"})
    assert paused.status == 200
    assert paused.body["state"] == {"paused": True, "note": "quarter close"}
    assert paused.body["next_occurrences"] == []
    assert paused.body["version"] == 1
    resumed = api.call("POST", f"{path}/resume")
    assert resumed.status == 200
    assert resumed.body["state"] == {"paused": False, "note": None}
    assert resumed.body["next_occurrences"][0]["scheduled_at"] == "2026-12-01T14:00:00Z"


def test_pause_without_a_body(api: Api) -> None:
    created = api.create().body
    paused = api.call("POST", f"/schedules/{created['id']}/pause")
    assert paused.status == 200
    assert paused.body["state"] == {"paused": True, "note": None}


def test_pause_with_a_note_too_long_is_422_and_changes_nothing(api: Api) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call("POST", f"/schedules/{created['id']}/pause", {"note": "x" * 1001})
    assert answer.status == 422
    assert answer.error["field"] == "note"
    assert api.snapshot() == before


def test_delete_hides_the_schedule_and_keeps_its_runs_readable(api: Api) -> None:
    created = api.create().body
    path = f"/schedules/{created['id']}"
    run = api.call("POST", f"{path}/trigger").body
    deleted = api.call("DELETE", path)
    assert deleted.status == 200
    assert deleted.body["deleted_at"] == "2026-12-01T08:00:00Z"
    assert api.call("GET", path).status == 404
    assert api.call("GET", "/schedules").body["schedules"] == []
    runs = api.call("GET", "/runs", query={"schedule_id": created["id"]}).body["runs"]
    assert [r["occurrence_id"] for r in runs] == [run["occurrence_id"]]
    assert api.call("GET", "/runs").body["runs"] == []  # every schedule not deleted
    assert runs[0]["status"] == "cancelled"
    assert api.call("DELETE", path).status == 404


# --- trigger, backfill, runs -----------------------------------------------------------


def test_trigger_creates_one_extra_run_now_with_its_own_identity(api: Api) -> None:
    created = api.create().body
    first = api.call("POST", f"/schedules/{created['id']}/trigger")
    second = api.call("POST", f"/schedules/{created['id']}/trigger")
    assert first.status == second.status == 201
    run = first.body
    assert run["occurrence_id"] != second.body["occurrence_id"]
    assert first.headers["Location"] == f"/runs/{run['occurrence_id']}"
    assert run["schedule_id"] == created["id"]
    assert run["version"] == 1
    assert run["kind"] == "trigger"
    assert run["status"] == "scheduled"
    assert run["scheduled_at"] == "2026-12-01T08:00:00Z"
    assert run["local"] == "2026-12-01T03:00:00-05:00"
    read = api.call("GET", f"/runs/{run['occurrence_id']}")
    assert read.status == 200
    assert read.body == run
    assert set(run) >= {
        "occurrence_id",
        "schedule_id",
        "version",
        "status",
        "attempts",
        "scheduled_at",
        "admitted_at",
        "started_at",
        "finished_at",
        "local",
        "reason",
        "result",
    }


def test_trigger_of_a_paused_schedule_is_409_and_changes_nothing(api: Api) -> None:
    created = api.create().body
    api.call("POST", f"/schedules/{created['id']}/pause")
    before = api.snapshot()
    answer = api.call("POST", f"/schedules/{created['id']}/trigger")
    assert answer.status == 409
    assert answer.error["code"] == "schedule_not_active"
    assert api.snapshot() == before


def test_backfill_creates_the_missing_occurrences_never_a_second_copy(api: Api) -> None:
    created = api.create().body
    path = f"/schedules/{created['id']}/backfill"
    # Mon 23 Nov to Fri 27 Nov 2026, 09:00 in New York: five weekdays.
    week = {"start_at": "2026-11-23T00:00:00Z", "end_at": "2026-11-28T00:00:00Z"}
    answer = api.call("POST", path, week)
    assert answer.status == 200, answer.body
    assert answer.body["created"] == 5 and answer.body["dry_run"] is False
    assert [r["scheduled_at"] for r in answer.body["runs"]] == [
        f"2026-11-{day}T14:00:00Z" for day in (23, 24, 25, 26, 27)
    ]
    assert {r["kind"] for r in answer.body["runs"]} == {"backfill"}
    wider = {"start_at": "2026-11-20T00:00:00Z", "end_at": "2026-11-28T00:00:00Z"}
    again = api.call("POST", path, wider)
    assert again.body["created"] == 1  # only Friday 20 Nov was missing
    assert again.body["runs"][0]["scheduled_at"] == "2026-11-20T14:00:00Z"


def test_a_dry_run_backfill_lists_the_missing_slots_and_stores_nothing(api: Api) -> None:
    created = api.create().body
    path = f"/schedules/{created['id']}/backfill"
    week = {"start_at": "2026-11-23T00:00:00Z", "end_at": "2026-11-28T00:00:00Z"}
    assert api.call("POST", path, week).body["created"] == 5
    before = api.snapshot()
    wider = {"start_at": "2026-11-19T00:00:00Z", "end_at": "2026-11-28T00:00:00Z"}
    answer = api.call("POST", path, {**wider, "dry_run": True})
    assert answer.status == 200, answer.body
    assert answer.body["dry_run"] is True and answer.body["created"] == 0
    # Thursday 19 and Friday 20: the week after already has its occurrences.
    assert [r["scheduled_at"] for r in answer.body["runs"]] == [
        "2026-11-19T14:00:00Z",
        "2026-11-20T14:00:00Z",
    ]
    assert {r["status"] for r in answer.body["runs"]} == {"scheduled"}
    assert api.snapshot() == before
    # The same range for real creates exactly those.
    real = api.call("POST", path, wider).body
    assert [r["scheduled_at"] for r in real["runs"]] == [
        r["scheduled_at"] for r in answer.body["runs"]
    ]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_backfill_from_the_future_is_refused_naming_start_at(api: Api, dry_run: bool) -> None:
    created = api.create().body
    before = api.snapshot()
    answer = api.call(
        "POST",
        f"/schedules/{created['id']}/backfill",
        {"start_at": "2026-12-03T00:00:00Z", "end_at": "2026-12-01T00:00:00Z", "dry_run": dry_run},
    )
    assert answer.status == 422, answer.body
    assert answer.error["field"] == "start_at"
    assert answer.error["message"] == (
        "start_at: must not be in the future: backfill is for the past"
    )
    assert api.snapshot() == before


def test_backfill_refusals_name_the_field_and_change_nothing(api: Api) -> None:
    every_second = {"every": "PT1S", "start_at": "2026-11-01T00:00:00Z"}
    created = api.create({**REPORT, "spec": every_second}).body
    path = f"/schedules/{created['id']}/backfill"
    before = api.snapshot()
    for body, field in [
        ({"start_at": "2026-11-30T00:00:00Z", "end_at": "2026-12-02T00:00:00Z"}, "end_at"),
        ({"start_at": "2026-11-30T01:00:00Z", "end_at": "2026-11-30T00:00:00Z"}, "end_at"),
        ({"start_at": "2026-11-30T00:00:00Z", "end_at": "2026-11-30T02:00:00Z"}, "end_at"),
        ({"start_at": "yesterday", "end_at": "2026-11-30T00:00:00Z"}, "start_at"),
        ({"start_at": "2026-11-30T00:00:00", "end_at": "2026-11-30T00:00:10Z"}, "start_at"),
        ({"end_at": "2026-11-30T00:00:00Z"}, "start_at"),
        ({"start_at": "2026-11-30T00:00:00Z", "end_at": 5}, "end_at"),
        (
            {"start_at": "2026-11-30T00:00:00Z", "end_at": "2026-11-30T00:00:10Z", "dry_run": "y"},
            "dry_run",
        ),
    ]:
        answer = api.call("POST", path, body)
        assert answer.status == 422, (body, answer.body)
        assert answer.error["field"] == field, body
        assert api.snapshot() == before


def test_runs_are_listed_newest_first_in_pages(api: Api) -> None:
    created = api.create().body
    path = f"/schedules/{created['id']}"
    api.call(
        "POST",
        f"{path}/backfill",
        {"start_at": "2026-11-23T00:00:00Z", "end_at": "2026-11-28T00:00:00Z"},
    )
    seen: list[str] = []
    token: str | None = None
    while True:
        query = {"limit": "2"} | ({"next_token": token} if token else {})
        body = api.call("GET", f"{path}/runs", query=query).body
        assert len(body["runs"]) <= 2
        seen += [r["scheduled_at"] for r in body["runs"]]
        token = body["next_token"]
        if token is None:
            break
    assert seen == [f"2026-11-{day}T14:00:00Z" for day in (27, 26, 25, 24, 23)]


def test_an_unknown_run_is_404(api: Api, unchanged: None) -> None:
    answer = api.call("GET", "/runs/sch_nope.v1.20261201T090000Z")
    assert answer.status == 404
    assert answer.error["code"] == "run_not_found"


# --- refusals of bad input ---------------------------------------------------------------

BAD_BODIES = [
    pytest.param({**REPORT, "spec": {"cron": "0 25 * * *"}}, "spec.cron", id="cron-hour"),
    pytest.param({**REPORT, "spec": {"cron": "every day"}}, "spec", id="cron-shape"),
    pytest.param(
        {**REPORT, "spec": {"cron": "0 9 * * *", "time_zone": "Mars/Olympus"}},
        "spec.time_zone",
        id="time-zone",
    ),
    pytest.param({**REPORT, "spec": {"every": "P1M"}}, "spec.every", id="every-months"),
    pytest.param({**REPORT, "spec": {"every": "PT0S"}}, "spec.every", id="every-zero"),
    pytest.param({**REPORT, "spec": {"at": "soon"}}, "spec.at", id="at-garbage"),
    pytest.param({**REPORT, "spec": {"at": "2026-01-01T09:00:00Z"}}, "spec.at", id="at-past"),
    pytest.param({**REPORT, "spec": {"at": "2027-01-01T09:00"}}, "spec.at", id="at-no-zone"),
    pytest.param({**REPORT, "spec": {}}, "spec", id="spec-empty"),
    pytest.param({**REPORT, "spec": {"cron": "0 9 * * *", "every": "PT1M"}}, "spec", id="two"),
    pytest.param({**REPORT, "spec": {"cron": "0 9 * * *", "tz": "UTC"}}, "spec.tz", id="spec-x"),
    pytest.param({**REPORT, "spec": {"cron": 9}}, "spec.cron", id="cron-number"),
    pytest.param({k: v for k, v in REPORT.items() if k != "target"}, "target", id="no-target"),
    pytest.param({**REPORT, "target": {"type": "ftp"}}, "target.type", id="target-type"),
    pytest.param({**REPORT, "target": {"type": "webhook"}}, "target.url", id="no-url"),
    pytest.param(
        {**REPORT, "target": {"type": "webhook", "url": "ftp://x"}}, "target.url", id="url"
    ),
    pytest.param({**REPORT, "target": "https://x"}, "target", id="target-string"),
    pytest.param({**REPORT, "policy": {"overdue": "sometimes"}}, "policy.overdue", id="overdue"),
    pytest.param({**REPORT, "policy": {"overdue": "expire"}}, "policy.catchup_window", id="win"),
    pytest.param({**REPORT, "policy": {"dst_gap": "later"}}, "policy.dst_gap", id="dst-gap"),
    pytest.param(
        {**REPORT, "policy": {"retry": {"max_attempts": 0}}},
        "policy.retry.max_attempts",
        id="retry",
    ),
    pytest.param({**REPORT, "policy": {"run_timeout": "P2D"}}, "policy.run_timeout", id="rt"),
    pytest.param({**REPORT, "policy": {"colour": "red"}}, "policy.colour", id="policy-x"),
    pytest.param({**REPORT, "name": ""}, "name", id="name-empty"),
    pytest.param({k: v for k, v in REPORT.items() if k != "name"}, "name", id="no-name"),
    pytest.param({**REPORT, "payload": [1, 2]}, "payload", id="payload-list"),
    pytest.param({**REPORT, "owner": "me"}, "owner", id="unknown-field"),
    pytest.param([REPORT], "body", id="array"),
]


@pytest.mark.parametrize(("body", "field"), BAD_BODIES)
def test_an_invalid_schedule_is_422_naming_the_field_and_changes_nothing(
    api: Api, unchanged: None, body: Any, field: str
) -> None:
    answer = api.call("POST", "/schedules", body)
    assert answer.status == 422, answer.body
    assert answer.error["code"] == "validation_error"
    assert answer.error["field"] == field or answer.error["field"].startswith(f"{field}."), (
        answer.error
    )
    assert answer.error["message"]


def test_malformed_json_is_400_and_changes_nothing(api: Api, unchanged: None) -> None:
    answer = api.call("POST", "/schedules", raw='{"name": "report", "spec": ')
    assert answer.status == 400
    assert answer.error["code"] == "invalid_json"
    answer = api.call("POST", "/schedules/sch_x/pause", raw="{note")
    assert answer.status == 400


def test_a_missing_body_is_422(api: Api, unchanged: None) -> None:
    answer = api.call("POST", "/schedules")
    assert answer.status == 422
    assert answer.error["field"] == "body"


def test_a_body_over_the_limit_is_413_and_changes_nothing(api: Api, unchanged: None) -> None:
    big = {**REPORT, "payload": {"blob": "x" * MAX_BODY_BYTES}}
    answer = api.call("POST", "/schedules", big)
    assert answer.status == 413
    assert answer.error["code"] == "body_too_large"


def test_a_body_that_is_not_json_is_415_and_changes_nothing(api: Api, unchanged: None) -> None:
    answer = api.call(
        "POST", "/schedules", REPORT, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert answer.status == 415
    assert answer.error["code"] == "unsupported_media_type"


def test_an_unknown_route_is_404_in_the_error_shape(api: Api) -> None:
    answer = api.call("GET", "/nothing/here")
    assert answer.status == 404
    assert answer.error["code"] == "no_route"


# --- health and the OpenAPI document -----------------------------------------------------


def test_health(api: Api) -> None:
    answer = api.call("GET", "/health")
    assert answer.status == 200
    assert answer.body == {"status": "ok", "time": "2026-12-01T08:00:00Z"}


def test_openapi_is_served_and_the_committed_copy_is_current(api: Api) -> None:
    answer = api.call("GET", "/openapi.json")
    assert answer.status == 200
    # Served: the document of this deployment (tests/handlers/test_api_target_support.py
    # shows the SQLite stack's); these services deliver to every type.
    assert api.services.schedules.target_support is None
    assert answer.body == json.loads(openapi_json())
    committed = (REPO / "docs" / "openapi.json").read_text(encoding="utf-8")
    assert committed == openapi_json(), (
        "docs/openapi.json is stale: regenerate it with "
        "`.venv/bin/python -m handlers.api --openapi > docs/openapi.json`"
    )
    paths = answer.body["paths"]
    assert set(paths) >= {
        "/schedules",
        "/schedules/{schedule_id}",
        "/schedules/{schedule_id}/pause",
        "/schedules/{schedule_id}/resume",
        "/schedules/{schedule_id}/trigger",
        "/schedules/{schedule_id}/backfill",
        "/schedules/{schedule_id}/runs",
        "/runs/{occurrence_id}",
        "/health",
    }
    assert "428" in paths["/schedules/{schedule_id}"]["put"]["responses"]
    assert "201" in paths["/schedules"]["post"]["responses"]


def test_instants_in_answers_are_utc_with_z(api: Api) -> None:
    created = api.create().body
    assert created["next_due"] == "2026-12-01T14:00:00Z"
    assert utc(created["updated_at"]) == api.clock.now()


@pytest.mark.parametrize(
    ("method", "path", "statuses"),
    [
        ("post", "/schedules", {201, 400, 404, 413, 415, 422, 500, 503}),
        ("put", "/schedules/{schedule_id}", {200, 409, 412, 428, 503}),
        ("post", "/schedules/{schedule_id}/resume", {200, 409}),
        ("post", "/schedules/{schedule_id}/rotate-secret", {200, 409, 501, 503}),
        ("post", "/runs/{occurrence_id}/cancel", {200, 404, 409, 422, 501}),
        ("get", "/runs", {200, 400, 404, 422}),
    ],
)
def test_every_status_an_operation_can_answer_is_documented(
    method: str, path: str, statuses: set[int]
) -> None:
    # Contention (409), a full secret store (503), no secret store (501),
    # a malformed token (400) or one naming no page (404), an unexpected error (500).
    documented = json.loads(openapi_json())["paths"][path][method]["responses"]
    assert statuses <= {int(status) for status in documented}
