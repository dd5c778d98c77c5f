"""What the API's routes call, built over SQLite (the local stack) or DynamoDB (AWS)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from adapters.secrets import SecretStore
from adapters.targets.addresses import AddressPolicy
from domain.partition import Partitioning
from handlers.observability import ledger_not_written
from handlers.settings import Settings
from service.clock import SystemClock
from service.ports import Clock, DeliveryQueue
from service.run_views import (
    DeadLetters,
    RunViews,
)
from service.runs import RunReports
from service.schedules import ScheduleService, TargetSupport

ENV_DATA_DIR: Final = "DUETIME_DATA_DIR"
SQLITE_FILE: Final = "duetime.db"


@dataclass
class ApiServices:
    """What the routes call: the schedule use cases and the webhook secret store.

    ``secrets`` is None where no secret store is configured: a webhook
    schedule then still gets a signing secret, returned once, but duetime
    keeps no copy to sign with. ``runs`` takes the progress and completion
    reports of long jobs; where it is None those routes answer 501.
    ``views`` lists runs with filters, retries them and reads the dead
    letters; where it is None, runs are still listed (over the schedule
    store), and the retry and the dead letters answer 501.
    ``address_policy`` is the rule the deployment's worker applies to webhook
    addresses; a URL whose host is an address it refuses is refused at save.
    """

    schedules: ScheduleService
    secrets: SecretStore | None = None
    runs: RunReports | None = None
    views: RunViews | None = None
    address_policy: AddressPolicy = field(default_factory=AddressPolicy)


# What the SQLite stack's worker delivers to (handlers.worker_local.build_sqlite_worker
# builds the webhook sender only); a schedule naming another type is refused when
# saved there, rather than accepted and then failed at every run.
SQLITE_TARGETS: Final = TargetSupport(
    frozenset({"webhook"}),
    "deploy duetime to AWS (cdk deploy), or try them on this machine with "
    "`duetime local --store emulator`, which delivers them to its own emulated "
    "services, not to AWS",
)


def sqlite_targets(jobs: frozenset[str] | None) -> TargetSupport:
    """What the SQLite stack delivers to: SQLITE_TARGETS, and command targets
    naming one of ``jobs`` where a jobs file is loaded (``duetime local --jobs``)."""
    if jobs is None:
        return SQLITE_TARGETS
    return replace(SQLITE_TARGETS, types=SQLITE_TARGETS.types | {"command"}, jobs=jobs)


def build_services(
    settings: Settings,
    *,
    data_dir: str | Path | None = None,
    clock: Clock | None = None,
    secrets: SecretStore | None = None,
    target_support: TargetSupport | None = None,
    address_policy: AddressPolicy | None = None,
) -> ApiServices:
    """The use cases over SQLite (with ``data_dir``) or DynamoDB (without).

    ``target_support`` says which target types the deployment delivers to;
    by default SQLITE_TARGETS over SQLite, and every type over DynamoDB (the
    AWS worker and the emulator's build senders for all of them).
    ``address_policy`` is the webhook address rule, as its worker has it: by
    default ``AddressPolicy.local()`` over SQLite (build_sqlite_worker's) and
    the deployment's settings over DynamoDB (build_aws_parts').
    """
    partitioning = Partitioning(shards=settings.shards, bucket_s=settings.bucket_s)
    clock = clock or SystemClock()
    from handlers.tick import tick_config
    from service.planning.ticker import PlanNow

    config = tick_config(settings)
    if data_dir is not None:
        directory = Path(data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        from adapters.sqlite.queue import SqliteQueue
        from adapters.sqlite.runs import SqliteRunStore
        from adapters.sqlite.store import SqliteStore

        store = SqliteStore(directory / SQLITE_FILE)
        if secrets is None:
            from adapters.sqlite.secrets import SqliteSecretStore

            secrets = SqliteSecretStore(directory / SQLITE_FILE)
        run_store = SqliteRunStore(store)
        # Planning at the call: the local tick's queue is a table in the same file.
        queue = SqliteQueue(directory / SQLITE_FILE, clock=clock, connection_of=store)
        planning = PlanNow(store, queue, clock, config)
        return ApiServices(
            ScheduleService(
                store,
                clock,
                partitioning,
                target_support=target_support or SQLITE_TARGETS,
                planning=planning,
            ),
            secrets,
            RunReports(run_store, clock),
            _sqlite_views(store, run_store, clock, partitioning),
            address_policy or AddressPolicy.local(),
        )
    from adapters.dynamodb.runs import DynamoRunStore
    from adapters.dynamodb.store import DynamoStore

    if secrets is None:
        import boto3

        from adapters.secrets import aws_secret_store

        session = boto3.session.Session()
        secrets = aws_secret_store(
            settings.secret_store,
            settings.secrets_prefix,
            session.client,
            table=settings.secrets_table,
        )
    import boto3

    from adapters.sealing import aws_header_seal

    # Webhook header values sealed at rest: opened to keep a value an edit leaves.
    seal = aws_header_seal(settings.secret_store, settings.secrets_prefix, boto3.client)
    dynamo = DynamoStore.from_settings(settings, seal=seal)
    dynamo_runs = DynamoRunStore(dynamo)
    aws_planning: PlanNow | None = None
    if settings.delivery_queue_url:
        from adapters.sqs import SqsDeliveryQueue

        delivery: DeliveryQueue = SqsDeliveryQueue.from_settings(settings)
        if settings.worker_function:  # surges are on: count what the calls queue ahead
            from adapters.dynamodb.load import DynamoLoadLedger
            from service.planning.surge import LoadRecordingQueue

            delivery = LoadRecordingQueue(
                delivery,
                DynamoLoadLedger(dynamo.client, settings.occurrences_table),
                on_error=ledger_not_written,
            )
        aws_planning = PlanNow(dynamo, delivery, clock, config)
    return ApiServices(
        ScheduleService(
            dynamo, clock, partitioning, target_support=target_support, planning=aws_planning
        ),
        secrets,
        RunReports(dynamo_runs, clock),
        _aws_views(settings, dynamo, dynamo_runs, clock, partitioning),
        address_policy or settings.address_policy(),
    )


def _sqlite_views(store: Any, run_store: Any, clock: Clock, partitioning: Partitioning) -> RunViews:
    """Listings, retries (sent on the SQLite delivery queue) and the queue's dead letters."""
    from adapters.sqlite.dead_letters import SqliteDeadLetters
    from adapters.sqlite.queue import SqliteQueue

    queue = SqliteQueue(store.path, clock=clock, connection_of=store)
    dead: DeadLetters = SqliteDeadLetters(store.path, connection_of=store)
    return RunViews(store, run_store, clock, partitioning, queue=queue, dead_letters=dead)


def _aws_views(
    settings: Settings, store: Any, run_store: Any, clock: Clock, partitioning: Partitioning
) -> RunViews:
    """Listings, retries (sent on the SQS delivery queue) and a peek at the DLQ.

    Without the DLQ's URL in the settings, dead letters answer 501.
    """
    queue = None
    if settings.delivery_queue_url:
        from adapters.sqs import SqsDeliveryQueue

        queue = SqsDeliveryQueue.from_settings(settings)
    dead: DeadLetters | None = None
    if settings.delivery_dlq_url:
        from adapters.sqs_dead_letters import SqsDeadLetters

        dead = SqsDeadLetters.from_url(settings.delivery_dlq_url)
    return RunViews(store, run_store, clock, partitioning, queue=queue, dead_letters=dead)
