"""`duetime smoke` against `duetime local --store emulator`, as against a stack.

Given the emulator stack (API, tick and worker over moto in server mode, the
AWS adapters as deployed) and a queue standing in for the stack's SmokeQueue,
When `duetime smoke` runs against its API and that queue,
Then it exits 0 having seen the run succeed and its message arrive, and the
schedule it created is gone.
"""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from cli.main import main
from tests.scenarios.local_processes import call, free_port, start_emulator_stack, stop, wait_for

pytestmark = pytest.mark.slow


def test_smoke_passes_against_the_emulator_stack_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port, emulator_port = free_port(), free_port()
    api = f"http://127.0.0.1:{port}"
    endpoint = f"http://127.0.0.1:{emulator_port}"
    stack = start_emulator_stack(tmp_path, port, emulator_port)
    try:
        wait_for(lambda: call("GET", f"{api}/health") is not None, 20, "the API")
        queue_url = boto3.client("sqs", endpoint_url=endpoint).create_queue(
            QueueName="duetime-smoke"
        )["QueueUrl"]
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)

        code = main(
            ["smoke", "--api-url", api, "--queue-url", queue_url, "--lead", "3", "--timeout", "60"]
        )

        out = capsys.readouterr().out
        assert code == 0, out
        assert "succeeded" in out and "message received from the smoke queue" in out
        assert "duetime smoke: OK" in out
        listed = call("GET", f"{api}/schedules")
        assert not [s for s in listed["schedules"] if s["name"].startswith("duetime smoke")]
    finally:
        stop(stack)
