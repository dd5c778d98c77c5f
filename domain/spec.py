"""When a schedule fires: the three spec kinds and the instants they produce.

- ``cron``: a five-field expression matched against wall times in an IANA
  ``time_zone``; each matched wall time becomes instants by the DST policy.
- ``at``: one instant (written with an offset), or one wall time in a zone
  (resolved by the same DST policy; with ``cron`` it follows the fixed-time
  rule, as a cron job at a fixed time would).
- ``every``: a fixed duration from an anchor (``start_at``, else the instant
  the schedule was created). ``P1D`` is 24 hours, not "daily at this time".

All kinds take ``start_at`` and ``end_at``; both bounds are inclusive.
Instants are aware UTC datetimes; "after" is always strictly after, so asked
at the exact instant of an occurrence the next one is the following one.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.cron import CronExpression
from domain.errors import InvalidSchedule, parse_choice
from domain.timeparse import (
    MAX_DURATION,
    check_instant,
    check_wall,
    format_duration,
    format_instant,
    parse_duration,
    parse_instant,
    parse_instant_or_wall,
)
from domain.timezones import DstFold, DstGap, Note, load_zone, resolve

ONE_DAY = timedelta(days=1)
_EPSILON = timedelta(microseconds=1)
# A zone's offsets are probed a day either side of an instant, read in the zone
# (up to a day away again): within these bounds, that never leaves the calendar.
_FIRST = datetime.min.replace(tzinfo=UTC) + 2 * ONE_DAY
_LAST = datetime.max.replace(tzinfo=UTC) - 2 * ONE_DAY

# ``every`` runs from one second to 366 days: a longer rhythm is a cron or an
# ``at``, and the bound keeps the anchor plus a few intervals (the watchdog's
# grace, the planner's lookahead) far inside what a datetime can hold.
MIN_EVERY = timedelta(seconds=1)
MAX_EVERY = MAX_DURATION


@dataclass(frozen=True)
class DstPolicy:
    gap: DstGap = DstGap.CRON
    fold: DstFold = DstFold.CRON


@dataclass(frozen=True)
class CronSpec:
    cron: CronExpression
    time_zone: str = "UTC"
    start_at: datetime | None = None
    end_at: datetime | None = None

    def __post_init__(self) -> None:
        load_zone(self.time_zone, "spec.time_zone")
        _check_bounds(self.start_at, self.end_at)


@dataclass(frozen=True)
class AtSpec:
    """One run: ``at`` is an aware instant, or a naive wall time in ``time_zone``."""

    at: datetime
    time_zone: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.time_zone is not None:
            load_zone(self.time_zone, "spec.time_zone")
        if self.at.tzinfo is None and self.time_zone is None:
            raise InvalidSchedule("spec.at", "a wall time without an offset needs spec.time_zone")
        if self.at.tzinfo is None:
            check_wall(self.at, "spec.at")
        else:
            check_instant(self.at, "spec.at")
        _check_bounds(self.start_at, self.end_at)


@dataclass(frozen=True)
class EverySpec:
    every: timedelta
    anchor_at: datetime
    time_zone: str | None = None  # only for showing local times
    start_at: datetime | None = None
    end_at: datetime | None = None

    def __post_init__(self) -> None:
        _check_every(self.every)
        if self.anchor_at.tzinfo is None:
            raise ValueError("anchor_at must be aware")
        check_instant(self.anchor_at, "spec.start_at")
        if self.time_zone is not None:
            load_zone(self.time_zone, "spec.time_zone")
        _check_bounds(self.start_at, self.end_at)


@dataclass(frozen=True)
class EveryFromSave:
    """An ``every`` spec written without ``start_at``: it counts from the instant
    the schedule is saved (to the second), which only the save knows."""

    every: timedelta
    time_zone: str | None = None
    end_at: datetime | None = None

    def __post_init__(self) -> None:
        _check_every(self.every)
        if self.time_zone is not None:
            load_zone(self.time_zone, "spec.time_zone")
        _check_bounds(None, self.end_at)

    def anchored(self, saved_at: datetime) -> EverySpec:
        anchor = saved_at.astimezone(UTC).replace(microsecond=0)
        return EverySpec(self.every, anchor, self.time_zone, None, self.end_at)


def _check_every(every: timedelta) -> None:
    if every <= timedelta(0):
        raise InvalidSchedule("spec.every", "must be positive")
    if every < MIN_EVERY or every % timedelta(seconds=1):
        raise InvalidSchedule("spec.every", "must be a whole number of seconds, at least PT1S")
    if every > MAX_EVERY:
        raise InvalidSchedule(
            "spec.every", f"must be at most {format_duration(MAX_EVERY)} (use cron or at)"
        )


ScheduleSpec = CronSpec | AtSpec | EverySpec
# A spec as a user writes it: an ``every`` without ``start_at`` is anchored when saved.
WrittenSpec = ScheduleSpec | EveryFromSave


def saved_spec(spec: WrittenSpec, saved_at: datetime) -> ScheduleSpec:
    """The spec a schedule saved at ``saved_at`` keeps."""
    return spec.anchored(saved_at) if isinstance(spec, EveryFromSave) else spec


def _check_bounds(start_at: datetime | None, end_at: datetime | None) -> None:
    for name, value in (("spec.start_at", start_at), ("spec.end_at", end_at)):
        if value is not None:
            check_instant(value, name)
    if start_at is not None and end_at is not None and end_at < start_at:
        raise InvalidSchedule("spec.end_at", "must not be before spec.start_at")


@dataclass(frozen=True, slots=True)
class Slot:
    """One instant a schedule fires at, with the wall time it came from.

    ``(wall, fold)`` is the slot's business key within its schedule: two
    versions of a schedule never both fire for the same wall time and fold.
    """

    scheduled_at: datetime  # aware, UTC
    wall: datetime  # naive, in the spec's zone (UTC for instants)
    fold: int = 0
    note: Note | None = field(default=None, compare=False)


def spec_zone_name(spec: ScheduleSpec) -> str:
    """The zone a spec's local times are shown in."""
    return spec.time_zone or "UTC"


