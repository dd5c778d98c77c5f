"""Reading a schedule as a person asks about it: its status, its last runs, its
next occurrences (with their DST notes), what is still planned under an older
version, and its versions with what each one changed.

Every read here is bounded: a few pages of a schedule's newest runs at most,
never a scan of its whole history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final

from domain.errors import DuetimeError, InvalidSchedule
from domain.explain import slot_note
from domain.overview import ScheduleStatus, changed_fields, schedule_status
from domain.run import Run, RunKind, RunStatus, is_planned
from domain.schedule import Schedule, ScheduleVersion
from domain.spec import Slot, spec_zone_name
from domain.timezones import load_zone
from service.errors import UnknownPageToken, schedule_gone
from service.ports import Page, RunQuery, Store
from service.schedules import ScheduleService
from service.watchdog import watch_component

RECENT_RUNS: Final = 5
# How many of a schedule's newest records are read to find its recent runs and
# what is still planned: pages of RUNS_PAGE, at most RUNS_PAGES of them.
RUNS_PAGE: Final = 20
RUNS_PAGES: Final = 10
MAX_VERSIONS_PAGE: Final = 100
# Versions are numbered from 1; a number past this is no version (nor an SQL integer).
MAX_VERSION_NUMBER: Final = 10**9
# Not run yet: waiting for dispatch, or admitted and waiting for a worker.
_NOT_RUN: Final = frozenset({RunStatus.SCHEDULED, RunStatus.ADMITTED})


class VersionNotFound(DuetimeError):
    def __init__(self, schedule_id: str, version: int) -> None:
        super().__init__(f"schedule {schedule_id!r} has no version {version}")
        self.schedule_id = schedule_id
        self.version = version


@dataclass(frozen=True)
class UpcomingOccurrence:
    slot: Slot
    version: int
    dst_note: str | None


@dataclass(frozen=True)
class ScheduleOverview:
    schedule: Schedule
    status: ScheduleStatus
    recent_runs: tuple[Run, ...]  # newest first, planned future ones left out
    planned_under_older_versions: tuple[Run, ...]  # oldest first


@dataclass(frozen=True)
class ScheduleView:
    """A schedule as an answer shows it: ``next_due`` as a person reads it
    (the next slot that will run, queued or not), its next slots not planned
    yet, each with its DST note, and its status."""

    schedule: Schedule
    upcoming: tuple[UpcomingOccurrence, ...]
    status: ScheduleStatus


@dataclass(frozen=True)
class DescribedView:
    """A schedule as its own page shows it: the view, the watchdog's verdict
    (its detail, None before the first), its recent runs and what is still
    planned under an older version."""

    view: ScheduleView
    watch: Mapping[str, Any] | None
    recent_runs: tuple[Run, ...]
    planned_under_older_versions: tuple[Run, ...]


def shown(schedules: ScheduleService, schedule: Schedule, count: int) -> ScheduleView:
    """The schedule with its next ``count`` slots not planned yet."""
    slots = schedules.next_occurrences(schedule, count)
    next_due = next_to_run(schedules.store, schedule, schedules.clock.now())
    return ScheduleView(
        replace(schedule, next_due=next_due),
        tuple(upcoming_occurrences(schedule, slots)),
        status(schedule, schedules.clock.now()),
    )


def described(schedules: ScheduleService, schedule: Schedule, count: int) -> DescribedView:
    """``shown``, with the watch verdict and the schedule's runs (``overview``)."""
    view = shown(schedules, schedule, count)
    verdict = schedules.store.leases.heartbeat(watch_component(schedule.schedule_id))
    seen = overview(schedules.store, schedule, schedules.clock.now())
    return DescribedView(
        view,
        None if verdict is None else verdict.detail,
        seen.recent_runs,
        seen.planned_under_older_versions,
    )


@dataclass(frozen=True)
class VersionView:
    version: ScheduleVersion
    changed: tuple[str, ...]  # field names changed from the version before


def status(schedule: Schedule, now: datetime) -> ScheduleStatus:
    return schedule_status(schedule, now)


def upcoming_occurrences(schedule: Schedule, slots: list[Slot]) -> list[UpcomingOccurrence]:
    """The schedule's next slots with the version they will run under (the
    current one: slots not materialized yet) and a DST note where the wall
    time was in a gap or a fold."""
    zone = load_zone(spec_zone_name(schedule.current.spec))
    return [UpcomingOccurrence(slot, schedule.version, slot_note(slot, zone)) for slot in slots]


