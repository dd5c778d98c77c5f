"""The worker: SQS delivers delivery intents, each one runs (or not) and gets a decision.

On AWS, ``handler`` consumes the delivery queue with Powertools'
``BatchProcessor`` and reports partial batch failures; the records of a batch
run at once, one thread each, every target call bounded by the time the
invocation has left, so one bad or slow message never fails or delays the
rest (a record still running when the invocation must answer is reported
failed and comes back). The clients are built once per container.

- a finished run (or a duplicate of one): success, SQS deletes the message;
- a retry: a new message with the intent, delayed by the wait (at most 900 s;
  a longer wait is a chain of them), and the record is reported as a success
  so SQS removes this one (``WorkQueue.retry_later``; the SQLite queue hides
  the message instead, and its record is reported failed);
- a run failed for good (a permanent error, attempts exhausted): recorded as
  failed with its reason, and the message deleted like a finished run's;
- a message that cannot be run (bad body, unknown occurrence): the body goes
  to the DLQ with the reason (counted: ``DeadLettered``), and the record is
  reported as a success so SQS removes it;
- ``{"duetime": "sweep"}`` (EventBridge Scheduler, every few minutes): the
  dead-letter sweep (handlers/sweep.py);
- anything unexpected (the store is down): the record is reported failed and
  comes back after the queue's visibility timeout.

The local stack's worker loop (threads over the SQLite queue, or SQS over
the emulator) applies the same decisions: cli/worker_pool.py.

Every attempt is one JSON log line (occurrence_id, schedule_id, attempt,
status, duration_s, late_by_s, and error and status_code when there is one)
and the metrics RunAttempts, StartLateness, RunsRetried, RunsSucceeded and
RunsFailed.
"""

from __future__ import annotations

import copy
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from adapters.observability import build_at_init, logger, on_lambda
from adapters.telemetry import LockedTelemetry, PowertoolsTelemetry, flush_metrics
from bootstrap.aws import build_aws_worker
from bootstrap.settings import Settings
from handlers.intents import Handled, RetryLater, handle_message
from handlers.sweep import inbox_of, is_sweep, sweep
from service.planning.surge import DRAIN, DRAIN_GRACE_S, PER_DRAIN
from service.ports import HOLD
from service.run_ports import QueueMessage, WorkQueue
from service.runs import RunWorker

# Kept back from the function's remaining time: recording the last outcome,
# the partial batch response and the metric flush happen in it.
INVOCATION_MARGIN_S = 10.0
# The least time a record's target call is given, however late in the invocation.
MIN_CALL_S = 1.0
# A drain's receives: SQS's most per request, and the pause after an empty one.
MAX_RECEIVE = 10
DRAIN_POLL_S = 0.1


# The worker of this Lambda container, built once and kept: on Lambda by the init
# phase (``init_container``, this module's last statement), elsewhere by the first
# invocation (importing the module reads no environment then). Its clients come
# from the composition root (bootstrap/aws.py); its telemetry is this container's.
_container_worker: tuple[RunWorker, WorkQueue] | None = None


def container_worker() -> tuple[RunWorker, WorkQueue]:
    global _container_worker
    if _container_worker is None:
        _container_worker = build_aws_worker(Settings.from_env(), telemetry=PowertoolsTelemetry())
    return _container_worker


def init_container() -> None:
    """What Lambda's init phase runs after the imports: this container's worker and
    its clients, built before the first message arrives."""
    build_at_init(container_worker, "the worker")


def invocation_budget_s(context: Any) -> float | None:
    """The time this invocation may spend on its records (None: no deadline known)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    return max(MIN_CALL_S, float(remaining()) / 1000 - INVOCATION_MARGIN_S)


def bounded(worker: RunWorker, budget_s: float | None) -> RunWorker:
    """The worker for one invocation: each target call bounded by the budget,
    telemetry safe to share between the batch's threads."""
    config = worker.config
    if budget_s is not None:
        cap = budget_s if config.max_call_s is None else min(config.max_call_s, budget_s)
        config = replace(config, max_call_s=cap)
    per_invocation = copy.copy(worker)
    per_invocation.config = config
    per_invocation.telemetry = LockedTelemetry(worker.telemetry)
    return per_invocation


class NotFinishedInTime(Exception):
    """A record still running when the invocation had to answer: it comes back."""


def release_unfinished(queue: WorkQueue, receipts: list[str]) -> None:
    """Make the messages of records still running when the invocation must answer
    visible again at once, rather than after the queue's visibility timeout: the
    attempt in flight holds its run lease, so whoever receives one next waits
    for that lease (``RunWorker.handle``) and takes over only if it ran out. A
    record that failed (the store down) keeps the queue's timeout, so a fault
    does not spin a message through its receives."""
    if not receipts:
        return
    try:
        queue.change_visibility_batch(receipts, 0.0)
    except Exception:  # they come back after the visibility timeout instead
        logger().exception("unfinished messages not released", extra={"count": len(receipts)})