def slots_after(spec: ScheduleSpec, dst: DstPolicy, after: datetime) -> Iterator[Slot]:
    """Every slot strictly after ``after``, in order of instant, within start/end."""
    if after.tzinfo is None:
        raise ValueError("after must be an aware instant")
    after = after.astimezone(UTC)
    if spec.start_at is not None and spec.start_at > after:
        after = spec.start_at - _EPSILON
    if isinstance(spec, CronSpec):
        slots = _cron_slots(spec, dst, after)
    elif isinstance(spec, EverySpec):
        slots = _every_slots(spec, after)
    else:
        slots = _at_slots(spec, dst, after)
    end_at = spec.end_at
    if end_at is None:
        return slots
    return _until(slots, end_at)


def next_slot(spec: ScheduleSpec, dst: DstPolicy, after: datetime) -> Slot | None:
    """The first slot strictly after ``after``, or None when the spec has ended."""
    return next(slots_after(spec, dst, after), None)


def _until(slots: Iterator[Slot], end_at: datetime) -> Iterator[Slot]:
    for slot in slots:
        if slot.scheduled_at > end_at:
            return
        yield slot


def _every_slots(spec: EverySpec, after: datetime) -> Iterator[Slot]:
    step = spec.every
    anchor = spec.anchor_at.astimezone(UTC)
    k = 0 if after < anchor else (after - anchor) // step + 1
    # A slot beyond the last representable instant (year 9999) does not exist:
    # the iteration ends there instead of raising.
    try:
        at = anchor + step * k
    except OverflowError:
        return
    while True:
        yield Slot(at, at.replace(tzinfo=None))
        try:
            at += step
        except OverflowError:
            return


def _at_slots(spec: AtSpec, dst: DstPolicy, after: datetime) -> Iterator[Slot]:
    if spec.at.tzinfo is not None:
        at = spec.at.astimezone(UTC)
        if at > after:
            yield Slot(at, at.replace(tzinfo=None))
        return
    zone = load_zone(spec.time_zone or "UTC")
    for resolved in resolve(spec.at, zone, dst.gap, dst.fold, elapsed_time=False):
        if resolved.at > after:
            yield Slot(resolved.at, spec.at, resolved.fold, resolved.note)


def _cron_slots(spec: CronSpec, dst: DstPolicy, after: datetime) -> Iterator[Slot]:
    """Resolve matched wall times to instants and yield them in instant order.

    Wall-time order is instant order except for two cases: a gap time read
    with the earlier offset (``shift``) and the second copy of a folded time.
    Those wait in a small heap until the ordinary instants have caught up.
    """
    zone = load_zone(spec.time_zone)
    cron = spec.cron
    gap, fold, elapsed = dst.gap, dst.fold, cron.elapsed_time
    # A wall time earlier than after's own wall time can still fire after it,
    # by as much as the offsets around it differ (a fold's second copy, a
    # shifted gap time): start that much earlier.
    try:
        offset = after.astimezone(zone).utcoffset()
    except OverflowError:
        return  # its local time is past year 9999: no wall time is left
    assert offset is not None
    lookback = timedelta(0)
    for probe in (max(after, _FIRST) - ONE_DAY, min(after, _LAST) + ONE_DAY):
        other = probe.astimezone(zone).utcoffset()
        assert other is not None
        lookback = max(lookback, offset - other)
    start = (after + offset).replace(tzinfo=None) - lookback
    waiting: list[tuple[datetime, int, datetime, Note | None]] = []
    last: datetime | None = None
    for wall in cron.wall_times(start):
        off0 = wall.replace(tzinfo=zone).utcoffset()
        if off0 == wall.replace(tzinfo=zone, fold=1).utcoffset():
            assert off0 is not None
            at = (wall - off0).replace(tzinfo=UTC)
            while waiting and waiting[0][0] <= at:
                w_at, w_fold, w_wall, w_note = heapq.heappop(waiting)
                if w_at > after and w_at != last:
                    last = w_at
                    yield Slot(w_at, w_wall, w_fold, w_note)
            if at > after and at != last:
                last = at
                yield Slot(at, wall)
            continue
        for resolved in resolve(wall, zone, gap, fold, elapsed):
            if resolved.note in (Note.GAP_SHIFTED, Note.FOLD_SECOND):
                heapq.heappush(waiting, (resolved.at, resolved.fold, wall, resolved.note))
                continue
            while waiting and waiting[0][0] <= resolved.at:
                w_at, w_fold, w_wall, w_note = heapq.heappop(waiting)
                if w_at > after and w_at != last:
                    last = w_at
                    yield Slot(w_at, w_wall, w_fold, w_note)
            if resolved.at > after and resolved.at != last:
                last = resolved.at
                yield Slot(resolved.at, wall, resolved.fold, resolved.note)
    while waiting:
        w_at, w_fold, w_wall, w_note = heapq.heappop(waiting)
        if w_at > after and w_at != last:
            last = w_at
            yield Slot(w_at, w_wall, w_fold, w_note)


