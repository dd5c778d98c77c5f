"""Admission throughput of the AWS adapters on moto in-process: what a test or
the emulator stack can expect, not what DynamoDB does.

200 schedules come due in the same minute; one tick pass (plan + dispatch, as
the handler runs it, over ``dynamo_store`` + ``SqsDeliveryQueue``) materializes,
admits and sends every occurrence. Each round starts from empty tables; the
median of the rounds is reported.

    .venv/bin/python bench/admission_moto.py
    .venv/bin/python bench/admission_moto.py --schedules 100 --rounds 5
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.moto_env import use_dummy_aws_env

use_dummy_aws_env()

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from adapters.definitions import DELIVERY_QUEUE, create_queues  # noqa: E402
from adapters.dynamodb.local import create_store_tables  # noqa: E402
from adapters.secrets import InMemorySecretStore  # noqa: E402
from bootstrap.aws import build_aws_services, build_aws_ticker  # noqa: E402
from bootstrap.settings import Settings  # noqa: E402
from handlers.api_models import definition_of as definition  # noqa: E402

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)

CAVEAT = """\
moto is a test double, not a database: TransactWriteItems deep-copies every
table it touches (146 transactions/s on an empty table, 37/s at 1,000 items,
5/s at 10,000), index queries scan the whole table and SQS receive slows with
queue depth. This figure says how fast tests and `duetime local --store
emulator` go at small sizes; it says nothing about DynamoDB's throughput."""


class BenchClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


def one_round(schedules: int) -> tuple[float, int, int, int]:
    """(seconds, materialized, admitted, sent) of the pass that admits them all."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        tables = create_store_tables(dynamodb, "bench")
        urls = create_queues(sqs, "bench")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
            delivery_queue_url=urls[DELIVERY_QUEUE.env_var],
            lookahead_s=0,  # materialize only what is due: one occurrence per schedule
        )
        clock = BenchClock(T0)
        service = build_aws_services(settings, clock=clock, secrets=InMemorySecretStore()).schedules
        for i in range(schedules):
            service.create(
                definition(
                    {
                        "name": f"bench {i}",
                        "spec": {"every": "PT1M"},
                        "target": {"type": "webhook", "url": "https://example.com/hook"},
                    }
                )
            )
        ticker = build_aws_ticker(settings, clock=clock, owner="bench").ticker
        clock.at = T0 + timedelta(seconds=60)  # every schedule's first slot
        started = time.perf_counter()
        report = ticker.tick_once()
        elapsed = time.perf_counter() - started
        return elapsed, report.plan.materialized, report.dispatch.admitted, report.dispatch.sent


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rates = []
    for n in range(args.rounds):
        elapsed, materialized, admitted, sent = one_round(args.schedules)
        if not admitted == sent == args.schedules:
            print(
                f"round {n + 1}: admitted {admitted}, sent {sent} of {args.schedules}",
                file=sys.stderr,
            )
            return 1
        rates.append(admitted / elapsed)
        print(
            f"round {n + 1}: {materialized} materialized, {admitted} admitted and sent "
            f"in {elapsed:.2f} s = {admitted / elapsed:.0f}/s"
        )
    print(
        f"\nmoto in-process, {args.schedules} schedules due at once: "
        f"{statistics.median(rates):.0f} occurrences/s materialized + admitted + sent "
        f"(median of {args.rounds}; {datetime.now(UTC).date()}, {platform.machine()}, "
        f"Python {platform.python_version()})\n"
    )
    print(CAVEAT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
