"""Duplicate deliveries and a crashed worker, end to end against a real receiver.

Promise 3: delivery is at-least-once with one idempotency key per occurrence;
a duplicate intent never runs an occurrence that is running under a live run
lease or already finished, and a worker that died is replaced by a new
attempt with the same key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from cli.worker_pool import run_worker_loop
from domain.run import DeliveryIntent, Run, RunStatus
from service.runs import RunWorker
from tests.conftest import World
from tests.scenarios.test_delivery_webhook import (
    Receiver,
    Stack,
    make_stack,
    receiver,
    schedule_due,
    stack,
)

__all__ = ["receiver", "stack"]  # fixtures


class CrashingRuns(SqliteRunStore):
    """The worker process dies while recording the end of a run (once, when armed)."""

    armed = False

    def finish(self, occurrence_id: str, **kwargs: Any) -> Run | None:
        if self.armed:
            self.armed = False
            raise SystemError("killed before the success was recorded")
        return super().finish(occurrence_id, **kwargs)


def test_an_intent_sent_twice_reaches_the_target_once(stack: Stack, receiver: Receiver) -> None:
    occurrence_id = schedule_due(stack, receiver.url())
    # The tick sent it, crashed before marking it sent, and the next tick sent it again.
    run = stack.run(occurrence_id)
    stack.queue.send_batch([DeliveryIntent.for_run(run)])
    assert stack.queue.depth() == 2

    totals = stack.work()

    assert totals["deleted"] == 2
    assert len(receiver.hits) == 1
    assert stack.run(occurrence_id).status is RunStatus.SUCCEEDED
    assert stack.queue.depth() == 0


def test_a_duplicate_received_while_the_run_is_running_does_not_call_again(
    stack: Stack, receiver: Receiver, tmp_path: Path
) -> None:
    occurrence_id = schedule_due(stack, receiver.url())
    stack.queue.send_batch([DeliveryIntent.for_run(stack.run(occurrence_id))])

    # A second worker process on the same file, with its own connections.
    other_store = SqliteStore.open(tmp_path / "duetime.db")
    other_queue = SqliteQueue(tmp_path / "duetime.db", clock=stack.clock)
    other = RunWorker(
        SqliteRunStore(other_store), stack.worker.targets, stack.clock, stack.worker.rng
    )
    seen: list[dict[str, int]] = []

    # While the first worker's call is in the receiver, the second takes the copy.
    receiver.on_hit = lambda: seen.append(
        run_worker_loop(other, other_queue, max_polls=1, wait_s=0, max_messages=1)
    )
    first = run_worker_loop(stack.worker, stack.queue, max_polls=1, wait_s=0, max_messages=1)

    assert first["deleted"] == 1
    assert seen == [{"polls": 1, "deleted": 0, "retry": 1, "dead_lettered": 0, "errors": 0}]
    assert len(receiver.hits) == 1

    # The copy comes back when the lease it waited for would have ended: removed, no call.
    stack.clock.advance(15 * 60 + 31)
    assert stack.work()["deleted"] == 1
    assert len(receiver.hits) == 1 and stack.queue.depth() == 0
    other_queue.close()
    other_store.close()


def test_after_success_a_redelivered_intent_is_removed_without_a_call(
    stack: Stack, receiver: Receiver
) -> None:
    occurrence_id = schedule_due(stack, receiver.url())
    stack.work()
    stack.queue.send_batch([DeliveryIntent.for_run(stack.run(occurrence_id))])
    stack.clock.advance(3600)
    assert stack.work()["deleted"] == 1
    assert len(receiver.hits) == 1


def test_a_crash_after_the_target_answered_calls_again_with_the_same_key_recorded_once(
    tmp_path: Path, receiver: Receiver
) -> None:
    world_runs: list[CrashingRuns] = []

    def crashing(world: World) -> CrashingRuns:
        world_runs.append(CrashingRuns(world.store))
        return world_runs[0]

    stack = make_stack(tmp_path, runs_factory=crashing)
    runs = world_runs[0]
    occurrence_id = schedule_due(stack, receiver.url())
    runs.armed = True

    assert stack.work()["errors"] == 1  # the receiver answered 200; nothing was recorded
    assert len(receiver.hits) == 1
    assert stack.run(occurrence_id).status is RunStatus.RUNNING

    stack.clock.advance(61)  # the message is visible again; the run lease is not over
    assert stack.work()["retry"] == 1
    assert len(receiver.hits) == 1

    stack.clock.advance(15 * 60)  # the lease is over: a new attempt, the same key
    assert stack.work()["deleted"] == 1
    assert [h.headers["Idempotency-Key"] for h in receiver.hits] == [occurrence_id] * 2
    assert [h.json["attempt"] for h in receiver.hits] == [1, 2]
    run = stack.run(occurrence_id)
    assert run.status is RunStatus.SUCCEEDED and run.attempts == 2
    assert [(a.number, a.outcome) for a in run.attempt_log] == [(1, "lost"), (2, "succeeded")]
    assert stack.queue.depth() == 0

    stack.clock.advance(3600)
    stack.work()
    assert len(receiver.hits) == 2  # recorded once; never called again
    stack.queue.close()
    stack.world.store.close()
