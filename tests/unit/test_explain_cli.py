"""`duetime explain`, in process: the table, the JSON, the warnings, the refusals."""

from __future__ import annotations

import json

import pytest

from cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_for_the_spring_forward_night(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "explain", "30 2 * * *", "--tz", "America/New_York",
        "--after", "2026-03-07T12:00:00Z", "--count", "2", "--dst-gap", "shift", "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    first = data["occurrences"][0]
    assert first["utc"] == "2026-03-08T07:30:00Z"
    assert first["local"] == "2026-03-08T03:30:00-04:00"
    assert first["wall"] == "2026-03-08T02:30"
    assert "does not exist" in first["note"]
    assert data["occurrences"][1]["note"] is None
    assert any("skips 02:00-03:00" in w for w in data["warnings"])


def test_table_shows_local_utc_and_the_or_rule_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "explain", "0 0 13 * 5", "--after", "2026-11-01T00:00:00Z", "--count", "3"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["LOCAL", "UTC", "NOTE"]
    assert lines[1].split() == ["2026-11-06T00:00:00+00:00", "2026-11-06T00:00:00Z"]
    assert "Friday the 13th is not expressible in cron" in out


def test_fold_note_and_warning(capsys: pytest.CaptureFixture[str]) -> None:
    _code, out, _ = run(
        capsys, "explain", "30 1 * * *", "--tz", "Europe/London",
        "--after", "2026-10-24T12:00:00Z", "--count", "1", "--json",
    )  # fmt: skip
    data = json.loads(out)
    assert data["occurrences"][0]["local"] == "2026-10-25T01:30:00+01:00"
    assert "first" in data["occurrences"][0]["note"]
    assert any("repeats 01:00-02:00" in w and "fixed-time rule" in w for w in data["warnings"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain", "61 * * * *"], "EXPRESSION minute: 61 is outside 0-59"),
        (
            ["explain", "* * * * *", "--tz", "Mars/Olympus"],
            "--tz: unknown zone 'Mars/Olympus'",
        ),
        (
            ["explain", "* * * * *", "--after", "yesterday"],
            "--after: 'yesterday' is not an ISO 8601",
        ),
        (
            ["explain", "* * * * *", "--after", "2026-01-01T00:00"],
            "--after: '2026-01-01T00:00' has no offset",
        ),
    ],
)
def test_refusals_are_one_line_with_exit_code_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_bad_policy_choice_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["explain", "* * * * *", "--dst-gap", "later"])
    assert caught.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_explain_an_every_spec_counted_from_its_start(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "explain", "--every", "90m", "--start", "2026-12-01T00:10:00Z",
        "--after", "2026-12-02T00:00:00Z", "--count", "2", "--json",
    )  # fmt: skip
    assert code == 0
    assert [o["utc"] for o in json.loads(out)["occurrences"]] == [
        "2026-12-02T00:10:00Z",
        "2026-12-02T01:40:00Z",
    ]


def test_explain_a_local_at_in_the_spring_gap(capsys: pytest.CaptureFixture[str]) -> None:
    # Europe/London, 2027-03-28: 01:00 GMT becomes 02:00 BST; 01:30 does not exist.
    code, out, _ = run(
        capsys, "explain", "--at", "2027-03-28T01:30", "--tz", "Europe/London",
        "--after", "2027-03-01T00:00:00Z", "--json",
    )  # fmt: skip
    assert code == 0
    [only] = json.loads(out)["occurrences"]
    assert only["local"] == "2027-03-28T02:00:00+01:00"
    assert "does not exist" in only["note"]


def test_explain_an_end_stops_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "explain", "0 9 * * *", "--after", "2026-12-01T00:00:00Z",
        "--end", "2026-12-02T12:00:00Z", "--json",
    )  # fmt: skip
    assert code == 0
    assert [o["utc"] for o in json.loads(out)["occurrences"]] == [
        "2026-12-01T09:00:00Z",
        "2026-12-02T09:00:00Z",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain"], "EXPRESSION: give a cron expression, --every D, --at T or --schedule ID"),
        (["explain", "* * * * *", "--every", "1h"], "give a cron expression, --every or --at: one"),
        (["explain", "--every", "1h", "--tz", "Europe/Londn"], "did you mean 'Europe/London'?"),
        (["explain", "* * * * *", "--count", "0"], "--count: must be between 1 and 1000"),
    ],
)
def test_explain_refusals_name_what_to_give(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert message in err
