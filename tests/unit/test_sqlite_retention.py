"""Retention of the one-machine store: what a purge removes, what it keeps, and
that no slot it empties can be filled again."""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from adapters.dynamodb.run_records import HISTORY_RETENTION
from adapters.sqlite.janitor import DEFAULT_RETENTION, Janitor, _Pacer, parse_retention
from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from bootstrap.settings import Settings
from cli.main import main
from domain.errors import InvalidSchedule
from domain.partition import Partitioning
from domain.run import AttemptRecord, Run, RunStatus, new_occurrence
from domain.spec import Slot
from service.alerts import ALERT_PREFIX
from service.ports import Heartbeat
from service.watchdog import ACK_PREFIX, WATCH_PREFIX
from tests.conftest import WEBHOOK, FakeClock, World, definition, random_schedule_id, utc

T0 = utc("2026-12-01T00:00:00Z")
PARTS = Partitioning()
UNFINISHED = (RunStatus.SCHEDULED, RunStatus.ADMITTED, RunStatus.RUNNING, RunStatus.RETRYING)
FINISHED = (
    RunStatus.SUCCEEDED,
    RunStatus.FAILED,
    RunStatus.EXPIRED,
    RunStatus.SKIPPED,
    RunStatus.CANCELLED,
)


def a_run(schedule_id: str, at: datetime, status: RunStatus, *, pending: bool = False) -> Run:
    slot = Slot(at, at.replace(tzinfo=None), 0)
    run = new_occurrence(
        schedule_id,
        1,
        slot,
        bucket=PARTS.placement(at, at),
        shard=PARTS.shard(schedule_id),
        materialized_at=at,
    )
    finished = status in FINISHED
    return replace(
        run,
        status=status,
        pending=pending,
        admitted_at=None if status is RunStatus.SCHEDULED else at,
        finished_at=at + timedelta(seconds=1) if finished else None,
    )


def ids(store: SqliteStore) -> set[str]:
    return {r[0] for r in store.records._read("SELECT occurrence_id FROM occurrences")}


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    s = SqliteStore.open(tmp_path / "duetime.db")
    yield s
    s.close()


def test_purge_removes_finished_runs_before_the_cutoff_and_nothing_else(
    store: SqliteStore,
) -> None:
    # Given runs in every status, ten days old and one hour old, of one schedule
    # that also has a newer success (so no old one is its newest success).
    sid = random_schedule_id()
    old, new = T0, T0 + timedelta(days=10)
    runs = []
    for i, status in enumerate(UNFINISHED + FINISHED):
        runs.append(a_run(sid, old + timedelta(minutes=i), status))
        runs.append(a_run(sid, new + timedelta(minutes=i), status))
    finished_but_pending = a_run(sid, old + timedelta(hours=1), RunStatus.SUCCEEDED, pending=True)
    runs.append(finished_but_pending)
    store.records.insert(runs)

    # When history before day 7 is purged
    removed = store.retention.purge_history(T0 + timedelta(days=7))

    # Then exactly the old finished, no-longer-pending runs are gone
    gone = {r.occurrence_id for r in runs if r.scheduled_at < new and r.status in FINISHED}
    gone.discard(finished_but_pending.occurrence_id)
    assert removed == len(gone) == len(FINISHED)
    assert ids(store) == {r.occurrence_id for r in runs} - gone
    assert store.retention.purged_before() == T0 + timedelta(days=7)


def test_purge_keeps_each_schedules_newest_success_however_old(store: SqliteStore) -> None:
    yearly, other = random_schedule_id(), random_schedule_id()
    last_year = a_run(yearly, T0, RunStatus.SUCCEEDED)
    before = a_run(yearly, T0 - timedelta(days=365), RunStatus.SUCCEEDED)
    failed_after = a_run(yearly, T0 + timedelta(days=1), RunStatus.FAILED)
    others = [a_run(other, T0 + timedelta(hours=h), RunStatus.SUCCEEDED) for h in range(3)]
    store.records.insert([last_year, before, failed_after, *others])

    store.retention.purge_history(T0 + timedelta(days=30))

    # The watchdog still finds each schedule's last success.
    assert ids(store) == {last_year.occurrence_id, others[-1].occurrence_id}


