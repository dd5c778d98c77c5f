"""The RunStore's conditions, one by one. Written against the port: a DynamoDB
run store joins by adding one more entry to ``RUN_STORES``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import dynamo_store
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from domain.run import Run, RunStatus
from service.run_ports import RunStore
from tests.conftest import FakeClock, build_occurrence, build_schedule, utc


def _sqlite(tmp_path: Path) -> Iterator[tuple[RunStore, Callable[[Run], None]]]:
    store = SqliteStore.open(tmp_path / "duetime.db")

    def put(run: Run) -> None:
        assert store.records.insert([run]) == [run.occurrence_id]

    yield SqliteRunStore(store), put
    store.close()


def _dynamodb(tmp_path: Path) -> Iterator[tuple[RunStore, Callable[[Run], None]]]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        store = dynamo_store(client, create_store_tables(client, "runs"))

        def put(run: Run) -> None:
            assert store.records.insert([run]) == [run.occurrence_id]

        yield DynamoRunStore(store), put


RUN_STORES = {"sqlite": _sqlite, "dynamodb": _dynamodb}


@pytest.fixture(params=sorted(RUN_STORES))
def backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[RunStore, Callable[[Run], None]]]:
    yield from RUN_STORES[request.param](tmp_path)


def admitted_run(
    put: Callable[[Run], None], clock: FakeClock, days_later: int = 0, schedule_id: str = ""
) -> Run:
    """An admitted occurrence of a daily 09:00 schedule, ``days_later`` days on."""
    now = clock.now() + timedelta(days=days_later)
    schedule = build_schedule(now, **({"schedule_id": schedule_id} if schedule_id else {}))
    run = build_occurrence(schedule, now)
    # As dispatch leaves it: admitted, its intent sent.
    run = replace(run, status=RunStatus.ADMITTED, admitted_at=clock.now(), pending=False)
    put(run)
    return run


@pytest.fixture
def runs(backend: tuple[RunStore, Callable[[Run], None]]) -> RunStore:
    return backend[0]


@pytest.fixture
def put(backend: tuple[RunStore, Callable[[Run], None]]) -> Callable[[Run], None]:
    return backend[1]


def start(runs: RunStore, run: Run, clock: FakeClock, lease_s: float = 60) -> Run | None:
    now = clock.now()
    return runs.start_attempt(
        run.occurrence_id,
        now=now,
        lease_until=now + timedelta(seconds=lease_s),
        run_token_hash="hash-1",
    )


def test_start_counts_the_attempt_and_holds_the_lease(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    started = start(runs, run, clock)
    assert started is not None and started.status is RunStatus.RUNNING
    assert started.attempts == 1 and started.started_at == clock.now()
    assert started.run_lease_expires_at == clock.now() + timedelta(seconds=60)
    assert runs.get_run(run.occurrence_id) == started


def test_a_running_run_with_a_live_lease_cannot_be_started_again(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    start(runs, run, clock)
    clock.advance(59)
    assert start(runs, run, clock) is None
    clock.advance(1)  # the lease ends at exactly 60 s
    taken = start(runs, run, clock)
    assert taken is not None and taken.attempts == 2
    assert taken.started_at == utc("2026-12-01T08:00:00Z")  # the run's first start stays
    assert [(a.number, a.outcome) for a in taken.attempt_log] == [(1, "lost"), (2, None)]


def test_a_finished_run_never_starts_again(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    start(runs, run, clock)
    done = runs.finish(
        run.occurrence_id, attempt=1, status=RunStatus.SUCCEEDED, now=clock.now(), outcome="ok"
    )
    assert done is not None and done.finished_at == clock.now()
    assert done.run_lease_expires_at is None
    clock.advance(3600)
    assert start(runs, run, clock) is None


def test_only_the_attempt_that_holds_the_run_can_end_it(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    start(runs, run, clock)
    clock.advance(61)
    start(runs, run, clock)  # attempt 2 took over
    stale = {"now": clock.now(), "outcome": "succeeded"}
    assert runs.finish(run.occurrence_id, attempt=1, status=RunStatus.SUCCEEDED, **stale) is None
    assert (
        runs.record_retry(run.occurrence_id, attempt=1, now=clock.now(), outcome="x", error=None)
        is None
    )
    assert runs.finish(run.occurrence_id, attempt=2, status=RunStatus.SUCCEEDED, **stale)


def test_finish_without_an_attempt_only_closes_a_run_that_is_not_running(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    closed = runs.finish(
        run.occurrence_id, attempt=None, status=RunStatus.EXPIRED, now=clock.now(), reason="late"
    )
    assert closed is not None and closed.reason == "late" and closed.attempts == 0
    other = admitted_run(put, clock, days_later=1)
    start(runs, other, clock)
    assert (
        runs.finish(other.occurrence_id, attempt=None, status=RunStatus.SKIPPED, now=clock.now())
        is None
    )


def test_a_retry_closes_the_attempt_and_frees_the_run_for_the_next(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    start(runs, run, clock)
    clock.advance(2)
    retrying = runs.record_retry(
        run.occurrence_id, attempt=1, now=clock.now(), outcome="transient", error="HTTP 503"
    )
    assert retrying is not None and retrying.status is RunStatus.RETRYING
    assert retrying.run_lease_expires_at is None
    [attempt] = retrying.attempt_log
    assert (attempt.finished_at, attempt.outcome, attempt.error) == (
        clock.now(),
        "transient",
        "HTTP 503",
    )
    again = start(runs, run, clock)
    assert again is not None and again.attempts == 2


def test_progress_and_completion_need_the_token_and_a_live_deadline(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    start(runs, run, clock)
    deadline = clock.now() + timedelta(minutes=5)
    runs.mark_accepted(
        run.occurrence_id, attempt=1, now=clock.now(), deadline=deadline, result={"a": 1}
    )
    assert runs.report_progress(run.occurrence_id, run_token_hash="nope", progress={}) is None
    assert runs.report_progress(run.occurrence_id, run_token_hash="hash-1", progress={"p": 1})
    clock.advance(5 * 60)
    late = {"now": clock.now(), "result": None, "error": None}
    assert runs.complete(run.occurrence_id, run_token_hash="hash-1", succeeded=True, **late) is None
    clock.set(deadline - timedelta(seconds=1))
    on_time = {"now": clock.now(), "result": {"b": 2}, "error": None}
    done = runs.complete(run.occurrence_id, run_token_hash="hash-1", succeeded=True, **on_time)
    assert done is not None and done.status is RunStatus.SUCCEEDED
    assert done.result == {"a": 1, "b": 2} and done.run_token_hash is None


def test_running_before_finds_an_earlier_occurrence_still_in_progress(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    first = admitted_run(put, clock)
    second = admitted_run(put, clock, days_later=1, schedule_id=first.schedule_id)
    assert first.scheduled_at < second.scheduled_at
    assert runs.running_before(second, clock.now()) is None  # admitted is not running
    start(runs, first, clock)
    found = runs.running_before(second, clock.now())
    assert found is not None and found.occurrence_id == first.occurrence_id
    assert runs.running_before(first, clock.now()) is None  # only earlier ones count
    clock.advance(61)
    assert runs.running_before(second, clock.now()) is None  # its worker is gone


def test_the_heartbeat_extends_the_lease_of_the_attempt_that_holds_the_run(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    start(runs, run, clock, lease_s=15)
    clock.advance(10)
    until = clock.now() + timedelta(seconds=15)
    assert runs.extend_lease(run.occurrence_id, attempt=1, until=until) is True
    held = runs.get_run(run.occurrence_id)
    assert held is not None and held.run_lease_expires_at == until
    clock.advance(14)  # past the first lease, inside the extended one
    assert start(runs, run, clock) is None


def test_the_heartbeat_never_shortens_a_lease_nor_revives_a_lost_or_ended_attempt(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    start(runs, run, clock, lease_s=60)
    soon = clock.now() + timedelta(seconds=15)
    assert runs.extend_lease(run.occurrence_id, attempt=1, until=soon) is False
    stored = runs.get_run(run.occurrence_id)
    assert stored is not None
    assert stored.run_lease_expires_at == clock.now() + timedelta(seconds=60)

    clock.advance(60)
    taken = start(runs, run, clock)  # attempt 1 lost its lease: attempt 2 holds the run
    assert taken is not None and taken.attempts == 2
    late = clock.now() + timedelta(seconds=600)
    assert runs.extend_lease(run.occurrence_id, attempt=1, until=late) is False

    runs.finish(run.occurrence_id, attempt=2, status=RunStatus.SUCCEEDED, now=clock.now())
    assert runs.extend_lease(run.occurrence_id, attempt=2, until=late) is False
    ended = runs.get_run(run.occurrence_id)
    assert ended is not None and ended.run_lease_expires_at is None
