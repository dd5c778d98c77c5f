"""The commands against recorded answers of the API's contract: what each sends,
what it prints, and what it refuses before sending anything."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from cli import api_calls, commands, runs
from cli.client import ApiClient, ApiError, Response
from cli.main import main
from tests.cli import answers
from tests.cli.answers import SID
from tests.conftest import utc

OCC = f"{SID}.v2.20261202T023000Z"


@dataclass
class Sent:
    method: str
    path: str
    body: Any
    headers: dict[str, str] | None
    query: dict[str, Any]


@dataclass
class RecordedApi(ApiClient):
    """Answers each (method, path) from a list, in order; an ApiError is raised."""

    answers: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__("http://127.0.0.1:9")

    def answer(self, method: str, path: str, *bodies: Any) -> RecordedApi:
        self.answers.setdefault((method, path), []).extend(bodies)
        return self

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
    ) -> Response:
        given = {k: v for k, v in (query or {}).items() if v is not None}
        self.sent.append(Sent(method, path, body, headers, given))
        queue = self.answers.get((method, path))
        if not queue:
            raise AssertionError(f"no recorded answer for {method} {path}")
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, BaseException):
            raise answer
        return Response(200, answer, {})


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> RecordedApi:
    recorded = RecordedApi()
    monkeypatch.setattr(api_calls, "client_for", lambda args: recorded)
    monkeypatch.setattr(runs, "utc_now", lambda: utc("2026-12-02T12:00:00Z"))
    monkeypatch.setattr(commands, "utc_now", lambda: utc("2026-12-02T12:00:00Z"))
    return recorded


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def duetime(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def refused(run: Run, *argv: str) -> str:
    """The one-line message of a refusal (exit 2, nothing on stdout)."""
    code, out, err = run(*argv)
    assert (code, out) == (2, "")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    return err


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    assert stop.value.code == 2
    return capsys.readouterr().err


# --- runs list ---------------------------------------------------------------------------


def test_runs_list_sends_every_filter_and_converts_since_to_an_instant(
    api: RecordedApi, duetime: Run
) -> None:
    api.answer("GET", "/runs", {"runs": [answers.run()], "next_token": "t2"})
    code, out, _ = duetime(
        "runs", "list", SID, "--status", "failed,expired", "--status", "failed", "--since", "1h",
        "--until", "2026-12-02T11:30:00+00:00", "--kind", "trigger", "--order", "oldest",
        "--planned", "--limit", "10",
    )  # fmt: skip
    assert code == 0
    assert api.sent[0].query == {
        "schedule_id": SID,
        "status": "failed,expired",
        "kind": "trigger",
        "since": "2026-12-02T11:00:00Z",
        "until": "2026-12-02T11:30:00Z",
        "order": "oldest",
        "include": "planned",
        "limit": 10,
    }
    assert out.splitlines()[0].split()[:3] == ["OCCURRENCE", "STATUS", "KIND"]
    assert out.splitlines()[-1] == "more: --next-token t2"


def test_runs_list_without_an_id_reads_every_schedules_runs(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", "/runs", {"runs": [], "next_token": None})
    code, out, _ = duetime("runs", "list", "--status", "failed", "--since", "1d")
    assert code == 0
    assert api.sent[0].query == {"status": "failed", "since": "2026-12-01T12:00:00Z", "limit": 20}
    assert out == "no runs match\n"


def test_runs_list_json_prints_the_api_answer(api: RecordedApi, duetime: Run) -> None:
    page = {"runs": [answers.run()], "next_token": None}
    api.answer("GET", "/runs", page)
    code, out, _ = duetime("runs", "list", "--json")
    assert code == 0 and json.loads(out) == page


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--status", "broken"], "--status: broken is not one of scheduled, admitted"),
        (["--status", ","], "--status: nothing is not one of"),
        (["--kind", "cron"], "--kind: cron is not one of scheduled, trigger, backfill, summary"),
        (["--since", "yesterday"], "--since: 'yesterday' is neither a time ago"),
        (["--until", "2026-12-01T10:00:00"], "--until:"),
        (["--since", "1h", "--until", "2h"], "--since: 2026-12-02T11:00:00Z is not before --until"),
    ],
)
def test_runs_list_refuses_bad_filters_before_sending_anything(
    api: RecordedApi, duetime: Run, argv: list[str], message: str
) -> None:
    assert message in refused(duetime, "runs", "list", *argv)
    assert api.sent == []


def test_runs_list_refuses_an_unknown_order(
    api: RecordedApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "invalid choice: 'latest'" in usage_error(capsys, "runs", "list", "--order", "latest")
    assert api.sent == []


def test_runs_list_passes_on_the_apis_refusal(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", "/runs", ApiError(422, "unknown query parameter 'foo'", "foo"))
    assert "HTTP 422: unknown query parameter 'foo' (field: foo)" in refused(
        duetime, "runs", "list"
    )


# --- runs show / retry, dead letters --------------------------------------------------------


def test_runs_show_prints_progress_and_attempts(api: RecordedApi, duetime: Run) -> None:
    r = answers.run(
        "20261202T023000Z", "failed", attempts=3, attempts_log=answers.attempts_log(),
        progress={"done": 3},
    )  # fmt: skip
    api.answer("GET", f"/runs/{OCC}", r)
    code, out, _ = duetime("runs", "show", OCC)
    assert code == 0
    assert 'progress:      {"done": 3}' in out
    assert "attempts:" in out and "timed out after 30 s" in out


def test_runs_show_404(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", f"/runs/{OCC}", ApiError(404, f"run {OCC!r} not found"))
    assert "HTTP 404: run" in refused(duetime, "runs", "show", OCC)


def test_runs_retry_posts_and_prints_the_run(api: RecordedApi, duetime: Run) -> None:
    api.answer("POST", f"/runs/{OCC}/retry", answers.run("20261202T023000Z", "admitted"))
    code, out, _ = duetime("runs", "retry", OCC)
    assert code == 0
    assert (api.sent[0].method, api.sent[0].body) == ("POST", {})
    assert "status:        admitted" in out


def test_runs_retry_of_a_run_that_succeeded_is_a_409_message(
    api: RecordedApi, duetime: Run
) -> None:
    api.answer(
        "POST", f"/runs/{OCC}/retry", ApiError(409, "run is succeeded; only failed or expired")
    )
    assert "HTTP 409: run is succeeded" in refused(duetime, "runs", "retry", OCC)


def test_dead_letters_list(api: RecordedApi, duetime: Run) -> None:
    page = {"dead_letters": [answers.dead_letter()], "next_token": None}
    api.answer("GET", "/dead-letters", page)
    code, out, _ = duetime("dead-letters", "list", "--limit", "5")
    assert code == 0
    assert api.sent[0].query == {"limit": 5}
    assert out.splitlines()[1].startswith("dl_1  ")


def test_dead_letters_not_available_says_why(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", "/dead-letters", ApiError(501, "the DLQ cannot be read without consuming"))
    assert "HTTP 501: the DLQ cannot be read" in refused(duetime, "dead-letters", "list")


def test_dead_letters_empty(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", "/dead-letters", {"dead_letters": [], "next_token": None})
    assert duetime("dead-letters", "list")[1] == "no dead letters\n"


# --- schedules describe / versions / acknowledge ---------------------------------------------


def test_describe_prints_the_page_with_the_runs_already_planned(
    api: RecordedApi, duetime: Run
) -> None:
    api.answer("GET", f"/schedules/{SID}", answers.schedule())
    planned = answers.run("20261202T120010Z", "scheduled", attempts=0, late_s=None)
    api.answer("GET", f"/schedules/{SID}/runs", {"runs": [planned], "next_token": None})
    code, out, _ = duetime("schedules", "describe", SID)
    assert code == 0
    assert out.startswith(f"sales report  ({SID})\n")
    assert "Recent runs" in out
    section = out.split("Planned (already created, still to come)\n")[1].splitlines()
    assert section[1].split() == [
        planned["occurrence_id"], "scheduled", "scheduled", "2026-12-02T12:00:10+00:00",
    ]  # fmt: skip
    assert "Next occurrences (not created yet)" in out
    assert api.sent[1].query == {
        "include": "planned", "since": "2026-12-02T12:00:00Z", "order": "oldest", "limit": 5,
    }  # fmt: skip


def test_describe_json_prints_the_api_answer_alone(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", f"/schedules/{SID}", answers.schedule())
    code, out, _ = duetime("schedules", "describe", SID, "--json")
    assert code == 0
    assert json.loads(out) == answers.schedule()
    assert len(api.sent) == 1


def test_describe_reads_the_last_runs_when_the_answer_has_none(
    api: RecordedApi, duetime: Run
) -> None:
    body = answers.schedule()
    del body["recent_runs"]
    api.answer("GET", f"/schedules/{SID}", body)
    api.answer(
        "GET",
        f"/schedules/{SID}/runs",
        {"runs": [answers.run()], "next_token": None},
        {"runs": [], "next_token": None},
    )
    code, out, _ = duetime("schedules", "describe", SID)
    assert code == 0
    assert api.sent[1].query == {"limit": 5}
    assert "already created" not in out
    assert answers.run()["occurrence_id"] in out


def test_describe_404(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", f"/schedules/{SID}", ApiError(404, f"schedule {SID!r} not found"))
    assert "HTTP 404" in refused(duetime, "schedules", "describe", SID)


def test_versions_lists_and_shows_one(api: RecordedApi, duetime: Run) -> None:
    api.answer(
        "GET",
        f"/schedules/{SID}/versions",
        {"versions": [answers.version(1), answers.version(2)], "next_token": None},
    )
    api.answer("GET", f"/schedules/{SID}/versions/2", answers.version(2))
    code, out, _ = duetime("schedules", "versions", SID)
    assert code == 0 and len(out.splitlines()) == 3
    code, out, _ = duetime("schedules", "versions", SID, "2")
    assert code == 0 and "changed:  spec.cron, policy.overdue" in out


def test_versions_unknown_number_is_a_404_message(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", f"/schedules/{SID}/versions/9", ApiError(404, "version 9 not found"))
    assert "HTTP 404: version 9 not found" in refused(duetime, "schedules", "versions", SID, "9")


def test_versions_number_must_be_a_number(
    api: RecordedApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "invalid int value" in usage_error(capsys, "schedules", "versions", SID, "two")
    assert api.sent == []


def test_acknowledge_sends_the_note_and_shows_the_verdict(api: RecordedApi, duetime: Run) -> None:
    body = answers.schedule(watch={**answers.schedule()["watch"], "status": "ok"})
    api.answer("POST", f"/schedules/{SID}/acknowledge", body)
    code, out, _ = duetime("schedules", "acknowledge", SID, "--note", "fixed by hand")
    assert code == 0
    assert api.sent[0].body == {"note": "fixed by hand"}
    assert "watch:    ok:" in out


def test_acknowledge_with_nothing_to_acknowledge_is_a_409_message(
    api: RecordedApi, duetime: Run
) -> None:
    api.answer("POST", f"/schedules/{SID}/acknowledge", ApiError(409, "nothing to acknowledge"))
    assert "HTTP 409: nothing to acknowledge" in refused(duetime, "schedules", "acknowledge", SID)


# --- runs follow ---------------------------------------------------------------------------


def stop_after(polls: int) -> Callable[[float], None]:
    """A sleep that lets ``polls`` more polls happen, then is Ctrl-C."""
    left = iter(range(polls))

    def sleep(_: float) -> None:
        if next(left, None) is None:
            raise KeyboardInterrupt

    return sleep


def pages(*lists: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return ({"runs": list(reversed(items)), "next_token": None} for items in lists)


def test_follow_prints_new_runs_and_changes_then_exits_0_on_ctrl_c(
    api: RecordedApi, duetime: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = answers.run("20261202T000000Z", "succeeded")
    a1 = answers.run("20261202T010000Z", "admitted", attempts=0, late_s=None)
    a2 = answers.run("20261202T010000Z", "running", attempts=1, late_s=0.3)
    a3 = answers.run("20261202T010000Z", "succeeded", attempts=1, late_s=0.3)
    b1 = answers.run("20261202T020000Z", "admitted", attempts=0, late_s=None)
    polls = pages([old], [old, a1], [old, a2, b1], [old, a3, b1])
    api.answer("GET", f"/schedules/{SID}/runs", *polls)
    monkeypatch.setattr(runs, "_sleep", stop_after(3))
    code, out, _ = duetime("runs", "follow", SID, "--interval", "1s")
    assert code == 0
    lines = [line.split("  ")[1:3] for line in out.splitlines()]
    assert lines == [
        [old["occurrence_id"], "succeeded"],
        [a1["occurrence_id"], "new, admitted"],
        [a2["occurrence_id"], "admitted -> running"],
        [b1["occurrence_id"], "new, admitted"],
        [a3["occurrence_id"], "running -> succeeded"],
    ]
    assert all(s.query == {"limit": 100} for s in api.sent)


def test_follow_json_prints_one_object_a_line(
    api: RecordedApi, duetime: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    a1 = answers.run("20261202T010000Z", "running", attempts=1)
    a2 = answers.run("20261202T010000Z", "retrying", attempts=1)
    api.answer("GET", "/runs", *pages([], [a1], [a2]))
    monkeypatch.setattr(runs, "_sleep", stop_after(2))
    code, out, _ = duetime("runs", "follow", "--json")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["event"], e["previous_status"], e["run"]["status"]) for e in events] == [
        ("new", None, "running"),
        ("changed", "running", "retrying"),
    ]
    assert events[0]["run"] == a1
    assert events[0]["observed_at"] == "2026-12-02T12:00:00Z"


def test_follow_reads_a_run_it_saw_unfinished_after_it_leaves_the_page(
    api: RecordedApi, duetime: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = answers.run("20261202T010000Z", "running", attempts=1)
    done = answers.run("20261202T010000Z", "succeeded", attempts=1)
    newer = answers.run("20261202T020000Z", "succeeded")
    api.answer("GET", "/runs", *pages([slow], [newer]))
    api.answer("GET", f"/runs/{slow['occurrence_id']}", done)
    monkeypatch.setattr(runs, "_sleep", stop_after(1))
    code, out, _ = duetime("runs", "follow", "--last", "0")
    assert code == 0
    assert [line.split("  ")[1:3] for line in out.splitlines()] == [
        [newer["occurrence_id"], "new, succeeded"],
        [slow["occurrence_id"], "running -> succeeded"],
    ]


def test_follow_waits_out_an_outage_and_says_so_once(
    api: RecordedApi, duetime: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    a1 = answers.run("20261202T010000Z", "admitted", attempts=0)
    down = ApiError(0, "cannot reach the API at http://127.0.0.1:9: refused")
    api.answer("GET", "/runs", {"runs": [], "next_token": None}, down, down, *pages([a1]))
    monkeypatch.setattr(runs, "_sleep", stop_after(3))
    code, out, err = duetime("runs", "follow")
    assert code == 0
    assert err.count("cannot reach the API") == 1
    assert "the API answers again" in err
    assert "new, admitted" in out


def test_follow_of_an_unknown_schedule_is_a_404_message(api: RecordedApi, duetime: Run) -> None:
    api.answer("GET", "/schedules/sch_nope/runs", ApiError(404, "schedule 'sch_nope' not found"))
    assert "HTTP 404" in refused(duetime, "runs", "follow", "sch_nope")


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--interval", "0s"], "the interval must be"), (["--interval", "often"], "not an interval")],
)
def test_follow_refuses_bad_intervals(
    api: RecordedApi, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert message in usage_error(capsys, "runs", "follow", *argv)
    assert api.sent == []


def test_follow_refuses_a_negative_last(api: RecordedApi, duetime: Run) -> None:
    assert "--last: must be 0 or more" in refused(duetime, "runs", "follow", "--last", "-1")
    assert api.sent == []


# --- help -------------------------------------------------------------------------------


def test_top_level_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    for command in ("schedules", "runs", "dead-letters", "explain", "local", "console"):
        assert command in out
    for example in ("schedules describe", "runs follow", "runs list", "runs retry"):
        assert example in out


@pytest.mark.parametrize(
    "argv",
    [["schedules", "describe"], ["schedules", "versions"], ["schedules", "edit"],
     ["schedules", "backfill"], ["schedules", "acknowledge"], ["schedules", "create"],
     ["runs", "list"], ["runs", "show"], ["runs", "follow"], ["runs", "retry"],
     ["dead-letters", "list"]],
)  # fmt: skip
def test_every_command_has_help(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: duetime {' '.join(argv)}")
    assert len(out.split("\n\n")[1]) > 20  # a description, not only the usage
