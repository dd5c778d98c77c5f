"""One SQLite connection as duetime uses it: WAL, a busy timeout, write
transactions that take the database's write lock from their start.

Several processes may open the same file; each write is ``BEGIN IMMEDIATE``
so two writers queue on the lock instead of failing half-way through.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on this platform: writes wait on SQLite's lock itself
    fcntl = None  # type: ignore[assignment]

JOURNAL_SIZE_LIMIT = 32 * 1024 * 1024

# Waiting for the write lock: SQLite's own busy handler sleeps 1, 2, 5, 10 ...
# ms between tries, while a write transaction here holds the lock for well
# under a millisecond; the write lock is waited for in steps of 0.1 ms
# doubling to 2 ms instead (with jitter), so two processes (or the store and
# the queue of one) take turns rather than one sleeping while the other runs.
#
# Where the platform has ``flock``, duetime's writers first take an exclusive
# lock on a file beside the database (``<file>-writer``), waited for in those
# steps, and then ``BEGIN IMMEDIATE`` finds SQLite's write lock free (unless a
# program other than duetime holds it: then SQLite's own busy handler waits,
# up to the busy timeout). That spares the two ``PRAGMA busy_timeout``
# statements a write otherwise costs to wait in short steps on SQLite's lock
# itself: about a tenth of a delivery's CPU time in bench/burst.py. The lock
# goes with the process that holds it, killed or not. (A process forked
# without exec shares its parent's descriptor, so the lock does not order the
# two: SQLite's busy handler does, as for another program.)
LOCK_WAIT_FIRST_S = 0.0001
LOCK_WAIT_CAP_S = 0.002
SQLITE_BUSY = 5
WRITER_LOCK_SUFFIX = "-writer"


def _open_writer_lock(path: str) -> int | None:
    """The descriptor of the file duetime's writers lock, or None where there is none."""
    if fcntl is None or not path or path == ":memory:" or path.startswith("file:"):
        return None
    try:
        return os.open(path + WRITER_LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


class Database:
    """A connection, the lock that serializes this process's use of it, and its schema."""

    _lock: threading.RLock
    _db: sqlite3.Connection
    _busy_timeout_s: float
    _busy_pragma: str
    _writer_lock: int | None

    def __init__(
        self,
        path: str | Path,
        schema: str,
        *,
        busy_timeout_s: float = 30.0,
        cache_kib: int | None = None,
        connection_of: Database | None = None,
    ) -> None:
        self.path = str(path)
        self._owns_connection = connection_of is None
        if connection_of is not None:
            # Another adapter's connection (and lock) on the same file: one page
            # cache, and no waiting on each other for the write lock.
            self._lock = connection_of._lock
            self._db = connection_of._db
            self._busy_timeout_s = connection_of._busy_timeout_s
            self._busy_pragma = connection_of._busy_pragma
            self._writer_lock = connection_of._writer_lock
            if not schema.strip():
                return
            with self._write() as db:
                for statement in schema.split(";"):
                    if statement.strip():
                        db.execute(statement)
            return
        self._lock = threading.RLock()
        self._writer_lock = _open_writer_lock(self.path)
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
        self._busy_timeout_s = busy_timeout_s
        self._busy_pragma = f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}"
        self._db.execute(self._busy_pragma)
        with self._write() as db:
            for statement in schema.split(";"):
                if statement.strip():
                    db.execute(statement)

    def close(self) -> None:
        if not self._owns_connection:
            return
        with self._lock:
            self._db.close()
            if self._writer_lock is not None:
                os.close(self._writer_lock)
                self._writer_lock = None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the database's write lock from its start."""
        with self._lock:
            gate = self._writer_lock
            if gate is None:
                self._begin_immediate()
            else:
                self._take_writer_lock(gate)
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                except BaseException:
                    fcntl.flock(gate, fcntl.LOCK_UN)
                    raise
            try:
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            finally:
                if gate is not None:
                    fcntl.flock(gate, fcntl.LOCK_UN)

    def _take_writer_lock(self, gate: int) -> None:
        """The writers' lock, waited for in short steps up to the busy timeout
        (then ``sqlite3.OperationalError``, as SQLite's own wait ends)."""
        deadline: float | None = None
        pause = LOCK_WAIT_FIRST_S
        while True:
            try:
                fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self._busy_timeout_s
                elif now >= deadline:
                    raise sqlite3.OperationalError("database is locked") from None
            time.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(LOCK_WAIT_CAP_S, pause * 2)

    def _begin_immediate(self) -> None:
        """``BEGIN IMMEDIATE``, waiting for the write lock in short steps (above)
        up to the busy timeout; other statements keep SQLite's busy handler."""
        db = self._db
        db.execute("PRAGMA busy_timeout=0")
        try:
            deadline: float | None = None
            pause = LOCK_WAIT_FIRST_S
            while True:
                try:
                    db.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as error:
                    if getattr(error, "sqlite_errorcode", SQLITE_BUSY) & 0xFF != SQLITE_BUSY:
                        raise
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + self._busy_timeout_s
                    elif now >= deadline:
                        raise
                time.sleep(pause * random.uniform(0.5, 1.5))
                pause = min(LOCK_WAIT_CAP_S, pause * 2)
        finally:
            db.execute(self._busy_pragma)
