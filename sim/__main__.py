"""``python -m sim <scenario> [--json]``: run a scenario of the deployment simulator.

    python -m sim idle-week --hours 6 --tick-interval 25
    python -m sim mixed-day --scale 0.02 --hours 1 --json
    python -m sim all --short     # every scenario, short, one table (make simulate)

See docs/simulator.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sim.synth import (
    environment_names,
    synthesize,
    with_memory,
    with_surge_min,
    with_variables,
)

# Dummy credentials only: nothing here may reach AWS. Set by main(), before any client exists.
DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}
SCENARIO_NAMES = (
    "idle-week",
    "mixed-day",
    "faults",
    "two-stacks",
    "alerts",
    "burst",
    "routes",
    "lateness",
)

COLUMNS = (
    ("scenario", 11),
    ("simulated_s", 11),
    ("denied", 6),
    ("unused", 6),
    ("due", 6),
    ("delivered", 9),
    ("dups", 4),
    ("gaps", 5),
    ("stopped", 7),
    ("late p50", 8),
    ("late p99", 8),
    ("late max", 8),
    ("WRU/run", 7),
    ("$/M runs", 9),
    ("$/mo idle", 9),
    ("(core)", 6),
    ("(+key)", 6),
    ("alarms fired", 40),
    ("wall_s", 6),
)


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def row(result: dict[str, Any]) -> list[str]:
    fired = sorted(name for name, a in result["alarms"].items() if a["into_alarm_s"])
    lateness = result["lateness_s"]
    wru = result.get("dynamodb_write_units_per_run") or {}
    return [
        result["scenario"],
        f"{result['simulated_s']:.0f}",
        str(len(result["denied_calls"])),
        str(len(result["unused_grants"])),
        str(result["due"]),
        str(result["delivered"]),
        str(result["duplicates"]),
        str(result["gaps"]),
        str(result["schedules_no_longer_planned"]),
        _number(lateness["p50"]),
        _number(lateness["p99"]),
        _number(lateness["max"]),
        _number(wru.get("total")),
        _number(result["usd_per_million_runs"], 2),
        f"{result['usd_per_month_idle']:.2f}",
        f"{result['usd_per_month_idle_items']['compute_dynamodb_sqs']:.2f}",
        f"{result['usd_per_month_idle_items']['compute_dynamodb_sqs_key']:.2f}",
        ", ".join(fired) or "-",
        f"{result.get('wall_s', 0):.0f}",
    ]


def details(result: dict[str, Any]) -> list[str]:
    """The itemized figures under the table: where a run's and an idle month's money goes."""
    name = result["scenario"]
    lines = []
    by_service = result.get("usd_per_million_runs_by_service")
    if by_service:
        items = ", ".join(f"{k} {v:.2f}" for k, v in by_service.items() if v)
        lines.append(f"  {name}: $/M runs by service: {items}")
    wru = result.get("dynamodb_write_units_per_run")
    if wru:
        items = ", ".join(f"{k} {v:g}" for k, v in wru.items() if k != "total")
        lines.append(f"  {name}: write units per run: {items}")
    idle = result["usd_per_month_idle_items"]
    lines.append(
        f"  {name}: $/month idle: " + ", ".join(f"{k} {v:.2f}" for k, v in idle.items() if v)
    )
    return lines


def header() -> str:
    return "  ".join(name.ljust(width) for name, width in COLUMNS)


def line(result: dict[str, Any]) -> str:
    return "  ".join(v.ljust(w) for v, (_, w) in zip(row(result), COLUMNS, strict=True))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim", description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=[*SCENARIO_NAMES, "all"])
    parser.add_argument("--json", action="store_true", help="print one JSON object per scenario")
    parser.add_argument(
        "--hours", type=float, default=None, help="simulated duration (default: the scenario's)"
    )
    parser.add_argument(
        "--scale", type=float, default=1.0, help="mixed-day: fraction of its 1,000 schedules"
    )
    parser.add_argument(
        "--tick-interval",
        type=float,
        default=1.0,
        help="seconds between the tick's passes within one invocation (the code's 1 s by default)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--count",
        type=int,
        default=None,
        help="burst: occurrences due at one instant (10,000); lateness: its one-offs (120)",
    )
    parser.add_argument(
        "--ahead",
        type=float,
        default=None,
        help="burst: seconds before the instant its schedules are created (80: inside the "
        "lookahead, each planned by its API call; beyond it, by the tick)",
    )
    parser.add_argument(
        "--hourly",
        action="store_true",
        help="burst: hourly crons, two instants an hour apart; the second is planned from "
        "the chain, as a daily 09:00 is after its first day",
    )
    parser.add_argument(
        "--surge-min",
        type=int,
        default=None,
        help="intents due in one second that earn a surge (the template's, 200, by default)",
    )
    parser.add_argument(
        "--lookahead",
        type=int,
        default=None,
        help="the stack's lookaheadS, 60 to 900 (the template's, 90, by default)",
    )
    parser.add_argument(
        "--tick-memory",
        type=int,
        default=None,
        help="the tick's memory in MB, 128 to 10240 (tickMemoryMB; the template's, 512, by "
        "default): its share of a vCPU, a full one at 1769",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="variables",
        metavar="NAME=VALUE",
        help="give every function whose template environment has the variable NAME the "
        "value VALUE (e.g. DUETIME_PLAN_EARLY=false): another setting, measured from the same "
        "template; repeatable",
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="ADVERSITY",
        help="run without one of AWS's weaker promises (index-lag, at-least-once, "
        "transaction-conflicts, partition-throttling, ttl-lag, sqs-limits, api-timeout; "
        "all: none of them); repeatable, or comma-separated",
    )
    parser.add_argument(
        "--short",
        action="store_true",
        help="each scenario's short preset (make simulate); other options are ignored",
    )
    args = parser.parse_args(argv)
    if args.hours is not None and args.hours <= 0:
        parser.error("--hours must be positive")
    if not 0 < args.scale <= 1:
        parser.error("--scale must be in (0, 1]")
    if args.count is not None and args.count < 1:
        parser.error("--count must be at least 1")
    if args.ahead is not None and not 2 <= args.ahead <= 3600:
        parser.error("--ahead must be between 2 and 3600 seconds")
    if args.lookahead is not None and not 60 <= args.lookahead <= 900:
        parser.error("--lookahead must be between 60 and 900 seconds")
    if args.tick_memory is not None and not 128 <= args.tick_memory <= 10240:
        parser.error("--tick-memory must be between 128 and 10240 MB")
    if args.surge_min is not None and args.surge_min < 1:
        parser.error("--surge-min must be at least 1")
    if not 1 <= args.tick_interval <= 55:
        parser.error("--tick-interval must be between 1 and 55 seconds")
    variables: dict[str, str] = {}
    for pair in args.variables:
        name, equals, value = pair.partition("=")
        if not equals or not name.strip():
            parser.error(f"--set {pair}: expected NAME=VALUE")
        variables[name.strip()] = value
    from sim.adversity import without

    try:
        adversities = without([n.strip() for v in args.without for n in v.split(",") if n])
    except ValueError as error:
        parser.error(str(error))
    os.environ.update(DUMMY_AWS_ENV)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    os.environ.pop("AWS_PROFILE", None)
    # Powertools warns when a flush has no metrics: the handlers' own choice, not news here.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    from sim.scenario_blocks import Options
    from sim.scenarios import SCENARIOS, SHORT

    options = Options(
        hours=args.hours,
        scale=args.scale,
        tick_interval_s=args.tick_interval,
        seed=args.seed,
        count=args.count,
        ahead_s=args.ahead,
        hourly=args.hourly,
        adversities=adversities,
    )
    templates = synthesize()
    if args.surge_min is not None:
        templates = with_surge_min(templates, args.surge_min)
    if args.lookahead is not None:
        from adapters.definitions import ENV_LOOKAHEAD_S

        templates = with_variables(templates, {ENV_LOOKAHEAD_S: str(args.lookahead)})
    if variables:
        unknown = sorted(set(variables) - environment_names(templates))
        if unknown:
            parser.error(f"--set: no function of the template has {', '.join(unknown)}")
        templates = with_variables(templates, variables)
    if args.tick_memory is not None:
        templates = with_memory(templates, "handlers.tick.handler", args.tick_memory)
    names = list(SCENARIO_NAMES) if args.scenario == "all" else [args.scenario]
    results = []
    if not args.json:
        print(header(), flush=True)
    for name in names:
        began = time.perf_counter()
        chosen = replace(SHORT[name], adversities=adversities) if args.short else options
        result = SCENARIOS[name](templates, chosen)
        result["wall_s"] = round(time.perf_counter() - began, 1)
        results.append(result)
        print(json.dumps(result, default=str) if args.json else line(result), flush=True)
    if not args.json:
        for result in results:
            for failed in result.get("route_errors", []):
                print(f"  {result['scenario']}: {failed['operation']} answered {failed['status']}")
            for operation in result.get("operations_not_called", []):
                print(f"  {result['scenario']}: not called: {operation}")
            for denied in result["denied_calls"][:3]:
                print(
                    f"  {result['scenario']}: denied {denied['function']} "
                    f"{denied['action']} on {denied['resource']}"
                )
            effects = ", ".join(
                f"{k} {v}"
                for k, v in result["adversity_effects"].items()
                if not isinstance(v, dict)
            )
            print(f"  {result['scenario']}: adversities: {effects or 'none on'}")
            stale = result["adversity_effects"].get("stale_index_answers_by_index")
            if stale:
                items = ", ".join(f"{k} {v}" for k, v in stale.items())
                print(f"  {result['scenario']}: stale index answers: {items}")
            p99 = result["lateness_s"]["p99"]
            if p99 is not None and p99 >= 1.0:
                latest = ", ".join(
                    f"{e['schedule']} {e['scheduled_at']} +{e['late_s']:g} s"
                    for e in result["late_examples"][:5]
                )
                print(f"  {result['scenario']}: latest starts: {latest}")
            if result["stopped_examples"]:
                stopped = ", ".join(result["stopped_examples"])
                print(f"  {result['scenario']}: no longer planned: {stopped}")
            for detail in details(result):
                print(detail)
            for note in result["notes"]:
                print(f"  {result['scenario']}: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
