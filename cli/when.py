"""The instants and durations people type on the command line.

The API takes ISO 8601 (``PT15M``, ``2026-12-01T09:00:00Z``); a terminal is
quicker with ``15m`` and ``1h ago``. These turn one into the other, and refuse
what is neither with a message that shows an example.
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

from domain.errors import InvalidSchedule
from domain.timeparse import format_duration, format_instant, parse_duration, parse_instant

# 90s, 15m, 1h30m, 2d, 1w: whole numbers of these units, largest first.
_SHORT = re.compile(
    r"(?:(?P<w>[0-9]{1,6})w)?(?:(?P<d>[0-9]{1,6})d)?(?:(?P<h>[0-9]{1,6})h)?"
    r"(?:(?P<m>[0-9]{1,6})m)?(?:(?P<s>[0-9]{1,9})s)?",
    re.ASCII,
)
_UNIT_S = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_EXAMPLES = "such as 30s, 15m, 1h30m, 2d or PT15M"


def parse_span(text: str) -> timedelta:
    """``15m``, ``1h30m``, ``2d``, ``1w`` or an ISO 8601 duration (``PT15M``)."""
    cleaned = text.strip().lower()
    match = _SHORT.fullmatch(cleaned) if cleaned else None
    if match is not None and any(match.groupdict().values()):
        seconds = sum(int(v) * _UNIT_S[k] for k, v in match.groupdict().items() if v)
        return timedelta(seconds=seconds)
    if cleaned.startswith("p"):
        try:
            return parse_duration(text.strip(), "duration")
        except InvalidSchedule as error:
            raise ValueError(error.reason) from None
    raise ValueError(f"{text!r} is not a duration {_EXAMPLES}")


def duration_arg(text: str) -> str:
    """An argparse type: a duration as the API takes it (ISO 8601)."""
    try:
        span = parse_span(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if span <= timedelta(0):
        raise argparse.ArgumentTypeError(f"{text!r}: the duration must be longer than zero")
    return format_duration(span)


def interval_arg(text: str) -> float:
    """An argparse type: a polling interval in seconds (``2s``, ``1m``; at least 0.2 s)."""
    match = re.fullmatch(r"\s*([0-9]{1,6}(?:\.[0-9]{1,3})?)\s*(ms|s|m)?\s*", text, re.ASCII)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an interval such as 2s, 500ms or 1m")
    seconds = float(match[1]) * {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[match[2]]
    if not 0.2 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: the interval must be from 200ms to 60m")
    return seconds


def parse_when(text: str, now: datetime, flag: str) -> datetime:
    """An instant: ``now``, a span ago (``1h``, ``2d``, ``PT30M``, optionally
    followed by ``ago``), or ISO 8601 with an offset (``2026-12-01T09:00:00Z``)."""
    cleaned = text.strip().lower().removesuffix("ago").strip()
    if cleaned == "now":
        return now
    if cleaned and (cleaned[0].isdigit() or cleaned.startswith("p")) and "-" not in cleaned:
        try:
            return now - parse_span(cleaned)
        except ValueError as error:
            raise InvalidSchedule(flag, str(error)) from None
    try:
        return parse_instant(text.strip(), flag)
    except InvalidSchedule as error:
        raise InvalidSchedule(
            flag,
            f"{text!r} is neither a time ago ({_EXAMPLES}) nor an instant with an offset "
            "such as 2026-12-01T09:00:00Z",
        ) from error


def when_text(text: str, now: datetime, flag: str) -> str:
    """``parse_when`` as the API's instant text (UTC, ``Z``)."""
    return format_instant(parse_when(text, now, flag))


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


# What `--start none` / `--end none` give: remove the bound.
NO_INSTANT = "none"


def instant_arg(text: str) -> str:
    """An argparse type: an instant as the API takes it (ISO 8601 with an offset,
    or ``now``), or ``none`` (no bound)."""
    cleaned = text.strip()
    if cleaned.lower() == NO_INSTANT:
        return NO_INSTANT
    if cleaned.lower() == "now":
        return format_instant(utc_now())
    try:
        return format_instant(parse_instant(cleaned, "instant"))
    except InvalidSchedule as error:
        raise argparse.ArgumentTypeError(
            f"{error.reason} (an instant such as 2026-12-01T09:00:00Z, now, or none)"
        ) from None
