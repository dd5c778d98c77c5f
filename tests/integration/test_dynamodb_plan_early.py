"""Planning early on DynamoDB (moto): a pass that has done its own plan and
dispatch within its budget plans seeds (HEADs that name a next slot no pass
planned yet) beyond its lookahead, up to the early reach (300 s beyond it),
with what is left of the budget, so a crowded instant is planned over several
passes.

The world is tests/integration/test_dynamodb_queued_ahead.py's: the real
planner and worker over moto, a queue that holds each intent until its due
second.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from domain.run import RunStatus
from service.planning.config import TickConfig
from service.ports import DueSchedule, Page
from tests.conftest import utc
from tests.integration.test_dynamodb_queued_ahead import DEPLOYED, EVERY_MINUTE, World

EARLY = DEPLOYED
NO_BUDGET = replace(DEPLOYED, plan_budget=None)
# Beyond the 90 s lookahead (so neither the API call nor the pass's own plan
# takes it), within the early reach (6.5 minutes) of 08:00.
SOON = "2026-12-01T08:05:00Z"


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


def _at(world: World, when: str, count: int) -> list[str]:
    return [world.create({"at": when}) for _ in range(count)]


def _statuses(world: World, ids: list[str]) -> list[RunStatus]:
    return [r[1] for sid in ids for r in world.slots(sid)]


def test_a_pass_with_time_to_spare_plans_seeds_beyond_its_lookahead(client: Any) -> None:
    # Given five one-off schedules due at 08:05, created at 08:00
    world = World(client, EARLY)
    ids = _at(world, SOON, 5)
    assert world.queue.held == []  # beyond the lookahead: no API call planned them
    # When one pass runs at 08:00
    report = world.ticker.tick_once()
    # Then every one is stored admitted and queued for its second
    assert report.plan.early == 5
    assert _statuses(world, ids) == [RunStatus.ADMITTED] * 5
    assert sorted(i.schedule_id for i in world.queue.held) == sorted(ids)
    assert {i.scheduled_at for i in world.queue.held} == {utc(SOON)}
    # And each runs once at its time, with no second record from later passes
    world.minutes(7)
    assert _statuses(world, ids) == [RunStatus.SUCCEEDED] * 5
    assert len(world.called()) == len(set(world.called())) == 5


def test_without_a_budget_a_pass_plans_only_its_lookahead(client: Any) -> None:
    world = World(client, NO_BUDGET)
    ids = _at(world, SOON, 3)
    report = world.ticker.tick_once()
    assert report.plan.early == 0
    assert _statuses(world, ids) == []  # left to the pass whose lookahead reaches 08:05
    world.minutes(7)
    assert _statuses(world, ids) == [RunStatus.SUCCEEDED] * 3


def test_a_seed_beyond_the_early_reach_waits_for_a_later_pass(client: Any) -> None:
    world = World(client, EARLY)
    [far] = _at(world, "2026-12-01T08:07:00Z", 1)  # 7 minutes: past the 6.5 minute reach
    report = world.ticker.tick_once()
    assert report.plan.early == 0
    assert world.slots(far) == []
    world.clock.advance(60)  # 08:01: now within reach
    assert world.ticker.tick_once().plan.early == 1
    assert _statuses(world, [far]) == [RunStatus.ADMITTED]


def test_planning_early_gives_a_frequent_seed_only_its_next_slot(client: Any) -> None:
    # The API call plans 08:01 and leaves the schedule a seed (its HEAD names
    # 08:02, beyond the pass's lookahead): planned early, it gets that slot and
    # no more, and the lookahead selects it from then on, a slot a pass.
    world = World(client, EARLY)
    sid = world.create(EVERY_MINUTE)
    assert world.ticker.tick_once().plan.early == 1
    assert [s[0] for s in world.slots(sid)] == [
        utc("2026-12-01T08:01:00Z"),
        utc("2026-12-01T08:02:00Z"),
    ]
    world.work_until(world.clock.now() + timedelta(seconds=60))
    world.minutes(29)
    instants = [s[0] for s in world.slots(sid)]
    assert len(instants) == len(set(instants))
    assert max(instants) <= world.clock.now() + timedelta(seconds=90)
    assert len(world.called()) == len(set(world.called())) == 29


def test_planning_early_stops_at_the_deadline_between_pages(client: Any) -> None:
    # Given seven seeds, a page of two, and a store read that takes 10 s
    world = World(client, replace(EARLY, page_size=2))
    ids = _at(world, SOON, 7)
    reads = world.store.schedules.due_ahead

    def slow(
        after: datetime, until: datetime, limit: int, token: str | None = None, **kw: Any
    ) -> Any:
        world.clock.advance(10)
        page: Page[DueSchedule] = reads(after, until, limit, token, **kw)
        return page

    world.store.schedules.due_ahead = slow  # type: ignore[method-assign]
    began = world.clock.now()
    # When the first surge after the pass leaves it 15 s
    world.ticker.early.quiet_until = lambda now, until: began + timedelta(seconds=15)
    report = world.ticker.tick_once()
    # Then the first page is planned (read at +10 s) and the second (read at
    # +20 s, past the deadline) is left to the next pass
    assert report.plan.early == 2
    assert len([s for s in _statuses(world, ids) if s is RunStatus.ADMITTED]) == 2
    # And the next pass, with no deadline of its own, plans the rest
    world.ticker.early.quiet_until = None
    world.store.schedules.due_ahead = reads  # type: ignore[method-assign]
    assert world.ticker.tick_once().plan.early == 5
    assert _statuses(world, ids) == [RunStatus.ADMITTED] * 7


def test_no_seed_to_plan_early_asks_for_no_deadline(client: Any) -> None:
    # The deadline reads the load ledger: an idle pass does not pay for it.
    world = World(client, EARLY)
    asked: list[datetime] = []

    def quiet_until(now: datetime, until: datetime) -> datetime:
        asked.append(now)
        return until

    world.ticker.early.quiet_until = quiet_until
    world.minutes(3)
    assert asked == []
    _at(world, "2026-12-01T08:08:00Z", 1)
    world.minutes(1)
    assert len(asked) == 1
    world.minutes(2)  # planned: no seed left
    assert len(asked) == 1


def test_a_deadline_already_past_plans_nothing_early(client: Any) -> None:
    world = World(client, EARLY)
    ids = _at(world, SOON, 2)
    world.ticker.early.quiet_until = lambda now, until: now
    assert world.ticker.tick_once().plan.early == 0
    assert _statuses(world, ids) == []


def test_a_pass_plans_early_only_when_on_and_with_a_budget() -> None:
    def early(config: TickConfig) -> bool:
        return config.plans_early

    assert early(EARLY)
    assert not early(NO_BUDGET)
    assert not early(replace(EARLY, plan_early=False))


# --- a pass that stops at its budget inside one instant of the chain ---------------------------


def test_passes_out_of_budget_plan_one_instant_of_the_chain_a_share_each(client: Any) -> None:
    # Given twelve hourly schedules, past their first hour: their 09:03 slots
    # are on the chain (one instant), and a pass plans two pages of two
    world = World(client, replace(EARLY, page_size=2))
    ids = [world.create({"cron": "3 * * * *", "time_zone": "UTC"}) for _ in range(12)]
    world.minutes(10)
    assert len(world.called()) == 12
    world.clock.set(utc("2026-12-01T09:00:00Z"))
    pages = world.store.schedules.due

    def slow(*args: Any, **kwargs: Any) -> Any:
        world.clock.advance(30)  # a page of the chain takes 30 s: two fit in the budget
        return pages(*args, **kwargs)

    world.store.schedules.due = slow  # type: ignore[method-assign]
    nine = utc("2026-12-01T09:03:00Z")

    def planned() -> int:
        return sum(1 for sid in ids for s in world.slots(sid) if s[0] == nine)

    # When a pass a minute runs out of budget on them
    shares = []
    for _ in range(5):
        began = world.clock.now()
        report = world.ticker.tick_once()
        shares.append((report.plan.out_of_time, planned()))
        world.clock.set(began + timedelta(seconds=60))
    # Then each goes on where the last stopped, rather than planning the same four again
    assert shares == [(False, 0), (False, 0), (True, 4), (True, 8), (False, 12)], shares
    # And the chain carries on: every hour's slot runs once, the cursor's place cleared
    world.store.schedules.due = pages  # type: ignore[method-assign]
    world.minutes(65)
    runs = [s for sid in ids for s in world.slots(sid)]
    assert len(runs) == len(
        {(sid, r[0]) for sid in ids for r in world.slots(sid)}
    )  # one record each
    for hour in ("08:03", "09:03", "10:03"):
        at = utc(f"2026-12-01T{hour}:00Z")
        assert sum(1 for r in runs if r[0] == at and r[1] is RunStatus.SUCCEEDED) == 12, hour
    assert len(world.called()) == len(set(world.called())) == 36


# --- a crowd on the chain, planned ahead of the lookahead -------------------------------------


HOURLY = {"cron": "3 * * * *", "time_zone": "UTC"}


def _on_the_hour(world: World, ids: list[str], hour: str) -> list[RunStatus]:
    at = utc(f"2026-12-01T{hour}:00Z")
    return [s[1] for sid in ids for s in world.slots(sid) if s[0] == at]


def _one_record_each(world: World, ids: list[str]) -> None:
    keys = [(sid, s[0]) for sid in ids for s in world.slots(sid)]
    assert len(keys) == len(set(keys))
    assert len(world.called()) == len(set(world.called()))


def test_a_crowd_on_the_chain_is_planned_by_the_first_pass_that_reaches_it(client: Any) -> None:
    # Given twelve hourly schedules past their first hour: their 09:03 slots
    # are on the chain, and a crowd is five
    world = World(client, replace(EARLY, crowd_min=5))
    ids = [world.create(HOURLY) for _ in range(12)]
    world.minutes(57)  # passes up to 08:56, whose early reach ends at 09:02:30
    assert _on_the_hour(world, ids, "08:03") == [RunStatus.SUCCEEDED] * 12
    assert _on_the_hour(world, ids, "09:03") == []
    # When the pass at 08:57 runs (its reach, 09:03:30, takes in the crowd)
    report = world.ticker.tick_once()
    # Then it plans all twelve early, admitted and queued for their second
    assert report.plan.early == 12
    assert _on_the_hour(world, ids, "09:03") == [RunStatus.ADMITTED] * 12
    assert len([i for i in world.queue.held if i.scheduled_at == utc("2026-12-01T09:03:00Z")]) == 12
    # And the passes after it, the one whose lookahead reaches 09:03 among them,
    # plan none of them again
    world.work_until(world.clock.now() + timedelta(seconds=60))
    world.minutes(59)  # passes from 08:58 to 09:56
    assert _on_the_hour(world, ids, "09:03") == [RunStatus.SUCCEEDED] * 12
    # And the next hour's slots, on the plan pages now, are planned early the same way
    assert _on_the_hour(world, ids, "10:03") == []
    assert world.ticker.tick_once().plan.early == 12  # 09:57
    assert _on_the_hour(world, ids, "10:03") == [RunStatus.ADMITTED] * 12
    world.work_until(world.clock.now() + timedelta(seconds=60))
    world.minutes(10)
    for hour in ("08:03", "09:03", "10:03"):
        assert _on_the_hour(world, ids, hour) == [RunStatus.SUCCEEDED] * 12, hour
    _one_record_each(world, ids)
    assert len(world.called()) == 36


def test_fewer_than_a_crowd_wait_for_the_lookahead(client: Any) -> None:
    world = World(client, replace(EARLY, crowd_min=13))
    ids = [world.create(HOURLY) for _ in range(12)]
    world.minutes(57)
    assert world.ticker.tick_once().plan.early == 0  # 08:57: twelve are no crowd of 13
    assert _on_the_hour(world, ids, "09:03") == []
    world.work_until(world.clock.now() + timedelta(seconds=60))
    world.minutes(8)
    assert _on_the_hour(world, ids, "09:03") == [RunStatus.SUCCEEDED] * 12
    _one_record_each(world, ids)


def test_a_crowd_planned_out_of_time_is_finished_by_the_next_pass(client: Any) -> None:
    # Given the same crowd, pages of two, and a deadline that leaves one page
    world = World(client, replace(EARLY, crowd_min=5, page_size=2))
    ids = [world.create(HOURLY) for _ in range(12)]
    world.minutes(57)
    pages = world.store.schedules.due

    def slow(*args: Any, **kwargs: Any) -> Any:
        world.clock.advance(5)
        return pages(*args, **kwargs)

    world.store.schedules.due = slow  # type: ignore[method-assign]
    began = world.clock.now()
    world.ticker.early.quiet_until = lambda now, until: began + timedelta(seconds=12)
    # When the pass at 08:57 plans two pages before its deadline
    first = world.ticker.tick_once().plan.early
    assert 0 < first < 12
    assert len(_on_the_hour(world, ids, "09:03")) == first
    # Then the next pass goes on after them, and plans the rest once
    world.ticker.early.quiet_until = None
    world.clock.set(began + timedelta(seconds=60))
    assert world.ticker.tick_once().plan.early == 12 - first
    assert _on_the_hour(world, ids, "09:03") == [RunStatus.ADMITTED] * 12
    world.store.schedules.due = pages  # type: ignore[method-assign]
    world.work_until(world.clock.now() + timedelta(seconds=60))
    world.minutes(70)
    for hour in ("09:03", "10:03"):
        assert _on_the_hour(world, ids, hour) == [RunStatus.SUCCEEDED] * 12, hour
    _one_record_each(world, ids)


def test_a_crowd_of_frequent_schedules_runs_every_slot_once(client: Any) -> None:
    # Six every-minute schedules are a crowd every minute: each pass reads the
    # chain ahead to the last of them in its reach, a slot further each time.
    world = World(client, replace(EARLY, crowd_min=5))
    ids = [world.create(EVERY_MINUTE) for _ in range(6)]
    world.minutes(30)
    for sid in ids:
        instants = [s[0] for s in world.slots(sid)]
        assert len(instants) == len(set(instants))
        done = [s for s in world.slots(sid) if s[1] is RunStatus.SUCCEEDED]
        assert len(done) == 29  # 08:01 to 08:29, once each
    _one_record_each(world, ids)
