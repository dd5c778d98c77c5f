"""The SQLite run store reads a run with its version in one statement: the
worker's next read, the version, is then answered from the store's cache of
versions, and a version that is gone still reads as gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from tests.conftest import build_occurrence, build_schedule, utc

NOW = utc("2026-12-01T08:00:00Z")


@pytest.fixture
def stored(tmp_path: Path) -> tuple[SqliteStore, str, str]:
    store = SqliteStore.open(tmp_path / "duetime.db")
    schedule = build_schedule(NOW, payload={"report": "daily"})
    store.schedules.create(schedule)
    run = build_occurrence(schedule, NOW)
    assert store.records.insert([run]) == [run.occurrence_id]
    return store, schedule.schedule_id, run.occurrence_id


def reads(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL of every read the store makes from now on."""
    made: list[str] = []
    original = store.records._read

    def spy(sql: str, params: Any = ()) -> Any:
        made.append(sql)
        return original(sql, params)

    monkeypatch.setattr(store.records, "_read", spy)
    return made


def test_the_version_of_a_run_just_read_needs_no_query_of_its_own(
    stored: tuple[SqliteStore, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, schedule_id, occurrence_id = stored
    fresh = SqliteStore.open(store.path)  # reads the version the usual way
    expected = fresh.schedules.get_version(schedule_id, 1)
    runs = SqliteRunStore(SqliteStore.open(store.path))
    made = reads(runs.store, monkeypatch)
    run = runs.get_run(occurrence_id)
    assert run is not None and (run.schedule_id, run.version) == (schedule_id, 1)
    version = runs.get_version(schedule_id, 1)
    assert len(made) == 1
    assert version == expected and version is not None
    assert dict(version.payload) == {"report": "daily"}


def test_a_run_whose_version_is_gone_still_reads_its_version_as_gone(
    stored: tuple[SqliteStore, str, str],
) -> None:
    store, schedule_id, occurrence_id = stored
    with store.records._write() as db:
        db.execute("DELETE FROM schedule_versions WHERE schedule_id = ?", (schedule_id,))
    runs = SqliteRunStore(SqliteStore.open(store.path))
    run = runs.get_run(occurrence_id)
    assert run is not None and run.schedule_id == schedule_id
    assert runs.get_version(schedule_id, 1) is None


def test_a_run_that_does_not_exist_reads_as_none(
    stored: tuple[SqliteStore, str, str],
) -> None:
    store, _, _ = stored
    assert SqliteRunStore(store).get_run("sch_nothing.v1.20261201T090000Z") is None
