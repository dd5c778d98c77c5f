"""The watchdog handler over the SQLite store: verdicts recorded, silence measured."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite.store import SqliteStore
from domain.run import Run, RunStatus
from domain.schedule import Schedule
from handlers import watchdog as watchdog_handler
from service import watchdog as service_watchdog
from service.ports import Heartbeat
from service.watchdog import Watchdog
from tests.conftest import FakeClock, utc


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore.open(tmp_path / "duetime.db")
    yield store
    store.close()


def emitted(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The metrics of the EMF line the handler flushed to stdout."""
    for line in capsys.readouterr().out.splitlines():
        if not line.startswith("{"):
            continue
        data: dict[str, Any] = json.loads(line)
        if "_aws" in data:  # the EMF line, not a log line (a schedule id may hold "_aws")
            return data
    raise AssertionError("no metrics were emitted")


def test_overdue_schedule_is_counted_and_recorded(
    store: SqliteStore,
    make_schedule: Callable[..., Schedule],
    make_occurrence: Callable[..., Run],
    capsys: pytest.CaptureFixture[str],
) -> None:
    created = utc("2026-12-01T08:00:00Z")
    healthy = make_schedule(created, spec={"cron": "0 9 * * *"})
    silent = make_schedule(created, spec={"cron": "0 9 * * *"})
    store.schedules.create(healthy)
    store.schedules.create(silent)
    success = replace(make_occurrence(healthy, created), status=RunStatus.SUCCEEDED)
    store.records.insert([success])
    clock = FakeClock(utc("2026-12-01T10:00:00Z"))
    store.leases.beat(Heartbeat("tick", utc("2026-12-01T09:59:30Z"), {}))

    result = watchdog_handler.handler({}, None, watchdog=Watchdog(store, clock))

    assert result["counts"] == {"ok": 1, "overdue": 1}
    assert result["overdue"] == [silent.schedule_id]
    assert result["tick_heartbeat_age_s"] == 30.0
    metrics = emitted(capsys)
    assert metrics["OverdueSchedules"] == [1.0]
    assert "LateSchedules" not in metrics  # a count of 0 is not sent
    assert metrics["TickHeartbeatAge"] == [30.0]
    recorded = Watchdog(store, clock).verdict(silent.schedule_id)
    assert recorded is not None
    assert recorded["status"] == "overdue"
    assert recorded["expected_at"] == "2026-12-01T09:00:00Z"


def test_a_tick_that_never_beat_reports_a_day_old_heartbeat(
    store: SqliteStore, capsys: pytest.CaptureFixture[str]
) -> None:
    result = watchdog_handler.handler(
        {}, None, watchdog=Watchdog(store, FakeClock(utc("2026-12-01T10:00:00Z")))
    )
    assert result["tick_heartbeat_age_s"] is None
    assert emitted(capsys)["TickHeartbeatAge"] == [86400.0]


def test_pages_through_many_schedules(
    store: SqliteStore, make_schedule: Callable[..., Schedule]
) -> None:
    created = utc("2026-12-01T08:00:00Z")
    for _ in range(230):
        store.schedules.create(make_schedule(created, spec={"cron": "0 9 * * *"}))
    report = Watchdog(store, FakeClock(utc("2026-12-01T08:30:00Z"))).run()
    assert sum(report.counts.values()) == 230


