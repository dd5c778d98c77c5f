"""The tick handler: one event in, passes of plan + dispatch, metrics out."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

import service.planning.due as due_module
from adapters.definitions import Metric
from handlers.tick import handler, run_tick
from tests.conftest import WEBHOOK, FakeClock, World, definition, utc


class Context:
    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def _lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def _metrics(output: str) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        blob = json.loads(line)
        if "_aws" not in blob:  # a log line, not EMF (a schedule id may hold "_aws")
            continue
        for metric in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
            value = blob[metric["Name"]]
            found.setdefault(metric["Name"], []).extend(
                value if isinstance(value, list) else [value]
            )
    return found


def test_one_invocation_admits_due_work_and_emits_heartbeat_and_lag(
    world: World, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule, _ = world.schedules.create(
        definition(
            {
                "name": "job",
                "spec": {"cron": "1 8 * * *"},
                "target": {"type": "webhook", "url": "https://example.com/hook"},
            }
        )
    )
    clock.set(utc("2026-12-01T08:01:03Z"))  # the first pass since 08:00, 3 s after the slot
    result = handler({}, Context(remaining_ms=4000), service=world.ticker())
    assert result["passes"] == 1 and result["admitted"] == 1 and result["max_lag_s"] == 3.0
    assert world.queue.ids() == [f"{schedule.schedule_id}.v1.20261201T080100Z"]
    emitted = _metrics(capsys.readouterr().out)
    assert emitted[Metric.TICK_HEARTBEAT] == [1.0]
    assert emitted[Metric.DISPATCH_LAG] == [3.0]
    beat = world.store.leases.heartbeat("tick")
    assert beat is not None and beat.at == clock.now()


def test_the_tick_loops_within_its_budget_with_one_heartbeat_per_pass(
    world: World, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    world.schedules.create(
        definition(
            {
                "name": "job",
                "spec": {"every": "PT1S"},
                "target": {"type": "webhook", "url": "https://example.com/hook"},
            }
        )
    )
    elapsed = [0.0]

    def sleep(seconds: float) -> None:
        elapsed[0] += seconds
        clock.advance(timedelta(seconds=seconds))

    result = run_tick(world.ticker(), 10.0, sleep=sleep, monotonic=lambda: elapsed[0])
    assert result["passes"] == 10
    # The lookahead's 90 queued ahead by the first pass, then one more each second.
    assert result["admitted"] == 90 + 9
    assert len(set(world.queue.ids())) == len(world.queue.ids()) == 90 + 9
    assert _metrics(capsys.readouterr().out)[Metric.TICK_HEARTBEAT] == [1.0] * 10


def test_a_schedule_the_tick_cannot_plan_is_counted_as_quarantined_on_the_log_line(
    world: World,
    clock: FakeClock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hook = {"type": "webhook", "url": "https://example.com/hook"}
    world.schedules.create(
        definition({"name": "ok", "spec": {"cron": "1 8 * * *"}, "target": hook})
    )
    poisoned, _ = world.schedules.create(
        definition({"name": "poisoned", "spec": {"cron": "2 8 * * *"}, "target": hook})
    )
    real = due_module.slots_after

    def slots_after(spec: Any, dst: Any, after: Any) -> Any:
        if spec == poisoned.current.spec:
            raise OverflowError("date value out of range")
        return real(spec, dst, after)

    monkeypatch.setattr(due_module, "slots_after", slots_after)
    clock.set(utc("2026-12-01T08:01:00Z"))

    result = handler({}, Context(remaining_ms=4000), service=world.ticker())

    assert result["passes"] == 1
    assert result["quarantined"] == 1
    output = capsys.readouterr().out
    [summary] = [line for line in _lines(output) if line.get("message") == "tick"]
    assert summary["quarantined"] == 1
    assert [
        line["schedule_id"]
        for line in _lines(output)
        if line.get("message") == "schedule quarantined"
    ] == [poisoned.schedule_id]
    assert "SchedulesQuarantined" not in _metrics(output)
    assert world.store.schedules.get(poisoned.schedule_id).quarantine is not None


def test_a_late_invocation_covers_the_minute_it_stands_for_and_says_how_late_it_is(
    world: World, clock: FakeClock
) -> None:
    # Given an occurrence due at 08:01 and no tick since 08:00:30
    schedule, _ = world.schedules.create(
        definition(
            {
                "name": "job",
                "spec": {"cron": "1 8 * * *"},
                "target": {"type": "webhook", "url": "https://example.com/hook"},
            }
        )
    )
    clock.set(utc("2026-12-01T08:00:30Z"))
    world.ticker().tick_once()
    # When the 08:01 invocation starts 90 s late
    clock.set(utc("2026-12-01T08:02:30Z"))
    event = {"source": "duetime.scheduler", "scheduled_at": "2026-12-01T08:01:00Z"}
    result = handler(event, Context(remaining_ms=4000), service=world.ticker())
    # Then it admits what fell due in its minute, and reports its lateness
    assert result["invocation_late_s"] == 90.0
    assert result["stands_for"] == "2026-12-01T08:01:00+00:00"
    assert world.queue.ids() == [f"{schedule.schedule_id}.v1.20261201T080100Z"]


@pytest.mark.parametrize("value", ["not a time", "2026-12-01T08:01:00", 5])
def test_an_event_without_a_usable_scheduled_time_still_ticks(
    world: World, clock: FakeClock, value: object
) -> None:
    result = handler({"scheduled_at": value}, Context(remaining_ms=4000), service=world.ticker())
    assert result["passes"] == 1
    assert result["invocation_late_s"] is None and result["stands_for"] is None


def test_an_invocation_is_one_pass_whatever_time_it_has_left(
    world: World, clock: FakeClock
) -> None:
    result = handler({}, Context(remaining_ms=300_000), service=world.ticker())
    assert result["passes"] == 1


def test_deployments_queue_ahead_up_to_the_lookahead() -> None:
    from bootstrap.parts import tick_config
    from bootstrap.settings import Settings

    config = tick_config(Settings(lookahead_s=120))
    assert config.ahead == timedelta(seconds=120)
    # Never further ahead than a queue can hold a message back (SQS: 15 minutes).
    assert tick_config(Settings(lookahead_s=3600)).ahead == timedelta(seconds=900)


def test_an_idle_pass_sends_the_heartbeat_alone(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # No schedule: every count of the pass is 0, and a 0 is not sent (each
    # metric sent is billed for the hour), so the heartbeat alarm's metric is all.
    result = handler({}, Context(remaining_ms=4000), service=world.ticker())

    assert result["passes"] == 1 and result["materialized"] == 0 and result["admitted"] == 0
    assert _metrics(capsys.readouterr().out) == {Metric.TICK_HEARTBEAT: [1.0]}


# --- surges after the pass ----------------------------------------------------------------


class RecordingSurges:
    """Stands in for ``service.planning.surge.Surges``: the ``until`` each run was given."""

    def __init__(self, clock: FakeClock, fail: bool = False) -> None:
        self.clock = clock
        self.fail = fail
        self.until: list[Any] = []

    def run(self, until: Any) -> Any:
        from service.planning.surge import SurgeReport

        self.until.append(until)
        if self.fail:
            raise ConnectionError("ledger down")
        return SurgeReport(seen=1, started=1, drains=4, waited_s=12.5)


def test_after_its_pass_the_tick_starts_the_surges_due_before_the_next_minute(
    world: World, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    surges = RecordingSurges(clock)
    event = {"scheduled_at": "2026-12-01T08:00:00Z"}
    result = handler(
        event,
        Context(remaining_ms=70_000),
        service=world.ticker(),
        surges=surges,  # type: ignore[arg-type]
    )
    assert surges.until == [utc("2026-12-01T08:01:00Z")]
    assert result["surges_started"] == 1 and result["drains"] == 4
    assert result["surge_wait_s"] == 12.5
    assert any(line.get("message") == "surges" for line in _lines(capsys.readouterr().out))


def test_the_tick_waits_for_a_surge_no_longer_than_its_own_time_allows(
    world: World, clock: FakeClock
) -> None:
    surges = RecordingSurges(clock)
    handler(
        {"scheduled_at": clock.now().isoformat()},
        Context(remaining_ms=20_000),
        service=world.ticker(),
        surges=surges,  # type: ignore[arg-type]
    )
    assert surges.until == [clock.now() + timedelta(seconds=15)]  # 20 s less the margin


def test_surges_that_fail_leave_the_pass_standing(
    world: World, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    result = handler(
        {},
        Context(remaining_ms=70_000),
        service=world.ticker(),
        surges=RecordingSurges(clock, fail=True),  # type: ignore[arg-type]
    )
    assert result["passes"] == 1 and result["surges_failed"] is True
    errors = [line for line in _lines(capsys.readouterr().out) if line.get("level") == "ERROR"]
    assert [line["message"] for line in errors] == ["surges not started"]


def test_a_tick_given_its_ticker_starts_no_surge_of_its_own(world: World) -> None:
    result = handler({}, Context(remaining_ms=70_000), service=world.ticker())
    assert "surges_started" not in result


class SlowPages:
    """The store with every page of due schedules taking ``page_s`` of the clock."""

    def __init__(self, world: World, page_s: float) -> None:
        self.world = world
        self.page_s = page_s
        self.inner = world.store.schedules.due

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.world.clock.advance(timedelta(seconds=self.page_s))
        return self.inner(*args, **kwargs)


def test_a_pass_stops_planning_at_its_budget_and_the_next_pass_plans_the_rest(
    world: World, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    ids = {
        world.schedules.create(
            definition({"name": f"job {n}", "spec": {"cron": "* * * * *"}, "target": WEBHOOK})
        )[0].schedule_id
        for n in range(5)
    }
    world.config = replace(world.config, page_size=2, plan_budget=timedelta(seconds=50))
    slow = SlowPages(world, 30.0)
    monkeypatch.setattr(world.store.schedules, "due", slow)
    first = run_tick(world.ticker(), 0.0)
    assert first["out_of_planning_time"] is True
    assert first["materialized"] == 4  # two pages: 60 s of the clock, past the 50 s budget
    assert len({i.schedule_id for i in world.queue.sent}) == 4
    slow.page_s = 0.0
    second = run_tick(world.ticker(), 0.0)
    assert "out_of_planning_time" not in second
    assert {i.schedule_id for i in world.queue.sent} == ids  # the fifth, planned now


class SlowBatches:
    """``pending_due`` that takes ``batch_s`` of the clock for each batch it
    finds: a backlog's slow batches. A shard with nothing pending answers at
    once, so where the five land among the shards does not change the count."""

    def __init__(self, world: World, batch_s: float) -> None:
        self.world, self.batch_s = world, batch_s
        self.inner = world.store.records.pending_due

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        found = self.inner(*args, **kwargs)
        if found:
            self.world.clock.advance(timedelta(seconds=self.batch_s))
        return found


def test_a_pass_stops_dispatching_a_backlog_past_its_deadline_and_the_next_goes_on(
    world: World, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    # Given five occurrences planned, waiting, and then two hours without a pass
    world.config = replace(world.config, batch_size=2)
    for n in range(5):
        world.schedules.create(
            definition(
                {
                    "name": f"job {n}",
                    "spec": {"at": "2026-12-01T08:01:00Z"},
                    "target": WEBHOOK,
                    "policy": {"overdue": "catch_up_all"},
                }
            )
        )
    other = world.ticker("tick-other")  # holds every shard, so the pass admits nothing
    for shard in range(world.config.partitioning.shards):
        assert other.dispatcher.lease(shard, clock.now()) is not None
    world.ticker().tick_once()
    assert world.queue.sent == []
    clock.advance(timedelta(hours=2))
    # When the pass's batches take 30 s each, with a 50 s plan budget (60 s with
    # the dispatch's overrun)
    world.config = replace(world.config, plan_budget=timedelta(seconds=50))
    slow = SlowBatches(world, 30.0)
    monkeypatch.setattr(world.store.records, "pending_due", slow)
    first = run_tick(world.ticker(), 0.0)
    # Then it starts no batch past 60 s, says so, and ends
    assert first["out_of_dispatch_time"] is True
    assert 0 < first["admitted"] < 5
    # And the next pass dispatches the rest, each once
    slow.batch_s = 0.0
    second = run_tick(world.ticker(), 0.0)
    assert "out_of_dispatch_time" not in second
    assert first["admitted"] + second["admitted"] == 5
    assert len(world.queue.ids()) == len(set(world.queue.ids())) == 5
