"""The application on AWS: every part over DynamoDB, SQS and the AWS targets,
from a deployment's ``Settings``.

A Lambda handler calls its builder once per container, in the init phase
(``adapters.observability.build_at_init``), and keeps what it returns; the
local stack over the emulator and the deployment simulator call the same
builders. What a handler's own module must do (its log lines and metrics,
its thread pools) comes in as parameters, so each container keeps its own.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from adapters.secrets import SecretStore
from adapters.targets.addresses import AddressPolicy
from bootstrap.parts import ApiServices, PlanNow, Ticker, new_owner, partitioning, tick_config
from bootstrap.settings import Settings
from domain.delivery import TargetPort
from service.clock import SystemClock
from service.planning.surge import TICK_RECORD_MIN, LoadRecordingQueue, Surges
from service.ports import Clock, DeliveryQueue
from service.run_ports import RunStore, RunTelemetry, WorkQueue
from service.run_views import DeadLetters, RunViews
from service.runs import RunReports, RunWorker, WorkerConfig
from service.schedules import ScheduleService, TargetSupport
from service.watchdog import Watchdog

if TYPE_CHECKING:
    from adapters.dynamodb.store import DynamoPorts
    from adapters.targets.webhook import Exchange
    from service.alerts import Alerting

# A Lambda function runs at most 15 minutes; keep one synchronous call well inside.
LAMBDA_MAX_CALL_S: Final = 600.0
# How long before a surge's moment a pass stops planning early: it looks at the
# time between pages, and a page of 500 seeds takes about 8 s at the tick's 512 MB.
EARLY_MARGIN_S: Final = 10.0

# Sends a drain's events to the worker function; how many Lambda refused.
Invoke = Callable[[list[dict[str, Any]]], int]
OnError = Callable[[Exception], None]


def _reported(on_error: OnError | None, default: str) -> OnError:
    """``on_error``, or the observability module's log line ``default``."""
    if on_error is not None:
        return on_error
    from adapters import observability

    reported: OnError = getattr(observability, default)
    return reported


def build_aws_store(settings: Settings) -> DynamoPorts:
    from adapters.dynamodb.store import dynamo_store_from_settings

    return dynamo_store_from_settings(settings)


def build_aws_services(
    settings: Settings,
    *,
    clock: Clock | None = None,
    secrets: SecretStore | None = None,
    target_support: TargetSupport | None = None,
    address_policy: AddressPolicy | None = None,
    on_ledger_error: OnError | None = None,
) -> ApiServices:
    """The API's use cases over DynamoDB: planning at the call where the
    deployment has a delivery queue (counting what it queues ahead in the load
    ledger when surges are on), retries on SQS, a peek at the DLQ. Every target
    type is delivered unless ``target_support`` says otherwise; webhook
    addresses are judged by ``address_policy`` or the deployment's rule."""
    import boto3

    from adapters.dynamodb.runs import DynamoRunStore
    from adapters.dynamodb.store import dynamo_store_from_settings
    from adapters.sealing import aws_header_seal
    from adapters.secrets import aws_secret_store

    clock = clock or SystemClock()
    if secrets is None:
        session = boto3.session.Session()
        secrets = aws_secret_store(
            settings.secret_store,
            settings.secrets_prefix,
            session.client,
            table=settings.secrets_table,
        )
    # Webhook header values sealed at rest: opened to keep a value an edit leaves.
    seal = aws_header_seal(settings.secret_store, settings.secrets_prefix, boto3.client)
    store = dynamo_store_from_settings(settings, seal=seal)
    runs = DynamoRunStore(store)
    parts = partitioning(settings)
    planning: PlanNow | None = None
    queue: DeliveryQueue | None = None
    if settings.delivery_queue_url:
        from adapters.sqs import SqsDeliveryQueue

        queue = SqsDeliveryQueue.from_settings(settings)
        delivery: DeliveryQueue = queue
        if settings.worker_function:  # surges are on: count what the calls queue ahead
            from adapters.dynamodb.load import DynamoLoadLedger

            ledger = DynamoLoadLedger(store.records.client, settings.occurrences_table)
            # Every intent an API call queues ahead goes early (its delay rounded
            # down, the worker holds it until its time): a call cannot see whether
            # its second is crowded, and rounded up it would start up to a second late.
            delivery = LoadRecordingQueue(
                queue,
                ledger,
                on_error=_reported(on_ledger_error, "ledger_not_written"),
                early_min=1,
            )
        planning = PlanNow(store, delivery, clock, tick_config(settings))
    dead: DeadLetters | None = None  # without the DLQ's URL, dead letters answer 501
    if settings.delivery_dlq_url:
        from adapters.sqs_dead_letters import SqsDeadLetters

        dead = SqsDeadLetters.from_url(settings.delivery_dlq_url)
    return ApiServices(
        ScheduleService(store, clock, parts, target_support=target_support, planning=planning),
        secrets,
        RunReports(runs, clock),
        RunViews(store, runs, clock, parts, queue=queue, dead_letters=dead),
        address_policy or settings.address_policy(),
    )


