"""The operator's commands against recorded answers of the API's contract:
cancel, dead-letters retry, rotate-secret, backfill --dry-run, describe of a
deleted schedule, explain of a stored schedule, and refusals that name the
flag the user typed."""

from __future__ import annotations

import json

import pytest

from cli.client import ApiError
from tests.cli import answers
from tests.cli.answers import SID
from tests.cli.test_commands_recorded import (  # noqa: F401  (fixtures)
    OCC,
    RecordedApi,
    Run,
    api,
    duetime,
    refused,
)

# --- runs cancel ----------------------------------------------------------------------------


def test_runs_cancel_posts_the_reason_and_prints_the_cancelled_run(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    cancelled = answers.run("20261202T023000Z", "cancelled", reason="cancelled: wrong data")
    api.answer("POST", f"/runs/{OCC}/cancel", cancelled)
    code, out, _ = duetime("runs", "cancel", OCC, "--reason", "wrong data")
    assert code == 0
    assert (api.sent[0].method, api.sent[0].body) == ("POST", {"reason": "wrong data"})
    assert "status:        cancelled" in out


def test_runs_cancel_without_a_reason_sends_an_empty_body(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    api.answer("POST", f"/runs/{OCC}/cancel", answers.run("20261202T023000Z", "cancelled"))
    assert duetime("runs", "cancel", OCC)[0] == 0
    assert api.sent[0].body == {}


def test_runs_cancel_of_a_finished_run_is_the_apis_409(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    api.answer(
        "POST", f"/runs/{OCC}/cancel", ApiError(409, f"run {OCC!r} already finished: succeeded")
    )
    assert "HTTP 409: run" in refused(duetime, "runs", "cancel", OCC)


# --- dead-letters retry ----------------------------------------------------------------------


def test_dead_letters_retry_retries_the_letters_occurrence(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    letter = answers.dead_letter()
    api.answer("GET", "/dead-letters", {"dead_letters": [letter], "next_token": None})
    api.answer("POST", f"/runs/{OCC}/retry", answers.run("20261202T023000Z", "admitted"))
    code, out, _ = duetime("dead-letters", "retry", "dl_1")
    assert code == 0
    assert [(s.method, s.path) for s in api.sent] == [
        ("GET", "/dead-letters"),
        ("POST", f"/runs/{OCC}/retry"),
    ]
    assert "status:        admitted" in out


def test_dead_letters_retry_reads_the_next_pages(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    other = {**answers.dead_letter(), "id": "dl_0", "occurrence_id": f"{SID}.v2.x"}
    api.answer(
        "GET", "/dead-letters",
        {"dead_letters": [other], "next_token": "t2"},
        {"dead_letters": [answers.dead_letter()], "next_token": None},
    )  # fmt: skip
    api.answer("POST", f"/runs/{OCC}/retry", answers.run("20261202T023000Z", "admitted"))
    assert duetime("dead-letters", "retry", "dl_1")[0] == 0
    assert api.sent[1].query == {"limit": 100, "next_token": "t2"}


def test_dead_letters_retry_of_a_letter_without_an_occurrence_retries_nothing(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    letter = {**answers.dead_letter(), "occurrence_id": None, "schedule_id": None}
    api.answer("GET", "/dead-letters", {"dead_letters": [letter], "next_token": None})
    assert "dead letter dl_1 names no occurrence" in refused(
        duetime, "dead-letters", "retry", "dl_1"
    )
    assert [s.method for s in api.sent] == ["GET"]


# --- schedules rotate-secret ------------------------------------------------------------------


def test_rotate_secret_prints_the_new_secret_once(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    api.answer(
        "POST", f"/schedules/{SID}/rotate-secret", answers.schedule(webhook_secret="whsec_new")
    )
    code, out, _ = duetime("schedules", "rotate-secret", SID)
    assert code == 0
    assert (api.sent[0].method, api.sent[0].body) == ("POST", {})
    assert out.count("whsec_new") == 1
    assert "webhook secret (shown once): whsec_new" in out
    assert "the previous one for up to 5 more minutes" in out


def test_rotate_secret_of_a_schedule_without_a_webhook_is_the_apis_409(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    api.answer(
        "POST",
        f"/schedules/{SID}/rotate-secret",
        ApiError(409, f"schedule {SID!r} has no webhook target, so no signing secret"),
    )
    assert "HTTP 409" in refused(duetime, "schedules", "rotate-secret", SID)


# --- schedules backfill --dry-run --------------------------------------------------------------


def test_backfill_dry_run_asks_for_a_preview_and_says_nothing_was_created(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    slots = [answers.run(t, "scheduled", kind="backfill", attempts=0, late_s=None)
             for t in ("20261201T023000Z", "20261202T023000Z")]  # fmt: skip
    api.answer("POST", f"/schedules/{SID}/backfill", answers.backfill_preview(*slots))
    code, out, _ = duetime("schedules", "backfill", SID, "--from", "2d", "--dry-run")
    assert code == 0
    assert api.sent[0].body == {
        "start_at": "2026-11-30T12:00:00Z",
        "end_at": "2026-12-02T12:00:00Z",
        "dry_run": True,
    }
    assert out.splitlines()[0] == (
        "would create 2 occurrences (kind backfill); dry run: nothing created"
    )
    assert slots[1]["occurrence_id"] in out


def test_backfill_says_one_occurrence_not_one_occurrences(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    run = answers.run("20261201T023000Z", "scheduled", kind="backfill", attempts=0)
    api.answer("POST", f"/schedules/{SID}/backfill", {"runs": [run], "created": 1})
    code, out, _ = duetime("schedules", "backfill", SID, "--from", "2d")
    assert code == 0
    assert "dry_run" not in api.sent[0].body
    assert out.splitlines()[0] == "created 1 occurrence (kind backfill)"


def test_backfill_refusal_of_the_api_names_the_flags(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    api.answer(
        "POST",
        f"/schedules/{SID}/backfill",
        ApiError(422, "end_at: must not be before start_at", "end_at"),
    )
    err = refused(duetime, "schedules", "backfill", SID, "--from", "2d")
    assert "HTTP 422: --to: must not be before --from" in err
    assert "start_at" not in err and "end_at" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--from", "2099-01-01T00:00:00Z"], "--from: 2099-01-01T00:00:00Z is in the future"),
        (["--from", "2d", "--to", "2099-01-01T00:00:00Z"], "--to: 2099-01-01T00:00:00Z is in"),
        (["--from", "1d", "--to", "2d"], "--to: 2026-11-30T12:00:00Z is before --from"),
    ],
)
def test_backfill_refuses_a_range_it_cannot_take_before_sending(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
    argv: list[str],
    message: str,
) -> None:
    assert message in refused(duetime, "schedules", "backfill", SID, *argv)
    assert api.sent == []


# --- schedules describe of a deleted schedule --------------------------------------------------


def test_describe_of_a_deleted_schedule_shows_it_deleted_with_its_history(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    api.answer("GET", f"/schedules/{SID}", ApiError(404, "deleted", None, answers.deleted_404()))
    api.answer(
        "GET",
        f"/schedules/{SID}/versions",
        {"versions": [answers.version(1), answers.version(2)], "next_token": None},
    )
    api.answer(
        "GET",
        "/runs",
        {"runs": [answers.run("20261202T023000Z", "succeeded")], "next_token": None},
    )
    code, out, err = duetime("schedules", "describe", SID)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"sales report  ({SID})"
    assert lines[1] == "  status:   deleted at 2026-12-02T09:00:00Z"
    assert "  version:  2 (the last, created 2026-12-01T08:30:00Z)" in lines
    assert f"{SID}.v2.20261202T023000Z" in out
    assert f"duetime runs list {SID}" in out
    assert "active" not in out and "Next occurrences" not in out


def test_describe_of_a_deleted_schedule_whose_history_is_gone_still_says_deleted(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    gone = ApiError(404, "gone")
    api.answer("GET", f"/schedules/{SID}", ApiError(404, "d", None, answers.deleted_404()))
    api.answer("GET", f"/schedules/{SID}/versions", gone)
    api.answer("GET", "/runs", gone)
    code, out, _ = duetime("schedules", "describe", SID)
    assert code == 0
    assert "  status:   deleted at 2026-12-02T09:00:00Z" in out.splitlines()


def test_describe_json_of_a_deleted_schedule_prints_the_apis_answer(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    body = answers.deleted_404()
    api.answer("GET", f"/schedules/{SID}", ApiError(404, "d", None, body))
    code, out, _ = duetime("schedules", "describe", SID, "--json")
    assert code == 0 and json.loads(out) == body


def test_describe_of_an_unknown_id_is_a_404_not_a_deleted_schedule(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    body = answers.not_found_404("sch_nope")
    api.answer("GET", "/schedules/sch_nope", ApiError(404, body["error"]["message"], None, body))
    err = refused(duetime, "schedules", "describe", "sch_nope")
    assert "HTTP 404: schedule 'sch_nope' not found" in err
    assert "duetime schedules list" in err
    assert "deleted" not in err
    assert len(api.sent) == 1


# --- explain --schedule -----------------------------------------------------------------------


def test_explain_a_stored_schedule_with_its_own_dst_policy(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    # Europe/London springs forward on 2027-03-28 at 01:00 UTC (01:00 GMT becomes
    # 02:00 BST): wall times 01:00-01:59 do not exist. The stored schedule fires at
    # 01:30 with dst_gap=shift.
    stored = answers.schedule(
        spec={**answers.schedule()["spec"], "cron": "30 1 * * *"},
        policy={**answers.schedule()["policy"], "dst_gap": "shift"},
    )
    api.answer("GET", f"/schedules/{SID}", stored)
    code, out, _ = duetime(
        "explain", "--schedule", SID, "--after", "2027-03-27T12:00:00Z", "--count", "1"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"sales report ({SID}), version 2"
    # shift: 01:30 read with the offset before the jump (GMT) is 01:30Z, 02:30 BST.
    assert lines[2].split()[:2] == ["2027-03-28T02:30:00+01:00", "2027-03-28T01:30:00Z"]
    # The flag tries another policy: next_valid runs at the jump, 02:00 BST.
    code, out, _ = duetime(
        "explain", "--schedule", SID, "--after", "2027-03-27T12:00:00Z", "--count", "1",
        "--dst-gap", "next_valid", "--json",
    )  # fmt: skip
    data = json.loads(out)
    assert data["schedule_id"] == SID
    assert data["occurrences"][0]["local"] == "2027-03-28T02:00:00+01:00"


def test_explain_a_stored_every_schedule_keeps_its_rhythm(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    spec = {**answers.schedule()["spec"], "cron": None, "every": "PT1H30M",
            "anchor_at": "2026-12-01T00:10:00Z", "time_zone": None}  # fmt: skip
    api.answer("GET", f"/schedules/{SID}", answers.schedule(spec=spec))
    code, out, _ = duetime(
        "explain", "--schedule", SID, "--after", "2026-12-02T00:00:00Z", "--count", "2", "--json"
    )
    assert code == 0
    assert [o["utc"] for o in json.loads(out)["occurrences"]] == [
        "2026-12-02T00:10:00Z",  # the anchor plus 16 intervals of 90 minutes
        "2026-12-02T01:40:00Z",
    ]


# --- refusals name the flag -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "message", "shown"),
    [
        ("spec.time_zone", "spec.time_zone: unknown zone 'X'", "HTTP 422: --tz: unknown zone 'X'"),
        ("policy.retry.cap", "policy.retry.cap: must be at least policy.retry.base",
         "HTTP 422: --retry-cap: must be at least --retry-base"),
        ("spec.end_at", "spec.end_at: must be after spec.start_at",
         "HTTP 422: --end: must be after --start"),
        ("target.headers", "target.headers: 'Host' may not be set",
         "HTTP 422: --header: 'Host' may not be set"),
        ("spec.cron.minute", "spec.cron.minute: 61 is outside 0-59",
         "HTTP 422: --cron minute: 61 is outside 0-59"),
    ],
)  # fmt: skip
def test_the_apis_refusal_names_the_flag_that_set_the_field(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
    field: str,
    message: str,
    shown: str,
) -> None:
    api.answer("POST", "/schedules", ApiError(422, message, field))
    err = refused(
        duetime, "schedules", "create", "--name", "x", "--every", "1h", "--webhook", "https://e.x/h"
    )
    assert shown in err
    assert field not in err


def test_dead_letters_retry_of_an_occurrence_id_retries_it_without_reading_the_queue(
    api: RecordedApi,  # noqa: F811
    duetime: Run,  # noqa: F811
) -> None:
    api.answer("POST", f"/runs/{OCC}/retry", answers.run("20261202T023000Z", "admitted"))
    assert duetime("dead-letters", "retry", OCC)[0] == 0
    assert [(s.method, s.path) for s in api.sent] == [("POST", f"/runs/{OCC}/retry")]
