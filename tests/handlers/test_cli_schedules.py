"""`duetime schedules ...` end to end against the API handler served on 127.0.0.1:
create's policy flags, an edit that changes only what is given, backfill, delete."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite.store import SqliteStore
from cli import runs
from domain.targets import WebhookTarget
from tests.conftest import FakeClock
from tests.handlers.cli_driver import Run, as_json, refused


def create(run: Run, *extra: str) -> dict[str, Any]:
    body: dict[str, Any] = as_json(
        run, "schedules", "create", "--name", "sales report", "--cron", "0 9 * * MON-FRI",
        "--tz", "Europe/London", "--webhook", "https://example.com/hook",
        "--payload", '{"report": "sales"}', *extra,
    )  # fmt: skip
    return body


def slots(schedule: dict[str, Any]) -> list[str]:
    return [o["scheduled_at"] for o in schedule["next_occurrences"]]


def schedule_ids(run: Run) -> list[str]:
    return [s["id"] for s in as_json(run, "schedules", "list")["schedules"]]


def test_create_takes_a_flag_for_every_policy_field(duetime: Run) -> None:
    created = create(
        duetime, "--overdue", "expire", "--catchup-window", "30m", "--dst-gap", "shift",
        "--dst-fold", "both", "--overlap", "skip", "--max-attempts", "3", "--retry-base", "2s",
        "--retry-cap", "PT1M", "--run-timeout", "5m", "--grace", "1h",
    )  # fmt: skip
    assert created["policy"] == {
        "overdue": "expire",
        "catchup_window": "PT30M",
        "dst_gap": "shift",
        "dst_fold": "both",
        "overlap": "skip",
        "retry": {"max_attempts": 3, "base": "PT2S", "cap": "PT1M"},
        "run_timeout": "PT5M",
        "grace": "PT1H",
    }


def test_policy_flags_win_over_the_policy_json(duetime: Run) -> None:
    created = create(
        duetime, "--policy", '{"overlap": "skip", "retry": {"max_attempts": 2}}',
        "--max-attempts", "4",
    )  # fmt: skip
    assert created["policy"]["overlap"] == "skip"
    assert created["policy"]["retry"]["max_attempts"] == 4


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--grace", "soon"], "argument --grace: 'soon' is not a duration such as 30s"),
        (["--run-timeout", "0s"], "argument --run-timeout: '0s': the duration must be longer"),
        (["--retry-cap", "P1M"], "years and months are not fixed lengths"),
        (["--overdue", "never"], "argument --overdue: invalid choice: 'never'"),
        (["--dst-gap", "jump"], "argument --dst-gap: invalid choice"),
        (["--max-attempts", "many"], "argument --max-attempts: invalid int value"),
        (["--every", "often"], "argument --every: 'often' is not a duration"),
    ],
)
def test_bad_flags_are_refused_before_anything_is_created(
    duetime: Run, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as stop:
        create(duetime, *flags)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
    assert schedule_ids(duetime) == []


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--max-attempts", "0"], "policy.retry.max_attempts"),
        (["--run-timeout", "2d"], "policy.run_timeout"),
        (["--catchup-window", "1h"], "policy.catchup_window"),  # only with --overdue expire
    ],
)
def test_values_the_api_refuses_name_the_flag_not_the_field(
    duetime: Run, flags: list[str], field: str
) -> None:
    err = refused(
        duetime, "schedules", "create", "--name", "x", "--every", "1h",
        "--webhook", "https://example.com/h", *flags,
    )  # fmt: skip
    assert f"HTTP 422: {flags[0]}: " in err
    assert field not in err
    assert schedule_ids(duetime) == []


def test_edit_changes_only_the_name(duetime: Run) -> None:
    created = create(duetime, "--overdue", "expire", "--catchup-window", "1h", "--grace", "2h")
    edited = as_json(duetime, "schedules", "edit", created["id"], "--name", "sales report v2")
    assert edited["version"] == 2
    assert edited["name"] == "sales report v2"
    for key in ("spec", "policy", "target", "payload", "state"):
        assert edited[key] == created[key], key
    assert slots(edited) == slots(created)


def test_edit_of_an_every_schedule_keeps_its_rhythm(duetime: Run) -> None:
    created = as_json(
        duetime, "schedules", "create", "--name", "sync", "--every", "7m",
        "--webhook", "https://example.com/h",
    )  # fmt: skip
    edited = as_json(duetime, "schedules", "edit", created["id"], "--name", "sync 2")
    assert edited["spec"]["every"] == "PT7M"
    assert edited["spec"]["anchor_at"] == created["spec"]["anchor_at"]
    assert slots(edited) == slots(created)


def test_edit_changes_one_policy_field_and_leaves_the_others(duetime: Run) -> None:
    created = create(duetime, "--overlap", "skip", "--max-attempts", "3")
    edited = as_json(duetime, "schedules", "edit", created["id"], "--retry-cap", "2m")
    assert edited["policy"] == {
        **created["policy"],
        "retry": {**created["policy"]["retry"], "cap": "PT2M"},
    }
    assert edited["name"] == created["name"] and edited["spec"] == created["spec"]


def test_edit_leaving_expire_drops_the_catchup_window(duetime: Run) -> None:
    created = create(duetime, "--overdue", "expire", "--catchup-window", "1h")
    edited = as_json(duetime, "schedules", "edit", created["id"], "--overdue", "latest_only")
    assert edited["policy"]["overdue"] == "latest_only"
    assert edited["policy"]["catchup_window"] is None


def test_edit_of_the_spec_keeps_the_zone(duetime: Run) -> None:
    created = create(duetime)
    edited = as_json(duetime, "schedules", "edit", created["id"], "--cron", "0 10 * * *")
    assert edited["spec"]["cron"] == "0 10 * * *"
    assert edited["spec"]["time_zone"] == "Europe/London"


def test_edit_of_a_webhook_url_keeps_its_headers(duetime: Run, tmp_path: Path) -> None:
    created = as_json(
        duetime, "schedules", "create", "--name", "x", "--every", "1h",
        "--target", '{"type": "webhook", "url": "https://a.example.com/", '
        '"headers": {"X-Team": "ops"}, "timeout_s": 5}',
    )  # fmt: skip
    edited = as_json(
        duetime, "schedules", "edit", created["id"], "--webhook", "https://b.example.com/"
    )
    assert edited["target"]["url"] == "https://b.example.com/"
    assert edited["target"]["headers"] == {"X-Team": None}  # shown by name only
    assert edited["target"]["timeout_s"] == 5
    store = SqliteStore.open(tmp_path / "duetime.db")  # the server's file
    stored = store.schedules.get(created["id"])
    store.close()
    assert stored is not None and stored.version == 2
    assert isinstance(stored.current.target, WebhookTarget)
    assert stored.current.target.headers == (("X-Team", "ops"),)


def test_edit_with_a_stale_version_gets_the_412_message_and_changes_nothing(
    duetime: Run,
) -> None:
    sid = create(duetime)["id"]
    as_json(duetime, "schedules", "edit", sid, "--name", "second")
    err = refused(duetime, "schedules", "edit", sid, "--version", "1", "--name", "third")
    assert "HTTP 412" in err
    assert f"(duetime schedules describe {sid} shows the current version)" in err
    now = as_json(duetime, "schedules", "show", sid)
    assert (now["version"], now["name"]) == (2, "second")


def test_edit_with_the_current_version_given_goes_through(duetime: Run) -> None:
    sid = create(duetime)["id"]
    assert (
        as_json(duetime, "schedules", "edit", sid, "--version", "1", "--name", "n")["version"] == 2
    )


def test_edit_without_a_change_is_refused_and_writes_nothing(duetime: Run) -> None:
    sid = create(duetime)["id"]
    assert "give at least one flag" in refused(duetime, "schedules", "edit", sid)
    assert as_json(duetime, "schedules", "show", sid)["version"] == 1


def test_edit_of_an_unknown_schedule_is_a_404(duetime: Run) -> None:
    assert "HTTP 404" in refused(duetime, "schedules", "edit", "sch_missing", "--name", "x")


def test_edit_refused_by_the_api_names_the_field_and_changes_nothing(duetime: Run) -> None:
    sid = create(duetime)["id"]
    err = refused(duetime, "schedules", "edit", sid, "--cron", "61 * * * *")
    assert "HTTP 422: --cron minute: 61 is outside 0-59" in err
    assert as_json(duetime, "schedules", "show", sid)["version"] == 1


def test_delete_prints_deleted_never_active(duetime: Run) -> None:
    sid = create(duetime)["id"]
    code, out, _ = duetime("schedules", "delete", sid)
    assert code == 0
    state = next(line for line in out.splitlines() if line.startswith("state:"))
    assert state.startswith("state:    deleted")
    assert "active" not in out
    assert "next:" not in out


def test_pause_shows_its_note_and_list_shows_paused(duetime: Run) -> None:
    sid = create(duetime)["id"]
    code, out, _ = duetime("schedules", "pause", sid, "--note", "quarter close")
    assert "state:    paused (quarter close)" in out
    code, out, _ = duetime("schedules", "list")
    assert code == 0
    assert out.splitlines()[1].split()[:5] == [sid, "sales", "report", "1", "paused"]


def test_backfill_creates_the_missing_occurrences_once(duetime: Run) -> None:
    # The API's clock stands at 2026-12-01T08:00Z (a Tuesday); 09:00 London on
    # Monday 30 November is 09:00Z, Friday 27 November too.
    sid = create(duetime)["id"]
    argv = ("schedules", "backfill", sid, "--from", "2026-11-27T00:00:00Z",
            "--to", "2026-11-30T23:00:00Z")  # fmt: skip
    code, out, _ = duetime(*argv)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "created 2 occurrences (kind backfill)"
    assert [line.split()[1:3] for line in lines[2:]] == [["scheduled", "backfill"]] * 2
    again = as_json(duetime, *argv)
    assert again["created"] == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--from", "last week"], "--from: 'last week' is neither a time ago"),
        (["--from", "2026-11-27T00:00:00"], "--from:"),
        (["--from", "1d", "--to", "the end"], "--to:"),
    ],
)
def test_backfill_refuses_bad_instants_before_sending(
    duetime: Run, flags: list[str], message: str
) -> None:
    sid = create(duetime)["id"]
    assert message in refused(duetime, "schedules", "backfill", sid, *flags)
    assert as_json(duetime, "runs", "list", sid, "--planned")["runs"] == []


def test_backfill_of_a_reversed_range_names_the_flags(duetime: Run) -> None:
    sid = create(duetime)["id"]
    err = refused(
        duetime, "schedules", "backfill", sid, "--from", "2026-11-30T00:00:00Z",
        "--to", "2026-11-20T00:00:00Z", one_line=True,
    )  # fmt: skip
    assert "--to: 2026-11-20T00:00:00Z is before --from 2026-11-30T00:00:00Z" in err
    assert "start_at" not in err and "end_at" not in err


def test_backfill_from_the_future_names_from(duetime: Run) -> None:
    sid = create(duetime)["id"]
    err = refused(
        duetime, "schedules", "backfill", sid, "--from", "2099-01-01T00:00:00Z", one_line=True
    )
    assert "--from: 2099-01-01T00:00:00Z is in the future: backfill is for the past" in err
    assert "start_at" not in err and "end_at" not in err
    assert as_json(duetime, "runs", "list", sid, "--planned")["runs"] == []


def test_backfill_of_a_paused_schedule_is_a_409(duetime: Run) -> None:
    sid = create(duetime)["id"]
    duetime("schedules", "pause", sid)
    err = refused(
        duetime, "schedules", "backfill", sid, "--from", "2026-11-27T00:00:00Z",
        "--to", "2026-11-30T23:00:00Z",
    )  # fmt: skip
    assert "HTTP 409" in err


def test_describe_of_a_new_schedule(duetime: Run) -> None:
    sid = create(duetime, "--max-attempts", "3")["id"]
    code, out, _ = duetime("schedules", "describe", sid)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"sales report  ({sid})"
    assert "  status:   active" in lines
    assert "  spec:     cron 0 9 * * MON-FRI (Europe/London)" in lines
    assert any("retry up to 3 attempts" in line for line in lines)
    assert "Next occurrences" in lines
    assert any(line.split()[:2] == ["2026-12-01T09:00:00+00:00", "2026-12-01T09:00:00Z"]
               for line in lines)  # fmt: skip


def test_describe_shows_a_triggered_run(duetime: Run) -> None:
    sid = create(duetime)["id"]
    run = as_json(duetime, "schedules", "trigger", sid)
    code, out, _ = duetime("schedules", "describe", sid)
    assert code == 0
    recent = out.split("Recent runs\n")[1].split("\n\n")[0]
    assert run["occurrence_id"] in recent


def test_follow_sees_a_triggered_run_appear_and_stops_on_ctrl_c(
    duetime: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = create(duetime)["id"]
    triggered: list[dict[str, Any]] = []

    def sleep(_: float) -> None:
        if triggered:
            raise KeyboardInterrupt
        code, out, _ = duetime("schedules", "trigger", sid, "--json")
        assert code == 0
        triggered.append(json.loads(out))

    monkeypatch.setattr(runs, "_sleep", sleep)
    code, out, _ = duetime("runs", "follow", sid, "--json", "--last", "0")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["event"], e["run"]["occurrence_id"]) for e in events] == [
        ("new", triggered[0]["occurrence_id"])
    ]


def test_create_and_edit_take_start_and_end(duetime: Run) -> None:
    created = create(
        duetime, "--start", "2027-01-04T00:00:00Z", "--end", "2027-02-01T00:00:00+01:00"
    )
    assert (created["spec"]["start_at"], created["spec"]["end_at"]) == (
        "2027-01-04T00:00:00Z",
        "2027-01-31T23:00:00Z",
    )
    assert slots(created)[0] == "2027-01-04T09:00:00Z"
    edited = as_json(duetime, "schedules", "edit", created["id"], "--end", "none")
    assert edited["spec"]["start_at"] == "2027-01-04T00:00:00Z"
    assert edited["spec"]["end_at"] is None
    edited = as_json(duetime, "schedules", "edit", created["id"], "--start", "2027-03-01T00:00:00Z")
    assert slots(edited)[0] == "2027-03-01T09:00:00Z"


def test_a_bad_start_is_refused_before_anything_is_created(
    duetime: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        create(duetime, "--start", "2027-01-04T00:00")
    assert "argument --start: '2027-01-04T00:00' has no offset" in capsys.readouterr().err
    assert schedule_ids(duetime) == []


def test_an_end_before_the_start_names_the_flags(duetime: Run) -> None:
    err = refused(
        duetime, "schedules", "create", "--name", "x", "--every", "1h", "--webhook",
        "https://example.com/h", "--start", "2027-02-01T00:00:00Z", "--end", "2027-01-01T00:00:00Z",
        one_line=True,
    )  # fmt: skip
    assert "HTTP 422: --end: " in err and "spec." not in err
    assert schedule_ids(duetime) == []


def test_webhook_headers_and_timeout_have_flags_and_an_edit_keeps_them(
    duetime: Run, tmp_path: Path
) -> None:
    created = create(duetime, "--header", "X-Team: billing", "--timeout", "5s")
    assert created["target"]["headers"] == {"X-Team": None}  # shown by name only
    assert created["target"]["timeout_s"] == 5.0
    edited = as_json(duetime, "schedules", "edit", created["id"], "--header", "X-Env:prod")
    assert edited["target"]["headers"] == {"X-Team": None, "X-Env": None}
    store = SqliteStore.open(tmp_path / "duetime.db")  # the server's file
    stored = store.schedules.get(created["id"])
    store.close()
    assert stored is not None and isinstance(stored.current.target, WebhookTarget)
    assert dict(stored.current.target.headers) == {"X-Team": "billing", "X-Env": "prod"}
    assert edited["target"]["timeout_s"] == 5.0


def test_each_target_type_has_its_flags(duetime: Run) -> None:
    sid = create(duetime)["id"]
    queue = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs.fifo"
    edited = as_json(
        duetime, "schedules", "edit", sid, "--sqs", queue, "--message-group-id", "reports"
    )
    assert edited["target"]["type"] == "sqs"
    assert (edited["target"]["queue_url"], edited["target"]["message_group_id"]) == (
        queue,
        "reports",
    )
    arn = "arn:aws:lambda:us-east-1:123456789012:function:report"
    edited = as_json(
        duetime, "schedules", "edit", sid, "--lambda", arn, "--invocation-type", "RequestResponse"
    )
    assert (edited["target"]["function_arn"], edited["target"]["invocation_type"]) == (
        arn,
        "RequestResponse",
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--header", "X-Team: billing", "--sqs", "https://sqs.us-east-1.amazonaws.com/1/q"],
         "--header: goes with --webhook (the target here is sqs)"),
        (["--message-group-id", "g"], "--message-group-id: goes with --sqs (no target given)"),
        (["--webhook", "https://e.x/h", "--header", "no colon"],
         "--header: 'no colon' is not NAME:VALUE"),
        (["--file", "/nonexistent/body.json"], "--file: cannot read '/nonexistent/body.json'"),
    ],
)  # fmt: skip
def test_target_and_file_flags_that_cannot_apply_are_refused_before_sending(
    duetime: Run, flags: list[str], message: str
) -> None:
    err = refused(
        duetime, "schedules", "create", "--name", "x", "--every", "1h", *flags, one_line=True
    )
    assert message in err
    assert schedule_ids(duetime) == []


def test_a_misspelt_zone_gets_a_suggestion_from_the_api(duetime: Run) -> None:
    err = refused(
        duetime, "schedules", "create", "--name", "x", "--cron", "0 9 * * *", "--tz",
        "Europe/Londn", "--webhook", "https://example.com/h", one_line=True,
    )  # fmt: skip
    assert "HTTP 422: --tz: unknown zone 'Europe/Londn'; did you mean 'Europe/London'?" in err
    assert schedule_ids(duetime) == []


def test_explain_of_a_stored_schedule_agrees_with_its_next_occurrences(duetime: Run) -> None:
    created = create(duetime, "--dst-gap", "shift")
    explained = as_json(
        duetime, "explain", "--schedule", created["id"], "--count", "3",
        "--after", created["created_at"],  # the server's clock is a test's
    )  # fmt: skip
    assert [o["utc"] for o in explained["occurrences"]] == slots(created)[:3]
    assert explained["schedule_id"] == created["id"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--sqs", "notaurl"], "HTTP 422: --sqs: must look like https://sqs."),
        (["--lambda", "arn:bad"], "HTTP 422: --lambda: must be a Lambda function ARN"),
        (["--eventbridge", "default", "--source", "aws.ec2"],
         "HTTP 422: --source: may not start with 'aws.'"),
        (["--webhook", "https://e.x/h", "--header", "X-A: \u00e9"],
         "HTTP 422: --header X-A: value must be printable ASCII"),
        (["--webhook", "https://e.x/h", "--timeout", "10m"],
         "--timeout: 10m00s is more than 2m00s"),
    ],
)  # fmt: skip
def test_target_values_that_are_refused_name_their_flag_and_create_nothing(
    duetime: Run, flags: list[str], message: str
) -> None:
    err = refused(
        duetime, "schedules", "create", "--name", "x", "--every", "1h", *flags, one_line=True
    )
    assert message in err
    assert "target." not in err
    assert schedule_ids(duetime) == []


def test_job_flag_sends_a_command_target_that_a_stack_without_jobs_refuses(duetime: Run) -> None:
    sid = create(duetime)["id"]
    before = as_json(duetime, "schedules", "describe", sid)
    err = refused(duetime, "schedules", "edit", sid, "--job", "nightly-report")
    assert "HTTP 422" in err and "command" in err
    assert as_json(duetime, "schedules", "describe", sid)["version"] == before["version"]


def test_a_pause_reads_as_one_summary_in_runs_list_and_describe(
    duetime: Run, clock: FakeClock
) -> None:
    body = as_json(
        duetime, "schedules", "create", "--name", "each second", "--every", "1s",
        "--webhook", "https://example.com/hook",
    )  # fmt: skip
    sid = body["id"]
    duetime("schedules", "pause", sid)
    clock.advance(60)
    duetime("schedules", "resume", sid)
    said = "paused: 60 slots skipped, 2026-12-01T08:00:01Z to 2026-12-01T08:01:00Z"
    [row] = as_json(duetime, "runs", "list", sid)["runs"]
    assert (row["status"], row["kind"], row["reason"]) == ("skipped", "summary", said)
    code, out, _ = duetime("runs", "list", sid)
    assert code == 0 and len(out.splitlines()) == 2
    assert out.splitlines()[1].split()[1:3] == ["skipped", "summary"]
    assert out.splitlines()[1].endswith(said)
    code, out, _ = duetime("schedules", "describe", sid)
    assert code == 0 and said in out
