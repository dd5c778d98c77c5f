"""What duetime costs on AWS per million runs, from counted requests.

N schedules (every minute) each run a few slots end to end on moto in-process,
through the same code the Lambda functions run: the tick (``run_tick``: plan,
admit, send over ``dynamo_store`` + ``SqsDeliveryQueue``), then the worker
handler (``handlers.worker.handler`` over ``DynamoRunStore`` + ``SqsWorkQueue``)
fed by a stand-in for Lambda's SQS event source mapping (receive up to 10,
invoke, delete the successes in one batch), with a target that succeeds at
once. botocore's event system counts every AWS request by service and
operation, and for each DynamoDB write looks at the item before and after
(through a second, uncounted client) to count the write units it implies:

- table writes: the larger of the item before and after, in 1 KB units
  (a TransactWriteItems item counts double); a refused conditional write
  still costs the item it was checked against;
- index writes: per index, a record entering or leaving it is one write, a
  key change two (delete + put), and any change to a record inside an
  ``ALL``-projection index one more write, each in 1 KB units of the item;
- reads: GetItem and BatchGetItem by item size, Query by the size of the
  items it returned (filtered-out items are not seen here, so a filtered
  query is under-counted), in 4 KB units, halved when eventually consistent.

The worker's duration is modelled per invocation: its records run at once,
so a batch lasts its longest record's AWS calls (``AWS_CALL_MS`` each) and
target call (``TARGET_MS``), plus the batch's CPU time at the function's
share of a vCPU. That CPU time, the function's memory and its output are
measured by running the worker function in a process of its own
(``bench/worker_probe.py``) against a moto server and a webhook receiver
answering in ``TARGET_MS``, both on 127.0.0.1 in this process. The report
gives $ per million runs by service, for runs in batches as measured and for
runs that come due alone (batches of one), against the floor: the fewest
writes that record every state a run must record (admitted, started,
finished) and the least of everything else a queued, batched delivery needs.

Then an idle tick invocation (one pass with nothing due, as deployed) and an
idle watchdog invocation give the fixed cost of a deployment, which does not
depend on how many runs there are; each one's duration is modelled as its
AWS requests times ``AWS_CALL_MS`` plus ``TICK_PASS_MS`` of Python. The
custom metrics an idle deployment is billed for are the ones those two
invocations print (EMF); CloudWatch bills a metric for the hours it
receives data.

The tick queues intents ahead of their time (DelaySeconds); moto's SQS delays
run on the wall clock, not on this script's clock, so the run phase holds
each intent in the script until its due second, then sends it (without the
delay) and runs the worker on a clock set to that second: every slot runs at
its own time, as the queue would release it (``Held`` in bench/cost_runs.py). Each steady-state
row also prints its requests and units a run by request and call site.

    .venv/bin/python bench/cost.py                      # 100 schedules x 3 slots
    .venv/bin/python bench/cost.py --schedules 50 --slots 2
    .venv/bin/python bench/cost.py --every 60 --every 300 --every 3600

``--every SECONDS`` (repeatable) adds the steady state per cadence: schedules
of that cadence, after a warm-up that hands every one to its chain, over many
passes, DynamoDB write and read units a run, with the schedules due together
and spread; $ a million runs all in adds the main run's SQS, Lambda and logs a
run to each cadence's DynamoDB.

Prices are list prices (us-east-1, on demand, no free tier) as read on the
date in ``PRICES_READ_ON``; prices change, so check the pricing pages.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

for _name, _value in {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_SERVICE_NAME": "duetime",
    "POWERTOOLS_METRICS_NAMESPACE": "duetime",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}.items():
    os.environ[_name] = _value
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)

from bench.cost_model import model  # noqa: E402
from bench.cost_report import report  # noqa: E402
from bench.cost_runs import infra_numbers, measure  # noqa: E402
from bench.prices import PROBE_SCHEDULES  # noqa: E402
from bench.probe import probe_worker, summarize_probe  # noqa: E402
from bench.steady import breakdown_report, steady_report, steady_state  # noqa: E402


class NothingMeasured(RuntimeError):
    """The bench's runs did not succeed: no figure to report."""


def run_model(
    schedules: int = 100, slots: int = 3
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Measure on moto, probe the worker, and model: (measured, infra, modelled), what
    ``report`` prints (bench/floors.py reads the same figures)."""
    infra = infra_numbers()
    measured = measure(schedules, slots, infra["worker_batch"])
    if measured["runs"] == 0:
        raise NothingMeasured("no run succeeded: nothing to divide by")
    measured["runs_per_batch"] = measured["runs"] / measured["invocations"]
    measured["probe"] = summarize_probe(probe_worker(PROBE_SCHEDULES))
    if measured["probe"]["failed"]:
        raise NothingMeasured("the worker probe's runs did not all succeed")
    return measured, infra, model(measured, infra)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=100)
    parser.add_argument("--slots", type=int, default=3)
    parser.add_argument(
        "--every",
        type=int,
        action="append",
        default=[],
        metavar="SECONDS",
        help="add the steady state of schedules of this cadence (repeatable)",
    )
    parser.add_argument("--steady-schedules", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        measured, infra, modelled = run_model(args.schedules, args.slots)
    except NothingMeasured as error:
        print(error, file=sys.stderr)
        return 1
    print(report(measured, infra, modelled))
    if args.every:
        rows = [
            steady_state(every, args.steady_schedules, infra["worker_batch"], spread=spread)
            for every in args.every
            for spread in (False, True)
        ]
        print(steady_report(rows, modelled))
        print(breakdown_report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
