"""The store contract for listing a schedule's versions (``ScheduleStore.versions``),
on every adapter; the port's default (for fakes) is held to the same rules."""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.schedule import ScheduleVersion, parse_policy
from domain.spec import parse_spec
from service.ports import Page, ScheduleStore, Store
from tests.conftest import build_schedule, utc

NOW = utc("2026-12-01T08:00:00Z")


def _with_versions(store: Store, count: int) -> list[ScheduleVersion]:
    """A schedule saved ``count`` times (versions 1..count), each a day apart."""
    schedule = build_schedule(NOW)
    store.schedules.create(schedule)
    versions = [schedule.current]
    for number in range(2, count + 1):
        head = store.schedules.get(schedule.schedule_id)
        assert head is not None
        at = NOW + timedelta(days=number)
        new = ScheduleVersion(
            schedule_id=schedule.schedule_id,
            version=number,
            name=f"edit {number}",
            spec=parse_spec({"cron": f"{number} 9 * * *"}, created_at=at),
            policy=parse_policy(None),
            target=schedule.current.target,
            payload={"n": number},
            created_at=at,
        )
        assert store.schedules.save_version(
            new, expected_next_due=head.next_due, next_due=head.next_due, now=at
        )
        versions.append(new)
    return versions


def _all_pages(
    list_versions: object, schedule_id: str, limit: int
) -> tuple[list[ScheduleVersion], int]:
    read: list[ScheduleVersion] = []
    token: str | None = None
    pages = 0
    while True:
        page: Page[ScheduleVersion] = list_versions(schedule_id, limit, token)  # type: ignore[operator]
        pages += 1
        read.extend(page.items)
        token = page.next_token
        if token is None:
            return read, pages


def test_versions_lists_every_version_oldest_first(store: Store) -> None:
    written = _with_versions(store, 3)
    page = store.schedules.versions(written[0].schedule_id, 10)
    assert list(page.items) == written
    assert page.next_token is None


def test_versions_pages_without_losing_or_repeating_one(store: Store) -> None:
    written = _with_versions(store, 5)
    read, pages = _all_pages(store.schedules.versions, written[0].schedule_id, 2)
    assert read == written
    assert pages == 3  # 2 + 2 + 1: no empty last page


def test_versions_of_a_deleted_schedule_stay_readable(store: Store) -> None:
    written = _with_versions(store, 2)
    assert store.schedules.delete(written[0].schedule_id, NOW + timedelta(days=5))
    assert list(store.schedules.versions(written[0].schedule_id, 10).items) == written


def test_versions_of_an_unknown_schedule_is_an_empty_page(store: Store) -> None:
    _with_versions(store, 2)
    assert store.schedules.versions("sch_missing", 10) == Page(())


def test_versions_refuses_a_token_it_did_not_hand_out(store: Store) -> None:
    written = _with_versions(store, 3)
    with pytest.raises(ValueError):
        store.schedules.versions(written[0].schedule_id, 1, "not-a-token")


def test_versions_does_not_page_into_another_schedule(store: Store) -> None:
    first = _with_versions(store, 3)
    second = _with_versions(store, 3)
    token = store.schedules.versions(first[0].schedule_id, 1).next_token
    assert token is not None
    # A token of one schedule's listing is refused, or reads only the other's versions.
    try:
        page = store.schedules.versions(second[0].schedule_id, 10, token)
    except ValueError:
        return
    assert all(v.schedule_id == second[0].schedule_id for v in page.items)


def test_the_ports_default_listing_follows_the_same_rules(store: Store) -> None:
    written = _with_versions(store, 5)
    read, pages = _all_pages(
        lambda sid, limit, token: ScheduleStore.versions(store.schedules, sid, limit, token),
        written[0].schedule_id,
        2,
    )
    assert read == written and pages == 3
