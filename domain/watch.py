"""Silence is an alarm: is a schedule succeeding as often as its spec says it should?

A schedule is watched from its *anchor*: the latest of the scheduled instant
of its newest successful run (or of a run skipped because it was paused) and
the moment its current version was saved. The first slot after the anchor is
the occurrence that should succeed next:

- ``ok``: that slot has not come due, or came due less than half its grace ago;
- ``late``: it came due more than half its grace ago;
- ``overdue``: it came due more than its grace ago, and no success since;
- ``unknown``: the watchdog could not judge the schedule (the verdict
  carries the error); never returned by ``watch``, recorded by the watchdog.

The grace is the schedule's ``policy.grace``; by default the expected interval
(the gap from that slot to the one after it), at least two minutes, at most
the run timeout plus two minutes: a run gets time to finish, and a frequent
schedule is not left silent for long.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta

from domain.schedule import Schedule
from domain.spec import next_slot

MIN_GRACE = timedelta(minutes=2)


class WatchStatus(enum.StrEnum):
    OK = "ok"
    LATE = "late"
    OVERDUE = "overdue"
    PAUSED = "paused"
    ENDED = "ended"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Watch:
    """The watchdog's verdict on one schedule at ``checked_at``."""

    schedule_id: str
    status: WatchStatus
    checked_at: datetime
    expected_at: datetime | None  # the slot that should have succeeded
    last_success_at: datetime | None  # scheduled_at of the newest successful run
    grace: timedelta | None
    error: str | None = None  # why the schedule could not be judged (``unknown``)


def default_grace(schedule: Schedule, expected_at: datetime) -> timedelta:
    version = schedule.current
    if version.policy.grace is not None:
        return version.policy.grace
    following = next_slot(version.spec, version.policy.dst, expected_at)
    interval = (following.scheduled_at - expected_at) if following else MIN_GRACE
    ceiling = version.policy.run_timeout + MIN_GRACE
    return min(max(interval, MIN_GRACE), ceiling)


def watch(
    schedule: Schedule,
    last_success_at: datetime | None,
    now: datetime,
    accounted_until: datetime | None = None,
) -> Watch:
    """The verdict for one schedule.

    ``last_success_at`` is the scheduled instant of its newest successful run;
    ``accounted_until`` the newest instant otherwise accounted for (a run
    skipped because the schedule was paused), if any.
    """
    if schedule.state.paused or schedule.deleted:
        return Watch(schedule.schedule_id, WatchStatus.PAUSED, now, None, last_success_at, None)
    version = schedule.current
    anchor = version.created_at
    for instant in (last_success_at, accounted_until):
        if instant is not None and instant > anchor:
            anchor = instant
    expected = next_slot(version.spec, version.policy.dst, anchor)
    if expected is None:
        return Watch(schedule.schedule_id, WatchStatus.ENDED, now, None, last_success_at, None)
    expected_at = expected.scheduled_at
    grace = default_grace(schedule, expected_at)
    # Compared as lateness (a difference of two instants, which cannot
    # overflow), not as ``expected_at + grace``, which can near year 9999.
    late_by = now - expected_at
    if late_by <= grace / 2:
        status = WatchStatus.OK
    elif late_by <= grace:
        status = WatchStatus.LATE
    else:
        status = WatchStatus.OVERDUE
    return Watch(schedule.schedule_id, status, now, expected_at, last_success_at, grace)
