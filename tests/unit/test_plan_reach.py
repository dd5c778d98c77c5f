"""How far planning reaches (``TickConfig``): a pass selects and fills up to its
lookahead; with planning early on and a budget, it plans seeds and crowds up
to EARLY_REACH beyond it, never past what the queue holds back less a margin."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bootstrap.parts import tick_config
from bootstrap.settings import Settings
from domain.partition import Partitioning
from service.planning.config import EARLY_REACH, MAX_QUEUE_AHEAD, SEND_MARGIN, TickConfig
from service.planning.ticker import PlanNow
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition, make_world, utc

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
EVERY_MINUTE = {"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}
BUDGET = timedelta(seconds=50)


def test_without_a_budget_planning_reaches_the_lookahead() -> None:
    config = TickConfig()
    assert config.reach == config.lookahead == config.ahead
    assert not config.plans_early


def test_planning_early_reaches_beyond_the_lookahead_and_queues_what_it_plans() -> None:
    config = TickConfig(lookahead=timedelta(seconds=90), plan_budget=BUDGET)
    assert timedelta(seconds=300) == EARLY_REACH
    assert config.plans_early and config.reach == config.ahead == timedelta(seconds=390)
    off = TickConfig(lookahead=timedelta(seconds=90), plan_budget=BUDGET, plan_early=False)
    assert not off.plans_early and off.reach == off.ahead == timedelta(seconds=90)


def test_the_early_reach_stops_short_of_the_queue_delay_by_its_margin() -> None:
    assert timedelta(seconds=840) == MAX_QUEUE_AHEAD - SEND_MARGIN
    long = TickConfig(lookahead=timedelta(seconds=600), plan_budget=BUDGET)
    assert long.plans_early and long.reach == timedelta(seconds=840)
    longest = TickConfig(lookahead=timedelta(seconds=900), plan_budget=BUDGET)
    assert not longest.plans_early and longest.reach == longest.ahead == MAX_QUEUE_AHEAD


def test_planning_early_is_off_unless_the_deployment_sets_it() -> None:
    assert not tick_config(Settings()).plans_early  # the local stack: nothing to plan early
    on = tick_config(Settings.from_env({"DUETIME_PLAN_EARLY": "true"}))
    assert on.plans_early and on.reach == timedelta(seconds=390)


def test_planning_at_the_call_and_each_pass_fill_up_to_the_lookahead(tmp_path: Path) -> None:
    """A minutely schedule created at 08:00 (planned at the call), then a pass a
    minute for three minutes: each step plans the next minute, no further."""
    clock = FakeClock(utc("2026-12-01T08:00:00Z"))
    world = make_world(tmp_path / "reach.db", clock)
    world.config = TickConfig(
        partitioning=Partitioning(shards=4, bucket_s=60), lookahead=timedelta(seconds=90)
    )
    service = ScheduleService(
        world.store,
        clock,
        world.config.partitioning,
        planning=PlanNow(world.store, world.queue, clock, world.config),
    )
    created = service.create(definition({"name": "job", "spec": EVERY_MINUTE, "target": WEBHOOK}))
    sid = created[0].schedule_id
    at_create = sorted(
        r.scheduled_at.strftime("%H:%M") for r in world.store.records.runs(sid, 50).items
    )
    ticker = world.ticker()
    for _ in range(3):
        ticker.tick_once()
        clock.advance(60)
    after = sorted(
        r.scheduled_at.strftime("%H:%M") for r in world.store.records.runs(sid, 50).items
    )
    world.store.close()
    assert at_create == ["08:01"]
    assert after == ["08:01", "08:02", "08:03"]
