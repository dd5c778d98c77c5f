"""`duetime import-crontab`: each crontab line as a job and a schedule, what cron
can do and duetime cannot refused with the line and the reason, and
``--apply`` creating the schedules through a real API over HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from adapters.targets.jobs import load_jobs
from cli.client import ApiClient
from cli.crontab import parse_crontab
from cli.local_http import ApiServer
from cli.main import main
from handlers.api import ApiServices, handler
from service.schedules import ScheduleService, TargetSupport
from tests.conftest import FakeClock
from tests.handlers.cli_driver import Run

GOOD = """\
# m h dom mon dow command
SHELL=/bin/sh
PATH=/usr/local/bin:/usr/bin:/bin
MAILTO=""
0 2 * * * pg_dump mydb > /var/backups/mydb.sql
CRON_TZ=Europe/London
*/15 9-17 * * MON-FRI /usr/local/bin/report.sh --quick 2>&1
TZ=America/New_York
@daily date +\\%F >> /tmp/dates
@daily /usr/local/bin/report.sh --full
"""

BAD = """\
0 2 * * * true
@reboot /usr/bin/startup
0 0 * * * * six-fields
5 4 * * * mail -s hi me%body
CRON_TZ=Mars/Olympus
MAILTO=me@example.com
61 * * * * true
@fortnightly true
0 2 * *
"""


def test_each_line_becomes_a_job_and_a_schedule_in_its_zone(tmp_path: Path) -> None:
    crontab = parse_crontab(GOOD, zone="Asia/Tokyo", directory=tmp_path, timeout_s=600)
    assert crontab.refusals == []
    summary = [(e.line, e.job.name, e.cron, e.zone, e.job.command[2]) for e in crontab.entries]
    assert summary == [
        (5, "pg_dump", "0 2 * * *", "Asia/Tokyo", "pg_dump mydb > /var/backups/mydb.sql"),
        (
            7,
            "report.sh",
            "*/15 9-17 * * MON-FRI",
            "Europe/London",
            "/usr/local/bin/report.sh --quick 2>&1",
        ),
        (9, "date", "0 0 * * *", "America/New_York", "date +%F >> /tmp/dates"),
        (10, "report.sh-2", "0 0 * * *", "America/New_York", "/usr/local/bin/report.sh --full"),
    ]
    first, last = crontab.entries[0], crontab.entries[-1]
    assert first.job.command[:2] == ("/bin/sh", "-c")
    assert first.job.directory == tmp_path
    assert first.job.timeout_s == 600
    assert dict(first.job.env) == {"SHELL": "/bin/sh", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    assert dict(last.job.env)["TZ"] == "America/New_York"  # TZ also reaches the job, as in cron


def test_what_duetime_cannot_express_is_refused_with_line_and_reason(tmp_path: Path) -> None:
    crontab = parse_crontab(BAD, zone="UTC", directory=tmp_path, timeout_s=600)
    assert [e.line for e in crontab.entries] == [1]
    reasons = {r.line: r.reason for r in crontab.refusals}
    assert reasons == {
        2: "@reboot runs at boot, not at a time: start it from your init system",
        3: "has a sixth time field ('*': seconds or years); duetime's cron has five "
        "(minute hour day-of-month month day-of-week)",
        4: "an unescaped % (cron ends the command there and sends the rest as standard "
        "input, which duetime does not); write \\% for a literal %",
        5: "CRON_TZ=Mars/Olympus: not a time zone duetime knows (an IANA name)",
        6: "MAILTO: duetime does not mail a job's output; each run keeps its exit code, the "
        'tail of its output and a log file (delete the line, or set MAILTO="")',
        7: reasons[7],
        8: reasons[8],
        9: "needs five time fields and a command",
    }
    assert reasons[7].startswith("61 * * * *: ") and "61" in reasons[7][12:]
    assert reasons[8].startswith("@fortnightly is not a cron nickname")


def test_a_preview_with_refused_lines_writes_nothing(tmp_path: Path, capsys: Any) -> None:
    crontab, out = tmp_path / "crontab", tmp_path / "jobs.toml"
    crontab.write_text(BAD)
    code = main(["import-crontab", str(crontab), "--jobs-out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1
    assert not out.exists()
    assert "line 2: refused: @reboot runs at boot" in printed
    assert "1 line(s) to import, 8 refused: nothing is written or created" in printed


def test_the_preview_shows_next_runs_in_the_zone(tmp_path: Path, capsys: Any) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text("CRON_TZ=Europe/London\n30 6 * * * true\n")
    assert main(["import-crontab", str(crontab), "--directory", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "  schedule  cron '30 6 * * *' in Europe/London" in printed
    assert "06:30 GMT" in printed or "06:30 BST" in printed


def test_jobs_out_writes_a_jobs_file_duetime_local_reads(tmp_path: Path, capsys: Any) -> None:
    crontab, out = tmp_path / "crontab", tmp_path / "jobs.toml"
    crontab.write_text(GOOD)
    argv = ["import-crontab", str(crontab), "--jobs-out", str(out), "--directory", str(tmp_path)]
    assert main([*argv, "--timeout", "20m"]) == 0
    jobs = load_jobs(out)
    assert sorted(jobs.names) == ["date", "pg_dump", "report.sh", "report.sh-2"]
    date = jobs.get("date")
    assert date is not None and date.command == ("/bin/sh", "-c", "date +%F >> /tmp/dates")
    assert date.timeout_s == 1200
    assert out.read_text().startswith(f"# line 5 of {crontab}: 0 2 * * * pg_dump")
    capsys.readouterr()
    # Never over an existing file.
    assert main(argv) == 2
    assert "exists" in capsys.readouterr().err
    assert load_jobs(out).names == jobs.names


@pytest.mark.parametrize(
    ("option", "message"),
    [(["--zone", "Mars/Olympus"], "--zone"), (["--timeout", "soon"], "--timeout")],
)
def test_bad_options_are_refused(
    tmp_path: Path, capsys: Any, option: list[str], message: str
) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text(GOOD)
    assert main(["import-crontab", str(crontab), *option]) == 2
    assert message in capsys.readouterr().err


@pytest.fixture
def jobs_server(tmp_path: Path, clock: FakeClock) -> Iterator[ApiServer]:
    """The local stack's API with the jobs of GOOD loaded."""
    store = SqliteStore.open(tmp_path / "duetime.db")
    support = TargetSupport(
        frozenset({"webhook", "command"}),
        "",
        jobs=frozenset({"pg_dump", "report.sh", "report.sh-2", "date"}),
    )
    services = ApiServices(
        ScheduleService(store, clock, target_support=support), InMemorySecretStore()
    )

    def api(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return handler(event, context, service=services)

    server = ApiServer(api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
    store.close()


@pytest.fixture
def import_crontab(capsys: pytest.CaptureFixture[str], jobs_server: ApiServer) -> Run:
    def run(*argv: str) -> tuple[int, str, str]:
        code = main(["import-crontab", *argv, "--api-url", jobs_server.url])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_apply_creates_one_schedule_per_line_and_applying_again_creates_none(
    tmp_path: Path, import_crontab: Run, jobs_server: ApiServer
) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text(GOOD)
    code, out, _ = import_crontab(str(crontab), "--apply", "--zone", "Asia/Tokyo")
    assert code == 0
    assert out.count(": created sch_") == 4
    code, out, err = import_crontab(str(crontab), "--apply", "--json")
    assert code == 0
    assert err.count("already scheduled") == 4
    assert [e["job"]["name"] for e in json.loads(out)["entries"]] == [
        "pg_dump",
        "report.sh",
        "date",
        "report.sh-2",
    ]
    assert sorted(scheduled(jobs_server.url)) == [
        ("date", "0 0 * * *", "America/New_York"),
        ("pg_dump", "0 2 * * *", "Asia/Tokyo"),
        ("report.sh", "*/15 9-17 * * MON-FRI", "Europe/London"),
        ("report.sh-2", "0 0 * * *", "America/New_York"),
    ]


def scheduled(url: str) -> list[tuple[str, str, str]]:
    """(job, cron, zone) of every schedule the API holds."""
    body = ApiClient(url).request("GET", "/schedules", query={"limit": 100}).body
    return [
        (s["target"]["job"], s["spec"]["cron"], s["spec"]["time_zone"]) for s in body["schedules"]
    ]


def test_apply_of_a_job_the_stack_has_not_loaded_says_to_restart_it(
    tmp_path: Path, import_crontab: Run
) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text("0 3 * * * /usr/bin/env true\n")
    code, _, err = import_crontab(str(crontab), "--apply")
    assert code == 1
    assert "env: refused: HTTP 422" in err
    assert "start `duetime local` again with this jobs file" in err
