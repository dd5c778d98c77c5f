"""The schedule port over SQLite: heads, versions, the planning reads (``due``)
and materialization (``ScheduleStore``, service/ports.py).

Immutable schedule versions are cached per store object: a version never
changes once written. That cache is the only state this holds; nothing lives
for one planning pass.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.sqlite.rows import _RUN_INSERT, run_row
from adapters.sqlite.tables import ACTIVE_SQL, EPOCH, US, Tables, opt_us, page_token, read_token, us
from domain.run import Run, RunStatus
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
    DueSchedule,
    Materialization,
    Materialized,
    MaterializeOutcome,
    Page,
    PlanSession,
    ScheduleStore,
)

# Versions kept decoded in memory (bounded, so a tick's memory does not grow
# with the number of schedules).
VERSION_CACHE_SIZE = 2048
_ACTIVE = ScheduleState()
_log = logging.getLogger("duetime")

# Materialization's condition: the schedule is still at the version and next_due
# the planner read, and active.
_MATERIALIZE = (
    "UPDATE schedules AS s SET next_due = ?, last_materialized_at = ? "
    f"WHERE schedule_id = ? AND version = ? AND next_due = ? AND {ACTIVE_SQL}"
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


def _keys_cte(n: int) -> str:
    """``k(sid, ver)``: n (schedule_id, version) pairs, to join on the versions'
    primary key (``CROSS JOIN`` keeps SQLite from scanning the versions table)."""
    return f"WITH k(sid, ver) AS (VALUES {', '.join(['(?, ?)'] * n)}) "


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


class SqliteSchedules(Tables, ScheduleStore):
    """Schedules and their versions in the store's file."""

    def __init__(self, path: str | Path, **options: Any) -> None:
        """``options``: those of ``Tables``."""
        self._versions: dict[tuple[str, int], ScheduleVersion] = {}
        super().__init__(path, **options)

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
            opt_us(schedule.next_due),
            opt_us(schedule.last_materialized_at),
            us(schedule.created_at),
            us(schedule.updated_at),
            opt_us(schedule.deleted_at),
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
        epoch, micro = EPOCH, US
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
            created_at=EPOCH + created_at * US,
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
        after = read_token(token) if token else [0]
        if len(after) != 1 or not isinstance(after[0], int) or isinstance(after[0], bool):
            raise ValueError("not a page token from this store")
        rows = self._read(
            "SELECT schedule_id, version, created_at, name, spec, policy, target, payload "
            "FROM schedule_versions WHERE schedule_id = ? AND version > ? "
            "ORDER BY version LIMIT ?",
            (schedule_id, after[0], max(limit, 0) + 1),
        )
        items = tuple(self._version_from_row(r[0], r[1], r[2:8]) for r in rows[:limit])
        next_token = page_token([rows[limit - 1][1]]) if len(rows) > limit else None
        return Page(items, next_token)

    def list_schedules(
        self, limit: int, token: str | None = None, *, next_due: bool = True
    ) -> Page[Schedule]:
        after = read_token(token) if token else [-1, ""]
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
        next_token = (
            page_token([rows[limit - 1][6], rows[limit - 1][0]]) if len(rows) > limit else None
        )
        return Page(items, next_token)

    def due(
        self,
        until: datetime,
        limit: int,
        token: str | None = None,
        *,
        session: PlanSession | None = None,
    ) -> Page[DueSchedule]:
        after = read_token(token) if token else [-(2**62), ""]
        rows = self._read(
            "SELECT s.schedule_id, s.version, s.next_due, v.spec, v.policy "
            "FROM schedules s JOIN schedule_versions v "
            "ON v.schedule_id = s.schedule_id AND v.version = s.version "
            f"WHERE {ACTIVE_SQL} AND s.next_due IS NOT NULL AND s.next_due <= ? "
            "AND (s.next_due, s.schedule_id) > (?, ?) "
            "ORDER BY s.next_due, s.schedule_id LIMIT ?",
            (us(until), after[0], after[1], limit + 1),
        )
        # Once per schedule planned: the spec and policy texts decode once each
        # (cached by text, so everyone with the same spec shares one value).
        # DueSchedule(...) made without its generated __new__, in field order.
        epoch, micro, spec, policy, new = EPOCH, US, stored_spec, stored_policy, tuple.__new__

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
        next_token = (
            page_token([rows[limit - 1][2], rows[limit - 1][0]]) if len(rows) > limit else None
        )
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
                    opt_us(next_due),
                    us(now),
                    new.schedule_id,
                    new.version - 1,
                    opt_us(expected_next_due),
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
                    (opt_us(next_due), us(now), schedule_id, opt_us(expected_next_due)),
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
        self,
        batch: Sequence[Materialization],
        now: datetime,
        *,
        until: datetime | None = None,
        session: PlanSession | None = None,
    ) -> Materialized:
        """Each schedule's advance and records in one transaction: an admitted
        record is stored in the outbox (pending), so nothing is held."""
        if not batch:
            return Materialized([])
        epoch, micro = EPOCH, US  # once per schedule planned: no calls
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
        admitted = RunStatus.ADMITTED
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
                outcomes = [
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
                to_send = [r for item in batch for r in item.occurrences if r.status is admitted]
                return Materialized(outcomes, tuple(to_send))
            db.execute("ROLLBACK TO materialize")
            db.execute("RELEASE materialize")
            outcomes = []
            sending: list[Run] = []
            at = 0
            for item, head in zip(batch, heads, strict=True):
                item_rows = rows[at : at + len(item.occurrences)]
                at += len(item.occurrences)
                if db.execute(_MATERIALIZE, head).rowcount != 1:
                    outcomes.append(MaterializeOutcome(item.schedule_id, False))
                    continue
                inserted = [
                    run
                    for run, row in zip(item.occurrences, item_rows, strict=True)
                    if db.execute(_RUN_INSERT, row).rowcount == 1
                ]
                sending += [run for run in inserted if run.status is admitted]
                outcomes.append(
                    MaterializeOutcome(
                        item.schedule_id, True, tuple(r.occurrence_id for r in inserted)
                    )
                )
            return Materialized(outcomes, tuple(sending))
