"""Parsing the instants and durations users write (ISO 8601), with clear refusals.

Every instant and duration a user can write is bounded, so that all the
arithmetic done with it later (the recurrence search over 50 years, the
watchdog's grace, the planner's lookahead, a backfill) stays far inside what
``datetime`` can represent (years 1 to 9999):

- instants lie in ``[MIN_INSTANT, MAX_INSTANT)``: from 1970-01-01T00:00:00Z up
  to, not including, 2200-01-01T00:00:00Z;
- wall times (naive, read in a zone) lie one day inside those bounds, so that
  read in any zone (offsets are within a day) they are instants in range;
- durations lie within ``[0, MAX_DURATION]`` (366 days); each field narrows
  that further (``spec.every`` is at least one second).

The latest instant any computation reaches is then below 2200 + 50 years of
recurrence search + a few intervals of 366 days: year 2260 or so.

Only ASCII digits count: Python's ``int()``, ``float()`` and ``\\d`` also read
other scripts' digits ("\\u0661" is 1), which no user means to write.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final

from domain.errors import InvalidSchedule

MIN_INSTANT: Final = datetime(1970, 1, 1, tzinfo=UTC)
MAX_INSTANT: Final = datetime(2200, 1, 1, tzinfo=UTC)  # exclusive
_MIN_WALL: Final = datetime(1970, 1, 2)  # noqa: DTZ001 - a wall time
_MAX_WALL: Final = datetime(2199, 12, 31)  # noqa: DTZ001 - a wall time, exclusive
MAX_DURATION: Final = timedelta(days=366)
# Longer than any date-time or duration a user means to write: refused before parsing.
MAX_TEXT_CHARS: Final = 64

_DURATION = re.compile(
    r"P(?:(?P<weeks>[0-9]{1,9})W)?(?:(?P<days>[0-9]{1,9})D)?"
    r"(?:T(?:(?P<hours>[0-9]{1,9})H)?(?:(?P<minutes>[0-9]{1,9})M)?"
    r"(?:(?P<seconds>[0-9]{1,9})(?:[.,](?P<fraction>[0-9]{1,6}))?S)?)?",
    re.ASCII,
)
_UNIT_US: Final = {
    "weeks": 7 * 86_400_000_000,
    "days": 86_400_000_000,
    "hours": 3_600_000_000,
    "minutes": 60_000_000,
    "seconds": 1_000_000,
}


def parse_duration(text: object, field: str) -> timedelta:
    """An ISO 8601 duration of fixed length: weeks, days (24 h), hours, minutes, seconds.

    Years and months have no fixed length, so they are refused: a calendar
    rhythm is a cron expression.
    """
    if not isinstance(text, str):
        raise InvalidSchedule(field, "must be an ISO 8601 duration such as 'PT15M'")
    if len(text) > MAX_TEXT_CHARS or not text.isascii():
        raise InvalidSchedule(field, "must be an ISO 8601 duration such as 'PT15M' (ASCII)")
    upper = text.strip().upper()
    match = _DURATION.fullmatch(upper)
    if match is None or upper in ("P", "PT") or upper.endswith("T"):
        if re.fullmatch(r"P(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T.*)?", upper) and re.match(
            r"P\d+[YM]|P\d+Y\d+M", upper
        ):
            raise InvalidSchedule(
                field, f"{text!r}: years and months are not fixed lengths; use a cron spec"
            )
        raise InvalidSchedule(field, f"{text!r} is not an ISO 8601 duration such as 'PT15M'")
    groups = match.groupdict()
    micros = sum(int(groups[name] or 0) * unit for name, unit in _UNIT_US.items())
    micros += int((groups["fraction"] or "0").ljust(6, "0"))
    if micros > MAX_DURATION // timedelta(microseconds=1):
        raise InvalidSchedule(field, f"{text!r} is longer than {format_duration(MAX_DURATION)}")
    return timedelta(microseconds=micros)


def format_duration(value: timedelta) -> str:
    """The shortest ISO 8601 form of a duration (days counted as 24 h)."""
    total = value.total_seconds()
    if total == 0:
        return "PT0S"
    sign = "-" if total < 0 else ""
    total = abs(total)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    text = "P"
    if days:
        text += f"{int(days)}D"
    time = ""
    if hours:
        time += f"{int(hours)}H"
    if minutes:
        time += f"{int(minutes)}M"
    if seconds:
        time += f"{seconds:g}S"
    if time:
        text += "T" + time
    return sign + text


def parse_instant(text: object, field: str) -> datetime:
    """An ISO 8601 instant with an explicit offset (``Z`` or ``+02:00``), as UTC."""
    value = _parse_iso(text, field)
    if value.tzinfo is None:
        raise InvalidSchedule(
            field, f"{text!r} has no offset; write it as UTC ('...Z') or '+hh:mm'"
        )
    return check_instant(value, field)


def parse_instant_or_wall(text: object, field: str) -> datetime:
    """An ISO 8601 date-time: aware (an instant, returned in UTC) or naive (a wall time)."""
    value = _parse_iso(text, field)
    return check_instant(value, field) if value.tzinfo is not None else check_wall(value, field)


def check_instant(value: datetime, field: str) -> datetime:
    """``value`` (aware) in UTC, or InvalidSchedule when it lies outside the bounds."""
    if value.tzinfo is None:
        raise InvalidSchedule(field, "must have an offset")
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not MIN_INSTANT <= utc < MAX_INSTANT:
        raise InvalidSchedule(
            field,
            f"{value.isoformat()} is outside the supported range "
            f"{format_instant(MIN_INSTANT)} to {format_instant(MAX_INSTANT)} (exclusive)",
        )
    return utc


def check_wall(value: datetime, field: str) -> datetime:
    """``value`` (a naive wall time), or InvalidSchedule when it lies outside the bounds."""
    if value.tzinfo is not None:
        raise ValueError("a wall time is naive")
    if not _MIN_WALL <= value < _MAX_WALL:
        raise InvalidSchedule(
            field,
            f"{value.isoformat()} is outside the supported range "
            f"{_MIN_WALL.isoformat()} to {_MAX_WALL.isoformat()} (exclusive)",
        )
    return value


def _parse_iso(text: object, field: str) -> datetime:
    if not isinstance(text, str) or not text.strip():
        raise InvalidSchedule(field, "must be an ISO 8601 date-time such as '2026-12-01T09:00:00Z'")
    if len(text) > MAX_TEXT_CHARS or not text.isascii():
        raise InvalidSchedule(
            field, "must be an ISO 8601 date-time such as '2026-12-01T09:00:00Z' (ASCII)"
        )
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidSchedule(
            field, f"{text!r} is not an ISO 8601 date-time such as '2026-12-01T09:00:00Z'"
        ) from None


def format_instant(value: datetime) -> str:
    """An instant as UTC ISO 8601 with ``Z``: ``2026-03-08T07:30:00Z``."""
    if value.tzinfo is None:
        raise ValueError("an instant must be timezone-aware")
    text = value.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"
