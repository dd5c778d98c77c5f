"""The run-record port over SQLite (``OccurrenceStore``, service/ports.py): one
row per occurrence in ``occurrences``, inserted once by its business key,
read by schedule, by time and by dispatch shard, and moved on (admitted,
closed, sent, withdrawn) by conditional statements.

A run's life after admission (attempts, leases, results) is the run store's
(runs.py), on the same rows and connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from adapters.sqlite import run_listing
from adapters.sqlite.retention import refuse_purged_backfill
from adapters.sqlite.rows import _KIND, _RUN_COLUMNS, _RUN_INSERT, _STATUS, run_from_row, run_row
from adapters.sqlite.tables import (
    ACTIVE_SQL,
    EPOCH,
    US,
    Tables,
    each_or_all,
    page_token,
    read_token,
    us,
)
from domain.run import PendingOccurrence, Run, RunStatus
from service.ports import Closure, OccurrenceStore, Page, RunQuery

# Admission's condition: still scheduled, and its schedule active (not paused,
# not deleted, not quarantined), checked in the statement that writes.
_ADMIT = (
    "UPDATE occurrences SET status = 'admitted', admitted_at = ? "
    "WHERE occurrence_id = ? AND status = 'scheduled' AND EXISTS ("
    f"SELECT 1 FROM schedules s WHERE s.schedule_id = occurrences.schedule_id AND {ACTIVE_SQL})"
)
_CLOSE = (
    "UPDATE occurrences SET status = ?, reason = ?, finished_at = ?, pending = 0 "
    "WHERE occurrence_id = ? AND status = 'scheduled'"
)
_MARK_SENT = (
    "UPDATE occurrences SET pending = 0, sent_at = ? "
    "WHERE occurrence_id = ? AND pending = 1 AND status != 'scheduled'"
)
_INTO_OUTBOX = (
    "UPDATE occurrences SET pending = 1, sent_at = NULL "
    "WHERE occurrence_id = ? AND pending = 0 AND status = 'admitted' AND attempts = 0"
)


class SqliteRunRecords(Tables, OccurrenceStore):
    """Run records in the store's file."""

    def insert(self, runs: Sequence[Run]) -> list[str]:
        with self._write() as db:
            refuse_purged_backfill(db, runs)
            return [
                run.occurrence_id
                for run in runs
                if db.execute(_RUN_INSERT, run_row(run)).rowcount == 1
            ]

    def get_run(self, occurrence_id: str) -> Run | None:
        rows = self._read(
            f"SELECT {_RUN_COLUMNS} FROM occurrences WHERE occurrence_id = ?", (occurrence_id,)
        )
        return run_from_row(rows[0]) if rows else None

    def get_by_business_key(self, key: str) -> Run | None:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM occurrences WHERE business_key = ?", (key,))
        return run_from_row(rows[0]) if rows else None

    def runs(self, schedule_id: str, limit: int, token: str | None = None) -> Page[Run]:
        before = read_token(token) if token else [2**62, "~"]
        rows = self._read(
            f"SELECT {_RUN_COLUMNS} FROM occurrences WHERE schedule_id = ? "
            "AND (scheduled_at, occurrence_id) < (?, ?) "
            "ORDER BY scheduled_at DESC, occurrence_id DESC LIMIT ?",
            (schedule_id, before[0], before[1], limit + 1),
        )
        items = tuple(run_from_row(r) for r in rows[:limit])
        next_token = (
            page_token([rows[limit - 1][5], rows[limit - 1][0]]) if len(rows) > limit else None
        )
        return Page(items, next_token)

    def find_runs(self, query: RunQuery, limit: int, token: str | None = None) -> Page[Run]:
        return run_listing.find_runs(
            self._read, _RUN_COLUMNS, run_from_row, us, query, limit, token
        )

    def pending_due(
        self, shard: int, from_bucket: int, to_bucket: int, due_by: datetime, limit: int
    ) -> list[PendingOccurrence]:
        rows = self._read(
            "SELECT occurrence_id, schedule_id, version, scheduled_at, kind, status "
            "FROM occurrences INDEXED BY occurrences_due "
            "WHERE pending = 1 AND shard = ? AND scheduled_at <= ? "
            "AND bucket BETWEEN ? AND ? ORDER BY scheduled_at, occurrence_id LIMIT ?",
            (shard, us(due_by), from_bucket, to_bucket, limit),
        )
        # Once per occurrence dispatched: made without the named tuple's __new__,
        # in field order; kind and status by dict lookup, not Enum calls.
        epoch, micro, new, kinds, statuses = EPOCH, US, tuple.__new__, _KIND, _STATUS
        return [
            new(
                PendingOccurrence,
                (r[0], r[1], r[2], epoch + r[3] * micro, kinds[r[4]], statuses[r[5]]),
            )
            for r in rows
        ]

    def earliest_pending_bucket(self, shard: int, from_bucket: int | None = None) -> int | None:
        rows = self._read(
            "SELECT MIN(bucket) FROM occurrences WHERE pending = 1 AND shard = ? AND bucket >= ?",
            (shard, -(2**62) if from_bucket is None else from_bucket),
        )
        value = rows[0][0]
        return None if value is None else int(value)

    def admit(self, occurrences: Sequence[PendingOccurrence], now: datetime) -> list[str]:
        if not occurrences:
            return []
        # Admitted as of now, or of its instant for one admitted ahead of it.
        now_us = us(now)
        params = [(max(now_us, us(o.scheduled_at)), o.occurrence_id) for o in occurrences]
        with self._write() as db:
            changed = each_or_all(db, "admit", _ADMIT, params)
        return [o.occurrence_id for o, ok in zip(occurrences, changed, strict=True) if ok]

    def close_runs(self, closures: Sequence[Closure], now: datetime) -> list[str]:
        if not closures:
            return []
        now_us = us(now)
        params = [(c.status.value, c.reason, now_us, c.occurrence_id) for c in closures]
        with self._write() as db:
            changed = each_or_all(db, "close_runs", _CLOSE, params)
        return [c.occurrence_id for c, ok in zip(closures, changed, strict=True) if ok]

    def close_scheduled(
        self, schedule_id: str, status: RunStatus, reason: str, now: datetime
    ) -> int:
        with self._write() as db:
            return int(
                db.execute(
                    "UPDATE occurrences SET status = ?, reason = ?, finished_at = ?, pending = 0 "
                    "WHERE schedule_id = ? AND status = 'scheduled'",
                    (status.value, reason, us(now), schedule_id),
                ).rowcount
            )

    def withdraw_planned(self, schedule_id: str, after: datetime) -> int:
        with self._write() as db:
            return int(
                db.execute(
                    "DELETE FROM occurrences WHERE schedule_id = ? AND kind = 'scheduled' "
                    "AND scheduled_at > ? AND attempts = 0 "
                    "AND status IN ('scheduled', 'admitted')",
                    (schedule_id, us(after)),
                ).rowcount
            )

    def mark_sent(self, occurrence_ids: Sequence[str], now: datetime) -> int:
        now_us = us(now)
        with self._write() as db:
            cursor = db.executemany(_MARK_SENT, [(now_us, oid) for oid in occurrence_ids])
            return int(cursor.rowcount)

    def into_outbox(self, runs: Sequence[Run]) -> int:
        with self._write() as db:
            cursor = db.executemany(_INTO_OUTBOX, [(run.occurrence_id,) for run in runs])
            return int(cursor.rowcount)
