"""The command target's adapter, with real child processes (each a few ms of
``sh``): exit codes, the per-job lock, the time budget, process groups, output
bounds and the run's environment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.targets.command import TAIL_BYTES, CommandRunner
from adapters.targets.jobs import Job, Jobs
from domain.delivery import Delivery, Outcome
from domain.targets import CommandTarget

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")

SCHEDULED = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)


def delivery(attempt: int = 1, zone: str = "UTC") -> Delivery:
    return Delivery(
        occurrence_id="sch_abc.v1.20260701T080000Z",
        schedule_id="sch_abc",
        version=1,
        scheduled_at=SCHEDULED,
        attempt=attempt,
        late_by_s=0.25,
        payload={"report": "sales"},
        time_zone=zone,
    )


def shell(name: str, line: str, directory: Path, **fields: Any) -> Job:
    return Job(name=name, command=("sh", "-c", line), directory=directory, **fields)


class Lines:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def __call__(self, fields: dict[str, Any]) -> None:
        self.lines.append(fields)


def runner(tmp_path: Path, *jobs: Job) -> tuple[CommandRunner, Lines]:
    lines = Lines()
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return CommandRunner(Jobs(None, {job.name: job for job in jobs}), data, log=lines), lines


def run(r: CommandRunner, job: str, attempt: int = 1, zone: str = "UTC") -> Outcome:
    return r.deliver(CommandTarget(job), delivery(attempt, zone), timeout_s=900)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not yet reaped by init) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def wait_until(condition: Any, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def lock_is_free(r: CommandRunner, job: str) -> bool:
    fd = r._try_lock(job)
    if fd is None:
        return False
    os.close(fd)
    return True


# --- exit codes -----------------------------------------------------------------------------


def test_exit_0_succeeds_with_exit_code_duration_and_output_tails(tmp_path: Path) -> None:
    r, lines = runner(tmp_path, shell("hello", "echo out; echo err >&2", tmp_path))
    outcome = run(r, "hello")
    assert outcome.kind == "succeeded"
    details = dict(outcome.details or {})
    assert details["exit_code"] == 0
    assert details["stdout_tail"] == "out\n"
    assert details["stderr_tail"] == "err\n"
    assert details["duration_s"] >= 0
    log = r.data_dir / details["log_file"]
    assert sorted(log.read_text().splitlines()) == ["err", "out"]
    assert lines.lines == [
        {
            "event": "command run",
            "run_id": "sch_abc.v1.20260701T080000Z",
            "attempt": 1,
            "job": "hello",
            "status": "succeeded",
            "retryable": False,
            "duration_s": details["duration_s"],
            "exit_code": 0,
        }
    ]


def test_exit_75_is_transient_and_retried(tmp_path: Path) -> None:
    r, _ = runner(tmp_path, shell("flaky", "echo 'db busy' >&2; exit 75", tmp_path))
    outcome = run(r, "flaky")
    assert outcome.kind == "transient"
    assert outcome.error == "exit code 75 (EX_TEMPFAIL: try again later)"
    assert (outcome.details or {})["exit_code"] == 75
    assert (outcome.details or {})["stderr_tail"] == "db busy\n"


def test_another_exit_code_fails_at_once(tmp_path: Path) -> None:
    r, lines = runner(tmp_path, shell("broken", "exit 3", tmp_path))
    outcome = run(r, "broken")
    assert outcome.kind == "permanent"
    assert outcome.error == "exit code 3"
    assert lines.lines[-1]["status"] == "failed"
    assert lines.lines[-1]["exit_code"] == 3


def test_an_exit_code_the_job_lists_is_retried(tmp_path: Path) -> None:
    job = shell("rsync", "exit 24", tmp_path, retry_exit_codes=frozenset({75, 24}))
    r, _ = runner(tmp_path, job)
    assert run(r, "rsync").kind == "transient"


def test_a_death_by_signal_is_a_failure_with_128_plus_the_signal(tmp_path: Path) -> None:
    r, _ = runner(tmp_path, shell("crash", "kill -SEGV $$", tmp_path))
    outcome = run(r, "crash")
    assert outcome.kind == "permanent"
    assert (outcome.details or {})["exit_code"] == 128 + signal.SIGSEGV
    assert (outcome.details or {})["signal"] == "SIGSEGV"


def test_a_program_that_cannot_start_fails_permanently(tmp_path: Path) -> None:
    job = Job(name="gone", command=(str(tmp_path / "missing"),), directory=tmp_path)
    r, _ = runner(tmp_path, job)
    outcome = run(r, "gone")
    assert outcome.kind == "permanent"
    assert "cannot start" in (outcome.error or "")
    assert lock_is_free(r, "gone")


def test_a_job_not_in_the_file_fails_permanently(tmp_path: Path) -> None:
    r, _ = runner(tmp_path)
    outcome = run(r, "nightly")
    assert outcome.kind == "permanent"
    assert outcome.error == "no job 'nightly' in this machine's jobs file"


# --- the time budget and process groups -----------------------------------------------------


def test_past_the_budget_a_child_ignoring_sigterm_is_killed_exit_124(tmp_path: Path) -> None:
    line = "trap '' TERM; echo started; while :; do sleep 0.05; done"
    job = shell("stuck", line, tmp_path, timeout_s=0.5, kill_grace_s=0.5)
    r, lines = runner(tmp_path, job)
    outcome = run(r, "stuck")
    assert outcome.kind == "transient"
    details = dict(outcome.details or {})
    assert details["exit_code"] == 124
    assert details["timed_out"] is True
    assert details["stdout_tail"] == "started\n"
    assert outcome.error is not None and outcome.error.startswith("timed out after 0.5 s")
    assert 0.9 <= details["duration_s"] < 10  # SIGKILL came after the grace, not SIGTERM
    assert lines.lines[-1]["status"] == "timed_out"
    assert lines.lines[-1]["exit_code"] == 124
    assert lock_is_free(r, "stuck")


def test_a_grandchild_is_killed_with_the_group_at_the_budget(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    line = f"sleep 60 & echo $! > {pid_file}; wait"
    job = shell("forks", line, tmp_path, timeout_s=0.5, kill_grace_s=0.5)
    r, _ = runner(tmp_path, job)
    outcome = run(r, "forks")
    assert (outcome.details or {})["exit_code"] == 124
    grandchild = int(pid_file.read_text())
    assert wait_until(lambda: not alive(grandchild))
    assert lock_is_free(r, "forks")


def test_what_a_child_leaves_running_ends_with_it(tmp_path: Path) -> None:
    """A child that exits leaving a background process: the run ends with the
    child, its group is killed, and the lock is free for the next run."""
    pid_file = tmp_path / "left.pid"
    r, _ = runner(tmp_path, shell("leaves", f"sleep 60 & echo $! > {pid_file}", tmp_path))
    outcome = run(r, "leaves")
    assert outcome.kind == "succeeded"
    assert (outcome.details or {})["duration_s"] < 10  # did not wait for the sleep
    left = int(pid_file.read_text())
    assert wait_until(lambda: not alive(left))
    assert lock_is_free(r, "leaves")


# --- the lock -------------------------------------------------------------------------------


def test_a_second_run_while_the_first_holds_the_lock_is_skipped_locked(tmp_path: Path) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    line = f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done"
    r, lines = runner(tmp_path, shell("report", line, tmp_path))
    first: list[Outcome] = []
    thread = threading.Thread(target=lambda: first.append(run(r, "report")))
    thread.start()
    try:
        assert wait_until(started.exists)
        second = run(r, "report", attempt=1)
        assert second.kind == "skipped"
        assert second.error == "locked: job report is still running"
        assert lines.lines[-1]["status"] == "skipped"
    finally:
        release.touch()
        thread.join(10)
    assert first[0].kind == "succeeded"
    assert run(r, "report").kind == "succeeded"  # free again


def test_the_lock_holds_across_processes(tmp_path: Path) -> None:
    """Another process (another worker process of the stack) holding the lock
    and alive: skipped, nothing killed."""
    r, _ = runner(tmp_path, shell("report", "exit 0", tmp_path))
    lock = r._lock_path("report")
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,os,sys,time\n"
            f"fd=os.open({str(lock)!r},os.O_RDWR|os.O_CREAT)\n"
            "fcntl.flock(fd,fcntl.LOCK_EX)\n"
            "print('held',flush=True)\n"
            "time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        lock.write_text(json.dumps({"starter_pid": os.getpid(), "pgid": holder.pid}))
        assert run(r, "report").kind == "skipped"
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()


def test_an_orphan_of_a_dead_stack_is_killed_and_the_run_goes_ahead(tmp_path: Path) -> None:
    """The lock held by a process group whose starter is gone (a stack killed
    with SIGKILL): its group is killed, the lock taken, the job runs."""
    r, _ = runner(tmp_path, shell("report", "exit 0", tmp_path))
    lock = r._lock_path("report")
    lock.parent.mkdir(parents=True)
    orphan = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,os,time\n"
            f"fd=os.open({str(lock)!r},os.O_RDWR|os.O_CREAT)\n"
            "fcntl.flock(fd,fcntl.LOCK_EX)\n"
            "print('held',flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id that no longer runs: the dead starter
    try:
        assert orphan.stdout is not None and orphan.stdout.readline() == b"held\n"
        lock.write_text(json.dumps({"starter_pid": gone.pid, "pgid": orphan.pid}))
        assert r.reap_orphans() == 1
        assert orphan.wait(5) == -signal.SIGKILL
        assert run(r, "report").kind == "succeeded"
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()


# --- output and environment -----------------------------------------------------------------


def test_100_mb_of_output_goes_to_the_log_file_and_the_result_keeps_a_tail(
    tmp_path: Path,
) -> None:
    size = 100_000_000
    line = f"yes 0123456789abcdef | head -c {size}; echo done >&2"
    r, _ = runner(tmp_path, shell("big", line, tmp_path))
    tracemalloc.start()
    try:
        outcome = run(r, "big")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    details = dict(outcome.details or {})
    assert outcome.kind == "succeeded"
    assert details["output_bytes"] == size + len("done\n")
    assert len(details["stdout_tail"].encode()) <= TAIL_BYTES
    assert details["stdout_tail"].endswith("cdef\n0123456789abcdef")  # 100e6 = 17 * 5882352 + 16
    assert details["stderr_tail"] == "done\n"
    assert (r.data_dir / details["log_file"]).stat().st_size == size + len("done\n")
    assert peak < 5_000_000  # bytes held by Python at once, against 100 MB written


def test_the_run_reaches_the_job_in_its_environment(tmp_path: Path) -> None:
    job = shell(
        "env",
        "env | grep -E '^(DUETIME_|REPORT_DB=|PATH=)' | sort",
        tmp_path,
        env=(("REPORT_DB", "sales"),),
    )
    r, _ = runner(tmp_path, job)
    outcome = run(r, "env", attempt=2, zone="Europe/London")
    seen = dict(line.split("=", 1) for line in (outcome.details or {})["stdout_tail"].splitlines())
    assert seen.pop("PATH") == os.environ["PATH"]
    assert seen == {
        "DUETIME_ATTEMPT": "2",
        "DUETIME_IDEMPOTENCY_KEY": "sch_abc.v1.20260701T080000Z",
        "DUETIME_JOB": "env",
        "DUETIME_LATE_BY_S": "0.250",
        "DUETIME_OCCURRENCE_ID": "sch_abc.v1.20260701T080000Z",
        "DUETIME_PAYLOAD": '{"report":"sales"}',
        "DUETIME_SCHEDULED_AT": "2026-07-01T08:00:00Z",
        "DUETIME_SCHEDULED_AT_LOCAL": "2026-07-01T09:00:00+01:00",  # BST
        "DUETIME_SCHEDULE_ID": "sch_abc",
        "DUETIME_SCHEDULE_VERSION": "1",
        "DUETIME_TIME_ZONE": "Europe/London",
        "REPORT_DB": "sales",
    }


def test_the_job_runs_in_its_directory_with_nothing_on_stdin(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    r, _ = runner(tmp_path, shell("where", "pwd; cat; echo end", work))
    outcome = run(r, "where")
    assert (outcome.details or {})["stdout_tail"] == f"{work}\nend\n"


def test_the_janitor_removes_output_logs_older_than_the_retention(tmp_path: Path) -> None:
    from datetime import timedelta

    from adapters.sqlite.janitor import purge_logs

    now = datetime.now(UTC)
    old, new = tmp_path / "a" / "old.1.log", tmp_path / "a" / "new.1.log"
    old.parent.mkdir()
    for path, age in ((old, timedelta(days=91)), (new, timedelta(days=89))):
        path.write_text("output")
        stamp = (now - age).timestamp()
        os.utime(path, (stamp, stamp))
    assert purge_logs(tmp_path, now - timedelta(days=90)) == 1
    assert not old.exists() and new.exists()
    assert purge_logs(tmp_path / "missing", now) == 0
