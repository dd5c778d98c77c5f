"""The errors use cases raise. The API maps each to one HTTP status in one place."""

from __future__ import annotations

from datetime import datetime

from domain.errors import DuetimeError
from domain.timeparse import format_instant


class ScheduleNotFound(DuetimeError):
    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"schedule {schedule_id!r} not found")
        self.schedule_id = schedule_id


class ScheduleDeleted(ScheduleNotFound):
    """A schedule that was deleted: gone for every operation but its runs."""

    def __init__(self, schedule_id: str, deleted_at: datetime) -> None:
        DuetimeError.__init__(
            self,
            f"schedule {schedule_id!r} was deleted at {format_instant(deleted_at)}; "
            f"its runs stay readable: GET /runs?schedule_id={schedule_id}",
        )
        self.schedule_id = schedule_id
        self.deleted_at = deleted_at


def schedule_gone(schedule_id: str, found: object) -> ScheduleNotFound:
    """The error for a schedule an operation cannot act on: ``found`` is the
    schedule as stored (None: never existed), deleted or not."""
    deleted_at = getattr(found, "deleted_at", None)
    if isinstance(deleted_at, datetime):
        return ScheduleDeleted(schedule_id, deleted_at)
    return ScheduleNotFound(schedule_id)


class UnknownPageToken(DuetimeError):
    """A ``next_token`` of the documented format that names no page of this listing."""

    def __init__(self) -> None:
        super().__init__(
            "next_token: names no page of this listing; a token is only valid with the "
            "listing and filters that returned it (start again without next_token)"
        )


class RunNotFound(DuetimeError):
    def __init__(self, occurrence_id: str) -> None:
        super().__init__(f"run {occurrence_id!r} not found")
        self.occurrence_id = occurrence_id


class VersionConflict(DuetimeError):
    """The caller edited a version that is no longer current (HTTP 412)."""

    def __init__(self, schedule_id: str, expected: int, actual: int | None) -> None:
        super().__init__(
            f"schedule {schedule_id!r} is at version {actual}, not {expected}: "
            "read it again and reapply the change"
        )
        self.schedule_id = schedule_id
        self.expected = expected
        self.actual = actual


class ScheduleNotActive(DuetimeError):
    """The operation needs an active schedule (not paused, not deleted)."""

    def __init__(self, schedule_id: str, why: str) -> None:
        super().__init__(f"schedule {schedule_id!r} is {why}")
        self.schedule_id = schedule_id
        self.why = why


class Contention(DuetimeError):
    """A conditional write kept losing to concurrent writers; safe to retry."""
