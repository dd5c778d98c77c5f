"""What the CLI prints for the answers of the API's contract (recorded answers, no server)."""

from __future__ import annotations

from cli import render
from tests.cli import answers
from tests.cli.answers import SID


def test_describe_shows_status_spec_policy_target_and_watch() -> None:
    page = render.describe_page(answers.schedule())
    lines = page.splitlines()
    assert lines[0] == f"sales report  ({SID})"
    assert "  status:   active" in lines
    assert "  spec:     cron 30 2 * * * (Europe/London)" in lines
    assert "  target:   webhook https://hooks.example.com/duetime (timeout 10s)" in lines
    assert '  payload:  {"report": "sales"}' in lines
    assert "  policy:   overdue expire (catchup window PT1H), overlap skip" in lines
    assert "            dst gap shift, dst fold first" in lines
    assert "            retry up to 3 attempts, backoff PT2S to PT1M" in lines
    assert "            run timeout PT5M, grace one interval (default)" in lines
    assert (
        "  watch:    overdue: expected 2026-12-02T02:30:00Z, last success 2026-12-01T02:30:00Z"
        in lines
    )
    assert "            grace 17m00s, checked 2026-12-02T03:00:00Z" in lines


def test_describe_lists_recent_runs_with_lateness_and_attempts() -> None:
    page = render.describe_page(answers.schedule())
    section = page.split("Recent runs\n")[1].split("\n\n")[0].splitlines()
    assert section[0].split() == [
        "OCCURRENCE", "STATUS", "KIND", "SCHEDULED", "(LOCAL)", "LATE", "ATTEMPTS", "REASON",
    ]  # fmt: skip
    failed = section[1].split()
    assert failed[:6] == [
        f"{SID}.v2.20261202T023000Z", "failed", "scheduled", "2026-12-02T02:30:00+00:00",
        "1m15s", "3",
    ]  # fmt: skip
    assert section[1].endswith("HTTP 500 from the target")
    assert section[2].split()[4:6] == ["0.4s", "1"]


def test_describe_shows_next_occurrences_with_their_dst_note() -> None:
    page = render.describe_page(answers.schedule())
    section = page.split("Next occurrences\n")[1].split("\n\n")[0].splitlines()
    assert section[0].split() == ["LOCAL", "UTC", "VERSION", "NOTE"]
    assert section[1].split()[:3] == ["2027-03-28T03:00:00+01:00", "2027-03-28T02:00:00Z", "2"]
    assert section[1].endswith(
        "02:30 does not exist on this day (DST gap); runs at 03:00 by dst_gap=shift"
    )
    assert section[2].rstrip().endswith("2")


def test_describe_shows_what_is_still_planned_under_an_older_version() -> None:
    page = render.describe_page(answers.schedule())
    assert "Planned under an older version (they keep that version's definition)" in page
    section = page.split("Planned under an older version")[1].splitlines()
    assert section[2].split() == [
        f"{SID}.v1.20261203T023000Z", "1", "scheduled", "2026-12-03T02:30:00+00:00",
    ]  # fmt: skip


def test_describe_leaves_the_older_version_section_out_when_nothing_is_planned() -> None:
    page = render.describe_page(answers.schedule(planned_under_older_versions=[]))
    assert "older version" not in page


def test_describe_of_a_schedule_never_judged_and_never_run() -> None:
    page = render.describe_page(answers.schedule(watch=None, recent_runs=[]))
    assert "  watch:    not judged yet (the watchdog has not passed)" in page
    assert "Recent runs\n  none yet" in page


def test_paused_schedule_shows_its_note_everywhere() -> None:
    paused = answers.schedule(status="paused", state={"paused": True, "note": "quarter close"})
    assert "  status:   paused (quarter close)" in render.describe_page(paused)
    assert "state:    paused (quarter close)" in render.schedule_table(paused)
    assert render.schedules_table([paused]).splitlines()[1].split()[4] == "paused"


def test_ended_schedule_says_no_occurrence_will_come() -> None:
    ended = answers.schedule(status="ended", next_occurrences=[])
    assert "  status:   ended (no occurrence will come)" in render.describe_page(ended)
    assert "Next occurrences\n  none (ended)" in render.describe_page(ended)
    assert "state:    ended" in render.schedule_table(ended)


