"""The attempt line: written without a ``LogRecord`` where the Powertools
logger is set up as duetime sets it, byte for byte the line Powertools writes;
through Powertools wherever something else listens or the level says no.
It carries what an operator finds and reads a run by, and none of the keys
Lambda's own lines or the log group already say."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import adapters.telemetry as worker_module
from adapters.observability import build_logger, logger
from adapters.telemetry import PowertoolsTelemetry
from domain.identity import parse_occurrence_id
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


def written_by(captured: io.StringIO, call: Callable[[], object]) -> str:
    """What ``call`` writes to standard output (for a logger nothing else listens to)."""
    real, sys.stdout = sys.stdout, captured
    try:
        call()
    finally:
        sys.stdout = real
    return captured.getvalue()


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("{")]


def through_powertools(monkeypatch: pytest.MonkeyPatch, report: AttemptReport) -> str:
    with monkeypatch.context() as patch:
        patch.setattr(worker_module, "_attempt_line", lambda *args: False)
        text = written(io.StringIO(), lambda: PowertoolsTelemetry().attempt_ended(report))
    [line] = lines(text)
    return line


def records_made(monkeypatch: pytest.MonkeyPatch) -> list[logging.LogRecord]:
    """Every ``LogRecord`` duetime's logger makes from now on (the short path makes none)."""
    return records_made_of(monkeypatch, logger())


def records_made_of(monkeypatch: pytest.MonkeyPatch, log: Any) -> list[logging.LogRecord]:
    made: list[logging.LogRecord] = []
    inner = log._logger
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
    # the same keys in the same order, the same values
    assert list(json.loads(short)) == list(json.loads(long))
    assert short == long


def test_the_attempt_line_carries_appended_keys_and_no_trace_id_as_powertools_does(
    stdout: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lambda passes a trace id to every invocation, X-Ray on or not.
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
    logger().append_keys(deployment="blue")
    made = records_made(monkeypatch)
    try:
        [short] = lines(written(stdout, lambda: PowertoolsTelemetry().attempt_ended(RETRYING)))
        assert made == []
        long = through_powertools(monkeypatch, RETRYING)
    finally:
        logger().remove_keys(["deployment"])
    assert short == long
    fields = json.loads(short)
    assert fields["deployment"] == "blue"
    assert "xray_trace_id" not in fields
    assert fields["status_code"] == 503 and "status_code" not in json.loads(
        through_powertools(monkeypatch, SUCCEEDED)
    )


# What an operator finds a run by and reads of an attempt (docs/runs.md,
# "What each attempt reports"); ``error`` and ``status_code`` when there is one.
OPERATOR_FIELDS = [
    "occurrence_id",
    "schedule_id",
    "attempt",
    "status",
    "duration_s",
    "late_by_s",
    "error",
    "status_code",
]


def test_the_attempt_line_carries_what_an_operator_finds_and_reads_a_run_by(
    stdout: io.StringIO,
) -> None:
    [ok, retrying] = [
        json.loads(line)
        for line in lines(
            written(
                stdout,
                lambda: (
                    PowertoolsTelemetry().attempt_ended(SUCCEEDED),
                    PowertoolsTelemetry().attempt_ended(RETRYING),
                ),
            )
        )
    ]
    # Off the machine (the local stack), the line keeps its own timestamp.
    assert list(ok) == ["level", "message", "timestamp", *OPERATOR_FIELDS[:6]]
    assert list(retrying) == ["level", "message", "timestamp", *OPERATOR_FIELDS]
    assert ok["message"] == "attempt" and ok["level"] == "INFO"
    assert (ok["occurrence_id"], ok["schedule_id"], ok["attempt"], ok["status"]) == (
        "sch_a.v1.20261201T090000Z",
        "sch_a",
        1,
        "succeeded",
    )
    assert (ok["duration_s"], ok["late_by_s"]) == (0.012, 0.5)
    # the schedule, version and scheduled_at are in the occurrence id
    key = parse_occurrence_id(ok["occurrence_id"])
    assert (key.schedule_id, key.version, key.scheduled_at.isoformat()) == (
        "sch_a",
        1,
        "2026-12-01T09:00:00+00:00",
    )
    assert retrying["level"] == "WARNING"
    assert (retrying["status"], retrying["error"], retrying["status_code"]) == (
        "retrying",
        "HTTP 503",
        503,
    )


def lambda_logger(name: str) -> Any:
    """duetime's logger as a Lambda function builds it (a logger of its own name,
    so the process's ``logger()`` is left as it is)."""
    log = build_logger(name, lambda_function=True)
    log._logger.propagate = False  # nothing but its own handler listens, as on Lambda
    return log


def test_on_lambda_the_line_leaves_out_what_lambda_and_cloudwatch_already_say(
    stdout: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
    log = lambda_logger("duetime-test-lambda-line")
    monkeypatch.setattr(worker_module, "logger", lambda: log)
    made = records_made_of(monkeypatch, log)
    [short] = lines(written_by(stdout, lambda: PowertoolsTelemetry().attempt_ended(RETRYING)))
    assert made == []
    with monkeypatch.context() as patch:
        patch.setattr(worker_module, "_attempt_line", lambda *args: False)
        [long] = lines(
            written_by(io.StringIO(), lambda: PowertoolsTelemetry().attempt_ended(RETRYING))
        )
    assert short == long
    # no timestamp (CloudWatch stamps each line), location, service or trace id
    assert list(json.loads(short)) == ["level", "message", *OPERATOR_FIELDS]


def test_an_error_logged_with_its_exception_keeps_the_exception_and_stack_trace(
    stdout: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = lambda_logger("duetime-test-lambda-error")

    def fail() -> None:
        try:
            raise ConnectionError("store unreachable")
        except ConnectionError:
            log.exception("message not handled", extra={"id": "m-1"})

    [line] = lines(written_by(stdout, fail))
    fields = json.loads(line)
    assert (fields["level"], fields["message"], fields["id"]) == (
        "ERROR",
        "message not handled",
        "m-1",
    )
    assert fields["exception_name"] == "ConnectionError"
    assert "store unreachable" in fields["exception"]
    assert fields["stack_trace"]["frames"][-1]["function"] == "fail"


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


def test_the_fields_docs_runs_md_lists_are_the_fields_of_the_line() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "runs.md").read_text()
    section = text.split("## What each attempt reports", 1)[1].split("\n## ", 1)[0]
    [listed] = re.findall(r"`(occurrence_id,[^`]*)`", section)
    names = [name.strip() for name in re.sub(r"\([^)]*\)", "", listed).split(",")]
    assert names == OPERATOR_FIELDS
