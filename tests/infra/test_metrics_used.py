"""Every custom metric the code emits is read by an alarm or the dashboard, and back.

Each metric name with its dimension set is billed as one custom metric
($0.30 a month for each hour it receives data), so one that nothing reads is
money for nothing, and one an alarm reads that nothing emits is an alarm that
never sees data. The emitted set is read from the code: every place that
adds a metric (a ``put_count`` / ``put_seconds`` call naming a
``Metric`` constant; Powertools' ``add_metric`` or ``single_metric`` and
CloudWatch's ``put_metric_data`` only inside adapters/observability.py);
the read set from the synthesized template's alarms and dashboard body.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.definitions import METRIC_DIMENSIONS, METRIC_NAMES, METRICS_NAMESPACE, Metric
from tests.infra.helpers import only, resources

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("adapters", "bootstrap", "cli", "domain", "handlers", "infra", "service")
OBSERVABILITY = ROOT / "adapters" / "observability.py"
EMITTERS = {"put_count", "put_seconds"}
# What else would send a custom metric: Powertools' own calls, CloudWatch's API.
SENDERS = {"add_metric", "single_metric", "put_metric_data"}

Used = set[tuple[str, tuple[str, ...]]]


def _called(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def emitted_in_code() -> tuple[set[str], list[str]]:
    """The metric names the code emits, and the places that emit outside the
    declared helpers or name a metric that is not a ``Metric`` constant."""
    names: set[str] = set()
    strays: list[str] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                called = _called(node)
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                if called in SENDERS and path != OBSERVABILITY:
                    strays.append(f"{where}: {called} outside adapters/observability.py")
                if called not in EMITTERS or path == OBSERVABILITY:
                    continue
                first = node.args[0] if node.args else None
                if (
                    isinstance(first, ast.Attribute)
                    and isinstance(first.value, ast.Name)
                    and first.value.id == "Metric"
                    and isinstance(getattr(Metric, first.attr, None), str)
                ):
                    names.add(getattr(Metric, first.attr))
                else:
                    strays.append(f"{where}: {called} without a Metric constant")
    return names, strays


def _body(dashboard: dict[str, Any]) -> dict[str, Any]:
    """The dashboard body as JSON, each CloudFormation token (a Ref, a GetAtt)
    standing in as the text TOKEN."""
    joined = dashboard["Properties"]["DashboardBody"]
    if isinstance(joined, str):
        parsed: dict[str, Any] = json.loads(joined)
        return parsed
    _, parts = joined["Fn::Join"]
    parsed = json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))
    return parsed


def _dimensions(rest: list[Any]) -> tuple[str, ...]:
    """The dimension names of a dashboard metric row after namespace and name:
    name/value pairs, then an optional options object."""
    pairs = [x for x in rest if not isinstance(x, dict)]
    return tuple(sorted(pairs[0::2]))


def read_by_alarms(template: dict[str, Any]) -> Used:
    used: Used = set()
    for alarm in resources(template, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        queries = props.get("Metrics") or [
            {"MetricStat": {"Metric": {k: props.get(k) for k in ("Namespace", "MetricName")}}}
            | {"Dimensions": props.get("Dimensions", [])}
        ]
        for query in queries:
            stat = query.get("MetricStat")
            if stat is None:
                continue
            metric = stat["Metric"]
            dims = query.get("Dimensions", metric.get("Dimensions", []))
            if metric["Namespace"] == METRICS_NAMESPACE:
                used.add((metric["MetricName"], tuple(sorted(d["Name"] for d in dims))))
    return used


def read_by_dashboard(template: dict[str, Any]) -> Used:
    _, dashboard = only(template, "AWS::CloudWatch::Dashboard")
    used: Used = set()
    for widget in _body(dashboard)["widgets"]:
        props = widget.get("properties", {})
        for row in props.get("metrics", []):
            if row and row[0] == METRICS_NAMESPACE:
                used.add((row[1], _dimensions(row[2:])))
    return used


@pytest.fixture(scope="module")
def used(template: dict[str, Any]) -> Used:
    return read_by_alarms(template) | read_by_dashboard(template)


def test_the_code_emits_exactly_the_declared_metrics() -> None:
    names, strays = emitted_in_code()
    assert strays == []
    assert names == METRIC_NAMES


def test_every_emitted_metric_is_read_by_an_alarm_or_the_dashboard(used: Used) -> None:
    names, _ = emitted_in_code()
    emitted = {(name, METRIC_DIMENSIONS) for name in names}
    assert emitted - used == set(), "emitted but read by nothing: cut it or graph it"


def test_every_metric_an_alarm_or_the_dashboard_reads_is_emitted(used: Used) -> None:
    names, _ = emitted_in_code()
    emitted = {(name, METRIC_DIMENSIONS) for name in names}
    assert used - emitted == set(), "read but never emitted: the alarm or graph sees nothing"


def test_the_read_set_is_found_at_all(template: dict[str, Any]) -> None:
    # The heartbeat alarm and the dashboard's lateness graph, as a check on the parsing.
    assert (Metric.TICK_HEARTBEAT, METRIC_DIMENSIONS) in read_by_alarms(template)
    assert (Metric.START_LATENESS, METRIC_DIMENSIONS) in read_by_dashboard(template)


def test_a_stray_metric_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a module that adds a metric directly and one that names a string
    package = tmp_path / "handlers"
    package.mkdir()
    (package / "observability.py").write_text("")
    (package / "extra.py").write_text(
        "def f(m):\n    m.add_metric(name='Extra', unit='Count', value=1)\n"
        "    put_count('Other', 1)\n    put_seconds(Metric.START_LATENESS, 1.0)\n"
    )
    this = sys.modules[__name__]
    monkeypatch.setattr(this, "ROOT", tmp_path)
    monkeypatch.setattr(this, "PACKAGES", ("handlers",))
    monkeypatch.setattr(this, "OBSERVABILITY", package / "observability.py")
    names, strays = emitted_in_code()
    assert names == {Metric.START_LATENESS}
    assert strays == [
        "handlers/extra.py:2: add_metric outside adapters/observability.py",
        "handlers/extra.py:3: put_count without a Metric constant",
    ]
