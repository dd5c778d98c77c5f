"""Daylight saving, zone by zone, around real transitions.

Each class quotes its zone's transitions; assertions are full ISO strings so
the offset is checked, not only the clock reading.
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice

from domain.spec import DstPolicy, parse_dst_policy, parse_spec, slots_after
from domain.timezones import load_zone


def fires(
    expr: str,
    zone: str,
    after: str,
    count: int,
    gap: str | None = None,
    fold: str | None = None,
) -> list[str]:
    """The next `count` occurrences as local ISO strings with offsets."""
    spec = parse_spec({"cron": expr, "time_zone": zone}, created_at=datetime.now(UTC))
    start = datetime.fromisoformat(after)
    tz = load_zone(zone)
    return [
        s.scheduled_at.astimezone(tz).isoformat()
        for s in islice(slots_after(spec, parse_dst_policy(gap, fold), start), count)
    ]


class TestNewYork:
    # America/New_York, 2026:
    #   2026-03-08 07:00Z: 02:00 EST (-05:00) jumps to 03:00 EDT (-04:00); 02:00-02:59 never happen.
    #   2026-11-01 06:00Z: 02:00 EDT (-04:00) falls back to 01:00 EST (-05:00); 01:00-01:59 twice.
    Z = "America/New_York"

    def test_hourly_job_runs_in_both_copies_of_the_repeated_hour(self) -> None:
        assert fires("0 * * * *", self.Z, "2026-11-01T04:30:00+00:00", 4) == [
            "2026-11-01T01:00:00-04:00",
            "2026-11-01T01:00:00-05:00",
            "2026-11-01T02:00:00-05:00",
            "2026-11-01T03:00:00-05:00",
        ]

    def test_fixed_time_job_runs_once_in_the_first_copy(self) -> None:
        assert fires("30 1 * * *", self.Z, "2026-10-31T12:00:00+00:00", 3) == [
            "2026-11-01T01:30:00-04:00",
            "2026-11-02T01:30:00-05:00",
            "2026-11-03T01:30:00-05:00",
        ]

    def test_fixed_time_in_the_gap_runs_at_the_first_valid_time(self) -> None:
        assert fires("30 2 * * *", self.Z, "2026-03-07T12:00:00+00:00", 3) == [
            "2026-03-08T03:00:00-04:00",
            "2026-03-09T02:30:00-04:00",
            "2026-03-10T02:30:00-04:00",
        ]

    def test_elapsed_time_job_skips_the_wall_times_that_do_not_exist(self) -> None:
        assert fires("*/30 * * * *", self.Z, "2026-03-08T06:00:00+00:00", 4) == [
            "2026-03-08T01:30:00-05:00",
            "2026-03-08T03:00:00-04:00",
            "2026-03-08T03:30:00-04:00",
            "2026-03-08T04:00:00-04:00",
        ]
        assert fires("10,40 * * * *", self.Z, "2026-03-08T06:30:00+00:00", 3) == [
            "2026-03-08T01:40:00-05:00",
            "2026-03-08T03:10:00-04:00",
            "2026-03-08T03:40:00-04:00",
        ]

    def test_gap_shift_reads_the_wall_time_with_the_old_offset(self) -> None:
        assert fires("30 2 * * *", self.Z, "2026-03-07T12:00:00+00:00", 2, gap="shift") == [
            "2026-03-08T03:30:00-04:00",
            "2026-03-09T02:30:00-04:00",
        ]

    def test_gap_next_valid_runs_at_the_end_of_the_gap(self) -> None:
        assert fires("30 2 * * *", self.Z, "2026-03-07T12:00:00+00:00", 1, gap="next_valid") == [
            "2026-03-08T03:00:00-04:00",
        ]

    def test_gap_skip_drops_the_day(self) -> None:
        assert fires("30 2 * * *", self.Z, "2026-03-07T12:00:00+00:00", 2, gap="skip") == [
            "2026-03-09T02:30:00-04:00",
            "2026-03-10T02:30:00-04:00",
        ]

    def test_gap_times_that_land_on_one_instant_are_one_occurrence(self) -> None:
        # 02:00 and 02:30 both move to 03:00 EDT, where 03:00 itself also fires.
        assert fires("*/30 * * * *", self.Z, "2026-03-08T06:15:00+00:00", 3, gap="next_valid") == [
            "2026-03-08T01:30:00-05:00",
            "2026-03-08T03:00:00-04:00",
            "2026-03-08T03:30:00-04:00",
        ]

    def test_shifted_gap_times_interleave_in_instant_order(self) -> None:
        # 02:15 shifted is 03:15 EDT, after 03:00 EDT; 02:45 shifted is 03:45 EDT.
        assert fires("15,45 2,3 * * *", self.Z, "2026-03-08T06:00:00+00:00", 4, gap="shift") == [
            "2026-03-08T03:15:00-04:00",
            "2026-03-08T03:45:00-04:00",
            "2026-03-09T02:15:00-04:00",
            "2026-03-09T02:45:00-04:00",
        ]

    def test_fold_policies(self) -> None:
        after = "2026-11-01T04:00:00+00:00"
        assert fires("30 1 * * *", self.Z, after, 1, fold="first") == ["2026-11-01T01:30:00-04:00"]
        assert fires("30 1 * * *", self.Z, after, 1, fold="second") == ["2026-11-01T01:30:00-05:00"]
        assert fires("30 1 * * *", self.Z, after, 3, fold="both") == [
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-02T01:30:00-05:00",
        ]

    def test_second_copies_come_after_every_first_copy(self) -> None:
        assert fires("0,45 1 * * *", self.Z, "2026-11-01T04:00:00+00:00", 4, fold="both") == [
            "2026-11-01T01:00:00-04:00",
            "2026-11-01T01:45:00-04:00",
            "2026-11-01T01:00:00-05:00",
            "2026-11-01T01:45:00-05:00",
        ]

    def test_asked_inside_the_fold_the_second_copies_still_come(self) -> None:
        # After 01:50 EDT, the second copies of earlier wall times are still ahead.
        assert fires("*/20 1 * * *", self.Z, "2026-11-01T05:50:00+00:00", 3, fold="both") == [
            "2026-11-01T01:00:00-05:00",
            "2026-11-01T01:20:00-05:00",
            "2026-11-01T01:40:00-05:00",
        ]

    def test_asked_after_a_shifted_gap_time_it_is_still_ahead(self) -> None:
        # 03:10 EDT: 02:30 shifted (03:30 EDT) has not happened yet.
        assert fires("30 2 * * *", self.Z, "2026-03-08T07:10:00+00:00", 1, gap="shift") == [
            "2026-03-08T03:30:00-04:00"
        ]

    def test_fold_occurrences_have_distinct_business_keys(self) -> None:
        spec = parse_spec({"cron": "30 1 * * *", "time_zone": self.Z}, created_at=datetime.now(UTC))
        after = datetime(2026, 11, 1, 4, tzinfo=UTC)
        first, second = islice(slots_after(spec, parse_dst_policy(None, "both"), after), 2)
        assert (first.wall, first.fold) == (datetime(2026, 11, 1, 1, 30), 0)
        assert (second.wall, second.fold) == (datetime(2026, 11, 1, 1, 30), 1)


class TestLondon:
    # Europe/London, 2026:
    #   2026-03-29 01:00Z: 01:00 GMT (+00:00) jumps to 02:00 BST (+01:00).
    #   2026-10-25 01:00Z: 02:00 BST (+01:00) falls back to 01:00 GMT (+00:00).
    Z = "Europe/London"

    def test_spring_forward(self) -> None:
        assert fires("30 1 * * *", self.Z, "2026-03-28T12:00:00+00:00", 2) == [
            "2026-03-29T02:00:00+01:00",
            "2026-03-30T01:30:00+01:00",
        ]
        assert fires("30 1 * * *", self.Z, "2026-03-28T12:00:00+00:00", 1, gap="shift") == [
            "2026-03-29T02:30:00+01:00"
        ]

    def test_fall_back(self) -> None:
        assert fires("30 1 * * *", self.Z, "2026-10-24T12:00:00+00:00", 2) == [
            "2026-10-25T01:30:00+01:00",
            "2026-10-26T01:30:00+00:00",
        ]
        assert fires("*/30 1 * * *", self.Z, "2026-10-24T23:00:00+00:00", 4) == [
            "2026-10-25T01:00:00+01:00",
            "2026-10-25T01:30:00+01:00",
            "2026-10-25T01:00:00+00:00",
            "2026-10-25T01:30:00+00:00",
        ]

    def test_weekday_report_keeps_its_local_time_across_the_change(self) -> None:
        assert fires("0 9 * * MON-FRI", self.Z, "2026-10-23T00:00:00+00:00", 2) == [
            "2026-10-23T09:00:00+01:00",
            "2026-10-26T09:00:00+00:00",
        ]


class TestLordHowe:
    # Australia/Lord_Howe moves by 30 minutes, 2026:
    #   2026-04-04 15:00Z: 02:00 (+11:00) falls back to 01:30 (+10:30); 01:30-01:59 twice.
    #   2026-10-03 15:30Z: 02:00 (+10:30) jumps to 02:30 (+11:00); 02:00-02:29 never happen.
    Z = "Australia/Lord_Howe"

    def test_half_hour_fold(self) -> None:
        assert fires("45 1 * * *", self.Z, "2026-04-04T00:00:00+00:00", 2) == [
            "2026-04-05T01:45:00+11:00",
            "2026-04-06T01:45:00+10:30",
        ]
        assert fires("45 1 * * *", self.Z, "2026-04-04T00:00:00+00:00", 2, fold="both") == [
            "2026-04-05T01:45:00+11:00",
            "2026-04-05T01:45:00+10:30",
        ]

    def test_half_hour_gap(self) -> None:
        assert fires("15 2 * * *", self.Z, "2026-10-03T00:00:00+00:00", 2) == [
            "2026-10-04T02:30:00+11:00",
            "2026-10-05T02:15:00+11:00",
        ]
        assert fires("15 2 * * *", self.Z, "2026-10-03T00:00:00+00:00", 1, gap="shift") == [
            "2026-10-04T02:45:00+11:00"
        ]
        # 02:45 is after the gap and exists.
        assert fires("45 2 * * *", self.Z, "2026-10-03T00:00:00+00:00", 1) == [
            "2026-10-04T02:45:00+11:00"
        ]


class TestMidnightTransitions:
    # America/Santiago, 2026 (transitions at midnight):
    #   2026-04-05 03:00Z: 24:00 (-03:00) falls back to 23:00 (-04:00) on 04-04; 23:00-23:59 twice.
    #   2026-09-06 04:00Z: 00:00 (-04:00) jumps to 01:00 (-03:00); 00:00-00:59 never happen.
    # America/Havana, 2026:
    #   2026-03-08 05:00Z: 00:00 (-05:00) jumps to 01:00 (-04:00).
    #   2026-11-01 05:00Z: 01:00 (-04:00) falls back to 00:00 (-05:00).

    def test_midnight_job_on_the_day_midnight_does_not_exist(self) -> None:
        assert fires("0 0 * * *", "America/Santiago", "2026-09-05T00:00:00+00:00", 3) == [
            "2026-09-05T00:00:00-04:00",
            "2026-09-06T01:00:00-03:00",
            "2026-09-07T00:00:00-03:00",
        ]
        assert fires("@daily", "America/Santiago", "2026-09-05T12:00:00+00:00", 1, gap="skip") == [
            "2026-09-07T00:00:00-03:00"
        ]

    def test_late_evening_fold_in_santiago(self) -> None:
        assert fires("30 23 * * *", "America/Santiago", "2026-04-04T12:00:00+00:00", 2) == [
            "2026-04-04T23:30:00-03:00",
            "2026-04-05T23:30:00-04:00",
        ]
        assert fires("0 * * * *", "America/Santiago", "2026-04-05T01:30:00+00:00", 3) == [
            "2026-04-04T23:00:00-03:00",
            "2026-04-04T23:00:00-04:00",
            "2026-04-05T00:00:00-04:00",
        ]

    def test_havana_midnight_gap_and_fold(self) -> None:
        assert fires("@daily", "America/Havana", "2026-03-07T12:00:00+00:00", 2) == [
            "2026-03-08T01:00:00-04:00",
            "2026-03-09T00:00:00-04:00",
        ]
        assert fires("@daily", "America/Havana", "2026-10-31T12:00:00+00:00", 2) == [
            "2026-11-01T00:00:00-04:00",
            "2026-11-02T00:00:00-05:00",
        ]
        assert fires(
            "30 0 * * *", "America/Havana", "2026-10-31T12:00:00+00:00", 2, fold="both"
        ) == [
            "2026-11-01T00:30:00-04:00",
            "2026-11-01T00:30:00-05:00",
        ]


class TestApia:
    # Pacific/Apia skipped Friday 2011-12-30 entirely:
    #   2011-12-30 10:00Z: 2011-12-29 24:00 (-10:00) became 2011-12-31 00:00 (+14:00).

    def test_daily_job_on_the_skipped_day_runs_once_at_the_first_valid_time(self) -> None:
        assert fires("0 9 * * *", "Pacific/Apia", "2011-12-28T00:00:00+00:00", 4) == [
            "2011-12-28T09:00:00-10:00",
            "2011-12-29T09:00:00-10:00",
            "2011-12-31T00:00:00+14:00",
            "2011-12-31T09:00:00+14:00",
        ]

    def test_skip_and_elapsed_time_jobs_lose_the_day(self) -> None:
        assert fires("0 9 * * *", "Pacific/Apia", "2011-12-29T20:00:00+00:00", 1, gap="skip") == [
            "2011-12-31T09:00:00+14:00"
        ]
        # 2011-12-29T23:00Z is 13:00 on the 29th, local.
        assert fires("0 */12 * * *", "Pacific/Apia", "2011-12-29T23:00:00+00:00", 2) == [
            "2011-12-31T00:00:00+14:00",
            "2011-12-31T12:00:00+14:00",
        ]

    def test_the_friday_that_never_was_runs_on_saturday_at_midnight(self) -> None:
        assert fires("0 9 * * FRI", "Pacific/Apia", "2011-12-20T00:00:00+00:00", 3) == [
            "2011-12-23T09:00:00-10:00",
            "2011-12-31T00:00:00+14:00",
            "2012-01-06T09:00:00+14:00",
        ]
        assert fires("0 9 * * FRI", "Pacific/Apia", "2011-12-24T00:00:00+00:00", 1, gap="skip") == [
            "2012-01-06T09:00:00+14:00"
        ]


class TestLocalAt:
    def test_local_at_in_a_gap_follows_the_fixed_time_rule(self) -> None:
        spec = parse_spec(
            {"at": "2026-03-08T02:30", "time_zone": "America/New_York"},
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
        (slot,) = slots_after(spec, DstPolicy(), datetime(2026, 1, 1, tzinfo=UTC))
        assert slot.scheduled_at.isoformat() == "2026-03-08T07:00:00+00:00"

    def test_local_at_in_a_fold_runs_in_the_first_copy(self) -> None:
        spec = parse_spec(
            {"at": "2026-11-01T01:30", "time_zone": "America/New_York"},
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
        (slot,) = slots_after(spec, DstPolicy(), datetime(2026, 1, 1, tzinfo=UTC))
        assert slot.scheduled_at.isoformat() == "2026-11-01T05:30:00+00:00"
