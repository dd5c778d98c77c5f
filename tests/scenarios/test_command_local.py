"""Command targets in `duetime local`, as its user runs it: a jobs file in the data
directory, a schedule naming a job, and the stack killed with SIGKILL in the
middle of a run.

The job's first attempt forks a grandchild and waits; the stack is killed.
The kernel kills the child at once (it dies with the process that started
it); the grandchild, still in the job's process group, holds the lock until
the stack starts again, which kills that group before any run. The lost
attempt's lease then expires and the run is retried as attempt 2, under the
same idempotency key, and succeeds. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.targets.jobs import Job, jobs_toml
from tests.scenarios.local_processes import ROOT, all_runs, call, free_port, start, stop, wait_for

# The held visibility and run lease (15 s each), the tick's start, and slack
# for a shared machine.
RETRY_BOUND_S = 90.0

JOB = """\
echo "$DUETIME_ATTEMPT $DUETIME_IDEMPOTENCY_KEY" >> attempts.txt
if [ "$DUETIME_ATTEMPT" = 1 ]; then
  sleep 120 &
  echo $! > grandchild.pid
  echo $$ > child.pid
  wait
fi
echo "done at attempt $DUETIME_ATTEMPT"
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for init to reap it is gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def jobs_file(work: Path) -> str:
    return jobs_toml([Job(name="slow", command=("sh", "-c", JOB), directory=work, timeout_s=300)])


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_kill_9_mid_run_leaves_no_orphan_and_the_run_is_retried_under_its_key(
    tmp_path: Path,
) -> None:
    data, work = tmp_path / "data", tmp_path / "work"
    data.mkdir()
    work.mkdir()
    (data / "jobs.toml").write_text(jobs_file(work))
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    args = ("--port", str(port), "--echo-port", "0", "--tick-interval", "0.5s")
    args += ("--worker-processes", "1")
    stack = start(data, *args)
    try:
        wait_for(lambda: bool(call("GET", f"{api}/health")), 30, "the API")
        start_at = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
        schedule = call(
            "POST",
            f"{api}/schedules",
            {
                "name": "slow job",
                "spec": {"every": "PT1H", "start_at": start_at.isoformat()},
                "target": {"type": "command", "job": "slow"},
            },
        )

        # Given the job's first attempt running, with a grandchild
        wait_for((work / "child.pid").exists, 60, "the first attempt to start")
        child = int((work / "child.pid").read_text())
        grandchild = int((work / "grandchild.pid").read_text())

        # When the stack is killed with SIGKILL
        stack.send_signal(signal.SIGKILL)
        stack.wait(timeout=20)

        # Then the child dies with it, at once
        wait_for(lambda: not alive(child), 10, "the child to die with the stack")

        # And when the stack starts again, the orphaned grandchild is killed
        stack = start(data, *args)
        wait_for(lambda: not alive(grandchild), 30, "the orphan to be killed at start")

        # And the run is retried as attempt 2 under the same key, and succeeds
        def succeeded() -> bool:
            runs = all_runs(api, schedule["id"])
            return bool(runs) and runs[0]["status"] == "succeeded"

        wait_for(succeeded, RETRY_BOUND_S, "the run to be retried and succeed")
        (run,) = all_runs(api, schedule["id"])
        key = run["occurrence_id"]
        assert (work / "attempts.txt").read_text().splitlines() == [f"1 {key}", f"2 {key}"]
        shown = call("GET", f"{api}/runs/{key}")
        assert [a["outcome"] for a in shown["attempts_log"]] == ["lost", "succeeded"]
        assert shown["result"]["exit_code"] == 0
        assert shown["result"]["stdout_tail"] == "done at attempt 2\n"
        assert (data / shown["result"]["log_file"]).read_text() == "done at attempt 2\n"
    finally:
        if stack.poll() is None:
            stop(stack)


@pytest.mark.slow
def test_a_bad_jobs_file_stops_the_start_naming_the_job_and_field(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.toml"
    jobs.write_text('[jobs.report]\ncommand = "pg_dump mydb"\n')
    started = time.monotonic()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "cli.main", "local", "--data-dir", str(tmp_path / "data")),
            *("--port", str(free_port()), "--jobs", str(jobs)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "POWERTOOLS_METRICS_DISABLED": "true"},
    )
    assert done.returncode == 1
    assert (
        f"duetime local: the jobs file is not usable: {jobs}: jobs.report.command: must be a "
        "list of strings" in done.stderr
    )
    assert time.monotonic() - started < 60
