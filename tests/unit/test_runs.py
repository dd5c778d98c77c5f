"""The run use case: one delivery intent in, one decision about its message out.

Over the SQLite store on a temporary file (cheap and real), with a fake clock,
a scripted fake target, a seeded random source and recorded telemetry.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import pytest

from adapters.sqlite.runs import SqliteRunStore
from domain.backoff import retry_delay_s
from domain.delivery import Delivery, Outcome
from domain.run import DeliveryIntent, Run, RunStatus
from domain.targets import Target
from service.errors import RunNotFound
from service.run_ports import AttemptReport, RunTelemetry
from service.runs import Decision, RunReports, RunTokenRefused, RunWorker, hash_run_token
from tests.conftest import WEBHOOK, FakeClock, World, definition, utc

SEED = 7


class FakeTarget:
    """Answers from a script (then 200), records every delivery; ``during`` runs inside a call."""

    def __init__(self, *answers: Outcome) -> None:
        self.answers = list(answers)
        self.calls: list[Delivery] = []
        self.during: Callable[[], None] | None = None

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.calls.append(delivery)
        if self.during is not None:
            during, self.during = self.during, None
            during()
        return self.answers.pop(0) if self.answers else Outcome.succeeded(200, '{"ok":true}')


class FakeTelemetry(RunTelemetry):
    def __init__(self) -> None:
        self.started: list[tuple[str, int, float]] = []
        self.attempts: list[AttemptReport] = []
        self.retried: list[float] = []
        self.ended: list[RunStatus] = []

    def attempt_started(self, run: Run, late_by_s: float) -> None:
        self.started.append((run.occurrence_id, run.attempts, late_by_s))

    def attempt_ended(self, report: AttemptReport) -> None:
        self.attempts.append(report)

    def run_retried(self, run: Run, delay_s: float) -> None:
        self.retried.append(delay_s)

    def run_ended(self, run: Run) -> None:
        self.ended.append(run.status)


class CrashingRuns(SqliteRunStore):
    """Dies (raises) when recording the end of a run, once, while ``crash`` is set."""

    crash = False

    def finish(self, occurrence_id: str, **kwargs: Any) -> Run | None:
        if self.crash:
            self.crash = False
            raise RuntimeError("worker killed before the success was recorded")
        return super().finish(occurrence_id, **kwargs)


def due_intent(
    world: World,
    clock: FakeClock,
    *,
    policy: Mapping[str, Any] | None = None,
    spec: Mapping[str, Any] | None = None,
    payload: Mapping[str, Any] | None = None,
) -> DeliveryIntent:
    """A schedule due at 08:01, ticked until its occurrence is admitted and sent."""
    world.schedules.create(
        definition(
            {
                "name": "job",
                "spec": dict(spec or {"cron": "1 8 * * *"}),
                "target": WEBHOOK,
                "policy": dict(policy or {}),
                "payload": dict(payload or {"report": "sales"}),
            }
        )
    )
    world.ticker().tick_once()
    clock.set(utc("2026-12-01T08:01:00Z"))
    world.ticker().tick_once()
    return world.queue.sent[-1]


def make_worker(
    world: World, clock: FakeClock, target: FakeTarget, runs: SqliteRunStore | None = None
) -> tuple[RunWorker, FakeTelemetry]:
    telemetry = FakeTelemetry()
    worker = RunWorker(
        runs or SqliteRunStore(world.store),
        target,
        clock,
        random.Random(SEED),
        telemetry=telemetry,
        new_token=lambda: "token-1",
    )
    return worker, telemetry


def stored(world: World, intent: DeliveryIntent) -> Run:
    run = world.store.records.get_run(intent.occurrence_id)
    assert run is not None
    return run


def test_a_2xx_answer_succeeds_the_run_with_every_stamp(world: World, clock: FakeClock) -> None:
    intent = due_intent(world, clock)
    clock.set(utc("2026-12-01T08:01:02Z"))
    target = FakeTarget()
    worker, telemetry = make_worker(world, clock, target)

    assert worker.handle(intent, 1) == Decision.delete("succeeded")

    run = stored(world, intent)
    assert run.status is RunStatus.SUCCEEDED and run.attempts == 1
    assert run.started_at == run.finished_at == utc("2026-12-01T08:01:02Z")
    assert run.result == {"outcome": "succeeded", "excerpt": '{"ok":true}', "status_code": 200}
    assert run.run_lease_expires_at is None and not run.pending
    [attempt] = run.attempt_log
    assert (attempt.number, attempt.outcome, attempt.error) == (1, "succeeded", None)
    [delivery] = target.calls
    assert delivery.idempotency_key == intent.occurrence_id
    assert delivery.scheduled_at == utc("2026-12-01T08:01:00Z") and delivery.late_by_s == 2.0
    assert delivery.attempt == 1 and delivery.payload == {"report": "sales"}
    assert telemetry.started == [(intent.occurrence_id, 1, 2.0)]
    assert [a.status for a in telemetry.attempts] == ["succeeded"]
    assert telemetry.ended == [RunStatus.SUCCEEDED]


def test_a_duplicate_intent_while_running_does_not_call_the_target_again(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target)
    duplicate: list[Decision] = []
    target.during = lambda: duplicate.append(worker.handle(intent, 2))

    assert worker.handle(intent, 1).action == "delete"

    assert len(target.calls) == 1
    [decision] = duplicate
    assert decision.action == "retry"  # back when the run lease ends: 15 min + 30 s grace
    assert decision.delay_s == pytest.approx(900 + 30 + 1)


def test_a_duplicate_intent_after_success_does_not_call_the_target_again(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target)
    worker.handle(intent, 1)
    clock.advance(60)
    assert worker.handle(intent, 2) == Decision.delete("already succeeded")
    assert len(target.calls) == 1


def test_a_crash_after_the_target_answered_runs_again_with_the_same_key_recorded_once(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    target = FakeTarget()
    runs = CrashingRuns(world.store)
    worker, _ = make_worker(world, clock, target, runs)
    runs.crash = True
    with pytest.raises(RuntimeError):
        worker.handle(intent, 1)  # the target answered 200; the record was not written
    assert stored(world, intent).status is RunStatus.RUNNING

    # The message comes back while the dead worker's lease still runs: wait.
    clock.advance(120)
    assert worker.handle(intent, 2).action == "retry"
    assert len(target.calls) == 1

    # After the lease: a new attempt, the same idempotency key.
    clock.advance(900)
    assert worker.handle(intent, 3).action == "delete"
    assert [d.idempotency_key for d in target.calls] == [intent.occurrence_id] * 2
    assert [d.attempt for d in target.calls] == [1, 2]
    run = stored(world, intent)
    assert run.status is RunStatus.SUCCEEDED and run.attempts == 2
    assert [(a.number, a.outcome) for a in run.attempt_log] == [(1, "lost"), (2, "succeeded")]
    assert worker.handle(intent, 4).action == "delete"  # and never again
    assert len(target.calls) == 2


def test_a_transient_failure_retries_after_a_full_jitter_delay_with_the_same_key(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    target = FakeTarget(Outcome.transient("HTTP 503", 503))
    worker, telemetry = make_worker(world, clock, target)

    first = worker.handle(intent, 1)

    expected = retry_delay_s(1, 1.0, 30.0, random.Random(SEED))  # the schedule default
    assert first.action == "retry" and first.delay_s == expected
    run = stored(world, intent)
    assert run.status is RunStatus.RETRYING
    assert run.run_lease_expires_at == clock.now() + timedelta(seconds=expected)
    assert (run.attempt_log[0].outcome, run.attempt_log[0].error) == ("transient", "HTTP 503")

    clock.advance(first.delay_s)
    assert worker.handle(intent, 2).action == "delete"
    assert [(d.attempt, d.idempotency_key) for d in target.calls] == [
        (1, intent.occurrence_id),
        (2, intent.occurrence_id),
    ]
    assert stored(world, intent).status is RunStatus.SUCCEEDED
    assert telemetry.retried == [expected]
    assert [a.status for a in telemetry.attempts] == ["retrying", "succeeded"]


def test_a_duplicate_intent_cannot_start_the_next_attempt_before_the_backoff(
    world: World, clock: FakeClock
) -> None:
    # A retry's message is a new one on SQS; if the old one also comes back (a
    # delete that was lost), or a long wait's next link arrives, the run's
    # stored backoff sends it back for what is left of the wait.
    intent = due_intent(world, clock)
    target = FakeTarget(Outcome.transient("HTTP 429", 429, retry_after_s=120.0))
    worker, _ = make_worker(world, clock, target)
    assert worker.handle(intent, 1).delay_s == 120.0

    clock.advance(30)
    duplicate = worker.handle(intent, 1)

    assert duplicate == Decision.retry_after(90.0, "backing off before the next attempt")
    assert len(target.calls) == 1
    clock.advance(90)
    worker.handle(intent, 2)
    assert len(target.calls) == 2


def test_retry_after_from_the_target_is_honoured_above_the_cap(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    target = FakeTarget(Outcome.transient("HTTP 429", 429, retry_after_s=120.0))
    worker, _ = make_worker(world, clock, target)
    assert worker.handle(intent, 1) == Decision.retry_after(120.0, "attempt 1 failed: HTTP 429")


def test_a_permanent_error_fails_the_run_at_once_and_deletes_its_message(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    target = FakeTarget(Outcome.permanent("HTTP 400", 400, "bad"))
    worker, telemetry = make_worker(world, clock, target)
    decision = worker.handle(intent, 1)
    # A user's broken target is recorded on the run, not sent to the DLQ.
    assert decision == Decision.delete("permanent error: HTTP 400")
    run = stored(world, intent)
    assert run.status is RunStatus.FAILED and run.reason == "permanent error: HTTP 400"
    assert run.finished_at == clock.now() and run.attempts == 1
    assert telemetry.ended == [RunStatus.FAILED]
    assert worker.handle(intent, 2).action == "delete"
    assert len(target.calls) == 1


def test_after_the_last_attempt_the_run_fails_with_its_reason(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock, policy={"retry": {"max_attempts": 2}})
    target = FakeTarget(Outcome.transient("timed out after 10s"), Outcome.transient("HTTP 502"))
    worker, _ = make_worker(world, clock, target)
    assert worker.handle(intent, 1).action == "retry"
    clock.advance(60)
    decision = worker.handle(intent, 2)
    assert decision.action == "delete"
    assert decision.reason == "attempts exhausted (2 of 2); last error: HTTP 502"
    run = stored(world, intent)
    assert run.status is RunStatus.FAILED and run.reason == decision.reason
    assert [a.outcome for a in run.attempt_log] == ["transient", "transient"]


def test_expire_is_checked_again_when_the_run_starts(world: World, clock: FakeClock) -> None:
    intent = due_intent(world, clock, policy={"overdue": "expire", "catchup_window": "PT1M"})
    clock.set(utc("2026-12-01T08:03:00Z"))  # the message waited two minutes in the queue
    target = FakeTarget()
    worker, telemetry = make_worker(world, clock, target)
    decision = worker.handle(intent, 1)
    assert decision.action == "delete"
    run = stored(world, intent)
    assert run.status is RunStatus.EXPIRED and run.attempts == 0
    assert run.reason == "expired: found 120 s late, beyond the catchup_window of 60 s"
    assert target.calls == [] and telemetry.ended == [RunStatus.EXPIRED]


def test_within_the_catchup_window_an_expire_policy_runs(world: World, clock: FakeClock) -> None:
    intent = due_intent(world, clock, policy={"overdue": "expire", "catchup_window": "PT1M"})
    clock.set(utc("2026-12-01T08:01:59Z"))
    worker, _ = make_worker(world, clock, FakeTarget())
    assert worker.handle(intent, 1).action == "delete"
    assert stored(world, intent).status is RunStatus.SUCCEEDED


def _two_runs(world: World, clock: FakeClock, overlap: str) -> tuple[DeliveryIntent, ...]:
    world.schedules.create(
        definition(
            {
                "name": "every minute",
                "spec": {"cron": "* * * * *"},
                "target": WEBHOOK,
                "policy": {"overlap": overlap, "overdue": "catch_up_all"},
            }
        )
    )
    world.ticker().tick_once()
    clock.set(utc("2026-12-01T08:02:00Z"))  # 08:01 and 08:02 are both due
    world.ticker().tick_once()
    due = [i for i in world.queue.sent if i.scheduled_at <= clock.now()]  # not those queued ahead
    return tuple(due[-2:])


@pytest.mark.parametrize("overlap", ["skip", "allow_all"])
def test_overlap_skip_records_a_run_as_skipped_while_the_previous_one_runs(
    world: World, clock: FakeClock, overlap: str
) -> None:
    earlier, later = _two_runs(world, clock, overlap)
    assert earlier.scheduled_at < later.scheduled_at
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target)
    inner: list[Decision] = []
    target.during = lambda: inner.append(worker.handle(later, 1))

    worker.handle(earlier, 1)

    run = stored(world, later)
    if overlap == "skip":
        assert run.status is RunStatus.SKIPPED
        assert run.reason == f"overlap: {earlier.occurrence_id} is still running"
        assert inner == [Decision.delete(run.reason)] and len(target.calls) == 1
    else:
        assert run.status is RunStatus.SUCCEEDED and len(target.calls) == 2


def test_a_202_waits_for_completion_through_the_run_token(world: World, clock: FakeClock) -> None:
    intent = due_intent(world, clock)
    target = FakeTarget(Outcome.accepted(202, "queued"))
    worker, telemetry = make_worker(world, clock, target)
    reports = RunReports(SqliteRunStore(world.store), clock, telemetry)

    decision = worker.handle(intent, 1)
    assert decision.action == "retry" and decision.delay_s == pytest.approx(15 * 60 + 1)
    assert target.calls[0].run_token == "token-1"
    run = stored(world, intent)
    assert run.status is RunStatus.RUNNING and run.attempt_log[-1].outcome == "accepted"
    assert run.run_token_hash == hash_run_token("token-1")  # the token itself is never stored

    clock.advance(60)
    with pytest.raises(RunTokenRefused):
        reports.progress(intent.occurrence_id, "not-the-token", {"done": 1})
    assert reports.progress(intent.occurrence_id, "token-1", {"done": 40}).progress == {"done": 40}
    done = reports.complete(intent.occurrence_id, "token-1", succeeded=True, result={"rows": 9})
    assert done.status is RunStatus.SUCCEEDED and done.finished_at == clock.now()
    assert done.result == {
        "outcome": "accepted",
        "excerpt": "queued",
        "status_code": 202,
        "rows": 9,
    }
    assert [a.outcome for a in done.attempt_log] == ["succeeded"]

    clock.advance(15 * 60)  # the message comes back at the deadline: nothing to do
    assert worker.handle(intent, 2).action == "delete"
    assert len(target.calls) == 1


def test_a_202_without_completion_before_the_run_timeout_is_a_failed_attempt(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock, policy={"run_timeout": "PT5M"})
    target = FakeTarget(Outcome.accepted(202), Outcome.succeeded(200))
    worker, _ = make_worker(world, clock, target)
    reports = RunReports(SqliteRunStore(world.store), clock)
    worker.handle(intent, 1)

    clock.advance(5 * 60 + 1)
    with pytest.raises(RunTokenRefused, match="missed its run timeout"):
        reports.complete(intent.occurrence_id, "token-1", succeeded=True)
    decision = worker.handle(intent, 2)
    assert decision.action == "retry"
    run = stored(world, intent)
    assert run.status is RunStatus.RETRYING
    assert run.attempt_log[0].error == "no completion reported within the run timeout (300 s)"

    clock.advance(decision.delay_s)
    assert worker.handle(intent, 3).action == "delete"
    assert stored(world, intent).attempts == 2 and len(target.calls) == 2


class CountingRunStore(SqliteRunStore):
    """The local run store, counting its reads; it can lose every race."""

    def __init__(self, world: World, *, loses_races: bool = False) -> None:
        super().__init__(world.store)
        self.reads = 0
        self.loses_races = loses_races

    def get_run(self, occurrence_id: str) -> Run | None:
        self.reads += 1
        return super().get_run(occurrence_id)

    def compare_and_set(self, before: Run, after: Run) -> bool:
        return not self.loses_races and super().compare_and_set(before, after)


def test_a_refused_report_is_answered_from_the_guard_without_a_second_read(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    worker, _ = make_worker(world, clock, FakeTarget(Outcome.accepted(202)))
    worker.handle(intent, 1)
    runs = CountingRunStore(world)
    reports = RunReports(runs, clock)
    before = stored(world, intent)

    with pytest.raises(RunTokenRefused, match="was not given this token"):
        reports.progress(intent.occurrence_id, "not-the-token", {"done": 1})
    assert runs.reads == 1 and stored(world, intent) == before
    reports.complete(intent.occurrence_id, "token-1", succeeded=True)
    ended = stored(world, intent)
    runs.reads = 0
    with pytest.raises(RunTokenRefused, match="is succeeded, not running"):
        reports.complete(intent.occurrence_id, "token-1", succeeded=False)
    assert runs.reads == 1 and stored(world, intent) == ended
    with pytest.raises(RunNotFound):
        reports.progress("sch_x.v1.20261201T080000Z", "token-1", {})


def test_a_report_that_loses_every_race_is_refused_and_asks_to_report_again(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    worker, _ = make_worker(world, clock, FakeTarget(Outcome.accepted(202)))
    worker.handle(intent, 1)
    before = stored(world, intent)
    reports = RunReports(CountingRunStore(world, loses_races=True), clock)
    with pytest.raises(RunTokenRefused, match="report again"):
        reports.complete(intent.occurrence_id, "token-1", succeeded=True)
    assert stored(world, intent) == before


def test_the_run_uses_the_version_it_was_created_under(world: World, clock: FakeClock) -> None:
    intent = due_intent(world, clock, payload={"report": "v1"})
    world.schedules.edit(
        intent.schedule_id,
        1,
        definition(
            {"name": "job", "spec": {"cron": "1 8 * * *"}, "target": WEBHOOK, "payload": {"x": 2}}
        ),
    )
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target)
    worker.handle(intent, 1)
    assert (target.calls[0].version, target.calls[0].payload) == (1, {"report": "v1"})


def test_an_intent_for_an_occurrence_with_no_record_is_dropped(
    world: World, clock: FakeClock
) -> None:
    # A pause or a delete withdraws a planned slot's record while its intent
    # waits in the queue: nothing to run, and nothing for the dead letters.
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target)
    ghost = DeliveryIntent("sch_x.v1.20261201T080000Z", "sch_x", 1, utc("2026-12-01T08:00:00Z"))
    decision = worker.handle(ghost, 1)
    assert decision.action == "delete" and "withdrawn" in decision.reason
    assert target.calls == []


def test_two_workers_with_copies_of_one_intent_start_one_attempt(
    world: World, clock: FakeClock
) -> None:
    intent = due_intent(world, clock)
    runs = SqliteRunStore(world.store)
    now = clock.now()
    lease = now + timedelta(minutes=1)
    first, second = (
        runs.start_attempt(intent.occurrence_id, now=now, lease_until=lease, run_token_hash=None)
        for _ in range(2)
    )
    assert first is not None and first.attempts == 1 and second is None


def test_a_run_cancelled_while_its_call_is_in_flight_is_named_to_the_heartbeat(
    world: World, clock: FakeClock
) -> None:
    # The hook a target that can stop its call uses; the late answer is ignored.
    intent = due_intent(world, clock)
    target = FakeTarget()
    worker, _ = make_worker(world, clock, target)
    seen: list[list[str]] = []

    def cancel_then_ask() -> None:
        seen.append(worker.cancelled_in_flight())
        assert worker.runs.cancel(intent.occurrence_id, now=clock.now(), reason="stop")
        seen.append(worker.cancelled_in_flight())

    target.during = cancel_then_ask
    assert worker.handle(intent, 1).action == "delete"
    assert seen == [[], [intent.occurrence_id]]
    assert stored(world, intent).status is RunStatus.CANCELLED
    assert worker.cancelled_in_flight() == []
