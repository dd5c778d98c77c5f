"""The AWS store: schedules, occurrences and leases in three DynamoDB tables.

One module per port, over one table handle (tables.py): the schedules
(schedules.py), the plan log (plan_log.py: the planning reads, over the
seeds, plan pages, their cursor and the plan lease of plan_seeds.py,
plan_pages.py and plan_lease.py), materialization (materialize.py),
the run records (run_records.py) and the leases and heartbeats (leases.py).
``dynamo_store`` builds the three port objects over one client: the
service is given them as a ``Store`` (service/ports.py), never one object
with every method.

Page tokens are base64 JSON of the next query's ExclusiveStartKey.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from adapters.dynamodb.conflicts import retry_conflicts
from adapters.dynamodb.leases import DynamoLeases
from adapters.dynamodb.materialize import DynamoMaterializer
from adapters.dynamodb.run_records import HISTORY_RETENTION, DynamoRunRecords
from adapters.dynamodb.schedules import DUE_SHARDS
from adapters.dynamodb.tables import CONCURRENCY as CONCURRENCY  # the simulator sets it here
from adapters.dynamodb.tables import TableNames, TableSettings, client_config
from adapters.sealing import HeaderSeal


@dataclass(frozen=True)
class DynamoPorts:
    """The service's ``Store`` as ``dynamo_store`` builds it, typed as the
    DynamoDB port objects it holds (for the run store and the tools)."""

    schedules: DynamoMaterializer
    records: DynamoRunRecords
    leases: DynamoLeases


def dynamo_store(
    client: Any,
    tables: TableNames,
    *,
    due_shards: int = DUE_SHARDS,
    history_retention: timedelta = HISTORY_RETENTION,
    concurrency: int = 1,
    lease_shards: int | None = None,
    seal: HeaderSeal | None = None,
) -> DynamoPorts:
    """The three ports over a DynamoDB client (low-level API), each its own
    object: the schedules port (which plans, storing slots through the run
    records port it holds), that run records port, and the leases.

    ``concurrency``: independent conditional writes (admissions, closures,
    materializations of different schedules) and index queries in flight at
    once. Keep 1 on in-process moto, whose backends are not safe under
    concurrent requests. ``lease_shards``: the deployment's shard count, so
    the leases are read by key rather than by a scan. ``seal``: see
    ``DynamoSchedules``."""
    schedules = DynamoMaterializer(
        client,
        tables,
        due_shards=due_shards,
        history_retention=history_retention,
        concurrency=concurrency,
        seal=seal,
    )
    leases = DynamoLeases(client, tables, lease_shards=lease_shards)
    return DynamoPorts(schedules=schedules, records=schedules.records, leases=leases)


def dynamo_store_from_settings(
    settings: TableSettings, session: Any = None, *, seal: HeaderSeal | None = None
) -> DynamoPorts:
    """The store of a deployment: table names from its settings, a fresh client."""
    if session is None:
        import boto3

        session = boto3.session.Session()
    client = retry_conflicts(session.client("dynamodb", config=client_config()))
    return dynamo_store(
        client,
        TableNames(settings.schedules_table, settings.occurrences_table, settings.leases_table),
        concurrency=CONCURRENCY,
        lease_shards=getattr(settings, "shards", None),
        seal=seal,
    )
