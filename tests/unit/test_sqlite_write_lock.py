"""Write transactions wait for SQLite's write lock held by another connection,
and for duetime's writer lock beside the database held by another writer, up
to the busy timeout; the connection's busy timeout stays what it was for
every other statement."""

from __future__ import annotations

import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
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


def test_writers_of_two_connections_take_turns_and_every_write_lands(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    first, second = Database(path, SCHEMA), Database(path, SCHEMA)

    def write(database: Database, start: int) -> None:
        for k in range(start, start + 200):
            with database._write() as db:
                db.execute("INSERT INTO t VALUES (?, 'w')", (k,))

    threads = [
        threading.Thread(target=write, args=(first, 0)),
        threading.Thread(target=write, args=(second, 1000)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert first._db.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 400
    # duetime's writers queue on the lock file beside the database, not on
    # SQLite's lock, so the connection's busy timeout is never changed
    assert (tmp_path / "x.db-writer").exists()
    assert second._db.execute("PRAGMA busy_timeout").fetchone()[0] == 30000


def test_a_write_waits_for_the_writer_lock_and_gives_up_after_the_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.db"
    waiter = Database(path, SCHEMA, busy_timeout_s=0.3)
    holder = os.open(str(path) + "-writer", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"), waiter._write() as db:
            db.execute("INSERT INTO t VALUES (3, 'never')")
    finally:
        os.close(holder)
    assert waiter._db.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    with waiter._write() as db:  # the lock is free again once its holder let go
        db.execute("INSERT INTO t VALUES (4, 'after')")
    assert waiter._db.execute("SELECT k FROM t").fetchall() == [(4,)]


def test_the_writer_lock_of_a_killed_process_is_free_at_once(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    # A short busy timeout: a lock the dead process still held would make the
    # write below give up ("locked") instead of waiting for it.
    waiter = Database(path, SCHEMA, busy_timeout_s=0.5)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(path) + '-writer'!r}, os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        with waiter._write() as db:
            db.execute("INSERT INTO t VALUES (5, 'after the kill')")
    finally:
        holder.kill()
        holder.wait(10)
    assert waiter._db.execute("SELECT k FROM t").fetchall() == [(5,)]
