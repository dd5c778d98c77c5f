"""The floors the planner must hold, measured in one command, one table with pass/fail.

    PYTHONPATH=$PWD .venv/bin/python bench/floors.py --out floors.json
    PYTHONPATH=$PWD .venv/bin/python bench/floors.py --baseline bench/floors-before.json
    PYTHONPATH=$PWD .venv/bin/python bench/floors.py --baseline before.json --out after.json
    PYTHONPATH=$PWD .venv/bin/python bench/floors.py --quick      # small sizes: a smoke run

Each figure comes from the bench or simulator run that owns it, each in a process
of its own (but the cost model, which runs in this one), one after the other:

- ``bench/cost.py --every 60 --every 300 --every 3600``: $ per million batched
  webhook runs all in, at steady state as the stack plans, the dearest
  of those cadences (schedules due together or spread; at most $3.00), and the
  idle month's compute, DynamoDB and SQS (at most $1.00) and the same with the
  webhook signing key (at most $1.50);
- ``bench/admission.py`` (10,000 schedules due in one minute, planned, admitted
  and queued a minute ahead by the deployed pass, SQLite): at least 10,000
  admissions a second and 50% of the raw SQLite ceiling measured in the same run;
- ``bench/burst.py --sizes 10000 --workers 8 --processes 2 --rounds 1``: the local
  burst of 10,000; "no slower" is judged against ``--baseline`` (start p99 within
  ``SLOWER_TOLERANCE`` of it: the machine is shared, and runs of the same code
  differ by about a fifth), and reported without a verdict when there is none;
- ``python -m sim mixed-day`` (``--mixed`` its options) and ``python -m sim
  burst`` (10,000 due at one instant): start lateness p99 under 1 s, and 0
  denied calls, duplicates, gaps and schedules no longer planned.

``--out`` keeps every figure as JSON (the next run's ``--baseline``);
``bench/floors-before.json`` holds the figures measured before the planner's
redesign (BENCHMARKS.md, "Floors before the planner redesign"), in that form. Wall time
here, on a shared 2-core machine: about 40 minutes in all, most of it the
simulator's burst of 10,000 (docs/simulator.md). A failed step is a row marked
``error`` with its last output lines, and the other steps still run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PER_MILLION_LIMIT = 3.00
ADMISSION_PER_S = 10_000
ADMISSION_RATIO = 0.5
LATENESS_P99_S = 1.0
SLOWER_TOLERANCE = 0.2
# The cadences whose steady state the $ a million runs is judged on (bench/cost.py --every).
CADENCES = (60, 300, 3600)
# The simulator's mixed day as measured for the record (a share of 1,000 schedules
# for an hour: the full day does not fit in a run on moto; docs/simulator.md).
MIXED_ARGS = "--scale 0.1 --hours 0.5 --tick-interval 10"


@dataclass
class Row:
    floor: str
    limit: str
    value: float | None
    passed: bool | None  # None: no verdict (no baseline, or the step failed)
    command: str
    wall_s: float
    note: str = ""


def _python(*args: str) -> list[str]:
    return [sys.executable, *args]


def _run(command: list[str]) -> tuple[str, float]:
    """Run a step in a process of its own; its stdout, and its wall time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise StepFailed(f"exit {done.returncode}: {tail}", wall)
    return done.stdout, wall


class StepFailed(RuntimeError):
    def __init__(self, message: str, wall_s: float) -> None:
        super().__init__(message)
        self.wall_s = wall_s


def _shown(command: list[str]) -> str:
    return shlex.join(["python", *command[1:]])


