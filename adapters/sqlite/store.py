"""The one-machine store: schedules, occurrences, leases and heartbeats in one SQLite file.

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

Immutable schedule versions are cached per store object: a version never
changes once written.
"""

from __future__ import annotations

import base64
import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from adapters.sqlite import run_listing
from adapters.sqlite.database import Database
from domain.errors import InvalidSchedule
from domain.identity import wall_text
from domain.run import TERMINAL, AttemptRecord, PendingOccurrence, Run, RunKind, RunStatus
from domain.schedule import (
    Quarantine,
    QuarantineComponent,
    Schedule,
    ScheduleState,
    ScheduleVersion,
    dumps,
    quarantine_from_text,
    quarantine_to_text,
    stored_policy,
    stored_spec,
    stored_target,
    version_to_dict,
)
from service.ports import (
    Closure,
    DueSchedule,
    Heartbeat,
    Lease,
    Materialization,
    MaterializeOutcome,
    Page,
    RunQuery,
    Store,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Rows a purge removes per write transaction: a few milliseconds of the write
# lock (bench/growth.py).
PURGE_BATCH = 500
# store_meta's name for the latest purge cutoff (microseconds).
PURGED_BEFORE = "purged_before"
_FINISHED_TEXT = frozenset(status.value for status in TERMINAL)
# A purge's condition, re-checked by the statement that deletes: finished, no
# longer pending, and scheduled before the cutoff.
_PURGE = (
    "DELETE FROM occurrences WHERE rowid = ? AND pending = 0 AND scheduled_at < ? "
    f"AND status IN ({', '.join(repr(s) for s in sorted(_FINISHED_TEXT))})"
)
# Versions kept decoded in memory (bounded, so a tick's memory does not grow
# with the number of schedules).
VERSION_CACHE_SIZE = 2048
_US = timedelta(microseconds=1)
_ACTIVE = ScheduleState()
_log = logging.getLogger("duetime")

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
    expires_at INTEGER NOT NULL,
    checkpoint INTEGER
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

_RUN_COLUMNS = (
    "occurrence_id, business_key, schedule_id, version, kind, scheduled_at, wall, fold, "
    "bucket, shard, status, pending, materialized_at, attempts, admitted_at, sent_at, "
    "started_at, finished_at, reason, result, run_lease_expires_at, attempt_log, "
    "run_token_hash, progress, revision"
)
_RUN_INSERT = (
    f"INSERT INTO occurrences ({_RUN_COLUMNS}) VALUES ({', '.join('?' * 25)}) "
    "ON CONFLICT DO NOTHING"
)
# Materialization's condition: the schedule is still at the version and next_due
# the planner read, and active.
_MATERIALIZE = (
    "UPDATE schedules SET next_due = ?, last_materialized_at = ? "
    "WHERE schedule_id = ? AND version = ? AND next_due = ? "
    "AND paused = 0 AND deleted_at IS NULL AND quarantine IS NULL"
)
# Admission's condition: still scheduled, and its schedule active (not paused,
# not deleted, not quarantined), checked in the statement that writes.
_ADMIT = (
    "UPDATE occurrences SET status = 'admitted', admitted_at = ? "
    "WHERE occurrence_id = ? AND status = 'scheduled' AND EXISTS ("
    "SELECT 1 FROM schedules s WHERE s.schedule_id = occurrences.schedule_id "
    "AND s.paused = 0 AND s.deleted_at IS NULL AND s.quarantine IS NULL)"
)
_CLOSE = (
    "UPDATE occurrences SET status = ?, reason = ?, finished_at = ?, pending = 0 "
    "WHERE occurrence_id = ? AND status = 'scheduled'"
)
_MARK_SENT = (
    "UPDATE occurrences SET pending = 0, sent_at = ? "
    "WHERE occurrence_id = ? AND pending = 1 AND status != 'scheduled'"
)
# A schedule head joined with its current version: one query, no second read.
_HEAD_SELECT = (
    "SELECT s.schedule_id, s.version, s.paused, s.note, s.next_due, s.last_materialized_at, "
    "s.created_at, s.updated_at, s.deleted_at, "
    "v.created_at, v.name, v.spec, v.policy, v.target, v.payload, s.quarantine "
    "FROM schedules s JOIN schedule_versions v "
    "ON v.schedule_id = s.schedule_id AND v.version = s.version "
)
_SCHEDULE_COLUMNS = (
    "schedule_id, version, paused, note, next_due, last_materialized_at, "
    "created_at, updated_at, deleted_at, quarantine"
)


def us(instant: datetime) -> int:
    """An aware instant as integer microseconds since the epoch."""
    if instant.tzinfo is None:
        raise ValueError("instants are stored aware")
    return (instant - _EPOCH) // _US


def _opt_us(instant: datetime | None) -> int | None:
    return None if instant is None else us(instant)


def from_us(value: int) -> datetime:
    return _EPOCH + value * _US  # exact, and twice as fast as timedelta(microseconds=)


def _opt_dt(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + value * _US


# json.dumps with any option builds a JSONEncoder per call; one kept encoder
# writes the same text, about 1.5 us a call sooner (two calls per finished run).
_compact = json.JSONEncoder(separators=(",", ":")).encode


def _json(value: Any) -> str | None:
    return None if value is None else _compact(value)


def _keys_cte(n: int) -> str:
    """``k(sid, ver)``: n (schedule_id, version) pairs, to join on the versions'
    primary key (``CROSS JOIN`` keeps SQLite from scanning the versions table)."""
    return f"WITH k(sid, ver) AS (VALUES {', '.join(['(?, ?)'] * n)}) "


def _token(values: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(values)).encode()).decode()


def _untoken(token: str) -> list[Any]:
    try:
        values = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError):
        raise ValueError("not a page token from this store") from None
    if not isinstance(values, list):
        raise ValueError("not a page token from this store")
    return values


