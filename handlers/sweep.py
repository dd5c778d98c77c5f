"""The dead-letter sweep on AWS: the worker function, invoked every few minutes by
EventBridge Scheduler with ``{"duetime": "sweep"}`` (infra/schedules.py).

It closes the runs whose intent SQS moved to the dead-letter queue by itself
and counts each such letter (``DeadLettered``, read by the ``DeadLettersArrived``
alarm); service/dead_letter_sweep.py says how. The worker runs it because it
already holds the grants it needs (the runs table, the DLQ), and one
ReceiveMessage every five minutes on an empty queue costs next to nothing.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict
from typing import Any, Final

from adapters.definitions import Metric
from adapters.observability import logger, metrics, put_count
from service.clock import SystemClock
from service.dead_letter_sweep import (
    DeadLetterInbox,
    Letter,
    SweepTelemetry,
    sweep_dead_letters,
)
from service.run_ports import RunStore, WorkQueue

SWEEP: Final = "sweep"


def is_sweep(event: dict[str, Any]) -> bool:
    return event.get("duetime") == SWEEP


class CountedSweep(SweepTelemetry):
    def dead_lettered(self, letter: Letter) -> None:
        put_count(Metric.DEAD_LETTERED, 1)


def inbox_of(queue: WorkQueue) -> DeadLetterInbox:
    """The dead-letter queue of the worker's delivery queue (SQS)."""
    from adapters.sqs_dead_letters import SqsDeadLetterInbox
    from adapters.sqs_worker import SqsWorkQueue

    if not isinstance(queue, SqsWorkQueue):
        raise TypeError(f"no dead-letter sweep for a {type(queue).__name__}")
    return SqsDeadLetterInbox(queue.client, queue.dlq_url)


def sweep(runs: RunStore, inbox: DeadLetterInbox) -> dict[str, Any]:
    """One sweep; its counts are its log line and its answer."""
    report = asdict(sweep_dead_letters(inbox, runs, SystemClock(), telemetry=CountedSweep()))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        metrics().flush_metrics()
    logger().info("dead-letter sweep", extra=report)
    return report
