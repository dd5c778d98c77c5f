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
the emulator) applies the same decisions: handlers/worker_local.py.

Every attempt is one JSON log line (occurrence_id, schedule_id, attempt,
status, duration_s, late_by_s, and error and status_code when there is one)
and the metrics RunAttempts, StartLateness, RunsRetried, RunsSucceeded and
RunsFailed.
"""

from __future__ import annotations

import copy
import logging
import random
import sys
import threading
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import RESERVED_LOG_ATTRS, LambdaPowertoolsFormatter
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from adapters.definitions import Metric
from adapters.targets import AddressPolicy, Targets
from adapters.targets.webhook import Exchange
from domain.delivery import TargetPort
from domain.run import DeliveryIntent, Run, RunStatus
from handlers.observability import (
    build_at_init,
    logger,
    metrics,
    on_lambda,
    put_count,
    put_seconds,
)
from handlers.settings import Settings
from handlers.sweep import inbox_of, is_sweep, sweep
from service.clock import SystemClock
from service.planning.surge import DRAIN, DRAIN_GRACE_S, PER_DRAIN
from service.ports import HOLD
from service.run_ports import (
    AttemptReport,
    QueueMessage,
    RunStore,
    RunTelemetry,
    WorkQueue,
)
from service.runs import Decision, RunWorker, WorkerConfig

# A Lambda function runs at most 15 minutes; keep one synchronous call well inside.
LAMBDA_MAX_CALL_S = 600.0


class IntentBody(BaseModel):
    """The JSON body of a delivery intent message."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    occurrence_id: str = Field(min_length=1, max_length=512)
    schedule_id: str = Field(min_length=1, max_length=128)
    version: int = Field(ge=1)
    scheduled_at: AwareDatetime
    attempt: int = Field(default=0, ge=0)

    def to_intent(self) -> DeliveryIntent:
        return DeliveryIntent(
            occurrence_id=self.occurrence_id,
            schedule_id=self.schedule_id,
            version=self.version,
            scheduled_at=self.scheduled_at,
            attempt=self.attempt,
        )


class PowertoolsTelemetry(RunTelemetry):
    """Attempts as JSON log lines, runs as CloudWatch metrics (EMF).

    Where metrics are off (``POWERTOOLS_METRICS_DISABLED``, the local stack's
    default), they are not even added: about 50 us a run in bench/burst.py.
    """

    def __init__(self) -> None:
        from aws_lambda_powertools.metrics.functions import is_metrics_disabled

        self.metrics_on = not is_metrics_disabled()

    def attempt_started(self, run: Run, late_by_s: float) -> None:
        if not self.metrics_on:
            return
        put_count(Metric.RUN_ATTEMPTS, 1)
        if run.attempts == 1:
            put_seconds(Metric.START_LATENESS, late_by_s)

    def attempt_ended(self, report: AttemptReport) -> None:
        # What an operator finds a run by and reads of it. The occurrence id
        # names the schedule, version and scheduled_at (``parse_occurrence_id``):
        # the version is not repeated, the schedule id is (the runbook filters
        # on it). An attempt without an error has no ``error`` key, one without
        # an HTTP answer no ``status_code``.
        line = {
            "occurrence_id": report.occurrence_id,
            "schedule_id": report.schedule_id,
            "attempt": report.attempt,
            "status": report.status,
            "duration_s": round(report.duration_s, 3),
            "late_by_s": round(report.late_by_s, 3),
            "error": report.error or None,
            "status_code": report.status_code,
        }
        level = logging.INFO if report.status in ("succeeded", "accepted") else logging.WARNING
        if _attempt_line(logger(), level, line):
            return
        if level == logging.INFO:
            logger().info("attempt", extra=line)
        else:
            logger().warning("attempt", extra=line)

    def run_retried(self, run: Run, delay_s: float) -> None:
        if not self.metrics_on:
            return
        put_count(Metric.RUNS_RETRIED, 1)

    def run_ended(self, run: Run) -> None:
        if not self.metrics_on:
            return
        if run.status is RunStatus.SUCCEEDED:
            put_count(Metric.RUNS_SUCCEEDED, 1)
        elif run.status is RunStatus.FAILED:
            put_count(Metric.RUNS_FAILED, 1)


class _Instant:
    """What a Powertools formatter's ``formatTime`` reads of a log record."""

    __slots__ = ("created", "msecs")

    def __init__(self, created: float) -> None:
        self.created = created
        self.msecs = (created - int(created)) * 1000


