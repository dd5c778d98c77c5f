"""Explaining a schedule to a person: the next occurrences, and what to watch out for.

The occurrences come from the same ``slots_after`` the dispatcher uses; this
module only adds words: which DST rule moved or repeated a time, and the
warnings cron users trip over (the day-field OR rule, fixed times that fall in
the hours a zone skips or repeats).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from domain.cron import WEEKDAYS, CronExpression
from domain.spec import CronSpec, DstPolicy, ScheduleSpec, Slot, slots_after, spec_zone_name
from domain.timeparse import format_instant
from domain.timezones import DstFold, DstGap, Note, load_zone, resolve, transition_at

WARNING_HORIZON = timedelta(days=400)


@dataclass(frozen=True)
class ExplainedOccurrence:
    utc: str  # 2026-03-08T07:30:00Z
    local: str  # 2026-03-08T03:30:00-04:00
    wall: str  # 2026-03-08T02:30
    note: str | None

    def to_dict(self) -> dict[str, str | None]:
        return {"utc": self.utc, "local": self.local, "wall": self.wall, "note": self.note}


@dataclass(frozen=True)
class Explanation:
    occurrences: tuple[ExplainedOccurrence, ...]
    warnings: tuple[str, ...]


def explain(spec: ScheduleSpec, dst: DstPolicy, after: datetime, count: int) -> Explanation:
    zone = load_zone(spec_zone_name(spec))
    slots = list(islice(slots_after(spec, dst, after), count))
    occurrences = tuple(_explain_slot(slot, zone) for slot in slots)
    warnings: list[str] = []
    if isinstance(spec, CronSpec):
        warnings.extend(_day_rule_warnings(spec.cron))
        warnings.extend(_dst_warnings(spec, dst, zone, after))
    if not slots:
        warnings.append("no occurrence after this instant (the schedule has ended)")
    return Explanation(occurrences, tuple(warnings))


def _wall_text(wall: datetime) -> str:
    return wall.isoformat(timespec="minutes" if wall.second == 0 else "seconds")


def _explain_slot(slot: Slot, zone: ZoneInfo) -> ExplainedOccurrence:
    local = slot.scheduled_at.astimezone(zone)
    return ExplainedOccurrence(
        utc=format_instant(slot.scheduled_at),
        local=local.isoformat(),
        wall=_wall_text(slot.wall),
        note=_note_text(slot, local),
    )


def slot_note(slot: Slot, zone: ZoneInfo) -> str | None:
    """Why a slot's instant is not simply its wall time read with one offset
    (a DST gap or fold), in words; None for an ordinary slot."""
    return _note_text(slot, slot.scheduled_at.astimezone(zone))


def _note_text(slot: Slot, local: datetime) -> str | None:
    wall = slot.wall.strftime("%H:%M")
    when = local.strftime("%H:%M %Z")
    if slot.note is Note.GAP_SHIFTED:
        return f"{wall} does not exist (clocks jumped forward); read with the old offset: {when}"
    if slot.note is Note.GAP_NEXT_VALID:
        return (
            f"{wall} does not exist (clocks jumped forward); runs at the first valid time, {when}"
        )
    if slot.note is Note.FOLD_FIRST:
        return f"{wall} happens twice (clocks go back); this is the first, {when}"
    if slot.note is Note.FOLD_SECOND:
        return f"{wall} happens twice (clocks go back); this is the second, {when}"
    return None


def _day_rule_warnings(cron: CronExpression) -> list[str]:
    if not cron.days_ored:
        return []
    dom, dow = cron.expression.split(" ")[2], cron.expression.split(" ")[4]
    text = (
        f"fires when the day of month is {dom} OR the weekday is {dow}: when both day "
        "fields are restricted, cron ORs them"
    )
    if 13 in cron.days_of_month and 5 in cron.days_of_week:
        text += "; Friday the 13th is not expressible in cron"
    elif cron.days_of_week:
        example = sorted(d for d in cron.days_of_week if isinstance(d, int))
        if example:
            text += f" (so it also fires on every {WEEKDAYS[example[0]].title()})"
    return [text]


def _transitions(zone: ZoneInfo, start: datetime, end: datetime) -> list[datetime]:
    """The instants in [start, end) at which the zone's offset changes."""
    found: list[datetime] = []
    step = timedelta(days=1)
    at = start
    previous = at.astimezone(zone).utcoffset()
    while at < end:
        following = at + step
        offset = following.astimezone(zone).utcoffset()
        if offset != previous:
            found.append(transition_at(zone, at, following))
        previous = offset
        at = following
    return found


def _dst_warnings(spec: CronSpec, dst: DstPolicy, zone: ZoneInfo, after: datetime) -> list[str]:
    warnings: list[str] = []
    after = after.astimezone(UTC)
    for moment in _transitions(zone, after, after + WARNING_HORIZON):
        before = (moment - timedelta(seconds=1)).astimezone(zone).utcoffset()
        later = moment.astimezone(zone).utcoffset()
        assert before is not None and later is not None
        # The wall times the transition skips or repeats.
        low = (moment + min(before, later)).replace(tzinfo=None)
        high = (moment + max(before, later)).replace(tzinfo=None)
        walls = []
        for wall in spec.cron.wall_times(low - timedelta(seconds=1)):
            if wall >= high:
                break
            walls.append(wall)
        if not walls:
            continue
        shown = ", ".join(w.strftime("%H:%M") for w in walls[:4]) + (
            " ..." if len(walls) > 4 else ""
        )
        day = low.date().isoformat()
        kind = "skips" if later > before else "repeats"
        outcome = resolve(walls[0], zone, dst.gap, dst.fold, spec.cron.elapsed_time)
        if outcome:
            result = " and ".join(r.at.astimezone(zone).strftime("%H:%M %Z") for r in outcome)
            effect = f"{walls[0].strftime('%H:%M')} runs at {result}"
        else:
            effect = f"{walls[0].strftime('%H:%M')} does not run"
        policy = f"dst_gap={dst.gap.value}" if kind == "skips" else f"dst_fold={dst.fold.value}"
        if policy.endswith(DstGap.CRON.value) or policy.endswith(DstFold.CRON.value):
            rule = "elapsed-time" if spec.cron.elapsed_time else "fixed-time"
            policy += f", the {rule} rule"
        warnings.append(
            f"on {day} {spec.time_zone} {kind} {low.strftime('%H:%M')}-{high.strftime('%H:%M')}, "
            f"which holds {shown}; with {policy}, {effect}"
        )
    return warnings
