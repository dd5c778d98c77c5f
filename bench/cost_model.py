"""The cost model: what the measured requests, units and worker figures cost, per
million runs and per month idle, by service (``model``), with the worker's duration
at each memory size and the webhook signing secrets' cost per cadence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.definitions import Metric
from adapters.secrets import SECRET_CACHE_TTL_S
from bench.prices import (
    ALARM_PER_MONTH,
    ALARMS_IN_STACK,
    AWS_CALL_MS,
    CPU_MARGIN,
    CUSTOM_METRIC_PER_MONTH,
    DASHBOARD_PER_MONTH,
    DYNAMODB_PER_MILLION_RRU,
    DYNAMODB_PER_MILLION_WRU,
    ESM_IDLE_POLLERS,
    ESM_LONG_POLL_S,
    FLOOR_WRU,
    KMS_PER_10K_REQUESTS,
    LAMBDA_ARM64_PER_GB_SECOND,
    LAMBDA_MB_PER_VCPU,
    LAMBDA_PER_MILLION_REQUESTS,
    LAMBDA_PLATFORM_LOG_BYTES,
    LOGS_INGESTION_PER_GB,
    MAX_BATCH,
    MEMORY_HEADROOM,
    MEMORY_SIZES_MB,
    MIN_LAMBDA_MB,
    MONTH_S,
    SCHEDULER_PER_MILLION_INVOCATIONS,
    SECRET_CADENCES,
    SECRETS_MANAGER_PER_10K_CALLS,
    SECRETS_MANAGER_SECRET_PER_MONTH,
    SIGNING_KEY_SECRETS,
    SQS_PER_MILLION_REQUESTS,
    SSM_ADVANCED_PARAMETER_PER_MONTH,
    SSM_HIGHER_THROUGHPUT_PER_10K,
    TARGET_MS,
    TICK_PASS_MS,
)


def model(m: dict[str, Any], infra: dict[str, Any]) -> dict[str, Any]:
    runs = m["runs"]
    units, requests = m["units"], m["requests"]
    per_pass = {k: units[("idle", k)] / m["idle_passes"] for k in ("wru", "rru")}
    run_passes = m["slots"] + 1
    # The run phase's tick passes, less what an idle pass costs anyway.
    tick_wru = units[("tick", "wru")] - run_passes * per_pass["wru"]
    tick_rru = units[("tick", "rru")] - run_passes * per_pass["rru"]
    per_run = {
        "dynamodb_wru": (tick_wru + units[("worker", "wru")]) / runs,
        "dynamodb_rru": (tick_rru + units[("worker", "rru")]) / runs,
        "sqs_requests": (units[("tick", "sqs")] + units[("worker", "sqs")] + units[("esm", "sqs")])
        / runs,
    }
    worker_calls = sum(n for (phase, _, _), n in requests.items() if phase == "worker") / runs
    invocations_per_run = m["invocations"] / runs
    batch = m["runs_per_batch"]
    probe = m["probe"]
    cpu_per_record_s = probe["cpu_per_record_s"]
    # One invocation runs its batch's records at once: it lasts as long as its
    # longest record (its AWS calls one after another, then the target), plus
    # the batch's CPU time at the function's share of a vCPU (as if none of it
    # overlapped a wait: an upper bound).
    record_calls = sum(probe["calls_per_record"].values())
    io_path_s = (record_calls * AWS_CALL_MS + TARGET_MS) / 1000
    worker_mb = infra["worker_mb"]
    sizing = {
        mb: worker_duration(mb, batch, io_path_s, cpu_per_record_s, probe)
        for mb in sorted({*MEMORY_SIZES_MB, worker_mb})
    }
    chosen = sizing[worker_mb]
    gb_s_per_run = chosen["gb_s_per_run"]
    log_bytes_per_run = probe["log_bytes_per_run"] + LAMBDA_PLATFORM_LOG_BYTES / batch
    million = 1_000_000
    dollars = {
        "DynamoDB writes": per_run["dynamodb_wru"] * DYNAMODB_PER_MILLION_WRU,
        "DynamoDB reads": per_run["dynamodb_rru"] * DYNAMODB_PER_MILLION_RRU,
        "SQS": per_run["sqs_requests"] * SQS_PER_MILLION_REQUESTS,
        "Lambda requests (worker)": invocations_per_run * LAMBDA_PER_MILLION_REQUESTS,
        "Lambda duration (worker)": gb_s_per_run * million * LAMBDA_ARM64_PER_GB_SECOND,
        "CloudWatch Logs": log_bytes_per_run * million / 1024**3 * LOGS_INGESTION_PER_GB,
    }
    # Runs that come due alone: with no batching window, each is a batch of one
    # (its own send, receive, delete and invocation).
    alone = worker_duration(worker_mb, 1, io_path_s, cpu_per_record_s, probe)
    dollars_alone = {
        **dollars,
        "SQS": 3 * SQS_PER_MILLION_REQUESTS,
        "Lambda requests (worker)": LAMBDA_PER_MILLION_REQUESTS,
        "Lambda duration (worker)": alone["usd"],
        "CloudWatch Logs": (probe["log_bytes_per_run"] + LAMBDA_PLATFORM_LOG_BYTES)
        * million
        / 1024**3
        * LOGS_INGESTION_PER_GB,
    }
    not_starved = [
        mb
        for mb in range(MIN_LAMBDA_MB, LAMBDA_MB_PER_VCPU + 1, 64)
        if (row := worker_duration(mb, MAX_BATCH, io_path_s, cpu_per_record_s, probe))[
            "within_margin"
        ]
        and row["fits"]
    ]
    secrets_by_cadence = {
        name: secret_dollars(every_s) for name, every_s in SECRET_CADENCES.items()
    }
    # The floor: the fewest writes that record every state a run must record
    # (admitted, started, finished), and the least of everything else a queued,
    # batched delivery needs.
    floor_batch = MAX_BATCH
    floor = {
        "DynamoDB writes": FLOOR_WRU * DYNAMODB_PER_MILLION_WRU,
        "DynamoDB reads": 0.0,
        "SQS": 3 / floor_batch * SQS_PER_MILLION_REQUESTS,
        "Lambda requests (worker)": 1 / floor_batch * LAMBDA_PER_MILLION_REQUESTS,
        "Lambda duration (worker)": MIN_LAMBDA_MB
        / 1024
        * (TARGET_MS / 1000)
        / floor_batch
        * million
        * LAMBDA_ARM64_PER_GB_SECOND,
        "CloudWatch Logs": LAMBDA_PLATFORM_LOG_BYTES
        / floor_batch
        * million
        / 1024**3
        * LOGS_INGESTION_PER_GB,
    }

    # Fixed per month.
    tick_invocations = MONTH_S / 60
    passes_per_month = tick_invocations * m["idle_passes"]
    watchdog_invocations = MONTH_S / 300
    idle_requests = sum(n for (phase, _, _), n in m["requests"].items() if phase == "idle")
    tick_pass_s = (idle_requests / m["idle_passes"] * AWS_CALL_MS + TICK_PASS_MS) / 1000
    tick_gb_s = tick_invocations * tick_pass_s * infra["tick_mb"] / 1024
    watchdog_requests = sum(n for (phase, _, _), n in m["requests"].items() if phase == "watchdog")
    watchdog_s = (watchdog_requests * AWS_CALL_MS + TICK_PASS_MS) / 1000
    watchdog_gb_s = watchdog_invocations * watchdog_s * infra["watchdog_mb"] / 1024
    esm_polls = MONTH_S / ESM_LONG_POLL_S * ESM_IDLE_POLLERS
    log_bytes = tick_invocations * (
        m["idle_log_bytes"] + LAMBDA_PLATFORM_LOG_BYTES
    ) + watchdog_invocations * (m["watchdog_log_bytes"] + LAMBDA_PLATFORM_LOG_BYTES)
    declared = sum(1 for name in vars(Metric) if name.isupper())
    idle_metrics = len(m["idle_metrics"])
    compute = {
        f"tick Lambda (one pass a minute, {tick_pass_s:.2f} s)": tick_gb_s
        * LAMBDA_ARM64_PER_GB_SECOND
        + tick_invocations * LAMBDA_PER_MILLION_REQUESTS / million,
        "tick DynamoDB (idle passes: index reads, heartbeat)": (
            passes_per_month * per_pass["wru"] * DYNAMODB_PER_MILLION_WRU
            + passes_per_month * per_pass["rru"] * DYNAMODB_PER_MILLION_RRU
        )
        / million,
        f"watchdog Lambda (every 5 minutes, {watchdog_s:.2f} s)": watchdog_gb_s
        * LAMBDA_ARM64_PER_GB_SECOND
        + watchdog_invocations * LAMBDA_PER_MILLION_REQUESTS / million,
        "watchdog DynamoDB (idle: cursor, heartbeat, one empty page)": watchdog_invocations
        * (
            units[("watchdog", "wru")] * DYNAMODB_PER_MILLION_WRU
            + units[("watchdog", "rru")] * DYNAMODB_PER_MILLION_RRU
        )
        / million,
        "SQS idle polling by the event source mapping": esm_polls
        * SQS_PER_MILLION_REQUESTS
        / million,
    }
    around = {
        "EventBridge Scheduler (tick + watchdog)": (tick_invocations + watchdog_invocations)
        * SCHEDULER_PER_MILLION_INVOCATIONS
        / million,
        "CloudWatch Logs (tick + watchdog lines, EMF, START/END/REPORT)": log_bytes
        / 1024**3
        * LOGS_INGESTION_PER_GB,
    }
    cloudwatch = {
        f"CloudWatch alarms ({ALARMS_IN_STACK})": ALARMS_IN_STACK * ALARM_PER_MONTH,
        "CloudWatch dashboard (1)": DASHBOARD_PER_MONTH,
        f"CloudWatch custom metrics sent idle ({idle_metrics} of {declared})": idle_metrics
        * CUSTOM_METRIC_PER_MONTH,
    }
    key = {
        f"webhook signing key ({SIGNING_KEY_SECRETS} Secrets Manager secret)": SIGNING_KEY_SECRETS
        * SECRETS_MANAGER_SECRET_PER_MONTH,
    }
    fixed = {**compute, **key, **around, **cloudwatch}
    return {
        "per_run": per_run,
        "per_pass": per_pass,
        "worker_calls": worker_calls,
        "invocations_per_run": invocations_per_run,
        "io_path_s": io_path_s,
        "record_calls": record_calls,
        "sizing": sizing,
        "gb_s_per_run": gb_s_per_run,
        "secrets_by_cadence": secrets_by_cadence,
        "dollars_alone": dollars_alone,
        "least_not_starved_mb": not_starved[0] if not_starved else None,
        "floor": floor,
        "log_bytes_per_run": log_bytes_per_run,
        "dollars": dollars,
        "fixed": fixed,
        "idle_core": sum(compute.values()),
        "idle_core_with_key": sum(compute.values()) + sum(key.values()),
        "fixed_groups": {
            "compute, DynamoDB, SQS": compute,
            "the secrets' key": key,
            "Scheduler and logs": around,
            "CloudWatch": cloudwatch,
        },
        "busy_metrics": declared * CUSTOM_METRIC_PER_MONTH,
        "passes_per_month": passes_per_month,
    }


def worker_duration(
    mb: int, batch: float, io_path_s: float, cpu_per_record_s: float, probe: Mapping[str, Any]
) -> dict[str, Any]:
    """One invocation of ``batch`` records at ``mb``: the longest record's waits
    plus the batch's CPU time at the function's share of a vCPU."""
    share = min(1.0, mb / LAMBDA_MB_PER_VCPU)
    cpu_s = batch * cpu_per_record_s / share
    batch_s = io_path_s + cpu_s
    gb_s_per_run = mb / 1024 * batch_s / batch
    return {
        "share": share,
        "cpu_s": cpu_s,
        "batch_s": batch_s,
        "lower_s": max(io_path_s, cpu_s),
        "gb_s_per_run": gb_s_per_run,
        "usd": gb_s_per_run * 1_000_000 * LAMBDA_ARM64_PER_GB_SECOND,
        "starved": cpu_s > io_path_s,
        "within_margin": cpu_s <= CPU_MARGIN * io_path_s,
        "fits": probe["peak_rss_mb"] <= MEMORY_HEADROOM * mb,
        # The init phase (imports and clients: handlers.worker.init_container) runs with
        # Lambda's burst CPU, a full core whatever the memory (docs/decisions.md, "Why the
        # worker builds its clients in Lambda's init phase").
        "init_s": probe["init_cpu_s"],
    }


def secret_dollars(every_s: float) -> dict[str, float]:
    """Per million runs of one webhook schedule that runs every ``every_s``: its
    secret's reads (one per cache lifetime on a warm worker, at most one a run)
    and its monthly fee spread over its runs, in each store.

    Secrets Manager: a GetSecretValue call each read, $0.40 a month a secret.
    SSM standard parameter: no fee, the call free at standard throughput, one
    KMS Decrypt each read (``ssm_*``); with higher throughput turned on the
    call is charged too (``ssm_ht_calls``); an advanced parameter (past 10,000
    standard ones, with intelligent tiering) has a fee (``ssm_advanced_fee``).
    The KMS free tier (20,000 requests a month an account) is left out."""
    reads_per_run = min(1.0, every_s / SECRET_CACHE_TTL_S)
    runs_per_month = MONTH_S / every_s
    per_million_reads = reads_per_run * 1_000_000 / 10_000
    sm_calls = per_million_reads * SECRETS_MANAGER_PER_10K_CALLS
    sm_fee = SECRETS_MANAGER_SECRET_PER_MONTH / runs_per_month * 1_000_000
    ssm_kms = per_million_reads * KMS_PER_10K_REQUESTS
    return {
        "reads_per_run": reads_per_run,
        # The stack's default: an eventually consistent GetItem of the secrets table,
        # half a read unit (an item far under 4 KB) each read; no fee, no KMS request.
        "table": reads_per_run * DYNAMODB_PER_MILLION_RRU / 2,
        "calls": sm_calls,
        "fee": sm_fee,
        "secrets_manager": sm_calls + sm_fee,
        "ssm_kms": ssm_kms,
        "ssm_fee": 0.0,
        "ssm": ssm_kms,
        "ssm_ht_calls": per_million_reads * SSM_HIGHER_THROUGHPUT_PER_10K,
        "ssm_advanced_fee": SSM_ADVANCED_PARAMETER_PER_MONTH / runs_per_month * 1_000_000,
    }