# --- parsing and printing the JSON form --------------------------------------------


def spec_of(
    *,
    cron: str | None = None,
    at: str | None = None,
    every: str | None = None,
    time_zone: str | None = None,
    start_at: str | None = None,
    end_at: str | None = None,
) -> WrittenSpec:
    """The spec a user wrote, its fields as JSON strings: exactly one of
    ``cron``, ``at`` or ``every``. Every refusal names the field under ``spec``."""
    kinds = [
        kind for kind, value in (("cron", cron), ("at", at), ("every", every)) if value is not None
    ]
    if len(kinds) != 1:
        raise InvalidSchedule(
            "spec",
            "must have exactly one of cron, at or every"
            + (f" (got {', '.join(kinds)})" if kinds else ""),
        )
    start = None if start_at is None else parse_instant(start_at, "spec.start_at")
    end = None if end_at is None else parse_instant(end_at, "spec.end_at")
    if time_zone is not None:
        load_zone(time_zone, "spec.time_zone")
    if cron is not None:
        try:
            expression = CronExpression.parse(cron)
        except InvalidSchedule as error:
            raise error.within("spec" if error.field == "cron" else "spec.cron") from None
        return CronSpec(expression, time_zone or "UTC", start, end)
    if at is not None:
        return AtSpec(parse_instant_or_wall(at, "spec.at"), time_zone, start, end)
    duration = parse_duration(every, "spec.every")
    if start is None:
        return EveryFromSave(duration, time_zone, end)
    return EverySpec(duration, start, time_zone, start, end)


_SPEC_FIELDS = frozenset({"cron", "at", "every", "time_zone", "start_at", "end_at"})


def parse_spec(data: object, *, created_at: datetime) -> ScheduleSpec:
    """A spec from its JSON object (``{"cron": ..., "time_zone": ...}`` and so
    on): a stored one, or one a command line wrote. ``created_at`` anchors an
    ``every`` spec that has no ``start_at``."""
    if not isinstance(data, Mapping):
        raise InvalidSchedule("spec", "must be an object with one of cron, at or every")
    unknown = sorted(set(data) - _SPEC_FIELDS)
    if unknown:
        raise InvalidSchedule(f"spec.{unknown[0]}", "is not a spec field")
    return saved_spec(spec_of(**data), created_at)


def spec_to_dict(spec: ScheduleSpec) -> dict[str, Any]:
    """The JSON form of a spec (the inverse of ``parse_spec``)."""
    data: dict[str, Any]
    if isinstance(spec, CronSpec):
        data = {"cron": spec.cron.source, "time_zone": spec.time_zone}
    elif isinstance(spec, AtSpec):
        at = spec.at
        data = {"at": format_instant(at) if at.tzinfo else at.isoformat(timespec="seconds")}
        if spec.time_zone is not None:
            data["time_zone"] = spec.time_zone
    else:
        data = {"every": format_duration(spec.every), "anchor_at": format_instant(spec.anchor_at)}
        if spec.time_zone is not None:
            data["time_zone"] = spec.time_zone
    if spec.start_at is not None:
        data["start_at"] = format_instant(spec.start_at)
    if spec.end_at is not None:
        data["end_at"] = format_instant(spec.end_at)
    return data


def parse_dst_policy(gap: object = None, fold: object = None) -> DstPolicy:
    """The DST policy from its JSON values (``None`` means the default ``cron``)."""
    return DstPolicy(
        gap=parse_choice(DstGap, gap, DstGap.CRON, "policy.dst_gap"),
        fold=parse_choice(DstFold, fold, DstFold.CRON, "policy.dst_fold"),
    )
