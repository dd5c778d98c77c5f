"""Cron expressions: what they accept, what they refuse, and the seed cases."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice

import pytest

from domain.cron import CronExpression
from domain.errors import InvalidSchedule
from domain.spec import DstPolicy, next_slot, parse_spec, slots_after


def utc_fires(expr: str, after: str, count: int) -> list[str]:
    spec = parse_spec({"cron": expr}, created_at=datetime.now(UTC))
    start = datetime.fromisoformat(after)
    return [
        s.scheduled_at.isoformat() for s in islice(slots_after(spec, DstPolicy(), start), count)
    ]


class TestSeedCases:
    def test_day_fields_are_ored_when_both_are_restricted(self) -> None:
        # November 2026 has a Friday the 13th: it fires on it once, and on every
        # other Friday.
        fired = utc_fires("0 0 13 * 5", "2026-11-01T00:00:00+00:00", 6)
        assert fired == [
            "2026-11-06T00:00:00+00:00",  # Friday the 6th
            "2026-11-13T00:00:00+00:00",  # Friday the 13th
            "2026-11-20T00:00:00+00:00",
            "2026-11-27T00:00:00+00:00",
            "2026-12-04T00:00:00+00:00",
            "2026-12-11T00:00:00+00:00",
        ]

    def test_or_rule_on_a_monday_13th_and_a_friday_17th(self) -> None:
        # April 2026: Monday the 13th, Tuesday the 14th, Friday the 17th.
        fired = utc_fires("0 0 13 * 5", "2026-04-12T00:00:00+00:00", 2)
        assert fired == ["2026-04-13T00:00:00+00:00", "2026-04-17T00:00:00+00:00"]
        assert "2026-04-14T00:00:00+00:00" not in utc_fires(
            "0 0 13 * 5", "2026-04-01T00:00:00+00:00", 10
        )

    def test_friday_the_13th(self) -> None:
        # February 2026 has a Friday the 13th; March 2026 too.
        assert "2026-02-13T00:00:00+00:00" in utc_fires(
            "0 0 13 * 5", "2026-02-01T00:00:00+00:00", 3
        )

    def test_star_prefixed_day_field_makes_the_days_anded(self) -> None:
        # Odd days of the month that are also Mondays.
        fired = utc_fires("0 0 */2 * 1", "2026-11-01T00:00:00+00:00", 3)
        assert fired == [
            "2026-11-09T00:00:00+00:00",
            "2026-11-23T00:00:00+00:00",
            "2026-12-07T00:00:00+00:00",
        ]

    def test_every_monday_at_0630(self) -> None:
        assert utc_fires("30 6 * * 1", "2026-11-29T00:00:00+00:00", 3) == [
            "2026-11-30T06:30:00+00:00",
            "2026-12-07T06:30:00+00:00",
            "2026-12-14T06:30:00+00:00",
        ]

    def test_next_is_strictly_after_an_occurrence(self) -> None:
        spec = parse_spec({"cron": "30 6 * * 1"}, created_at=datetime.now(UTC))
        at = datetime(2026, 11, 30, 6, 30, tzinfo=UTC)
        following = next_slot(spec, DstPolicy(), at)
        assert following is not None
        assert following.scheduled_at.isoformat() == "2026-12-07T06:30:00+00:00"


class TestSyntax:
    @pytest.mark.parametrize(
        ("expr", "after", "expected"),
        [
            ("*/15 * * * *", "2026-11-29T10:07:00+00:00", "2026-11-29T10:15:00+00:00"),
            ("10-50/20 * * * *", "2026-11-29T10:31:00+00:00", "2026-11-29T10:50:00+00:00"),
            ("5/20 * * * *", "2026-11-29T10:26:00+00:00", "2026-11-29T10:45:00+00:00"),
            ("0 0 * * sun", "2026-11-29T00:00:00+00:00", "2026-12-06T00:00:00+00:00"),
            ("0 0 * * 7", "2026-11-29T00:00:00+00:00", "2026-12-06T00:00:00+00:00"),
            ("0 0 * * 0", "2026-11-29T00:00:00+00:00", "2026-12-06T00:00:00+00:00"),
            ("0 0 1 jan-Mar *", "2026-11-29T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
            ("0 0 L * *", "2027-02-01T00:00:00+00:00", "2027-02-28T00:00:00+00:00"),
            ("0 0 L 2 *", "2027-03-01T00:00:00+00:00", "2028-02-29T00:00:00+00:00"),
            ("0 0 * * FRI#2", "2026-11-29T00:00:00+00:00", "2026-12-11T00:00:00+00:00"),
            ("0 0 * * 1#5", "2026-11-29T00:00:00+00:00", "2026-11-30T00:00:00+00:00"),
            ("@yearly", "2026-11-29T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
            ("@annually", "2026-11-29T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
            ("@monthly", "2026-11-29T00:00:00+00:00", "2026-12-01T00:00:00+00:00"),
            ("@weekly", "2026-11-29T00:00:00+00:00", "2026-12-06T00:00:00+00:00"),
            ("@daily", "2026-11-29T00:00:00+00:00", "2026-11-30T00:00:00+00:00"),
            ("@midnight", "2026-11-29T00:00:00+00:00", "2026-11-30T00:00:00+00:00"),
            ("@HOURLY", "2026-11-29T00:00:00+00:00", "2026-11-29T01:00:00+00:00"),
            ("0 0 29 2 *", "2026-11-29T00:00:00+00:00", "2028-02-29T00:00:00+00:00"),
            ("0 9 * * 1-5", "2026-11-27T09:00:00+00:00", "2026-11-30T09:00:00+00:00"),
        ],
    )
    def test_accepted_forms(self, expr: str, after: str, expected: str) -> None:
        assert utc_fires(expr, after, 1) == [expected]

    def test_elapsed_time_flag_follows_debian(self) -> None:
        assert CronExpression.parse("*/5 9 * * *").elapsed_time
        assert CronExpression.parse("0 * * * *").elapsed_time
        assert CronExpression.parse("@hourly").elapsed_time
        assert not CronExpression.parse("30 1 * * *").elapsed_time
        assert not CronExpression.parse("0 1-5 * * *").elapsed_time


class TestRefusals:
    @pytest.mark.parametrize(
        ("expr", "message"),
        [
            ("61 * * * *", "minute: 61 is outside 0-59"),
            ("* 24 * * *", "hour: 24 is outside 0-23"),
            ("* * 0 * *", "day_of_month: 0 is outside 1-31"),
            ("* * 32 * *", "day_of_month: 32 is outside 1-31"),
            ("* * * 13 *", "month: 13 is outside 1-12"),
            ("* * * * 8", "day_of_week: 8 is outside 0-7"),
            ("* * * FOO *", "month: 'FOO' is not a number or a name (JAN-DEC)"),
            ("* * * * MONDAY", "day_of_week: 'MONDAY' is not a number or a name (SUN-SAT)"),
            ("x * * * *", "minute: 'x' is not a number"),
            ("5-2 * * * *", "minute: range 5-2 runs backwards"),
            ("*/0 * * * *", "minute: step must be at least 1"),
            ("*/x * * * *", "minute: step 'x' is not a number"),
            ("1,,2 * * * *", "minute: empty item in a list"),
            ("* * * *", "cron: has 4 fields; expected 5"),
            ("* * * * * *", "cron: has 6 fields; expected 5"),
            ("", "cron: must be a five-field cron expression"),
            ("@sometimes", "cron: unknown nickname '@sometimes'"),
            ("0 0 * * MON#6", "day_of_week: 'MON#6': the n in DOW#n must be 1-5"),
            ("0 0 1#2 * *", "day_of_month: '1#2': # is only allowed in day_of_week"),
            ("0 0 * * 5L", "day_of_week: '5L' is not supported"),
            ("0 0 LW * *", "day_of_month: 'LW' is not supported"),
            ("0 0 30 2 *", "cron: '0 0 30 2 *' never fires: no month in FEB has a day 30"),
            ("0 0 31 4,6,9,11 *", "never fires: no month in APR,JUN,SEP,NOV has a day 31"),
        ],
    )
    def test_refused_with_the_field_and_the_reason(self, expr: str, message: str) -> None:
        with pytest.raises(InvalidSchedule) as caught:
            CronExpression.parse(expr)
        assert message in str(caught.value)

    def test_never_firing_rare_combination_is_checked_by_search(self) -> None:
        # The 5th Monday of February happens (2044); the 30th of February never.
        assert CronExpression.parse("0 0 * 2 MON#5").first_wall_time_after(
            datetime(2026, 11, 29)
        ) == datetime(2044, 2, 29)

    def test_iteration_ends_at_the_search_horizon(self) -> None:
        # The 5th Monday of February comes every few decades; near the end of
        # the calendar the search stops instead of looping.
        cron = CronExpression.parse("0 0 * 2 MON#5")
        assert list(cron.wall_times(datetime(9990, 1, 1))) == []

    def test_spec_level_errors_name_the_spec_field(self) -> None:
        with pytest.raises(InvalidSchedule) as caught:
            parse_spec({"cron": "61 * * * *"}, created_at=datetime.now(UTC))
        assert caught.value.field == "spec.cron.minute"
        assert str(caught.value) == "spec.cron.minute: 61 is outside 0-59"
        with pytest.raises(InvalidSchedule) as caught:
            parse_spec({"cron": "* * * *"}, created_at=datetime.now(UTC))
        assert caught.value.field == "spec.cron"
