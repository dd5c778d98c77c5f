"""The one-pass tick on the SQLite store and queue: a pass a minute admits the
slots due before the next one (plus a margin) as it writes them and queues
each intent to become visible at its due time; the worker decides pause and
delete when it takes the intent; the API plans what the next pass would be
late for."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from domain.delivery import Delivery, Outcome
from domain.run import DeliveryIntent, Reason, RunKind, RunStatus
from domain.targets import Target
from service.planning.ticker import PlanNow, Ticker
from service.runs import RunWorker
from service.schedules import ScheduleService
from tests.conftest import FakeClock, World, definition, make_world, utc

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


class Calls:
    """A target that succeeds and remembers which occurrences it was called for."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.ids.append(delivery.occurrence_id)
        return Outcome.succeeded(200)


class Stack:
    """A world whose tick queues ahead into a SQLite queue, with a worker."""

    def __init__(self, world: World, clock: FakeClock, path: Path) -> None:
        self.world = world
        self.clock = clock
        self.queue = SqliteQueue(path, clock=clock, connection_of=world.store.retention)
        self.target = Calls()
        self.worker = RunWorker(SqliteRunStore(world.store), self.target, clock, random.Random(1))

    def ticker(self, owner: str = "tick-1") -> Ticker:
        return self.world.ticker(owner, queue=self.queue)

    def work(self) -> list[str]:
        """Receive what is visible now and run it; the decisions, in order."""
        actions = []
        for message in self.queue.receive(10, 0):
            decision = self.worker.handle(DeliveryIntent.from_dict(json.loads(message.body)))
            actions.append(decision.action)
            if decision.action == "delete":
                self.queue.delete(message.receipt)
        return actions

    def visible_ids(self) -> list[str]:
        return [
            json.loads(m.body)["occurrence_id"]
            for m in self.queue.receive(10, 0)
            if self.queue.change_visibility(m.receipt, 0) is None
        ]


@pytest.fixture
def stack(tmp_path: Path, clock: FakeClock) -> Iterator[Stack]:
    world = make_world(tmp_path / "d.db", clock)
    made = Stack(world, clock, tmp_path / "d.db")
    yield made
    made.queue.close()


def _create(world: World, spec: dict[str, str], name: str = "job") -> str:
    return world.schedules.create(definition({"name": name, "spec": spec, "target": WEBHOOK}))[
        0
    ].schedule_id


def test_one_pass_admits_and_queues_every_slot_due_before_the_next_pass(
    stack: Stack, clock: FakeClock
) -> None:
    # Given a schedule every 20 s, and one pass at 08:00:00 (lookahead 90 s)
    sid = _create(stack.world, {"every": "PT20S"})
    report = stack.ticker().tick_once()
    # Then the four slots up to 08:01:20 are admitted, each written once, and sent
    runs = sorted(stack.world.store.records.runs(sid, 10).items, key=lambda r: r.scheduled_at)
    assert [r.scheduled_at.isoformat() for r in runs] == [
        "2026-12-01T08:00:20+00:00",
        "2026-12-01T08:00:40+00:00",
        "2026-12-01T08:01:00+00:00",
        "2026-12-01T08:01:20+00:00",
    ]
    assert {r.status for r in runs} == {RunStatus.ADMITTED}
    # Admitted as of each one's instant (when its intent is released), not the pass's now
    assert all(r.admitted_at == r.scheduled_at and not r.pending for r in runs)
    assert report.dispatch.sent == 4 and report.dispatch.max_lag_s == 0.0
    # And each intent becomes visible at its own second, not before
    assert stack.visible_ids() == []
    clock.set(utc("2026-12-01T08:00:19.999Z"))
    assert stack.visible_ids() == []
    clock.set(utc("2026-12-01T08:00:20Z"))
    assert stack.visible_ids() == [runs[0].occurrence_id]
    assert stack.work() == ["delete"]
    assert stack.target.ids == [runs[0].occurrence_id]


def test_the_next_pass_plans_on_from_where_the_last_one_stopped(
    stack: Stack, clock: FakeClock
) -> None:
    sid = _create(stack.world, {"every": "PT20S"})
    stack.ticker().tick_once()
    clock.advance(60)
    stack.ticker().tick_once()
    instants = sorted(r.scheduled_at for r in stack.world.store.records.runs(sid, 20).items)
    # 08:00:20 ... 08:02:20, each once: the second pass adds up to 08:02:30.
    assert len(instants) == len(set(instants)) == 7
    assert instants[-1] == utc("2026-12-01T08:02:20Z")


def test_an_idle_pass_takes_no_lease_and_moves_no_checkpoint(stack: Stack) -> None:
    stack.ticker().tick_once()
    assert stack.world.store.leases.leases() == []
    beat = stack.world.store.leases.heartbeat("tick")
    assert beat is not None  # the watchdog still sees the tick


