"""Promise 2 (no lost occurrence) across an edit made while every dispatcher
was down: the slots of the old version that came due before the edit are
recorded under that version, and its overdue policy decides what runs.

Found by the model-based campaign (tests/model): an edit moved ``next_due``
past the edit instant, and the slots between the old ``next_due`` and the
edit were never recorded.
"""

from __future__ import annotations

from domain.run import RunKind, RunStatus
from tests.conftest import FakeClock, World, definition, utc

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


def _body(spec: dict, policy: dict, name: str = "job") -> dict:
    return {"name": name, "spec": spec, "target": WEBHOOK, "policy": policy}


def test_an_edit_after_an_outage_does_not_lose_the_slots_due_before_it(
    world: World, clock: FakeClock
) -> None:
    # Given a schedule every 10 minutes that catches up on every missed slot
    schedule, _ = world.schedules.create(
        definition(_body({"cron": "*/10 * * * *"}, {"overdue": "catch_up_all"}))
    )
    sid = schedule.schedule_id
    world.ticker().tick_once()
    # When every dispatcher is down for an hour, and the schedule is edited then
    clock.set(utc("2026-12-01T09:00:30Z"))
    world.schedules.edit(
        sid, 1, definition(_body({"cron": "*/15 * * * *"}, {"overdue": "catch_up_all"}))
    )
    world.ticker().tick_once()
    # Then every slot of version 1 that came due before the edit is admitted, under version 1
    runs = sorted(world.store.records.runs(sid, 100).items, key=lambda r: r.scheduled_at)
    due = [r for r in runs if r.scheduled_at <= clock.now()]
    assert [r.scheduled_at.isoformat() for r in due] == [
        f"2026-12-01T{h:02d}:{m:02d}:00+00:00"
        for h, m in [(8, 10), (8, 20), (8, 30), (8, 40), (8, 50), (9, 0)]
    ]
    assert {(r.version, r.status) for r in due} == {(1, RunStatus.ADMITTED)}
    # And version 2 starts strictly after the edit
    later = [r for r in runs if r.scheduled_at > clock.now()]
    assert all(r.version == 2 for r in later)
    assert world.schedules.get(sid).next_due == utc("2026-12-01T09:15:00Z")


def test_an_edit_after_an_outage_lets_the_old_version_skip_what_latest_only_skips(
    world: World, clock: FakeClock
) -> None:
    schedule, _ = world.schedules.create(definition(_body({"cron": "*/10 * * * *"}, {})))
    sid = schedule.schedule_id
    world.ticker().tick_once()
    clock.set(utc("2026-12-01T09:00:30Z"))
    world.schedules.edit(sid, 1, definition(_body({"cron": "*/15 * * * *"}, {})))
    world.ticker().tick_once()
    due = sorted(
        (r for r in world.store.records.runs(sid, 100).items if r.scheduled_at <= clock.now()),
        key=lambda r: r.scheduled_at,
    )
    assert len(due) == 6
    assert [r.status for r in due] == [RunStatus.SKIPPED] * 5 + [RunStatus.ADMITTED]


def test_an_edit_while_paused_after_an_outage_leaves_the_missed_slots_counted(
    world: World, clock: FakeClock
) -> None:
    # Given a schedule whose slots came due while every dispatcher was down
    schedule, _ = world.schedules.create(
        definition(_body({"cron": "*/10 * * * *"}, {"overdue": "catch_up_all"}))
    )
    sid = schedule.schedule_id
    world.ticker().tick_once()
    clock.set(utc("2026-12-01T09:00:30Z"))
    # When it is paused, edited while paused, and resumed
    world.schedules.pause(sid)
    clock.advance(10)
    world.schedules.edit(
        sid, 1, definition(_body({"cron": "*/15 * * * *"}, {"overdue": "catch_up_all"}))
    )
    clock.advance(10)
    world.schedules.resume(sid)
    world.ticker().tick_once()
    # Then the slots of version 1 due before the edit are counted by one
    # summary of version 1, skipped (paused), as a resume without the edit
    # would have recorded them
    due = [r for r in world.store.records.runs(sid, 100).items if r.scheduled_at <= clock.now()]
    assert [(r.version, r.kind, r.status, r.reason) for r in due] == [
        (
            1,
            RunKind.SUMMARY,
            RunStatus.SKIPPED,
            "paused: 6 slots skipped, 2026-12-01T08:10:00Z to 2026-12-01T09:00:00Z",
        )
    ]


def test_an_edit_after_a_long_outage_counts_the_slots_past_its_bound_when_some_were_backfilled(
    world: World, clock: FakeClock
) -> None:
    # Given a schedule every 5 minutes, and every dispatcher down for 9 hours
    schedule, _ = world.schedules.create(
        definition(_body({"cron": "*/5 * * * *"}, {"overdue": "catch_up_all"}))
    )
    sid = schedule.schedule_id
    world.ticker().tick_once()
    clock.set(utc("2026-12-01T17:02:00Z"))
    # And the last hour backfilled by hand
    world.schedules.backfill(sid, utc("2026-12-01T16:00:00Z"), utc("2026-12-01T16:55:00Z"))
    # When the schedule is edited: 108 slots no pass planned, past the 100 recorded one by
    # one, so the last ones are counted by a summary whose first slot was backfilled
    world.schedules.edit(
        sid, 1, definition(_body({"cron": "*/7 * * * *"}, {"overdue": "catch_up_all"}))
    )
    # Then every slot of version 1 due before the edit has a record or is in the summary
    runs = world.store.records.runs(sid, 500).items
    [summary] = [r for r in runs if r.kind is RunKind.SUMMARY]
    assert summary.status is RunStatus.SKIPPED
    assert summary.reason is not None and summary.reason.endswith(
        "2026-12-01T16:25:00Z to 2026-12-01T17:00:00Z"
    )
    recorded = {r.scheduled_at for r in runs if r.kind is not RunKind.SUMMARY}
    assert utc("2026-12-01T17:00:00Z") not in recorded  # counted by the summary only
    assert utc("2026-12-01T16:25:00Z") in recorded  # backfilled: the summary moved past it
