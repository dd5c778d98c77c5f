"""The one-machine store: every store port over one SQLite file and one connection.

Each port is a module and an object of its own (tables.py says what they share):

- schedules.py: schedules, versions, the planning reads and materialization;
- run_records.py: run records, from insert to admission and sending;
- leases.py: dispatch leases and heartbeats;
- retention.py: the purge of finished history (the janitor's).

``SqliteStore`` is the service's ``Store`` of those port objects, with the
retention beside them: one connection and one lock (the retention's, which
owns it), as the tick, the worker and the API of one process share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adapters.sqlite.leases import SqliteLeases
from adapters.sqlite.retention import SqliteRetention
from adapters.sqlite.run_records import SqliteRunRecords
from adapters.sqlite.schedules import SqliteSchedules


@dataclass(frozen=True)
class SqliteStore:
    """Schedules, occurrences, leases and heartbeats in one SQLite file."""

    schedules: SqliteSchedules
    records: SqliteRunRecords
    leases: SqliteLeases
    retention: SqliteRetention

    @classmethod
    def open(cls, path: str | Path, *, busy_timeout_s: float = 30.0) -> SqliteStore:
        """Open (and create, or bring up to date) the store's file."""
        owner = SqliteRetention(path, busy_timeout_s=busy_timeout_s)
        return cls(
            schedules=SqliteSchedules(path, connection_of=owner),
            records=SqliteRunRecords(path, connection_of=owner),
            leases=SqliteLeases(path, connection_of=owner),
            retention=owner,
        )

    @property
    def path(self) -> str:
        return self.retention.path

    def close(self) -> None:
        self.retention.close()