def _attempt_line(log: Logger, level: int, fields: dict[str, Any]) -> bool:
    """Write the attempt line as Powertools would, without a ``LogRecord``.

    The same keys in the same order (the formatter's own keys and their
    ``%(...)s`` templates, the message, the X-Ray trace id, then ``fields``,
    None values left out), the formatter's timestamp and JSON serializer, the
    handler's stream and lock: about 15 us a line against 35 through
    ``logging`` (bench/burst.py), at one line per attempt. Returns False when
    the logger has something this path does not reproduce (filters, another
    handler or formatter, per-thread keys, a key template it cannot fill);
    the caller then logs through Powertools."""
    inner: logging.Logger = log._logger
    if not inner.isEnabledFor(level):
        return True
    formatter = log.registered_formatter
    handler = log.registered_handler
    if (
        type(formatter) is not LambdaPowertoolsFormatter
        or type(handler) is not logging.StreamHandler
        or _handled_above(inner)
        or inner.filters
        or handler.filters
        or len(inner.handlers) != 1
        or inner.handlers[0] is not handler
        or level < handler.level
        or formatter.thread_safe_get_current_keys()
    ):
        return False
    caller = sys._getframe(1)
    now = time.time()
    values = {
        "levelname": logging.getLevelName(level),
        "funcName": caller.f_code.co_name,
        "lineno": caller.f_lineno,
        "asctime": formatter.formatTime(_Instant(now)),  # type: ignore[arg-type]
    }
    out: dict[str, Any] = {}
    try:
        for key, value in formatter.log_format.items():
            out[key] = value % values if value and key in RESERVED_LOG_ATTRS else value
    except (KeyError, TypeError, ValueError):
        return False
    out.update(fields)
    out["message"] = "attempt"
    out["xray_trace_id"] = formatter._get_latest_trace_id()
    out = {key: value for key, value in out.items() if value is not None}
    text = formatter.serialize(out)
    handler.acquire()
    try:
        handler.stream.write(text + handler.terminator)
        handler.flush()
    finally:
        handler.release()
    return True


def _handled_above(log: logging.Logger) -> bool:
    """Whether a record of ``log`` would also reach a handler of an ancestor
    (a test's log capture, an application's ``logging`` setup)."""
    current = log
    while current.propagate and current.parent is not None:
        current = current.parent
        if current.handlers:
            return True
    return False


def flush_metrics() -> None:
    """Publish what was added; a pass with nothing to report is not worth a warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        metrics().flush_metrics()


class RetryLater(Exception):
    """Reported to the batch processor so SQS delivers the message again later."""


Handled = Literal["deleted", "retry", "dead_lettered"]


def handle_message(worker: RunWorker, queue: WorkQueue, message: QueueMessage) -> Handled:
    """Parse, run and apply the decision to the message (everything but delete-on-success,
    which the caller does: SQS after a Lambda success, ``run_worker_loop`` itself)."""
    try:
        intent = IntentBody.model_validate_json(message.body).to_intent()
    except ValidationError as error:
        reason = f"not a delivery intent: {error.error_count()} error(s), first: " + (
            f"{'.'.join(str(p) for p in error.errors()[0]['loc'])} {error.errors()[0]['msg']}"
        )
        logger().error("bad message", extra={"message_id": message.message_id, "reason": reason})
        queue.dead_letter(message, reason)
        put_count(Metric.DEAD_LETTERED, 1)
        return "dead_lettered"
    # A crowded second's intent becomes visible up to HOLD before its time (its
    # delay rounded down, so the surge's drains start it on time): held until then.
    early_s = (intent.scheduled_at - worker.clock.now()).total_seconds()
    if 0 < early_s <= HOLD.total_seconds():
        time.sleep(early_s)
    decision = worker.handle(intent, message.receive_count)
    return apply(decision, queue, message, intent)


def apply(
    decision: Decision, queue: WorkQueue, message: QueueMessage, intent: DeliveryIntent
) -> Handled:
    if decision.action == "retry":
        if queue.retry_later(message, decision.delay_s):
            return "deleted"  # a new, delayed message carries the intent now
        return "retry"
    if decision.action == "dead_letter":
        logger().warning(
            "dead-lettered",
            extra={"occurrence_id": intent.occurrence_id, "reason": decision.reason},
        )
        queue.dead_letter(message, decision.reason)
        put_count(Metric.DEAD_LETTERED, 1)
        return "dead_lettered"
    return "deleted"


# --- AWS -----------------------------------------------------------------------------------

# Kept back from the function's remaining time: recording the last outcome,
# the partial batch response and the metric flush happen in it.
INVOCATION_MARGIN_S = 10.0
# The least time a record's target call is given, however late in the invocation.
MIN_CALL_S = 1.0
# A drain's receives: SQS's most per request, and the pause after an empty one.
MAX_RECEIVE = 10
DRAIN_POLL_S = 0.1


@dataclass(frozen=True)
class AwsWorkerParts:
    """What a Lambda container builds once and keeps for its invocations:
    the run store, the targets (with their clients) and the queue."""

    runs: RunStore
    targets: TargetPort
    queue: WorkQueue


def build_aws_parts(
    settings: Settings,
    *,
    address_policy: AddressPolicy | None = None,
    held_visibility_s: float | None = None,
    webhook_exchange: Exchange | None = None,
) -> AwsWorkerParts:
    """The clients and adapters of the worker on AWS, from the deployment's settings.
    ``webhook_exchange`` replaces the webhook's HTTP exchange (the deployment simulator)."""
    import boto3

    from adapters.dynamodb.runs import DynamoRunStore
    from adapters.sealing import aws_header_seal
    from adapters.secrets import CachedSecretStore, aws_secret_store
    from adapters.sqs_worker import SqsWorkQueue
    from adapters.targets.aws import control_client_config, lambda_client_config

    session = boto3.session.Session()
    policy = address_policy or settings.address_policy()
    secrets = CachedSecretStore(
        aws_secret_store(
            settings.secret_store,
            settings.secrets_prefix,
            lambda service: session.client(service, config=control_client_config()),
            table=settings.secrets_table,
        )
    )
    targets = Targets.for_deployment(
        secrets,
        policy,
        sqs_client=session.client("sqs", config=control_client_config()),
        lambda_client=session.client("lambda", config=lambda_client_config()),
        events_client=session.client("events", config=control_client_config()),
        webhook_exchange=webhook_exchange,
    )
    queue = SqsWorkQueue.from_urls(
        settings.delivery_queue_url,
        settings.delivery_dlq_url,
        client=session.client("sqs", config=control_client_config()),
        visibility_timeout_s=held_visibility_s,
    )
    # Webhook header values are sealed at rest; the worker opens them to deliver.
    seal = aws_header_seal(
        settings.secret_store,
        settings.secrets_prefix,
        lambda service: session.client(service, config=control_client_config()),
    )
    runs = DynamoRunStore.from_settings(settings, session, seal=seal)
    return AwsWorkerParts(runs, targets, queue)


