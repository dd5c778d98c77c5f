"""The one-machine store: every store port over one SQLite file and one connection.

Each port is a module of its own (tables.py says what they share):

- schedules.py: schedules, versions, the planning reads and materialization;
- run_records.py: run records, from insert to admission and sending;
- leases.py: dispatch leases and heartbeats;
- retention.py: the purge of finished history (the janitor's).

``SqliteStore`` inherits them all: one object, one connection, one lock, as
the tick, the worker and the API of one process share it.
"""

from __future__ import annotations

from pathlib import Path

from adapters.sqlite.leases import SqliteLeases
from adapters.sqlite.retention import SqliteRetention
from adapters.sqlite.run_records import SqliteRunRecords
from adapters.sqlite.schedules import SqliteSchedules
from service.ports import Store


class SqliteStore(SqliteSchedules, SqliteRunRecords, SqliteLeases, SqliteRetention, Store):
    """Schedules, occurrences, leases and heartbeats in one SQLite file."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0) -> None:
        super().__init__(path, busy_timeout_s=busy_timeout_s)
