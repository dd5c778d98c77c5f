"""What a run showed, as one JSON-able dict: deliveries, refusals, growth, alarms, cost.

Cost is priced with ``bench/prices.py``'s price table (imported, not copied):

- Lambda duration is each invocation's *simulated* duration (sleeps, target
  calls, its cold start and its AWS requests' CPU and round trips take
  simulated time) times the function's configured memory, on arm64 prices;
  the API's requests take none (``sim.aws.charges_time``), so
  ``AWS_CALL_MS`` is added per request of its, as bench/prices.py assumes;
- DynamoDB units come from item sizes (bench/meter.py's ``Meter``);
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

from bench import prices
from sim.aws import PLANNING, charges_time
from sim.cloudwatch import AlarmHistory, evaluate
from sim.world import Simulation

# How many of the latest first attempts a summary names (``late_examples``).
LATE_EXAMPLES = 20


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
    late: list[tuple[float, str, str]] = []
    for occurrence in due & first.keys():
        scheduled = datetime.strptime(occurrence[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        lateness.append(first[occurrence] + start - scheduled.timestamp())
        late.append((lateness[-1], sim.labels.get(occurrence[0], occurrence[0]), occurrence[1]))
    expected_all = {
        (s, at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        for s, v in expected.items()
        for at in v
    }
    gaps = sorted(due - first.keys())
    stopped = []
    for schedule_id, instants in expected.items():
        owed = sorted(
            at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            for at in instants
            if at.timestamp() <= end
        )
        missed = [at for at in owed if (schedule_id, at) not in first]
        if (
            len(owed) >= 2
            and missed
            and owed[-1] in missed
            and all((schedule_id, at) not in first for at in owed if at >= missed[0])
        ):
            stopped.append(sim.labels.get(schedule_id, schedule_id))
    return {
        "due": len(due),
        "delivered": len(due & first.keys()),
        "succeeded": sum(1 for o in due if succeeded[o]),
        "duplicates": sum(1 for o in keys if len(keys[o]) > 1) + after_success,
        "gaps": len(gaps),
        "gap_examples": [[sim.labels.get(s, s), at] for s, at in gaps[:8]],
        # Schedules whose deliveries stopped for good: from their first missed occurrence
        # on, every due one missed (a schedule no pass plans any more), by name.
        "schedules_no_longer_planned": len(stopped),
        "stopped_examples": sorted(stopped)[:8],
        "unexpected": len(first.keys() - expected_all),
        # The latest first attempts, latest first: which schedules and instants make p99.
        "late_examples": [
            {"schedule": label, "scheduled_at": at, "late_s": round(by, 3)}
            for by, label, at in sorted(late, reverse=True)[:LATE_EXAMPLES]
        ],
        "lateness_s": {
            "min": round(min(lateness), 3) if lateness else None,
            "p50": percentile(lateness, 50),
            "p90": percentile(lateness, 90),
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


# What one invocation costs, by item (dollars). The per-run and idle figures are sums of these.
RUN_ITEMS = (
    "lambda_requests",
    "lambda_duration",
    "dynamodb_writes",
    "dynamodb_reads",
    "sqs",
    "secrets_manager",
    "ssm_kms",
    "logs",
)


def _is_idle(record: Any) -> bool:
    """A scheduled invocation (tick or watchdog) that found nothing to do."""
    result = record.result if isinstance(record.result, dict) else {}
    busy = any(result.get(k) for k in ("materialized", "admitted", "sent", "planned"))
    return record.source in ("scheduler", "manual") and not busy and not result.get("overdue")


def invocation_items(sim: Simulation) -> dict[int, dict[str, float]]:
    """Dollars by item for every invocation of the run, less what it spent planning
    (``planning_items``)."""
    units = sim.account.units_by_phase()
    ledger = sim.account.ledger
    items: dict[int, dict[str, float]] = {}
    for function in sim.functions.values():
        for record in function.invocations:
            i = record.id
            requests = ledger.requests_by_invocation[i] - ledger.planning_requests_by_invocation[i]
            if charges_time(record.source):
                seconds = record.duration_s - record.planning_s
            else:
                seconds = record.duration_s + requests * prices.AWS_CALL_MS / 1000
            items[i] = {
                "lambda_requests": prices.LAMBDA_PER_MILLION_REQUESTS / 1e6,
                "lambda_duration": seconds
                * function.memory_mb
                / 1024
                * prices.LAMBDA_ARM64_PER_GB_SECOND,
                **_requests_items(
                    units.get((i, "wru"), 0.0),
                    units.get((i, "rru"), 0.0),
                    ledger.sqs_by_invocation[i] - ledger.planning_sqs_by_invocation[i],
                    ledger.secrets_by_invocation[i] - ledger.planning_secrets_by_invocation[i],
                    ledger.kms_by_invocation[i] - ledger.planning_kms_by_invocation[i],
                ),
                "logs": (record.log_bytes + prices.LAMBDA_PLATFORM_LOG_BYTES)
                / 1024**3
                * prices.LOGS_INGESTION_PER_GB,
            }
    return items


def planning_items(sim: Simulation) -> dict[int, dict[str, float]]:
    """Dollars by item of what each invocation did while it planned occurrences (the
    API's at the call, the tick's passes): a run's work, counted whole, never against
    an idle baseline. Its Lambda time is the simulated time it spent planning, or for the
    API (whose requests take none) ``AWS_CALL_MS`` per request it made planning; the rest
    of the invocation's time is in ``invocation_items``."""
    units = sim.account.units_by_phase()
    ledger = sim.account.ledger
    items: dict[int, dict[str, float]] = {}
    for function in sim.functions.values():
        for record in function.invocations:
            i = record.id
            requests = ledger.planning_requests_by_invocation[i]
            if not requests:
                continue
            seconds = (
                record.planning_s
                if charges_time(record.source)
                else requests * prices.AWS_CALL_MS / 1000
            )
            items[i] = {
                "lambda_duration": seconds
                * function.memory_mb
                / 1024
                * prices.LAMBDA_ARM64_PER_GB_SECOND,
                **_requests_items(
                    units.get(((i, PLANNING), "wru"), 0.0),
                    units.get(((i, PLANNING), "rru"), 0.0),
                    ledger.planning_sqs_by_invocation[i],
                    ledger.planning_secrets_by_invocation[i],
                    ledger.planning_kms_by_invocation[i],
                ),
            }
    return items


