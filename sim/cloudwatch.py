"""CloudWatch, for the alarms: EMF lines become datapoints, and each alarm is evaluated
on them with its own Period, EvaluationPeriods, DatapointsToAlarm, Threshold,
ComparisonOperator, Statistic (or percentile) and TreatMissingData.

Metrics are account-wide, as in CloudWatch: a metric is (namespace, name,
dimensions), whatever stack printed it.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

MetricKey = tuple[str, str, frozenset[tuple[str, str]]]


@dataclass
class MetricStore:
    points: defaultdict[MetricKey, list[tuple[float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def put(
        self, namespace: str, name: str, dimensions: dict[str, str], t: float, value: float
    ) -> None:
        self.points[(namespace, name, frozenset(dimensions.items()))].append((t, value))

    def read_emf(self, lines: Iterable[str], t: float) -> int:
        """Datapoints from the EMF documents among ``lines``; returns how many."""
        count = 0
        for line in lines:
            if '"_aws"' not in line:
                continue
            try:
                document = json.loads(line)
            except ValueError:
                continue
            meta = document.get("_aws")
            if not isinstance(meta, dict):
                continue
            stamp = meta.get("Timestamp")
            at = stamp / 1000 if isinstance(stamp, (int, float)) else t
            for directive in meta.get("CloudWatchMetrics", []):
                namespace = directive["Namespace"]
                for dimension_set in directive.get("Dimensions", [[]]):
                    dimensions = {d: str(document[d]) for d in dimension_set}
                    for metric in directive.get("Metrics", []):
                        values = document.get(metric["Name"])
                        for value in values if isinstance(values, list) else [values]:
                            if isinstance(value, (int, float)):
                                self.put(namespace, metric["Name"], dimensions, at, float(value))
                                count += 1
        return count


_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanThreshold": lambda v, t: v > t,
    "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
    "LessThanThreshold": lambda v, t: v < t,
    "LessThanOrEqualToThreshold": lambda v, t: v <= t,
}


def statistic(name: str, values: list[float]) -> float:
    if name == "Sum":
        return sum(values)
    if name == "Maximum":
        return max(values)
    if name == "Minimum":
        return min(values)
    if name == "Average":
        return sum(values) / len(values)
    if name == "SampleCount":
        return float(len(values))
    if name.startswith("p"):
        ordered = sorted(values)
        rank = max(0, math.ceil(float(name[1:]) / 100 * len(ordered)) - 1)
        return ordered[rank]
    raise ValueError(f"statistic {name} is not modelled")


@dataclass
class AlarmHistory:
    name: str
    metric: str
    into_alarm_s: list[float] = field(default_factory=list)
    out_of_alarm_s: list[float] = field(default_factory=list)
    final_state: str = "INSUFFICIENT_DATA"
    unknown: str = ""

    def as_dict(self, start: float = 0.0) -> dict[str, Any]:
        def iso(seconds: list[float]) -> list[str]:
            return [
                datetime.fromtimestamp(start + s, UTC).isoformat().replace("+00:00", "Z")
                for s in seconds
            ]

        return {
            "metric": self.metric,
            "into_alarm_at": iso(self.into_alarm_s),
            "out_of_alarm_at": iso(self.out_of_alarm_s),
            "into_alarm_s": self.into_alarm_s,
            "out_of_alarm_s": self.out_of_alarm_s,
            "final_state": self.final_state,
            **({"not_modelled": self.unknown} if self.unknown else {}),
        }

    @property
    def fired(self) -> bool:
        return bool(self.into_alarm_s)


def evaluate(
    alarm: dict[str, Any], store: MetricStore, start: float, end: float, name: str
) -> AlarmHistory:
    """Walk the simulated time period by period, as CloudWatch evaluates once per period.

    Periods are aligned to the start of the simulation. The alarm starts in
    INSUFFICIENT_DATA (CloudWatch's state for a new alarm) and a state is
    entered when the last EvaluationPeriods datapoints decide it.
    """
    period = int(alarm["Period"])
    m = int(alarm["EvaluationPeriods"])
    n = int(alarm.get("DatapointsToAlarm", m))
    threshold = float(alarm["Threshold"])
    compare = _COMPARE[alarm["ComparisonOperator"]]
    stat = str(alarm.get("Statistic") or alarm.get("ExtendedStatistic"))
    treat = alarm.get("TreatMissingData", "missing")
    dimensions = frozenset((d["Name"], str(d["Value"])) for d in alarm.get("Dimensions", []))
    key = (alarm["Namespace"], alarm["MetricName"], dimensions)
    history = AlarmHistory(name, f"{alarm['Namespace']}/{alarm['MetricName']}")
    buckets: defaultdict[int, list[float]] = defaultdict(list)
    for t, value in store.points.get(key, []):
        if start <= t < end:
            buckets[int((t - start) // period)].append(value)
    state = "INSUFFICIENT_DATA"
    periods = int((end - start) // period)
    for last in range(m - 1, periods):
        window = [buckets.get(i) for i in range(last - m + 1, last + 1)]
        breaching = 0
        present = 0
        for values in window:
            if values:
                present += 1
                breaching += compare(statistic(stat, values), threshold)
            elif treat == "breaching":
                present += 1
                breaching += 1
            elif treat == "notBreaching":
                present += 1
        if breaching >= n:
            new = "ALARM"
        elif present == 0 and treat in ("missing", "ignore"):
            new = state if treat == "ignore" else "INSUFFICIENT_DATA"
        else:
            new = "OK"
        at = start + (last + 1) * period - start
        if new == "ALARM" and state != "ALARM":
            history.into_alarm_s.append(at)
        if state == "ALARM" and new != "ALARM":
            history.out_of_alarm_s.append(at)
        state = new
    history.final_state = state
    return history
