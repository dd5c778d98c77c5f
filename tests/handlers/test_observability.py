"""Metrics carry the deployment's own ``service`` dimension."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters import observability
from adapters.definitions import Metric
from adapters.sqlite.store import SqliteStore
from handlers import watchdog as watchdog_handler
from service.watchdog import Watchdog
from tests.conftest import FakeClock, utc


@pytest.fixture
def fresh_observability() -> Iterator[None]:
    """Logger and metrics built anew from this test's environment, and after it."""
    observability.logger.cache_clear()
    observability.metrics.cache_clear()
    yield
    observability.logger.cache_clear()
    observability.metrics.cache_clear()


def emf_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in output.splitlines() if x.startswith("{") and '"_aws"' in x]


@pytest.mark.usefixtures("fresh_observability")
def test_metrics_carry_the_stack_name_the_function_environment_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "DuetimeBlue")
    store = SqliteStore.open(tmp_path / "duetime.db")
    try:
        watchdog_handler.handler(
            {}, None, watchdog=Watchdog(store, FakeClock(utc("2026-12-01T10:00:00Z")))
        )
    finally:
        store.close()
    [blob] = emf_lines(capsys.readouterr().out)
    assert blob["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
    assert blob["service"] == "DuetimeBlue"


@pytest.mark.usefixtures("fresh_observability")
def test_without_a_stack_name_metrics_carry_the_default_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POWERTOOLS_SERVICE_NAME", raising=False)
    assert observability.service_name() == "duetime"


@pytest.mark.usefixtures("fresh_observability")
def test_a_metric_that_is_not_declared_is_refused_and_nothing_is_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ValueError, match="'QueueDepth' is not a declared metric"):
        observability.put_count("QueueDepth", 3)
    with pytest.raises(ValueError, match="'QueueAge' is not a declared metric"):
        observability.put_seconds("QueueAge", 1.5)
    with pytest.warns(UserWarning, match="No application metrics"):
        observability.metrics().flush_metrics()
    assert emf_lines(capsys.readouterr().out) == []


@pytest.mark.usefixtures("fresh_observability")
def test_a_count_of_zero_is_not_sent_and_a_duration_of_zero_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    observability.put_count(Metric.RUNS_FAILED, 0)
    observability.put_count(Metric.RUNS_SUCCEEDED, 2)
    observability.put_seconds(Metric.START_LATENESS, 0.0)
    observability.metrics().flush_metrics()

    [blob] = emf_lines(capsys.readouterr().out)
    names = [m["Name"] for m in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    assert sorted(names) == [Metric.RUNS_SUCCEEDED, Metric.START_LATENESS]
    assert blob[Metric.RUNS_SUCCEEDED] == [2.0] and blob[Metric.START_LATENESS] == [0.0]
