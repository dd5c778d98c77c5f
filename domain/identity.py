"""Occurrence identity.

An occurrence is identified by ``(schedule_id, version, scheduled_at)``. Its
``occurrence_id`` is derived from that identity alone, so every process that
computes the same occurrence names it the same way, and it doubles as the
idempotency key a target sees:

    <schedule_id>.v<version>.<scheduled_at as YYYYMMDDTHHMMSS[.ffffff]Z>

for example ``sch_3kq8x2m9.v4.20261201T140000Z``. It uses only URL-safe
characters (letters, digits, ``_``, ``.``) and parses back into its parts.

The *business key* ``(schedule_id, wall time, fold)`` names the slot an
occurrence fills: one per slot, whatever the version.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from domain.errors import InvalidSchedule

SCHEDULE_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_]{2,63}$")
_OCCURRENCE_ID = re.compile(
    r"^(?P<schedule>[a-z0-9][a-z0-9_]{2,63})\.v(?P<version>[1-9][0-9]*)\."
    r"(?P<at>\d{8}T\d{6}(?:\.\d{6})?Z)$"
)
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def new_schedule_id(token: bytes | None = None) -> str:
    """A fresh schedule id: ``sch_`` and 16 characters of lowercase base32."""
    raw = int.from_bytes(token if token is not None else secrets.token_bytes(10), "big")
    chars = []
    for _ in range(16):
        raw, index = divmod(raw, 32)
        chars.append(_ALPHABET[index])
    return "sch_" + "".join(chars)


def check_schedule_id(value: str) -> str:
    if not isinstance(value, str) or not SCHEDULE_ID_PATTERN.match(value):
        raise InvalidSchedule(
            "schedule_id", "must be 3-64 characters: lowercase letters, digits and _"
        )
    return value


@dataclass(frozen=True, order=True)
class OccurrenceKey:
    schedule_id: str
    version: int
    scheduled_at: datetime

    def __post_init__(self) -> None:
        if self.scheduled_at.tzinfo is None:
            raise ValueError("scheduled_at must be aware")
        if self.version < 1:
            raise ValueError("version starts at 1")

    @property
    def occurrence_id(self) -> str:
        return occurrence_id(self.schedule_id, self.version, self.scheduled_at)


@lru_cache(maxsize=4096)
def _compact(instant: datetime) -> str:
    # Cached: the planner names one instant for every schedule due at it (09:00).
    utc = instant.astimezone(UTC)
    text = utc.strftime("%Y%m%dT%H%M%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}"
    return text + "Z"


def occurrence_id(schedule_id: str, version: int, scheduled_at: datetime) -> str:
    """The deterministic id of the occurrence ``(schedule_id, version, scheduled_at)``."""
    return f"{schedule_id}.v{version}{occurrence_id_tail(scheduled_at)}"


def occurrence_id_tail(scheduled_at: datetime) -> str:
    """What follows ``<schedule_id>.v<version>`` in the id of every occurrence at
    ``scheduled_at`` (for stamping many ids for one instant)."""
    if scheduled_at.tzinfo is None:
        raise ValueError("scheduled_at must be aware")
    return "." + _compact(scheduled_at)


def parse_occurrence_id(value: str) -> OccurrenceKey:
    """The identity an occurrence id names, or InvalidSchedule("occurrence_id", ...)."""
    match = _OCCURRENCE_ID.match(value) if isinstance(value, str) else None
    if match is None:
        raise InvalidSchedule(
            "occurrence_id", f"{value!r} is not an occurrence id like 'sch_x.v1.20261201T090000Z'"
        )
    text = match["at"]
    fmt = "%Y%m%dT%H%M%S.%fZ" if "." in text else "%Y%m%dT%H%M%SZ"
    at = datetime.strptime(text, fmt).replace(tzinfo=UTC)
    return OccurrenceKey(match["schedule"], int(match["version"]), at)


def business_key(schedule_id: str, wall: datetime, fold: int) -> str:
    """The slot key ``<schedule_id>#<wall time>#<fold>`` (wall time naive ISO)."""
    return schedule_id + business_key_tail(wall, fold)


def business_key_tail(wall: datetime, fold: int) -> str:
    """What follows the schedule id in the key of every slot at ``wall``, ``fold``."""
    if wall.tzinfo is not None:
        raise ValueError("a business key holds a wall time, which is naive")
    return f"#{wall_text(wall)}#{fold}"


@lru_cache(maxsize=4096)
def utc_text(instant: datetime) -> str:
    """An aware instant as UTC ISO text ending in ``Z``. Cached: every intent
    for 09:00 names it."""
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


@lru_cache(maxsize=4096)
def wall_text(wall: datetime) -> str:
    """A wall time's ISO text. Cached: every schedule due at 09:00 names it."""
    return wall.isoformat()
