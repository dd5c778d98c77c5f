"""`duetime local` as a user runs it: real processes, real HTTP, one SQLite directory.

Given the API in one process and the tick/worker/watchdog in another,
When a PT1S schedule delivers to a receiver in this test, the tick/worker
process is killed with SIGKILL and restarted, the schedule is paused, and the
whole stack is stopped and started again,
Then every slot has exactly one run record (no duplicate, no gap), each
delivery carries its occurrence's own key, admissions stop at the pause, and
nothing is lost across the restarts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cli.local import LocalStack, run
from cli.main import build_parser
from cli.supervisor import Restart
from tests.scenarios.local_processes import (
    Receiver,
    all_runs,
    call,
    free_port,
    start,
    stop,
    wait_for,
)

pytestmark = pytest.mark.slow


UNFINISHED = {"waiting", "admitted", "running", "retrying"}


def test_local_stack_survives_sigkill_and_restarts(tmp_path: Path, receiver: Receiver) -> None:
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    api = start(tmp_path, "--only", "api", "--port", str(port), "--echo-port", "0")
    workers = start(tmp_path, "--only", "tick,worker,watchdog", "--tick-interval", "0.2s")
    try:
        wait_for(lambda: call("GET", f"{api_url}/health") is not None, 30, "the API")
        schedule = call(
            "POST",
            f"{api_url}/schedules",
            {
                "name": "every second",
                "spec": {"every": "PT1S"},
                "target": {"type": "webhook", "url": receiver.url},
            },
        )
        sid = schedule["id"]
        wait_for(lambda: len(receiver.deliveries()) >= 3, 30, "three deliveries")

        # The dispatcher/worker process dies without warning, and comes back.
        stop(workers, signal.SIGKILL)
        killed_at = len(receiver.deliveries())
        time.sleep(1.5)
        workers = start(tmp_path, "--only", "tick,worker,watchdog", "--tick-interval", "0.2s")
        # The dead process's shard leases expire first (5 s in the local stack).
        wait_for(
            lambda: len(receiver.deliveries()) >= killed_at + 3, 45, "deliveries after restart"
        )

        # What the killed process held (received, or running) is taken over
        # once its short visibility and run leases lapse: every run admitted
        # so far finishes.
        killed_runs_due_by = datetime.now(UTC)

        def taken_over() -> bool:
            return all(
                r["status"] not in UNFINISHED
                for r in all_runs(api_url, sid)
                if datetime.fromisoformat(r["scheduled_at"].replace("Z", "+00:00"))
                < killed_runs_due_by
            )

        wait_for(taken_over, 60, "the killed process's runs taken over")

        # Pause: admissions stop at once.
        paused = call("POST", f"{api_url}/schedules/{sid}/pause", {"note": "test"})
        assert paused["state"] == {"paused": True, "note": "test"}
        paused_at = datetime.fromisoformat(paused["updated_at"].replace("Z", "+00:00"))
        time.sleep(2.5)
        late = [
            body for _, body in receiver.deliveries()
            if datetime.fromisoformat(body["scheduled_at"].replace("Z", "+00:00")) > paused_at
        ]  # fmt: skip
        assert late == []

        runs = all_runs(api_url, sid)
        # One record per slot: no duplicate, no gap between the first and last.
        instants = sorted(
            datetime.fromisoformat(r["scheduled_at"].replace("Z", "+00:00")) for r in runs
        )
        assert len(instants) == len(set(instants))
        steps = {b - a for a, b in itertools.pairwise(instants)}
        assert steps == {timedelta(seconds=1)}
        # Each delivery carries its own occurrence's key, the same on every attempt.
        for key, body in receiver.deliveries():
            assert key == body["occurrence_id"]
            assert body["schedule_id"] == sid
        delivered = {key for key, _ in receiver.deliveries()}
        succeeded = {r["occurrence_id"] for r in runs if r["status"] == "succeeded"}
        assert succeeded <= delivered
        assert len(succeeded) >= 6

        # The whole stack stops and starts again: everything is still there.
        stop(workers)
        stop(api)
        api = start(tmp_path, "--only", "api", "--port", str(port), "--echo-port", "0")
        wait_for(lambda: call("GET", f"{api_url}/health") is not None, 30, "the API again")
        again = call("GET", f"{api_url}/schedules/{sid}")
        assert again["state"]["paused"] is True
        after_restart = all_runs(api_url, sid)
        assert {r["occurrence_id"]: r["status"] for r in after_restart} == {
            r["occurrence_id"]: r["status"] for r in runs
        }
    finally:
        for process in (api, workers):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


# --- supervision -----------------------------------------------------------------------------

FAST = Restart(first_s=0.05, cap_s=0.2, healthy_after_s=30, give_up_after=1000)


def _args(tmp_path: Path, *extra: str) -> argparse.Namespace:
    return build_parser().parse_args(
        ["local", "--data-dir", str(tmp_path / "data"), "--port", "0", "--echo-port", "0",
         "--tick-interval", "0.2s", *extra]
    )  # fmt: skip


def _logged(err: str, event: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    return [line for line in lines if line["event"] == event]


def test_a_failing_part_is_restarted_and_the_others_keep_delivering(
    tmp_path: Path,
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a stack whose watchdog fails on every run (as an unreadable schedule made it do),
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    runs = 0

    def broken_watchdog() -> None:
        nonlocal runs
        runs += 1
        raise OverflowError("date value out of range")

    stack = LocalStack(_args(tmp_path), restart=FAST, loops={"watchdog": broken_watchdog})
    try:
        stack.start()
        assert stack.api_url is not None
        # when a schedule is created through the API,
        schedule = call(
            "POST",
            f"{stack.api_url}/schedules",
            {
                "name": "every second",
                "spec": {"every": "PT1S"},
                "target": {"type": "webhook", "url": receiver.url},
            },
        )
        # then the tick and the worker deliver it while the watchdog keeps being restarted,
        wait_for(lambda: len(receiver.deliveries()) >= 2, 30, "two deliveries")
        wait_for(lambda: runs >= 3, 10, "three watchdog runs")
        assert call("GET", f"{stack.api_url}/schedules/{schedule['id']}")["id"] == schedule["id"]
        assert not stack.stop.is_set() and stack.gave_up is None
    finally:
        stack.shutdown()
    failed = _logged(capsys.readouterr().err, "part failed")
    assert {line["part"] for line in failed} == {"watchdog"}
    assert failed[0]["error"] == "OverflowError('date value out of range')"
    assert failed[0]["traceback"] and failed[0]["restart_in_s"] == 0.05


def test_a_part_that_keeps_failing_at_the_cap_stops_the_stack_with_status_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")

    def broken() -> None:
        raise RuntimeError("never works")

    args = _args(tmp_path, "--only", "api")
    restart = Restart(first_s=0.01, cap_s=0.02, give_up_after=2)
    code = run(args, LocalStack(args, restart=restart, loops={"watchdog": broken}))
    assert code == 3
    err = capsys.readouterr().err
    assert "duetime local: the watchdog part kept failing; stopping" in err
    assert _logged(err, "stopped")[0]["exit_status"] == 3


def test_sigterm_stops_the_stack_with_status_0(tmp_path: Path) -> None:
    port = free_port()
    process = start(tmp_path, "--port", str(port), "--echo-port", "0")
    try:
        wait_for(lambda: call("GET", f"http://127.0.0.1:{port}/health") is not None, 30, "the API")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


@pytest.mark.usefixtures("without_range_rules")  # the API refuses it now; stored before that
def test_a_schedule_at_the_end_of_time_does_not_stop_the_stack(
    tmp_path: Path,
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a stack whose watchdog runs every 0.2 s, with the real watchdog,
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    stack = LocalStack(_args(tmp_path, "--watchdog-interval", "0.2s"), restart=FAST)
    try:
        stack.start()
        api = stack.api_url
        # when a schedule is due at 9999-12-31T23:59:59Z (past which no date can be computed)
        far = {"type": "webhook", "url": receiver.url}
        for name, spec in (("far", {"at": "9999-12-31T23:59:59Z"}), ("near", {"every": "PT1S"})):
            call("POST", f"{api}/schedules", {"name": name, "spec": spec, "target": far})
        # then the API, the tick and the worker go on, whatever the watchdog makes of it.
        wait_for(lambda: len(receiver.deliveries()) >= 3, 30, "three deliveries")
        assert call("GET", f"{api}/health")["status"] == "ok"
        assert not stack.stop.is_set() and stack.gave_up is None
    finally:
        stack.shutdown()
    # and no part even failed: the watchdog judges it without overflowing.
    assert _logged(capsys.readouterr().err, "part failed") == []