def test_purge_goes_in_batches_of_short_transactions(store: SqliteStore) -> None:
    sid = random_schedule_id()
    store.records.insert(
        [a_run(sid, T0 + timedelta(minutes=m), RunStatus.FAILED) for m in range(25)]
    )
    left: list[int] = []

    removed = store.retention.purge_history(
        T0 + timedelta(days=1), batch_size=10, between_batches=lambda: left.append(len(ids(store)))
    )

    # Each batch committed on its own: others could write between them.
    assert removed == 25
    assert left == [15, 5, 0]


def test_purge_refuses_a_batch_size_below_one(store: SqliteStore) -> None:
    store.records.insert([a_run(random_schedule_id(), T0, RunStatus.FAILED)])
    with pytest.raises(ValueError, match="batch_size"):
        store.retention.purge_history(T0 + timedelta(days=1), batch_size=0)
    assert len(ids(store)) == 1
    assert store.retention.purged_before() is None


def test_the_cutoff_only_moves_forward(store: SqliteStore) -> None:
    store.retention.purge_history(T0 + timedelta(days=10))
    store.retention.purge_history(T0 + timedelta(days=3))  # a longer retention later
    assert store.retention.purged_before() == T0 + timedelta(days=10)


def _run_minutes(world: World, runs: SqliteRunStore, minutes: int, seen: Counter[str]) -> None:
    """Tick once a minute and finish whatever was admitted, as a worker would."""
    ticker = world.ticker()
    for _ in range(minutes):
        ticker.tick_once()
        for intent in world.queue.sent:
            run = runs.get_run(intent.occurrence_id)
            assert run is not None
            seen[run.business_key] += 1
            runs.finish(
                run.occurrence_id, attempt=None, status=RunStatus.SUCCEEDED, now=world.clock.now()
            )
        world.queue.sent.clear()
        world.clock.advance(60)


def test_a_purged_slot_is_never_admitted_again(world: World, clock: FakeClock) -> None:
    # Given an every-minute schedule that ran for three hours
    created, _ = world.schedules.create(
        definition({"name": "minutely", "spec": {"cron": "* * * * *"}, "target": WEBHOOK})
    )
    runs = SqliteRunStore(world.store)
    seen: Counter[str] = Counter()
    _run_minutes(world, runs, 180, seen)

    # When history older than an hour is purged
    assert world.store.retention.purge_history(clock.now() - timedelta(hours=1)) > 100

    # Then ticking on, editing, pausing and resuming never fill a purged slot again
    _run_minutes(world, runs, 30, seen)
    edited = world.schedules.edit(
        created.schedule_id,
        created.version,
        definition({"name": "minutely", "spec": {"cron": "* * * * *"}, "target": WEBHOOK}),
    )
    _run_minutes(world, runs, 30, seen)
    world.schedules.pause(edited.schedule_id)
    clock.advance(600)
    world.schedules.resume(edited.schedule_id)
    _run_minutes(world, runs, 30, seen)
    assert len(seen) > 250
    assert max(seen.values()) == 1


def test_a_backfill_before_the_cutoff_is_refused_and_writes_nothing(
    world: World, clock: FakeClock
) -> None:
    created, _ = world.schedules.create(
        definition({"name": "hourly", "spec": {"cron": "0 * * * *"}, "target": WEBHOOK})
    )
    clock.advance(timedelta(days=3))
    cutoff = clock.now() - timedelta(days=1)
    world.store.retention.purge_history(cutoff)
    before = ids(world.store)

    with pytest.raises(InvalidSchedule) as refused:
        world.schedules.backfill(created.schedule_id, cutoff - timedelta(hours=2), clock.now())

    assert refused.value.field == "start_at"
    assert "retention" in refused.value.reason
    assert ids(world.store) == before
    # A backfill that stays after the cutoff is still allowed.
    filled = world.schedules.backfill(created.schedule_id, cutoff, cutoff + timedelta(hours=3))
    assert len(filled) == 4


