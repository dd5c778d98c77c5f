"""A run record as a row of the ``occurrences`` table, and back.

Written once per occurrence planned and read once per occurrence dispatched,
so the encoders avoid calls and Enum lookups where a dict or a test does.
Shared by the run records (run_records.py), materialization (schedules.py)
and the run store (runs.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from adapters.sqlite.tables import EPOCH, US, from_us, opt_dt, opt_us, us
from domain.identity import wall_text
from domain.run import AttemptRecord, Run, RunKind, RunStatus

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

# json.dumps with any option builds a JSONEncoder per call; one kept encoder
# writes the same text, about 1.5 us a call sooner (two calls per finished run).
_compact = json.JSONEncoder(separators=(",", ":")).encode


def _json(value: Any) -> str | None:
    return None if value is None else _compact(value)


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
        entry: list[Any] = [us(a.started_at), opt_us(a.finished_at), a.outcome, a.error]
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
                    finished_at=opt_dt(a["finished_at"]),
                    outcome=a["outcome"],
                    error=a["error"],
                )
            )
        else:
            records.append(
                AttemptRecord(
                    number=a[4] if len(a) > 4 else position,
                    started_at=from_us(a[0]),
                    finished_at=opt_dt(a[1]),
                    outcome=a[2],
                    error=a[3],
                )
            )
    return tuple(records)


def run_row(run: Run) -> tuple[Any, ...]:
    # Once per occurrence materialized: the NULL columns of a fresh record cost
    # a test each, not a call.
    epoch, micro = EPOCH, US
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
    ("admitted_at", opt_us),
    ("sent_at", opt_us),
    ("started_at", opt_us),
    ("finished_at", opt_us),
    ("reason", _identity),
    ("result", _opt_json),
    ("run_lease_expires_at", opt_us),
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
    epoch, micro = EPOCH, US
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


@lru_cache(maxsize=4096)
def _wall(text: str) -> datetime:
    """A stored wall time (naive ISO text); many occurrences share one."""
    wall = datetime.fromisoformat(text)
    if wall.tzinfo is not None:
        raise ValueError("wall is a naive wall time")
    return wall
