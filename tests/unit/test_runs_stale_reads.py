"""The worker may read a run as it was a moment ago (half a read unit on
DynamoDB): everything it then does to the run is a compare-and-set, and what
it would decide without one (delete, dead-letter, put back behind a live
lease) it decides on a strong read. Over the SQLite store, whose reads are
never stale, with a store that serves a chosen stale copy to the cheap read.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from adapters.sqlite.runs import SqliteRunStore
from domain.run import Run, RunStatus
from service.run_ports import ScheduleNow
from tests.conftest import FakeClock, World, utc
from tests.unit.test_runs import FakeTarget, due_intent, make_worker, stored


class StaleRuns(SqliteRunStore):
    """Serves ``stale`` to every read that allows a stale run; counts strong reads."""

    def __init__(self, world: World, stale: Run | None) -> None:
        super().__init__(world.store)
        self.stale = stale
        self.strong_reads = 0

    def get_run(self, occurrence_id: str) -> Run | None:
        self.strong_reads += 1
        return super().get_run(occurrence_id)

    def get_run_and_schedule(
        self, occurrence_id: str, schedule_id: str, *, fresh_run: bool = True
    ) -> tuple[Run | None, ScheduleNow | None]:
        if fresh_run:
            return super().get_run_and_schedule(occurrence_id, schedule_id)
        return self.stale, self.schedule_now(schedule_id)


def test_a_current_admitted_run_starts_without_a_strong_read(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    runs = StaleRuns(world, stored(world, intent))
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target, runs)

    assert worker.handle(intent, 1).action == "delete"
    assert len(target.calls) == 1 and runs.strong_reads == 0
    assert stored(world, intent).status is RunStatus.SUCCEEDED


def test_a_run_read_stale_as_missing_is_read_again_before_it_is_dead_lettered(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    runs = StaleRuns(world, None)
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target, runs)

    assert worker.handle(intent, 1).action == "delete"
    assert len(target.calls) == 1 and runs.strong_reads == 1
    assert stored(world, intent).status is RunStatus.SUCCEEDED


def test_a_run_read_stale_as_finished_is_read_again_before_its_message_is_deleted(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    current = stored(world, intent)
    runs = StaleRuns(world, replace(current, status=RunStatus.SUCCEEDED))
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target, runs)

    assert worker.handle(intent, 1).action == "delete"
    assert len(target.calls) == 1 and runs.strong_reads == 1
    assert stored(world, intent).status is RunStatus.SUCCEEDED


def test_a_run_read_stale_behind_a_live_lease_is_read_again_before_it_is_put_back(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    current = stored(world, intent)
    held = replace(
        current,
        status=RunStatus.RUNNING,
        run_lease_expires_at=clock.now() + timedelta(minutes=10),
    )
    runs = StaleRuns(world, held)
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target, runs)

    assert worker.handle(intent, 1).action == "delete"
    assert len(target.calls) == 1 and runs.strong_reads == 1


def test_a_stale_admitted_copy_cannot_start_a_run_another_worker_started(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    stale = stored(world, intent)
    first = FakeTarget()
    other, _ = make_worker(world, clock, first)
    assert other.handle(intent, 1).action == "delete"  # the other worker ran it
    runs = StaleRuns(world, stale)
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target, runs)

    decision = worker.handle(intent, 2)

    assert decision.action == "delete" and decision.reason == "already succeeded"
    assert target.calls == [] and len(first.calls) == 1
    assert stored(world, intent).attempts == 1


def test_the_schedule_is_read_strongly_even_when_the_run_may_be_stale(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    runs = StaleRuns(world, stored(world, intent))
    world.store.schedules.pause(intent.schedule_id, "maintenance", utc("2026-12-01T08:01:00Z"))
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target, runs)

    assert worker.handle(intent, 1).action == "delete"
    assert target.calls == [] and stored(world, intent).status is RunStatus.SKIPPED


def test_a_stale_copy_of_an_exhausted_run_does_not_dead_letter_a_run_that_succeeded(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock, policy={"retry": {"max_attempts": 2}})
    stale = stored(world, intent)
    worker, _ = make_worker(world, clock, FakeTarget())
    assert worker.handle(intent, 1).action == "delete"  # succeeded at the first attempt
    exhausted = replace(stale, status=RunStatus.RETRYING, attempts=2)
    runs = StaleRuns(world, exhausted)
    target = FakeTarget()
    late, _ = make_worker(world, clock, target, runs)

    decision = late.handle(intent, 2)

    assert decision.action == "delete" and decision.reason == "already succeeded"
    assert target.calls == [] and stored(world, intent).status is RunStatus.SUCCEEDED