def test_dead_letters_older_than_the_retention_are_removed(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    queue = SqliteQueue(tmp_path / "duetime.db", clock=clock)
    for _ in range(3):
        queue.send_body("{}")
    first, second, third = queue.receive(3, 0)
    queue.dead_letter(first, "old")
    queue.dead_letter(second, "old")
    clock.advance(timedelta(days=2))
    queue.dead_letter(third, "recent")
    queue.send_body("{}")  # still to deliver

    removed = queue.purge_dead(T0 + timedelta(days=1), batch_size=1)

    assert removed == 2
    assert [reason for _, _, reason in queue.dead_letters()] == ["recent"]
    assert queue.depth() == 1
    queue.close()


def test_heartbeat_rows_do_not_grow_with_restarts(world: World, clock: FakeClock) -> None:
    queue = SqliteQueue(world.store.path, clock=clock)
    janitor = Janitor(world.store, queue, clock, timedelta(days=7), between_batches=lambda: None)
    counts = []
    for restart in range(6):
        world.ticker(owner=f"tick-process-{restart}").tick_once()  # a new process each time
        clock.advance(timedelta(hours=2))
        janitor.run_once()
        counts.append(world.store.records._read("SELECT count(*) FROM heartbeats")[0][0])
    # The dispatcher's own heartbeat, and no row per process.
    assert counts == [1] * 6
    queue.close()


def test_watch_verdicts_of_deleted_schedules_are_removed(world: World, clock: FakeClock) -> None:
    kept, _ = world.schedules.create(
        definition({"name": "a", "spec": {"cron": "0 9 * * *"}, "target": WEBHOOK})
    )
    gone, _ = world.schedules.create(
        definition({"name": "b", "spec": {"cron": "0 9 * * *"}, "target": WEBHOOK})
    )
    for schedule in (kept, gone):
        world.store.leases.beat(Heartbeat(WATCH_PREFIX + schedule.schedule_id, clock.now(), {}))
    world.schedules.delete(gone.schedule_id)

    assert world.store.leases.purge_orphan_heartbeats(WATCH_PREFIX) == 1
    watched = [WATCH_PREFIX + s.schedule_id for s in (kept, gone)]
    assert list(world.store.leases.heartbeats_of(watched)) == [WATCH_PREFIX + kept.schedule_id]


def test_attempt_logs_written_in_the_keyed_form_still_read(store: SqliteStore) -> None:
    run = a_run(random_schedule_id(), T0, RunStatus.FAILED)
    store.records.insert([run])
    keyed = [
        {"number": 1, "started_at": 1, "finished_at": 2, "outcome": "transient", "error": "500"},
        {"number": 2, "started_at": 3, "finished_at": None, "outcome": None, "error": None},
    ]
    with store.records._write() as db:
        db.execute(
            "UPDATE occurrences SET attempt_log = ? WHERE occurrence_id = ?",
            (json.dumps(keyed), run.occurrence_id),
        )
    read = store.records.get_run(run.occurrence_id)
    assert read is not None
    assert [(a.number, a.outcome, a.error) for a in read.attempt_log] == [
        (1, "transient", "500"),
        (2, None, None),
    ]


def test_attempt_logs_round_trip_in_the_compact_form(store: SqliteStore) -> None:
    log = (
        AttemptRecord(1, T0, T0 + timedelta(seconds=1), "transient", "HTTP 503"),
        AttemptRecord(2, T0 + timedelta(seconds=5)),
    )
    run = replace(a_run(random_schedule_id(), T0, RunStatus.RUNNING), attempt_log=log, attempts=2)
    store.records.insert([run])
    read = store.records.get_run(run.occurrence_id)
    assert read is not None and read.attempt_log == log
    raw = store.records._read("SELECT attempt_log FROM occurrences")[0][0]
    assert "number" not in raw  # the position is the number


# --- the setting ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "retention"),
    [("90d", timedelta(days=90)), ("2w", timedelta(weeks=2)), ("36h", timedelta(hours=36))],
)
def test_retentions(text: str, retention: timedelta) -> None:
    assert parse_retention(text) == retention


