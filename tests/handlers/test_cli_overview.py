"""`duetime schedules describe / versions / acknowledge` end to end against the API
as the local stack builds it, served on 127.0.0.1, with a dispatcher ticked by
hand on a fake clock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from cli.local_http import ApiServer
from cli.main import main
from handlers.api import ApiServices, build_services, handler
from service.watchdog import Watchdog
from tests.conftest import FakeClock, utc
from tests.handlers.test_api_describe import SETTINGS, fail_run, tick

Run = Callable[..., tuple[int, str, str]]
HOOK = "https://example.com/hook"


@pytest.fixture
def services(tmp_path: Path, clock: FakeClock) -> Iterator[ApiServices]:
    built = build_services(SETTINGS, data_dir=tmp_path, clock=clock, secrets=InMemorySecretStore())
    yield built
    store = built.schedules.store
    assert isinstance(store, SqliteStore)
    store.close()


@pytest.fixture
def duetime(capsys: pytest.CaptureFixture[str], services: ApiServices) -> Iterator[Run]:
    def api(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return handler(event, context, service=services)

    server = ApiServer(api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--api-url", server.url])
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def as_json(run: Run, *argv: str) -> Any:
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def refused(run: Run, *argv: str) -> str:
    code, out, err = run(*argv)
    assert (code, out) == (2, "")
    assert "Traceback" not in err
    return err


def test_describe_notes_a_dst_gap_on_the_night_it_happens(duetime: Run, clock: FakeClock) -> None:
    # America/New_York springs forward on 2027-03-14 at 02:00 EST (07:00Z) to 03:00 EDT:
    # 02:30 does not exist that day.
    clock.set(utc("2027-03-12T12:00:00Z"))
    sid = as_json(
        duetime, "schedules", "create", "--name", "nightly", "--cron", "30 2 * * *",
        "--tz", "America/New_York", "--dst-gap", "next_valid", "--webhook", HOOK,
    )["id"]  # fmt: skip
    code, out, _ = duetime("schedules", "describe", sid)
    assert code == 0
    upcoming = out.split("Next occurrences\n")[1].splitlines()
    assert upcoming[1].split() == ["2027-03-13T02:30:00-05:00", "2027-03-13T07:30:00Z", "1"]
    assert upcoming[2].split()[:3] == ["2027-03-14T03:00:00-04:00", "2027-03-14T07:00:00Z", "1"]
    assert upcoming[2].endswith("02:30 does not exist (clocks jumped forward); "
                                "runs at the first valid time, 03:00 EDT")  # fmt: skip
    assert "dst gap next_valid" in out


def test_describe_shows_runs_planned_under_the_older_version_after_an_edit(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    sid = as_json(
        duetime, "schedules", "create", "--name", "frequent", "--every", "30s", "--webhook", HOOK
    )["id"]  # fmt: skip
    tick(services, clock)  # plans the next 90 s under version 1
    as_json(duetime, "schedules", "edit", sid, "--every", "1m")
    code, out, _ = duetime("schedules", "describe", sid)
    assert code == 0
    older = out.split("Planned under an older version")[1].splitlines()[2:]
    # Planned by the tick (queued, delivered at their instant), under version 1.
    assert [row.split()[1:4] for row in older] == [
        ["1", "planned", "2026-12-01T08:00:30+00:00"],
        ["1", "planned", "2026-12-01T08:01:00+00:00"],
        ["1", "planned", "2026-12-01T08:01:30+00:00"],
    ]
    assert "  version:  2 " in out


def test_versions_list_and_show_what_each_edit_changed(duetime: Run) -> None:
    sid = as_json(
        duetime, "schedules", "create", "--name", "report", "--cron", "0 9 * * *",
        "--webhook", HOOK,
    )["id"]  # fmt: skip
    as_json(duetime, "schedules", "edit", sid, "--cron", "0 10 * * *", "--overdue", "catch_up_all")
    as_json(duetime, "schedules", "edit", sid, "--name", "report v3")
    code, out, _ = duetime("schedules", "versions", sid)
    assert code == 0
    rows = out.splitlines()
    assert [row.split()[0] for row in rows[1:]] == ["1", "2", "3"]
    assert "(first)" in rows[1]
    assert "policy.overdue, spec.cron" in rows[2] or "spec.cron, policy.overdue" in rows[2]
    assert rows[3].split()[2] == "name"
    code, out, _ = duetime("schedules", "versions", sid, "2")
    assert code == 0
    assert "spec:     cron 0 10 * * * (UTC)" in out
    assert "policy:   overdue catch_up_all" in out


def test_versions_refusals(duetime: Run) -> None:
    sid = as_json(
        duetime, "schedules", "create", "--name", "r", "--every", "1h", "--webhook", HOOK
    )["id"]  # fmt: skip
    assert "HTTP 404" in refused(duetime, "schedules", "versions", sid, "7")
    assert "HTTP 404" in refused(duetime, "schedules", "versions", "sch_missing")


def test_acknowledge_a_failed_one_off_then_nothing_is_left_to_acknowledge(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    sid = as_json(
        duetime, "schedules", "create", "--name", "once", "--at", "2026-12-01T08:10:00Z",
        "--webhook", HOOK,
    )["id"]  # fmt: skip
    clock.set(utc("2026-12-01T08:10:00Z"))
    tick(services, clock)
    [run] = as_json(duetime, "schedules", "describe", sid)["recent_runs"]
    fail_run(services, run["occurrence_id"], clock)
    clock.advance(timedelta(minutes=10))
    Watchdog(services.schedules.store, clock).run()

    code, out, _ = duetime("schedules", "describe", sid)
    assert "  status:   ended (no occurrence will come)" in out
    assert "  watch:    overdue: " in out
    recent = out.split("Recent runs\n")[1].splitlines()[1]
    assert recent.split()[1:3] == ["failed", "scheduled"]
    assert recent.endswith("HTTP 400 from the target")

    code, out, _ = duetime("schedules", "acknowledge", sid, "--note", "fixed by hand")
    assert code == 0
    assert "state:    ended" in out
    assert "watch:    ended: " in out
    assert "HTTP 409" in refused(duetime, "schedules", "acknowledge", sid)


def test_acknowledge_of_an_unknown_schedule_is_a_404(duetime: Run) -> None:
    assert "HTTP 404" in refused(duetime, "schedules", "acknowledge", "sch_missing")
