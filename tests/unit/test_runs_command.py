"""A run whose target is a command: what the worker records of each exit code,
of a job that is still running (skipped, locked), and of retries (the same
idempotency key on every attempt). Over the SQLite store, with real children."""

from __future__ import annotations

import fcntl
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.sqlite.runs import SqliteRunStore
from adapters.targets.command import CommandRunner
from adapters.targets.jobs import Job, Jobs
from domain.run import DeliveryIntent, Run, RunStatus
from service.runs import RunWorker
from service.schedules import ScheduleService, TargetSupport
from tests.conftest import FakeClock, World, definition, make_world, utc


def job(name: str, line: str, directory: Path) -> Job:
    return Job(name=name, command=("sh", "-c", line), directory=directory)


@pytest.fixture
def world(tmp_path: Path, clock: FakeClock) -> Iterator[World]:
    w = make_world(tmp_path / "duetime.db", clock)
    support = TargetSupport(frozenset({"command"}), "", jobs=frozenset({"ok", "busy", "broken"}))
    w.schedules = ScheduleService(w.store, clock, w.config.partitioning, target_support=support)
    yield w
    w.store.close()


def due(world: World, clock: FakeClock, job_name: str, retry: int = 3) -> DeliveryIntent:
    world.schedules.create(
        definition(
            {
                "name": job_name,
                "spec": {"cron": "1 8 * * *", "time_zone": "Europe/London"},
                "target": {"type": "command", "job": job_name},
                "policy": {"retry": {"max_attempts": retry, "base": "PT1S", "cap": "PT4S"}},
            }
        )
    )
    world.ticker().tick_once()
    clock.set(utc("2026-12-01T08:01:00Z"))
    world.ticker().tick_once()
    return world.queue.sent[-1]


def worker(world: World, clock: FakeClock, runner: CommandRunner) -> RunWorker:
    return RunWorker(SqliteRunStore(world.store), runner, clock, random.Random(7))


def stored(world: World, intent: DeliveryIntent) -> Run:
    run = world.store.records.get_run(intent.occurrence_id)
    assert run is not None
    return run


def make_runner(tmp_path: Path) -> CommandRunner:
    jobs = [
        job("ok", 'echo "attempt $DUETIME_ATTEMPT key $DUETIME_IDEMPOTENCY_KEY"', tmp_path),
        job("busy", 'echo "attempt $DUETIME_ATTEMPT" >&2; exit 75', tmp_path),
        job("broken", "echo 'bad config' >&2; exit 3", tmp_path),
    ]
    return CommandRunner(Jobs(None, {j.name: j for j in jobs}), tmp_path, log=lambda _: None)


def test_exit_0_succeeds_and_the_run_keeps_exit_code_and_tail(
    world: World, clock: FakeClock, tmp_path: Path
) -> None:
    intent = due(world, clock, "ok")
    decision = worker(world, clock, make_runner(tmp_path)).handle(intent)
    assert decision.action == "delete"
    run = stored(world, intent)
    assert run.status is RunStatus.SUCCEEDED
    assert run.result is not None
    assert run.result["exit_code"] == 0
    assert run.result["stdout_tail"] == f"attempt 1 key {intent.occurrence_id}\n"
    assert run.result["job"] == "ok"


def test_exit_75_is_retried_with_backoff_under_the_same_key(
    world: World, clock: FakeClock, tmp_path: Path
) -> None:
    intent = due(world, clock, "busy", retry=2)
    w = worker(world, clock, make_runner(tmp_path))
    first = w.handle(intent)
    assert first.action == "retry"
    assert 0 <= first.delay_s <= 2.0  # full jitter: uniform(0, min(cap, base * 2**1))
    run = stored(world, intent)
    assert run.status is RunStatus.RETRYING
    assert run.result is not None and run.result["exit_code"] == 75
    clock.advance(first.delay_s)
    second = w.handle(intent)
    run = stored(world, intent)
    assert second.action == "delete"  # failed for good: recorded, not dead-lettered
    assert run.status is RunStatus.FAILED
    assert run.attempts == 2
    assert run.result is not None and run.result["stderr_tail"] == "attempt 2\n"
    assert run.reason is not None and run.reason.startswith("attempts exhausted (2 of 2)")


def test_another_exit_code_fails_the_run_without_a_retry(
    world: World, clock: FakeClock, tmp_path: Path
) -> None:
    intent = due(world, clock, "broken")
    decision = worker(world, clock, make_runner(tmp_path)).handle(intent)
    run = stored(world, intent)
    assert decision.action == "delete"
    assert run.status is RunStatus.FAILED
    assert run.attempts == 1
    assert run.reason == "permanent error: exit code 3"
    assert run.result is not None and run.result["stderr_tail"] == "bad config\n"


def test_a_run_that_finds_its_job_running_is_skipped_locked(
    world: World, clock: FakeClock, tmp_path: Path
) -> None:
    runner = make_runner(tmp_path)
    intent = due(world, clock, "ok")
    lock = runner._lock_path("ok")
    lock.parent.mkdir(parents=True)
    held = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)  # the previous run, still going
    try:
        decision = worker(world, clock, runner).handle(intent)
    finally:
        os.close(held)
    run = stored(world, intent)
    assert decision.action == "delete"
    assert run.status is RunStatus.SKIPPED
    assert run.reason == "locked: job ok is still running"
    assert run.attempt_log[-1].outcome == "skipped"
