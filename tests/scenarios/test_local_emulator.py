"""`duetime local --store emulator` delivers, as a user runs it.

Given the whole stack in one process over moto in server mode (DynamoDB, SQS
and Secrets Manager adapters, as on AWS),
When a PT1S webhook schedule is created through its HTTP API,
Then a receiver in this test gets deliveries, each signed and carrying its own
occurrence's idempotency key, and the API shows those runs succeeded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.local_processes import (
    Receiver,
    call,
    free_port,
    start_emulator_stack,
    stop,
    wait_for,
)

pytestmark = pytest.mark.slow


def test_the_emulator_stack_runs_the_worker_and_delivers(
    tmp_path: Path, receiver: Receiver
) -> None:
    port, emulator_port = free_port(), free_port()
    api = f"http://127.0.0.1:{port}"
    stack = start_emulator_stack(tmp_path, port, emulator_port)
    try:
        wait_for(lambda: call("GET", f"{api}/health") is not None, 20, "the API")
        schedule = call(
            "POST",
            f"{api}/schedules",
            {
                "name": "emulator check",
                "spec": {"every": "PT1S"},
                "target": {"type": "webhook", "url": receiver.url},
                "payload": {"hello": "emulator"},
            },
        )
        sid = schedule["id"]
        wait_for(lambda: len(receiver.deliveries()) >= 3, 20, "three deliveries")
        delivered = receiver.deliveries()
        keys = [key for key, _ in delivered]
        assert all(key.startswith(f"{sid}.v1.") for key in keys)
        assert all(body["occurrence_id"] == key for key, body in delivered)
        assert len(set(keys)) == len(keys)  # each occurrence once, under its own key

        def recorded() -> bool:
            runs = call("GET", f"{api}/schedules/{sid}/runs?limit=100")["runs"]
            done = {run["occurrence_id"] for run in runs if run["status"] == "succeeded"}
            return set(keys[:3]) <= done

        wait_for(recorded, 10, "the delivered runs recorded as succeeded")
    finally:
        stop(stack)
