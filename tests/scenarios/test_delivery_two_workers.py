"""Two worker processes claim from one SQLite queue: every message is held by one
of them at a time, and every message is handled."""

from __future__ import annotations

import multiprocessing
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite.queue import SqliteQueue
from domain.run import DeliveryIntent

MESSAGES = 200


def _drain(path: str, start: Any, out: Any) -> None:
    queue = SqliteQueue(path, visibility_timeout_s=3600)
    start.wait()  # both processes begin together
    taken: list[str] = []
    idle = 0
    while idle < 3:
        batch = queue.receive(5, 0)
        if not batch:
            idle += 1
            continue
        idle = 0
        for message in batch:
            taken.append(message.message_id)
            time.sleep(0.002)  # the work
            queue.delete(message.receipt)
    queue.close()
    out.put(taken)


@pytest.mark.slow
def test_two_processes_never_receive_one_message_twice(tmp_path: Path) -> None:
    path = str(tmp_path / "duetime.db")
    queue = SqliteQueue(path)
    at = datetime(2026, 12, 1, 9, tzinfo=UTC)
    queue.send_batch([DeliveryIntent(f"sch_w.v1.{n:04d}", "sch_w", 1, at) for n in range(MESSAGES)])
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    start = context.Barrier(2)
    workers = [context.Process(target=_drain, args=(path, start, results)) for _ in range(2)]
    for worker in workers:
        worker.start()
    taken = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    everything = taken[0] + taken[1]
    assert len(everything) == len(set(everything)) == MESSAGES
    assert all(taken), "both processes took part"
    assert queue.depth() == 0
    queue.close()
