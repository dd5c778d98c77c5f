"""The four Lambda functions, made by one helper, each with its own grants."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk.aws_lambda_event_sources import SqsEventSource
from constructs import Construct

from adapters.definitions import (
    ALERT_ENV,
    DELIVERY_QUEUE,
    ENV_ALLOW_PRIVATE_TARGETS,
    ENV_BUCKET_S,
    ENV_CROWD_MIN,
    ENV_LOOKAHEAD_S,
    ENV_PLAN_EARLY,
    ENV_SECRET_STORE,
    ENV_SECRETS_PREFIX,
    ENV_SECRETS_TABLE,
    ENV_SHARDS,
    ENV_SURGE_MIN,
    ENV_TICK_BUDGET_S,
    ENV_WORKER_FUNCTION,
    FUNCTION_ENV,
    LEASES,
    METRICS_NAMESPACE,
    OCCURRENCES,
    OPTIONAL_ENV,
    SCHEDULES,
    SURGE_ENV,
)
from adapters.dynamodb.items import heartbeat_key
from infra import build_asset
from infra.log_groups import log_group
from infra.metrics import metrics_service
from infra.queues import DeliveryQueues
from infra.secrets import WebhookSecrets
from infra.settings import Settings
from infra.tables import Tables
from infra.targets import grant_targets
from service.watchdog import ACK_PREFIX, WATCH_PREFIX

# The leases table's items the API writes: heartbeats "ack:<id>" and "watch:<id>".
API_HEARTBEAT_KEYS: Final = tuple(
    heartbeat_key(prefix)["pk"]["S"] + "*" for prefix in (ACK_PREFIX, WATCH_PREFIX)
)


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # its key in adapters.definitions.FUNCTION_ENV
    handler: str
    description: str
    timeout: Duration
    memory_mb: int = 512
    # Invocations Lambda retries by itself after an asynchronous invocation
    # fails (None: Lambda's default). The tick and the watchdog run again on
    # their next schedule, so a late retry of an old pass only adds noise.
    async_retries: int | None = None


# The worker receives a batch of up to WORKER_BATCH_SIZE delivery intents and
# runs them at once. It does not wait to fill a batch (WORKER_BATCH_WINDOW 0):
# the tick queues each intent to become visible at its due second, and a
# batching window would add up to its length to every start (5 s measured in
# the simulator's mixed day), for the few cents a million of fuller batches
# (docs/cost.md). Its timeout covers the slowest target call it allows (a
# Lambda RequestResponse target, adapters.targets.aws.LAMBDA_TARGET_READ_TIMEOUT_S)
# plus the margin the handler keeps to record outcomes and answer. The queue's
# visibility timeout is that timeout plus VISIBILITY_MARGIN: how long a crashed
# or timed-out invocation's messages stay hidden. AWS advises six times the
# timeout so that an invocation Lambda throttles and retries does not see its
# batch come back meanwhile; here the trigger's MaximumConcurrency keeps it
# from invoking beyond its cap, and a batch that does come back is harmless
# (every decision is a compare-and-set of the run, docs/decisions.md).
WORKER_BATCH_SIZE: Final = 10
WORKER_BATCH_WINDOW: Final = Duration.seconds(0)
WORKER_TIMEOUT: Final = Duration.seconds(150)
VISIBILITY_MARGIN: Final = Duration.seconds(30)

API: Final = FunctionSpec("api", "handlers.api.handler", "duetime HTTP API", Duration.seconds(29))
# Sized by its measured CPU (bench/cost.py, docs/cost.md "Lambda duration and
# the worker's memory"): the least size at which a warm batch of 10's CPU time,
# at Lambda's share of a vCPU for the size, takes at most 80% of the batch's
# longest wait (its AWS calls and a 200 ms target). It peaks at about 80 MB.
WORKER_MEMORY_MB: Final = 448
WORKER: Final = FunctionSpec(
    "worker",
    "handlers.worker.handler",
    "duetime worker: runs occurrences",
    WORKER_TIMEOUT,
    memory_mb=WORKER_MEMORY_MB,
)
WATCHDOG: Final = FunctionSpec(
    "watchdog",
    "handlers.watchdog.handler",
    "duetime watchdog: late and overdue schedules",
    Duration.seconds(120),
    memory_mb=256,
    async_retries=0,
)


def tick_spec(settings: Settings) -> FunctionSpec:
    # The tick runs one pass per invocation, normally about a second; the budget
    # bounds a large one (every schedule due at 09:00), plus time to flush.
    return FunctionSpec(
        "tick",
        "handlers.tick.handler",
        "duetime tick: plans and dispatches due occurrences",
        Duration.seconds(settings.tick_budget_s + 20),
        memory_mb=settings.tick_memory_mb,
        async_retries=0,
    )


def check_worker_timeout(visibility_timeout_s: int) -> None:
    needed = (
        WORKER_TIMEOUT.to_seconds()
        + WORKER_BATCH_WINDOW.to_seconds()
        + VISIBILITY_MARGIN.to_seconds()
    )
    if visibility_timeout_s < needed:
        raise ValueError(
            f"{DELIVERY_QUEUE.logical_id} visibility timeout {visibility_timeout_s}s is "
            f"below worker timeout + batching window + margin ({needed}s)"
        )


class DuetimeFunction(Construct):
    """A handler with its own role, its own log group and exactly its env keys.

    The role starts empty (no AWS managed policy): it may write to its own log
    group and nothing else until the caller grants more.
    """

    RUNTIME: ClassVar[lambda_.Runtime] = lambda_.Runtime.PYTHON_3_14
    ARCHITECTURE: ClassVar[lambda_.Architecture] = lambda_.Architecture.ARM_64

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        spec: FunctionSpec,
        code: lambda_.Code,
        environment: Mapping[str, str],
        settings: Settings,
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.spec = spec
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{spec.description}: only what it needs",
        )
        self.log_group = log_group(self, "Logs", settings)
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=self.RUNTIME,
            architecture=self.ARCHITECTURE,
            code=code,
            handler=spec.handler,
            description=spec.description,
            timeout=spec.timeout,
            memory_size=spec.memory_mb,
            role=self.role,
            log_group=self.log_group,
            environment=function_environment(
                spec.name, environment, settings, service=metrics_service(self)
            ),
            reserved_concurrent_executions=reserved_concurrency,
            retry_attempts=spec.async_retries,
        )


def function_environment(
    name: str, available: Mapping[str, str], settings: Settings, *, service: str
) -> dict[str, str]:
    """The function's FUNCTION_ENV keys with their values, plus Powertools' own:
    ``service`` is the ``service`` dimension of every metric (the stack's name).
    An OPTIONAL_ENV key without a value is left out (the deployment has no such
    resource)."""
    keys = [
        key
        for key in FUNCTION_ENV[name]
        if key not in SURGE_ENV
        and key not in ALERT_ENV
        and (key in available or key not in OPTIONAL_ENV)
    ]
    missing = [key for key in keys if key not in available]
    if missing:
        raise KeyError(f"no value for {', '.join(missing)} (function {name})")
    return {
        **{key: available[key] for key in keys},
        "POWERTOOLS_SERVICE_NAME": service,
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "LOG_LEVEL": settings.log_level,
    }


class Functions(Construct):
    """api, tick, worker and watchdog, and what each one may touch."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: Settings,
        tables: Tables,
        queues: DeliveryQueues,
        secrets: WebhookSecrets,
    ) -> None:
        super().__init__(scope, id)
        check_worker_timeout(queues.definition.visibility_timeout_s)
        if self._runtime_version() != build_asset.PYTHON_VERSION:
            raise ValueError("infra.build_asset.PYTHON_VERSION does not match the runtime")
        code = lambda_.Code.from_asset(str(_asset_dir(settings)))
        environment = {
            SCHEDULES.env_var: tables.table(SCHEDULES).table_name,
            OCCURRENCES.env_var: tables.table(OCCURRENCES).table_name,
            LEASES.env_var: tables.table(LEASES).table_name,
            queues.definition.env_var: queues.queue.queue_url,
            queues.definition.dlq_env_var: queues.dead_letter_queue.queue_url,
            ENV_SHARDS: str(settings.shards),
            ENV_BUCKET_S: str(settings.bucket_s),
            ENV_LOOKAHEAD_S: str(settings.lookahead_s),
            ENV_TICK_BUDGET_S: str(settings.tick_budget_s),
            ENV_PLAN_EARLY: "true" if settings.plan_early else "false",
            ENV_CROWD_MIN: str(settings.crowd),
            ENV_ALLOW_PRIVATE_TARGETS: "true" if settings.allow_private_targets else "false",
            ENV_SECRETS_PREFIX: secrets.prefix,
            ENV_SECRET_STORE: secrets.store,
        }
        if secrets.table is not None:
            environment[ENV_SECRETS_TABLE] = secrets.table.table_name

        def make(id: str, spec: FunctionSpec, reserved: int | None = None) -> DuetimeFunction:
            return DuetimeFunction(
                self,
                id,
                spec=spec,
                code=code,
                environment=environment,
                settings=settings,
                reserved_concurrency=reserved,
            )

        # api: manages schedules and reads runs; shows lease state read-only.
        # It plans a schedule whose next slot is due within the lookahead (and
        # a trigger) itself, so it sends those delivery intents.
        self.api = make("Api", API)
        tables.grant_read_write(self.api.role, SCHEDULES)
        tables.grant_read_write(self.api.role, OCCURRENCES)
        tables.grant_withdraw(self.api.role, OCCURRENCES)
        tables.grant_read(self.api.role, LEASES)
        # POST /schedules/{id}/acknowledge records the acknowledgement and the
        # verdict judged again: those two heartbeats, no other item of the table.
        tables.grant_put_keys(self.api.role, LEASES, API_HEARTBEAT_KEYS)
        secrets.grant_write(self.api.role)
        # Those intents, and a retried run's (POST /runs/{id}/retry): SendMessage
        # (SendMessageBatch is authorized as it) on the delivery queue.
        self.api.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[queues.queue.queue_arn])
        )
        # GET /dead-letters peeks at the DLQ (a receive with visibility 0); a
        # retried run's dead letters are settled (deleted; the others it saw are
        # made visible again).
        self.api.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:ChangeMessageVisibility",
                ],
                resources=[queues.dead_letter_queue.queue_arn],
            )
        )

        # tick: plans and admits occurrences under shard leases, sends intents.
        # Reserved concurrency caps overlapping passes (and keeps a burst of
        # other functions from starving the dispatcher).
        self.tick = make("Tick", tick_spec(settings), settings.tick_reserved_concurrency or None)
        for definition in (SCHEDULES, OCCURRENCES, LEASES):
            tables.grant_read_write(self.tick.role, definition)
        tables.grant_withdraw(self.tick.role, OCCURRENCES)
        queues.queue.grant_send_messages(self.tick.role)

        # worker: runs occurrences from the delivery queue and calls targets.
        self.worker = make("Worker", WORKER)
        tables.grant_read_write(self.worker.role, OCCURRENCES)
        tables.grant_read(self.worker.role, SCHEDULES)
        queues.dead_letter_queue.grant_send_messages(self.worker.role)
        # A retry's wait is a new, delayed message with the intent (adapters/sqs_worker.py).
        self.worker.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[queues.queue.queue_arn])
        )
        # The dead-letter sweep (handlers/sweep.py) receives the DLQ's letters,
        # sends each one SQS moved there back with a reason and deletes it.
        self.worker.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["sqs:ReceiveMessage", "sqs:DeleteMessage"],
                resources=[queues.dead_letter_queue.queue_arn],
            )
        )
        secrets.grant_read(self.worker.role)
        grant_targets(self.worker.role, settings)
        self.worker.function.add_event_source(
            SqsEventSource(
                queues.queue,
                batch_size=WORKER_BATCH_SIZE,
                max_batching_window=WORKER_BATCH_WINDOW,
                report_batch_item_failures=True,
                max_concurrency=settings.worker_max_concurrency,
            )
        )

        # Surges (service/planning/surge.py): the API and the tick count the intents they queue
        # ahead by due second; the tick starts drains of the worker before a crowded
        # second, asynchronously.
        if settings.surge_min:
            # A drain is worth something only at its instant: Lambda neither retries a
            # failed one nor keeps one it could not start for longer than a minute.
            self.worker.function.configure_async_invoke(
                max_event_age=Duration.seconds(60), retry_attempts=0
            )
            # The function itself, no version or alias (grant_invoke would add ``:*``).
            self.tick.role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["lambda:InvokeFunction"],
                    resources=[self.worker.function.function_arn],
                )
            )
            for function in (self.api, self.tick):
                function.function.add_environment(
                    ENV_WORKER_FUNCTION, self.worker.function.function_name
                )
                function.function.add_environment(ENV_SURGE_MIN, str(settings.surge_min))

        # watchdog: reads the schedules and their runs it judges; writes each
        # verdict, what it last told of each schedule and its own heartbeat to
        # the leases table, and reads the tick's heartbeat there. It publishes
        # changed verdicts to the alarm topic (granted in infra/alarms.py).
        self.watchdog = make("Watchdog", WATCHDOG)
        tables.grant_read(self.watchdog.role, SCHEDULES)
        tables.grant_read(self.watchdog.role, OCCURRENCES)
        tables.grant_read_write(self.watchdog.role, LEASES)

    @property
    def all(self) -> tuple[DuetimeFunction, ...]:
        return (self.api, self.tick, self.worker, self.watchdog)

    @staticmethod
    def _runtime_version() -> str:
        return DuetimeFunction.RUNTIME.name.removeprefix("python")


def _asset_dir(settings: Settings) -> Path:
    path = Path(settings.asset_dir) if settings.asset_dir else build_asset.DEFAULT_OUT
    if not (path / "handlers").is_dir():
        raise FileNotFoundError(
            f"the Lambda asset {path} is missing or incomplete: run `make asset` first"
        )
    return path
