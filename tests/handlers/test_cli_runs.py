"""`duetime runs ...` and `duetime dead-letters list` end to end against the API
as the local stack builds it (``build_services`` over SQLite, the SQLite delivery
queue included), served on 127.0.0.1; the dispatcher and a worker with a
scripted target are run by hand on a fake clock."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from bootstrap.settings import Settings
from cli import commands, runs
from cli.local_http import ApiServer
from domain.delivery import Outcome
from domain.partition import Partitioning
from domain.run import DeliveryIntent
from handlers.api import ApiServices, build_services, handler
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.runs import RunWorker
from tests.conftest import FakeClock, FakeQueue, utc
from tests.handlers.cli_driver import Run, as_json, refused
from tests.unit.test_runs import FakeTarget

HOOK = "https://example.com/hook"
PARTITIONING = Partitioning(shards=4, bucket_s=60)


def refused_line(run: Run, *argv: str) -> str:
    return refused(run, *argv, one_line=True)


@pytest.fixture
def services(tmp_path: Path, clock: FakeClock) -> Iterator[ApiServices]:
    built = build_services(
        Settings(shards=4, bucket_s=60),
        data_dir=tmp_path,
        clock=clock,
        secrets=InMemorySecretStore(),
    )
    yield built
    store = built.schedules.store
    assert isinstance(store, SqliteStore)
    store.close()


@pytest.fixture
def server(services: ApiServices) -> Iterator[ApiServer]:
    def api(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return handler(event, context, service=services)

    served = ApiServer(api)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    yield served
    served.shutdown()
    served.server_close()
    thread.join(timeout=5)


def store_of(services: ApiServices) -> SqliteStore:
    store = services.schedules.store
    assert isinstance(store, SqliteStore)
    return store


def tick(services: ApiServices, clock: FakeClock) -> FakeQueue:
    """One tick pass (plan ahead, admit what is due); returns the intents it sent."""
    queue = FakeQueue()
    Ticker(
        store_of(services), queue, clock, TickConfig(partitioning=PARTITIONING), owner="t"
    ).tick_once()
    return queue


def deliver(services: ApiServices, clock: FakeClock, occurrence_id: str, *answers: Outcome) -> None:
    """A worker runs the occurrence's admitted intent against a scripted target."""
    run = store_of(services).records.get_run(occurrence_id)
    assert run is not None
    intent = DeliveryIntent(
        run.occurrence_id, run.schedule_id, run.version, run.scheduled_at, attempt=run.attempts
    )
    worker = RunWorker(
        SqliteRunStore(store_of(services)), FakeTarget(*answers), clock, random.Random(3)
    )
    worker.handle(intent)


def create(run: Run, *extra: str) -> str:
    sid: str = as_json(
        run, "schedules", "create", "--name", "pulse", "--every", "1h", "--webhook", HOOK, *extra
    )["id"]  # fmt: skip
    return sid


def failed_trigger(run: Run, services: ApiServices, clock: FakeClock, sid: str) -> str:
    """A triggered run of ``sid``, retried once (a 503) then failed for good (a 400)."""
    occurrence: str = as_json(run, "schedules", "trigger", sid)["occurrence_id"]
    tick(services, clock)
    deliver(services, clock, occurrence, Outcome.transient("HTTP 503", 503))
    clock.advance(5)
    deliver(services, clock, occurrence, Outcome.permanent("HTTP 400", 400))
    assert as_json(run, "runs", "show", occurrence)["status"] == "failed"
    return occurrence