def next_to_run(store: Store, schedule: Schedule, now: datetime) -> datetime | None:
    """The instant of the schedule's next slot that will run, strictly after
    ``now``: the earliest occurrence already created for it (planned ahead,
    admitted and queued, or waiting, under whichever version created it),
    else the first slot not created yet (``next_due``, which is what the
    store keeps: with a lookahead, and more for a schedule planned early, it
    can be minutes after slots already queued). One read of the schedule's records
    from ``now`` on, and only when something is planned past ``now``. A
    paused, quarantined or ended schedule shows ``next_due`` as stored."""
    if not schedule.active or schedule.quarantine is not None:
        return schedule.next_due
    found = planned_runs(store, schedule, now, 1)
    if found and (schedule.next_due is None or found[0].scheduled_at < schedule.next_due):
        return found[0].scheduled_at
    return schedule.next_due


def planned_runs(store: Store, schedule: Schedule, now: datetime, limit: int) -> list[Run]:
    """The schedule's planned slots (``domain.run.is_planned``), oldest first,
    at most ``limit``: one read of its records after ``now``, and only when
    something is planned past ``now``."""
    planned_to = schedule.last_materialized_at
    if planned_to is None or planned_to <= now or limit < 1:
        return []
    query = RunQuery(
        schedule_id=schedule.schedule_id,
        statuses=_NOT_RUN,
        kinds=frozenset({RunKind.SCHEDULED}),
        since=now + timedelta(microseconds=1),
        newest_first=False,
    )
    return [run for run in store.records.find_runs(query, limit).items if is_planned(run, now)]


def _newest_runs(store: Store, schedule_id: str, now: datetime) -> list[Run]:
    """The schedule's newest records, a page at a time, until RECENT_RUNS runs
    that came due are found and the oldest record read is no longer waiting
    for a worker (what waits is the newest few: planned ahead, or due and
    about to be dispatched, oldest first); at most RUNS_PAGES pages."""
    runs: list[Run] = []
    token: str | None = None
    for _ in range(RUNS_PAGES):
        page = store.records.runs(schedule_id, RUNS_PAGE, token)
        runs.extend(page.items)
        token = page.next_token
        if token is None:
            break
        came_due = sum(1 for run in runs if not _planned(run, now))
        if came_due >= RECENT_RUNS and runs and not _waiting(runs[-1], now):
            break
    return runs


def _planned(run: Run, now: datetime) -> bool:
    """An occurrence still to come: not run yet and its instant in the future."""
    return run.status in _NOT_RUN and run.scheduled_at > now


def _waiting(run: Run, now: datetime) -> bool:
    """Not handed to a worker yet: waiting for dispatch, or admitted ahead of its
    instant (an intent sent with a delay); an admitted run that came due is
    being run."""
    return run.status is RunStatus.SCHEDULED or _planned(run, now)


def overview(store: Store, schedule: Schedule, now: datetime) -> ScheduleOverview:
    """The status, the last RECENT_RUNS runs (newest first, planned future
    ones left out) and the occurrences materialized under a version older
    than the current one not handed to a worker yet (oldest first), from the
    schedule's newest records (see ``_newest_runs``)."""
    newest = _newest_runs(store, schedule.schedule_id, now)
    recent = tuple([run for run in newest if not _planned(run, now)][:RECENT_RUNS])
    older = sorted(
        (run for run in newest if run.version < schedule.version and _waiting(run, now)),
        key=lambda run: (run.scheduled_at, run.occurrence_id),
    )
    return ScheduleOverview(schedule, schedule_status(schedule, now), recent, tuple(older))


def _schedule(store: Store, schedule_id: str) -> Schedule:
    schedule = store.schedules.get(schedule_id)
    if schedule is None or schedule.deleted:  # gone, its runs aside
        raise schedule_gone(schedule_id, schedule)
    return schedule


def versions(
    store: Store, schedule_id: str, limit: int = 50, token: str | None = None
) -> Page[VersionView]:
    """A schedule's versions, oldest first, each with the fields it changed."""
    _schedule(store, schedule_id)
    if not 1 <= limit <= MAX_VERSIONS_PAGE:
        raise InvalidSchedule("limit", f"must be 1-{MAX_VERSIONS_PAGE}")
    try:
        page = store.schedules.versions(schedule_id, limit, token)
    except ValueError:
        raise UnknownPageToken() from None
    previous: ScheduleVersion | None = None
    if page.items and page.items[0].version > 1:
        previous = store.schedules.get_version(schedule_id, page.items[0].version - 1)
    views: list[VersionView] = []
    for item in page.items:
        views.append(VersionView(item, tuple(changed_fields(previous, item))))
        previous = item
    return Page(tuple(views), page.next_token)


def version(store: Store, schedule_id: str, number: int) -> VersionView:
    """One version of a schedule, with the fields it changed."""
    _schedule(store, schedule_id)
    found = None
    if 1 <= number <= MAX_VERSION_NUMBER:
        found = store.schedules.get_version(schedule_id, number)
    if found is None:
        raise VersionNotFound(schedule_id, number)
    previous = store.schedules.get_version(schedule_id, number - 1) if number > 1 else None
    return VersionView(found, tuple(changed_fields(previous, found)))