def _requests_items(wru: float, rru: float, sqs: int, secrets: int, kms: int) -> dict[str, float]:
    return {
        "dynamodb_writes": wru * prices.DYNAMODB_PER_MILLION_WRU / 1e6,
        "dynamodb_reads": rru * prices.DYNAMODB_PER_MILLION_RRU / 1e6,
        "sqs": sqs * prices.SQS_PER_MILLION_REQUESTS / 1e6,
        "secrets_manager": secrets * prices.SECRETS_MANAGER_PER_10K_CALLS / 1e4,
        "ssm_kms": kms * prices.KMS_PER_10K_REQUESTS / 1e4,
    }


def _mean(vectors: list[dict[str, float]]) -> dict[str, float]:
    keys = {k for v in vectors for k in v}
    return {k: sum(v.get(k, 0.0) for v in vectors) / len(vectors) for k in keys}


def _baselines(
    sim: Simulation, vectors: dict[int, dict[str, float]]
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """What a scheduled function's invocation costs when nothing is due, per function:
    the mean of its idle invocations, or, when it never ran idle, its cheapest one
    (an upper bound). Returns the vectors and where each came from."""
    scheduled = {rule.function.key for rule in sim.rules}
    found: dict[str, dict[str, float]] = {}
    source: dict[str, str] = {}
    for function in sim.functions.values():
        if function.key not in scheduled or not function.invocations:
            continue
        idle = [vectors.get(r.id, {}) for r in function.invocations if _is_idle(r)]
        if idle:
            found[function.key] = _mean(idle)
            source[function.key] = f"mean of {len(idle)} idle invocations"
        else:
            cheapest = min(
                (vectors.get(r.id, {}) for r in function.invocations),
                key=lambda v: sum(v.values()),
            )
            found[function.key] = cheapest
            source[function.key] = (
                f"cheapest of {len(function.invocations)} busy invocations (an upper bound)"
            )
    return found, source


def _marginal(
    sim: Simulation,
    vectors: dict[int, dict[str, float]],
    baselines: dict[str, dict[str, float]],
    planning: dict[int, dict[str, float]],
) -> dict[str, float]:
    """The sum over the invocations that did the runs' work (not the API's), less what
    each scheduled invocation would have cost with nothing due, plus what every
    invocation (the API's too) did while planning occurrences."""
    total: defaultdict[str, float] = defaultdict(float)
    for function in sim.functions.values():
        base = baselines.get(function.key, {})
        for record in function.invocations:
            for key, value in planning.get(record.id, {}).items():
                total[key] += value
            if record.source == "api":
                continue  # creating schedules is set-up, not a run
            for key, value in vectors.get(record.id, {}).items():
                total[key] += value - base.get(key, 0.0)
    return {k: max(0.0, v) for k, v in total.items()}


def runs_seen(sim: Simulation) -> int:
    """Occurrences the targets were called for (each at least once)."""
    return len({(d.schedule_id, d.scheduled_at) for d in sim.receiver.deliveries})


def custom_metrics(sim: Simulation, stack_name: str) -> dict[str, Any]:
    """The custom metrics one stack published (name and dimensions: CloudWatch bills each),
    and those neither an alarm nor the dashboard of the stack reads."""
    stack = sim.stacks[stack_name]
    published = sorted(
        {
            (name, tuple(sorted(dims)))
            for (ns, name, dims) in sim.metrics.points
            if not ns.startswith("AWS/") and ("service", stack_name) in dims
        }
    )
    read: set[str] = set()
    for resource in stack.of_type("AWS::CloudWatch::Alarm").values():
        props = stack.resolve(resource["Properties"])
        read.add(str(props.get("MetricName", "")))
        for query in props.get("Metrics", []):
            read.add(str(query.get("MetricStat", {}).get("Metric", {}).get("MetricName", "")))
    boards = " ".join(
        str(stack.resolve(r["Properties"]).get("DashboardBody", ""))
        for r in stack.of_type("AWS::CloudWatch::Dashboard").values()
    )
    unread = sorted({n for n, _ in published if n not in read and f'"{n}"' not in boards})
    return {"count": len(published), "names": sorted({n for n, _ in published}), "unread": unread}


def cost(sim: Simulation) -> dict[str, Any]:
    """Per million runs, itemized by service, and per month idle, itemized, for one stack
    (the first deployed); ``dynamodb_write_units_per_run`` by table and by index."""
    vectors = invocation_items(sim)
    baselines, baseline_source = _baselines(sim, vectors)
    runs = runs_seen(sim)
    per_run: dict[str, float] | None = None
    if runs:
        marginal = _marginal(sim, vectors, baselines, planning_items(sim))
        esm = (
            (sim.esm_requests["sqs:ReceiveMessage"] + sim.esm_requests["sqs:DeleteMessageBatch"])
            * prices.SQS_PER_MILLION_REQUESTS
            / 1e6
        )
        marginal["sqs"] = marginal.get("sqs", 0.0) + esm
        per_run = {k: round(marginal.get(k, 0.0) / runs * 1e6, 3) for k in RUN_ITEMS}

    # DynamoDB write units per run, by table and index, with the same baseline rule.
    # The API's invocations are set-up, but what one writes while it plans an occurrence at
    # the call (the record, the HEAD's advance) is that run's, and so is what the tick
    # writes planning and dispatching: counted whole, never against an idle baseline (a
    # tick that never ran idle has a busy one as its baseline, whose planning would
    # otherwise be taken off every tick).
    wru_vectors: defaultdict[int, dict[str, float]] = defaultdict(dict)
    planned: defaultdict[int, dict[str, float]] = defaultdict(dict)
    for (invocation, where), value in sim.account.write_units().items():
        if isinstance(invocation, int):
            wru_vectors[invocation][where] = value
        elif isinstance(invocation, tuple):
            planned[int(invocation[0])][where] = value
    wru_baselines, _ = _baselines(sim, dict(wru_vectors))
    wru_per_run: dict[str, float] | None = None
    if runs:
        wru = _marginal(sim, dict(wru_vectors), wru_baselines, dict(planned))
        wru_per_run = {k: round(v / runs, 2) for k, v in sorted(wru.items()) if v}
        wru_per_run["total"] = round(sum(wru.values()) / runs, 2)

    primary = next(iter(sim.stacks))
    stack = sim.stacks[primary]
    idle: defaultdict[str, float] = defaultdict(float)
    for rule in sim.rules:
        if rule.stack.name != primary:
            continue
        fires = prices.MONTH_S / rule.every_s
        base = baselines.get(rule.function.key, {})
        idle["compute"] += fires * (
            base.get("lambda_requests", 0.0)
            + base.get("lambda_duration", 0.0)
            + prices.SCHEDULER_PER_MILLION_INVOCATIONS / 1e6
        )
        idle["dynamodb"] += fires * (
            base.get("dynamodb_writes", 0.0) + base.get("dynamodb_reads", 0.0)
        )
        idle["sqs"] += fires * base.get("sqs", 0.0)
        idle["secrets_manager"] += fires * base.get("secrets_manager", 0.0)
        idle["ssm_kms"] += fires * base.get("ssm_kms", 0.0)
        idle["logs"] += fires * base.get("logs", 0.0)
    mappings = sum(1 for m in sim.mappings if m.function.stack.name == primary)
    # The mapping long-polls even when the queue is empty: bench/cost_model.py's idle polling model.
    idle["sqs"] += (
        mappings
        * prices.MONTH_S
        / prices.ESM_LONG_POLL_S
        * prices.ESM_IDLE_POLLERS
        * prices.SQS_PER_MILLION_REQUESTS
        / 1e6
    )
    idle["compute_dynamodb_sqs"] = idle["compute"] + idle["dynamodb"] + idle["sqs"]
    # The secrets' key or store: a fee a month for each Secrets Manager secret and each
    # customer managed KMS key the template deploys (the webhook signing key: one secret).
    idle["secrets_key"] = (
        len(stack.of_type("AWS::SecretsManager::Secret")) * prices.SECRETS_MANAGER_SECRET_PER_MONTH
        + len(stack.of_type("AWS::KMS::Key")) * prices.KMS_KEY_PER_MONTH
    )
    idle["compute_dynamodb_sqs_key"] = idle["compute_dynamodb_sqs"] + idle["secrets_key"]
    metrics = custom_metrics(sim, primary)
    idle["cloudwatch_alarms"] = (
        len(stack.of_type("AWS::CloudWatch::Alarm")) * prices.ALARM_PER_MONTH
    )
    idle["cloudwatch_dashboard"] = (
        len(stack.of_type("AWS::CloudWatch::Dashboard")) * prices.DASHBOARD_PER_MONTH
    )
    idle["cloudwatch_custom_metrics"] = metrics["count"] * prices.CUSTOM_METRIC_PER_MONTH
    subtotals = ("compute_dynamodb_sqs", "compute_dynamodb_sqs_key")
    total = sum(v for k, v in idle.items() if k not in subtotals)
    units = sim.account.units()
    return {
        "runs": runs,
        "dynamodb_units": {
            kind: round(sum(v for (_, k), v in units.items() if k == kind), 1)
            for kind in ("wru", "rru")
        },
        "dynamodb_write_units_per_run": wru_per_run,
        "usd_per_million_runs": None if per_run is None else round(sum(per_run.values()), 2),
        "usd_per_million_runs_by_service": per_run,
        "usd_per_month_idle": round(total, 2),
        "usd_per_month_idle_items": {k: round(v, 3) for k, v in idle.items()},
        "custom_metrics": metrics,
        "idle_baseline": {
            k.split("/", 1)[1]: v for k, v in baseline_source.items() if k.startswith(primary + "/")
        },
        "cost_model": "per stack (the first deployed); Lambda GB-s at simulated duration "
        "(cold starts and each AWS request's CPU and round trip included; the API's "
        "requests at 8 ms each), configured memory; DynamoDB units from item sizes "
        "(bench/meter.py's Meter); per run: every invocation but the API's, less what each "
        "scheduled invocation costs idle, over the occurrences the targets saw; idle: each "
        "schedule's invocations a month at their idle cost; bench/prices.py prices "
        "(us-east-1, on demand), read " + prices.PRICES_READ_ON,
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


def _index_label(sim: Simulation, where: str) -> str:
    """``<table>/<index>`` with the table's logical id (its CDK hash dropped)."""
    import re

    table, _, index = where.partition("/")
    definition = sim.account.tables.get(table)
    label = definition.logical_id if definition is not None else table
    return f"{re.sub(r'[0-9A-F]{8}$', '', label)}/{index}"


def adversity_effects(sim: Simulation) -> dict[str, Any]:
    """How often each adversity that is on changed an answer or a delivery."""
    found: dict[str, Any] = dict(sim.limits.counts)
    if sim.index_lag is not None:
        found["stale_index_answers"] = sum(sim.index_lag.stale_answers.values())
        found["stale_index_answers_by_index"] = {
            _index_label(sim, where): n for where, n in sorted(sim.index_lag.stale_answers.items())
        }
        found["index_lag_max_s"] = round(sim.index_lag.max_lag_s, 3)
    if sim.at_least_once is not None:
        found["invocations_delivered_twice"] = sim.at_least_once.duplicated
        found["invocations_delivered_late"] = sim.at_least_once.late
    return found


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
            for reason, n in sorted(function.throttled_by.items()):
                counter[f"throttled_{reason}"] = n
        cold = [r for r in function.invocations if r.init_s]
        if cold:
            counter["cold_starts"] = len(cold)
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
                "init_s": round(r.init_s, 3),
                "error": r.error,
            }
            for f in sim.functions.values()
            for r in f.invocations
            if r.outcome == "timeout"
        ],
        "injected_faults": ledger.injected[:50],
        # Messages published to SNS by the functions (the watchdog's changed verdicts).
        "sns_messages": ledger.published[:200],
        "iam_not_modelled": unknown_conditions
        + [f"managed policy {arn}" for f in sim.functions.values() for arn in f.policy.unknown],
        **cost(sim),
        "alarms": alarms(sim),
        "notes": sim.notes,
        "adversities": sim.adversities.on(),
        "adversity_effects": adversity_effects(sim),
        **extra,
    }