def handler(
    event: dict[str, Any],
    context: Any,
    worker: RunWorker | None = None,
    queue: WorkQueue | None = None,
) -> dict[str, Any]:
    """Run the batch's records at once, one thread each, within the function's
    time: each target call is bounded by the remaining time less a margin, and
    a record still running at that deadline is reported failed (SQS brings it
    back), so the partial batch response is always sent before the function
    times out."""
    if worker is None or queue is None:
        worker, queue = container_worker()
    budget_s = invocation_budget_s(context)
    if event.get("duetime") == DRAIN:
        return drain(event, worker, queue, budget_s)
    if is_sweep(event):
        return sweep(worker.runs, inbox_of(queue))
    deadline = None if budget_s is None else time.monotonic() + budget_s
    run = bounded(worker, budget_s)
    records = event.get("Records") or []

    def handle(record: dict[str, Any]) -> Handled:
        sqs_record = SQSRecord(record)
        message = QueueMessage(
            message_id=sqs_record.message_id,
            receipt=sqs_record.receipt_handle,
            body=sqs_record.body,
            receive_count=int(sqs_record.attributes.approximate_receive_count or 1),
        )
        return handle_message(run, queue, message)

    pool = ThreadPoolExecutor(max_workers=max(1, len(records)), thread_name_prefix="record")
    futures = {record.get("messageId"): pool.submit(handle, record) for record in records}
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def record_handler(record: SQSRecord) -> str:
        future = futures[record.message_id]
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            handled = future.result(timeout=timeout)
        except FutureTimeout:
            logger().warning("record not finished in time", extra={"id": record.message_id})
            release_unfinished(queue, [record.receipt_handle])
            raise NotFinishedInTime(record.message_id) from None
        if handled == "retry":
            raise RetryLater(record.message_id)
        return handled

    try:
        response = process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
        return dict(response)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        flush_metrics()


def drain(
    event: dict[str, Any], worker: RunWorker, queue: WorkQueue, budget_s: float | None
) -> dict[str, Any]:
    """One drain of a surge (service/planning/surge.py): wait until ``HOLD`` before the instant
    the event names, then receive from the delivery queue and run up to ``limit`` messages, ten at a
    time as they arrive, each on its own thread, as the mapping's batches run. It
    ends once it took its share, or the queue stayed empty ``DRAIN_GRACE_S`` past
    the instant, or its time is nearly up; what it leaves, the mapping delivers."""
    at = datetime.fromisoformat(str(event["at"]))
    limit = max(1, int(event.get("limit") or PER_DRAIN))
    started = time.monotonic()
    deadline = None if budget_s is None else started + budget_s
    # Awake HOLD before the instant: its intents may become visible from then on
    # (sent early, see service/ports.py), and each is held until its own time.
    early_s = (at - HOLD - datetime.now(UTC)).total_seconds()
    if early_s > 0:
        time.sleep(early_s)
    # Each target call is bounded by what is left after the wait.
    left_s = None if deadline is None else max(MIN_CALL_S, deadline - time.monotonic())
    worker = bounded(worker, left_s)
    to_instant_s = (at - datetime.now(UTC)).total_seconds()
    quiet_until = time.monotonic() + max(0.0, to_instant_s + DRAIN_GRACE_S)
    futures: dict[str, Future[Handled]] = {}
    pool = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="drain")
    try:
        while len(futures) < limit and (deadline is None or time.monotonic() < deadline):
            messages = queue.receive(min(MAX_RECEIVE, limit - len(futures)), 0)
            for message in messages:
                futures[message.receipt] = pool.submit(handle_message, worker, queue, message)
            if not messages:
                if time.monotonic() >= quiet_until:
                    break
                time.sleep(DRAIN_POLL_S)
        done: list[str] = []
        unfinished: list[str] = []
        counts = {"deleted": 0, "retry": 0, "dead_lettered": 0, "unfinished": 0}
        for receipt, future in futures.items():
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                handled = future.result(timeout=timeout)
            except FutureTimeout:
                logger().warning("drained message not finished in time")
                counts["unfinished"] += 1
                unfinished.append(receipt)
                continue
            except Exception:  # a failure: the message comes back after its visibility
                logger().exception("drained message not handled")
                counts["unfinished"] += 1
                continue
            counts[handled] += 1
            if handled == "deleted":
                done.append(receipt)
        if done:
            queue.delete_batch(done)
        release_unfinished(queue, unfinished)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        flush_metrics()
    logger().info("drain", extra={"at": at.isoformat(), "received": len(futures), **counts})
    return {"received": len(futures), **counts}


if on_lambda():
    init_container()
