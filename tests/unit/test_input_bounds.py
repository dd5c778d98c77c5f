"""The domain refuses what it cannot compute with, whichever entry point calls it.

Instants lie in [1970-01-01T00:00:00Z, 2200-01-01T00:00:00Z); durations are at
most 366 days; ``every`` runs from one second to 366 days; cron text and
durations are ASCII; free text holds no control characters or lone surrogates.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice

import pytest

from domain.cron import CronExpression
from domain.errors import InvalidSchedule
from domain.schedule import check_name, parse_policy
from domain.spec import AtSpec, CronSpec, DstPolicy, EverySpec, parse_spec, slots_after
from domain.text import check_text
from domain.timeparse import (
    MAX_DURATION,
    MAX_INSTANT,
    MIN_INSTANT,
    parse_duration,
    parse_instant,
    parse_instant_or_wall,
)

CREATED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "9999-12-31T23:59:59Z",
        "2200-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
        "0001-01-01T00:00:00+01:00",  # out of datetime's range once in UTC
        "9999-12-31T23:59:59-01:00",
        "2026-12-01T09:00:00Z" + " " * 100,  # longer than any date-time
        "\u0662\u0660\u0662\u0666-12-01T09:00:00Z",
    ],
)
def test_an_instant_outside_the_bounds_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_instant(text, "spec.start_at")
    assert refused.value.field == "spec.start_at"


def test_the_bounds_are_inclusive_below_and_exclusive_above() -> None:
    assert parse_instant("1970-01-01T00:00:00Z", "x") == MIN_INSTANT
    assert parse_instant("2199-12-31T23:59:59.999999Z", "x") < MAX_INSTANT
    assert parse_instant("1970-01-01T01:00:00+01:00", "x") == MIN_INSTANT


@pytest.mark.parametrize("text", ["9999-12-31T23:59:59", "1970-01-01T05:00:00", "2199-12-31T00:00"])
def test_a_wall_time_that_could_leave_the_bounds_in_some_zone_is_refused(text: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_instant_or_wall(text, "spec.at")
    assert refused.value.field == "spec.at"


@pytest.mark.parametrize(
    "text",
    [
        "P1000000D",
        "P99999999D",
        "PT1000000000000000000000S",
        "P367D",
        "P53W",
        "PT8785H",
        "PT\u0661\u0665M",  # Arabic-Indic digits: float() reads them, a user never means them
        "PT1.5555555S",  # more than microseconds
        "P1D" + " " * 100,
    ],
)
def test_a_duration_beyond_the_bound_or_not_ascii_is_refused_not_an_overflow(text: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_duration(text, "spec.every")
    assert refused.value.field == "spec.every"


def test_durations_are_computed_exactly_up_to_the_bound() -> None:
    assert parse_duration("P366D", "x") == MAX_DURATION
    assert parse_duration("P52WT23H59M59.999999S", "x") == timedelta(
        weeks=52, hours=23, minutes=59, seconds=59, microseconds=999999
    )
    assert parse_duration("PT0.5S", "x") == timedelta(milliseconds=500)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"at": "9999-12-31T23:59:59Z"}, "spec.at"),
        ({"every": "PT60S", "start_at": "9999-12-31T23:59:59Z"}, "spec.start_at"),
        ({"every": "P1000000D"}, "spec.every"),
        ({"every": "P367D"}, "spec.every"),
        ({"cron": "0 9 * * *", "end_at": "2200-01-01T00:00:00Z"}, "spec.end_at"),
    ],
)
def test_a_spec_beyond_the_bounds_is_refused_by_parse_spec(
    data: dict[str, str], field: str
) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_spec(data, created_at=CREATED)
    assert refused.value.field == field


def test_spec_values_built_directly_are_refused_too() -> None:
    far = datetime(9999, 12, 31, tzinfo=UTC)
    cron = CronExpression.parse("0 9 * * *")
    with pytest.raises(InvalidSchedule, match=r"^spec.at:"):
        AtSpec(far)
    with pytest.raises(InvalidSchedule, match=r"^spec.every:"):
        EverySpec(timedelta(days=1_000_000), CREATED)
    with pytest.raises(InvalidSchedule, match=r"^spec.start_at:"):
        EverySpec(timedelta(seconds=60), far)
    with pytest.raises(InvalidSchedule, match=r"^spec.end_at:"):
        CronSpec(cron, end_at=far)


def test_the_latest_accepted_spec_can_still_be_planned_for_years() -> None:
    spec = parse_spec({"every": "P366D", "start_at": "2199-12-31T23:59:59Z"}, created_at=CREATED)
    slots = list(islice(slots_after(spec, DstPolicy(), CREATED), 3))
    assert [slot.scheduled_at.year for slot in slots] == [2199, 2201, 2202]
    cron = parse_spec(
        {"cron": "0 0 29 2 *", "start_at": "2199-12-31T00:00:00Z"}, created_at=CREATED
    )
    assert next(slots_after(cron, DstPolicy(), CREATED)).scheduled_at.year == 2204


@pytest.mark.parametrize(
    "source",
    [
        "\u0661 * * * *",  # ARABIC-INDIC DIGIT ONE, read as 1 by int()
        "\uff11 * * * *",  # FULLWIDTH DIGIT ONE
        "*/\u0665 * * * *",
        "0 9 * * MON#\u0661",
        "0\u00a09 * * *",  # a no-break space is not a separator
        "0 9 * * *\x00",
        "0 9 * * *" + " " * 300,
    ],
)
def test_cron_text_that_is_not_plain_ascii_is_refused(source: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        CronExpression.parse(source)
    assert refused.value.field.startswith("cron") or refused.value.field in {
        "minute",
        "day_of_week",
    }


def test_a_cron_field_with_a_non_ascii_digit_is_refused_through_the_spec() -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_spec({"cron": "\u0661 * * * *"}, created_at=CREATED)
    assert refused.value.field == "spec.cron"


@pytest.mark.parametrize(
    "name",
    ["a\x00b", "\x1b[2Jcleared", "line\r\nforged", "tab\there", "del\x7f", "c1\x85", "\ud800"],
)
def test_a_name_with_control_characters_or_a_lone_surrogate_is_refused(name: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        check_name(name)
    assert refused.value.field == "name"
    assert "U+" in refused.value.reason


def test_free_text_in_any_script_is_accepted() -> None:
    for text in ("sales report", "Ünïcode", "日本語のレポート", "emoji \U0001f600", "a\u00a0b"):
        assert check_text(text, "name") == text


def test_policy_durations_beyond_the_bound_are_refused_naming_the_field() -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_policy({"grace": "PT1000000000000000000000S"})
    assert refused.value.field == "policy.grace"