@dataclass(frozen=True)
class AwsTick:
    """The tick of a container, and the surge trigger it keeps when the
    deployment names its worker function (None otherwise)."""

    ticker: Ticker
    surges: Surges | None


def build_aws_ticker(
    settings: Settings,
    *,
    invoker: Callable[[str], Invoke] | None = None,
    on_ledger_error: OnError | None = None,
    on_ledger_unread: OnError | None = None,
    clock: Clock | None = None,
    owner: str | None = None,
) -> AwsTick:
    """The tick over DynamoDB and SQS. Where the deployment names its worker
    function, its sends count their crowded seconds in the load ledger, and the
    surge trigger reads it and starts drains through ``invoker(function)``.
    ``on_ledger_error`` hears of a count not written, ``on_ledger_unread`` of a
    ledger not read (planning early is then bounded by the budget alone); by
    default both are log lines of ``adapters.observability``. ``clock`` and
    ``owner`` (the lease owner's name) are for benchmarks."""
    from adapters.dynamodb.load import DynamoLoadLedger
    from adapters.sqs import TICK_ALIGN_S, SqsDeliveryQueue

    store = build_aws_store(settings)
    queue: DeliveryQueue = SqsDeliveryQueue.from_settings(settings, align_s=TICK_ALIGN_S)
    clock = clock or SystemClock()
    owner = owner or new_owner()
    surges = None
    quiet_until = None
    if settings.worker_function:
        if invoker is None:
            raise ValueError("worker_function: the tick needs an invoker to start drains")
        ledger = DynamoLoadLedger(store.records.client, settings.occurrences_table)
        recording = LoadRecordingQueue(
            queue,
            ledger,
            min_count=TICK_RECORD_MIN,
            deferred=True,
            on_error=_reported(on_ledger_error, "ledger_not_written"),
            early_min=settings.surge_min,
        )
        queue = recording
        surges = Surges(
            ledger,
            invoker(settings.worker_function),
            clock,
            time.sleep,
            owner=owner,
            surge_min=settings.surge_min,
            counted=recording.flush,
        )
        quiet_until = _quiet_until(
            surges, recording, _reported(on_ledger_unread, "ledger_not_read")
        )
    ticker = Ticker(
        store, queue, clock, tick_config(settings), owner=owner, quiet_until=quiet_until
    )
    return AwsTick(ticker, surges)


def _quiet_until(
    surges: Surges, recording: LoadRecordingQueue, on_unread: OnError
) -> Callable[[datetime, datetime], datetime]:
    """Until when a pass may plan early: ``EARLY_MARGIN_S`` before the first surge
    the invocation starts after its pass (``Surges.quiet_until``). A ledger that
    cannot be read bounds nothing: the surge it would have shown is lost anyway."""
    margin = timedelta(seconds=EARLY_MARGIN_S)

    def quiet_until(now: datetime, until: datetime) -> datetime:
        try:
            return surges.quiet_until(now, until, recording.pending, margin=margin)
        except Exception as error:  # planning early is an optimisation too
            on_unread(error)
            return until

    return quiet_until