def test_a_pause_after_the_intent_was_queued_runs_nothing(stack: Stack, clock: FakeClock) -> None:
    sid = _create(stack.world, {"cron": "1 8 * * *"})
    stack.ticker().tick_once()  # 08:01 admitted and queued at 08:00
    clock.set(utc("2026-12-01T08:00:30Z"))
    stack.world.schedules.pause(sid, "maintenance")
    # The pause withdrew the planned slot: no record, and its intent is dropped
    assert stack.world.store.records.runs(sid, 10).items == ()
    clock.set(utc("2026-12-01T08:01:00Z"))
    assert stack.work() == ["delete"]
    assert stack.target.ids == []


def test_a_pause_that_loses_the_race_to_the_withdrawal_is_decided_at_start(
    stack: Stack, clock: FakeClock
) -> None:
    # A planned record the withdrawal did not reach (written as it ran) is
    # still judged by the start decision when its intent arrives.
    sid = _create(stack.world, {"cron": "1 8 * * *"})
    stack.ticker().tick_once()
    clock.set(utc("2026-12-01T08:00:30Z"))
    assert stack.world.store.schedules.pause(sid, "maintenance", clock.now())
    clock.set(utc("2026-12-01T08:01:00Z"))
    assert stack.work() == ["delete"]
    [run] = stack.world.store.records.runs(sid, 10).items
    assert run.status is RunStatus.SKIPPED and run.reason == Reason.PAUSED
    assert stack.target.ids == []


def test_a_short_pause_skips_only_the_slots_due_while_it_lasted(
    stack: Stack, clock: FakeClock
) -> None:
    # Given slots every 20 s, queued up to 08:01:20 by the 08:00 pass
    sid = _create(stack.world, {"every": "PT20S"})
    stack.ticker().tick_once()
    # When the schedule is paused from 08:00:15 to 08:00:25
    clock.set(utc("2026-12-01T08:00:15Z"))
    stack.world.schedules.pause(sid)
    clock.set(utc("2026-12-01T08:00:20Z"))
    stack.work()
    clock.set(utc("2026-12-01T08:00:25Z"))
    stack.world.schedules.resume(sid)
    stack.ticker().tick_once()  # plans again from the resume
    for at in ("08:00:40", "08:01:00", "08:01:20"):
        clock.set(utc(f"2026-12-01T{at}Z"))
        stack.work()
    # Then 08:00:20, due while paused, has no record of its own (the pause
    # withdrew it): the resume's summary counts it; the slots after the
    # resume run, each once
    by_time = {
        r.scheduled_at.strftime("%H:%M:%S"): r
        for r in stack.world.store.records.runs(sid, 10).items
    }
    summary = by_time["08:00:20"]
    assert (summary.kind, summary.status, summary.reason) == (
        RunKind.SUMMARY,
        RunStatus.SKIPPED,
        "paused: 1 slot skipped, 2026-12-01T08:00:20Z to 2026-12-01T08:00:20Z",
    )
    assert [by_time[t].status for t in ("08:00:40", "08:01:00", "08:01:20")] == [
        RunStatus.SUCCEEDED
    ] * 3
    assert len(stack.target.ids) == len(set(stack.target.ids)) == 3


def test_a_delete_after_the_intent_was_queued_withdraws_the_run(
    stack: Stack, clock: FakeClock
) -> None:
    sid = _create(stack.world, {"cron": "1 8 * * *"})
    stack.ticker().tick_once()
    stack.world.schedules.delete(sid)
    assert stack.world.store.records.runs(sid, 10).items == ()  # withdrawn
    clock.set(utc("2026-12-01T08:01:00Z"))
    assert stack.work() == ["delete"]
    assert stack.target.ids == []


def test_an_edit_after_the_intent_was_queued_runs_the_slot_with_its_own_version(
    stack: Stack, clock: FakeClock
) -> None:
    sid = _create(stack.world, {"cron": "1 8 * * *"})
    stack.ticker().tick_once()
    body = {"name": "job", "spec": {"cron": "2 8 * * *"}, "target": WEBHOOK}
    stack.world.schedules.edit(sid, 1, definition(body))
    clock.set(utc("2026-12-01T08:01:00Z"))
    assert stack.work() == ["delete"]
    assert stack.target.ids == [f"{sid}.v1.20261201T080100Z"]


def test_an_intent_that_shows_up_before_its_time_goes_back_until_then(
    stack: Stack, clock: FakeClock
) -> None:
    sid = _create(stack.world, {"cron": "1 8 * * *"})
    stack.ticker().tick_once()
    [run] = stack.world.store.records.runs(sid, 10).items
    decision = stack.worker.handle(DeliveryIntent.for_run(run))  # at 08:00, 60 s early
    assert decision.action == "retry" and decision.delay_s == 60.0
    assert stack.target.ids == []


def test_a_crash_between_the_admission_and_the_send_is_repaired_by_the_next_pass(
    stack: Stack, clock: FakeClock
) -> None:
    sid = _create(stack.world, {"cron": "1 8 * * *"})
    stack.world.queue.fail_with = SystemExit("killed between commit and send")
    with pytest.raises(SystemExit):
        stack.world.ticker("tick-a").tick_once()  # the fake queue: nothing sent
    [run] = stack.world.store.records.runs(sid, 10).items
    assert run.status is RunStatus.ADMITTED and run.pending

    clock.advance(stack.world.config.lease_ttl)  # tick-a's lease runs out
    report = stack.ticker("tick-b").tick_once()
    assert report.dispatch.resent == 1
    [after] = stack.world.store.records.runs(sid, 10).items
    assert after.admitted_at == run.admitted_at and not after.pending
    clock.set(utc("2026-12-01T08:01:00Z"))
    assert stack.visible_ids() == [run.occurrence_id]


