"""Run a job of the jobs file as a child process: the command target's adapter.

One attempt is one child process, and these rules hold (docs/commands.md):

- **A lock per job.** Before the child starts, an OS file lock is taken on
  ``<data dir>/commands/locks/<job>.lock`` without waiting (``flock``,
  ``LOCK_NB``); its descriptor is inherited by the child, so the kernel
  frees the lock when the last process holding it ends, however it ends.
  An attempt that finds the lock held does not wait behind it: the run is
  skipped, with the reason ``locked``.
- **Its own process group.** The child starts a new session
  (``start_new_session``); whatever it forks stays in that group unless it
  leaves on purpose. When the child exits, what it left in its group is
  killed (as systemd does with a unit's processes), so the lock is free once
  the run has ended.
- **A time budget.** Past the job's ``timeout``, the group gets SIGTERM, then
  SIGKILL ``kill_grace`` later; the attempt records exit code 124 and is
  retried like a webhook call that timed out. The job's budget is the one the
  machine's owner wrote; the schedule's ``policy.run_timeout`` does not
  shorten it.
- **Exit codes.** 0 succeeded; 75 (EX_TEMPFAIL), 124 and the job's
  ``retry_exit_codes`` are transient (retried with the schedule's backoff
  and full jitter while attempts remain); any other code, or a death by a
  signal (recorded as 128 + the signal's number), fails the run at once.
- **Output.** stdout and stderr are streamed, in the order they come, to a
  log file under ``<data dir>/commands/logs/<job>/`` (kept as long as the
  run history, adapters/sqlite/janitor.py); the run's result keeps the last
  ``TAIL_BYTES`` of each, so a job writing 100 MB costs no memory.
- **The stack's death.** On Linux the child is killed by the kernel when the
  process that started it dies, even by SIGKILL (``PR_SET_PDEATHSIG``, set
  between fork and exec). What the child had forked into its group then
  holds the lock as an orphan: the lock file records the process group and
  the process that started it, and the next start of the stack (or the next
  attempt of that job) kills a group whose starter is gone before taking the
  lock. The attempt itself was lost with its worker; its run lease expires
  and the run is retried under the same idempotency key.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final
from zoneinfo import ZoneInfo

from adapters.targets.jobs import ENV_PREFIX, EX_TEMPFAIL, EX_TIMEOUT, Job, Jobs
from domain.delivery import Delivery, Outcome, format_instant
from domain.targets import CommandTarget, Target

COMMANDS_DIR: Final = "commands"
# How much of each stream a run's result keeps (the end of it).
TAIL_BYTES: Final = 4096
CHUNK_BYTES: Final = 65536
# After the child exits (and its group is killed), how long its pipes may
# stay open (a process that left the group holds them) before reading stops.
DRAIN_S: Final = 2.0
# How long an orphaned group's lock may take to be freed after SIGKILL.
REAP_WAIT_S: Final = 2.0
POLL_S: Final = 0.1
# What the child inherits of the stack's environment (as cron gives a short
# one); the job's ``env`` and the run's DUETIME_* variables are added.
INHERITED_ENV: Final = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
)

LogLine = Callable[[dict[str, Any]], None]


def locks_dir(data_dir: Path) -> Path:
    return data_dir / COMMANDS_DIR / "locks"


def logs_dir(data_dir: Path) -> Path:
    return data_dir / COMMANDS_DIR / "logs"


def _stderr_line(fields: dict[str, Any]) -> None:
    line = {"at": datetime.now(UTC).isoformat(timespec="milliseconds"), **fields}
    print(json.dumps(line, default=str), file=sys.stderr, flush=True)


class _Tail:
    """The last ``limit`` bytes of a stream, whatever its length."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.limit:
            del self.data[: len(self.data) - self.limit]

    def text(self) -> str:
        tail = bytes(self.data[-self.limit :])
        # A cut in the middle of a UTF-8 character loses that character only.
        return tail.decode("utf-8", errors="replace").lstrip("\ufffd")


@dataclass(frozen=True)
class _Ended:
    exit_code: int
    signal_name: str | None
    timed_out: bool
    duration_s: float
    stdout: _Tail
    stderr: _Tail


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (Linux: clock ticks since boot), to tell a
    live process from a new one that reuses its id; None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its end.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return started is None or _process_start(pid) in (None, started)


