"""The schedule port's contract (``ScheduleStore`` in service/ports.py), on every
store: a schedule's head and versions, and the conditional writes a user's
create, edit, pause, resume, delete and a quarantine make. What planning reads
and writes (``due``, ``materialize``) is test_planning_contract.py's.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from service.ports import Store
from tests.conftest import build_schedule, utc
from tests.contract.builders import NOW, next_version, quarantine_at

# --- create and read ------------------------------------------------------------------


def test_create_then_get_returns_the_schedule_and_its_first_version(store: Store) -> None:
    schedule = build_schedule(NOW, payload={"report": "sales"})
    stored, created = store.schedules.create(schedule)
    assert created and stored == schedule
    assert store.schedules.get(schedule.schedule_id) == schedule
    assert store.schedules.get_version(schedule.schedule_id, 1) == schedule.current
    assert store.schedules.get("sch_missing") is None
    assert store.schedules.get_version(schedule.schedule_id, 2) is None
    assert store.schedules.get_version("sch_missing", 1) is None


def test_create_with_a_used_idempotency_key_returns_the_first_schedule(store: Store) -> None:
    first = build_schedule(NOW)
    second = build_schedule(NOW)
    assert store.schedules.create(first, "key-1") == (first, True)
    stored, created = store.schedules.create(second, "key-1")
    assert not created and stored == first
    assert store.schedules.get(second.schedule_id) is None
    # Another key is another schedule.
    assert store.schedules.create(second, "key-2") == (second, True)


def test_create_refuses_an_existing_schedule_id(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    with pytest.raises(ValueError):
        store.schedules.create(schedule)


def test_get_versions_reads_several_at_once_and_leaves_out_the_missing(store: Store) -> None:
    a, b = build_schedule(NOW), build_schedule(NOW)
    store.schedules.create(a)
    store.schedules.create(b)
    keys = [(a.schedule_id, 1), (b.schedule_id, 1), (a.schedule_id, 2), ("sch_missing", 1)]
    assert store.schedules.get_versions(keys) == {
        (a.schedule_id, 1): a.current,
        (b.schedule_id, 1): b.current,
    }
    assert store.schedules.get_versions([]) == {}


def test_list_pages_through_live_schedules_oldest_first(store: Store) -> None:
    made = [build_schedule(NOW + timedelta(seconds=i)) for i in range(5)]
    for schedule in made:
        store.schedules.create(schedule)
    store.schedules.delete(made[2].schedule_id, NOW)
    expected = [s.schedule_id for s in made if s is not made[2]]
    for next_due in (True, False):  # without next_due: the same schedules, in the same order
        seen, token = [], None
        while True:
            page = store.schedules.list_schedules(2, token, next_due=next_due)
            assert len(page.items) <= 2
            seen += [s.schedule_id for s in page.items]
            token = page.next_token
            if token is None:
                break
        assert seen == expected, next_due


# --- edits --------------------------------------------------------------------------------


def test_save_version_is_conditioned_on_version_and_next_due(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    v2 = next_version(schedule, {"cron": "0 9 * * *", "time_zone": "Europe/London"})
    new_due = utc("2026-12-02T09:00:00Z")
    wrong_due = schedule.next_due + timedelta(seconds=1)
    assert not store.schedules.save_version(
        v2, expected_next_due=wrong_due, next_due=new_due, now=NOW
    )
    assert store.schedules.get(schedule.schedule_id) == schedule
    assert store.schedules.save_version(
        v2, expected_next_due=schedule.next_due, next_due=new_due, now=NOW
    )
    # The same version cannot be written twice (stale writer).
    assert not store.schedules.save_version(
        v2, expected_next_due=new_due, next_due=new_due, now=NOW
    )
    head = store.schedules.get(schedule.schedule_id)
    assert head is not None and head.version == 2 and head.next_due == new_due
    assert head.current == v2
    assert store.schedules.get_version(schedule.schedule_id, 1) == schedule.current
    assert store.schedules.get_versions([(schedule.schedule_id, 1), (schedule.schedule_id, 2)]) == {
        (schedule.schedule_id, 1): schedule.current,
        (schedule.schedule_id, 2): v2,
    }


def test_save_version_refuses_a_deleted_schedule(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    store.schedules.delete(schedule.schedule_id, NOW)
    v2 = next_version(schedule, {"cron": "0 10 * * *"})
    assert not store.schedules.save_version(v2, expected_next_due=None, next_due=None, now=NOW)
    assert store.schedules.get_version(schedule.schedule_id, 2) is None


def test_pause_resume_and_delete_are_conditional(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    assert not store.schedules.resume(
        sid, expected_next_due=schedule.next_due, next_due=None, now=NOW
    )
    assert store.schedules.pause(sid, "holiday", NOW)
    paused = store.schedules.get(sid)
    assert paused is not None and paused.state.paused and paused.state.note == "holiday"
    later = schedule.next_due + timedelta(days=1)
    assert not store.schedules.resume(sid, expected_next_due=later, next_due=later, now=NOW)
    assert store.schedules.resume(sid, expected_next_due=schedule.next_due, next_due=later, now=NOW)
    resumed = store.schedules.get(sid)
    assert resumed is not None and not resumed.state.paused and resumed.state.note is None
    assert resumed.next_due == later
    assert store.schedules.delete(sid, NOW)
    assert not store.schedules.delete(sid, NOW)
    assert not store.schedules.pause(sid, "x", NOW)
    gone = store.schedules.get(sid)
    assert gone is not None and gone.deleted_at == NOW and gone.next_due is None


def test_pausing_a_paused_schedule_replaces_its_note(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    assert store.schedules.pause(sid, "holiday", NOW)
    assert store.schedules.pause(sid, "still on holiday", NOW + timedelta(minutes=1))
    paused = store.schedules.get(sid)
    assert paused is not None and paused.state.paused
    assert paused.state.note == "still on holiday"
    assert paused.updated_at == NOW + timedelta(minutes=1)


def test_pause_resume_and_delete_of_an_unknown_schedule_are_refused(store: Store) -> None:
    assert not store.schedules.pause("sch_missing", None, NOW)
    assert not store.schedules.resume("sch_missing", expected_next_due=None, next_due=None, now=NOW)
    assert not store.schedules.delete("sch_missing", NOW)
    assert store.schedules.get("sch_missing") is None


def test_a_deleted_schedule_cannot_be_resumed(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    store.schedules.pause(sid, None, NOW)
    store.schedules.delete(sid, NOW)
    assert not store.schedules.resume(
        sid, expected_next_due=None, next_due=schedule.next_due, now=NOW
    )
    gone = store.schedules.get(sid)
    assert gone is not None and gone.deleted_at == NOW and gone.next_due is None


# --- quarantine -----------------------------------------------------------------------------


def test_a_quarantine_is_recorded_on_the_schedule_and_read_back(store: Store) -> None:
    healthy, poisoned = build_schedule(NOW), build_schedule(NOW)
    store.schedules.create(healthy)
    store.schedules.create(poisoned)
    assert store.schedules.quarantine(poisoned.schedule_id, 1, quarantine_at())
    found = store.schedules.get(poisoned.schedule_id)
    assert found is not None and found.quarantine == quarantine_at()
    assert found.quarantine.reason == "OverflowError: date value out of range"
    assert found.next_due == poisoned.next_due  # kept, for the user to see
    listed = {s.schedule_id: s.quarantine for s in store.schedules.list_schedules(10).items}
    assert listed == {healthy.schedule_id: None, poisoned.schedule_id: quarantine_at()}


def test_a_second_quarantine_replaces_the_first(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    second = quarantine_at("2026-12-01T08:05:00Z", "year 10000 is out of range")
    assert store.schedules.quarantine(schedule.schedule_id, 1, quarantine_at())
    assert store.schedules.quarantine(schedule.schedule_id, 1, second)
    found = store.schedules.get(schedule.schedule_id)
    assert found is not None and found.quarantine == second


def test_a_quarantine_needs_the_version_it_judged_and_a_live_schedule(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    assert not store.schedules.quarantine(sid, 2, quarantine_at())
    assert not store.schedules.quarantine("sch_missing", 1, quarantine_at())
    assert store.schedules.get(sid) == schedule
    store.schedules.delete(sid, NOW)
    assert not store.schedules.quarantine(sid, 1, quarantine_at())
    gone = store.schedules.get(sid)
    assert gone is not None and gone.quarantine is None


def test_an_edit_clears_the_quarantine_and_makes_the_schedule_due_again(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    store.schedules.quarantine(sid, 1, quarantine_at())
    v2 = next_version(schedule, {"cron": "0 10 * * *", "time_zone": "UTC"})
    new_due = utc("2026-12-01T10:00:00Z")
    assert store.schedules.save_version(
        v2, expected_next_due=schedule.next_due, next_due=new_due, now=NOW
    )
    head = store.schedules.get(sid)
    assert head is not None and head.quarantine is None and head.version == 2
    assert [d.schedule_id for d in store.schedules.due(new_due, 10).items] == [sid]


def test_resume_clears_the_quarantine(store: Store) -> None:
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    sid = schedule.schedule_id
    store.schedules.quarantine(sid, 1, quarantine_at())
    store.schedules.pause(sid, None, NOW)
    assert store.schedules.resume(
        sid, expected_next_due=schedule.next_due, next_due=schedule.next_due, now=NOW
    )
    head = store.schedules.get(sid)
    assert head is not None and head.quarantine is None and not head.state.paused
    assert schedule.next_due is not None
    assert [d.schedule_id for d in store.schedules.due(schedule.next_due, 10).items] == [sid]
