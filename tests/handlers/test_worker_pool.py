"""The local worker pool: several deliveries at once, a heartbeat while a run is
in flight, and messages handed back on stop.

Targets block on an Event instead of sleeping, and every wait is bounded and
waits for a state, never for a duration: nothing here depends on how fast the
machine is.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from cli.worker_pool import WorkerPool
from domain.delivery import Delivery, Outcome
from domain.run import DeliveryIntent, RunStatus
from domain.targets import Target, WebhookTarget
from service.runs import RunWorker, WorkerConfig
from tests.conftest import FakeClock, World, definition, utc

HANG_URL = "https://hangs.example.com/hook"
OK_URL = "https://fine.example.com/hook"
BOUND_S = 20.0  # the longest any wait here may take before the test fails


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.005)


@dataclass
class BlockingTarget:
    """Answers 200 at once, except for ``HANG_URL``, which blocks until ``release``."""

    release: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    calls: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        with self.lock:
            self.calls.append(delivery)
        if isinstance(target, WebhookTarget) and target.url == HANG_URL:
            self.entered.set()
            if not self.release.wait(BOUND_S):
                return Outcome.transient("the test never released the call")
        return Outcome.succeeded(200, b"{}")


@dataclass
class Pool:
    world: World
    queue: SqliteQueue
    target: BlockingTarget
    worker: RunWorker
    stop: threading.Event
    thread: threading.Thread | None = None

    def start(self, pool: WorkerPool) -> None:
        self.thread = threading.Thread(target=pool.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def status(self, occurrence_id: str) -> RunStatus:
        run = self.world.store.records.get_run(occurrence_id)
        assert run is not None
        return run.status


@pytest.fixture
def pool(world: World, clock: FakeClock, tmp_path: Path) -> Iterator[Pool]:
    queue = SqliteQueue(world.store.path, clock=clock, poll_interval_s=0.01)
    target = BlockingTarget()
    worker = RunWorker(
        SqliteRunStore(world.store),
        target,
        clock,
        random.Random(5),
        config=WorkerConfig(held_lease_s=15.0),
    )
    p = Pool(world, queue, target, worker, threading.Event())
    yield p
    target.release.set()
    p.stop.set()
    if p.thread is not None:
        p.thread.join(BOUND_S)
    wait_for(lambda: not worker.in_flight(), "the released calls to be recorded")
    queue.close()


def create(world: World, name: str, spec: dict[str, str], url: str) -> str:
    body = {"name": name, "spec": spec, "target": {"type": "webhook", "url": url}}
    return world.schedules.create(definition(body))[0].schedule_id


def tick(world: World, queue: SqliteQueue) -> list[DeliveryIntent]:
    """One tick into the SQLite queue; returns what it sent (read back from the table)."""
    before = {m for m in _bodies(queue)}
    world.ticker(queue=queue).tick_once()
    return [DeliveryIntent.from_dict(json.loads(b)) for b in _bodies(queue) if b not in before]


def _bodies(queue: SqliteQueue) -> list[str]:
    with queue._lock:
        return [r[0] for r in queue._db.execute("SELECT body FROM delivery_queue").fetchall()]


def test_a_hanging_target_does_not_hold_up_an_every_second_schedule(
    pool: Pool, clock: FakeClock
) -> None:
    # Given a schedule whose target hangs and one due every second, two workers
    hanging = create(pool.world, "hangs", {"cron": "1 8 * * *"}, HANG_URL)
    healthy = create(pool.world, "every second", {"every": "PT1S"}, OK_URL)
    start = utc("2026-12-01T08:01:00Z")
    clock.set(start)
    # (the tick queues the lookahead's slots at once, each held back to its second)
    sent = tick(pool.world, pool.queue)
    (stuck,) = [i.occurrence_id for i in sent if i.schedule_id == hanging]
    every_second = {i.scheduled_at: i.occurrence_id for i in sent if i.schedule_id == healthy}
    pool.start(WorkerPool(pool.worker, pool.queue, workers=2, wait_s=0.05))
    wait_for(pool.target.entered.is_set, "the hanging call to start")

    # When the every-second schedule comes due again and again
    for n in range(1, 6):
        clock.advance(1)
        tick(pool.world, pool.queue)
        occurrence_id = every_second[start + timedelta(seconds=n)]
        # Then each of its runs succeeds while the hanging call is still in flight
        wait_for(
            lambda o=occurrence_id: pool.status(o) is RunStatus.SUCCEEDED,  # type: ignore[misc]
            f"{occurrence_id} to succeed",
        )
        assert pool.status(stuck) is RunStatus.RUNNING
        assert not pool.target.release.is_set()

    pool.target.release.set()
    wait_for(lambda: pool.status(stuck) is RunStatus.SUCCEEDED, "the hanging run to end")


def test_the_heartbeat_keeps_the_message_and_the_run_lease_while_the_call_is_in_flight(
    pool: Pool, clock: FakeClock
) -> None:
    hanging = create(pool.world, "hangs", {"cron": "1 8 * * *"}, HANG_URL)
    clock.set(utc("2026-12-01T08:01:00Z"))
    (intent,) = tick(pool.world, pool.queue)
    assert intent.schedule_id == hanging
    pool.start(
        WorkerPool(
            pool.worker, pool.queue, workers=1, wait_s=0.05, visibility_s=15, heartbeat_s=0.01
        )
    )
    wait_for(pool.target.entered.is_set, "the call to start")
    other = SqliteQueue(pool.world.store.path, clock=clock)
    try:
        # Twice the 15 s a receive or a lease lasts, five seconds at a time.
        for _ in range(6):
            clock.advance(5)
            mark = clock.now() + timedelta(seconds=10)
            wait_for(
                lambda m=mark: _lease(pool, intent.occurrence_id) > m,  # type: ignore[misc]
                "the heartbeat to extend the run lease",
            )
            wait_for(
                lambda m=mark: _visible_at(other) > m,  # type: ignore[misc]
                "the heartbeat to extend the message's visibility",
            )
            assert other.receive(10, 0) == [], "another worker must not get the held message"
        run = pool.world.store.records.get_run(intent.occurrence_id)
        assert run is not None and run.status is RunStatus.RUNNING and run.attempts == 1
    finally:
        other.close()
    pool.target.release.set()
    wait_for(lambda: pool.status(intent.occurrence_id) is RunStatus.SUCCEEDED, "the run to succeed")
    assert len(pool.target.calls) == 1


def _lease(pool: Pool, occurrence_id: str) -> object:
    run = pool.world.store.records.get_run(occurrence_id)
    assert run is not None and run.run_lease_expires_at is not None
    return run.run_lease_expires_at


def _visible_at(queue: SqliteQueue) -> object:
    at = queue.next_visible_at()
    assert at is not None
    return at


def test_a_run_whose_worker_died_is_taken_over_under_the_same_key(
    pool: Pool, clock: FakeClock
) -> None:
    # Given a worker that received the message, started the attempt and died
    create(pool.world, "job", {"cron": "1 8 * * *"}, OK_URL)
    clock.set(utc("2026-12-01T08:01:00Z"))
    (intent,) = tick(pool.world, pool.queue)
    (held,) = pool.queue.receive(10, 0)
    dead_start = pool.worker.runs.start_attempt(
        intent.occurrence_id,
        now=clock.now(),
        lease_until=clock.now() + timedelta(seconds=15),
        run_token_hash=None,
    )
    assert dead_start is not None and dead_start.attempts == 1

    # When its message and its lease lapse (no heartbeat) and a pool runs
    clock.advance(16)
    totals = WorkerPool(pool.worker, pool.queue, workers=2, wait_s=0).run(max_polls=1)

    # Then the run is taken over: attempt 2, the same occurrence and idempotency key
    assert totals["deleted"] == 1
    run = pool.world.store.records.get_run(intent.occurrence_id)
    assert run is not None and run.status is RunStatus.SUCCEEDED and run.attempts == 2
    assert run.attempt_log[0].outcome == "lost"
    (call,) = pool.target.calls
    assert (call.occurrence_id, call.attempt) == (intent.occurrence_id, 2)
    assert call.idempotency_key == dead_start.occurrence_id
    assert pool.queue.depth() == 0
    assert held.receive_count == 1


def test_on_stop_messages_not_yet_started_are_handed_back_at_once(
    pool: Pool, clock: FakeClock
) -> None:
    hanging = create(pool.world, "hangs", {"cron": "1 8 * * *"}, HANG_URL)
    others = [create(pool.world, f"job {n}", {"cron": "1 8 * * *"}, OK_URL) for n in range(4)]
    clock.set(utc("2026-12-01T08:01:00Z"))
    pool.target.entered.clear()
    tick(pool.world, pool.queue)
    # The one worker may run some of the others before the hanging one.
    worker_pool = WorkerPool(pool.worker, pool.queue, workers=1, wait_s=0.05, drain_s=0.05)
    pool.start(worker_pool)
    wait_for(pool.target.entered.is_set, "the hanging call to start")
    pool.stop.set()
    assert pool.thread is not None
    pool.thread.join(BOUND_S)
    assert not pool.thread.is_alive()

    not_run = [
        s
        for s in others
        if all(c.schedule_id != s for c in pool.target.calls)  # never called
    ]
    # Received but not started: visible again now, not after the visibility timeout.
    back = pool.queue.receive(10, 0)
    assert sorted(i.schedule_id for i in map(_intent, back)) == sorted(not_run)
    assert hanging not in {i.schedule_id for i in map(_intent, back)}


def _intent(message: object) -> DeliveryIntent:
    return DeliveryIntent.from_dict(json.loads(message.body))  # type: ignore[attr-defined]


def test_a_pool_without_workers_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        WorkerPool(None, None, workers=0)  # type: ignore[arg-type]


class RetryLaterTarget:
    """Always a 503 that asks for two minutes."""

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        return Outcome.transient("HTTP 503", 503, b"", 120.0)


def test_the_heartbeat_never_overwrites_a_retry_delay(pool: Pool, clock: FakeClock) -> None:
    create(pool.world, "flaky", {"cron": "1 8 * * *"}, OK_URL)
    clock.set(utc("2026-12-01T08:01:00Z"))
    (intent,) = tick(pool.world, pool.queue)
    worker = RunWorker(
        SqliteRunStore(pool.world.store),
        RetryLaterTarget(),
        clock,
        random.Random(5),
        config=WorkerConfig(held_lease_s=15.0),
    )
    workers = WorkerPool(worker, pool.queue, workers=2, wait_s=0.05, heartbeat_s=0.005)
    pool.start(workers)
    wait_for(lambda: pool.status(intent.occurrence_id) is RunStatus.RETRYING, "the retry")
    beats = workers.beats
    wait_for(lambda: workers.beats >= beats + 5, "more heartbeats")
    visible_at = pool.queue.next_visible_at()
    assert visible_at is not None and visible_at >= clock.now() + timedelta(seconds=120)
