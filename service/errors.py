"""The errors use cases raise. The API maps each to one HTTP status in one place."""

from __future__ import annotations

from domain.errors import DuetimeError


class ScheduleNotFound(DuetimeError):
    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"schedule {schedule_id!r} not found")
        self.schedule_id = schedule_id


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
