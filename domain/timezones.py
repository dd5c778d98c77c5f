"""IANA time zones, and the daylight-saving rules that turn wall times into instants.

A wall time is a naive local date-time. In a zone with daylight saving it can
be *normal* (one instant), in a *gap* (it never happens: the clocks jumped over
it) or in a *fold* (it happens twice: the clocks went back over it). PEP 495's
``fold`` tells the two readings apart: for a gap, ``fold=0`` reads the wall
time with the offset in force before the transition; for a fold, ``fold=0`` is
the first copy and ``fold=1`` the second.

Each schedule says what to do about gaps and folds (``DstGap``, ``DstFold``).
The default ``cron`` follows Debian cron: a job whose minute or hour field
starts with ``*`` follows real elapsed time (wall times in a gap do not run,
both copies of a folded time run); any other job runs once (at the first wall
time after its skipped time, in the first copy of a repeated time).
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from domain.errors import InvalidSchedule


class DstGap(enum.StrEnum):
    CRON = "cron"
    SHIFT = "shift"
    NEXT_VALID = "next_valid"
    SKIP = "skip"


class DstFold(enum.StrEnum):
    CRON = "cron"
    FIRST = "first"
    SECOND = "second"
    BOTH = "both"


class Note(enum.StrEnum):
    """Why an instant is not simply the wall time read with its one offset."""

    GAP_SHIFTED = "gap_shifted"  # read with the offset before the jump
    GAP_NEXT_VALID = "gap_next_valid"  # moved to the first wall time after the gap
    FOLD_FIRST = "fold_first"  # the first of two copies of this wall time
    FOLD_SECOND = "fold_second"  # the second of two copies of this wall time


@lru_cache(maxsize=512)
def load_zone(name: str, field: str = "time_zone") -> ZoneInfo:
    """The zone called ``name``, or InvalidSchedule naming ``field``."""
    if not isinstance(name, str) or not name:
        raise InvalidSchedule(field, "must be an IANA zone name such as 'Europe/London'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        likely = suggested_zone(name)
        hint = f"; did you mean {likely!r}?" if likely else ""
        raise InvalidSchedule(field, f"unknown zone {name!r}{hint}") from None


@lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    """Every zone this machine knows, by its name in lower case."""
    return {zone.lower(): zone for zone in available_timezones()}


def suggested_zone(name: str) -> str | None:
    """The known zone a misspelt ``name`` most likely meant (``Europe/Londn`` ->
    ``Europe/London``, ``europe/paris`` -> ``Europe/Paris``), or None."""
    names = _zone_names()
    wanted = name.strip().lower().replace(" ", "_")
    if wanted in names:
        return names[wanted]
    close = difflib.get_close_matches(wanted[:64], names, n=1, cutoff=0.75)
    if close:
        return names[close[0]]
    # A city alone (``london``): the zone named after it.
    cities = {zone.rsplit("/", 1)[-1]: zone for zone in sorted(names, reverse=True)}
    close = difflib.get_close_matches(wanted[:64], cities, n=1, cutoff=0.8)
    return names[cities[close[0]]] if close else None


@dataclass(frozen=True, slots=True)
class Resolved:
    """One instant a wall time resolved to."""

    at: datetime  # aware, UTC
    fold: int
    note: Note | None


def _utc(naive: datetime) -> datetime:
    return naive.replace(tzinfo=UTC)


def transition_at(zone: ZoneInfo, before: datetime, after: datetime) -> datetime:
    """The instant the zone's offset changes, given UTC instants on either side.

    Zones change offset on whole seconds; bisect down to one second.
    """
    low_offset = before.astimezone(zone).utcoffset()
    low, high = before, after
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        middle = middle.replace(microsecond=0)
        if middle <= low:
            middle = low + timedelta(seconds=1)
        if middle.astimezone(zone).utcoffset() == low_offset:
            low = middle
        else:
            high = middle
    return high


def resolve(
    wall: datetime,
    zone: ZoneInfo,
    gap: DstGap,
    fold: DstFold,
    elapsed_time: bool,
) -> tuple[Resolved, ...]:
    """The instants a matched wall time runs at, under the schedule's policy."""
    first = wall.replace(tzinfo=zone)
    second = wall.replace(tzinfo=zone, fold=1)
    before = first.utcoffset()
    after = second.utcoffset()
    assert before is not None and after is not None
    if before == after:
        return (Resolved(_utc(wall - before), 0, None),)
    if before < after:
        # A gap: the clocks jumped forward over this wall time.
        if gap is DstGap.CRON:
            gap = DstGap.SKIP if elapsed_time else DstGap.NEXT_VALID
        if gap is DstGap.SKIP:
            return ()
        if gap is DstGap.SHIFT:
            return (Resolved(_utc(wall - before), 0, Note.GAP_SHIFTED),)
        # NEXT_VALID: the first wall time after the gap is the transition itself.
        at = transition_at(zone, _utc(wall - after), _utc(wall - before))
        return (Resolved(at, 0, Note.GAP_NEXT_VALID),)
    # A fold: the clocks went back, this wall time happens twice.
    if fold is DstFold.CRON:
        fold = DstFold.BOTH if elapsed_time else DstFold.FIRST
    copies: list[Resolved] = []
    if fold in (DstFold.FIRST, DstFold.BOTH):
        copies.append(Resolved(_utc(wall - before), 0, Note.FOLD_FIRST))
    if fold in (DstFold.SECOND, DstFold.BOTH):
        copies.append(Resolved(_utc(wall - after), 1, Note.FOLD_SECOND))
    return tuple(copies)


def wall_of(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive wall time of an instant in a zone (PEP 495 fold kept)."""
    return instant.astimezone(zone).replace(tzinfo=None)


def local(instant: datetime, zone: ZoneInfo) -> datetime:
    """An instant as an aware local time in the zone."""
    return instant.astimezone(zone)
