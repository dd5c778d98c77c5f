"""Alerts that reach a person: when a schedule's verdict changes, say so once.

A verdict *needs attention* when it is ``overdue`` (no success within the
expected interval plus grace) or ``unknown`` (the watchdog could not judge
the schedule); every other verdict (``ok``, ``late``, ``paused``, ``ended``)
is *clear*. A change is a move from clear to needs-attention or back, against
what was last notified (a schedule never notified counts as clear): ``late``
on its way to ``overdue`` says nothing, and ``overdue`` turning ``unknown``
is still the same trouble.

A flapping schedule does not flood: after a message, the next one about that
schedule waits at least ``min_interval``. A change inside the interval is
held, not dropped and not queued: the watchdog compares again on each pass,
so once the interval has passed it sends the verdict the schedule has *then*
(the latest state), and nothing at all if the schedule went back meanwhile to
what was last said.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from domain.timeparse import format_instant
from domain.watch import WatchStatus

NEEDS_ATTENTION: Final = frozenset({WatchStatus.OVERDUE, WatchStatus.UNKNOWN})
DEFAULT_MIN_INTERVAL: Final = timedelta(minutes=10)


def needs_attention(status: WatchStatus) -> bool:
    return status in NEEDS_ATTENTION


@dataclass(frozen=True)
class Notified:
    """What was last sent about a schedule, and when."""

    status: WatchStatus
    sent_at: datetime

    def __post_init__(self) -> None:
        if self.sent_at.tzinfo is None:
            raise ValueError("sent_at must be aware")


class Change(enum.StrEnum):
    NONE = "none"  # the verdict says what was last notified
    HELD = "held"  # it changed, within the minimum interval of the last message
    SEND = "send"


def change(
    status: WatchStatus, notified: Notified | None, now: datetime, min_interval: timedelta
) -> Change:
    """Whether the verdict ``status`` is news to the person last told ``notified``."""
    was = notified is not None and needs_attention(notified.status)
    if needs_attention(status) == was:
        return Change.NONE
    if notified is not None and now - notified.sent_at < min_interval:
        return Change.HELD
    return Change.SEND


@dataclass(frozen=True)
class Alert:
    """One message: a schedule's verdict changed."""

    schedule_id: str
    name: str
    status: WatchStatus  # the verdict now
    previous: WatchStatus  # the verdict last notified (``ok`` when never)
    checked_at: datetime
    last_success_at: datetime | None
    expected_at: datetime | None  # the slot that should have succeeded
    error: str | None  # why it could not be judged (``unknown``)
    command: str  # how to see it from a terminal
    url: str | None = None  # how to see it in a browser, where there is one

    @property
    def needs_attention(self) -> bool:
        return needs_attention(self.status)

    @property
    def title(self) -> str:
        verdict = {
            WatchStatus.OVERDUE: "is overdue",
            WatchStatus.UNKNOWN: "cannot be judged",
        }.get(self.status, f"is {self.status.value} again")
        return f"duetime: schedule {self.name!r} {verdict}"

    def text(self) -> str:
        """The message for a person: a title line, then the facts, then where to look."""
        success = format_instant(self.last_success_at) if self.last_success_at else "never"
        lines = [
            self.title,
            f"schedule: {self.schedule_id} ({self.name})",
            f"verdict: {self.status.value} (was {self.previous.value}), "
            f"checked {format_instant(self.checked_at)}",
            f"last success: {success}",
        ]
        if self.expected_at is not None and self.needs_attention:
            lines.append(f"expected to succeed: {format_instant(self.expected_at)}")
        if self.error is not None:
            lines.append(f"error: {self.error}")
        lines.append(f"see: {self.command}" + (f" or {self.url}" if self.url else ""))
        return "\n".join(lines)

    def document(self) -> dict[str, Any]:
        """The message as data (the JSON body of a notification webhook, an SNS message)."""
        return {
            "type": "duetime.schedule.verdict",
            "schedule_id": self.schedule_id,
            "name": self.name,
            "verdict": self.status.value,
            "previous": self.previous.value,
            "needs_attention": self.needs_attention,
            "checked_at": format_instant(self.checked_at),
            "last_success_at": format_instant(self.last_success_at)
            if self.last_success_at
            else None,
            "expected_at": format_instant(self.expected_at) if self.expected_at else None,
            "error": self.error,
            "command": self.command,
            "url": self.url,
            "text": self.text(),
        }


def _maybe(at: datetime | None) -> str | None:
    return None if at is None else format_instant(at)
