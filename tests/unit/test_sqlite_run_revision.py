"""The ``revision`` column a SQLite file made before it gets when opened."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from domain.run import RunStatus
from tests.conftest import FakeClock
from tests.unit.test_runs_store import admitted_run


def test_a_database_from_before_revisions_gets_its_column_and_runs_go_on(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "duetime.db"
    store = SqliteStore.open(path)
    run = admitted_run(lambda r: store.records.insert([r]), clock)
    store.close()
    with sqlite3.connect(path) as db:  # as an earlier release left it, with its run
        db.execute("ALTER TABLE occurrences DROP COLUMN revision")

    first = SqliteRunStore.open(str(path))
    second = SqliteRunStore.open(str(path))  # a second process opening it: no second column
    found = first.get_run(run.occurrence_id)
    assert found == run and found.revision == 0
    started = first.start_attempt(
        run.occurrence_id,
        now=clock.now(),
        lease_until=clock.now() + timedelta(seconds=30),
        run_token_hash=None,
    )
    assert started is not None and started.revision == 1
    assert second.get_run(run.occurrence_id) == started
    # A worker holding the run as it was before the column cannot write it.
    assert (
        second.finish(
            run.occurrence_id, attempt=None, status=RunStatus.SKIPPED, now=clock.now(), seen=run
        )
        is None
    )
    assert second.get_run(run.occurrence_id) == started
    first.store.close()
    second.store.close()
