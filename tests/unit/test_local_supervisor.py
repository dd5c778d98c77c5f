"""`duetime local` restarts a failing part with backoff, and gives up only on a part that
keeps failing at the cap."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from cli.supervisor import Restart, supervise

FAST = Restart(first_s=0.01, cap_s=0.04, healthy_after_s=30, give_up_after=3)


def failures(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    return [line for line in lines if line["event"] == "part failed"]


class Flaky:
    """A loop that fails its first ``failing`` runs, then runs until stopped."""

    def __init__(self, stop: threading.Event, failing: int, then: Callable[[], None]) -> None:
        self.stop = stop
        self.failing = failing
        self.then = then
        self.runs = 0

    def __call__(self) -> None:
        self.runs += 1
        if self.runs <= self.failing:
            raise RuntimeError(f"failure {self.runs}")
        self.then()


def test_a_failing_loop_is_restarted_with_growing_delays_and_logged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = threading.Event()
    loop = Flaky(stop, failing=3, then=stop.set)
    gave_up: list[str] = []
    supervise("tick", loop, stop, FAST, gave_up.append)
    assert loop.runs == 4 and gave_up == []
    logged = failures(capsys)
    assert [line["restart_in_s"] for line in logged] == [0.01, 0.02, 0.04]
    assert [line["error"] for line in logged] == [
        "RuntimeError('failure 1')",
        "RuntimeError('failure 2')",
        "RuntimeError('failure 3')",
    ]
    assert all(line["part"] == "tick" for line in logged)
    assert "in __call__" in logged[0]["traceback"][-1]


def test_a_loop_failing_at_the_cap_gives_up_after_the_set_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = threading.Event()
    loop = Flaky(stop, failing=1000, then=stop.set)
    gave_up: list[str] = []
    supervise("watchdog", loop, stop, FAST, gave_up.append)
    assert gave_up == ["watchdog"]
    # 0.01, 0.02, then three failures with the delay at the 0.04 cap.
    assert loop.runs == 5
    logged = failures(capsys)
    assert [line.get("restart_in_s") for line in logged] == [0.01, 0.02, 0.04, 0.04, None]
    assert logged[-1]["giving_up"] is True and logged[-1]["failures_at_cap"] == 3


def test_a_loop_that_ran_well_for_a_while_starts_again_from_the_first_delay(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = threading.Event()
    runs = 0

    def loop() -> None:
        nonlocal runs
        runs += 1
        if runs == 3:
            time.sleep(0.2)  # a good run, longer than healthy_after_s
        if runs == 5:
            stop.set()
            return
        raise RuntimeError("again")

    restart = Restart(first_s=0.01, cap_s=1, healthy_after_s=0.1, give_up_after=3)
    supervise("worker", loop, stop, restart, lambda part: None)
    assert [line["restart_in_s"] for line in failures(capsys)] == [0.01, 0.02, 0.01, 0.02]


def test_a_loop_that_returns_while_the_stack_runs_is_restarted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = threading.Event()
    runs = 0

    def loop() -> None:
        nonlocal runs
        runs += 1
        if runs == 2:
            stop.set()

    supervise("api", loop, stop, FAST, lambda part: None)
    assert runs == 2
    [logged] = failures(capsys)
    assert logged["error"] == "the loop returned while the stack was running"


def test_a_stop_during_the_backoff_ends_the_supervisor_without_another_run() -> None:
    stop = threading.Event()
    runs = 0

    def loop() -> None:
        nonlocal runs
        runs += 1
        raise RuntimeError("fails")

    slow = Restart(first_s=30, cap_s=30)
    thread = threading.Thread(target=supervise, args=("tick", loop, stop, slow, print))
    thread.start()
    time.sleep(0.1)
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive() and runs == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"first_s": 0},
        {"first_s": 2, "cap_s": 1},
        {"give_up_after": 0},
    ],
)
def test_a_restart_policy_that_cannot_work_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Restart needs"):
        Restart(**bad)