def _die_with_starter() -> Callable[[], None] | None:
    """Between fork and exec: the kernel kills the child when the thread that
    started it dies (Linux ``PR_SET_PDEATHSIG``). The worker thread waits for
    its child, so that is when the process dies. Elsewhere: None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    starter = os.getpid()
    kill = int(signal.SIGKILL)

    def preexec() -> None:
        prctl(1, kill)  # PR_SET_PDEATHSIG
        if os.getppid() != starter:  # the starter died before that took effect
            os._exit(EX_TIMEOUT)

    return preexec


class CommandRunner:
    """The command target's adapter (``TargetPort``) over one jobs file."""

    def __init__(
        self,
        jobs: Jobs,
        data_dir: Path,
        *,
        log: LogLine | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.jobs = jobs
        self.data_dir = Path(data_dir)
        self.log = log or _stderr_line
        self.monotonic = monotonic
        self._preexec = _die_with_starter()

    # --- the lock -----------------------------------------------------------------------

    def _lock_path(self, job: str) -> Path:
        return locks_dir(self.data_dir) / f"{job}.lock"

    def _try_lock(self, job: str) -> int | None:
        """An open descriptor holding ``job``'s lock, or None when it is held:
        first killing the group of a holder whose starter is gone."""
        path = self._lock_path(job)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if _flock(fd):
            return fd
        if self._reap(fd, job):
            deadline = self.monotonic() + REAP_WAIT_S
            while self.monotonic() < deadline:
                if _flock(fd):
                    return fd
                time.sleep(0.02)
        os.close(fd)
        return None

    def _reap(self, fd: int, job: str) -> bool:
        """Kill the process group holding the lock when the process that started
        it has died (a stack killed with SIGKILL); whether one was killed."""
        try:
            holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
            starter, started = int(holder["starter_pid"]), holder.get("starter_start")
            pgid = holder.get("pgid")
        except (ValueError, KeyError, TypeError, OSError):
            return False
        if not isinstance(pgid, int) or pgid <= 1 or pgid == os.getpgrp():
            return False
        if _alive(starter, started):
            return False
        try:
            os.killpg(int(pgid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return False
        self.log(
            {"event": "command orphans killed", "job": job, "pgid": pgid, "starter_pid": starter}
        )
        return True

    def reap_orphans(self) -> int:
        """At start: kill what a dead stack's jobs left holding their locks.
        Returns how many groups were killed."""
        killed = 0
        for job in self.jobs:
            path = self._lock_path(job.name)
            if not path.exists():
                continue
            fd = os.open(path, os.O_RDWR)
            try:
                if _flock(fd):
                    os.ftruncate(fd, 0)  # no holder: nothing left to read as one
                elif self._reap(fd, job.name):
                    killed += 1
            finally:
                os.close(fd)  # a lock taken here is released with it
        return killed

    @staticmethod
    def _record_holder(fd: int, pgid: int | None) -> None:
        starter = os.getpid()
        holder = {"starter_pid": starter, "starter_start": _process_start(starter), "pgid": pgid}
        data = json.dumps(holder).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)

    # --- one attempt --------------------------------------------------------------------

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        if not isinstance(target, CommandTarget):
            return Outcome.permanent(f"the command adapter cannot deliver to a {target.type}")
        job = self.jobs.get(target.job)
        if job is None:
            return self._logged(
                delivery,
                target.job,
                Outcome.permanent(f"no job {target.job!r} in this machine's jobs file"),
                None,
                0.0,
            )
        fd = self._try_lock(job.name)
        if fd is None:
            return self._logged(
                delivery,
                job.name,
                Outcome.skipped(f"locked: job {job.name} is still running"),
                None,
                0.0,
            )
        try:
            return self._run(job, delivery, fd)
        finally:
            # The holder's record goes before the lock: a record is read only
            # while the lock is held, and then it names the holder.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)

    def _run(self, job: Job, delivery: Delivery, fd: int) -> Outcome:
        log_path = (
            logs_dir(self.data_dir) / job.name / f"{delivery.occurrence_id}.{delivery.attempt}.log"
        )
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._record_holder(fd, None)
        started = self.monotonic()
        with open(log_path, "wb") as log_file:
            try:
                child = subprocess.Popen(
                    job.command,
                    cwd=job.directory,
                    env=self._environment(job, delivery),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    pass_fds=(fd,),
                    preexec_fn=self._preexec,  # one prctl call: takes no lock
                )
            except OSError as error:
                outcome = Outcome.permanent(
                    f"cannot start {job.command[0]!r}: {error.strerror or error}"
                )
                return self._logged(delivery, job.name, outcome, None, 0.0)
            self._record_holder(fd, child.pid)
            ended = self._follow(job, child, log_file, started)
        outcome = self._outcome(job, ended, log_path)
        return self._logged(delivery, job.name, outcome, ended.exit_code, ended.duration_s)

    def _environment(self, job: Job, delivery: Delivery) -> dict[str, str]:
        env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
        env.update(job.env)
        try:
            local = delivery.scheduled_at.astimezone(ZoneInfo(delivery.time_zone))
        except (KeyError, ValueError):
            local = delivery.scheduled_at.astimezone(UTC)
        run = {
            "JOB": job.name,
            "OCCURRENCE_ID": delivery.occurrence_id,
            "IDEMPOTENCY_KEY": delivery.idempotency_key,
            "SCHEDULE_ID": delivery.schedule_id,
            "SCHEDULE_VERSION": str(delivery.version),
            "SCHEDULED_AT": format_instant(delivery.scheduled_at),
            "SCHEDULED_AT_LOCAL": local.isoformat(),
            "TIME_ZONE": delivery.time_zone,
            "ATTEMPT": str(delivery.attempt),
            "LATE_BY_S": f"{delivery.late_by_s:.3f}",
            "PAYLOAD": json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False),
        }
        env.update({ENV_PREFIX + name: value for name, value in run.items()})
        return env

    def _follow(
        self, job: Job, child: subprocess.Popen[bytes], log_file: IO[bytes], started: float
    ) -> _Ended:
        """Stream the child's output until it exits, enforcing the time budget."""
        tails: dict[int, _Tail] = {}
        selector = selectors.DefaultSelector()
        for stream in (child.stdout, child.stderr):
            assert stream is not None
            tails[stream.fileno()] = _Tail()
            selector.register(stream.fileno(), selectors.EVENT_READ)
        deadline = started + job.timeout_s
        kill_at: float | None = None
        timed_out = False

        def read(wait_s: float) -> None:
            for key, _ in selector.select(timeout=max(0.0, wait_s)):
                descriptor = int(key.fd)
                chunk = os.read(descriptor, CHUNK_BYTES)
                if chunk:
                    log_file.write(chunk)
                    tails[descriptor].add(chunk)
                else:
                    selector.unregister(descriptor)

        try:
            while True:
                now = self.monotonic()
                if not timed_out and now >= deadline:
                    timed_out = True
                    _signal_group(child.pid, signal.SIGTERM)
                    kill_at = now + job.kill_grace_s
                if kill_at is not None and now >= kill_at:
                    _signal_group(child.pid, signal.SIGKILL)
                    kill_at = None
                if _exited(child):
                    # What the child left in its group goes with it (the lock too).
                    _signal_group(child.pid, signal.SIGKILL)
                    break
                next_at = kill_at if timed_out else deadline
                wait_s = POLL_S if next_at is None else min(POLL_S, next_at - now)
                if selector.get_map():
                    read(wait_s)
                else:
                    time.sleep(max(0.0, wait_s))
            drain_until = self.monotonic() + DRAIN_S
            while selector.get_map() and self.monotonic() < drain_until:
                read(drain_until - self.monotonic())
        finally:
            selector.close()
            for stream in (child.stdout, child.stderr):
                if stream is not None:
                    stream.close()
        code = child.wait()
        duration_s = self.monotonic() - started
        out, err = (tails[key] for key in sorted(tails))
        signal_name = None
        if code < 0:
            signal_name = signal.Signals(-code).name
            code = 128 - code
        return _Ended(
            exit_code=EX_TIMEOUT if timed_out else code,
            signal_name=signal_name,
            timed_out=timed_out,
            duration_s=duration_s,
            stdout=out,
            stderr=err,
        )

    def _outcome(self, job: Job, ended: _Ended, log_path: Path) -> Outcome:
        code = ended.exit_code
        details: dict[str, Any] = {
            "job": job.name,
            "exit_code": code,
            "duration_s": round(ended.duration_s, 3),
            "stdout_tail": ended.stdout.text(),
            "stderr_tail": ended.stderr.text(),
            "output_bytes": ended.stdout.total + ended.stderr.total,
            "log_file": str(log_path.relative_to(self.data_dir)),
        }
        if ended.signal_name is not None and not ended.timed_out:
            details["signal"] = ended.signal_name
        last = (ended.stderr.text() or ended.stdout.text())[-1024:]
        if ended.timed_out:
            error = (
                f"timed out after {job.timeout_s:g} s: SIGTERM to its process group, "
                f"SIGKILL {job.kill_grace_s:g} s later (exit code {EX_TIMEOUT})"
            )
            details["timed_out"] = True
            return Outcome("transient", None, last, error, None, details)
        if code == 0:
            return Outcome("succeeded", None, last, None, None, details)
        if ended.signal_name is not None:
            error = f"killed by {ended.signal_name} (exit code {code})"
        elif code == EX_TEMPFAIL:
            error = f"exit code {code} (EX_TEMPFAIL: try again later)"
        elif code == EX_TIMEOUT:
            error = f"exit code {code} (the command reports a timeout)"
        else:
            error = f"exit code {code}"
        if code in job.retry_exit_codes or code == EX_TIMEOUT:
            return Outcome("transient", None, last, error, None, details)
        return Outcome("permanent", None, last, error, None, details)

    def _logged(
        self,
        delivery: Delivery,
        job: str,
        outcome: Outcome,
        exit_code: int | None,
        duration_s: float,
    ) -> Outcome:
        """One JSON line per attempt: run id, job, status, duration, exit code."""
        status = {
            "succeeded": "succeeded",
            "transient": "timed_out" if (outcome.details or {}).get("timed_out") else "failed",
            "permanent": "failed",
            "skipped": "skipped",
        }.get(outcome.kind, outcome.kind)
        line: dict[str, Any] = {
            "event": "command run",
            "run_id": delivery.occurrence_id,
            "attempt": delivery.attempt,
            "job": job,
            "status": status,
            "retryable": outcome.kind == "transient",
            "duration_s": round(duration_s, 3),
            "exit_code": exit_code,
        }
        if outcome.error:
            line["error"] = outcome.error
        self.log(line)
        return outcome


def _flock(fd: int) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _exited(child: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, without reaping it where the platform
    allows: its process id then still names its group, which is killed next."""
    if child.returncode is not None:
        return True
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return child.poll() is not None
    try:
        return waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return child.poll() is not None


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
