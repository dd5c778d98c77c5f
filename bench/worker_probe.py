"""The worker function as deployed, in a process of its own: its CPU time and memory.

``bench/cost.py`` starts this script with ``AWS_ENDPOINT_URL`` pointing at a
moto server in its own process and a webhook receiver that answers after a
fixed delay, so everything this process spends is the worker's: importing
``handlers.worker`` and building its clients (a cold start), then one
``handler`` invocation per batch of up to 10 messages, each record through
the real webhook sender (signing secret from Secrets Manager, HMAC, HTTP).

    python bench/worker_probe.py '<settings JSON>' <result path> <report fd>

Each line on standard input is a phase: the instant the queued intents are
due (ISO 8601). The script receives the messages on the queue the way
Lambda's event source mapping does (not counted: Lambda's pollers make those
calls), invokes the handler for each batch, and when the queue is empty
writes the line ``drained`` to the report file descriptor. The first phase
finds a cold worker (each schedule's secret and version read once), the
next ones a warm one. At the end of input it writes to ``<result path>`` as
JSON: the cold start's CPU seconds and resident memory, then per invocation
its phase, record count, CPU seconds (user + system, all threads), wall
seconds and the worker's AWS requests by operation, and the peak resident
memory. Its standard output is what the function would log.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

INIT_STARTED = resource.getrusage(resource.RUSAGE_SELF)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def cpu_s(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    """This process's peak resident memory (``VmHWM``: unlike ``ru_maxrss``, not
    inherited from the parent that forked it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class FixedClock:
    """The bench's clock: the instant the intents are due."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 140_000


def _record(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": message["Attributes"]["ApproximateReceiveCount"]},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
    }


def count_requests(calls: Counter[str]) -> None:
    """Count every AWS request any client of this process makes, by operation."""
    from botocore.client import BaseClient

    lock = threading.Lock()
    make_api_call = BaseClient._make_api_call

    def counted(self: Any, operation_name: str, api_params: Any) -> Any:
        with lock:
            calls[operation_name] += 1
        return make_api_call(self, operation_name, api_params)

    BaseClient._make_api_call = counted  # type: ignore[method-assign]


def main(settings_json: str, result_path: str, report_fd: int) -> None:
    # The cold start: what Lambda's init runs (the module) and what the first
    # invocation builds once (the clients).
    import random

    from adapters.targets import AddressPolicy
    from handlers import worker as worker_handler
    from handlers.settings import Settings
    from service.runs import RunWorker, WorkerConfig

    settings = Settings.model_validate_json(settings_json)
    parts = worker_handler.build_aws_parts(settings, address_policy=AddressPolicy.local())
    clock = FixedClock(datetime.now(UTC))
    worker = RunWorker(
        parts.runs,
        parts.targets,
        clock,
        random.Random(0),
        telemetry=worker_handler.PowertoolsTelemetry(),
        config=WorkerConfig(max_call_s=worker_handler.LAMBDA_MAX_CALL_S),
    )
    init = resource.getrusage(resource.RUSAGE_SELF)
    result: dict[str, Any] = {
        "init_cpu_s": cpu_s(init) - cpu_s(INIT_STARTED),
        "init_rss_mb": peak_rss_mb(),
        "invocations": [],
    }

    import boto3

    calls: Counter[str] = Counter()
    count_requests(calls)
    sqs = boto3.client("sqs")  # the event source mapping's, not the function's
    report = os.fdopen(report_fd, "w")
    for phase, line in enumerate(sys.stdin):
        clock.at = datetime.fromisoformat(line.strip())
        while True:
            answer = sqs.receive_message(
                QueueUrl=settings.delivery_queue_url,
                MaxNumberOfMessages=10,
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            )
            messages = answer.get("Messages", [])
            if not messages:
                break
            event = {"Records": [_record(m) for m in messages]}
            calls.clear()
            before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            response = worker_handler.handler(event, Context(), worker=worker, queue=parts.queue)
            wall = time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_SELF)
            failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
            result["invocations"].append(
                {
                    "phase": phase,
                    "records": len(messages),
                    "failed": len(failed),
                    "cpu_s": cpu_s(after) - cpu_s(before),
                    "wall_s": wall,
                    "calls": dict(calls),
                }
            )
            done = [m for m in messages if m["MessageId"] not in failed]
            if done:
                sqs.delete_message_batch(
                    QueueUrl=settings.delivery_queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                        for i, m in enumerate(done)
                    ],
                )
        sys.stdout.flush()
        report.write("drained\n")
        report.flush()
    sys.stdout.flush()
    result["peak_rss_mb"] = peak_rss_mb()
    Path(result_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