def test_a_slot_written_waiting_is_admitted_ahead_by_dispatch(
    stack: Stack, clock: FakeClock
) -> None:
    # Given a slot the planner wrote waiting (its shard was held by another tick)
    sid = _create(stack.world, {"cron": "1 8 * * *"})
    shard = stack.world.config.partitioning.shard(sid)
    assert stack.world.store.leases.acquire(shard, "other", clock.now(), timedelta(seconds=5))
    stack.ticker().tick_once()
    [waiting] = stack.world.store.records.runs(sid, 10).items
    assert waiting.status is RunStatus.SCHEDULED
    # When a pass after the other tick's lease expired meets it, a minute early
    clock.advance(10)
    stack.ticker().tick_once()
    # Then it is admitted and queued for its second
    [run] = stack.world.store.records.runs(sid, 10).items
    assert run.status is RunStatus.ADMITTED and not run.pending
    clock.set(utc("2026-12-01T08:01:00Z"))
    assert stack.visible_ids() == [run.occurrence_id]


# --- planning at the API call ---------------------------------------------------------------


@pytest.fixture
def planned(stack: Stack) -> ScheduleService:
    world = stack.world
    planning = PlanNow(world.store, stack.queue, stack.clock, world.config)
    return ScheduleService(world.store, stack.clock, world.config.partitioning, planning=planning)


def test_a_schedule_created_less_than_the_horizon_before_its_slot_is_planned_by_the_call(
    stack: Stack, planned: ScheduleService, clock: FakeClock
) -> None:
    clock.set(utc("2026-12-01T08:00:45Z"))
    schedule, _ = planned.create(
        definition({"name": "soon", "spec": {"cron": "1 8 * * *"}, "target": WEBHOOK})
    )
    [run] = stack.world.store.records.runs(schedule.schedule_id, 10).items
    assert run.status is RunStatus.ADMITTED and not run.pending
    assert schedule.next_due == utc("2026-12-02T08:01:00Z")  # the answer shows the store
    clock.set(utc("2026-12-01T08:01:00Z"))
    assert stack.work() == ["delete"]
    assert stack.target.ids == [run.occurrence_id]


def test_a_schedule_whose_slot_is_beyond_the_horizon_is_left_to_the_tick(
    stack: Stack, planned: ScheduleService
) -> None:
    schedule, _ = planned.create(
        definition({"name": "later", "spec": {"cron": "5 8 * * *"}, "target": WEBHOOK})
    )
    assert stack.world.store.records.runs(schedule.schedule_id, 10).items == ()
    assert schedule.next_due == utc("2026-12-01T08:05:00Z")


def test_a_resume_plans_the_next_slot_when_it_is_near(
    stack: Stack, planned: ScheduleService, clock: FakeClock
) -> None:
    schedule, _ = planned.create(
        definition({"name": "r", "spec": {"cron": "5 8 * * *"}, "target": WEBHOOK})
    )
    planned.pause(schedule.schedule_id)
    clock.set(utc("2026-12-01T08:04:30Z"))
    planned.resume(schedule.schedule_id)
    [run] = stack.world.store.records.runs(schedule.schedule_id, 10).items
    assert run.status is RunStatus.ADMITTED
    assert run.scheduled_at == utc("2026-12-01T08:05:00Z")


def test_a_trigger_is_admitted_and_sent_by_the_call(stack: Stack, planned: ScheduleService) -> None:
    schedule, _ = planned.create(
        definition({"name": "t", "spec": {"cron": "5 9 * * *"}, "target": WEBHOOK})
    )
    run = planned.trigger(schedule.schedule_id)
    stored = stack.world.store.records.get_run(run.occurrence_id)
    assert stored is not None and stored.status is RunStatus.ADMITTED and not stored.pending
    assert stack.work() == ["delete"]
    assert stack.target.ids == [run.occurrence_id]


def test_planning_that_fails_at_the_call_is_left_to_the_tick(
    stack: Stack, planned: ScheduleService, clock: FakeClock
) -> None:
    clock.set(utc("2026-12-01T08:00:45Z"))

    def broken(intents: object, now: object) -> list[str]:
        raise ConnectionError("queue unreachable")

    stack.queue.send_ahead = broken  # type: ignore[method-assign]
    schedule, created = planned.create(
        definition({"name": "soon", "spec": {"cron": "1 8 * * *"}, "target": WEBHOOK})
    )
    assert created
    [run] = stack.world.store.records.runs(schedule.schedule_id, 10).items
    assert run.status is RunStatus.ADMITTED and run.pending  # for dispatch to send
    del stack.queue.send_ahead
    stack.ticker().tick_once()
    clock.set(utc("2026-12-01T08:01:00Z"))
    assert stack.work() == ["delete"]
