"""The ``lateness`` scenario: runs start late, and the StartLatenessHigh alarm says so.

The fault the alarm exists for: the worker cannot start runs as fast as they
come due. Here its queue trigger's ``MaximumConcurrency`` is set to 2 (the
least Lambda allows; the stack's ``workerMaxConcurrency`` setting), and
``count`` one-off schedules are due at one instant, each to a webhook that
answers in 60 s: two batches of ten at a time, a round a minute, so the last
ones start minutes late. Fewer than ``surgeMin`` (200) are due in that
second, so no surge's drains (which the cap does not bound) start them.

The alarm reads p99 of start lateness over two 5-minute periods: the starts
span both periods after the instant, each period's p99 is far over its 10 s
threshold, so it goes to ALARM, and once the backlog is gone (no datapoints,
not breaching) back to OK. Nothing else is wrong: every occurrence is still
delivered once, no dead letter, no worker error.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from sim.results import summary
from sim.scenario_blocks import PRIMARY, Options, create_schedule, thin_tick, webhook_target
from sim.world import Simulation

# Lambda's least MaximumConcurrency for an SQS event source.
CAPPED_CONCURRENCY = 2
LATENESS_COUNT = 120
# How long each target takes to answer: a batch of ten holds its invocation this long.
TARGET_MS = 60_000
AHEAD_S = 80.0


def with_worker_cap(templates: dict[str, dict[str, Any]], cap: int) -> dict[str, Any]:
    """The templates with the worker's queue trigger capped at ``cap`` concurrent batches,
    as the ``workerMaxConcurrency`` setting synthesizes it."""
    changed = copy.deepcopy(templates)
    for template in changed.values():
        for resource in template["Resources"].values():
            if resource["Type"] == "AWS::Lambda::EventSourceMapping":
                resource["Properties"].setdefault("ScalingConfig", {})["MaximumConcurrency"] = cap
    return changed


def lateness(templates: dict[str, Any], options: Options) -> dict[str, Any]:
    """A backlog the capped worker works through a minute at a time."""
    count = LATENESS_COUNT if options.count is None else options.count
    due_at = datetime(2026, 12, 1, 8, 3, tzinfo=UTC)
    start = due_at - timedelta(seconds=AHEAD_S)
    span_s = 16 * 60.0 if options.hours is None else options.hours * 3600
    capped = with_worker_cap(templates, CAPPED_CONCURRENCY)
    with Simulation(capped, start, seed=options.seed, adversities=options.adversities) as sim:
        thin_tick(sim, options.tick_interval_s)
        sim.deploy(PRIMARY)
        expected: dict[str, list[datetime]] = {}
        at = due_at.isoformat().replace("+00:00", "Z")
        for i in range(count):
            s = create_schedule(
                sim,
                PRIMARY,
                {
                    "name": f"slow-{i}",
                    "spec": {"at": at},
                    "target": {**webhook_target(f"s{i}", f"ms={TARGET_MS}"), "timeout_s": 90},
                },
            )
            expected[s["id"]] = [due_at]
        sim.notes.append(
            f"the worker's trigger capped at {CAPPED_CONCURRENCY} batches; {count} one-offs "
            f"due at {AHEAD_S:g} s, each target answering in {TARGET_MS / 1000:g} s"
        )
        sim.run_for(span_s)
        worker = sim.function(PRIMARY, "FunctionsWorker")
        [mapping] = [m for m in sim.mappings if m.function is worker]
        return summary(
            sim,
            "lateness",
            expected,
            60.0,
            {
                "occurrences": count,
                "due_at_s": AHEAD_S,
                "worker_max_concurrency": CAPPED_CONCURRENCY,
                "event_source_mapping": {
                    "peak_batches_in_flight": mapping.peak_in_flight,
                    "ceiling": sim.esm_ceiling(mapping),
                },
            },
        )
