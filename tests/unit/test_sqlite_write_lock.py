"""Write transactions wait for SQLite's write lock held by another connection,
in short steps, up to the busy timeout; the connection's busy timeout is
restored for every other statement."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from adapters.sqlite.database import Database

SCHEMA = "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)"


def test_a_write_waits_for_the_lock_another_connection_holds_and_then_commits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.db"
    first, second = Database(path, SCHEMA), Database(path, SCHEMA)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1, 'holder')")
    waited = threading.Event()

    def write() -> None:
        with second._write() as db:
            db.execute("INSERT INTO t VALUES (2, 'waiter')")
        waited.set()

    thread = threading.Thread(target=write)
    thread.start()
    assert not waited.wait(0.2)  # still waiting while the lock is held
    holder.execute("COMMIT")
    thread.join(10)
    assert waited.is_set()
    assert first._db.execute("SELECT k, v FROM t ORDER BY k").fetchall() == [
        (1, "holder"),
        (2, "waiter"),
    ]
    assert second._db.execute("PRAGMA busy_timeout").fetchone()[0] == 30000
    holder.close()


def test_a_write_gives_up_after_the_busy_timeout_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    Database(path, SCHEMA)
    waiter = Database(path, SCHEMA, busy_timeout_s=0.3)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="locked"), waiter._write() as db:
        db.execute("INSERT INTO t VALUES (3, 'never')")
    holder.execute("ROLLBACK")
    assert waiter._db.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    assert waiter._db.execute("PRAGMA busy_timeout").fetchone()[0] == 300
    holder.close()


def test_an_adapter_on_another_ones_connection_shares_it_and_leaves_its_closing_to_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.db"
    owner = Database(path, SCHEMA)
    guest = Database(
        path, "CREATE TABLE IF NOT EXISTS u (k INTEGER PRIMARY KEY)", connection_of=owner
    )
    assert guest._db is owner._db and guest._lock is owner._lock
    with guest._write() as db:
        db.execute("INSERT INTO u VALUES (1)")
    guest.close()
    # the owner's connection is still open and sees the guest's table and row
    assert owner._db.execute("SELECT k FROM u").fetchall() == [(1,)]
    owner.close()
    with pytest.raises(sqlite3.ProgrammingError):
        guest._db.execute("SELECT 1")
