"""The cost model's main report: requests and units a run, the worker's sizing,
$ per million runs, webhook secrets and the fixed monthly cost, as text.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from typing import Any

from adapters.secrets import SECRET_CACHE_TTL_S
from bench.prices import (
    AWS_CALL_MS,
    CPU_MARGIN,
    DYNAMODB_PER_MILLION_RRU,
    FLOOR_WRU,
    IDLE_CORE_LIMIT,
    IDLE_WITH_KEY_LIMIT,
    KMS_PER_10K_REQUESTS,
    LAMBDA_MB_PER_VCPU,
    LAMBDA_PLATFORM_LOG_BYTES,
    MAX_BATCH,
    MIN_LAMBDA_MB,
    PRICES_READ_ON,
    PROBE_PHASES,
    PROBE_SCHEDULES,
    SECRETS_MANAGER_PER_10K_CALLS,
    SECRETS_MANAGER_SECRET_PER_MONTH,
    SSM_ADVANCED_PARAMETER_PER_MONTH,
    SSM_HIGHER_THROUGHPUT_PER_10K,
    TARGET_MS,
)


def _priced(items: dict[str, float], name_width: int, width: int) -> list[str]:
    """One line per priced item, then their total."""
    lines = [f"  {name:<{name_width}} {dollars:{width}.2f}" for name, dollars in items.items()]
    total = sum(items.values())
    return [*lines, f"  {'total':<{name_width}} {total:{width}.2f}"]


def report(m: dict[str, Any], infra: dict[str, Any], r: dict[str, Any]) -> str:
    runs = m["runs"]
    out = [
        f"duetime cost model: {m['schedules']} schedules x {m['slots']} slots = {runs} runs "
        f"on moto in-process ({m['elapsed_s']:.1f} s), {date_line()}",
        f"prices: us-east-1 list, on demand, read {PRICES_READ_ON}; prices change",
        "",
        "AWS requests per run, by phase and operation (measured)",
    ]
    requests = m["requests"]
    passes = m["slots"] + 1
    idle = {
        (svc, op): n / m["idle_passes"] for (ph, svc, op), n in requests.items() if ph == "idle"
    }
    for (phase, service, op), n in sorted(requests.items()):
        if phase not in ("tick", "worker", "esm"):
            continue
        if phase == "tick":  # less what the same passes cost with nothing due
            n = n - passes * idle.get((service, op), 0.0)
        out.append(f"  {phase:<7} {service:<9} {op:<22} {n / runs:7.3f}")
    p = r["per_run"]
    pr = m["probe"]
    batch = m["runs_per_batch"]
    out += [
        "  (tick: the run phase's passes less as many idle passes; esm: Lambda's SQS poller)",
        "",
        "DynamoDB write units per run, by table and index (measured)",
    ]
    writes = m["writes"]
    for (phase, label), units in sorted(writes.items()):
        if phase not in ("tick", "worker"):
            continue
        if phase == "tick":  # less what the same passes write with nothing due
            units = units - passes * writes.get(("idle", label), 0.0) / m["idle_passes"]
        if abs(units) > 1e-9:
            out.append(f"  {phase:<7} {label:<32} {units / runs:7.3f}")
    out += [
        "  (Leases: the shards a pass leases to queue ahead, a cost per pass, not per run:",
        "  at most one lease write per shard a minute, however many runs)",
        "",
        "AWS requests per idle tick pass (measured)",
        *(f"  tick    {svc:<9} {op:<22} {n:7.2f}" for (svc, op), n in sorted(idle.items())),
        "",
        "The worker function, measured in a process of its own (bench/worker_probe.py:",
        f"  {pr['runs']} webhook runs in {pr['batches']} invocations, {PROBE_PHASES} slots of "
        f"{PROBE_SCHEDULES} schedules, a receiver answering in {TARGET_MS:g} ms, on this"
        " machine's CPU)",
        f"  cold start (import, clients)   {pr['init_cpu_s']:6.2f} s CPU, "
        f"{pr['init_rss_mb']:.0f} MB resident",
        f"  a batch of {MAX_BATCH}, warm          {pr['cpu_per_batch_s']:6.3f} s CPU "
        f"({pr['cpu_per_record_s'] * 1000:.1f} ms a record), {pr['wall_per_batch_s']:.3f} s "
        "wall here",
        f"  a batch of {MAX_BATCH}, cold          {pr['cold_cpu_per_batch_s']:6.3f} s CPU "
        "(each schedule's first run on this worker: its secret and version read)",
        "  AWS requests a record, warm     "
        + ", ".join(f"{op} {n:.2f}" for op, n in pr["calls_per_record"].items()),
        f"  peak resident memory           {pr['peak_rss_mb']:6.0f} MB",
        f"  output a run                   {pr['log_bytes_per_run']:6.0f} B "
        f"(attempt line {pr['attempt_line_bytes']:.0f} B; EMF {pr['emf_bytes_per_batch']:.0f} B"
        " a batch)",
        "",
        f"Event source mapping (infra/functions.py): BatchSize {infra['worker_batch']}, "
        f"MaximumBatchingWindow {infra['worker_batch_window_s']:g} s: a batch is what is visible"
        " when a poller receives",
        f"Worker sizing: a batch of {batch:g} (the mean here) lasts its longest record's"
        f" {r['record_calls']:.1f} AWS calls x {AWS_CALL_MS:g} ms + {TARGET_MS:g} ms target"
        f" = {r['io_path_s']:.3f} s,",
        "  plus the batch's CPU at the size's share of a vCPU (1 vCPU at "
        f"{LAMBDA_MB_PER_VCPU} MB; an upper bound: no CPU overlaps a wait)",
        f"  {'MB':>5} {'vCPU':>5} {'CPU s':>6} {'batch s':>8} {'(at least)':>10} "
        f"{'cold start s':>12} {'$/M':>6}  fits / CPU-bound",
    ]
    for mb, row in r["sizing"].items():
        notes = [
            "fits" if row["fits"] else f"does not fit ({pr['peak_rss_mb']:.0f} MB peak)",
            "CPU-bound" if row["starved"] else "waits on the target",
        ]
        mark = " <- deployed" if mb == infra["worker_mb"] else ""
        out.append(
            f"  {mb:5d} {row['share']:5.2f} {row['cpu_s']:6.3f} {row['batch_s']:8.3f} "
            f"{row['lower_s']:10.3f} {row['init_s']:12.2f} {row['usd']:6.2f}  "
            f"{', '.join(notes)}{mark}"
        )
    least = r["least_not_starved_mb"]
    out += [
        f"  the least memory (in 64 MB steps) at which a warm batch of {MAX_BATCH}'s CPU takes at"
        f" most {CPU_MARGIN:.0%} of its longest wait: {least} MB;"
        f" deployed: {infra['worker_mb']} MB",
        "",
        "Units per run",
        f"  DynamoDB write request units  {p['dynamodb_wru']:7.2f}  "
        f"(largest item seen {m['largest_item']} B: every write is one 1 KB unit)",
        f"  DynamoDB read request units   {p['dynamodb_rru']:7.2f}",
        f"  SQS requests (64 KB chunks)   {p['sqs_requests']:7.2f}",
        f"  worker invocations            {r['invocations_per_run']:7.2f}  "
        f"(batches of {batch:g} on average: the bench's schedules come due at the same second)",
        f"  worker GB-seconds             {r['gb_s_per_run']:7.4f}  "
        f"({infra['worker_mb']} MB x {r['sizing'][infra['worker_mb']]['batch_s']:.3f} s"
        f" / {batch:g} runs)",
        f"  log bytes                     {r['log_bytes_per_run']:7.0f}  (the probe's output, "
        f"START/END/REPORT {LAMBDA_PLATFORM_LOG_BYTES} B an invocation)",
        "",
        f"$ per million runs, all in         {'measured':>8} {'floor':>8} {'alone':>8}",
    ]
    total = sum(r["dollars"].values())
    floor_total = sum(r["floor"].values())
    for name, dollars in r["dollars"].items():
        out.append(
            f"  {name:<32} {dollars:8.2f} {r['floor'][name]:8.2f} {r['dollars_alone'][name]:8.2f}"
        )
    out += [
        f"  {'total':<32} {total:8.2f} {floor_total:8.2f} {sum(r['dollars_alone'].values()):8.2f}",
        "  (alone: runs that come due at a second of their own, each a batch of one: no"
        " batching window)",
        f"  ratio to the floor: {total / floor_total:.2f}; without the writes: "
        f"{total - r['dollars']['DynamoDB writes']:.2f} against "
        f"{floor_total - r['floor']['DynamoDB writes']:.2f}",
        f"  (floor: {FLOOR_WRU} WRU a run (admitted, started, finished), no read, a send, a "
        f"receive and a delete per {MAX_BATCH} runs,",
        f"  one invocation of {MIN_LAMBDA_MB} MB per {MAX_BATCH} runs waiting "
        f"{TARGET_MS:g} ms, START/END/REPORT only)",
        "",
        "Webhook signing secrets, per million runs of a schedule, on top: read once per "
        f"{SECRET_CACHE_TTL_S:g} s cache",
        "  lifetime on a warm worker, at most once a run (each cold worker reads it again).",
        f"  Secrets Manager: ${SECRETS_MANAGER_SECRET_PER_MONTH:.2f} a secret a month, "
        f"${SECRETS_MANAGER_PER_10K_CALLS:.2f} per 10,000 GetSecretValue.",
        "  DynamoDB table (the default): an eventually consistent GetItem, half a read unit "
        f"(${DYNAMODB_PER_MILLION_RRU / 2:.4f} a million), no fee.",
        "  SSM standard parameter: no fee, GetParameter free at standard",
        f"  throughput, ${KMS_PER_10K_REQUESTS:.2f} per 10,000 KMS decrypts; higher throughput "
        f"adds ${SSM_HIGHER_THROUGHPUT_PER_10K:.2f} per 10,000",
        f"  calls, an advanced parameter ${SSM_ADVANCED_PARAMETER_PER_MONTH:.2f} a month "
        "(the KMS free tier, 20,000 requests a month, left out).",
        f"  {'cadence':<16} {'reads/run':>9} | {'table':>6} | {'SM calls':>8} {'SM fee':>10} "
        f"{'SM total':>10} | {'SSM (KMS)':>9} {'+higher tput':>12} {'+advanced':>10}",
    ]
    for name, row in r["secrets_by_cadence"].items():
        out.append(
            f"  {name:<16} {row['reads_per_run']:9.2f} | {row['table']:6.3f} | {row['calls']:8.2f} "
            f"{row['fee']:10.2f} {row['secrets_manager']:10.2f} | {row['ssm']:9.2f} "
            f"{row['ssm_ht_calls']:12.2f} {row['ssm_advanced_fee']:10.2f}"
        )
    out += [
        "",
        "Fixed $ per month (independent of runs), idle",
    ]
    for group, items in r["fixed_groups"].items():
        out += [f" {group}", *_priced(items, 73, 7)]
    core, with_key = r["idle_core"], r["idle_core_with_key"]
    core_name = f"compute, DynamoDB, SQS (at most {IDLE_CORE_LIMIT:.2f})"
    key_name = f"compute, DynamoDB, SQS and the signing key (at most {IDLE_WITH_KEY_LIMIT:.2f})"
    out += [
        f"  {core_name:<73} {core:7.2f}  {verdict(core <= IDLE_CORE_LIMIT)}",
        f"  {key_name:<73} {with_key:7.2f}  {verdict(with_key <= IDLE_WITH_KEY_LIMIT)}",
        f"  {'all fixed, idle':<73} {sum(r['fixed'].values()):7.2f}",
        f"  custom metrics sent idle: {', '.join(m['idle_metrics']) or 'none'}; every declared"
        f" metric sent every hour would be {r['busy_metrics']:.2f}",
        "  AWS requests per idle watchdog invocation (measured): "
        + ", ".join(
            f"{svc} {op} {n:g}" for (ph, svc, op), n in sorted(requests.items()) if ph == "watchdog"
        ),
        "",
        f"idle tick pass: {r['per_pass']['wru']:.1f} WRU, {r['per_pass']['rru']:.1f} RRU; "
        f"{r['passes_per_month']:,.0f} passes a month ({m['idle_passes']} per invocation)",
        f"idle log bytes per invocation (besides START/END/REPORT): tick {m['idle_log_bytes']},"
        f" watchdog {m['watchdog_log_bytes']}",
    ]
    return "\n".join(out)


def verdict(held: bool) -> str:
    return "pass" if held else "FAIL"


def date_line() -> str:
    return (
        f"{datetime.now(UTC).date().isoformat()}, {platform.machine()} "
        f"{platform.processor() or platform.system()}, Python {platform.python_version()}"
    )
