"""The AWS resources duetime needs, described once.

The CDK stack (infra/) builds its tables and queues from these definitions and
the tests create the same tables and queues on moto from them, so the code
that queries an index and the stack that creates it cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True)
class Key:
    name: str
    type: str = "S"  # "S" or "N"


@dataclass(frozen=True)
class Index:
    name: str
    partition_key: Key
    sort_key: Key | None = None
    projection: str = "ALL"  # "ALL" or "KEYS_ONLY"


@dataclass(frozen=True)
class TableDefinition:
    """One DynamoDB table: keys, indexes and the TTL attribute."""

    logical_id: str
    env_var: str
    partition_key: Key
    sort_key: Key | None = None
    global_indexes: tuple[Index, ...] = ()
    local_indexes: tuple[Index, ...] = ()
    ttl_attribute: str | None = None


@dataclass(frozen=True)
class QueueDefinition:
    logical_id: str
    env_var: str
    dlq_env_var: str
    visibility_timeout_s: int
    max_receive_count: int
    retention_s: int = 14 * 24 * 3600
    tags: dict[str, str] = field(default_factory=dict)


# Schedules: one HEAD item per schedule (current version, state, next_due),
# one immutable item per version (pk "S#<id>", sk "V#<version:08d>"), and the
# idempotency records of create calls. The sparse "due" index holds only
# active schedules that have a next_due, sharded so no key is hot; its sort
# key "<next_due>#<schedule_id>" is unique, so a page ends at an exact place.
SCHEDULES = TableDefinition(
    logical_id="Schedules",
    env_var="DUETIME_SCHEDULES_TABLE",
    partition_key=Key("pk"),
    sort_key=Key("sk"),
    global_indexes=(
        Index("due", Key("due_shard"), Key("due_key")),
        Index("listing", Key("entity"), Key("created_key"), projection="KEYS_ONLY"),
    ),
)

# Runs (occurrences and what happened to them): partition "<schedule_id>",
# one item per occurrence, its record, sort key "R#<scheduled_at>#": the whole
# run, written once by a conditional put (never by a transaction) and then
# only by transitions. The put refuses a second write of the occurrence and
# another version's occurrence at the same instant; the key orders a
# schedule's records by time (a query of the table itself: no local index,
# so no 10 GB item-collection cap).
#
# The sparse, KEYS_ONLY "outbox" index holds the records that still need
# admission or their delivery intent, by shard and "<bucket>#<scheduled_at>#
# <occurrence_id>": a record is written into it once, when it is stored, and
# leaves it once, when its intent is sent or it is closed (once more for a
# run a user retries). A record a planning pass stores admitted and sends
# before its schedule advances never enters it, unless the send failed.
#
# The planner's chain: a pass writes the next slots of the schedules it
# plans (a seed's hand-over included) as plan pages, items of this table
# under "P#<due hour>", one per due minute (adapters/dynamodb/items.py), read
# back by key with strong consistency from where the last complete pass
# stopped: no index, so nothing the planner reads lags its writes. Old
# history and old pages expire by TTL. (This
# table replaces "Occurrences", which had a local index: see
# docs/decisions.md for the upgrade.)
OCCURRENCES = TableDefinition(
    logical_id="Runs",
    env_var="DUETIME_OCCURRENCES_TABLE",
    partition_key=Key("pk"),
    sort_key=Key("sk"),
    global_indexes=(
        Index("outbox", Key("pending_shard", "N"), Key("outbox_key"), projection="KEYS_ONLY"),
    ),
    ttl_attribute="expires_at_epoch",
)

# Leases (one item per shard: owner, epoch, expires_at) and heartbeats (one
# item per component, overwritten). Heartbeat items carry a TTL, so the
# verdicts of deleted schedules do not stay; lease items have none.
LEASES = TableDefinition(
    logical_id="Leases",
    env_var="DUETIME_LEASES_TABLE",
    partition_key=Key("pk"),
    ttl_attribute="expires_at_epoch",
)

TABLES: tuple[TableDefinition, ...] = (SCHEDULES, OCCURRENCES, LEASES)

# Webhook signing secrets, with duetime:secretStore "dynamodb"
# (adapters.secrets.DynamoSecretStore): one item per schedule, pk
# "<schedule_id>", the secret in "secret", read by key with a strongly
# consistent GetItem and never queried or scanned. A table of its own, so that
# only the API and the worker are granted anything of it; not in TABLES,
# because the stack makes it only for that store (infra/secrets.py).
WEBHOOK_SECRETS = TableDefinition(
    logical_id="WebhookSecrets",
    env_var="DUETIME_SECRETS_TABLE",
    partition_key=Key("pk"),
)

# Delivery intents. The visibility timeout is how long a message a worker
# invocation received stays hidden if that invocation dies without answering
# (a crash, a timeout): the worker's 150 s timeout plus a margin
# (infra.functions.check_worker_timeout), so such a message is run again
# within 3 minutes. A retry's long wait is a new message sent with a delay, not
# a visibility change (service/runs.py), so a message's receives are those of
# one attempt's wait; the redrive limit is the backstop for a message no
# worker could handle at all, and a run whose message SQS moved to the DLQ is
# closed by the dead-letter sweep (service/dead_letters.py).
DELIVERY_QUEUE = QueueDefinition(
    logical_id="Delivery",
    env_var="DUETIME_DELIVERY_QUEUE_URL",
    dlq_env_var="DUETIME_DELIVERY_DLQ_URL",
    visibility_timeout_s=180,
    max_receive_count=25,
)

MAX_ATTEMPTS_LIMIT = 20


def create_tables(client: object, names: dict[str, str]) -> None:
    """Create every table on a DynamoDB endpoint (moto, in tests and the emulator).

    ``names`` maps a definition's logical_id to the physical table name.
    """
    for table in TABLES:
        create_table(client, table, names[table.logical_id])


def _key_schema(partition: Key, sort: Key | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": partition.name, "KeyType": "HASH"}]
    if sort is not None:
        schema.append({"AttributeName": sort.name, "KeyType": "RANGE"})
    return schema


def create_table(client: object, table: TableDefinition, name: str) -> None:
    """Create one table on a DynamoDB endpoint (moto), as its definition says."""
    attributes: dict[str, str] = {table.partition_key.name: table.partition_key.type}
    if table.sort_key is not None:
        attributes[table.sort_key.name] = table.sort_key.type
    for index in (*table.global_indexes, *table.local_indexes):
        attributes[index.partition_key.name] = index.partition_key.type
        if index.sort_key is not None:
            attributes[index.sort_key.name] = index.sort_key.type
    kwargs: dict[str, object] = {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": _key_schema(table.partition_key, table.sort_key),
        "AttributeDefinitions": [
            {"AttributeName": n, "AttributeType": t} for n, t in sorted(attributes.items())
        ],
    }
    if table.global_indexes:
        kwargs["GlobalSecondaryIndexes"] = [
            {
                "IndexName": index.name,
                "KeySchema": _key_schema(index.partition_key, index.sort_key),
                "Projection": {"ProjectionType": index.projection},
            }
            for index in table.global_indexes
        ]
    if table.local_indexes:
        kwargs["LocalSecondaryIndexes"] = [
            {
                "IndexName": index.name,
                "KeySchema": _key_schema(index.partition_key, index.sort_key),
                "Projection": {"ProjectionType": index.projection},
            }
            for index in table.local_indexes
        ]
    client.create_table(**kwargs)  # type: ignore[attr-defined]
    if table.ttl_attribute:
        client.update_time_to_live(  # type: ignore[attr-defined]
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
        )


def create_queues(client: object, prefix: str) -> dict[str, str]:
    """Create the delivery queue and its DLQ on an SQS endpoint; return env var -> URL."""
    import json

    q = DELIVERY_QUEUE
    dlq_url: str = client.create_queue(QueueName=f"{prefix}-delivery-dlq")["QueueUrl"]  # type: ignore[attr-defined]
    dlq_arn = client.get_queue_attributes(  # type: ignore[attr-defined]
        QueueUrl=dlq_url, AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    url: str = client.create_queue(  # type: ignore[attr-defined]
        QueueName=f"{prefix}-delivery",
        Attributes={
            "VisibilityTimeout": str(q.visibility_timeout_s),
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(q.max_receive_count)}
            ),
        },
    )["QueueUrl"]
    return {q.env_var: url, q.dlq_env_var: dlq_url}


# Metrics: one namespace, emitted through Powertools Metrics with the single
# default dimension ``service``: the stack's name on AWS (the functions'
# POWERTOOLS_SERVICE_NAME, which the alarms and dashboard also use), so side
# by side stacks keep apart; SERVICE_NAME on the local stack. The alarms and
# the dashboard in the CDK stack refer to these names, so they live here,
# next to the tables.
METRICS_NAMESPACE = "duetime"
SERVICE_NAME = "duetime"


class Metric:
    """duetime's own CloudWatch metrics (EMF, namespace METRICS_NAMESPACE,
    dimensions METRIC_DIMENSIONS): every one is billed as a custom metric
    ($0.30 a month, by the hour it receives data), so each is here because an
    alarm (infra/alarms.py) or the dashboard (infra/dashboard.py) reads it;
    tests/infra/test_metrics_used.py holds the two sets equal. Anything else
    a pass knows goes on its log line."""

    TICK_HEARTBEAT = "TickHeartbeat"  # Count, one per tick pass
    DISPATCH_LAG = "DispatchLag"  # Seconds, admitted_at - scheduled_at
    OCCURRENCES_MATERIALIZED = "OccurrencesMaterialized"  # Count
    OCCURRENCES_ADMITTED = "OccurrencesAdmitted"  # Count
    OCCURRENCES_SKIPPED = "OccurrencesSkipped"  # Count
    OCCURRENCES_EXPIRED = "OccurrencesExpired"  # Count
    RUNS_SUCCEEDED = "RunsSucceeded"  # Count
    RUNS_FAILED = "RunsFailed"  # Count
    RUNS_RETRIED = "RunsRetried"  # Count
    RUN_ATTEMPTS = "RunAttempts"  # Count, one per attempt started
    START_LATENESS = "StartLateness"  # Seconds, started_at - scheduled_at
    OVERDUE_SCHEDULES = "OverdueSchedules"  # Count, from the watchdog
    LATE_SCHEDULES = "LateSchedules"  # Count, from the watchdog
    TICK_HEARTBEAT_AGE = "TickHeartbeatAge"  # Seconds, from the watchdog
    # Count, one per message that reached the DLQ: moved there by SQS (found
    # by the dead-letter sweep) or sent there by the worker (not an intent).
    DEAD_LETTERED = "DeadLettered"


# The dimensions of every metric above: Powertools' default ``service``.
METRIC_DIMENSIONS: Final = ("service",)
# Every declared metric name; the handlers emit nothing else.
METRIC_NAMES: Final = frozenset(
    value for key, value in vars(Metric).items() if key.isupper() and isinstance(value, str)
)


# Environment each Lambda function receives (besides POWERTOOLS_* and LOG_LEVEL).
ENV_SHARDS = "DUETIME_SHARDS"
ENV_BUCKET_S = "DUETIME_BUCKET_S"
ENV_LOOKAHEAD_S = "DUETIME_LOOKAHEAD_S"
ENV_TICK_BUDGET_S = "DUETIME_TICK_BUDGET_S"
ENV_ALLOW_PRIVATE_TARGETS = "DUETIME_ALLOW_PRIVATE_TARGETS"
ENV_WORKER_FUNCTION = "DUETIME_WORKER_FUNCTION"
ENV_SURGE_MIN = "DUETIME_SURGE_MIN"
# Whether the tick plans early with the time its budget leaves ("true"/"false"),
# and how many schedules next due at one instant make a crowd it plans early.
ENV_PLAN_EARLY = "DUETIME_PLAN_EARLY"
ENV_CROWD_MIN = "DUETIME_CROWD_MIN"
ENV_SECRETS_PREFIX = "DUETIME_SECRETS_PREFIX"
# Where webhook signing secrets live: adapters.secrets.STORE_KINDS.
ENV_SECRET_STORE = "DUETIME_SECRET_STORE"
# The table of the "dynamodb" secret store.
ENV_SECRETS_TABLE = WEBHOOK_SECRETS.env_var

# The watchdog's notification channel on AWS (the alarm topic: one message per
# schedule whose verdict changes, service/alerts.py) and the least time between
# two messages about one schedule. Set once the topic exists (infra/alarms.py).
ENV_ALERT_TOPIC_ARN = "DUETIME_ALERT_TOPIC_ARN"
ENV_ALERT_MIN_INTERVAL_S = "DUETIME_ALERT_MIN_INTERVAL_S"
ALERT_ENV: tuple[str, ...] = (ENV_ALERT_TOPIC_ARN, ENV_ALERT_MIN_INTERVAL_S)

# Set on the API and the tick once the worker function exists, and only with surges
# on (infra/functions.py): the others are set from the start.
SURGE_ENV: tuple[str, ...] = (ENV_WORKER_FUNCTION, ENV_SURGE_MIN)
# Set only where the deployment has what they name: the secrets table exists
# with the "dynamodb" secret store alone.
OPTIONAL_ENV: tuple[str, ...] = (ENV_SECRETS_TABLE,)

FUNCTION_ENV: dict[str, tuple[str, ...]] = {
    "api": (
        SCHEDULES.env_var,
        OCCURRENCES.env_var,
        LEASES.env_var,
        # Planning at the call (a slot due within the lookahead of a create,
        # edit or resume, and a trigger) and POST /runs/{id}/retry send
        # delivery intents themselves.
        DELIVERY_QUEUE.env_var,
        # GET /dead-letters peeks at the DLQ (ReceiveMessage, nothing else).
        DELIVERY_QUEUE.dlq_env_var,
        ENV_SHARDS,
        ENV_BUCKET_S,
        ENV_LOOKAHEAD_S,
        ENV_SECRETS_PREFIX,
        ENV_SECRET_STORE,
        ENV_SECRETS_TABLE,
        # With surges on (service/planning/surge.py): the calls count what they queue ahead.
        ENV_WORKER_FUNCTION,
        ENV_SURGE_MIN,
    ),
    "tick": (
        SCHEDULES.env_var,
        OCCURRENCES.env_var,
        LEASES.env_var,
        DELIVERY_QUEUE.env_var,
        ENV_SHARDS,
        ENV_BUCKET_S,
        ENV_LOOKAHEAD_S,
        ENV_TICK_BUDGET_S,
        ENV_PLAN_EARLY,
        ENV_CROWD_MIN,
        # With surges on: the worker function whose drains it starts, and from when.
        ENV_WORKER_FUNCTION,
        ENV_SURGE_MIN,
    ),
    "worker": (
        SCHEDULES.env_var,
        OCCURRENCES.env_var,
        DELIVERY_QUEUE.env_var,
        DELIVERY_QUEUE.dlq_env_var,
        ENV_ALLOW_PRIVATE_TARGETS,
        ENV_SECRETS_PREFIX,
        ENV_SECRET_STORE,
        ENV_SECRETS_TABLE,
    ),
    "watchdog": (
        SCHEDULES.env_var,
        OCCURRENCES.env_var,
        LEASES.env_var,
        ENV_ALERT_TOPIC_ARN,
        ENV_ALERT_MIN_INTERVAL_S,
    ),
}
