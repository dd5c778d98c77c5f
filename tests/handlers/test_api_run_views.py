"""The operator's view of runs: filters, the listing across schedules, each
run's attempts, retry and the dead letters, through the API handler over the
SQLite stack as ``duetime local`` wires it (``build_services`` with a data
directory: the SQLite delivery queue included)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from bootstrap.settings import Settings
from domain.delivery import Outcome
from domain.partition import Partitioning
from domain.run import DeliveryIntent, RunStatus
from handlers.api import build_services
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.runs import RunWorker
from tests.conftest import WEBHOOK, FakeClock, FakeQueue, utc
from tests.handlers.test_api import Api
from tests.unit.test_runs import FakeTarget

EVERY_10S = {"name": "pulse", "spec": {"every": "PT10S"}, "target": WEBHOOK}


@pytest.fixture
def api(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    secrets = InMemorySecretStore()
    services = build_services(
        Settings(shards=4, bucket_s=60), data_dir=tmp_path, clock=clock, secrets=secrets
    )
    yield Api(services, tmp_path / "duetime.db", clock, secrets)
    services.schedules.store.close()  # type: ignore[attr-defined]


@pytest.fixture
def unchanged(api: Api) -> Iterator[None]:
    before = api.snapshot()
    yield
    assert api.snapshot() == before


def _store(api: Api) -> SqliteStore:
    store = api.services.schedules.store
    assert isinstance(store, SqliteStore)
    return store


def tick(api: Api, queue: FakeQueue | None = None) -> FakeQueue:
    """One tick pass (plan 90 s ahead, admit what is due); returns the intents sent."""
    queue = queue or FakeQueue()
    config = TickConfig(partitioning=Partitioning(shards=4, bucket_s=60))
    Ticker(_store(api), queue, api.clock, config, owner="tick-test").tick_once()
    return queue


def worker(api: Api, target: FakeTarget) -> RunWorker:
    return RunWorker(SqliteRunStore(_store(api)), target, api.clock, random.Random(3))


def ids(answer: Any) -> list[str]:
    return [run["occurrence_id"] for run in answer.body["runs"]]


def failed_trigger(api: Api, schedule_id: str, error: str = "HTTP 400") -> str:
    """A triggered run of ``schedule_id``, run once and failed for good (a 400)."""
    run = api.call("POST", f"/schedules/{schedule_id}/trigger").body
    # The call itself stored the trigger admitted and queued its intent.
    intent = DeliveryIntent.from_dict(run)
    worker(api, FakeTarget(Outcome.permanent(error, 400))).handle(intent)
    assert api.call("GET", f"/runs/{intent.occurrence_id}").body["status"] == "failed"
    return intent.occurrence_id


# --- planned occurrences are left out by default ----------------------------------------


def test_a_fast_schedule_lists_its_newest_past_runs_first_not_its_planned_ones(
    api: Api,
) -> None:
    schedule = api.create(EVERY_10S).body
    tick(api)  # plans 90 s ahead: nine occurrences in the future
    api.clock.advance(25)
    tick(api)
    every = api.call("GET", f"/schedules/{schedule['id']}/runs", query={"include": "planned"})
    assert every.status == 200, every.body
    future = [r for r in every.body["runs"] if r["scheduled_at"] > "2026-12-01T08:00:25Z"]
    # Planned (queued ahead for their second): shown as such, not admitted yet.
    assert future and all(r["status"] == "planned" and r["admitted_at"] is None for r in future)

    answer = api.call("GET", f"/schedules/{schedule['id']}/runs")
    assert answer.status == 200, answer.body
    shown = [r["scheduled_at"] for r in answer.body["runs"]]
    assert shown == ["2026-12-01T08:00:20Z", "2026-12-01T08:00:10Z"]
    assert set(ids(answer)) == set(ids(every)) - {r["occurrence_id"] for r in future}


def test_order_oldest_lists_from_the_first_run(api: Api) -> None:
    schedule = api.create(EVERY_10S).body
    tick(api)
    api.clock.advance(35)
    tick(api)
    answer = api.call("GET", f"/schedules/{schedule['id']}/runs", query={"order": "oldest"})
    shown = [r["scheduled_at"] for r in answer.body["runs"]]
    assert shown == [
        "2026-12-01T08:00:10Z",
        "2026-12-01T08:00:20Z",
        "2026-12-01T08:00:30Z",
    ]


def test_since_is_inclusive_and_until_exclusive(api: Api) -> None:
    schedule = api.create(EVERY_10S).body
    tick(api)
    api.clock.advance(60)
    tick(api)
    answer = api.call(
        "GET",
        f"/schedules/{schedule['id']}/runs",
        query={"since": "2026-12-01T08:00:20Z", "until": "2026-12-01T09:00:40+01:00"},
    )
    assert answer.status == 200, answer.body
    assert [r["scheduled_at"] for r in answer.body["runs"]] == [
        "2026-12-01T08:00:30Z",
        "2026-12-01T08:00:20Z",
    ]


def test_pages_of_a_filtered_listing_hold_each_run_once(api: Api) -> None:
    schedule = api.create(EVERY_10S).body
    tick(api)
    api.clock.advance(80)
    tick(api)
    seen: list[str] = []
    token = None
    while True:
        query = {"limit": "3", "order": "oldest", **({"next_token": token} if token else {})}
        page = api.call("GET", f"/schedules/{schedule['id']}/runs", query=query)
        assert page.status == 200, page.body
        seen += [r["scheduled_at"] for r in page.body["runs"]]
        token = page.body["next_token"]
        if token is None:
            break
    assert seen == [f"2026-12-01T08:00:{s:02d}Z" for s in range(10, 60, 10)] + [
        "2026-12-01T08:01:00Z",
        "2026-12-01T08:01:10Z",
        "2026-12-01T08:01:20Z",
    ]


# --- status and kind filters, and GET /runs ----------------------------------------------


def test_status_and_kind_filters_across_every_schedule(api: Api) -> None:
    first = api.create(EVERY_10S).body["id"]
    second = api.create({**EVERY_10S, "name": "other"}).body["id"]
    failed_one = failed_trigger(api, first)
    failed_two = failed_trigger(api, second)
    api.clock.advance(1)

    answer = api.call("GET", "/runs", query={"status": "failed,expired"})
    assert answer.status == 200, answer.body
    assert sorted(ids(answer)) == sorted([failed_one, failed_two])
    assert {r["schedule_id"] for r in answer.body["runs"]} == {first, second}

    triggers = api.call("GET", "/runs", query={"kind": "trigger"})
    assert sorted(ids(triggers)) == sorted([failed_one, failed_two])
    scheduled = api.call("GET", "/runs", query={"kind": "scheduled", "include": "planned"})
    assert scheduled.body["runs"] and all(r["kind"] == "scheduled" for r in scheduled.body["runs"])

    mine = api.call("GET", f"/schedules/{first}/runs", query={"status": "failed"})
    assert ids(mine) == [failed_one]
    none = api.call("GET", f"/schedules/{first}/runs", query={"status": "succeeded"})
    assert none.body == {"runs": [], "next_token": None}


def test_runs_across_schedules_come_newest_first_by_default(api: Api) -> None:
    first = api.create(EVERY_10S).body["id"]
    api.clock.advance(3)
    second = api.create({**EVERY_10S, "name": "later"}).body["id"]
    tick(api)
    api.clock.advance(20)
    tick(api)
    answer = api.call("GET", "/runs")
    instants = [r["scheduled_at"] for r in answer.body["runs"]]
    assert instants == sorted(instants, reverse=True)
    assert {r["schedule_id"] for r in answer.body["runs"]} == {first, second}
    assert all(at <= "2026-12-01T08:00:23Z" for at in instants)


# --- attempts ---------------------------------------------------------------------------


def test_a_run_serves_its_attempts_with_outcome_error_wait_and_lateness(api: Api) -> None:
    schedule = api.create(EVERY_10S).body
    run = api.call("POST", f"/schedules/{schedule['id']}/trigger").body
    api.clock.advance(2)
    intent = DeliveryIntent.from_dict(run)  # queued by the trigger call itself
    target = FakeTarget(Outcome.transient("HTTP 503", 503), Outcome.succeeded(201))
    first = worker(api, target).handle(intent)
    assert first.action == "retry"
    api.clock.advance(7)
    worker(api, target).handle(intent)

    body = api.call("GET", f"/runs/{run['occurrence_id']}").body
    assert body["status"] == "succeeded"
    assert body["late_s"] == 2.0
    assert body["attempts_log"] == [
        {
            "number": 1,
            "started_at": "2026-12-01T08:00:02Z",
            "finished_at": "2026-12-01T08:00:02Z",
            "outcome": "transient",
            "status_code": None,
            "error": "HTTP 503",
            "wait_s": 7.0,
        },
        {
            "number": 2,
            "started_at": "2026-12-01T08:00:09Z",
            "finished_at": "2026-12-01T08:00:09Z",
            "outcome": "succeeded",
            "status_code": 201,
            "error": None,
            "wait_s": None,
        },
    ]


def test_a_run_not_started_has_no_attempts_and_no_lateness(api: Api) -> None:
    schedule = api.create(EVERY_10S).body
    run = api.call("POST", f"/schedules/{schedule['id']}/trigger").body
    assert run["attempts_log"] == [] and run["late_s"] is None


# --- retry ------------------------------------------------------------------------------


def _queued(api: Api) -> list[dict[str, Any]]:
    queue = SqliteQueue(api.db, clock=api.clock)
    try:
        return [json.loads(m.body) for m in queue.receive(10, 0)]
    finally:
        queue.close()


def test_retry_runs_a_failed_run_again_as_its_next_attempt_with_the_same_key(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    occurrence_id = failed_trigger(api, schedule)
    api.clock.advance(60)

    answer = api.call("POST", f"/runs/{occurrence_id}/retry")
    assert answer.status == 202, answer.body
    assert answer.headers["Location"] == f"/runs/{occurrence_id}"
    body = answer.body
    assert body["occurrence_id"] == occurrence_id
    assert body["status"] == "admitted" and body["attempts"] == 1
    assert body["finished_at"] is None and body["admitted_at"] == "2026-12-01T08:01:00Z"
    assert body["reason"].startswith("retried on request at 2026-12-01T08:01:00Z (was failed")
    # The intent went out on the delivery queue at once (attempt 1 already made).
    [sent] = [m for m in _queued(api) if m["attempt"] == 1]  # the retry's, not the trigger's
    assert sent["occurrence_id"] == occurrence_id and sent["attempt"] == 1
    stored = _store(api).records.get_run(occurrence_id)
    assert stored is not None and not stored.pending

    target = FakeTarget()
    decision = worker(api, target).handle(DeliveryIntent.from_dict(sent))
    assert decision.action == "delete"
    [call] = target.calls
    assert call.occurrence_id == occurrence_id and call.attempt == 2
    after = api.call("GET", f"/runs/{occurrence_id}").body
    assert after["status"] == "succeeded"
    assert [a["number"] for a in after["attempts_log"]] == [1, 2]
    assert [a["outcome"] for a in after["attempts_log"]] == ["permanent", "succeeded"]


def test_a_retry_whose_send_fails_is_sent_by_the_next_tick(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    occurrence_id = failed_trigger(api, schedule)
    views = api.services.views
    assert views is not None
    broken = FakeQueue()
    broken.fail_with = ConnectionError("queue unreachable")
    views.queue = broken
    api.clock.advance(60)

    answer = api.call("POST", f"/runs/{occurrence_id}/retry")
    assert answer.status == 202, answer.body
    stored = _store(api).records.get_run(occurrence_id)
    assert stored is not None and stored.pending and stored.status is RunStatus.ADMITTED

    sent = tick(api)
    assert [i.occurrence_id for i in sent.sent].count(occurrence_id) == 1
    after = _store(api).records.get_run(occurrence_id)
    assert after is not None and not after.pending
    assert occurrence_id not in tick(api).ids()  # sent once


def test_retry_with_an_empty_object_body_is_accepted(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    occurrence_id = failed_trigger(api, schedule)
    answer = api.call("POST", f"/runs/{occurrence_id}/retry", {})
    assert answer.status == 202, answer.body


def test_a_retried_expired_run_is_delivered_not_expired_again(api: Api) -> None:
    schedule = api.create(
        {**EVERY_10S, "policy": {"overdue": "expire", "catchup_window": "PT5S"}}
    ).body["id"]
    run = api.call("POST", f"/schedules/{schedule}/trigger").body
    intent = DeliveryIntent.from_dict(run)  # queued by the trigger call itself
    api.clock.advance(30)  # the intent waited in the queue past the catchup window
    worker(api, FakeTarget()).handle(intent)
    assert api.call("GET", f"/runs/{intent.occurrence_id}").body["status"] == "expired"

    assert api.call("POST", f"/runs/{intent.occurrence_id}/retry").status == 202
    target = FakeTarget()
    worker(api, target).handle(intent)
    assert len(target.calls) == 1
    assert api.call("GET", f"/runs/{intent.occurrence_id}").body["status"] == "succeeded"


@pytest.mark.parametrize("status", ["succeeded", "admitted", "running", "skipped"])
def test_retry_of_a_run_that_is_not_failed_or_expired_is_409_and_changes_nothing(
    api: Api, status: str
) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    run = api.call("POST", f"/schedules/{schedule}/trigger").body
    occurrence_id = run["occurrence_id"]
    store = _store(api)
    if status != "admitted":  # a trigger is stored admitted by its call
        intent = DeliveryIntent.from_dict(run)  # queued by the trigger call itself
        if status == "succeeded":
            worker(api, FakeTarget()).handle(intent)
        elif status == "running":
            now = api.clock.now()
            SqliteRunStore(store).start_attempt(
                occurrence_id, now=now, lease_until=now + timedelta(minutes=5), run_token_hash=None
            )
        else:
            SqliteRunStore(store).finish(
                occurrence_id,
                attempt=None,
                status=RunStatus.SKIPPED,
                now=api.clock.now(),
                reason="overlap",
            )
    assert api.call("GET", f"/runs/{occurrence_id}").body["status"] == status
    before = api.snapshot()

    answer = api.call("POST", f"/runs/{occurrence_id}/retry")
    assert answer.status == 409, answer.body
    assert answer.body["error"]["code"] == "not_retryable"
    assert answer.body["error"]["message"] == (
        f"run {occurrence_id!r} is {status}: only a failed or expired run can be run again"
    )
    assert api.snapshot() == before


def test_retry_of_a_run_of_a_deleted_schedule_is_409_and_changes_nothing(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    occurrence_id = failed_trigger(api, schedule)
    assert api.call("DELETE", f"/schedules/{schedule}").status == 200
    before = api.snapshot()
    answer = api.call("POST", f"/runs/{occurrence_id}/retry")
    assert answer.status == 409
    assert "belongs to a deleted schedule" in answer.body["error"]["message"]
    assert api.snapshot() == before


def test_retry_of_an_unknown_run_is_404(api: Api, unchanged: None) -> None:
    answer = api.call("POST", "/runs/sch_nope.v1.20261201T080000Z/retry")
    assert answer.status == 404
    assert answer.body["error"]["code"] == "run_not_found"


def test_retry_with_a_field_in_its_body_is_422_and_changes_nothing(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    occurrence_id = failed_trigger(api, schedule)
    before = api.snapshot()
    answer = api.call("POST", f"/runs/{occurrence_id}/retry", {"force": True})
    assert answer.status == 422
    assert answer.body["error"]["field"] == "force"
    assert api.snapshot() == before


# --- dead letters -----------------------------------------------------------------------


def test_dead_letters_are_listed_newest_first_with_their_run_and_reason(api: Api) -> None:
    queue = SqliteQueue(api.db, clock=api.clock)
    try:
        for number in (1, 2, 3):
            sid = f"sch_dead{number}"
            intent = DeliveryIntent(
                f"{sid}.v1.20261201T080000Z", sid, 1, utc("2026-12-01T08:00:00Z")
            )
            queue.send_batch([intent])
            [message] = queue.receive(1, 0)
            queue.dead_letter(message, f"permanent error: HTTP 40{number}")
        queue.send_body("not an intent")
        [odd] = queue.receive(1, 0)
        queue.dead_letter(odd, "unreadable")
    finally:
        queue.close()

    first = api.call("GET", "/dead-letters", query={"limit": "2"})
    assert first.status == 200, first.body
    letters = first.body["dead_letters"]
    assert [d["reason"] for d in letters] == ["unreadable", "permanent error: HTTP 403"]
    assert letters[0]["occurrence_id"] is None and letters[0]["body"] == "not an intent"
    assert letters[1]["occurrence_id"] == "sch_dead3.v1.20261201T080000Z"
    assert letters[1]["schedule_id"] == "sch_dead3"
    assert letters[1]["receive_count"] == 1
    assert letters[1]["dead_lettered_at"] == "2026-12-01T08:00:00Z"
    second = api.call(
        "GET", "/dead-letters", query={"limit": "2", "next_token": first.body["next_token"]}
    )
    assert [d["schedule_id"] for d in second.body["dead_letters"]] == ["sch_dead2", "sch_dead1"]
    assert second.body["next_token"] is None


def test_a_dead_letter_token_the_api_did_not_hand_out_is_404(api: Api, unchanged: None) -> None:
    answer = api.call("GET", "/dead-letters", query={"next_token": "xyz"})
    assert answer.status == 404
    assert answer.body["error"]["code"] == "page_not_found"
    assert answer.body["error"]["field"] == "next_token"


@pytest.mark.parametrize("path", ["/schedules", "/runs", "/dead-letters", "/schedules/{id}/runs"])
@pytest.mark.parametrize("token", ["not a token", "a+b", "x" * 4001, "ab=c"])
def test_a_next_token_not_of_its_format_is_400_naming_it(api: Api, path: str, token: str) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    before = api.snapshot()
    answer = api.call("GET", path.format(id=schedule), query={"next_token": token})
    assert answer.status == 400, answer.body
    assert answer.body["error"] == {
        "code": "invalid_next_token",
        "message": "next_token: is not a page token; send it as a previous page returned it "
        "(letters, digits, '-' and '_', up to two '=' at the end)",
        "field": "next_token",
    }
    assert api.snapshot() == before


def test_a_well_formed_token_of_another_listing_is_404_naming_it(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    tick(api)
    api.clock.advance(60)
    tick(api)
    first = api.call("GET", "/runs", query={"limit": "1"}).body
    token = first["next_token"]
    assert token
    before = api.snapshot()
    # Oldest first is another listing: the newest-first token names no page of it.
    answer = api.call("GET", "/runs", query={"order": "oldest", "next_token": token})
    assert answer.status == 404, answer.body
    assert answer.body["error"]["code"] == "page_not_found"
    assert answer.body["error"]["field"] == "next_token"
    assert answer.body["error"]["message"].startswith("next_token: names no page of this listing")
    assert api.call("GET", f"/schedules/{schedule}/runs").status == 200
    assert api.snapshot() == before


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        (
            {"status": "failed,bogus"},
            "status",
            "status: 'bogus' is not one of scheduled, admitted, running, retrying, "
            "succeeded, failed, expired, skipped, cancelled",
        ),
        ({"status": "failed,"}, "status", "status: an empty name is not one of"),
        (
            {"kind": "cron"},
            "kind",
            "kind: 'cron' is not one of scheduled, trigger, backfill, summary",
        ),
        ({"since": "2026-12-01T08:00:00"}, "since", "since: '2026-12-01T08:00:00' has no offset"),
        ({"until": "yesterday"}, "until", "until:"),
        (
            {"since": "2026-12-01T09:00:00Z", "until": "2026-12-01T09:00:00Z"},
            "since",
            "since: must be before until",
        ),
        ({"order": "sideways"}, "order", "order:"),
        ({"include": "everything"}, "include", "include:"),
        ({"limit": "0"}, "limit", "limit:"),
        (
            {"statuss": "failed"},
            "statuss",
            "unknown query parameter 'statuss'; this route takes: status, kind, since, until, "
            "order, include, limit, next_token",
        ),
    ],
)
@pytest.mark.parametrize("path", ["/runs", "/schedules/{id}/runs"])
def test_a_bad_listing_parameter_is_422_naming_it_and_changes_nothing(
    api: Api, path: str, query: dict[str, str], field: str, message: str
) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    before = api.snapshot()
    answer = api.call("GET", path.format(id=schedule), query=query)
    assert answer.status == 422, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert answer.body["error"]["field"] == field
    assert answer.body["error"]["message"].startswith(message), answer.body
    assert api.snapshot() == before


@pytest.mark.parametrize(
    ("method", "path", "takes"),
    [
        ("GET", "/schedules", "this route takes: limit, next_token"),
        ("GET", "/health", "this route takes no query parameters"),
        ("POST", "/schedules/{id}/pause", "this route takes no query parameters"),
        ("DELETE", "/schedules/{id}", "this route takes no query parameters"),
        ("GET", "/dead-letters", "this route takes: limit, next_token"),
        ("POST", "/runs/{id}.v1.20261201T080000Z/retry", "this route takes no query parameters"),
    ],
)
def test_an_unknown_query_parameter_is_422_on_every_route_and_changes_nothing(
    api: Api, method: str, path: str, takes: str
) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    before = api.snapshot()
    answer = api.call(method, path.format(id=schedule), query={"status": "failed"})
    assert answer.status == 422, answer.body
    assert answer.body["error"] == {
        "code": "validation_error",
        "message": f"unknown query parameter 'status'; {takes}",
        "field": "status",
    }
    assert api.snapshot() == before


def test_a_query_parameter_given_twice_is_422_naming_it(api: Api, unchanged: None) -> None:
    from handlers.api import handler
    from tests.handlers.test_api import rest_event

    event = rest_event("GET", "/runs", query={"status": "failed"})
    event["multiValueQueryStringParameters"] = {"status": ["failed", "expired"]}
    answer = handler(event, None, service=api.services)
    assert answer["statusCode"] == 422
    assert json.loads(answer["body"])["error"] == {
        "code": "validation_error",
        "message": "query parameter 'status' is given 2 times; give it once (several values "
        "of a filter go in one, comma-separated: status=failed,expired)",
        "field": "status",
    }


def test_every_route_refuses_an_unknown_query_parameter(api: Api) -> None:
    # The rule is general: every route the API serves, a new one included.
    import re

    from handlers import api as module

    routes = [*module.app._static_routes, *module.app._dynamic_routes]
    assert len(routes) >= 17
    for route in routes:
        path = re.sub(r"<[^>]+>", "sch_x", route.path)
        answer = api.call(route.method, path, query={"foo": "1"})
        assert answer.status == 422, (route.method, path, answer.body)
        assert answer.body["error"]["field"] == "foo"
        assert answer.body["error"]["message"].startswith("unknown query parameter 'foo'; ")


# --- a retried run's attempts, under max_attempts ---------------------------------------


@pytest.mark.parametrize(("max_attempts", "after_transient"), [(1, "failed"), (3, "retrying")])
def test_a_retried_run_keeps_the_attempts_its_version_allows(
    api: Api, max_attempts: int, after_transient: str
) -> None:
    # Given a run that failed for good at attempt 1 (a 400)
    schedule = api.create({**EVERY_10S, "policy": {"retry": {"max_attempts": max_attempts}}}).body[
        "id"
    ]
    occurrence_id = failed_trigger(api, schedule)
    # When it is retried and the new attempt fails transiently
    assert api.call("POST", f"/runs/{occurrence_id}/retry").status == 202
    [sent] = [m for m in _queued(api) if m["attempt"] == 1]  # the retry's, not the trigger's
    worker(api, FakeTarget(Outcome.transient("HTTP 503", 503))).handle(
        DeliveryIntent.from_dict(sent)
    )
    # Then attempt 2 ends it failed when no attempt is left, or retrying when one is
    run = api.call("GET", f"/runs/{occurrence_id}").body
    assert (run["status"], run["attempts"]) == (after_transient, 2)


def test_a_retried_dead_letter_leaves_the_listing(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    retried, other = failed_trigger(api, schedule), failed_trigger(api, schedule)
    api.clock.advance(1)
    queue = SqliteQueue(api.db, clock=api.clock)
    try:  # the worker dead-letters the failed runs' intents
        for message in queue.receive(10, 0):
            queue.dead_letter(message, "permanent error: HTTP 400")
    finally:
        queue.close()
    listed = api.call("GET", "/dead-letters").body["dead_letters"]
    assert sorted(d["occurrence_id"] for d in listed) == sorted([retried, other])

    assert api.call("POST", f"/runs/{retried}/retry").status == 202
    listed = api.call("GET", "/dead-letters").body["dead_letters"]
    assert [d["occurrence_id"] for d in listed] == [other]