@dataclass(frozen=True)
class AwsWorkerParts:
    """What a worker container builds once and keeps for its invocations:
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
    """The clients and adapters of the worker on AWS. ``webhook_exchange``
    replaces the webhook's HTTP exchange (the deployment simulator)."""
    import boto3

    from adapters.dynamodb.runs import DynamoRunStore
    from adapters.sealing import aws_header_seal
    from adapters.secrets import (
        DYNAMODB,
        CachedSecretStore,
        SigningKey,
        aws_secret_store,
        signing_key_name,
    )
    from adapters.sqs_worker import SqsWorkQueue
    from adapters.targets import Targets
    from adapters.targets.aws import control_client_config, lambda_client_config

    session = boto3.session.Session()

    def client(service: str) -> Any:
        return session.client(service, config=control_client_config())

    # One signing key for the container's secrets and header seal, read in the
    # init phase: a drain started just before a crowded second signs its
    # first webhook without a Secrets Manager round trip per thread.
    master = None
    if settings.secret_store == DYNAMODB:
        master = SigningKey(client("secretsmanager"), signing_key_name(settings.secrets_prefix))
        master.warm()
    secrets = CachedSecretStore(
        aws_secret_store(
            settings.secret_store,
            settings.secrets_prefix,
            client,
            table=settings.secrets_table,
            master=master,
        )
    )
    targets = Targets.for_deployment(
        secrets,
        address_policy or settings.address_policy(),
        sqs_client=client("sqs"),
        lambda_client=session.client("lambda", config=lambda_client_config()),
        events_client=client("events"),
        webhook_exchange=webhook_exchange,
    )
    queue = SqsWorkQueue.from_urls(
        settings.delivery_queue_url,
        settings.delivery_dlq_url,
        client=client("sqs"),
        visibility_timeout_s=held_visibility_s,
    )
    # Webhook header values are sealed at rest; the worker opens them to deliver.
    seal = aws_header_seal(settings.secret_store, settings.secrets_prefix, client, master=master)
    runs = DynamoRunStore.from_settings(settings, session, seal=seal)
    return AwsWorkerParts(runs, targets, queue)


def build_aws_worker(
    settings: Settings,
    *,
    telemetry: RunTelemetry | None = None,
    address_policy: AddressPolicy | None = None,
    held_visibility_s: float | None = None,
    webhook_exchange: Exchange | None = None,
    rng: random.Random | None = None,
    clock: Clock | None = None,
) -> tuple[RunWorker, WorkQueue]:
    """The worker over DynamoDB and SQS.

    ``telemetry`` defaults to the attempts' log lines and metrics
    (``adapters.telemetry``); a Lambda handler passes its own container's.
    ``address_policy`` replaces the deployment's webhook address rule; the
    local stack over the emulator passes ``AddressPolicy.local()``.
    ``held_visibility_s`` is for a worker pool with a heartbeat (the local
    stack over the emulator): each receive hides a message that long, and an
    attempt's run lease is that short, both extended while the run is in
    flight. Lambda leaves it unset: the queue's visibility and a lease that
    covers the whole call. ``webhook_exchange`` and ``rng`` (the retry back-off's
    draws) are for the deployment simulator, ``clock`` for benchmarks.
    """
    if telemetry is None:
        from adapters.telemetry import PowertoolsTelemetry

        telemetry = PowertoolsTelemetry()
    parts = build_aws_parts(
        settings,
        address_policy=address_policy,
        held_visibility_s=held_visibility_s,
        webhook_exchange=webhook_exchange,
    )
    worker = RunWorker(
        parts.runs,
        parts.targets,
        clock or SystemClock(),
        rng or random.Random(),
        telemetry=telemetry,
        config=WorkerConfig(max_call_s=LAMBDA_MAX_CALL_S, held_lease_s=held_visibility_s),
    )
    return worker, parts.queue


def build_aws_alerting(settings: Settings) -> Alerting | None:
    """The alarm topic as the notification channel; None when the deployment has none."""
    if not settings.alert_topic_arn:
        return None
    import boto3
    from botocore.config import Config

    from adapters.notify import SnsNotifier
    from service.alerts import Alerting

    client = boto3.session.Session().client(
        "sns",
        config=Config(
            retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=10
        ),
    )
    return Alerting(
        SnsNotifier(settings.alert_topic_arn, client),
        min_interval=timedelta(seconds=settings.alert_min_interval_s),
    )


def build_aws_watchdog(
    settings: Settings, alerting: Alerting | None = None, *, clock: Clock | None = None
) -> Watchdog:
    """The watchdog over DynamoDB; its channel is ``alerting``, or the
    deployment's alarm topic. ``clock`` is for benchmarks."""
    return Watchdog(
        build_aws_store(settings), clock or SystemClock(), alerting or build_aws_alerting(settings)
    )
