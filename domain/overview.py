"""What a person asks first about a schedule: one word for its status, and
what changed from one version to the next.

Pure: the caller passes the instant to judge at.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from domain.schedule import Schedule, ScheduleVersion, version_to_dict


class ScheduleStatus(enum.StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    ENDED = "ended"
    DELETED = "deleted"
    QUARANTINED = "quarantined"


def schedule_status(schedule: Schedule, now: datetime) -> ScheduleStatus:
    """One word for the schedule as a whole, at ``now``.

    Rules, first match wins:
    - ``deleted``: it was deleted (its history stays readable);
    - ``quarantined``: duetime set it aside after an error;
    - ``ended``: no occurrence will come: every slot of its spec has been
      materialized (``next_due`` is None) and the last of them is not in
      the future (a one-off that came due, an ``end_at`` gone by);
    - ``paused``: paused by a user;
    - ``active``: otherwise.
    """
    if schedule.deleted:
        return ScheduleStatus.DELETED
    if schedule.quarantine is not None:
        return ScheduleStatus.QUARANTINED
    if schedule.next_due is None and (
        schedule.last_materialized_at is None or schedule.last_materialized_at <= now
    ):
        return ScheduleStatus.ENDED
    if schedule.state.paused:
        return ScheduleStatus.PAUSED
    return ScheduleStatus.ACTIVE


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and prefix not in ("payload", "target.headers"):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = value


def version_fields(version: ScheduleVersion) -> dict[str, Any]:
    """A version's parameters as dotted field names (``spec.cron``,
    ``policy.retry.max_attempts``, ``name``); ``payload`` and a webhook's
    ``target.headers`` count as one field each."""
    out: dict[str, Any] = {}
    _flatten(version_to_dict(version), "", out)
    return out


def changed_fields(previous: ScheduleVersion | None, current: ScheduleVersion) -> list[str]:
    """The fields ``current`` changed from ``previous``, sorted; version 1
    (no previous) changed nothing. A field set in one and absent (null) in
    the other counts as changed. An ``every`` spec counts from the instant
    its version was saved, so an edit that keeps ``every`` still shows
    ``spec.anchor_at``: the interval's phase moved with it."""
    if previous is None:
        return []
    before, after = version_fields(previous), version_fields(current)
    names = sorted(set(before) | set(after))
    return [name for name in names if before.get(name) != after.get(name)]