def test_a_deleted_schedule_is_never_shown_active() -> None:
    # The API before the status field: a deleted schedule is known by deleted_at.
    deleted = answers.schedule(deleted_at="2026-12-02T10:00:00Z")
    del deleted["status"]
    table = render.schedule_table(deleted)
    assert "state:    deleted at 2026-12-02T10:00:00Z" in table
    assert "active" not in table
    assert "next:" not in table


def test_a_quarantined_schedule_says_why() -> None:
    body = answers.schedule(
        status="quarantined",
        quarantine={"reason": "boom", "component": "plan", "at": "2026-12-01T09:00:00Z"},
    )
    assert "state:    quarantined (plan: boom, at 2026-12-01T09:00:00Z)" in (
        render.schedule_table(body)
    )


def test_status_without_the_status_field_reads_the_record() -> None:
    body = answers.schedule(state={"paused": True, "note": None})
    del body["status"]
    assert render.status_of(body) == "paused"
    body["quarantine"] = {"reason": "x", "component": "watch", "at": "2026-12-01T09:00:00Z"}
    assert render.status_of(body) == "quarantined"


def test_describe_escapes_control_characters_in_names_notes_and_reasons() -> None:
    body = answers.schedule(
        name="evil\x1b[2J\x07",
        status="paused",
        state={"paused": True, "note": "a\nb"},
    )
    body["recent_runs"][0]["reason"] = "HTTP 500\r\nforged row"
    page = render.describe_page(body)
    assert "\x1b" not in page and "\x07" not in page and "\r" not in page
    assert page.splitlines()[0].startswith("evil\\x1b[2J\\x07")
    assert "paused (a\\x0ab)" in page
    assert "HTTP 500\\x0d\\x0aforged row" in page


def test_run_page_shows_progress_lateness_and_every_attempt() -> None:
    r = answers.run(
        "20261202T023000Z",
        "failed",
        attempts=3,
        late_s=75.2,
        reason="HTTP 500",
        attempts_log=answers.attempts_log(),
        progress={"done": 40, "of": 100},
    )
    page = render.run_table(r).splitlines()
    assert "late:          1m15s after scheduled_at" in page
    assert 'progress:      {"done": 40, "of": 100}' in page
    start = page.index("attempts:")
    assert page[start + 1].split() == [
        "#", "STARTED", "FINISHED", "OUTCOME", "STATUS", "ERROR", "WAIT",
    ]  # fmt: skip
    assert page[start + 2].split() == [
        "1", "2026-12-02T02:31:15Z", "2026-12-02T02:31:16Z", "retrying", "500", "HTTP", "500",
        "2s",
    ]  # fmt: skip
    assert "timed out after 30 s" in page[start + 3]
    assert page[start + 3].split()[4] == "timed"  # no status code: the column is empty
    assert page[start + 4].split()[3:5] == ["failed", "500"]


def test_run_page_without_attempts_log_or_progress_leaves_them_out() -> None:
    r = answers.run(status="scheduled", attempts=0, late_s=None)
    page = render.run_table(r)
    assert "attempts:" not in page.splitlines()
    assert "progress:" not in page
    assert "late:" not in page


def test_runs_table_tolerates_runs_without_the_new_fields() -> None:
    r = answers.run()
    del r["late_s"], r["attempts_log"], r["kind"]
    row = render.runs_table([r]).splitlines()[1].split()
    assert row[:3] == [r["occurrence_id"], "succeeded", "2026-12-01T09:00:00+00:00"]


def test_follow_lines_say_what_changed() -> None:
    r = answers.run("20261202T023000Z", "running", attempts=1, late_s=0.4)
    assert render.follow_line("2026-12-02T02:30:01Z", r, None, event="current") == (
        f"2026-12-02T02:30:01Z  {SID}.v2.20261202T023000Z  running  attempt 1  0.4s late"
    )
    assert "  new, running  " in render.follow_line("t", r, None, event="new")
    assert "  admitted -> running  " in render.follow_line("t", r, "admitted")
    retrying = answers.run("20261202T023000Z", "retrying", attempts=2)
    assert "  retrying again  attempt 2" in render.follow_line("t", retrying, "retrying")
    trigger = answers.run(kind="trigger", reason="x\x1by")
    line = render.follow_line("t", trigger, "running")
    assert "kind trigger" in line and "x\\x1by" in line


def test_versions_table_names_what_each_version_changed() -> None:
    table = render.versions_table([answers.version(1), answers.version(2)]).splitlines()
    assert table[0].split() == ["VERSION", "CREATED", "CHANGED", "SPEC", "NAME"]
    assert table[1].split()[:3] == ["1", "2026-12-01T08:30:00Z", "(first)"]
    assert table[2].split()[:4] == ["2", "2026-12-01T08:30:00Z", "spec.cron,", "policy.overdue"]