# Enum.value is a descriptor call; these are dict lookups.
_STATUS_TEXT = {status: status.value for status in RunStatus}
_KIND_TEXT = {kind: kind.value for kind in RunKind}


def _attempt_log_text(log: Sequence[AttemptRecord]) -> str:
    """The attempt log as compact JSON: one ``[started, finished, outcome, error]``
    array per attempt (instants in microseconds), its number being its position
    from 1; a fifth element only when an attempt's number is not its position.

    Half the bytes of the keyed objects the store wrote before (about 55 of the
    110 bytes of a one-attempt run), which ``_attempt_log`` still reads.
    """
    entries: list[list[Any]] = []
    for position, a in enumerate(log, 1):
        entry: list[Any] = [us(a.started_at), _opt_us(a.finished_at), a.outcome, a.error]
        if a.number != position:
            entry.append(a.number)
        entries.append(entry)
    return _compact(entries)


def _attempt_log(text: str) -> tuple[AttemptRecord, ...]:
    records: list[AttemptRecord] = []
    for position, a in enumerate(json.loads(text), 1):
        if isinstance(a, dict):  # the keyed form of files written before
            records.append(
                AttemptRecord(
                    number=a["number"],
                    started_at=from_us(a["started_at"]),
                    finished_at=_opt_dt(a["finished_at"]),
                    outcome=a["outcome"],
                    error=a["error"],
                )
            )
        else:
            records.append(
                AttemptRecord(
                    number=a[4] if len(a) > 4 else position,
                    started_at=from_us(a[0]),
                    finished_at=_opt_dt(a[1]),
                    outcome=a[2],
                    error=a[3],
                )
            )
    return tuple(records)


def run_row(run: Run) -> tuple[Any, ...]:
    # Once per occurrence materialized: the NULL columns of a fresh record cost
    # a test each, not a call.
    epoch, micro = _EPOCH, _US
    scheduled_at = run.scheduled_at
    if scheduled_at.tzinfo is None:
        raise ValueError("instants are stored aware")
    attempt_log = run.attempt_log
    return (
        run.occurrence_id,
        run.business_key,
        run.schedule_id,
        run.version,
        _KIND_TEXT[run.kind],
        (scheduled_at - epoch) // micro,
        wall_text(run.wall),
        run.fold,
        run.bucket,
        run.shard,
        _STATUS_TEXT[run.status],
        1 if run.pending else 0,
        None if (at := run.materialized_at) is None else (at - epoch) // micro,
        run.attempts,
        None if (at := run.admitted_at) is None else (at - epoch) // micro,
        None if (at := run.sent_at) is None else us(at),
        None if (at := run.started_at) is None else us(at),
        None if (at := run.finished_at) is None else us(at),
        run.reason,
        None if run.result is None else _json(dict(run.result)),
        None if (at := run.run_lease_expires_at) is None else us(at),
        None if not attempt_log else _attempt_log_text(attempt_log),
        run.run_token_hash,
        None if run.progress is None else _json(dict(run.progress)),
        run.revision,
    )


def _identity(value: Any) -> Any:
    return value


def _flag(value: bool) -> int:
    return 1 if value else 0


