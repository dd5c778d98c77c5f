"""Parsing the instants and durations users write (ISO 8601), with clear refusals."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from domain.errors import InvalidSchedule

_DURATION = re.compile(
    r"^P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(text: object, field: str) -> timedelta:
    """An ISO 8601 duration of fixed length: weeks, days (24 h), hours, minutes, seconds.

    Years and months have no fixed length, so they are refused: a calendar
    rhythm is a cron expression.
    """
    if not isinstance(text, str):
        raise InvalidSchedule(field, "must be an ISO 8601 duration such as 'PT15M'")
    upper = text.strip().upper()
    match = _DURATION.match(upper)
    if match is None or upper in ("P", "PT") or upper.endswith("T"):
        if re.fullmatch(r"P(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T.*)?", upper) and re.match(
            r"P\d+[YM]|P\d+Y\d+M", upper
        ):
            raise InvalidSchedule(
                field, f"{text!r}: years and months are not fixed lengths; use a cron spec"
            )
        raise InvalidSchedule(field, f"{text!r} is not an ISO 8601 duration such as 'PT15M'")
    parts = {name: float(value) for name, value in match.groupdict().items() if value}
    return timedelta(**parts)


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
    return value.astimezone(UTC)


def parse_instant_or_wall(text: object, field: str) -> datetime:
    """An ISO 8601 date-time: aware (an instant, returned in UTC) or naive (a wall time)."""
    value = _parse_iso(text, field)
    return value.astimezone(UTC) if value.tzinfo is not None else value


def _parse_iso(text: object, field: str) -> datetime:
    if not isinstance(text, str) or not text.strip():
        raise InvalidSchedule(field, "must be an ISO 8601 date-time such as '2026-12-01T09:00:00Z'")
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
