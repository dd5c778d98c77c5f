"""On Lambda the worker, the tick and the watchdog build their clients in the init phase
(the handler module's last statement), where Lambda gives burst CPU; elsewhere importing
them builds nothing. Each case imports the module in a fresh interpreter, as a Lambda
container does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = [
    ("handlers.worker", "_container_worker"),
    ("handlers.tick", "_container_ticker"),
    ("handlers.watchdog", "_container_watchdog"),
]


def _import(module: str, attribute: str, env: dict[str, str]) -> tuple[bool, list[str]]:
    """Import ``module`` in a new process with ``env`` (and nothing of this one's AWS
    settings): whether its container's parts were built, and what it logged."""
    code = f"import json, {module} as m; print(json.dumps({{'built': m.{attribute} is not None}}))"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DUETIME_"))}
    answer = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **clean,
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "PYTHONPATH": str(ROOT),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answer.returncode == 0, answer.stderr
    *logged, last = answer.stdout.strip().splitlines()
    return json.loads(last)["built"], logged


LAMBDA = {
    "AWS_LAMBDA_FUNCTION_NAME": "duetime-fn",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "DUETIME_DELIVERY_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/q",
    "DUETIME_DELIVERY_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
}


@pytest.mark.parametrize(("module", "attribute"), HANDLERS)
def test_on_lambda_the_import_builds_the_containers_clients(module: str, attribute: str) -> None:
    built, logged = _import(module, attribute, LAMBDA)
    assert built
    assert not [line for line in logged if "init phase" in line]


@pytest.mark.parametrize(("module", "attribute"), HANDLERS)
def test_elsewhere_the_import_builds_nothing(module: str, attribute: str) -> None:
    env = {k: v for k, v in LAMBDA.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    built, logged = _import(module, attribute, env)
    assert not built and logged == []


@pytest.mark.parametrize(("module", "attribute"), HANDLERS)
def test_a_build_that_fails_in_the_init_phase_is_logged_and_the_function_still_starts(
    module: str, attribute: str
) -> None:
    # No region: botocore cannot build a client. The import (Lambda's init) succeeds, the
    # failure is one error line, and nothing is kept: the first invocation builds again.
    env = {k: v for k, v in LAMBDA.items() if k != "AWS_DEFAULT_REGION"}
    built, logged = _import(module, attribute, env)
    assert not built
    [line] = [json.loads(line) for line in logged]
    assert line["level"] == "ERROR"
    assert "not built in the init phase: its first invocation builds it" in line["message"]
    assert "NoRegionError" in line.get("exception_name", "") + line.get("exception", "")


def test_the_first_invocation_builds_what_the_init_phase_could_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from adapters import observability
    from handlers import worker as worker_handler

    built = object()
    answers: list[object] = [RuntimeError("the table is not there yet"), built]

    def build(settings: object, **parts: object) -> object:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    logged: list[str] = []
    monkeypatch.setattr(worker_handler, "_container_worker", None)
    monkeypatch.setattr(worker_handler, "build_aws_worker", build)
    monkeypatch.setattr(
        observability, "logger", lambda: type("L", (), {"exception": logged.append})()
    )
    worker_handler.init_container()
    assert logged == ["the worker not built in the init phase: its first invocation builds it"]
    assert worker_handler._container_worker is None
    assert worker_handler.container_worker() is built  # the first invocation's build
    assert worker_handler.container_worker() is built and answers == []  # kept


def test_the_watchdog_builds_its_store_once_per_container(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before, every pass (one every few minutes) built a new store and its clients.
    from handlers import watchdog as watchdog_handler

    builds: list[object] = []

    def build(settings: object) -> object:
        builds.append(object())
        return builds[-1]

    monkeypatch.setattr(watchdog_handler, "_container_watchdog", None)
    monkeypatch.setattr(watchdog_handler, "build_aws_watchdog", build)
    watchdog_handler.init_container()
    watchdog = watchdog_handler.container_watchdog()
    assert watchdog is watchdog_handler.container_watchdog()
    assert watchdog is builds[0] and len(builds) == 1
