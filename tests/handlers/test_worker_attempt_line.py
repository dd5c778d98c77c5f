"""The attempt line: written without a ``LogRecord`` where the Powertools
logger is set up as duetime sets it, byte for byte the line Powertools writes;
through Powertools wherever something else listens or the level says no."""

from __future__ import annotations

import io
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import handlers.worker as worker_module
from handlers.observability import logger
from handlers.worker import PowertoolsTelemetry
from service.run_ports import AttemptReport

SUCCEEDED = AttemptReport("sch_a.v1.20261201T090000Z", "sch_a", 1, 1, "succeeded", 0.0123, 0.5)
RETRYING = AttemptReport(
    "sch_a.v1.20261201T090000Z", "sch_a", 1, 2, "retrying", 1.5, 3.25, "HTTP 503", 503
)


@pytest.fixture
def stdout(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """Standard output as the tests read it, and a fixed clock."""
    captured = io.StringIO()
    monkeypatch.setattr(time, "time", lambda: 1764579600.123456)
    real = sys.stdout
    sys.stdout = captured  # pytest sets sys.stdout again between setup and call
    try:
        yield captured
    finally:
        sys.stdout = real


def written(captured: io.StringIO, call: Callable[[], None], *, alone: bool = True) -> str:
    """What ``call`` writes to standard output; ``alone``: with nothing but
    duetime's handler listening, as in a deployment (pytest attaches its own
    capturing handlers to the root and to every logger that does not
    propagate, at the start of each test phase)."""
    inner = logger()._logger
    kept = inner.handlers, inner.propagate
    if alone:
        inner.handlers, inner.propagate = [logger().registered_handler], False
    real, sys.stdout = sys.stdout, captured
    try:
        call()
    finally:
        sys.stdout = real
        inner.handlers, inner.propagate = kept
    return captured.getvalue()


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("{")]


def through_powertools(monkeypatch: pytest.MonkeyPatch, report: AttemptReport) -> str:
    with monkeypatch.context() as patch:
        patch.setattr(worker_module, "_attempt_line", lambda *args: False)
        text = written(io.StringIO(), lambda: PowertoolsTelemetry().attempt_ended(report))
    [line] = lines(text)
    return line


def without_line_number(line: str) -> dict[str, object]:
    fields = json.loads(line)
    fields["location"] = str(fields["location"]).split(":")[0]
    return fields


def records_made(monkeypatch: pytest.MonkeyPatch) -> list[logging.LogRecord]:
    """Every ``LogRecord`` duetime's logger makes from now on (the short path makes none)."""
    made: list[logging.LogRecord] = []
    inner = logger()._logger
    original = inner.makeRecord

    def spy(*args: Any, **kwargs: Any) -> logging.LogRecord:
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(inner, "makeRecord", spy)
    return made


@pytest.mark.parametrize("report", [SUCCEEDED, RETRYING])
def test_the_attempt_line_is_the_line_powertools_writes(
    stdout: io.StringIO, monkeypatch: pytest.MonkeyPatch, report: AttemptReport
) -> None:
    made = records_made(monkeypatch)
    [short] = lines(written(stdout, lambda: PowertoolsTelemetry().attempt_ended(report)))
    assert made == []
    long = through_powertools(monkeypatch, report)
    # the same keys in the same order, the same values (the line number of the
    # call differs by the line between the two calls)
    assert list(json.loads(short)) == list(json.loads(long))
    assert without_line_number(short) == without_line_number(long)
    assert json.loads(short)["location"].startswith("attempt_ended:")


def test_the_attempt_line_carries_appended_keys_and_the_trace_id_as_powertools_does(
    stdout: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
    logger().append_keys(deployment="blue")
    made = records_made(monkeypatch)
    try:
        [short] = lines(written(stdout, lambda: PowertoolsTelemetry().attempt_ended(RETRYING)))
        assert made == []
        long = through_powertools(monkeypatch, RETRYING)
    finally:
        logger().remove_keys(["deployment"])
    assert without_line_number(short) == without_line_number(long)
    fields = json.loads(short)
    assert fields["deployment"] == "blue"
    assert fields["xray_trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"
    assert fields["status_code"] == 503 and "status_code" not in json.loads(
        through_powertools(monkeypatch, SUCCEEDED)
    )


def test_a_line_below_the_log_level_is_not_written(
    stdout: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = logger()._logger
    level = inner.level
    inner.setLevel(logging.WARNING)
    telemetry = PowertoolsTelemetry()

    def both() -> None:
        telemetry.attempt_ended(SUCCEEDED)
        telemetry.attempt_ended(RETRYING)

    try:
        text = written(stdout, both)
    finally:
        inner.setLevel(level)
    [line] = lines(text)
    assert json.loads(line)["status"] == "retrying"
    assert json.loads(line)["level"] == "WARNING"


def test_the_line_goes_through_logging_when_a_handler_above_listens(
    stdout: io.StringIO, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    made = records_made(monkeypatch)
    with caplog.at_level(logging.INFO):
        text = written(stdout, lambda: PowertoolsTelemetry().attempt_ended(SUCCEEDED), alone=False)
    assert len(made) == 1
    records = [r for r in caplog.records if r.getMessage() == "attempt"]
    assert records
    assert {r.__dict__["occurrence_id"] for r in records} == {SUCCEEDED.occurrence_id}
    [line] = lines(text)
    assert json.loads(line)["occurrence_id"] == SUCCEEDED.occurrence_id
