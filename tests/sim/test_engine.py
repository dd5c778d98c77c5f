"""Simulated time: invocations interleave at their sleeps, and are cut off at their deadline."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from sim.engine import Engine, FunctionTimedOut, Process

START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def test_two_processes_interleave_at_their_sleeps_in_simulated_time() -> None:
    seen: list[tuple[str, float]] = []
    with Engine(START) as engine:

        def body(name: str, step: float) -> None:
            for _ in range(3):
                seen.append((name, time.time() - START.timestamp()))
                time.sleep(step)

        Process(engine, "a", lambda: body("a", 10), None).resume()
        Process(engine, "b", lambda: body("b", 15), None).resume()
        engine.run_until(START.timestamp() + 100)
    assert seen == [("a", 0), ("b", 0), ("a", 10), ("b", 15), ("a", 20), ("b", 30)]


def test_a_process_past_its_deadline_is_stopped_at_its_next_sleep() -> None:
    with Engine(START) as engine:
        process = Process(engine, "a", lambda: time.sleep(100), START.timestamp() + 30)
        process.resume()
        engine.run_until(START.timestamp() + 200)
    assert isinstance(process.error, FunctionTimedOut)
    assert process.done


def test_datetime_now_follows_the_simulated_clock() -> None:
    with Engine(START) as engine:
        engine.run_until(START.timestamp() + 3600)
        assert datetime.now(UTC) == datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_a_wait_in_a_thread_the_process_started_is_simulated_time_within_its_turn() -> None:
    seen: list[float] = []
    with Engine(START) as engine:

        def body() -> None:
            with ThreadPoolExecutor(2) as pool:  # not scheduled by the engine: real threads
                list(pool.map(time.sleep, [3.0]))
            seen.append(time.time() - START.timestamp())

        Process(engine, "a", body, START.timestamp() + 30).resume()
        engine.run_until(START.timestamp() + 100)
    assert seen == [3.0]


def test_a_helper_thread_waiting_past_the_deadline_stops_the_process() -> None:
    with Engine(START) as engine:

        def body() -> None:
            with ThreadPoolExecutor(1) as pool:
                pool.submit(time.sleep, 60.0).result()

        process = Process(engine, "a", body, START.timestamp() + 30)
        process.resume()
        engine.run_until(START.timestamp() + 100)
    assert isinstance(process.error, FunctionTimedOut)


@pytest.mark.parametrize(
    ("threads", "ends"),
    [
        # Two at a time: five one-second tasks end at 1, 1, 2, 2 and 3 s, in order.
        (2, [1.0, 1.0, 2.0, 2.0, 3.0]),
        # No size: every task at once.
        (None, [1.0] * 5),
    ],
)
def test_a_pool_runs_as_many_strands_at_once_as_it_has_threads(
    threads: int | None, ends: list[float]
) -> None:
    from sim.engine import SimExecutor

    ended: list[float] = []
    with Engine(START) as engine:

        def task(n: int) -> int:
            time.sleep(1.0)  # simulated: the engine moves its clock
            ended.append(time.time() - START.timestamp())
            return n

        def body() -> list[int]:
            return list(SimExecutor(engine, threads).map(task, range(5)))

        process = Process(engine, "a", body, START.timestamp() + 30)
        process.resume()
        engine.run_until(START.timestamp() + 100)
    assert process.result == [0, 1, 2, 3, 4]
    assert ended == ends