def cost(quick: bool) -> list[Row]:
    # bench.cost first: it sets the environment the runs on moto need.
    from bench.cost import run_model
    from bench.prices import (
        DYNAMODB_PER_MILLION_RRU,
        DYNAMODB_PER_MILLION_WRU,
        IDLE_CORE_LIMIT,
        IDLE_WITH_KEY_LIMIT,
    )
    from bench.steady import steady_state

    schedules, slots = (20, 2) if quick else (100, 3)
    cadences = (60,) if quick else CADENCES
    shown = f"python bench/cost.py --schedules {schedules} --slots {slots}" + "".join(
        f" --every {every}" for every in cadences
    )
    began = time.perf_counter()
    _, infra, r = run_model(schedules, slots)
    # Steady state, as the stack plans, schedules due together (batched) and spread:
    # what bench/cost.py --every prints as "$/M all in".
    others = sum(v for k, v in r["dollars"].items() if not k.startswith("DynamoDB"))
    steady = {
        (every, spread): steady_state(every, 20, infra["worker_batch"], spread=spread)
        for every in cadences
        for spread in (False, True)
    }
    wall = time.perf_counter() - began
    dollars = {
        key: row["wru"] * DYNAMODB_PER_MILLION_WRU + row["rru"] * DYNAMODB_PER_MILLION_RRU + others
        for key, row in steady.items()
    }
    per_million = max(dollars.values())
    each = ", ".join(
        f"every {e} s {'spread' if sp else 'together'} {d:.2f}" for (e, sp), d in dollars.items()
    )
    return [
        Row(
            "$ per million batched webhook runs, all in (steady state, the dearest cadence)",
            f"<= {PER_MILLION_LIMIT:.2f}",
            per_million,
            per_million <= PER_MILLION_LIMIT,
            shown,
            wall,
            f"{each}; the short run's own total {sum(r['dollars'].values()):.2f} (start-up "
            "planning and per-pass leases weigh on its few runs a schedule)",
        ),
        Row(
            "$ a month idle: compute, DynamoDB, SQS",
            f"<= {IDLE_CORE_LIMIT:.2f}",
            r["idle_core"],
            r["idle_core"] <= IDLE_CORE_LIMIT,
            shown,
            0.0,
        ),
        Row(
            "$ a month idle: compute, DynamoDB, SQS and the signing key",
            f"<= {IDLE_WITH_KEY_LIMIT:.2f}",
            r["idle_core_with_key"],
            r["idle_core_with_key"] <= IDLE_WITH_KEY_LIMIT,
            shown,
            0.0,
        ),
    ]


def admission(quick: bool) -> list[Row]:
    rounds = "1" if quick else "3"
    path = "queued"  # the floors' names, as before the tick had one path
    command = _python("bench/admission.py", "--sizes", "10000", "--rounds", rounds)
    out, wall = _run(command)
    # "  path  schedules  tick s  occ/s  raw occ/s  ratio  min-max  traced  rss"
    [line] = [x for x in out.splitlines() if x.split()[:1] == [path]]
    fields = line.split()
    per_s = float(fields[3].replace(",", ""))
    ceiling = float(fields[4].replace(",", ""))
    ratio = float(fields[5].rstrip("%")) / 100  # the median of each round's side-by-side ratio
    shown = _shown(command)
    return [
        Row(
            f"local admission a second ({path})",
            f">= {ADMISSION_PER_S:,}",
            per_s,
            per_s >= ADMISSION_PER_S,
            shown,
            wall,
        ),
        Row(
            f"local admission, share of the raw SQLite ceiling ({path})",
            f">= {ADMISSION_RATIO:.0%}",
            ratio,
            ratio >= ADMISSION_RATIO,
            shown,
            0.0,
            f"rounds {fields[6]}; ceiling {ceiling:,.0f}/s",
        ),
    ]


