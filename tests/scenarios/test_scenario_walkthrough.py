"""The seed's walkthrough, replayed on the SQLite store.

A sales report runs every weekday at 09:00 America/New_York. On Monday
2026-11-30 (New York is on EST, UTC-5 until March) the tick, with a 24-hour
lookahead, materializes Tuesday's occurrence under version 4:
2026-12-01T09:00-05:00 = 2026-12-01T14:00Z. Then the schedule moves to
Europe/London (GMT, UTC+0 in December): version 5. An old dispatcher that read
version 4 and a new one both tick.

Expected: Tuesday's occurrence is unchanged (version 4, 14:00Z) and exists
once; the next newly calculated occurrence is Wednesday 09:00 London,
2026-12-02T09:00Z, under version 5; Tuesday's run is delivered with
version 4's parameters.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from domain.run import RunStatus
from domain.spec import spec_zone_name
from service.planning.due import DueSlots
from service.planning.pass_state import PassState
from service.schedules import local_time, upcoming
from tests.conftest import FakeClock, definition, make_world, utc

NEW_YORK = {"cron": "0 9 * * MON-FRI", "time_zone": "America/New_York"}
LONDON = {"cron": "0 9 * * MON-FRI", "time_zone": "Europe/London"}


def _body(spec: dict, report: str) -> dict:
    return {
        "name": "sales report",
        "spec": spec,
        "target": {"type": "webhook", "url": "https://reports.example.com/run"},
        "payload": {"report": report},
    }


def test_moving_a_schedule_between_zones_keeps_tomorrows_occurrence_and_makes_no_copy(
    tmp_path: Path,
) -> None:
    clock = FakeClock(utc("2026-11-30T15:00:00Z"))  # Monday, 10:00 in New York
    world = make_world(tmp_path / "d.db", clock, lookahead=timedelta(hours=24))
    service = world.schedules
    schedule, _ = service.create(definition(_body(NEW_YORK, "v1")))
    sid = schedule.schedule_id
    for version in (1, 2, 3):
        service.edit(sid, version, definition(_body(NEW_YORK, f"v{version + 1}")))
    assert service.get(sid).version == 4

    # Given: tomorrow's occurrence materialized under version 4.
    old_dispatcher = world.ticker("tick-old")
    # What the old dispatcher's plan read, at version 4:
    [stale_head] = world.store.schedules.due(clock.now() + timedelta(hours=24), 10).items
    assert stale_head.version == 4
    old_dispatcher.tick_once()
    [tuesday] = world.store.records.runs(sid, 10).items
    assert tuesday.occurrence_id == f"{sid}.v4.20261201T140000Z"
    assert tuesday.scheduled_at.isoformat() == "2026-12-01T14:00:00+00:00"
    assert tuesday.status is RunStatus.SCHEDULED

    # When: the schedule moves to London (version 5) ...
    clock.advance(timedelta(minutes=5))
    moved = service.edit(sid, 4, definition(_body(LONDON, "v5")))
    assert moved.version == 5
    # ... the old dispatcher writes what it computed from version 4: refused ...
    slots = DueSlots(old_dispatcher.config, clock.now(), clock.now() + timedelta(hours=24))
    planned = old_dispatcher.planner._materialization(stale_head, slots, PassState(clock.now()))
    assert planned is not None
    stale = planned[0]
    [outcome] = world.store.schedules.materialize([stale], clock.now()).outcomes
    assert not outcome.applied
    # ... and both dispatchers tick.
    old_dispatcher.tick_once()
    world.ticker("tick-new").tick_once()

    # Then: Tuesday's occurrence is unchanged, and there is one.
    assert world.store.records.runs(sid, 10).items == (tuesday,)
    assert local_time(stale_head.spec, tuesday.scheduled_at).isoformat() == (
        "2026-12-01T09:00:00-05:00"
    )
    # The next newly calculated occurrence: 09:00 London, version 5.
    head = service.get(sid)
    [next_slot] = upcoming(head, 1, clock.now())
    assert head.version == 5 and spec_zone_name(head.current.spec) == "Europe/London"
    assert next_slot.scheduled_at.isoformat() == "2026-12-02T09:00:00+00:00"
    assert local_time(head.current.spec, next_slot.scheduled_at).isoformat() == (
        "2026-12-02T09:00:00+00:00"
    )
    assert head.next_due == next_slot.scheduled_at

    # When Tuesday 09:00 New York comes, its run is admitted with version 4.
    clock.set(utc("2026-12-01T14:00:02Z"))
    world.ticker("tick-new").tick_once()
    [intent] = world.queue.sent
    assert (intent.occurrence_id, intent.version) == (tuesday.occurrence_id, 4)
    assert service.version(sid, intent.version).payload == {"report": "v4"}
    # And Wednesday's is materialized under version 5, at 09:00 London.
    runs = world.store.records.runs(sid, 10).items
    assert [(r.occurrence_id, r.version, r.scheduled_at.isoformat()) for r in runs] == [
        (f"{sid}.v5.20261202T090000Z", 5, "2026-12-02T09:00:00+00:00"),
        (tuesday.occurrence_id, 4, "2026-12-01T14:00:00+00:00"),
    ]
