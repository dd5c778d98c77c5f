"""One SQLite connection as duetime uses it: WAL, a busy timeout, write
transactions that take the database's write lock from their start.

Several processes may open the same file; each write is ``BEGIN IMMEDIATE``
so two writers queue on the lock instead of failing half-way through.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

JOURNAL_SIZE_LIMIT = 32 * 1024 * 1024


class Database:
    """A connection, the lock that serializes this process's use of it, and its schema."""

    def __init__(
        self,
        path: str | Path,
        schema: str,
        *,
        busy_timeout_s: float = 30.0,
        cache_kib: int | None = None,
    ) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # The WAL is checkpointed every 1000 pages (4 MiB, SQLite's default,
        # stated here) and cut back to 32 MiB after a checkpoint, so one large
        # transaction or a reader that held a checkpoint back does not leave a
        # large WAL behind. Pages freed by the retention purge go to SQLite's
        # free list and are reused: the file stops growing once the retention
        # holds (bench/growth.py), so no auto_vacuum is needed.
        self._db.execute("PRAGMA wal_autocheckpoint=1000")
        self._db.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
        if cache_kib is not None:
            self._db.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
        self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        with self._write() as db:
            for statement in schema.split(";"):
                if statement.strip():
                    db.execute(statement)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the database's write lock from its start."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
