"""Retention of run records over SQLite: the purge of finished history, the
cutoff it leaves behind (a backfill may not reach before it), and the file's
page counts. Run by the janitor (janitor.py); not a port of the service.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime

from adapters.sqlite.tables import Tables, from_us, us
from domain.errors import InvalidSchedule
from domain.run import TERMINAL, Run, RunKind, RunStatus

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


class SqliteRetention(Tables):
    """The purge of finished run records in the store's file."""

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


def refuse_purged_backfill(db: sqlite3.Connection, runs: Sequence[Run]) -> None:
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
