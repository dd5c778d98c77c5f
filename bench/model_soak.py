"""The model-based campaign at length: the state machine of tests/model over
SQLite (and a share over DynamoDB + SQS on moto) for many examples.

    python bench/model_soak.py --examples 20000            # make soak-model
    python bench/model_soak.py --examples 2000 --max-minutes 10 --json
    python bench/model_soak.py --moto-every 1 --max-minutes 30   # every chunk on moto, GSIs lagging
    python bench/model_soak.py --moto-every 1 --no-index-lag     # the same, GSIs current

Runs hypothesis in chunks, each with fresh random seeds, until the examples
are reached or the time is up, and prints examples, steps, faults by kind and
violations (each violation found is printed with its shrunk replay). Exits
non-zero when a promise was broken.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "CRITICAL")
for name, value in {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}.items():
    os.environ.setdefault(name, value)

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from tests.model.faults import STATS  # noqa: E402
from tests.model.test_model import DynamoMachine, SqliteMachine  # noqa: E402


def _replay(error: BaseException) -> str:
    """The violation and its shrunk replay. A failure hypothesis could not
    replay (a flaky one) is a group: each failure in it is shown, so the
    promise that broke is named even when the replay is not."""
    notes = getattr(error, "__notes__", [])
    lines = [line for line in notes if "promises_hold()" not in line]
    text = f"{type(error).__name__}: {error}\n" + "\n".join(lines)
    for inner in getattr(error, "exceptions", ()):
        text += "\n  within it: " + _replay(inner).replace("\n", "\n  ")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=30, help="steps per example")
    parser.add_argument("--chunk", type=int, default=250, help="examples per hypothesis run")
    parser.add_argument(
        "--moto-every", type=int, default=20, help="one chunk in N runs on moto (0: never)"
    )
    parser.add_argument("--max-minutes", type=float, default=0, help="stop after (0: no limit)")
    parser.add_argument(
        "--no-index-lag",
        action="store_true",
        help="on moto, keep the secondary indexes current (they lag by default)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    if args.no_index_lag:
        DynamoMachine.index_lag = False

    started = time.monotonic()
    deadline = started + args.max_minutes * 60 if args.max_minutes > 0 else None
    violations: list[str] = []
    chunks = 0
    by_store = {"sqlite": 0, "dynamodb": 0}
    while STATS["examples"] < args.examples:
        if deadline is not None and time.monotonic() >= deadline:
            break
        on_moto = args.moto_every > 0 and chunks % args.moto_every == args.moto_every - 1
        machine: Any = DynamoMachine if on_moto else SqliteMachine
        size = max(1, args.chunk // 10) if on_moto else args.chunk
        before = STATS["examples"]
        try:
            run_state_machine_as_test(
                machine,
                settings=settings(
                    max_examples=size,
                    stateful_step_count=args.steps if not on_moto else min(args.steps, 20),
                    deadline=None,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                ),
            )
        except Exception as error:  # a broken promise, shrunk
            violations.append(_replay(error))
            print(f"--- violation ({'dynamodb' if on_moto else 'sqlite'}) ---", flush=True)
            print(violations[-1], flush=True)
        by_store["dynamodb" if on_moto else "sqlite"] += STATS["examples"] - before
        chunks += 1
        print(
            f"{STATS['examples']} examples, {STATS['steps']} steps, "
            f"{len(violations)} violations, {time.monotonic() - started:.0f} s",
            flush=True,
        )
    summary = {
        "examples": STATS["examples"],
        "examples_by_store": by_store,
        "steps": STATS["steps"],
        "faults": {
            k.removeprefix("fault: "): v for k, v in sorted(STATS.items()) if k.startswith("fault")
        },
        "violations_found": len(violations),
        "violation_checks_failed": {
            k.removeprefix("violation: "): v
            for k, v in sorted(STATS.items())
            if k.startswith("violation")
        },
        "seconds": round(time.monotonic() - started, 1),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"examples     {summary['examples']}  ({by_store})")
        print(f"steps        {summary['steps']}")
        for kind, count in summary["faults"].items():
            print(f"fault        {kind:<32} {count}")
        print(f"violations   {len(violations)}")
        for kind, count in summary["violation_checks_failed"].items():
            print(f"  failed     {kind:<32} {count} (checks, shrinking included)")
        print(f"seconds      {summary['seconds']}")
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
