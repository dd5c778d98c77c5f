"""``Store.find_runs``: run listings with filters, on every adapter.

A new item layout must keep these: the filters keep exactly the matching
records, one schedule's records come in ``scheduled_at`` order in full pages,
a listing across schedules returns every matching record once (each
schedule's in order), and a token only continues the listing that made it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from domain.run import Run, RunKind, RunStatus, new_occurrence
from domain.spec import Slot
from service.ports import Page, RunQuery, Store
from tests.conftest import build_schedule, random_schedule_id, utc

NOW = utc("2026-12-01T08:00:00Z")


def _run(sid: str, at: str, status: RunStatus, kind: RunKind = RunKind.SCHEDULED) -> Run:
    instant = utc(at)
    run = new_occurrence(
        sid, 1, Slot(instant, instant.replace(tzinfo=None)), bucket=0, shard=0, materialized_at=NOW
    )
    pending = status is RunStatus.SCHEDULED
    return replace(run, status=status, kind=kind, pending=pending)


def _schedule_with(store: Store, *runs: tuple[str, RunStatus, RunKind]) -> tuple[str, list[Run]]:
    sid = random_schedule_id()
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    made = [_run(sid, at, status, kind) for at, status, kind in runs]
    assert store.records.insert(made) == [r.occurrence_id for r in made]
    return sid, made


S, K = RunStatus, RunKind
MIXED = (
    ("2026-12-01T01:00:00Z", S.SUCCEEDED, K.SCHEDULED),
    ("2026-12-01T02:00:00Z", S.FAILED, K.SCHEDULED),
    ("2026-12-01T03:00:00Z", S.EXPIRED, K.BACKFILL),
    ("2026-12-01T04:00:00Z", S.FAILED, K.TRIGGER),
    ("2026-12-01T05:00:00Z", S.SKIPPED, K.SCHEDULED),
    ("2026-12-01T06:00:00Z", S.SUCCEEDED, K.TRIGGER),
    ("2026-12-01T07:00:00Z", S.SCHEDULED, K.SCHEDULED),
)


def _all(store: Store, query: RunQuery, limit: int) -> tuple[list[Run], int]:
    """Every record the listing gives, following its tokens; and how many pages."""
    found: list[Run] = []
    token: str | None = None
    pages = 0
    while True:
        page: Page[Run] = store.records.find_runs(query, limit, token)
        pages += 1
        found.extend(page.items)
        token = page.next_token
        if token is None:
            return found, pages
        assert pages < 100


def _at(runs: list[Run]) -> list[datetime]:
    return [r.scheduled_at for r in runs]


def test_a_schedules_runs_come_newest_first_in_full_pages(store: Store) -> None:
    sid, made = _schedule_with(store, *MIXED)
    found, pages = _all(store, RunQuery(schedule_id=sid), 3)
    assert [r.occurrence_id for r in found] == [r.occurrence_id for r in reversed(made)]
    assert pages == 3
    assert found[0] == store.records.get_run(made[-1].occurrence_id)


def test_a_schedules_runs_oldest_first(store: Store) -> None:
    sid, made = _schedule_with(store, *MIXED)
    found, _ = _all(store, RunQuery(schedule_id=sid, newest_first=False), 2)
    assert [r.occurrence_id for r in found] == [r.occurrence_id for r in made]


@pytest.mark.parametrize(
    "query",
    [
        RunQuery(statuses=frozenset({S.FAILED, S.EXPIRED})),
        RunQuery(statuses=frozenset({S.SUCCEEDED}), kinds=frozenset({K.TRIGGER})),
        RunQuery(kinds=frozenset({K.BACKFILL, K.SCHEDULED})),
        RunQuery(since=utc("2026-12-01T02:00:00Z"), until=utc("2026-12-01T05:00:00Z")),
        RunQuery(since=utc("2026-12-01T06:00:00Z")),
        RunQuery(until=utc("2026-12-01T02:00:00Z"), newest_first=False),
        RunQuery(statuses=frozenset({S.CANCELLED})),
    ],
)
def test_filters_keep_exactly_the_matching_runs_of_a_schedule(
    store: Store, query: RunQuery
) -> None:
    sid, made = _schedule_with(store, *MIXED)
    other, _ = _schedule_with(store, *MIXED)  # never listed with schedule_id=sid
    query = replace(query, schedule_id=sid)
    expected = [r for r in made if query.matches(r)]
    if query.newest_first:
        expected.reverse()
    found, _ = _all(store, query, 2)
    assert [r.occurrence_id for r in found] == [r.occurrence_id for r in expected]
    assert all(r.schedule_id == sid for r in found) and other != sid


def test_since_is_inclusive_and_until_exclusive(store: Store) -> None:
    sid, _ = _schedule_with(store, *MIXED)
    query = RunQuery(
        schedule_id=sid, since=utc("2026-12-01T03:00:00Z"), until=utc("2026-12-01T04:00:00Z")
    )
    found, _ = _all(store, query, 10)
    assert _at(found) == [utc("2026-12-01T03:00:00Z")]


@pytest.mark.parametrize("newest_first", [True, False])
def test_a_listing_across_schedules_returns_each_matching_run_once_in_order_per_schedule(
    store: Store, newest_first: bool
) -> None:
    schedules = [_schedule_with(store, *MIXED) for _ in range(4)]
    deleted, _ = schedules.pop(1)
    assert store.schedules.delete(
        deleted, NOW
    )  # left out across schedules, kept in its own listing
    query = RunQuery(statuses=frozenset({S.FAILED, S.SUCCEEDED}), newest_first=newest_first)
    found, _ = _all(store, query, 2)

    assert not [r for r in found if r.schedule_id == deleted]
    assert _all(store, replace(query, schedule_id=deleted), 2)[0]
    ours = {sid for sid, _ in schedules}
    mine = [r for r in found if r.schedule_id in ours]  # other tests' schedules may be listed
    expected = {r.occurrence_id for _, made in schedules for r in made if query.matches(r)}
    assert sorted(r.occurrence_id for r in mine) == sorted(expected)
    assert len({r.occurrence_id for r in found}) == len(found)
    for sid, _ in schedules:
        instants = _at([r for r in mine if r.schedule_id == sid])
        assert instants == sorted(instants, reverse=newest_first)


def test_a_page_is_never_longer_than_its_limit(store: Store) -> None:
    for _ in range(2):
        _schedule_with(store, *MIXED)
    token: str | None = None
    while True:
        page = store.records.find_runs(RunQuery(), 3, token)
        assert len(page.items) <= 3
        token = page.next_token
        if token is None:
            break


def test_a_token_continues_only_the_listing_that_made_it(store: Store) -> None:
    sid, _ = _schedule_with(store, *MIXED)
    page = store.records.find_runs(RunQuery(schedule_id=sid), 2)
    assert page.next_token is not None
    with pytest.raises(ValueError):
        store.records.find_runs(RunQuery(schedule_id=sid, newest_first=False), 2, page.next_token)
    with pytest.raises(ValueError):
        store.records.find_runs(RunQuery(), 2, page.next_token)
    with pytest.raises(ValueError):
        store.records.find_runs(RunQuery(schedule_id=sid), 2, "bm90IGEgdG9rZW4=")
    with pytest.raises(ValueError):
        store.records.find_runs(RunQuery(schedule_id=sid), 2, "%%%")


def test_a_schedule_without_runs_lists_nothing(store: Store) -> None:
    sid = random_schedule_id()
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    assert store.records.find_runs(RunQuery(schedule_id=sid), 5) == Page(())


def test_a_query_refuses_naive_bounds_and_an_empty_range() -> None:
    with pytest.raises(ValueError):
        RunQuery(since=datetime(2026, 12, 1))
    with pytest.raises(ValueError):
        RunQuery(since=NOW, until=NOW)
