"""Cron expressions: five fields, validated and iterated here as wall times.

The rules, as Vixie/Debian cron has them:

- fields are minute (0-59), hour (0-23), day of month (1-31), month (1-12 or
  JAN-DEC) and day of week (0-7 or SUN-SAT; both 0 and 7 are Sunday);
- a field is ``*``, a value, a range ``a-b``, a step ``*/n``, ``a-b/n`` or
  ``a/n`` (from a to the end of the field), or a comma list of those;
- names are accepted in any case; the nicknames ``@hourly`` ... ``@yearly``
  stand for their five-field forms;
- ``L`` in the day-of-month field is the last day of the month; ``DOW#n`` in
  the day-of-week field is the n-th such weekday of the month (n = 1..5);
- when both day fields are restricted, a day matches if EITHER matches
  (``0 0 13 * 5`` is "the 13th, and every Friday"); a day field that starts
  with ``*`` counts as unrestricted, so ``0 0 */2 * 1`` needs both.

This module only speaks of wall times (naive local date-times). Turning a wall
time into an instant is the daylight-saving policy's job (``domain.timezones``).

Iteration walks months, then the matching days of a month (computed once per
month and cached), then the matching times of day: it never steps minute by
minute, and it gives up after a horizon of 50 years without a match.
"""

from __future__ import annotations

import calendar
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from domain.errors import InvalidSchedule

# Stop searching after this many years without a match.
HORIZON_YEARS = 50
# Longer than any expression a user writes (every minute listed is 170 characters).
MAX_CRON_CHARS = 255
_DAY_CACHE_LIMIT = 600

NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

# The longest each month can be (February in a leap year).
MONTH_LENGTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    names_start: int = 0


MINUTE = _Field("minute", 0, 59)
HOUR = _Field("hour", 0, 23)
DAY_OF_MONTH = _Field("day_of_month", 1, 31)
MONTH = _Field("month", 1, 12, MONTHS, 1)
DAY_OF_WEEK = _Field("day_of_week", 0, 7, WEEKDAYS, 0)
FIELDS = (MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK)


def _value(field: _Field, text: str) -> int:
    """One value of a field: a number in range, or a name where the field has names."""
    upper = text.upper()
    if upper in field.names:
        return field.names.index(upper) + field.names_start
    if not _is_number(text):
        if field.names:
            raise InvalidSchedule(
                field.name,
                f"{text!r} is not a number or a name ({field.names[0]}-{field.names[-1]})",
            )
        raise InvalidSchedule(field.name, f"{text!r} is not a number")
    value = int(text)
    if not field.low <= value <= field.high:
        raise InvalidSchedule(field.name, f"{value} is outside {field.low}-{field.high}")
    return value