@pytest.mark.parametrize(
    "text", ["", "forever", "7", "1.5d", "-1d", "0d", "30m", "3651d", "7 days"]
)
def test_bad_retentions_are_refused_with_a_message_naming_the_option(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="--retention"):
        parse_retention(text)


def test_the_command_line_refuses_a_bad_retention_before_creating_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    for bad in ("0d", "soon", "30m"):
        with pytest.raises(SystemExit) as caught:
            main(["local", "--data-dir", str(data), "--retention", bad])
        assert caught.value.code == 2
        assert "--retention" in capsys.readouterr().err
        assert not data.exists()


def test_the_default_retention_matches_the_aws_tables_ttl() -> None:
    assert DEFAULT_RETENTION == HISTORY_RETENTION
    assert Settings().history_retention_s == HISTORY_RETENTION.total_seconds()
    with pytest.raises(ValueError, match="history_retention_s"):
        Settings(history_retention_s=60)


def test_a_janitor_refuses_a_retention_outside_its_bounds(
    store: SqliteStore, tmp_path: Path
) -> None:
    queue = SqliteQueue(store.path)
    with pytest.raises(ValueError, match="retention"):
        Janitor(store, queue, FakeClock(T0), timedelta(minutes=5))
    queue.close()


def test_an_old_file_without_the_meta_table_opens_and_purges(tmp_path: Path) -> None:
    path = tmp_path / "duetime.db"
    SqliteStore.open(path).close()
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE store_meta")  # as a file written before retention existed
    raw.close()
    store = SqliteStore.open(path)
    store.records.insert([a_run(random_schedule_id(), T0, RunStatus.FAILED)])
    assert store.retention.purge_history(T0 + timedelta(days=1)) == 1
    store.close()


def test_a_long_purge_leaves_the_write_lock_free_four_fifths_of_the_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    slept: list[float] = []
    pacer = _Pacer(sleep=slept.append)
    pacer.reset()
    now[0] += 0.010  # a batch of 10 ms
    pacer()
    pacer()  # one that took no time still waits the minimum
    now[0] += 5.0  # a batch stuck for seconds does not stall the pass for long
    pacer()
    assert slept == [pytest.approx(0.040), 0.005, pytest.approx(1.0)]


@pytest.mark.parametrize("prefix", [ACK_PREFIX, ALERT_PREFIX])
def test_acknowledgements_and_alert_records_of_deleted_schedules_are_removed(
    world: World, clock: FakeClock, prefix: str
) -> None:
    kept, _ = world.schedules.create(
        definition({"name": "a", "spec": {"cron": "0 9 * * *"}, "target": WEBHOOK})
    )
    gone, _ = world.schedules.create(
        definition({"name": "b", "spec": {"cron": "0 9 * * *"}, "target": WEBHOOK})
    )
    for schedule in (kept, gone):
        world.store.leases.beat(Heartbeat(prefix + schedule.schedule_id, clock.now(), {}))
    world.schedules.delete(gone.schedule_id)
    queue = SqliteQueue(world.store.path, clock=clock)
    Janitor(world.store, queue, clock, between_batches=lambda: None).run_once()
    queue.close()
    assert world.store.leases.heartbeat(prefix + gone.schedule_id) is None
    assert world.store.leases.heartbeat(prefix + kept.schedule_id) is not None
