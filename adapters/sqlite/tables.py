"""The one-machine store's tables, and what its port modules share.

Schedules, run records, leases and heartbeats live in one SQLite file, each
port in a module of its own (schedules.py, run_records.py, leases.py, with
retention.py beside them), each its own object; ``SqliteStore`` (store.py)
holds them, over one connection. What they share is here: the schema, the encoding of
instants and page tokens, and ``Tables``, the connection with its schema.

- WAL journal, a busy timeout, and ``BEGIN IMMEDIATE`` for every write
  transaction, so several processes on one machine can share the file: writers
  queue for the lock instead of failing, readers never block.
- Every identity rule is a UNIQUE key or an ``UPDATE ... WHERE`` inside one
  transaction: an occurrence's business key and its id are unique; a schedule
  edit, a materialization and an admission each re-check their condition in
  the statement that writes.
- A batch (a plan page, a dispatch batch) is one transaction whose conditional
  statements go through ``executemany``; when fewer rows changed than were
  given (a condition failed somewhere), the batch is undone to a savepoint and
  redone row by row to learn which ones, still inside the transaction. Either
  way the statement's own condition decides.
- Instants are stored as integer microseconds since the Unix epoch (UTC), so
  they compare and sort exactly; wall times as naive ISO text.
- The schema is created when the store is opened.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.sqlite.database import Database

# A schedule that may be planned and admitted: not paused, deleted or
# quarantined (its version is compared where the statement has one). The SQL
# of ``domain.start.decide_standing``'s rules, for a schedules row aliased ``s``.
ACTIVE_SQL = "s.paused = 0 AND s.deleted_at IS NULL AND s.quarantine IS NULL"

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)

SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    schedule_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    note TEXT,
    next_due INTEGER,
    last_materialized_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted_at INTEGER
);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_due, schedule_id)
    WHERE paused = 0 AND deleted_at IS NULL AND next_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS schedules_listing ON schedules (created_at, schedule_id)
    WHERE deleted_at IS NULL;
CREATE TABLE IF NOT EXISTS schedule_versions (
    schedule_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    policy TEXT NOT NULL,
    target TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (schedule_id, version)
);
CREATE TABLE IF NOT EXISTS create_keys (
    idempotency_key TEXT PRIMARY KEY,
    schedule_id TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS occurrences (
    business_key TEXT PRIMARY KEY,
    occurrence_id TEXT NOT NULL UNIQUE,
    schedule_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL,
    scheduled_at INTEGER NOT NULL,
    wall TEXT NOT NULL,
    fold INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    shard INTEGER NOT NULL,
    status TEXT NOT NULL,
    pending INTEGER NOT NULL,
    materialized_at INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    admitted_at INTEGER,
    sent_at INTEGER,
    started_at INTEGER,
    finished_at INTEGER,
    reason TEXT,
    result TEXT,
    run_lease_expires_at INTEGER,
    attempt_log TEXT,
    run_token_hash TEXT,
    progress TEXT,
    revision INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS occurrences_due ON occurrences (shard, scheduled_at, occurrence_id)
    WHERE pending = 1;
CREATE INDEX IF NOT EXISTS occurrences_pending_bucket ON occurrences (shard, bucket)
    WHERE pending = 1;
CREATE INDEX IF NOT EXISTS occurrences_by_schedule
    ON occurrences (schedule_id, scheduled_at, occurrence_id);
-- Run listings across schedules, by scheduled_at (adapters/sqlite/run_listing.py).
CREATE INDEX IF NOT EXISTS occurrences_by_time ON occurrences (scheduled_at, occurrence_id);
CREATE TABLE IF NOT EXISTS leases (
    shard INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS heartbeats (
    component TEXT PRIMARY KEY,
    at INTEGER NOT NULL,
    detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_secrets (
    schedule_id TEXT PRIMARY KEY,
    secret TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS store_meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""

# Columns added after the first release, each with the statement that adds it
# to a database made before it (checked when the store is opened).
_ADDED_COLUMNS = (
    ("schedules", "quarantine", "ALTER TABLE schedules ADD COLUMN quarantine TEXT"),
    (
        "occurrences",
        "revision",
        "ALTER TABLE occurrences ADD COLUMN revision INTEGER NOT NULL DEFAULT 0",
    ),
)


def us(instant: datetime) -> int:
    """An aware instant as integer microseconds since the epoch."""
    if instant.tzinfo is None:
        raise ValueError("instants are stored aware")
    return (instant - EPOCH) // US


def opt_us(instant: datetime | None) -> int | None:
    return None if instant is None else us(instant)


def from_us(value: int) -> datetime:
    return EPOCH + value * US  # exact, and twice as fast as timedelta(microseconds=)


def opt_dt(value: int | None) -> datetime | None:
    return None if value is None else EPOCH + value * US


def page_token(values: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(values)).encode()).decode()


def read_token(token: str) -> list[Any]:
    try:
        values = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError):
        raise ValueError("not a page token from this store") from None
    if not isinstance(values, list):
        raise ValueError("not a page token from this store")
    return values


def each_or_all(
    db: sqlite3.Connection, name: str, sql: str, params: Sequence[tuple[Any, ...]]
) -> list[bool]:
    """Run one conditional UPDATE per parameter row, inside the caller's
    transaction; which rows changed.

    The common case (every row changes) is one executemany; otherwise it is
    undone to a savepoint and run row by row to learn which ones did.
    """
    db.execute(f"SAVEPOINT {name}")
    if db.executemany(sql, params).rowcount == len(params):
        db.execute(f"RELEASE {name}")
        return [True] * len(params)
    db.execute(f"ROLLBACK TO {name}")
    db.execute(f"RELEASE {name}")
    return [db.execute(sql, p).rowcount == 1 for p in params]


class Tables(Database):
    """The store's file: its connection (``Database``) with this schema, brought
    up to date when opened. Each port module's class reads and writes through it."""

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_s: float = 30.0,
        connection_of: Database | None = None,
    ) -> None:
        """``connection_of``: another port's ``Tables`` on the same file, whose
        connection (and lock) this one shares; the schema is then its."""
        if connection_of is not None:
            super().__init__(path, "", connection_of=connection_of)
            return
        super().__init__(path, SCHEMA, busy_timeout_s=busy_timeout_s, cache_kib=65536)
        self._add_columns()

    def _add_columns(self) -> None:
        """Bring a database made by an earlier release up to this schema: one
        write transaction, so two processes opening it at once add each column once."""
        with self._write() as db:
            for table, column, statement in _ADDED_COLUMNS:
                present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                if column not in present:
                    db.execute(statement)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()
