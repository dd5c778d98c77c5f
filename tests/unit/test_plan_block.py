"""The plan block (``TickConfig.plan_block``): a schedule selected by the
lookahead is filled a block further; a config or setting whose block would
queue a slot further ahead than the queue holds a message back is refused."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from bootstrap.parts import tick_config
from domain.partition import Partitioning
from handlers.settings import Settings
from service.planning.config import MAX_QUEUE_AHEAD, TickConfig
from service.planning.ticker import PlanNow
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition, make_world, utc

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
EVERY_MINUTE = {"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}


def test_the_default_block_is_none_and_fills_up_to_the_lookahead() -> None:
    config = TickConfig()
    assert config.plan_block == timedelta(0)
    assert config.fill == config.lookahead == config.ahead


def test_everything_a_block_fills_is_admitted_and_queued_ahead() -> None:
    config = TickConfig(lookahead=timedelta(seconds=90), plan_block=timedelta(seconds=300))
    assert config.fill == config.ahead == timedelta(seconds=390)


def test_a_negative_block_is_refused() -> None:
    with pytest.raises(ValueError, match="plan_block must not be negative"):
        TickConfig(plan_block=timedelta(seconds=-1))


def test_a_block_reaching_past_the_queue_delay_less_its_margin_is_refused() -> None:
    assert timedelta(seconds=900) == MAX_QUEUE_AHEAD
    TickConfig(lookahead=timedelta(seconds=90), plan_block=timedelta(seconds=750))  # 840 s
    with pytest.raises(ValueError, match=r"lookahead \+ plan_block must be at most 840 s"):
        TickConfig(lookahead=timedelta(seconds=90), plan_block=timedelta(seconds=751))


def test_the_block_setting_reaches_the_tick_and_defaults_to_none() -> None:
    assert Settings().plan_block_s == 0
    assert tick_config(Settings()).plan_block == timedelta(0)
    settings = Settings.from_env({"DUETIME_PLAN_BLOCK_S": "300", "DUETIME_LOOKAHEAD_S": "90"})
    assert tick_config(settings).plan_block == timedelta(seconds=300)
    assert tick_config(settings).ahead == timedelta(seconds=390)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DUETIME_PLAN_BLOCK_S": "-1"}, "plan_block_s"),
        ({"DUETIME_PLAN_BLOCK_S": "five"}, "plan_block_s"),
        ({"DUETIME_PLAN_BLOCK_S": "841"}, "plan_block_s"),
        (
            {"DUETIME_PLAN_BLOCK_S": "800", "DUETIME_LOOKAHEAD_S": "90"},
            "lookahead_s \\+ plan_block_s",
        ),
    ],
)
def test_a_bad_block_setting_is_refused_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings.from_env(env)


def _planned(tmp_path: Path, block: timedelta) -> tuple[list[str], list[str]]:
    """A minutely schedule created at 08:00 (planned at the call), then a pass
    a minute for three minutes: the instants each step wrote."""
    clock = FakeClock(utc("2026-12-01T08:00:00Z"))
    world = make_world(tmp_path / f"block{block.seconds}.db", clock)
    world.config = TickConfig(
        partitioning=Partitioning(shards=4, bucket_s=60),
        lookahead=timedelta(seconds=90),
        plan_block=block,
    )
    service = ScheduleService(
        world.store,
        clock,
        world.config.partitioning,
        planning=PlanNow(world.store, world.queue, clock, world.config),
    )
    sid = service.create(definition({"name": "job", "spec": EVERY_MINUTE, "target": WEBHOOK}))[
        0
    ].schedule_id
    at_create = sorted(r.scheduled_at.strftime("%H:%M") for r in world.store.runs(sid, 50).items)
    ticker = world.ticker()
    for _ in range(3):
        ticker.tick_once()
        clock.advance(60)
    after = sorted(r.scheduled_at.strftime("%H:%M") for r in world.store.runs(sid, 50).items)
    world.store.close()
    return at_create, after


def test_planning_at_the_call_fills_the_block_as_a_pass_would(tmp_path: Path) -> None:
    at_create, after = _planned(tmp_path, timedelta(seconds=300))
    # Selected (08:01 is within 90 s), filled up to 08:06:30.
    assert at_create == ["08:01", "08:02", "08:03", "08:04", "08:05", "08:06"]
    # The next passes (08:00 .. 08:02) find nothing within their lookahead.
    assert after == at_create


def test_without_a_block_each_pass_plans_the_next_minute(tmp_path: Path) -> None:
    at_create, after = _planned(tmp_path, timedelta(0))
    assert at_create == ["08:01"]
    assert after == ["08:01", "08:02", "08:03"]
