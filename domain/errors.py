"""The errors the domain raises. Each names what was wrong and why."""

from __future__ import annotations

import enum
from typing import TypeVar

_Choice = TypeVar("_Choice", bound=enum.StrEnum)


class DuetimeError(Exception):
    """Base of every error duetime raises on purpose."""


class InvalidSchedule(DuetimeError, ValueError):
    """Input that cannot become a schedule.

    ``field`` is the dotted path of the offending input (``spec.cron``,
    ``minute``, ``policy.retry.cap``) and ``reason`` says what is wrong with it,
    so ``str(error)`` reads ``"minute: 61 is outside 0-59"``.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

    def within(self, prefix: str) -> InvalidSchedule:
        """The same error, with its field placed under ``prefix`` (``spec.cron.minute``)."""
        return InvalidSchedule(f"{prefix}.{self.field}" if prefix else self.field, self.reason)


def parse_choice(kind: type[_Choice], value: object, default: _Choice, field: str) -> _Choice:
    """One of an enum's values as the user wrote it; ``None`` is the default."""
    if value is None:
        return default
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            pass
    choices = ", ".join(member.value for member in kind)
    raise InvalidSchedule(field, f"{value!r} is not one of {choices}")
