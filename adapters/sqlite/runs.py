"""The run store over the one-machine store's ``occurrences`` table.

It shares the ``SqliteStore``'s connection (and its lock), so the worker and
the dispatcher in one process write through one connection, and processes on
the same file queue for SQLite's write lock.

The transitions are the domain's (``domain/transitions.py``); this store
reads a run and writes one by compare-and-set: one ``UPDATE ... WHERE
occurrence_id = ? AND revision = ?`` of the columns the transition changed
(``run_changes``), in one ``BEGIN IMMEDIATE`` transaction.
"""

from __future__ import annotations

import contextlib
from datetime import datetime

from adapters.sqlite.rows import _RUN_COLUMNS, run_changes, run_from_row
from adapters.sqlite.store import SqliteStore
from adapters.sqlite.tables import us
from domain.run import Run
from domain.schedule import ScheduleVersion
from service.run_ports import RunStore, ScheduleNow

# A run and the version it runs under (NULL columns if that version is gone).
_RUN_WITH_VERSION = (
    "SELECT "
    + ", ".join(f"o.{name.strip()}" for name in _RUN_COLUMNS.split(","))
    + ", v.created_at, v.name, v.spec, v.policy, v.target, v.payload FROM occurrences o "
    "LEFT JOIN schedule_versions v ON v.schedule_id = o.schedule_id AND v.version = o.version "
    "WHERE o.occurrence_id = ?"
)
_VERSION_AT = len(_RUN_COLUMNS.split(","))


class SqliteRunStore(RunStore):
    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    @classmethod
    def open(cls, path: str) -> SqliteRunStore:
        return cls(SqliteStore.open(path))

    def get_run(self, occurrence_id: str) -> Run | None:
        """The run, read with its version in the same statement: the worker
        asks for the version next (``get_version``), and the store keeps
        versions once read (they never change), so that read is spared
        (bench/burst.py: one query and one read transaction a run fewer in a
        burst of schedules not read before)."""
        rows = self.store.records._read(_RUN_WITH_VERSION, (occurrence_id,))
        if not rows:
            return None
        row = rows[0]
        run = run_from_row(row)
        key = (run.schedule_id, run.version)
        if row[_VERSION_AT] is not None and key not in self.store.schedules._versions:
            # kept by the store; one that cannot be read is left to get_version,
            # which reads it again and says what is wrong
            with contextlib.suppress(Exception):
                self.store.schedules._version_from_row(key[0], key[1], row[_VERSION_AT:])
        return run

    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        return self.store.schedules.get_version(schedule_id, version)

    def schedule_now(self, schedule_id: str) -> ScheduleNow | None:
        # One row by its key: the worker asks before every first attempt.
        rows = self.store.records._read(
            "SELECT version, paused, deleted_at, quarantine FROM schedules WHERE schedule_id = ?",
            (schedule_id,),
        )
        if not rows:
            return None
        version, paused, deleted_at, quarantine = rows[0]
        return ScheduleNow(
            int(version), bool(paused), deleted_at is not None, quarantine is not None
        )

    def compare_and_set(self, before: Run, after: Run) -> bool:
        if before.occurrence_id != after.occurrence_id:
            raise ValueError("compare_and_set writes one run: the occurrence ids differ")
        columns, values = run_changes(before, after)
        # (nothing changed: still a check that the record is that one)
        assignments = ", ".join(f"{column} = ?" for column in columns) or "revision = revision"
        with self.store.records._write() as db:
            changed = db.execute(
                f"UPDATE occurrences SET {assignments} WHERE occurrence_id = ? AND revision = ?",
                (*values, before.occurrence_id, before.revision),
            ).rowcount
        return bool(changed == 1)

    def running_before(self, run: Run, now: datetime) -> Run | None:
        rows = self.store.records._read(
            f"SELECT {_RUN_COLUMNS} FROM occurrences WHERE schedule_id = ? "
            "AND (scheduled_at, occurrence_id) < (?, ?) AND ("
            "(status = 'running' AND run_lease_expires_at > ?) OR status = 'retrying') "
            "ORDER BY scheduled_at DESC, occurrence_id DESC LIMIT 1",
            (run.schedule_id, us(run.scheduled_at), run.occurrence_id, us(now)),
        )
        return run_from_row(rows[0]) if rows else None