def test_runs_list_leaves_the_planned_out_unless_asked(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    sid = create(duetime, "--every", "10s")
    tick(services, clock)  # plans ahead: every occurrence is still to come
    assert as_json(duetime, "runs", "list", sid)["runs"] == []
    planned = as_json(duetime, "runs", "list", sid, "--planned")["runs"]
    assert planned and all(r["scheduled_at"] > "2026-12-01T08:00:00Z" for r in planned)
    assert {r["status"] for r in planned} == {"planned"}
    assert all(r["admitted_at"] is None for r in planned)
    code, out, _ = duetime("runs", "list", sid)
    assert (code, out) == (0, "no runs match\n")


def test_runs_list_finds_what_failed_across_schedules(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    first, second = create(duetime), create(duetime)
    failed = failed_trigger(duetime, services, clock, first)
    ok = as_json(duetime, "schedules", "trigger", second)["occurrence_id"]
    tick(services, clock)
    deliver(services, clock, ok)

    listed = as_json(
        duetime, "runs", "list", "--status", "failed,expired", "--since", "2026-12-01T07:00:00Z"
    )
    assert [r["occurrence_id"] for r in listed["runs"]] == [failed]
    assert [r["occurrence_id"] for r in as_json(duetime, "runs", "list", second)["runs"]] == [ok]
    code, out, _ = duetime("runs", "list", "--status", "failed", "--kind", "trigger")
    assert code == 0
    row = out.splitlines()[1].split()
    assert row[:3] == [failed, "failed", "trigger"]
    assert row[5] == "2"  # attempts
    assert out.splitlines()[1].endswith("HTTP 400")
    oldest = as_json(duetime, "runs", "list", "--order", "oldest")["runs"]
    assert [r["occurrence_id"] for r in oldest] == [failed, ok]


def test_runs_list_with_an_until_before_anything_ran_is_empty(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    sid = create(duetime)
    failed_trigger(duetime, services, clock, sid)
    assert as_json(duetime, "runs", "list", "--until", "2026-12-01T07:00:00Z")["runs"] == []


def test_runs_list_of_an_unknown_schedule_is_a_404(duetime: Run) -> None:
    assert "HTTP 404" in refused_line(duetime, "runs", "list", "sch_missing")


def test_runs_list_of_a_deleted_schedule_still_shows_its_runs(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    sid = create(duetime)
    failed = failed_trigger(duetime, services, clock, sid)
    as_json(duetime, "schedules", "delete", sid)
    listed = as_json(duetime, "runs", "list", sid)["runs"]
    assert [r["occurrence_id"] for r in listed] == [failed]
    code, out, _ = duetime("schedules", "describe", sid)
    assert code == 0 and "deleted" in out and failed in out


def test_runs_show_prints_every_attempt(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    occurrence = failed_trigger(duetime, services, clock, create(duetime))
    code, out, _ = duetime("runs", "show", occurrence)
    assert code == 0
    lines = out.splitlines()
    assert "status:        failed" in lines
    assert any(line.startswith("late:          ") for line in lines)
    start = lines.index("attempts:")
    assert lines[start + 1].split()[:4] == ["#", "STARTED", "FINISHED", "OUTCOME"]
    first, second = lines[start + 2].split(), lines[start + 3].split()
    assert first[0] == "1" and second[0] == "2"
    assert "HTTP 503" in lines[start + 2] and "HTTP 400" in lines[start + 3]
    assert first[-1] == "5s"  # the wait before the second attempt


def test_retry_runs_a_failed_occurrence_again_under_the_same_id(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    occurrence = failed_trigger(duetime, services, clock, create(duetime))
    code, out, _ = duetime("runs", "retry", occurrence)
    assert code == 0
    assert f"occurrence_id: {occurrence}" in out
    status = next(line.split()[1] for line in out.splitlines() if line.startswith("status:"))
    assert status in ("admitted", "retrying")
    # Retried already: a second retry is refused, naming the status.
    err = refused_line(duetime, "runs", "retry", occurrence)
    assert "HTTP 409" in err and status in err


def test_retry_refuses_a_run_that_succeeded_and_changes_nothing(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    occurrence = as_json(duetime, "schedules", "trigger", create(duetime))["occurrence_id"]
    tick(services, clock)
    deliver(services, clock, occurrence)
    before = as_json(duetime, "runs", "show", occurrence)
    err = refused_line(duetime, "runs", "retry", occurrence)
    assert "HTTP 409" in err and "succeeded" in err
    assert as_json(duetime, "runs", "show", occurrence) == before


def test_retry_of_an_unknown_run_is_a_404(duetime: Run) -> None:
    assert "HTTP 404" in refused_line(duetime, "runs", "retry", "sch_missing.v1.20261201T080000Z")


def test_dead_letters_list_shows_their_reason(
    duetime: Run, services: ApiServices, tmp_path: Path, clock: FakeClock
) -> None:
    code, out, _ = duetime("dead-letters", "list")
    assert (code, out) == (0, "no dead letters\n")
    queue = SqliteQueue(tmp_path / "duetime.db", clock=clock)
    try:
        intent = DeliveryIntent(
            "sch_dead1.v1.20261201T080000Z", "sch_dead1", 1, utc("2026-12-01T08:00:00Z")
        )
        queue.send_batch([intent])
        [message] = queue.receive(1, 0)
        queue.dead_letter(message, "permanent error: HTTP 404\x1b[2J")
    finally:
        queue.close()
    code, out, _ = duetime("dead-letters", "list")
    assert code == 0
    row = out.splitlines()[1]
    assert row.split()[1:5] == [
        "sch_dead1.v1.20261201T080000Z", "sch_dead1", "2026-12-01T08:00:00Z", "1",
    ]  # fmt: skip
    assert row.endswith("permanent error: HTTP 404\\x1b[2J")


def test_follow_prints_a_run_as_it_is_admitted_and_ends(
    duetime: Run, services: ApiServices, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = create(duetime)
    steps: list[Callable[[], None]] = []
    occurrence: list[str] = []

    def trigger_and_admit() -> None:
        occurrence.append(as_json(duetime, "schedules", "trigger", sid)["occurrence_id"])
        tick(services, clock)

    steps += [trigger_and_admit, lambda: deliver(services, clock, occurrence[0])]

    def sleep(_: float) -> None:
        if not steps:
            raise KeyboardInterrupt
        steps.pop(0)()

    monkeypatch.setattr(runs, "_sleep", sleep)
    code, out, _ = duetime("runs", "follow", sid)
    assert code == 0
    assert [line.split("  ")[1:3] for line in out.splitlines()] == [
        [occurrence[0], "new, admitted"],
        [occurrence[0], "admitted -> succeeded"],
    ]


def test_describe_lists_the_runs_the_planner_already_created(
    duetime: Run, services: ApiServices, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "utc_now", clock.now)
    sid = create(duetime, "--every", "30s")
    tick(services, clock)  # creates the occurrences of the lookahead
    code, out, _ = duetime("schedules", "describe", sid)
    assert code == 0
    planned = out.split("Planned (already created, still to come)\n")[1].split("\n\n")[0]
    times = [row.split()[3] for row in planned.splitlines()[1:]]
    assert times[:2] == ["2026-12-01T08:00:30+00:00", "2026-12-01T08:01:00+00:00"]
    upcoming = out.split("Next occurrences (not created yet)\n")[1].splitlines()[1]
    assert upcoming.split()[1] > "2026-12-01T08:01:00Z"


@pytest.mark.slow
def test_follow_in_its_own_process_exits_0_on_ctrl_c(
    duetime: Run, server: ApiServer, services: ApiServices, clock: FakeClock
) -> None:
    sid = create(duetime)
    occurrence = as_json(duetime, "schedules", "trigger", sid)["occurrence_id"]
    tick(services, clock)
    root = Path(__file__).resolve().parents[2]
    follower = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "runs", "follow", sid, "--api-url", server.url,
         "--interval", "200ms"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    try:
        assert follower.stdout is not None
        first = follower.stdout.readline()  # the run as it stands: it is following now
        assert first.split("  ")[1:3] == [occurrence, "admitted"]
        follower.send_signal(signal.SIGINT)  # what Ctrl-C sends
        _, err = follower.communicate(timeout=20)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_follow_piped_into_a_reader_that_stops_ends_quietly(
    duetime: Run, server: ApiServer, services: ApiServices, clock: FakeClock
) -> None:
    """`duetime runs follow --json | head -1`: head leaves, the next line meets a
    closed pipe, and the command ends without a BrokenPipeError traceback."""
    sid = create(duetime)
    as_json(duetime, "schedules", "trigger", sid)
    tick(services, clock)
    root = Path(__file__).resolve().parents[2]
    follower = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "runs", "follow", sid, "--json", "--api-url",
         server.url, "--interval", "200ms"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    try:
        assert follower.stdout is not None and follower.stderr is not None
        follower.stdout.readline()  # what head -1 reads
        follower.stdout.close()  # and head is gone
        clock.advance(1)
        as_json(duetime, "schedules", "trigger", sid)  # a new run: a line to write
        tick(services, clock)
        follower.wait(timeout=20)
        err = follower.stderr.read().decode()
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert err == ""
    assert follower.returncode == 0


def test_dead_letters_retry_runs_the_letters_occurrence_again(
    duetime: Run, services: ApiServices, tmp_path: Path, clock: FakeClock
) -> None:
    occurrence = failed_trigger(duetime, services, clock, create(duetime))
    queue = SqliteQueue(tmp_path / "duetime.db", clock=clock)
    try:
        run = store_of(services).records.get_run(occurrence)
        assert run is not None
        queue.send_batch([DeliveryIntent(occurrence, run.schedule_id, 1, run.scheduled_at)])
        [message] = queue.receive(1, 0)
        queue.dead_letter(message, "permanent error: HTTP 400")
    finally:
        queue.close()
    [letter] = as_json(duetime, "dead-letters", "list")["dead_letters"]
    code, out, _ = duetime("dead-letters", "retry", letter["id"])
    assert code == 0, out
    assert f"occurrence_id: {occurrence}" in out
    assert as_json(duetime, "runs", "show", occurrence)["status"] in ("admitted", "retrying")


def test_dead_letters_retry_of_an_unknown_id_is_refused_and_retries_nothing(
    duetime: Run, services: ApiServices, clock: FakeClock
) -> None:
    occurrence = failed_trigger(duetime, services, clock, create(duetime))
    err = refused_line(duetime, "dead-letters", "retry", "no-such-letter")
    assert "no dead letter 'no-such-letter' (duetime dead-letters list shows them)" in err
    assert as_json(duetime, "runs", "show", occurrence)["status"] == "failed"
