"""Tables for an emulated DynamoDB endpoint (moto, in tests and the emulator stack)."""

from __future__ import annotations

from typing import Any

from adapters.definitions import LEASES, OCCURRENCES, SCHEDULES, create_tables
from adapters.dynamodb.tables import TableNames


def create_store_tables(client: Any, prefix: str) -> TableNames:
    """Create the three tables, named ``<prefix>-<logical id>``, and return their names."""
    names = TableNames(
        schedules=f"{prefix}-{SCHEDULES.logical_id}",
        occurrences=f"{prefix}-{OCCURRENCES.logical_id}",
        leases=f"{prefix}-{LEASES.logical_id}",
    )
    create_tables(
        client,
        {
            SCHEDULES.logical_id: names.schedules,
            OCCURRENCES.logical_id: names.occurrences,
            LEASES.logical_id: names.leases,
        },
    )
    return names
