"""Next-occurrence throughput: duetime against cronsim and croniter, side by side.

For each expression, each library computes N successive next occurrences in
America/New_York from the same start; the three run interleaved, round after
round, so machine noise hits them alike. Reported: the median calls per
second of each, and duetime's ratio to each (target: >= 0.7x cronsim and
>= 2x croniter on every expression).

    .venv/bin/python bench/recurrence.py [--rounds 7] [--calls 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from croniter import croniter
from cronsim import CronSim

from domain.spec import DstPolicy, parse_spec, slots_after

EXPRESSIONS = [
    "*/15 * * * *",
    "30 6 * * 1",
    "0 9 * * 1-5",
    "0 0 13 * 5",
    "0 0 1 1 *",
    "0 0 29 2 *",
    "*/5 9-17 * * MON-FRI",
    "0 */2 * * *",
    "0 0 1,15 * *",
    "0 0 L * *",
]
ZONE = "America/New_York"
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def duetime_calls(expr: str, n: int) -> Callable[[], None]:
    spec = parse_spec({"cron": expr, "time_zone": ZONE}, created_at=START)

    def run() -> None:
        it = slots_after(spec, DstPolicy(), START)
        for _ in range(n):
            next(it)

    return run


def cronsim_calls(expr: str, n: int) -> Callable[[], None]:
    start = START.astimezone(ZoneInfo(ZONE))

    def run() -> None:
        it: Iterator[datetime] = CronSim(expr, start)
        for _ in range(n):
            next(it)

    return run


def croniter_calls(expr: str, n: int) -> Callable[[], None]:
    start = START.astimezone(ZoneInfo(ZONE))

    def run() -> None:
        it = croniter(expr, start)
        for _ in range(n):
            it.get_next(datetime)

    return run


LIBRARIES = {"duetime": duetime_calls, "cronsim": cronsim_calls, "croniter": croniter_calls}


def calls_for(expr: str, base: int) -> int:
    # Rare expressions (a leap day, New Year) walk years per call; fewer calls
    # keep them inside cronsim's 50-year horizon and the run short.
    if expr in ("0 0 29 2 *",):
        return 10
    if expr in ("0 0 1 1 *",):
        return 40
    return base


def measure(rounds: int, base_calls: int) -> list[dict[str, Any]]:
    results = []
    for expr in EXPRESSIONS:
        n = calls_for(expr, base_calls)
        runners = {name: make(expr, n) for name, make in LIBRARIES.items()}
        rates: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(rounds):
            for name, run in runners.items():
                began = time.perf_counter()
                run()
                rates[name].append(n / (time.perf_counter() - began))
        medians = {name: statistics.median(values) for name, values in rates.items()}
        results.append(
            {
                "expression": expr,
                "calls": n,
                "median_per_s": medians,
                "vs_cronsim": medians["duetime"] / medians["cronsim"],
                "vs_croniter": medians["duetime"] / medians["croniter"],
            }
        )
    return results


def render(results: list[dict[str, Any]], rounds: int) -> str:
    lines = [
        f"python {platform.python_version()} on {platform.machine()}, "
        f"{rounds} rounds, zone {ZONE}; medians of next() calls per second",
        "",
        "| expression | duetime | cronsim | croniter | duetime/cronsim | duetime/croniter |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        m = r["median_per_s"]
        lines.append(
            f"| `{r['expression']}` | {m['duetime']:,.0f} | {m['cronsim']:,.0f} | "
            f"{m['croniter']:,.0f} | {r['vs_cronsim']:.2f}x | {r['vs_croniter']:.2f}x |"
        )
    worst_cronsim = min(r["vs_cronsim"] for r in results)
    worst_croniter = min(r["vs_croniter"] for r in results)
    lines += [
        "",
        f"lowest duetime/cronsim: {worst_cronsim:.2f}x (target >= 0.70x); "
        f"lowest duetime/croniter: {worst_croniter:.2f}x (target >= 2.00x)",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = measure(args.rounds, args.calls)
    print(json.dumps(results, indent=2) if args.json else render(results, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
