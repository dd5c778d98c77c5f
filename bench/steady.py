"""The steady state per cadence (``bench/cost.py --every``): DynamoDB units a run for
schedules of one cadence after a warm-up, due together or spread, and its reports
(per cadence, and per request and call site).
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from moto import mock_aws

from adapters.dynamodb.store import dynamo_store
from adapters.sqs_worker import SqsWorkQueue
from bench.cost_runs import (
    T0,
    BenchClock,
    Held,
    metered_stack,
    sqs_record,
    stack_settings,
    succeeding_worker,
)
from bench.meter import Meter
from bench.prices import DYNAMODB_PER_MILLION_RRU, DYNAMODB_PER_MILLION_WRU
from bootstrap.parts import Ticker, tick_config
from bootstrap.settings import Settings
from handlers import worker as worker_handler
from handlers.api_models import definition_of as definition
from handlers.tick_pass import run_tick
from service.runs import RunWorker
from service.schedules import ScheduleService


def _drain(
    sqs: Any, url: str, worker: RunWorker, queue: SqsWorkQueue, meter: Meter, batch_size: int
) -> int:
    """Receive and run what the queue holds, as the event source mapping
    does; the number of records that succeeded."""
    done_count = 0
    while True:
        meter.phase = "esm"
        answer = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=batch_size,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
        )
        messages = answer.get("Messages", [])
        if not messages:
            return done_count
        meter.phase = "worker"
        with contextlib.redirect_stdout(io.StringIO()):
            result = worker_handler.handler(
                {"Records": [sqs_record(m) for m in messages]}, None, worker=worker, queue=queue
            )
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        done = [m for m in messages if m["MessageId"] not in failed]
        done_count += len(done)
        meter.phase = "esm"
        if done:
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )


def steady_state(
    every_s: int, schedules: int, batch_size: int, *, spread: bool = False
) -> dict[str, Any]:
    """DynamoDB units a run at steady state, for schedules every ``every_s``,
    planned as the stack plans (planning early on): a warm-up hands every
    schedule from its HEAD to its chain (a reach and a slot), then passes a minute for
    at least 60 minutes and three slots, each followed by the worker running
    what it queued, each intent at its due second (``Held``). Tick units
    less as many idle passes, plus the worker's.

    The schedules start together (they come due in the same minutes and so
    share plan pages), or with ``spread`` evenly over the cadence, whole
    minutes apart where the cadence has room: as few to a page as they can be."""
    with mock_aws():
        dynamodb, sqs, tables, urls, meter = metered_stack("steady")
        settings = stack_settings(tables, urls, plan_early=True)  # as the stack deploys it
        config = tick_config(settings)
        clock = BenchClock(T0)
        store = dynamo_store(dynamodb, tables, lease_shards=settings.shards)
        service = ScheduleService(store, clock, config.partitioning)
        held = Held(sqs, settings.delivery_queue_url)
        ticker = Ticker(store, held, clock, config, owner="steady")
        worker_clock = BenchClock(T0)
        worker = succeeding_worker(dynamodb, tables, settings, worker_clock)
        queue = SqsWorkQueue(sqs, settings.delivery_queue_url, settings.delivery_dlq_url)
        meter.phase = "first"  # the deployment's first pass sets the plan cursor
        with contextlib.redirect_stdout(io.StringIO()):
            run_tick(ticker, 0.0, sleep=lambda s: None)
        meter.phase = "idle"
        with contextlib.redirect_stdout(io.StringIO()):
            run_tick(ticker, 0.0, sleep=lambda s: None)
        idle_rru = meter.units[("idle", "rru")]
        meter.phase = "setup"
        for i in range(schedules):
            spec: dict[str, Any] = {"every": f"PT{every_s}S"}
            if spread:
                offset = (i * every_s // schedules) // 60 * 60
                spec["start_at"] = (T0 + timedelta(seconds=60 + offset)).isoformat()
            service.create(
                definition(
                    {
                        "name": f"steady {i}",
                        "spec": spec,
                        "target": {"type": "webhook", "url": "https://example.com/hook"},
                        "payload": {"n": i},
                    }
                )
            )

        def passes(count: int, phase: str) -> int:
            ran = 0
            for _ in range(count):
                clock.advance(60)
                meter.phase = phase
                with contextlib.redirect_stdout(io.StringIO()):
                    run_tick(ticker, 0.0, sleep=lambda s: None)
                # Until the next pass, each second's intents reach the worker at that second.
                for at, intents in held.release(clock.now() + timedelta(seconds=60)):
                    meter.phase = phase  # the tick's sends
                    held.send_batch(intents)
                    worker_clock.at = max(worker_clock.at, at)
                    ran += _drain(
                        sqs, settings.delivery_queue_url, worker, queue, meter, batch_size
                    )
            return ran

        fill_s = config.reach.total_seconds()
        passes(math.ceil((fill_s + every_s) / 60) + 2, "warm")
        # The worker's and the poller's requests of the warm-up are not the run phase's.
        for counted in (meter.units, meter.by_request):
            for key in list(counted):
                if key[0] in ("tick", "worker", "esm"):
                    del counted[key]
        count = max(60, 3 * every_s // 60)
        runs = passes(count, "tick")
        wru = meter.units[("tick", "wru")] + meter.units[("worker", "wru")]
        # The reads every pass makes anyway (index reads) are left out.
        rru = meter.units[("tick", "rru")] - count * idle_rru + meter.units[("worker", "rru")]
        tick_writes = {w: n for (ph, w), n in meter.writes.items() if ph == "tick"}
        leases = tick_writes.get("Leases", 0.0)
        return {
            "breakdown": request_breakdown(meter, count, runs),
            "every_s": every_s,
            "spread": spread,
            "schedules": schedules,
            "passes": count,
            "runs": runs,
            # A run's own units: its record, the chain's entry, a HEAD or
            # outbox write, the worker's. The leases table's (the pass's
            # heartbeat, the shard leases it takes and lets go, the plan
            # cursor) are a cost a pass, whatever the number of runs.
            "wru": (wru - leases) / runs if runs else float("nan"),
            "next_per_run": tick_writes.get("Runs.next", 0.0) / runs if runs else float("nan"),
            "pages_per_run": tick_writes.get("Runs.pages", 0.0) / runs if runs else float("nan"),
            "lease_wru_per_pass": leases / count,
            "rru": rru / runs if runs else float("nan"),
        }


def request_breakdown(meter: Meter, passes: int, runs: int) -> dict[str, Any]:
    """Per request kind and call site: requests, read units and write units a
    run (the run phase's passes less as many idle passes, the worker's, the
    event source mapping's), and the same a pass for the idle pass."""
    idle_passes = 1  # the idle phase is one pass
    idle = {label: list(v) for (ph, label), v in meter.by_request.items() if ph == "idle"}
    per_run: dict[str, list[float]] = {}
    for (phase, label), values in meter.by_request.items():
        if phase not in ("tick", "worker", "esm"):
            continue
        row = per_run.setdefault(f"{phase:<6} {label}", [0.0, 0.0, 0.0])
        less = idle.get(label) if phase == "tick" else None
        for i, v in enumerate(values):
            row[i] += v - (passes * less[i] / idle_passes if less else 0.0)
    for label, values in idle.items():
        if not any(k == ("tick", label) for k in meter.by_request):
            row = per_run.setdefault(f"tick   {label}", [0.0, 0.0, 0.0])
            for i, v in enumerate(values):
                row[i] -= passes * v / idle_passes
    return {
        "per_run": {
            k: [v / runs for v in vs]
            for k, vs in per_run.items()
            if runs and any(abs(v) > 1e-9 for v in vs)
        },
        "idle_pass": idle,
    }


def breakdown_report(rows: Sequence[Mapping[str, Any]]) -> str:
    """Each steady row's requests and units a run, by request and call site."""
    out: list[str] = []
    for row in rows:
        start = "spread" if row["spread"] else "together"
        out += [
            "",
            f"Per run, by request and call site: every {row['every_s']} s, {start} "
            f"({row['runs']} runs, {row['passes']} passes; tick rows less as many idle passes)",
            f"  {'requests':>8} {'RRU':>7} {'WRU':>7}  phase  request @ call site",
        ]
        items = sorted(row["breakdown"]["per_run"].items(), key=lambda kv: -kv[1][1] - kv[1][2])
        for label, (n, rru, wru) in items:
            out.append(f"  {n:8.3f} {rru:7.3f} {wru:7.3f}  {label}")
        totals = [sum(v[i] for v in row["breakdown"]["per_run"].values()) for i in range(3)]
        out.append(f"  {totals[0]:8.3f} {totals[1]:7.3f} {totals[2]:7.3f}  total (Leases included)")
    if rows:
        out += [
            "",
            "An idle pass, by request and call site (the tick rows above leave it out of"
            " every pass)",
            f"  {'requests':>8} {'RRU':>7} {'WRU':>7}  request @ call site",
        ]
        idle = rows[0]["breakdown"]["idle_pass"]
        for label, (n, rru, wru) in sorted(idle.items(), key=lambda kv: -kv[1][1]):
            out.append(f"  {n:8.3f} {rru:7.3f} {wru:7.3f}  {label}")
    return "\n".join(out)


def steady_report(rows: Sequence[Mapping[str, Any]], r: Mapping[str, Any]) -> str:
    """The steady state per cadence, the schedules due together and spread."""
    others = sum(
        v for k, v in r["dollars"].items() if not k.startswith("DynamoDB")
    )  # SQS, Lambda, logs a run, from the main run
    out = [
        "",
        f"Steady state per cadence (measured; {rows[0]['schedules']} schedules each, "
        f"after a warm-up; lookahead {Settings().lookahead_s} s)",
        f"  {'cadence':<16} {'start':<8} {'runs':>5} {'WRU/run':>8} "
        f"{'next/run':>9} {'pages/run':>10} {'RRU/run':>8} {'$/M all in':>11} "
        f"{'Leases WRU/pass':>16}",
    ]
    for row in rows:
        dollars = (
            row["wru"] * DYNAMODB_PER_MILLION_WRU + row["rru"] * DYNAMODB_PER_MILLION_RRU + others
        )
        every = row["every_s"]
        name = {60: "every minute", 300: "every 5 minutes", 3600: "hourly"}.get(
            every, f"every {every} s"
        )
        start = "spread" if row["spread"] else "together"
        out.append(
            f"  {name:<16} {start:<8} {row['runs']:>5} {row['wru']:>8.2f} "
            f"{row['next_per_run']:>9.2f} {row['pages_per_run']:>10.2f} {row['rru']:>8.2f} "
            f"{dollars:>11.2f} {row['lease_wru_per_pass']:>16.2f}"
        )
    out.append(
        f"  ($/M all in: these DynamoDB units, plus {others:.2f} a million runs of SQS, Lambda "
        "and logs from the run above; the tick's fixed cost a month is not in it)"
    )
    out.append(
        "  (WRU/run leaves out the leases table: the pass's heartbeat, the shard leases a pass"
        " with work takes and lets go, the plan cursor; a cost a pass, whatever the number"
        " of runs: Leases WRU/pass. RRU/run leaves out the reads of an idle pass)"
    )
    out.append(
        "  (start: together, the schedules come due in the same minutes and share plan pages;"
        " spread, evenly over the cadence, whole minutes apart where it has room: next/run"
        " and pages/run are the write units of the chain's next slots, in its index and in"
        " plan pages, included in WRU/run)"
    )
    return "\n".join(out)
