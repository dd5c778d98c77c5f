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

import itertools
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

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
