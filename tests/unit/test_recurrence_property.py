"""The recurrence engine against a brute-force reference.

The reference walks wall-clock minutes one by one, matches them against the
cron fields with its own matcher, and resolves each wall time by trying every
offset near it (so it needs no PEP 495 reasoning): a wall time with no
reading is in a gap, with two readings in a fold. Then it applies the DST
policy as the docs state it. The engine must agree on every instant in a day.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from domain.spec import parse_dst_policy, parse_spec, slots_after

# Each zone with instants at its real transitions (and an ordinary day), so
# most examples straddle a gap or a fold.
CASES = [
    ("America/New_York", datetime(2026, 3, 8, 7, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 11, 1, 6, tzinfo=UTC)),
    ("Europe/London", datetime(2026, 3, 29, 1, tzinfo=UTC)),
    ("Europe/London", datetime(2026, 10, 25, 1, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 4, 4, 15, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 10, 3, 15, 30, tzinfo=UTC)),
    ("America/Santiago", datetime(2026, 4, 5, 3, tzinfo=UTC)),
    ("America/Santiago", datetime(2026, 9, 6, 4, tzinfo=UTC)),
    ("America/Havana", datetime(2026, 3, 8, 5, tzinfo=UTC)),
    ("America/Havana", datetime(2026, 11, 1, 5, tzinfo=UTC)),
    ("Asia/Kolkata", datetime(2026, 6, 15, 12, tzinfo=UTC)),
    ("UTC", datetime(2026, 6, 15, 12, tzinfo=UTC)),
]


def _field(values: range, allow_step: bool = True) -> st.SearchStrategy[str]:
    single = st.sampled_from(list(values)).map(str)
    options = [
        st.just("*"),
        st.lists(single, min_size=1, max_size=3, unique=True).map(",".join),
        st.tuples(st.sampled_from(list(values)), st.sampled_from(list(values))).map(
            lambda ab: f"{min(ab)}-{max(ab)}"
        ),
    ]
    if allow_step:
        options.append(st.integers(2, 30).map(lambda n: f"*/{n}"))
    return st.one_of(*options)


crons = st.tuples(
    _field(range(0, 60)),
    _field(range(0, 24)),
    st.one_of(st.just("*"), _field(range(1, 29), allow_step=False)),
    st.just("*"),
    st.one_of(st.just("*"), _field(range(0, 7), allow_step=False)),
).map(" ".join)


def _values(text: str, low: int, high: int) -> set[int]:
    found: set[int] = set()
    for term in text.split(","):
        if term == "*":
            found.update(range(low, high + 1))
        elif term.startswith("*/"):
            found.update(range(low, high + 1, int(term[2:])))
        elif "-" in term:
            a, b = term.split("-")
            found.update(range(int(a), int(b) + 1))
        else:
            found.add(int(term))
    return found


def _matcher(expr: str) -> Callable[[datetime], bool]:
    minute, hour, dom, month, dow = expr.split()
    minutes, hours = _values(minute, 0, 59), _values(hour, 0, 23)
    months, doms, dows = _values(month, 1, 12), _values(dom, 1, 31), _values(dow, 0, 6)
    ored = not dom.startswith("*") and not dow.startswith("*")

    def matches(wall: datetime) -> bool:
        if wall.minute not in minutes or wall.hour not in hours or wall.month not in months:
            return False
        dom_ok = wall.day in doms
        dow_ok = (wall.isoweekday() % 7) in dows
        return (dom_ok or dow_ok) if ored else (dom_ok and dow_ok)

    return matches


def _readings(wall: datetime, zone: ZoneInfo) -> list[datetime]:
    """Every UTC instant whose local wall time is `wall`."""
    found = set()
    for hours in range(-14 * 4, 15 * 4):
        offset = timedelta(minutes=15 * hours)
        instant = (wall - offset).replace(tzinfo=UTC)
        if instant.astimezone(zone).replace(tzinfo=None, fold=0) == wall:
            found.add(instant)
    return sorted(found)


def _reference(
    expr: str, zone: ZoneInfo, gap: str, fold: str, after: datetime, until: datetime
) -> list[str]:
    elapsed = expr.split()[0].startswith("*") or expr.split()[1].startswith("*")
    start = after.astimezone(zone).replace(tzinfo=None, fold=0) - timedelta(hours=3)
    start = start.replace(second=0, microsecond=0)
    instants: set[datetime] = set()
    matches = _matcher(expr)
    for step in range(27 * 60):
        wall = start + timedelta(minutes=step)
        if not matches(wall):
            continue
        readings = _readings(wall, zone)
        if len(readings) == 1:
            instants.add(readings[0])
        elif len(readings) == 2:
            policy = fold if fold != "cron" else ("both" if elapsed else "first")
            if policy in ("first", "both"):
                instants.add(readings[0])
            if policy in ("second", "both"):
                instants.add(readings[1])
        else:
            policy = gap if gap != "cron" else ("skip" if elapsed else "next_valid")
            if policy == "next_valid":
                later = wall
                while not _readings(later, zone):
                    later += timedelta(minutes=1)
                instants.add(_readings(later, zone)[0])
            elif policy == "shift":
                earlier = wall
                while not _readings(earlier, zone):
                    earlier -= timedelta(minutes=1)
                offset = _readings(earlier, zone)[-1].astimezone(zone).utcoffset()
                assert offset is not None
                instants.add((wall - offset).replace(tzinfo=UTC))
    return [i.isoformat() for i in sorted(instants) if after < i <= until]


@example("10,40 * * * *", CASES[0], -120, "cron", "cron")
@example("30 2 * * *", CASES[0], -120, "shift", "cron")
@example("45 1 * * *", CASES[1], -90, "cron", "both")
@example("*/20 1 * * *", CASES[1], -30, "cron", "cron")
@example("15 2 * * 0", CASES[5], -60, "next_valid", "cron")
@example("0 0 * * *", CASES[7], -60, "cron", "cron")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    expr=crons,
    case=st.sampled_from(CASES),
    shift_minutes=st.integers(-240, 120),
    gap=st.sampled_from(["cron", "shift", "next_valid", "skip"]),
    fold=st.sampled_from(["cron", "first", "second", "both"]),
)
def test_engine_agrees_with_brute_force(
    expr: str, case: tuple[str, datetime], shift_minutes: int, gap: str, fold: str
) -> None:
    zone_name, anchor = case
    zone = ZoneInfo(zone_name)
    after = anchor + timedelta(minutes=shift_minutes)
    until = after + timedelta(hours=20)
    spec = parse_spec({"cron": expr, "time_zone": zone_name}, created_at=after)
    ours = []
    for slot in slots_after(spec, parse_dst_policy(gap, fold), after):
        if slot.scheduled_at > until:
            break
        ours.append(slot.scheduled_at.isoformat())
    assert ours == _reference(expr, zone, gap, fold, after, until)
