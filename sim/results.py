"""What a run showed, as one JSON-able dict: deliveries, refusals, growth, alarms, cost.

Cost is priced with ``bench/cost.py``'s price table (imported, not copied):

- Lambda duration is each invocation's *simulated* duration (sleeps and
  target calls take simulated time; AWS requests take none in the
  simulation, so ``AWS_CALL_MS`` is added per request, as bench/cost.py
  assumes) times the function's configured memory, on arm64 prices;
- DynamoDB units come from item sizes (bench/cost.py's ``Meter``);
- SQS counts every request the functions and the event source mapping made;
- the idle cost per month is the cost rate of what runs when nothing is due
  (tick and watchdog invocations that admitted nothing, with their requests,
  EventBridge Scheduler, the event source mapping's empty polls), times a
  month, plus the stack's alarms, dashboard and custom metrics;
- the cost per million runs is everything else in the run, per delivered
  occurrence.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import Any

from bench import cost as prices
from sim.cloudwatch import AlarmHistory, evaluate
from sim.world import Simulation


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)], 3)


def deliveries(
    sim: Simulation, expected: dict[str, list[datetime]], settle_s: float
) -> dict[str, Any]:
    """Due occurrences against what the receiver saw.

    ``due``: expected occurrences at or before the end less ``settle_s``;
    ``delivered``: those the target was called for at least once;
    ``gaps``: due and never called; ``duplicates``: occurrences the target saw
    under more than one idempotency key, or with another attempt after one it
    answered with success; ``unexpected``: calls for instants nobody expected.
    """
    end = sim.engine.now - settle_s
    due: set[tuple[str, str]] = set()
    for schedule_id, instants in expected.items():
        for at in instants:
            if at.timestamp() <= end:
                due.add((schedule_id, at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
    first: dict[tuple[str, str], float] = {}
    keys: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    succeeded: Counter[tuple[str, str]] = Counter()
    after_success = 0
    for d in sim.receiver.deliveries:
        occurrence = (d.schedule_id, d.scheduled_at)
        first.setdefault(occurrence, d.started_s)
        keys[occurrence].add(d.key)
        if succeeded[occurrence]:
            after_success += 1
        if d.status is not None and 200 <= d.status < 300:
            succeeded[occurrence] += 1
    start = sim.engine.start.timestamp()
    lateness = []
    for occurrence in due & first.keys():
        scheduled = datetime.strptime(occurrence[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        lateness.append(first[occurrence] + start - scheduled.timestamp())
    expected_all = {
        (s, at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        for s, v in expected.items()
        for at in v
    }
    gaps = sorted(due - first.keys())
    return {
        "due": len(due),
        "delivered": len(due & first.keys()),
        "succeeded": sum(1 for o in due if succeeded[o]),
        "duplicates": sum(1 for o in keys if len(keys[o]) > 1) + after_success,
        "gaps": len(gaps),
        "gap_examples": [[sim.labels.get(s, s), at] for s, at in gaps[:8]],
        "unexpected": len(first.keys() - expected_all),
        "lateness_s": {
            "p50": percentile(lateness, 50),
            "p99": percentile(lateness, 99),
            "max": round(max(lateness), 3) if lateness else None,
        },
    }


def alarms(sim: Simulation) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    start = sim.engine.start.timestamp()
    for stack in sim.stacks.values():
        for logical_id, resource in stack.of_type("AWS::CloudWatch::Alarm").items():
            props = stack.resolve(resource["Properties"])
            name = stack.names[logical_id]
            try:
                history = evaluate(props, sim.metrics, start, sim.engine.now, name)
            except (KeyError, ValueError) as error:
                history = AlarmHistory(name, props.get("MetricName", "?"), unknown=str(error))
            found[name] = history.as_dict(start)
    return found


def unused_grants(sim: Simulation) -> list[dict[str, str]]:
    used = sim.account.ledger.used_grants
    invoked = {f.key for f in sim.functions.values() if f.invocations}
    unused = []
    for function in sim.functions.values():
        for action, resource in function.policy.grants():
            if (function.key, action, resource) in used:
                continue
            if action.startswith("logs:") and function.key in invoked:
                continue  # the Lambda runtime writes the function's logs under its role
            unused.append({"function": function.key, "action": action, "resource": resource})
    return unused


def items_by_table(sim: Simulation) -> dict[str, dict[str, int]]:
    first, last = sim.items_by_hour[0], sim.items_by_hour[-1]
    return {k: {"start": first[k], "end": last[k]} for k in first if k != "at_s"}


def invocation_cost(sim: Simulation) -> tuple[dict[int, float], dict[int, str]]:
    units = sim.account.units()
    ledger = sim.account.ledger
    costs: dict[int, float] = {}
    kinds: dict[int, str] = {}
    for function in sim.functions.values():
        for record in function.invocations:
            requests = ledger.requests_by_invocation[record.id]
            seconds = record.duration_s + requests * prices.AWS_CALL_MS / 1000
            dollars = (
                prices.LAMBDA_PER_MILLION_REQUESTS / 1e6
                + seconds * function.memory_mb / 1024 * prices.LAMBDA_ARM64_PER_GB_SECOND
                + units.get((record.id, "wru"), 0.0) * prices.DYNAMODB_PER_MILLION_WRU / 1e6
                + units.get((record.id, "rru"), 0.0) * prices.DYNAMODB_PER_MILLION_RRU / 1e6
                + ledger.sqs_by_invocation[record.id] * prices.SQS_PER_MILLION_REQUESTS / 1e6
                + ledger.secrets_by_invocation[record.id]
                * prices.SECRETS_MANAGER_PER_10K_CALLS
                / 1e4
                + (record.log_bytes + prices.LAMBDA_PLATFORM_LOG_BYTES)
                / 1024**3
                * prices.LOGS_INGESTION_PER_GB
            )
            costs[record.id] = dollars
            result = record.result if isinstance(record.result, dict) else {}
            busy = any(result.get(k) for k in ("materialized", "admitted", "sent"))
            idle_source = record.source == "scheduler" and not busy and not result.get("overdue")
            kinds[record.id] = "idle" if idle_source else "runs"
    return costs, kinds


def cost(sim: Simulation, runs: int) -> dict[str, Any]:
    costs, kinds = invocation_cost(sim)
    seconds = max(1.0, sim.engine.elapsed_s())
    stacks = max(1, len(sim.stacks))
    idle = sum(c for i, c in costs.items() if kinds[i] == "idle")
    busy = sum(c for i, c in costs.items() if kinds[i] == "runs")
    scheduler = sim.scheduler_invocations * prices.SCHEDULER_PER_MILLION_INVOCATIONS / 1e6
    polls = sim.esm_requests["sqs:ReceiveMessage"]
    # The mapping long-polls even when the queue is empty: bench/cost.py's idle polling model.
    esm_idle = (
        seconds
        / prices.ESM_LONG_POLL_S
        * prices.ESM_IDLE_POLLERS
        * prices.SQS_PER_MILLION_REQUESTS
        / 1e6
    )
    esm_busy = (
        (polls + sim.esm_requests["sqs:DeleteMessageBatch"]) * prices.SQS_PER_MILLION_REQUESTS / 1e6
    )
    alarms_count = sum(len(s.of_type("AWS::CloudWatch::Alarm")) for s in sim.stacks.values())
    metric_names = {name for (ns, name, _) in sim.metrics.points if not ns.startswith("AWS/")}
    fixed_month = (
        alarms_count * prices.ALARM_PER_MONTH
        + stacks * prices.DASHBOARD_PER_MONTH
        + len(metric_names) * prices.CUSTOM_METRIC_PER_MONTH
    )
    per_month_idle = (
        idle + scheduler + esm_idle
    ) / seconds * prices.MONTH_S / stacks + fixed_month / stacks
    units = sim.account.units()
    return {
        "dynamodb_units": {
            kind: round(sum(v for (_, k), v in units.items() if k == kind), 1)
            for kind in ("wru", "rru")
        },
        "usd_per_million_runs": round((busy + esm_busy) / runs * 1e6, 2) if runs else None,
        "usd_per_month_idle": round(per_month_idle, 2),
        "cost_model": "Lambda GB-s at simulated duration + 8 ms per AWS request, "
        "configured memory; "
        "DynamoDB units from item sizes; bench/cost.py prices (us-east-1, on demand), read "
        + prices.PRICES_READ_ON,
    }


def requests_per_window(sim: Simulation) -> list[int]:
    hours = sim.account.ledger.requests_by_hour
    return [hours.get(h, 0) for h in range(int(sim.engine.elapsed_s() // 3600) + 1)]


def per_window(sim: Simulation) -> dict[str, Any]:
    """Requests and DynamoDB read units of the invocations started in each sample window
    (complete windows only), to see whether an idle deployment's work grows."""
    window = sim.sample_every_s
    count = int(sim.engine.elapsed_s() // window)
    requests = [0] * count
    read_units = [0.0] * count
    scanned = [0] * count
    units = sim.account.units()
    ledger = sim.account.ledger
    for function in sim.functions.values():
        for record in function.invocations:
            index = int(record.started_s // window)
            if index < count:
                requests[index] += ledger.requests_by_invocation[record.id]
                read_units[index] += units.get((record.id, "rru"), 0.0)
                scanned[index] += ledger.scanned_by_invocation[record.id]
    return {
        "window_s": window,
        "requests_by_window": requests,
        "read_units_by_window": [round(u, 1) for u in read_units],
        "items_read_by_window": scanned,
    }


def summary(
    sim: Simulation,
    scenario: str,
    expected: dict[str, list[datetime]],
    settle_s: float,
    extra: dict[str, Any],
) -> dict[str, Any]:
    ledger = sim.account.ledger
    delivered = deliveries(sim, expected, settle_s)
    invocations: dict[str, Counter[str]] = {}
    for function in sim.functions.values():
        counter: Counter[str] = Counter(r.outcome for r in function.invocations)
        if function.throttles:
            counter["throttled"] = len(function.throttles)
        invocations[function.key] = counter
    unknown_conditions = sorted(
        {c for f in sim.functions.values() for c in f.policy.unknown_conditions}
    )
    return {
        "scenario": scenario,
        "simulated_s": round(sim.engine.elapsed_s(), 3),
        "started_at": sim.engine.start.isoformat(),
        "denied_calls": [
            {
                "at_s": d.at_s,
                "function": d.function,
                "action": d.action,
                "resource": d.resource,
                "operation": d.operation,
                "reason": d.reason,
            }
            for d in ledger.denied
        ],
        "unused_grants": unused_grants(sim),
        **delivered,
        "items_by_table": items_by_table(sim),
        "items_samples": sim.items_by_hour,
        "requests_by_operation": dict(ledger.requests.most_common()),
        "event_source_mapping_requests": dict(sim.esm_requests),
        "requests_by_hour": requests_per_window(sim),
        **per_window(sim),
        "invocations": {k: dict(v) for k, v in invocations.items()},
        "errors": sorted(
            {
                f"{r.function}: {r.error}"
                for f in sim.functions.values()
                for r in f.invocations
                if r.error
            }
        )[:20],
        "timeouts": [
            {
                "function": r.function,
                "started_s": round(r.started_s, 3),
                "duration_s": round(r.duration_s, 3),
                "error": r.error,
            }
            for f in sim.functions.values()
            for r in f.invocations
            if r.outcome == "timeout"
        ],
        "injected_faults": ledger.injected[:50],
        "iam_not_modelled": unknown_conditions
        + [f"managed policy {arn}" for f in sim.functions.values() for arn in f.policy.unknown],
        **cost(sim, delivered["delivered"]),
        "alarms": alarms(sim),
        "notes": sim.notes,
        **extra,
    }
