"""POST /runs/{id}/cancel through the API handler over the SQLite stack as
``duetime local`` wires it: a waiting run never starts, a running one is
marked cancelled and its webhook's later answer ignored, a finished one is
409 naming its status. (Both run stores: tests/contract/test_run_cancel_contract.py.)"""

from __future__ import annotations

import pytest

from domain.delivery import Outcome
from domain.run import DeliveryIntent
from tests.handlers.test_api import Api
from tests.handlers.test_api_run_views import (
    EVERY_10S,
    api,
    failed_trigger,
    tick,
    unchanged,
    worker,
)
from tests.unit.test_runs import FakeTarget

__all__ = ["api", "unchanged"]  # fixtures used by name


def test_cancel_of_an_admitted_run_keeps_it_from_starting(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    run = api.call("POST", f"/schedules/{schedule}/trigger").body  # admitted, intent queued
    api.clock.advance(2)

    answer = api.call("POST", f"/runs/{run['occurrence_id']}/cancel", {"reason": "wrong data"})
    assert answer.status == 200, answer.body
    assert answer.body["status"] == "cancelled"
    assert answer.body["reason"] == "cancelled by a user: wrong data"
    assert answer.body["finished_at"] == "2026-12-01T08:00:02Z"

    target = FakeTarget()
    decision = worker(api, target).handle(DeliveryIntent.from_dict(run))
    assert decision.action == "delete" and target.calls == []
    assert api.call("GET", f"/runs/{run['occurrence_id']}").body["status"] == "cancelled"


def test_cancel_without_a_body_says_only_that_a_user_cancelled_it(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    run = api.call("POST", f"/schedules/{schedule}/trigger").body
    answer = api.call("POST", f"/runs/{run['occurrence_id']}/cancel")
    assert answer.status == 200, answer.body
    assert answer.body["reason"] == "cancelled by a user"


def test_cancel_of_a_planned_run_keeps_the_dispatcher_from_admitting_it(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    tick(api)  # plans 90 s ahead
    planned = api.call(
        "GET", f"/schedules/{schedule}/runs", query={"include": "planned", "order": "oldest"}
    ).body["runs"]
    later = planned[-1]  # planned, or queued ahead for its second
    assert later["status"] == "planned"
    assert api.call("POST", f"/runs/{later['occurrence_id']}/cancel").status == 200
    api.clock.advance(120)
    sent = tick(api)
    assert later["occurrence_id"] not in sent.ids()
    # An intent queued ahead before the cancel reaches a worker: nothing is called.
    target = FakeTarget()
    decision = worker(api, target).handle(DeliveryIntent.from_dict(later))
    assert decision.action == "delete" and target.calls == []
    assert api.call("GET", f"/runs/{later['occurrence_id']}").body["status"] == "cancelled"


def test_cancel_of_a_running_webhook_run_ignores_its_late_answer(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    run = api.call("POST", f"/schedules/{schedule}/trigger").body
    occurrence_id = run["occurrence_id"]
    target = FakeTarget(Outcome.succeeded(200, '{"ok":true}'))
    answers: list[int] = []

    def cancel_while_in_flight() -> None:
        assert api.call("GET", f"/runs/{occurrence_id}").body["status"] == "running"
        answers.append(api.call("POST", f"/runs/{occurrence_id}/cancel").status)

    target.during = cancel_while_in_flight
    decision = worker(api, target).handle(DeliveryIntent.from_dict(run))
    assert answers == [200]
    assert decision.action == "delete"  # the 200 that came back changes nothing
    body = api.call("GET", f"/runs/{occurrence_id}").body
    assert body["status"] == "cancelled" and body["reason"] == "cancelled by a user"
    assert [(a["number"], a["outcome"]) for a in body["attempts_log"]] == [(1, "cancelled")]


@pytest.mark.parametrize("status", ["failed", "cancelled"])
def test_cancel_of_a_finished_run_is_409_naming_its_status_and_changes_nothing(
    api: Api, status: str
) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    if status == "failed":
        occurrence_id = failed_trigger(api, schedule)
    else:
        occurrence_id = api.call("POST", f"/schedules/{schedule}/trigger").body["occurrence_id"]
        assert api.call("POST", f"/runs/{occurrence_id}/cancel").status == 200
    before = api.snapshot()
    answer = api.call("POST", f"/runs/{occurrence_id}/cancel", {"reason": "again"})
    assert answer.status == 409, answer.body
    assert answer.body["error"] == {
        "code": "not_cancellable",
        "message": f"run {occurrence_id!r} is {status}: it has already finished, "
        "so there is nothing to cancel",
        "field": "status",
    }
    assert api.snapshot() == before


def test_cancel_of_an_unknown_run_is_404(api: Api, unchanged: None) -> None:
    answer = api.call("POST", "/runs/sch_nope.v1.20261201T080000Z/cancel")
    assert answer.status == 404
    assert answer.body["error"]["code"] == "run_not_found"


@pytest.mark.parametrize(
    ("body", "field"),
    [({"reason": "x" * 501}, "reason"), ({"reason": 5}, "reason"), ({"force": True}, "force")],
)
def test_a_bad_cancel_body_is_422_naming_the_field_and_changes_nothing(
    api: Api, body: dict[str, object], field: str
) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    occurrence_id = api.call("POST", f"/schedules/{schedule}/trigger").body["occurrence_id"]
    before = api.snapshot()
    answer = api.call("POST", f"/runs/{occurrence_id}/cancel", body)
    assert answer.status == 422, answer.body
    assert answer.body["error"]["field"] == field
    assert api.snapshot() == before


def test_a_reason_too_long_says_characters_and_how_many(api: Api) -> None:
    schedule = api.create(EVERY_10S).body["id"]
    occurrence_id = api.call("POST", f"/schedules/{schedule}/trigger").body["occurrence_id"]
    answer = api.call("POST", f"/runs/{occurrence_id}/cancel", {"reason": "x" * 501})
    assert answer.body["error"]["message"] == "reason: must be at most 500 characters (got 501)"
    note = api.call("POST", f"/schedules/{schedule}/pause", {"note": "n" * 1001})
    assert note.body["error"]["message"] == "note: must be at most 1000 characters (got 1001)"