def local_burst(quick: bool, baseline: dict[str, float]) -> list[Row]:
    size = "2000" if quick else "10000"
    command = _python(
        "bench/burst.py",
        "--sizes",
        size,
        "--workers",
        "8",
        "--processes",
        "2",
        "--rounds",
        "1",
    )
    out, wall = _run(command)
    # | schedules | workers | start p50 | start p99 | start max | arrival ... | deliveries/s |
    [line] = [x for x in out.splitlines() if x.startswith(f"| {int(size):,} |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    p99, per_s = float(cells[3]), float(cells[8].replace(",", ""))
    floor = f"local burst of {int(size):,}: start p99 (s)"
    before = baseline.get(floor)
    passed = None if before is None else p99 <= before * (1 + SLOWER_TOLERANCE)
    limit = "no slower" if before is None else f"<= {before * (1 + SLOWER_TOLERANCE):.2f}"
    return [
        Row(
            floor,
            limit,
            p99,
            passed,
            _shown(command),
            wall,
            f"p50 {cells[2]} s, max {cells[4]} s, {per_s:,.0f} deliveries a second",
        )
    ]


def simulated(scenario: str, args: str, label: str) -> list[Row]:
    command = _python("-m", "sim", scenario, "--json", *shlex.split(args))
    out, wall = _run(command)
    result = json.loads(out.strip().splitlines()[-1])
    p99 = result["lateness_s"]["p99"]
    faults = {
        "denied": len(result["denied_calls"]),
        "dups": result["duplicates"],
        "gaps": result["gaps"],
        "stopped": result["schedules_no_longer_planned"],
    }
    fired = sorted(n for n, a in result["alarms"].items() if a["into_alarm_s"])
    shown = _shown(command)
    return [
        Row(
            f"simulator {label}: start lateness p99 (s)",
            f"< {LATENESS_P99_S:g}",
            p99,
            p99 is not None and p99 < LATENESS_P99_S,
            shown,
            wall,
            f"p50 {result['lateness_s']['p50']}, max {result['lateness_s']['max']}; "
            f"{result['delivered']} of {result['due']} due delivered; "
            f"alarms fired: {', '.join(fired) or 'none'}",
        ),
        Row(
            f"simulator {label}: denied, duplicates, gaps, stopped",
            "all 0",
            float(sum(faults.values())),
            not any(faults.values()),
            shown,
            0.0,
            ", ".join(f"{k} {v}" for k, v in faults.items()),
        ),
    ]


def _step(name: str, step: Callable[[], list[Row]]) -> list[Row]:
    print(f"... {name}", file=sys.stderr, flush=True)
    try:
        return step()
    except StepFailed as error:
        return [Row(name, "", None, False, "", error.wall_s, f"error: {error}")]
    except Exception as error:  # a bench that no longer runs is a row, not the end
        return [Row(name, "", None, False, "", 0.0, f"error: {type(error).__name__}: {error}")]


def table(rows: list[Row], baseline: dict[str, float]) -> str:
    def number(v: float | None) -> str:
        return "-" if v is None else f"{v:,.2f}"

    out = [
        "| floor | limit | before | now | verdict | wall s | command | note |",
        "| --- | --- | ---: | ---: | --- | ---: | --- | --- |",
    ]
    for r in rows:
        verdict = {True: "pass", False: "FAIL", None: "-"}[r.passed]
        out.append(
            f"| {r.floor} | {r.limit} | {number(baseline.get(r.floor))} | {number(r.value)} "
            f"| {verdict} | {r.wall_s:.0f} | `{r.command}` | {r.note} |"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a previous run's --out: the 'before'")
    parser.add_argument("--out", type=Path, help="write every figure here as JSON")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run only")
    parser.add_argument(
        "--mixed", default=MIXED_ARGS, help=f"the simulator's mixed-day options ({MIXED_ARGS})"
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=("cost", "admission", "burst", "sim"),
        help="leave a step out (repeatable)",
    )
    args = parser.parse_args(argv)
    baseline: dict[str, float] = {}
    if args.baseline:
        before = json.loads(args.baseline.read_text())
        baseline = {r["floor"]: r["value"] for r in before["rows"] if r["value"] is not None}
    os.environ.update(
        AWS_DEFAULT_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing"
    )
    began = time.perf_counter()
    rows: list[Row] = []
    if "cost" not in args.skip:
        rows += _step("bench/cost.py", partial(cost, args.quick))
    if "admission" not in args.skip:
        rows += _step("bench/admission.py", partial(admission, args.quick))
    if "burst" not in args.skip:
        rows += _step("bench/burst.py", partial(local_burst, args.quick, baseline))
    if "sim" not in args.skip:
        mixed = "--short" if args.quick else args.mixed
        rows += _step("sim mixed-day", partial(simulated, "mixed-day", mixed, "mixed day"))
        burst, label = ("--count 500", "burst of 500") if args.quick else ("", "burst of 10,000")
        rows += _step("sim burst", partial(simulated, "burst", burst, label))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    print(f"floors, {when}, {machine}, {time.perf_counter() - began:.0f} s in all")
    print(table(rows, baseline))
    if args.out:
        args.out.write_text(
            json.dumps(
                {"when": when, "machine": machine, "rows": [asdict(r) for r in rows]}, indent=1
            )
        )
    return 0 if all(r.passed is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
