"""A drain of a surge (service/planning/surge.py): the worker invoked to receive from the
delivery queue itself at an instant, run what it takes, and end."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.observability import metrics
from domain.delivery import Outcome
from domain.run import DeliveryIntent, RunStatus
from handlers.worker import handler
from service.planning.surge import drain_event
from service.ports import HOLD
from service.run_ports import QueueMessage
from tests.conftest import FakeClock, World
from tests.handlers.test_worker import FakeWorkQueue, admitted, body, event, record, worker_for
from tests.handlers.test_worker_batch import Context
from tests.unit.test_runs import FakeTarget


class HeldQueue(FakeWorkQueue):
    """Messages that become receivable from the ``visible_from``-th receive on."""

    def __init__(self, intents: list[DeliveryIntent], visible_from: int = 1) -> None:
        super().__init__()
        self.waiting = [
            QueueMessage(f"m{n}", f"r{n}", body(intent), 1) for n, intent in enumerate(intents)
        ]
        self.visible_from = visible_from
        self.receives: list[tuple[float, int]] = []  # (when, how many asked for)
        self.batches: list[list[str]] = []

    def receive(self, max_messages: int, wait_s: float) -> list[QueueMessage]:
        self.receives.append((time.monotonic(), max_messages))
        if len(self.receives) < self.visible_from:
            return []
        taken, self.waiting = self.waiting[:max_messages], self.waiting[max_messages:]
        return taken

    def delete_batch(self, receipts: list[str]) -> None:  # type: ignore[override]
        self.batches.append(list(receipts))
        super().delete_batch(receipts)


def _past() -> datetime:
    return datetime.now(UTC) - timedelta(seconds=5)


def test_a_drain_runs_what_it_receives_and_deletes_it_in_batches(
    world: World, clock: FakeClock
) -> None:
    intents = admitted(world, clock, 23)
    queue = HeldQueue(intents)
    target = FakeTarget()
    answer = handler(
        drain_event(_past(), limit=30),
        Context(remaining_ms=60_000),
        worker=worker_for(world, clock, target),
        queue=queue,
    )
    assert answer == {
        "received": 23,
        "deleted": 23,
        "retry": 0,
        "dead_lettered": 0,
        "unfinished": 0,
    }
    assert [asked for _, asked in queue.receives[:3]] == [10, 10, 10]
    assert sorted(queue.deleted) == sorted(f"r{n}" for n in range(23))
    assert len(queue.batches) == 1
    for intent in intents:
        run = world.store.records.get_run(intent.occurrence_id)
        assert run is not None and run.status is RunStatus.SUCCEEDED


def test_a_drain_takes_no_more_than_its_limit(world: World, clock: FakeClock) -> None:
    intents = admitted(world, clock, 12)
    queue = HeldQueue(intents)
    answer = handler(
        drain_event(_past(), limit=5),
        Context(remaining_ms=60_000),
        worker=worker_for(world, clock, FakeTarget()),
        queue=queue,
    )
    assert answer["received"] == 5
    assert [asked for _, asked in queue.receives] == [5]
    assert len(queue.waiting) == 7  # left to the event source mapping


def test_a_drain_waits_until_just_before_its_instant_then_polls_until_the_messages_appear(
    world: World, clock: FakeClock
) -> None:
    intents = admitted(world, clock, 3)
    queue = HeldQueue(intents, visible_from=3)
    at = datetime.now(UTC) + HOLD + timedelta(seconds=0.3)
    began = time.monotonic()
    answer = handler(
        drain_event(at, limit=10),
        Context(remaining_ms=60_000),
        worker=worker_for(world, clock, FakeTarget()),
        queue=queue,
    )
    # Nothing received before HOLD ahead of the instant, when its intents may appear.
    first_s = queue.receives[0][0] - began
    assert 0.25 <= first_s < 0.3 + HOLD.total_seconds()
    assert answer["received"] == 3 and answer["deleted"] == 3


@pytest.mark.parametrize(("early_s", "runs"), [(0.8, True), (3.0, False)])
def test_an_intent_received_up_to_a_second_early_is_held_until_its_time(
    world: World, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, early_s: float, runs: bool
) -> None:
    """A crowded second's intents are sent to become visible up to HOLD early (so the
    drains start them on time): the worker holds one until it is due, and sends one
    earlier than that back, as before."""
    (intent,) = admitted(world, clock, 1)
    clock.set(intent.scheduled_at - timedelta(seconds=early_s))
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    monkeypatch.setattr("handlers.worker.time.sleep", sleep)
    queue = FakeWorkQueue()
    target = FakeTarget()
    response = handler(
        event(record("m1", body(intent))),
        Context(remaining_ms=60_000),
        worker=worker_for(world, clock, target),
        queue=queue,
    )
    run = world.store.records.get_run(intent.occurrence_id)
    assert run is not None
    if runs:
        assert slept == [pytest.approx(early_s)]
        assert response == {"batchItemFailures": []}
        assert run.status is RunStatus.SUCCEEDED and run.attempts == 1
        assert run.started_at is not None and run.started_at >= intent.scheduled_at
    else:
        assert slept == []
        assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
        assert run.status is RunStatus.ADMITTED and run.attempts == 0
        [(receipt, delay_s)] = queue.visibility
        assert receipt == "receipt-m1" and delay_s == pytest.approx(early_s)


def test_a_drain_ends_when_the_queue_stays_empty_past_the_instant(
    world: World, clock: FakeClock
) -> None:
    queue = HeldQueue([])
    answer = handler(
        drain_event(_past()),
        Context(remaining_ms=60_000),
        worker=worker_for(world, clock, FakeTarget()),
        queue=queue,
    )
    assert answer["received"] == 0
    assert len(queue.receives) == 1  # long past its instant: one look, then it ends
    assert queue.batches == []


def test_a_record_to_retry_is_not_deleted_by_the_drain(world: World, clock: FakeClock) -> None:
    intents = admitted(world, clock, 2)
    queue = HeldQueue(intents)
    target = FakeTarget(Outcome.transient("503"), Outcome.transient("503"))
    answer = handler(
        drain_event(_past(), limit=10),
        Context(remaining_ms=60_000),
        worker=worker_for(world, clock, target),
        queue=queue,
    )
    assert answer["retry"] == 2 and answer["deleted"] == 0
    assert queue.deleted == []
    assert {receipt for receipt, _ in queue.visibility} == {"r0", "r1"}


@pytest.mark.parametrize("limit", [0, None])
def test_a_drain_without_a_usable_limit_takes_its_default_share(
    world: World, clock: FakeClock, limit: int | None
) -> None:
    queue = HeldQueue(admitted(world, clock, 2))
    event = drain_event(_past())
    event["limit"] = limit
    answer = handler(
        event,
        Context(remaining_ms=60_000),
        worker=worker_for(world, clock, FakeTarget()),
        queue=queue,
    )
    assert answer["received"] == 2


def test_a_drains_target_calls_are_bounded_by_the_time_left_after_its_wait(
    world: World, clock: FakeClock
) -> None:
    class Timed(FakeTarget):
        def __init__(self) -> None:
            super().__init__()
            self.timeouts: list[float] = []

        def deliver(self, target: Any, delivery: Any, *, timeout_s: float) -> Outcome:
            self.timeouts.append(timeout_s)
            return super().deliver(target, delivery, timeout_s=timeout_s)

    target = Timed()
    queue = HeldQueue(admitted(world, clock, 1))
    at = datetime.now(UTC) + HOLD + timedelta(seconds=0.5)  # it waits 0.5 s
    handler(
        drain_event(at, limit=1),
        Context(remaining_ms=12_000),  # 2 s for records once the margin is kept back
        worker=worker_for(world, clock, target),
        queue=queue,
    )
    [timeout] = target.timeouts
    assert timeout <= 1.6  # the 2 s less the half second it waited


def test_a_message_still_running_when_the_drain_must_end_is_released_at_once(
    world: World, clock: FakeClock
) -> None:
    # Not left hidden for the queue's visibility timeout: its run lease keeps
    # the next receiver off until the attempt would have ended.
    from handlers.worker import INVOCATION_MARGIN_S
    from tests.handlers.test_worker_batch import StuckTarget

    stuck, done = admitted(world, clock, 2)
    queue = HeldQueue([stuck, done])
    target = StuckTarget(stuck.schedule_id)
    try:
        answer = handler(
            drain_event(_past(), limit=2),
            Context(remaining_ms=int((INVOCATION_MARGIN_S + 1) * 1000)),
            worker=worker_for(world, clock, target),
            queue=queue,
        )
    finally:
        target.release.set()
    assert (answer["deleted"], answer["unfinished"]) == (1, 1)
    assert queue.visibility == [("r0", 0.0)]
    # The stuck call ends once released; its metrics must not leak into the next test.
    for thread in threading.enumerate():
        if thread.name.startswith("drain"):
            thread.join(timeout=10)
    metrics().clear_metrics()
