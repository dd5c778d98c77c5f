"""Watchdog throughput on moto in-process: schedules judged per second by one
pass (list a page, read each schedule's newest runs, record its verdict),
over ``dynamo_store``. It says what a test or the emulator stack can expect and
how the paging behaves, not what DynamoDB does: on AWS each verdict is a
query and a put of a few milliseconds each, so budget from those.

Each round starts from empty tables holding ``--schedules`` schedules with
one succeeded run each; the median of the rounds is reported.

    .venv/bin/python bench/watchdog_moto.py
    .venv/bin/python bench/watchdog_moto.py --schedules 100 --rounds 5
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.moto_env import use_dummy_aws_env

use_dummy_aws_env()

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from adapters.dynamodb.local import create_store_tables  # noqa: E402
from bootstrap.aws import build_aws_watchdog  # noqa: E402
from bootstrap.settings import Settings  # noqa: E402
from domain.run import RunStatus  # noqa: E402
from tests.conftest import FakeClock, build_occurrence, build_schedule  # noqa: E402

CREATED = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
CHECKED = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def one_round(schedules: int, round_no: int) -> tuple[float, int]:
    with mock_aws():
        client = boto3.client("dynamodb")
        tables = create_store_tables(client, f"wd{round_no}")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
        )
        # The watchdog as its function builds it, on the emulated tables.
        watchdog = build_aws_watchdog(settings, clock=FakeClock(CHECKED))
        store = watchdog.store
        for _ in range(schedules):
            schedule = build_schedule(CREATED, spec={"cron": "0 9 * * *"})
            store.schedules.create(schedule)
            run = build_occurrence(schedule, datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
            store.records.insert([replace(run, status=RunStatus.SUCCEEDED)])
        started = time.perf_counter()
        report = watchdog.run(lambda: 60.0)
        elapsed = time.perf_counter() - started
        return elapsed, report.judged


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rates = []
    for n in range(args.rounds):
        elapsed, judged = one_round(args.schedules, n)
        if judged != args.schedules:
            raise SystemExit(f"judged {judged} of {args.schedules}")
        rates.append(judged / elapsed)
    print(
        f"watchdog on moto: {args.schedules} schedules, {args.rounds} rounds, "
        f"median {statistics.median(rates):.0f} judged/s "
        f"(min {min(rates):.0f}, max {max(rates):.0f}); "
        f"python {platform.python_version()}, {platform.machine()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