def build_aws_worker(
    settings: Settings,
    *,
    address_policy: AddressPolicy | None = None,
    held_visibility_s: float | None = None,
    webhook_exchange: Exchange | None = None,
    rng: random.Random | None = None,
) -> tuple[RunWorker, WorkQueue]:
    """The worker over DynamoDB and SQS, built from the deployment's settings.

    ``address_policy`` replaces the deployment's webhook address rule; the
    local stack over the emulator passes ``AddressPolicy.local()``.
    ``held_visibility_s`` is for a worker pool with a heartbeat (the local
    stack over the emulator): each receive hides a message that long, and an
    attempt's run lease is that short, both extended while the run is in
    flight. Lambda leaves it unset: the queue's visibility and a lease that
    covers the whole call. ``webhook_exchange`` and ``rng`` (the retry back-off's
    draws) are for the deployment simulator.
    """
    parts = build_aws_parts(
        settings,
        address_policy=address_policy,
        held_visibility_s=held_visibility_s,
        webhook_exchange=webhook_exchange,
    )
    return _run_worker(parts, held_visibility_s, rng), parts.queue


def _run_worker(
    parts: AwsWorkerParts, held_lease_s: float | None = None, rng: random.Random | None = None
) -> RunWorker:
    return RunWorker(
        parts.runs,
        parts.targets,
        SystemClock(),
        rng or random.Random(),
        telemetry=PowertoolsTelemetry(),
        config=WorkerConfig(max_call_s=LAMBDA_MAX_CALL_S, held_lease_s=held_lease_s),
    )


# The worker of this Lambda container, built once and kept: on Lambda by the init
# phase (``init_container``, this module's last statement), elsewhere by the first
# invocation (importing the module reads no environment then).
_container_worker: tuple[RunWorker, WorkQueue] | None = None


def container_worker() -> tuple[RunWorker, WorkQueue]:
    global _container_worker
    if _container_worker is None:
        _container_worker = build_aws_worker(Settings.from_env())
    return _container_worker


def init_container() -> None:
    """What Lambda's init phase runs after the imports: this container's worker and
    its clients, built before the first message arrives."""
    build_at_init(container_worker, "the worker")


class _LockedTelemetry(RunTelemetry):
    """Telemetry shared by the records of one batch, one report at a time."""

    def __init__(self, inner: RunTelemetry) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def attempt_started(self, run: Run, late_by_s: float) -> None:
        with self._lock:
            self._inner.attempt_started(run, late_by_s)

    def attempt_ended(self, report: AttemptReport) -> None:
        with self._lock:
            self._inner.attempt_ended(report)

    def run_retried(self, run: Run, delay_s: float) -> None:
        with self._lock:
            self._inner.run_retried(run, delay_s)

    def run_ended(self, run: Run) -> None:
        with self._lock:
            self._inner.run_ended(run)


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
    per_invocation.telemetry = _LockedTelemetry(worker.telemetry)
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
    """One drain of a surge (service/surge.py): wait until ``HOLD`` before the instant
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