def _opt_json(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else _json(dict(value))


def _opt_log_text(log: Sequence[AttemptRecord]) -> str | None:
    return None if not log else _attempt_log_text(log)


# Each field of a Run a transition may change, with its column's encoding (as
# ``run_row`` writes it). A field missing here (the occurrence's identity: id,
# business key, schedule, version, kind, instants and shard) is never changed.
_CHANGEABLE: tuple[tuple[str, Any], ...] = (
    ("status", _STATUS_TEXT.__getitem__),
    ("pending", _flag),
    ("bucket", _identity),
    ("attempts", _identity),
    ("admitted_at", _opt_us),
    ("sent_at", _opt_us),
    ("started_at", _opt_us),
    ("finished_at", _opt_us),
    ("reason", _identity),
    ("result", _opt_json),
    ("run_lease_expires_at", _opt_us),
    ("attempt_log", _opt_log_text),
    ("run_token_hash", _identity),
    ("progress", _opt_json),
    ("revision", _identity),
)
_FIXED: tuple[str, ...] = tuple(
    name
    for name in (c.strip() for c in _RUN_COLUMNS.split(","))
    if name not in dict(_CHANGEABLE) and name != "revision"
)


def run_changes(before: Run, after: Run) -> tuple[list[str], list[Any]]:
    """The columns ``after`` changes from ``before`` and their new values: a
    transition rewrites a few columns of the row, not all 25 (the attempt log
    is encoded only when it changed). A field compared by identity first: a
    transition's copy keeps the very objects it does not change."""
    old, new = before.__dict__, after.__dict__
    for name in _FIXED:
        if old[name] is not new[name] and old[name] != new[name]:
            raise ValueError(f"a transition does not change a run's {name}")
    columns: list[str] = []
    values: list[Any] = []
    for name, encode in _CHANGEABLE:
        value = new[name]
        if value is not old[name] and value != old[name]:
            columns.append(name)
            values.append(encode(value))
    return columns, values


_STATUS = {status.value: status for status in RunStatus}
_KIND = {kind.value: kind for kind in RunKind}


def run_from_row(row: Sequence[Any]) -> Run:
    attempt_log: tuple[AttemptRecord, ...] = _attempt_log(row[21]) if row[21] else ()
    # Once per occurrence on the dispatch path: dict lookups, not Enum calls; no
    # work for the NULL columns a pending record has; and every field set in one
    # dict, without Run's checks, which hold by construction (scheduled_at is
    # aware, being epoch-based; ``_wall`` refuses a wall time that is not naive).
    epoch, micro = _EPOCH, _US
    run = object.__new__(Run)
    object.__setattr__(
        run,
        "__dict__",
        {
            "occurrence_id": row[0],
            "business_key": row[1],
            "schedule_id": row[2],
            "version": row[3],
            "scheduled_at": epoch + row[5] * micro,
            "wall": _wall(row[6]),
            "fold": row[7],
            "bucket": row[8],
            "shard": row[9],
            "status": _STATUS[row[10]],
            "kind": _KIND[row[4]],
            "pending": bool(row[11]),
            "materialized_at": None if row[12] is None else epoch + row[12] * micro,
            "attempts": row[13],
            "admitted_at": None if row[14] is None else epoch + row[14] * micro,
            "sent_at": None if row[15] is None else epoch + row[15] * micro,
            "started_at": None if row[16] is None else epoch + row[16] * micro,
            "finished_at": None if row[17] is None else epoch + row[17] * micro,
            "reason": row[18],
            "result": None if row[19] is None else json.loads(row[19]),
            "run_lease_expires_at": None if row[20] is None else epoch + row[20] * micro,
            "attempt_log": attempt_log,
            "run_token_hash": row[22],
            "progress": None if row[23] is None else json.loads(row[23]),
            "revision": row[24],
        },
    )
    return run


class _JsonObject(Mapping[str, Any]):
    """A stored JSON object, decoded when first read: a tick reads the current
    version of every schedule it plans, and never its payload."""

    __slots__ = ("_text", "_value")

    def __init__(self, text: str) -> None:
        self._text = text
        self._value: dict[str, Any] | None = None

    def _decoded(self) -> dict[str, Any]:
        value = self._value
        if value is None:
            value = self._value = json.loads(self._text)
        return value

    def __getitem__(self, key: str) -> Any:
        return self._decoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __repr__(self) -> str:
        return repr(self._decoded())


@lru_cache(maxsize=4096)
def _wall(text: str) -> datetime:
    """A stored wall time (naive ISO text); many occurrences share one."""
    wall = datetime.fromisoformat(text)
    if wall.tzinfo is not None:
        raise ValueError("wall is a naive wall time")
    return wall


class SqliteStore(Database, Store):
    """Schedules, occurrences, leases and heartbeats in one SQLite file."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0) -> None:
        super().__init__(path, SCHEMA, busy_timeout_s=busy_timeout_s, cache_kib=65536)
        self._versions: dict[tuple[str, int], ScheduleVersion] = {}
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

    # --- schedules ----------------------------------------------------------------

    def create(
        self, schedule: Schedule, idempotency_key: str | None = None
    ) -> tuple[Schedule, bool]:
        existing_id: str | None = None
        with self._write() as db:
            if idempotency_key is not None:
                # The key is the primary key of create_keys: a second create with
                # it, even racing in another process, finds the first one here.
                row = db.execute(
                    "SELECT schedule_id FROM create_keys WHERE idempotency_key = ?",
                    (idempotency_key,),
                ).fetchone()
                if row is not None:
                    existing_id = row[0]
                else:
                    db.execute(
                        "INSERT INTO create_keys VALUES (?, ?, ?)",
                        (idempotency_key, schedule.schedule_id, us(schedule.created_at)),
                    )
            if existing_id is None:
                try:
                    db.execute(
                        f"INSERT INTO schedules ({_SCHEDULE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                        self._schedule_row(schedule),
                    )
                except sqlite3.IntegrityError:
                    raise ValueError(f"schedule {schedule.schedule_id} exists") from None
                self._insert_version(db, schedule.current)
        if existing_id is None:
            return schedule, True
        existing = self.get(existing_id)
        assert existing is not None
        return existing, False

    @staticmethod
    def _schedule_row(schedule: Schedule) -> tuple[Any, ...]:
        return (
            schedule.schedule_id,
            schedule.version,
            1 if schedule.state.paused else 0,
            schedule.state.note,
            _opt_us(schedule.next_due),
            _opt_us(schedule.last_materialized_at),
            us(schedule.created_at),
            us(schedule.updated_at),
            _opt_us(schedule.deleted_at),
            quarantine_to_text(schedule.quarantine),
        )

    @staticmethod
    def _insert_version(db: sqlite3.Connection, version: ScheduleVersion) -> None:
        body = version_to_dict(version)
        db.execute(
            "INSERT INTO schedule_versions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                version.schedule_id,
                version.version,
                us(version.created_at),
                body["name"],
                dumps(body["spec"]),
                dumps(body["policy"]),
                dumps(body["target"]),
                dumps(body["payload"]),
            ),
        )

    def _schedule_from_row(self, row: Sequence[Any]) -> Schedule:
        # Once per schedule planned: one shared state value for the common
        # unpaused, unnoted head, and the fields set in one dict, without the
        # dataclass's checks, which hold by construction (its version is read by
        # this row's id and number; instants are epoch-based, so aware).
        paused, note = row[2], row[3]
        epoch, micro = _EPOCH, _US
        schedule = object.__new__(Schedule)
        schedule.__dict__.update(
            schedule_id=row[0],
            version=row[1],
            state=_ACTIVE if not paused and note is None else ScheduleState(bool(paused), note),
            current=self._version_from_row(row[0], row[1], row[9:15]),
            next_due=None if row[4] is None else epoch + row[4] * micro,
            last_materialized_at=None if row[5] is None else epoch + row[5] * micro,
            created_at=epoch + row[6] * micro,
            updated_at=epoch + row[7] * micro,
            deleted_at=None if row[8] is None else epoch + row[8] * micro,
            quarantine=None if row[15] is None else quarantine_from_text(row[15]),
        )
        return schedule

    def _version_from_row(
        self, schedule_id: str, version: int, row: Sequence[Any]
    ) -> ScheduleVersion:
        key = (schedule_id, version)
        cached = self._versions.get(key)
        if cached is not None:
            return cached  # immutable once written
        created_at, name, spec, policy, target, payload = row
        if version < 1:
            raise ValueError("version starts at 1")
        value = object.__new__(ScheduleVersion)
        value.__dict__.update(
            schedule_id=schedule_id,
            version=version,
            name=name,
            spec=stored_spec(spec),
            policy=stored_policy(policy),
            target=stored_target(target),
            payload=_JsonObject(payload),
            created_at=_EPOCH + created_at * _US,
        )
        versions = self._versions
        if len(versions) >= VERSION_CACHE_SIZE:
            # Emptied when full rather than kept in LRU order: cheaper per
            # schedule read, and a version read again is a query away.
            versions.clear()
        versions[key] = value
        return value

    def _readable(
        self, decode: Any, rows: Sequence[Sequence[Any]], *, quarantine: bool = False
    ) -> Iterator[Any]:
        """``decode(row)`` for each row that decodes; a row whose stored spec,
        policy or target can no longer be read (a rule tightened since it was
        saved) is left out and logged, and with ``quarantine``, quarantined
        (rows start with schedule_id, version)."""
        for row in rows:
            try:
                yield decode(row)
            except Exception as error:
                _log.error(
                    "stored schedule cannot be read",
                    extra={"schedule_id": row[0], "version": row[1], "error": repr(error)[:500]},
                )
                if quarantine:
                    found = Quarantine.of(error, QuarantineComponent.PLAN, datetime.now(UTC))
                    self.quarantine(row[0], row[1], found)

    def get(self, schedule_id: str) -> Schedule | None:
        rows = self._read(_HEAD_SELECT + "WHERE s.schedule_id = ?", (schedule_id,))
        return self._schedule_from_row(rows[0]) if rows else None

    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        found = self.get_versions([(schedule_id, version)])
        return found.get((schedule_id, version))

    def get_versions(
        self, keys: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], ScheduleVersion]:
        found: dict[tuple[str, int], ScheduleVersion] = {}
        missing: list[tuple[str, int]] = []
        for key in dict.fromkeys(keys):
            cached = self._versions.get(key)
            if cached is not None:
                found[key] = cached
            else:
                missing.append(key)
        for start in range(0, len(missing), 400):
            chunk = missing[start : start + 400]
            rows = self._read(
                _keys_cte(len(chunk)) + "SELECT v.schedule_id, v.version, v.created_at, v.name, "
                "v.spec, v.policy, v.target, v.payload FROM k CROSS JOIN schedule_versions v "
                "ON v.schedule_id = k.sid AND v.version = k.ver",
                [part for key in chunk for part in key],
            )
            for row in rows:
                found[(row[0], row[1])] = self._version_from_row(row[0], row[1], row[2:8])
        return found

    def versions(
        self, schedule_id: str, limit: int, token: str | None = None
    ) -> Page[ScheduleVersion]:
        after = _untoken(token) if token else [0]
        if len(after) != 1 or not isinstance(after[0], int) or isinstance(after[0], bool):
            raise ValueError("not a page token from this store")
        rows = self._read(
            "SELECT schedule_id, version, created_at, name, spec, policy, target, payload "
            "FROM schedule_versions WHERE schedule_id = ? AND version > ? "
            "ORDER BY version LIMIT ?",
            (schedule_id, after[0], max(limit, 0) + 1),
        )
        items = tuple(self._version_from_row(r[0], r[1], r[2:8]) for r in rows[:limit])
        next_token = _token([rows[limit - 1][1]]) if len(rows) > limit else None
        return Page(items, next_token)

    def list_schedules(
        self, limit: int, token: str | None = None, *, next_due: bool = True
    ) -> Page[Schedule]:
        after = _untoken(token) if token else [-1, ""]
        rows = self._read(
            _HEAD_SELECT + "WHERE s.deleted_at IS NULL "
            "AND (s.created_at, s.schedule_id) > (?, ?) "
            "ORDER BY s.created_at, s.schedule_id LIMIT ?",
            (after[0], after[1], limit + 1),
        )
        try:
            items = tuple(self._schedule_from_row(r) for r in rows[:limit])
        except Exception:  # a stored definition no rule reads any more: leave that one out
            items = tuple(self._readable(self._schedule_from_row, rows[:limit]))
        next_token = _token([rows[limit - 1][6], rows[limit - 1][0]]) if len(rows) > limit else None
        return Page(items, next_token)

    def due(self, until: datetime, limit: int, token: str | None = None) -> Page[DueSchedule]:
        after = _untoken(token) if token else [-(2**62), ""]
        rows = self._read(
            "SELECT s.schedule_id, s.version, s.next_due, v.spec, v.policy "
            "FROM schedules s JOIN schedule_versions v "
            "ON v.schedule_id = s.schedule_id AND v.version = s.version "
            "WHERE s.paused = 0 AND s.deleted_at IS NULL "
            "AND s.next_due IS NOT NULL AND s.next_due <= ? AND s.quarantine IS NULL "
            "AND (s.next_due, s.schedule_id) > (?, ?) "
            "ORDER BY s.next_due, s.schedule_id LIMIT ?",
            (us(until), after[0], after[1], limit + 1),
        )
        # Once per schedule planned: the spec and policy texts decode once each
        # (cached by text, so everyone with the same spec shares one value).
        # DueSchedule(...) made without its generated __new__, in field order.
        epoch, micro, spec, policy, new = _EPOCH, _US, stored_spec, stored_policy, tuple.__new__

        def decode(r: Sequence[Any]) -> DueSchedule:
            return new(DueSchedule, (r[0], r[1], epoch + r[2] * micro, spec(r[3]), policy(r[4])))

        try:
            items: tuple[DueSchedule, ...] = tuple(
                [
                    new(DueSchedule, (r[0], r[1], epoch + r[2] * micro, spec(r[3]), policy(r[4])))
                    for r in rows[:limit]
                ]
            )
        except Exception:  # a stored definition no rule reads any more: quarantined
            items = tuple(self._readable(decode, rows[:limit], quarantine=True))
        next_token = _token([rows[limit - 1][2], rows[limit - 1][0]]) if len(rows) > limit else None
        return Page(items, next_token)

    def save_version(
        self,
        new: ScheduleVersion,
        *,
        expected_next_due: datetime | None,
        next_due: datetime | None,
        now: datetime,
    ) -> bool:
        with self._write() as db:
            changed = db.execute(
                "UPDATE schedules SET version = ?, next_due = ?, updated_at = ?, quarantine = NULL "
                "WHERE schedule_id = ? AND version = ? AND next_due IS ? AND deleted_at IS NULL",
                (
                    new.version,
                    _opt_us(next_due),
                    us(now),
                    new.schedule_id,
                    new.version - 1,
                    _opt_us(expected_next_due),
                ),
            ).rowcount
            if changed != 1:
                return False
            self._insert_version(db, new)
            return True

    def pause(self, schedule_id: str, note: str | None, now: datetime) -> bool:
        with self._write() as db:
            return (
                db.execute(
                    "UPDATE schedules SET paused = 1, note = ?, updated_at = ? "
                    "WHERE schedule_id = ? AND deleted_at IS NULL",
                    (note, us(now), schedule_id),
                ).rowcount
                == 1
            )

    def resume(
        self,
        schedule_id: str,
        *,
        expected_next_due: datetime | None,
        next_due: datetime | None,
        now: datetime,
    ) -> bool:
        with self._write() as db:
            return (
                db.execute(
                    "UPDATE schedules SET paused = 0, note = NULL, next_due = ?, updated_at = ?, "
                    "quarantine = NULL "
                    "WHERE schedule_id = ? AND paused = 1 AND deleted_at IS NULL "
                    "AND next_due IS ?",
                    (_opt_us(next_due), us(now), schedule_id, _opt_us(expected_next_due)),
                ).rowcount
                == 1
            )

    def quarantine(self, schedule_id: str, version: int, quarantine: Quarantine) -> bool:
        with self._write() as db:
            return (
                db.execute(
                    "UPDATE schedules SET quarantine = ? "
                    "WHERE schedule_id = ? AND version = ? AND deleted_at IS NULL",
                    (quarantine_to_text(quarantine), schedule_id, version),
                ).rowcount
                == 1
            )

    def delete(self, schedule_id: str, now: datetime) -> bool:
        with self._write() as db:
            return (
                db.execute(
                    "UPDATE schedules SET deleted_at = ?, next_due = NULL, updated_at = ? "
                    "WHERE schedule_id = ? AND deleted_at IS NULL",
                    (us(now), us(now), schedule_id),
                ).rowcount
                == 1
            )

    def materialize(
        self, batch: Sequence[Materialization], now: datetime, *, until: datetime | None = None
    ) -> list[MaterializeOutcome]:
        if not batch:
            return []
        epoch, micro = _EPOCH, _US  # once per schedule planned: no calls
        heads = [
            (
                None if (due := item.next_due) is None else (due - epoch) // micro,
                None if (last := item.last_materialized_at) is None else (last - epoch) // micro,
                item.schedule_id,
                item.expected_version,
                (item.expected_next_due - epoch) // micro,
            )
            for item in batch
        ]
        rows = [run_row(run) for item in batch for run in item.occurrences]
        with self._write() as db:
            # The common case, every condition holding and no slot taken, as two
            # executemany calls; if any row did not change, undo them and decide
            # item by item. Either way the UPDATE's WHERE and the unique keys
            # decide, inside this one transaction.
            db.execute("SAVEPOINT materialize")
            if db.executemany(_MATERIALIZE, heads).rowcount == len(heads) and db.executemany(
                _RUN_INSERT, rows
            ).rowcount == len(rows):
                db.execute("RELEASE materialize")
                # One outcome per schedule, made without the named tuple's __new__.
                new = tuple.__new__
                return [
                    new(
                        MaterializeOutcome,
                        (
                            item.schedule_id,
                            True,
                            tuple([r.occurrence_id for r in item.occurrences]),
                        ),
                    )
                    for item in batch
                ]
            db.execute("ROLLBACK TO materialize")
            db.execute("RELEASE materialize")
            outcomes: list[MaterializeOutcome] = []
            at = 0
            for item, head in zip(batch, heads, strict=True):
                item_rows = rows[at : at + len(item.occurrences)]
                at += len(item.occurrences)
                if db.execute(_MATERIALIZE, head).rowcount != 1:
                    outcomes.append(MaterializeOutcome(item.schedule_id, False))
                    continue
                inserted = tuple(
                    run.occurrence_id
                    for run, row in zip(item.occurrences, item_rows, strict=True)
                    if db.execute(_RUN_INSERT, row).rowcount == 1
                )
                outcomes.append(MaterializeOutcome(item.schedule_id, True, inserted))
            return outcomes

    # --- occurrences -----------------------------------------------------------------

    def insert(self, runs: Sequence[Run]) -> list[str]:
        with self._write() as db:
            _refuse_purged_backfill(db, runs)
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
        before = _untoken(token) if token else [2**62, "~"]
        rows = self._read(
            f"SELECT {_RUN_COLUMNS} FROM occurrences WHERE schedule_id = ? "
            "AND (scheduled_at, occurrence_id) < (?, ?) "
            "ORDER BY scheduled_at DESC, occurrence_id DESC LIMIT ?",
            (schedule_id, before[0], before[1], limit + 1),
        )
        items = tuple(run_from_row(r) for r in rows[:limit])
        next_token = _token([rows[limit - 1][5], rows[limit - 1][0]]) if len(rows) > limit else None
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
        epoch, micro, new, kinds, statuses = _EPOCH, _US, tuple.__new__, _KIND, _STATUS
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
            changed = _each_or_all(db, "admit", _ADMIT, params)
        return [o.occurrence_id for o, ok in zip(occurrences, changed, strict=True) if ok]

    def close_runs(self, closures: Sequence[Closure], now: datetime) -> list[str]:
        if not closures:
            return []
        now_us = us(now)
        params = [(c.status.value, c.reason, now_us, c.occurrence_id) for c in closures]
        with self._write() as db:
            changed = _each_or_all(db, "close_runs", _CLOSE, params)
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

    # --- retention ------------------------------------------------------------------------

    def purged_before(self) -> datetime | None:
        """The latest cutoff a purge used: finished history before it may be gone."""
        rows = self._read("SELECT value FROM store_meta WHERE name = ?", (PURGED_BEFORE,))
        return from_us(rows[0][0]) if rows else None

    def purge_history(
        self,
        before: datetime,
        *,
        batch_size: int = PURGE_BATCH,
        between_batches: Callable[[], None] | None = None,
    ) -> int:
        """Remove finished runs scheduled before ``before``; how many went.

        A run goes only when it is finished (succeeded, failed, expired,
        skipped, cancelled) and no longer pending, re-checked by the DELETE
        itself; each schedule keeps its newest succeeded run whatever its age,
        so the watchdog still knows its last success. The occurrence row is
        also the claim of its business key and holds its attempt log, so one
        row per run is all there is to remove.

        Work goes in batches of at most ``batch_size`` rows, each its own short
        write transaction (``between_batches`` runs between them), so the tick
        waits for at most one batch. Candidates are found by reading each
        schedule's runs in ``scheduled_at`` order from the schedule index,
        outside the write lock.

        The cutoff is recorded first (``purged_before``): from then on a
        backfill that reaches before it is refused (``insert``), because the
        slots it would fill may have had a run that is now gone.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        cutoff = us(before)
        with self._write() as db:
            db.execute(
                "INSERT INTO store_meta (name, value) VALUES (?, ?) ON CONFLICT (name) "
                "DO UPDATE SET value = max(value, excluded.value)",
                (PURGED_BEFORE, cutoff),
            )
        removed = 0
        schedule_id = ""
        while True:
            # The next schedule that has runs: one probe of the schedule index.
            rows = self._read(
                "SELECT schedule_id FROM occurrences INDEXED BY occurrences_by_schedule "
                "WHERE schedule_id > ? ORDER BY schedule_id LIMIT 1",
                (schedule_id,),
            )
            if not rows:
                return removed
            schedule_id = rows[0][0]
            removed += self._purge_schedule(schedule_id, cutoff, batch_size, between_batches)

    def _purge_schedule(
        self,
        schedule_id: str,
        cutoff: int,
        batch_size: int,
        between_batches: Callable[[], None] | None,
    ) -> int:
        keep: str | None = None
        looked = False
        removed = 0
        cursor: tuple[int, str] = (-(2**62), "")
        while True:
            rows = self._read(
                "SELECT rowid, scheduled_at, occurrence_id, status, pending FROM occurrences "
                "INDEXED BY occurrences_by_schedule WHERE schedule_id = ? "
                "AND (scheduled_at, occurrence_id) > (?, ?) AND scheduled_at < ? "
                "ORDER BY scheduled_at, occurrence_id LIMIT ?",
                (schedule_id, cursor[0], cursor[1], cutoff, batch_size),
            )
            if not rows:
                return removed
            cursor = (rows[-1][1], rows[-1][2])
            if not looked:
                newest_success = self._read(
                    "SELECT occurrence_id FROM occurrences WHERE schedule_id = ? AND status = ? "
                    "ORDER BY scheduled_at DESC, occurrence_id DESC LIMIT 1",
                    (schedule_id, RunStatus.SUCCEEDED.value),
                )
                keep = newest_success[0][0] if newest_success else None
                looked = True
            doomed = [
                (r[0], cutoff) for r in rows if r[3] in _FINISHED_TEXT and not r[4] and r[2] != keep
            ]
            if doomed:
                with self._write() as db:
                    removed += int(db.executemany(_PURGE, doomed).rowcount)
                if between_batches is not None:
                    between_batches()
            if len(rows) < batch_size:
                return removed

    def storage(self) -> dict[str, int]:
        """The file's pages: ``page_size``, ``pages`` and ``free_pages`` (reusable)."""
        with self._lock:
            return {
                "page_size": int(self._db.execute("PRAGMA page_size").fetchone()[0]),
                "pages": int(self._db.execute("PRAGMA page_count").fetchone()[0]),
                "free_pages": int(self._db.execute("PRAGMA freelist_count").fetchone()[0]),
            }

    # --- leases and heartbeats -----------------------------------------------------------

    def acquire(self, shard: int, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
        now_us = us(now)
        with self._write() as db:
            row = db.execute(
                "INSERT INTO leases (shard, owner, epoch, expires_at, checkpoint) "
                "VALUES (?, ?, 1, ?, NULL) ON CONFLICT (shard) DO UPDATE SET "
                "epoch = CASE WHEN leases.owner = excluded.owner AND leases.expires_at > ? "
                "THEN leases.epoch ELSE leases.epoch + 1 END, "
                "owner = excluded.owner, expires_at = excluded.expires_at "
                "WHERE leases.owner = excluded.owner OR leases.expires_at <= ? "
                "RETURNING shard, owner, epoch, expires_at, checkpoint",
                (shard, owner, us(now + ttl), now_us, now_us),
            ).fetchone()
        return None if row is None else _lease(row)

    def release(self, shard: int, owner: str, epoch: int, now: datetime) -> bool:
        with self._write() as db:
            return (
                db.execute(
                    "UPDATE leases SET expires_at = ? WHERE shard = ? AND owner = ? AND epoch = ?",
                    (us(now), shard, owner, epoch),
                ).rowcount
                == 1
            )

    def set_checkpoint(self, shard: int, owner: str, epoch: int, checkpoint: int) -> bool:
        with self._write() as db:
            return (
                db.execute(
                    "UPDATE leases SET checkpoint = ? WHERE shard = ? AND owner = ? AND epoch = ? "
                    "AND (checkpoint IS NULL OR checkpoint <= ?)",
                    (checkpoint, shard, owner, epoch, checkpoint),
                ).rowcount
                == 1
            )

    def leases(self) -> list[Lease]:
        rows = self._read(
            "SELECT shard, owner, epoch, expires_at, checkpoint FROM leases ORDER BY shard"
        )
        return [_lease(r) for r in rows]

    def beat(self, heartbeat: Heartbeat) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO heartbeats VALUES (?, ?, ?) ON CONFLICT (component) DO UPDATE SET "
                "at = excluded.at, detail = excluded.detail",
                (heartbeat.component, us(heartbeat.at), json.dumps(dict(heartbeat.detail))),
            )

    def purge_heartbeats(self, prefix: str, stale_before: datetime) -> int:
        """Remove the heartbeats under ``prefix`` last written before ``stale_before``
        (a tick process that stopped leaves its membership row behind)."""
        with self._write() as db:
            return int(
                db.execute(
                    "DELETE FROM heartbeats WHERE substr(component, 1, ?) = ? AND at < ?",
                    (len(prefix), prefix, us(stale_before)),
                ).rowcount
            )

    def purge_orphan_heartbeats(self, prefix: str) -> int:
        """Remove the ``<prefix><schedule_id>`` heartbeats of deleted schedules."""
        with self._write() as db:
            return int(
                db.execute(
                    "DELETE FROM heartbeats WHERE substr(component, 1, ?) = ? AND NOT EXISTS ("
                    "SELECT 1 FROM schedules s WHERE s.schedule_id = substr(component, ?) "
                    "AND s.deleted_at IS NULL)",
                    (len(prefix), prefix, len(prefix) + 1),
                ).rowcount
            )

    def heartbeat(self, component: str) -> Heartbeat | None:
        rows = self._read("SELECT at, detail FROM heartbeats WHERE component = ?", (component,))
        if not rows:
            return None
        return Heartbeat(component, from_us(rows[0][0]), json.loads(rows[0][1]))

    def heartbeats(self, prefix: str) -> list[Heartbeat]:
        rows = self._read(
            "SELECT component, at, detail FROM heartbeats "
            "WHERE substr(component, 1, ?) = ? ORDER BY component",
            (len(prefix), prefix),
        )
        return [Heartbeat(r[0], from_us(r[1]), json.loads(r[2])) for r in rows]

    def heartbeats_of(self, components: Sequence[str]) -> dict[str, Heartbeat]:
        found: dict[str, Heartbeat] = {}
        for start in range(0, len(components), 500):  # under SQLite's variable limit
            chunk = list(components[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            rows = self._read(
                f"SELECT component, at, detail FROM heartbeats WHERE component IN ({marks})",
                chunk,
            )
            found.update({r[0]: Heartbeat(r[0], from_us(r[1]), json.loads(r[2])) for r in rows})
        return found

    def beat_if(self, heartbeat: Heartbeat, expected_at: datetime | None) -> bool:
        with self._write() as db:
            row = db.execute(
                "SELECT at FROM heartbeats WHERE component = ?", (heartbeat.component,)
            ).fetchone()
            if (None if row is None else row[0]) != (
                None if expected_at is None else us(expected_at)
            ):
                return False
            db.execute(
                "INSERT INTO heartbeats VALUES (?, ?, ?) ON CONFLICT (component) DO UPDATE SET "
                "at = excluded.at, detail = excluded.detail",
                (heartbeat.component, us(heartbeat.at), json.dumps(dict(heartbeat.detail))),
            )
            return True


def _each_or_all(
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


def _refuse_purged_backfill(db: sqlite3.Connection, runs: Sequence[Run]) -> None:
    """A backfill may not reach before the latest purge's cutoff: a slot there
    may have had a run that the purge removed, and filling it again would run
    that slot twice. Checked inside the insert's write transaction."""
    backfills = [run for run in runs if run.kind is RunKind.BACKFILL]
    if not backfills:
        return
    row = db.execute("SELECT value FROM store_meta WHERE name = ?", (PURGED_BEFORE,)).fetchone()
    if row is None:
        return
    floor = from_us(row[0])
    if min(run.scheduled_at for run in backfills) < floor:
        raise InvalidSchedule(
            "start_at",
            f"must not be before {floor.isoformat()}: history older than the store's "
            "retention has been removed, so a backfill there could run a slot twice",
        )


def _lease(row: Sequence[Any]) -> Lease:
    return Lease(
        shard=row[0], owner=row[1], epoch=row[2], expires_at=from_us(row[3]), checkpoint=row[4]
    )