def test_version_page_shows_the_whole_definition() -> None:
    page = render.version_page(answers.version(2)).splitlines()
    assert page[0] == "version:  2 (created 2026-12-01T08:30:00Z)"
    assert page[1] == "changed:  spec.cron, policy.overdue"
    assert "spec:     cron 30 2 * * * (Europe/London)" in page
    assert "policy:   overdue expire (catchup window PT1H), overlap skip" in page


def test_dead_letters_table() -> None:
    orphan = {**answers.dead_letter(), "id": "dl_2", "occurrence_id": None, "schedule_id": None}
    table = render.dead_letters_table([answers.dead_letter(), orphan]).splitlines()
    assert table[0].split() == ["ID", "OCCURRENCE", "SCHEDULE", "DEAD-LETTERED", "RECEIVES",
                                "REASON"]  # fmt: skip
    assert table[1].split()[:5] == [
        "dl_1", f"{SID}.v2.20261202T023000Z", SID, "2026-12-02T02:40:00Z", "5",
    ]  # fmt: skip
    assert table[2].split()[:3] == ["dl_2", "-", "-"]


def test_spans_read_as_a_person_says_them() -> None:
    cases = {0: "0s", 0.4: "0.4s", 9.96: "10s", 12.4: "12s", 75.2: "1m15s", 3600: "1h00m",
             200_000: "2d7h", -3: "-3s"}  # fmt: skip
    assert {k: render.span(k) for k in cases} == cases
    assert render.span(None) == ""


def test_spec_text_names_the_range() -> None:
    spec = {"every": "PT10S", "start_at": "2026-12-01T00:00:00Z", "end_at": "2026-12-31T00:00:00Z"}
    assert render.spec_text(spec) == (
        "every PT10S from 2026-12-01T00:00:00Z until 2026-12-31T00:00:00Z"
    )


def test_describe_lists_the_runs_already_planned_before_the_next_occurrences() -> None:
    body = answers.schedule()
    planned = [
        answers.run("20261202T120010Z", "scheduled", attempts=0, late_s=None),
        # Queued ahead: admitted, delivered at its instant.
        answers.run("20261202T120030Z", "admitted", attempts=0, late_s=None),
        # Another version's, or one that started meanwhile: not in this section.
        answers.run("20261202T120020Z", "scheduled", version=1, attempts=0, late_s=None),
        answers.run("20261202T120040Z", "running", attempts=1, late_s=0.1),
    ]
    page = render.describe_page(body, planned=planned)
    section = page.split("Planned (already created, still to come)\n")[1].split("\n\n")[0]
    assert [row.split() for row in section.splitlines()] == [
        ["OCCURRENCE", "STATUS", "KIND", "SCHEDULED", "(LOCAL)"],
        [f"{SID}.v2.20261202T120010Z", "scheduled", "scheduled", "2026-12-02T12:00:10+00:00"],
        [f"{SID}.v2.20261202T120030Z", "admitted", "scheduled", "2026-12-02T12:00:30+00:00"],
    ]
    assert "\nNext occurrences (not created yet)\n" in page
    assert "already created" not in render.describe_page(body)


def test_one_attempt_is_singular() -> None:
    policy = answers.schedule()["policy"]
    page = render.describe_page(answers.schedule(policy={**policy, "retry": {
        "max_attempts": 1, "base": "PT1S", "cap": "PT30S"}}))  # fmt: skip
    assert "            retry up to 1 attempt, backoff PT1S to PT30S" in page.splitlines()
    assert "1 attempts" not in page


def test_plural() -> None:
    assert [render.plural(n, "attempt") for n in (0, 1, 2)] == [
        "0 attempts", "1 attempt", "2 attempts",
    ]  # fmt: skip
    assert render.plural(1, "process", "processes") == "1 process"
    assert render.plural(3, "process", "processes") == "3 processes"


def test_a_verdict_the_watchdog_could_not_reach_shows_its_error() -> None:
    watch = {
        "status": "unknown",
        "checked_at": "2026-12-01T10:00:00Z",
        "last_success_at": None,
        "error": "OverflowError: date value out of range",
    }
    assert render.watch_text(watch) == (
        "unknown: cannot be judged (OverflowError: date value out of range), no success yet"
    )
