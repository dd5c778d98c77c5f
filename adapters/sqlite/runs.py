"""The run transitions over the one-machine store's ``occurrences`` table.

It shares the ``SqliteStore``'s connection (and its lock), so the worker and
the dispatcher in one process write through one connection, and processes on
the same file queue for SQLite's write lock.

Each transition runs in one ``BEGIN IMMEDIATE`` transaction: the row is read
and rewritten by an ``UPDATE ... WHERE`` that repeats the condition (status,
attempt number, lease, token hash), so the condition is checked by the
statement that writes even though the attempt log (a JSON column) is computed
in Python. No columns are added: the run's lease, attempt log, token hash and
progress already have columns.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from adapters.sqlite.store import _RUN_COLUMNS, SqliteStore, _json, run_from_row, run_row, us
from domain.run import AttemptRecord, Run, RunStatus
from domain.schedule import ScheduleVersion
from service.run_ports import (
    ATTEMPT_ACCEPTED,
    ATTEMPT_LOST,
    FINISHED,
    RETRYABLE,
    RunStore,
    ScheduleNow,
)

# A run and the version it runs under (NULL columns if that version is gone).
_RUN_WITH_VERSION = (
    "SELECT "
    + ", ".join(f"o.{name.strip()}" for name in _RUN_COLUMNS.split(","))
    + ", v.created_at, v.name, v.spec, v.policy, v.target, v.payload FROM occurrences o "
    "LEFT JOIN schedule_versions v ON v.schedule_id = o.schedule_id AND v.version = o.version "
    "WHERE o.occurrence_id = ?"
)
_VERSION_AT = len(_RUN_COLUMNS.split(","))

# run_row's columns, in order, as an UPDATE's SET list.
_SET_ALL = ", ".join(f"{name.strip()} = ?" for name in _RUN_COLUMNS.split(","))


def _close_last(
    log: tuple[AttemptRecord, ...], now: datetime, outcome: str | None, error: str | None
) -> tuple[AttemptRecord, ...]:
    if not log or log[-1].finished_at is not None:
        return log
    return (*log[:-1], replace(log[-1], finished_at=now, outcome=outcome, error=error))


# The attempt log in SQL, in the store's compact form (adapters/sqlite/store.py
# ``_attempt_log_text``): one ``[started, finished, outcome, error]`` array per
# attempt, a fifth element only when its number is not its position. Files
# written before hold keyed objects; the last entry is read in either form.
_NEW_ATTEMPT = (
    "CASE WHEN attempts = json_array_length(COALESCE(attempt_log, '[]')) "
    "THEN json_array(?, NULL, NULL, NULL) ELSE json_array(?, NULL, NULL, NULL, attempts + 1) END"
)
_LAST_FINISHED = (
    "COALESCE(json_extract(attempt_log, '$[#-1][1]'), "
    "json_extract(attempt_log, '$[#-1].finished_at'))"
)


class SqliteRunStore(RunStore):
    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    @classmethod
    def open(cls, path: str) -> SqliteRunStore:
        return cls(SqliteStore(path))

    def get_run(self, occurrence_id: str) -> Run | None:
        """The run, read with its version in the same statement: the worker
        asks for the version next (``get_version``), and the store keeps
        versions once read (they never change), so that read is spared
        (bench/burst.py: one query and one read transaction a run fewer in a
        burst of schedules not read before)."""
        rows = self.store._read(_RUN_WITH_VERSION, (occurrence_id,))
        if not rows:
            return None
        row = rows[0]
        run = run_from_row(row)
        key = (run.schedule_id, run.version)
        if row[_VERSION_AT] is not None and key not in self.store._versions:
            # kept by the store; one that cannot be read is left to get_version,
            # which reads it again and says what is wrong
            with contextlib.suppress(Exception):
                self.store._version_from_row(key[0], key[1], row[_VERSION_AT:])
        return run

    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        return self.store.get_version(schedule_id, version)

    def schedule_now(self, schedule_id: str) -> ScheduleNow | None:
        # One row by its key: the worker asks before every first attempt.
        rows = self.store._read(
            "SELECT version, paused, deleted_at FROM schedules WHERE schedule_id = ?",
            (schedule_id,),
        )
        if not rows:
            return None
        version, paused, deleted_at = rows[0]
        return ScheduleNow(int(version), bool(paused), deleted_at is not None)

    # --- one conditional rewrite ----------------------------------------------------------

    def _load(self, db: sqlite3.Connection, occurrence_id: str) -> Run | None:
        row = db.execute(
            f"SELECT {_RUN_COLUMNS} FROM occurrences WHERE occurrence_id = ?", (occurrence_id,)
        ).fetchone()
        return None if row is None else run_from_row(row)

    @staticmethod
    def _rewrite(
        db: sqlite3.Connection,
        before: Run,
        after: Run,
        extra_where: str = "",
        extra_params: tuple[Any, ...] = (),
    ) -> bool:
        """Write ``after`` if the row still has ``before``'s status and attempts
        (and meets ``extra_where``)."""
        changed = db.execute(
            f"UPDATE occurrences SET {_SET_ALL} WHERE occurrence_id = ? AND status = ? "
            f"AND attempts = ? {extra_where}",
            (
                *run_row(after),
                before.occurrence_id,
                before.status.value,
                before.attempts,
                *extra_params,
            ),
        ).rowcount
        return bool(changed == 1)

    # --- transitions ------------------------------------------------------------------------

    def start_attempt(
        self,
        occurrence_id: str,
        *,
        now: datetime,
        lease_until: datetime,
        run_token_hash: str | None,
    ) -> Run | None:
        with self.store._write() as db:
            # The common case in one statement: a run waiting for its first or
            # next attempt, its attempt log closed (bench/burst.py: about 40 us
            # a run less than reading, rebuilding and rewriting the row).
            now_us = us(now)
            row = db.execute(
                f"UPDATE occurrences SET status = ?, attempts = attempts + 1, "
                "started_at = COALESCE(started_at, ?), run_lease_expires_at = ?, "
                "run_token_hash = ?, attempt_log = json_insert(COALESCE(attempt_log, '[]'), "
                f"'$[#]', {_NEW_ATTEMPT}) "
                "WHERE occurrence_id = ? AND status IN (?, ?) AND (attempt_log IS NULL "
                "OR json_array_length(attempt_log) = 0 "
                f"OR {_LAST_FINISHED} IS NOT NULL) "
                f"RETURNING {_RUN_COLUMNS}",
                (
                    RunStatus.RUNNING.value,
                    now_us,
                    us(lease_until),
                    run_token_hash,
                    now_us,
                    now_us,
                    occurrence_id,
                    RunStatus.ADMITTED.value,
                    RunStatus.RETRYING.value,
                ),
            ).fetchone()
            after = (
                None
                if row is not None
                else self._start_other(db, occurrence_id, now, lease_until, run_token_hash)
            )
        # The row is read back after the commit: the write lock is not held
        # while Python builds the run.
        return run_from_row(row) if row is not None else after

    def _start_other(
        self,
        db: sqlite3.Connection,
        occurrence_id: str,
        now: datetime,
        lease_until: datetime,
        run_token_hash: str | None,
    ) -> Run | None:
        """``start_attempt`` of a run the one statement did not start: its
        last attempt still open (lost, if its lease expired) or not startable."""
        run = self._load(db, occurrence_id)
        if run is None:
            return None
        lease = run.run_lease_expires_at
        lost = run.status is RunStatus.RUNNING and (lease is None or lease <= now)
        if not (run.status in (RunStatus.ADMITTED, RunStatus.RETRYING) or lost):
            return None
        log = _close_last(run.attempt_log, now, ATTEMPT_LOST, "run lease expired")
        number = run.attempts + 1
        after = replace(
            run,
            status=RunStatus.RUNNING,
            attempts=number,
            started_at=run.started_at or now,
            run_lease_expires_at=lease_until,
            run_token_hash=run_token_hash,
            attempt_log=(*log, AttemptRecord(number=number, started_at=now)),
        )
        if lost:
            # Taken over only while its lease is still the expired one.
            where = "AND (run_lease_expires_at IS NULL OR run_lease_expires_at <= ?)"
            return after if self._rewrite(db, run, after, where, (us(now),)) else None
        return after if self._rewrite(db, run, after) else None

    def finish(
        self,
        occurrence_id: str,
        *,
        attempt: int | None,
        status: RunStatus,
        now: datetime,
        reason: str | None = None,
        result: Mapping[str, Any] | None = None,
        outcome: str | None = None,
        error: str | None = None,
    ) -> Run | None:
        if status not in FINISHED:
            raise ValueError(f"finish ends a run as {sorted(FINISHED)}, not {status.value}")
        if attempt is not None:
            with self.store._write() as db:
                row = self._finish_attempt(
                    db, occurrence_id, attempt, status, now, reason, result, outcome, error
                )
            return None if row is None else run_from_row(row)  # after the commit
        with self.store._write() as db:
            run = self._load(db, occurrence_id)
            if run is None or run.status not in (RunStatus.ADMITTED, RunStatus.RETRYING):
                return None
            after = replace(
                run,
                status=status,
                finished_at=now,
                reason=reason,
                result=None if result is None else dict(result),
                run_lease_expires_at=None,
                run_token_hash=None,
                pending=False,
            )
            return after if self._rewrite(db, run, after) else None

    @staticmethod
    def _finish_attempt(
        db: sqlite3.Connection,
        occurrence_id: str,
        attempt: int,
        status: RunStatus,
        now: datetime,
        reason: str | None,
        result: Mapping[str, Any] | None,
        outcome: str | None,
        error: str | None,
    ) -> Any:
        """``finish`` of the attempt that holds the run, in one statement: the
        last attempt record is closed in place if it is still open. Returns
        the row written, or None."""
        now_us = us(now)
        return db.execute(
            "UPDATE occurrences SET status = ?, finished_at = ?, reason = ?, result = ?, "
            "run_lease_expires_at = NULL, run_token_hash = NULL, pending = 0, "
            "attempt_log = CASE "
            "WHEN json_type(attempt_log, '$[#-1]') = 'array' "
            "AND json_extract(attempt_log, '$[#-1][1]') IS NULL "
            "THEN json_set(attempt_log, '$[#-1][1]', ?, '$[#-1][2]', ?, '$[#-1][3]', ?) "
            "WHEN json_type(attempt_log, '$[#-1]') = 'object' "
            "AND json_extract(attempt_log, '$[#-1].finished_at') IS NULL "
            "THEN json_set(attempt_log, '$[#-1].finished_at', ?, '$[#-1].outcome', ?, "
            "'$[#-1].error', ?) ELSE attempt_log END "
            "WHERE occurrence_id = ? AND status = ? AND attempts = ? "
            f"RETURNING {_RUN_COLUMNS}",
            (
                status.value,
                now_us,
                reason,
                None if result is None else _json(dict(result)),
                *(now_us, outcome or status.value, error) * 2,
                occurrence_id,
                RunStatus.RUNNING.value,
                attempt,
            ),
        ).fetchone()

    def record_retry(
        self,
        occurrence_id: str,
        *,
        attempt: int,
        now: datetime,
        outcome: str,
        error: str | None,
        result: Mapping[str, Any] | None = None,
    ) -> Run | None:
        with self.store._write() as db:
            run = self._load(db, occurrence_id)
            if run is None or run.status is not RunStatus.RUNNING or run.attempts != attempt:
                return None
            after = replace(
                run,
                status=RunStatus.RETRYING,
                run_lease_expires_at=None,
                run_token_hash=None,
                result=None if result is None else dict(result),
                attempt_log=_close_last(run.attempt_log, now, outcome, error),
            )
            return after if self._rewrite(db, run, after) else None

    def extend_lease(self, occurrence_id: str, *, attempt: int, until: datetime) -> bool:
        # One statement, no read: the heartbeat runs every few seconds for
        # every attempt in flight.
        with self.store._write() as db:
            changed = db.execute(
                "UPDATE occurrences SET run_lease_expires_at = ? WHERE occurrence_id = ? "
                "AND status = ? AND attempts = ? "
                "AND (run_lease_expires_at IS NULL OR run_lease_expires_at < ?)",
                (us(until), occurrence_id, RunStatus.RUNNING.value, attempt, us(until)),
            ).rowcount
        return bool(changed == 1)

    def mark_accepted(
        self,
        occurrence_id: str,
        *,
        attempt: int,
        now: datetime,
        deadline: datetime,
        result: Mapping[str, Any] | None,
    ) -> Run | None:
        with self.store._write() as db:
            run = self._load(db, occurrence_id)
            if run is None or run.status is not RunStatus.RUNNING or run.attempts != attempt:
                return None
            log = run.attempt_log
            if log and log[-1].number == attempt and log[-1].finished_at is None:
                log = (*log[:-1], replace(log[-1], outcome=ATTEMPT_ACCEPTED))
            after = replace(
                run,
                run_lease_expires_at=deadline,
                result=None if result is None else dict(result),
                attempt_log=log,
            )
            return after if self._rewrite(db, run, after) else None

    def report_progress(
        self, occurrence_id: str, *, run_token_hash: str, progress: Mapping[str, Any]
    ) -> Run | None:
        with self.store._write() as db:
            row = db.execute(
                "UPDATE occurrences SET progress = ? WHERE occurrence_id = ? "
                "AND status = 'running' AND run_token_hash = ? "
                f"RETURNING {_RUN_COLUMNS}",
                (json.dumps(dict(progress), separators=(",", ":")), occurrence_id, run_token_hash),
            ).fetchone()
        return None if row is None else run_from_row(row)

    def complete(
        self,
        occurrence_id: str,
        *,
        run_token_hash: str,
        succeeded: bool,
        now: datetime,
        result: Mapping[str, Any] | None,
        error: str | None,
    ) -> Run | None:
        with self.store._write() as db:
            run = self._load(db, occurrence_id)
            if (
                run is None
                or run.status is not RunStatus.RUNNING
                or run.run_token_hash != run_token_hash
                or run.run_lease_expires_at is None
                or run.run_lease_expires_at <= now
            ):
                return None
            status = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
            after = replace(
                run,
                status=status,
                finished_at=now,
                reason=None if succeeded else f"the job reported failure: {error or 'no detail'}",
                result={**dict(run.result or {}), **dict(result or {})},
                run_lease_expires_at=None,
                run_token_hash=None,
                pending=False,
                attempt_log=_close_last(
                    run.attempt_log, now, "succeeded" if succeeded else "failed", error
                ),
            )
            where = "AND run_token_hash = ? AND run_lease_expires_at > ?"
            ok = self._rewrite(db, run, after, where, (run_token_hash, us(now)))
            return after if ok else None

    def retry(self, occurrence_id: str, *, now: datetime, bucket: int, reason: str) -> Run | None:
        with self.store._write() as db:
            row = db.execute(
                "UPDATE occurrences SET status = ?, admitted_at = ?, reason = ?, "
                "finished_at = NULL, sent_at = NULL, run_lease_expires_at = NULL, "
                "run_token_hash = NULL, pending = 1, bucket = ? "
                "WHERE occurrence_id = ? AND status IN (?, ?) "
                f"RETURNING {_RUN_COLUMNS}",
                (
                    RunStatus.ADMITTED.value,
                    us(now),
                    reason,
                    bucket,
                    occurrence_id,
                    *sorted(status.value for status in RETRYABLE),
                ),
            ).fetchone()
        return None if row is None else run_from_row(row)

    def running_before(self, run: Run, now: datetime) -> Run | None:
        rows = self.store._read(
            f"SELECT {_RUN_COLUMNS} FROM occurrences WHERE schedule_id = ? "
            "AND (scheduled_at, occurrence_id) < (?, ?) AND ("
            "(status = 'running' AND run_lease_expires_at > ?) OR status = 'retrying') "
            "ORDER BY scheduled_at DESC, occurrence_id DESC LIMIT 1",
            (run.schedule_id, us(run.scheduled_at), run.occurrence_id, us(now)),
        )
        return run_from_row(rows[0]) if rows else None