def _is_number(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` and ``int`` also accept other scripts' digits."""
    return 0 < len(text) <= 3 and text.isascii() and text.isdigit()


def _term_values(field: _Field, term: str) -> set[int]:
    """The values one comma-separated term stands for (markers L and # excluded)."""
    if term == "":
        raise InvalidSchedule(field.name, "empty item in a list")
    base, slash, step_text = term.partition("/")
    step = 1
    if slash:
        if not _is_number(step_text):
            raise InvalidSchedule(field.name, f"step {step_text!r} is not a number")
        step = int(step_text)
        if step == 0:
            raise InvalidSchedule(field.name, "step must be at least 1")
    if base == "*":
        low, high = field.low, field.high
    elif "-" in base:
        start_text, _, end_text = base.partition("-")
        low, high = _value(field, start_text), _value(field, end_text)
        if low > high:
            raise InvalidSchedule(field.name, f"range {base} runs backwards")
    else:
        low = _value(field, base)
        # "a/n" runs from a to the end of the field; a bare value is itself.
        high = field.high if slash else low
    return set(range(low, high + 1, step))


def _parse_field(field: _Field, text: str) -> frozenset[int | str]:
    items: set[int | str] = set()
    for term in text.split(","):
        upper = term.upper()
        if field is DAY_OF_MONTH and upper == "L":
            items.add("L")
            continue
        if field is DAY_OF_WEEK and "#" in term:
            day_text, _, nth_text = term.partition("#")
            day = _value(field, day_text) % 7
            if not _is_number(nth_text) or not 1 <= int(nth_text) <= 5:
                raise InvalidSchedule(field.name, f"{term!r}: the n in DOW#n must be 1-5")
            items.add(f"{day}#{int(nth_text)}")
            continue
        if "L" in upper and field in (DAY_OF_MONTH, DAY_OF_WEEK):
            raise InvalidSchedule(
                field.name,
                f"{term!r} is not supported (L alone means the last day of the month, "
                "in the day-of-month field only)",
            )
        if "#" in term:
            raise InvalidSchedule(field.name, f"{term!r}: # is only allowed in day_of_week")
        values = _term_values(field, term)
        if field is DAY_OF_WEEK:
            values = {v % 7 for v in values}
        items.update(values)
    return frozenset(items)


@dataclass(frozen=True)
class CronExpression:
    """A validated five-field cron expression.

    ``source`` is what the user wrote; ``expression`` is its five-field form
    (nicknames expanded). ``elapsed_time`` is Debian cron's test for a job that
    follows real elapsed time: its minute or hour field starts with ``*``.
    """

    source: str
    expression: str
    minutes: frozenset[int | str]
    hours: frozenset[int | str]
    days_of_month: frozenset[int | str]
    months: frozenset[int | str]
    days_of_week: frozenset[int | str]
    elapsed_time: bool
    day_of_month_restricted: bool
    day_of_week_restricted: bool
    _times: tuple[tuple[int, int], ...] = field(default=(), compare=False, repr=False)
    _minutes_of_day: tuple[int, ...] = field(default=(), compare=False, repr=False)
    _day_cache: dict[tuple[int, int], tuple[int, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        times = sorted(
            (h, m)
            for h in self.hours
            for m in self.minutes
            if isinstance(h, int) and isinstance(m, int)
        )
        object.__setattr__(self, "_times", tuple(times))
        object.__setattr__(self, "_minutes_of_day", tuple(h * 60 + m for h, m in times))

    @classmethod
    def parse(cls, source: str) -> CronExpression:
        if not isinstance(source, str) or not source.strip():
            raise InvalidSchedule("cron", "must be a five-field cron expression")
        if len(source) > MAX_CRON_CHARS:
            raise InvalidSchedule("cron", f"must be at most {MAX_CRON_CHARS} characters")
        # Fields are ASCII: digits of other scripts, and separators other than
        # spaces and tabs, are refused rather than read as something else.
        bad = next((c for c in source if not (" " <= c <= "~" or c == "\t")), None)
        if bad is not None:
            raise InvalidSchedule(
                "cron", f"{bad!r} is not allowed: write fields in ASCII, separated by spaces"
            )
        text = " ".join(source.split())
        if text.startswith("@"):
            if text.lower() not in NICKNAMES:
                raise InvalidSchedule(
                    "cron", f"unknown nickname {text!r} (use one of {', '.join(NICKNAMES)})"
                )
            text = NICKNAMES[text.lower()]
        parts = text.split(" ")
        if len(parts) != 5:
            raise InvalidSchedule(
                "cron",
                f"has {len(parts)} fields; expected 5 (minute hour day_of_month month day_of_week)",
            )
        parsed = [_parse_field(field, part) for field, part in zip(FIELDS, parts, strict=True)]
        minutes, hours, doms, months, dows = parsed
        dom_restricted = not parts[2].startswith("*")
        dow_restricted = not parts[4].startswith("*")
        cron = cls(
            source=source,
            expression=text,
            minutes=minutes,
            hours=hours,
            days_of_month=doms,
            months=months,
            days_of_week=dows,
            elapsed_time=parts[0].startswith("*") or parts[1].startswith("*"),
            day_of_month_restricted=dom_restricted,
            day_of_week_restricted=dow_restricted,
        )
        cron._check_can_fire()
        return cron

    @property
    def days_ored(self) -> bool:
        """Both day fields restricted: a day matches if either field matches."""
        return self.day_of_month_restricted and self.day_of_week_restricted

    def _check_can_fire(self) -> None:
        # Only the day-of-month/month pair can rule out every date: when the
        # days are ORed with a restricted weekday, some weekday always comes.
        if self.days_ored or "L" in self.days_of_month:
            return
        numeric = [d for d in self.days_of_month if isinstance(d, int)]
        months = sorted(m for m in self.months if isinstance(m, int))
        if numeric and min(numeric) > max(MONTH_LENGTH[m - 1] for m in months):
            names = ",".join(MONTHS[m - 1] for m in months)
            raise InvalidSchedule(
                "cron",
                f"{self.source!r} never fires: no month in {names} has a day {min(numeric)}",
            )
        # The rare combinations left (a 5th weekday of February and the like)
        # are settled by looking, within the search horizon from 2000.
        if self.first_wall_time_after(datetime(2000, 1, 1)) is None:  # noqa: DTZ001 - a wall time
            raise InvalidSchedule("cron", f"{self.source!r} never fires")

    def wall_times(self, after: datetime) -> Iterator[datetime]:
        """Matching wall times strictly after ``after`` (naive), in order.

        Ends (instead of searching forever) when nothing matches for
        HORIZON_YEARS years.
        """
        if after.tzinfo is not None:
            raise ValueError("wall_times takes a naive wall time")
        times = self._times
        minutes_of_day = self._minutes_of_day
        months = self.months
        year, month = after.year, after.month
        # On the start day, only times after `after` count (every match is on
        # a whole minute, so "after 10:15:xx" means 10:16 or later).
        first_day = (after.year, after.month, after.day)
        cut = bisect_left(minutes_of_day, after.hour * 60 + after.minute + 1)
        last_found = year
        while year - last_found <= HORIZON_YEARS:
            if month in months:
                for day in self._days(year, month):
                    start = 0
                    if (year, month) == first_day[:2]:
                        if day < first_day[2]:
                            continue
                        if day == first_day[2]:
                            start = cut
                    for hour, minute in times[start:]:
                        yield datetime(year, month, day, hour, minute)  # noqa: DTZ001 - a wall time
                    last_found = year
            month += 1
            if month == 13:
                month = 1
                year += 1
                if year > 9999:
                    return

    def _days(self, year: int, month: int) -> tuple[int, ...]:
        """The days of a month that match the day fields (cached per month)."""
        key = (year, month)
        days = self._day_cache.get(key)
        if days is None:
            if len(self._day_cache) > _DAY_CACHE_LIMIT:
                self._day_cache.clear()
            days = tuple(
                d
                for d in range(1, calendar.monthrange(year, month)[1] + 1)
                if self.matches_day(year, month, d)
            )
            self._day_cache[key] = days
        return days

    def first_wall_time_after(self, after: datetime) -> datetime | None:
        return next(self.wall_times(after), None)

    def matches_day(self, year: int, month: int, day: int) -> bool:
        """Whether the date matches the day fields (used to explain a schedule)."""
        weekday = (calendar.weekday(year, month, day) + 1) % 7  # 0 = Sunday
        last = calendar.monthrange(year, month)[1]
        dom = day in self.days_of_month or ("L" in self.days_of_month and day == last)
        nth = (day - 1) // 7 + 1
        dow = weekday in self.days_of_week or f"{weekday}#{nth}" in self.days_of_week
        if self.days_ored:
            return dom or dow
        return dom and dow