def test_a_schedule_the_watchdog_cannot_judge_is_recorded_unknown_counted_and_logged(
    store: SqliteStore,
    make_schedule: Callable[..., Schedule],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    created = utc("2026-12-01T08:00:00Z")
    healthy = make_schedule(created, spec={"cron": "0 9 * * *"})
    poisoned = make_schedule(created, spec={"cron": "0 9 * * *"})
    store.schedules.create(healthy)
    store.schedules.create(poisoned)
    real = service_watchdog.watch

    def watch(schedule: Schedule, *args: Any) -> Any:
        if schedule.schedule_id == poisoned.schedule_id:
            raise OverflowError("date value out of range")
        return real(schedule, *args)

    monkeypatch.setattr(service_watchdog, "watch", watch)
    clock = FakeClock(utc("2026-12-01T08:30:00Z"))

    result = watchdog_handler.handler({}, None, watchdog=Watchdog(store, clock))

    assert result["counts"] == {"ok": 1, "unknown": 1}
    assert result["unknown"] == [poisoned.schedule_id] and result["set_aside"] == 0
    output = capsys.readouterr().out
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    metrics = next(line for line in lines if "_aws" in line)
    assert "SchedulesQuarantined" not in metrics  # on the pass's line instead
    passes = [line for line in lines if line.get("message") == "watchdog pass"]
    assert passes and passes[0]["level"] == "WARNING"
    assert passes[0]["unknown"] == [poisoned.schedule_id]
    [logged] = [line for line in lines if line.get("message") == "schedule cannot be judged"]
    assert logged["schedule_id"] == poisoned.schedule_id
    assert logged["error"] == "OverflowError: date value out of range"
    # Recorded where the watchdog may write (its verdict), not on the schedule.
    assert store.schedules.get(poisoned.schedule_id).quarantine is None


def test_a_pass_out_of_time_stops_after_its_page_and_the_next_resumes_there(
    store: SqliteStore, make_schedule: Callable[..., Schedule]
) -> None:
    created = utc("2026-12-01T08:00:00Z")
    ids = set()
    for _ in range(230):
        schedule = make_schedule(created, spec={"cron": "0 9 * * *"})
        store.schedules.create(schedule)
        ids.add(schedule.schedule_id)
    watchdog = Watchdog(store, FakeClock(utc("2026-12-01T08:30:00Z")))
    out_of_time = lambda: 0.0  # noqa: E731 - each pass judges one page

    passes = [watchdog.run(out_of_time) for _ in range(3)]

    assert [p.judged for p in passes] == [100, 100, 30]
    assert [p.complete for p in passes] == [False, False, False]
    # every schedule was judged once over the three passes
    judged = {sid for sid in ids if watchdog.verdict(sid) is not None}
    assert judged == ids
    # and the fourth starts again from the beginning
    assert watchdog.run(out_of_time).judged == 100
    assert watchdog.run(lambda: 60.0).judged == 130


def test_a_pass_with_time_enough_judges_everything_and_says_so(
    store: SqliteStore, make_schedule: Callable[..., Schedule]
) -> None:
    created = utc("2026-12-01T08:00:00Z")
    for _ in range(120):
        store.schedules.create(make_schedule(created, spec={"cron": "0 9 * * *"}))
    report = Watchdog(store, FakeClock(utc("2026-12-01T08:30:00Z"))).run(lambda: 60.0)
    assert report.judged == 120 and report.complete


class Context:
    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_the_handler_budgets_from_the_time_the_function_has_left(
    store: SqliteStore, make_schedule: Callable[..., Schedule]
) -> None:
    created = utc("2026-12-01T08:00:00Z")
    for _ in range(150):
        store.schedules.create(make_schedule(created, spec={"cron": "0 9 * * *"}))
    watchdog = Watchdog(store, FakeClock(utc("2026-12-01T08:30:00Z")))
    short = Context(int(watchdog_handler.SAFETY_MARGIN_S * 1000))  # nothing left to spend
    first = watchdog_handler.handler({}, short, watchdog=watchdog)
    second = watchdog_handler.handler({}, short, watchdog=watchdog)
    assert (first["judged"], first["complete"]) == (100, False)
    assert (second["judged"], second["complete"]) == (50, False)
    assert watchdog_handler.handler({}, Context(120_000), watchdog=watchdog)["complete"]


def test_an_idle_watchdog_sends_the_heartbeat_age_alone(
    store: SqliteStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # No schedule: no overdue or late count to send, only the age the dashboard graphs.
    store.leases.beat(Heartbeat("tick", utc("2026-12-01T09:59:30Z"), {}))

    watchdog_handler.handler(
        {}, None, watchdog=Watchdog(store, FakeClock(utc("2026-12-01T10:00:00Z")))
    )

    blob = emitted(capsys)
    assert [m["Name"] for m in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]] == [
        "TickHeartbeatAge"
    ]
    assert blob["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]


def test_a_pass_that_fails_mid_way_keeps_the_pages_it_judged(
    store: SqliteStore, make_schedule: Callable[..., Schedule], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cursor is saved after each page: a page that cannot be listed stops
    that pass, and the next pass starts at that page, not at the beginning."""
    created = utc("2026-12-01T08:00:00Z")
    for _ in range(230):
        store.schedules.create(make_schedule(created, spec={"cron": "0 9 * * *"}))
    watchdog = Watchdog(store, FakeClock(utc("2026-12-01T08:30:00Z")))
    real = store.schedules.list_schedules
    calls = []

    def third_page_fails(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        if len(calls) == 3:
            raise RuntimeError("throttled")
        return real(*args, **kwargs)

    monkeypatch.setattr(store.schedules, "list_schedules", third_page_fails)
    with pytest.raises(RuntimeError):
        watchdog.run(lambda: 60.0)
    monkeypatch.setattr(store.schedules, "list_schedules", real)

    resumed = watchdog.run(lambda: 60.0)
    assert resumed.judged == 30 and not resumed.complete


def test_a_schedule_whose_runs_cannot_be_read_does_not_stop_the_pass(
    store: SqliteStore, make_schedule: Callable[..., Schedule], monkeypatch: pytest.MonkeyPatch
) -> None:
    created = utc("2026-12-01T08:00:00Z")
    schedules = [make_schedule(created, spec={"cron": "0 9 * * *"}) for _ in range(150)]
    for schedule in schedules:
        store.schedules.create(schedule)
    unreadable = sorted(s.schedule_id for s in schedules)[0]  # on the first page
    real = store.records.runs

    def runs(schedule_id: str, *args: Any, **kwargs: Any) -> Any:
        if schedule_id == unreadable:
            raise RuntimeError("AccessDenied")
        return real(schedule_id, *args, **kwargs)

    monkeypatch.setattr(store.records, "runs", runs)
    report = Watchdog(store, FakeClock(utc("2026-12-01T08:30:00Z"))).run(lambda: 60.0)

    assert report.unread == [unreadable] and report.judged == 149 and report.complete
