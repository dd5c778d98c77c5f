"""The at and every kinds, start/end bounds, and the refusals of spec input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice

import pytest

from domain.errors import InvalidSchedule
from domain.spec import (
    DstPolicy,
    EverySpec,
    next_slot,
    parse_dst_policy,
    parse_spec,
    slots_after,
    spec_to_dict,
)

CREATED = datetime(2026, 11, 29, 10, 0, 0, 123456, tzinfo=UTC)


def instants(data: dict[str, object], after: datetime, count: int = 5) -> list[str]:
    spec = parse_spec(data, created_at=CREATED)
    return [
        s.scheduled_at.isoformat() for s in islice(slots_after(spec, DstPolicy(), after), count)
    ]


class TestEvery:
    def test_anchored_at_creation_first_fires_one_interval_later(self) -> None:
        assert instants({"every": "PT15M"}, CREATED, 2) == [
            "2026-11-29T10:15:00+00:00",
            "2026-11-29T10:30:00+00:00",
        ]

    def test_p1d_is_24_hours_not_daily_wall_time(self) -> None:
        # Across New York's fall-back night the local time moves; the UTC step does not.
        data = {"every": "P1D", "start_at": "2026-10-31T13:00:00Z", "time_zone": "America/New_York"}
        assert instants(data, datetime(2026, 10, 30, tzinfo=UTC), 3) == [
            "2026-10-31T13:00:00+00:00",
            "2026-11-01T13:00:00+00:00",
            "2026-11-02T13:00:00+00:00",
        ]

    def test_start_at_is_the_anchor_and_inclusive(self) -> None:
        data = {"every": "PT1S", "start_at": "2026-12-01T00:00:00Z"}
        assert instants(data, CREATED, 2) == [
            "2026-12-01T00:00:00+00:00",
            "2026-12-01T00:00:01+00:00",
        ]

    def test_strictly_after_an_occurrence(self) -> None:
        spec = parse_spec(
            {"every": "PT15M", "start_at": "2026-12-01T00:00:00Z"}, created_at=CREATED
        )
        slot = next_slot(spec, DstPolicy(), datetime(2026, 12, 1, 0, 15, tzinfo=UTC))
        assert slot is not None
        assert slot.scheduled_at.isoformat() == "2026-12-01T00:30:00+00:00"

    def test_end_at_is_inclusive_and_ends_the_series(self) -> None:
        data = {
            "every": "PT1H",
            "start_at": "2026-12-01T00:00:00Z",
            "end_at": "2026-12-01T02:00:00Z",
        }
        assert instants(data, CREATED, 10) == [
            "2026-12-01T00:00:00+00:00",
            "2026-12-01T01:00:00+00:00",
            "2026-12-01T02:00:00+00:00",
        ]

    def test_round_trips_through_its_json_form(self) -> None:
        spec = parse_spec({"every": "PT15M"}, created_at=CREATED)
        assert isinstance(spec, EverySpec)
        assert spec_to_dict(spec) == {"every": "PT15M", "anchor_at": "2026-11-29T10:00:00Z"}


class TestAt:
    def test_instant_with_offset(self) -> None:
        data = {"at": "2026-12-01T10:00:00+01:00"}
        assert instants(data, CREATED) == ["2026-12-01T09:00:00+00:00"]

    def test_instant_in_the_past_never_fires(self) -> None:
        assert instants({"at": "2026-01-01T00:00:00Z"}, CREATED) == []

    def test_strictly_after_its_own_instant(self) -> None:
        at = datetime(2026, 12, 1, 9, tzinfo=UTC)
        assert instants({"at": "2026-12-01T09:00:00Z"}, at) == []

    def test_local_wall_time_in_a_zone(self) -> None:
        data = {"at": "2026-12-01T09:00", "time_zone": "Europe/Berlin"}
        assert instants(data, CREATED) == ["2026-12-01T08:00:00+00:00"]


class TestCronBounds:
    def test_start_and_end_bound_a_cron(self) -> None:
        data = {
            "cron": "0 9 * * *",
            "time_zone": "Europe/London",
            "start_at": "2026-12-02T00:00:00Z",
            "end_at": "2026-12-03T09:00:00Z",
        }
        assert instants(data, CREATED) == [
            "2026-12-02T09:00:00+00:00",
            "2026-12-03T09:00:00+00:00",
        ]


class TestRefusals:
    @pytest.mark.parametrize(
        ("data", "field", "reason"),
        [
            (None, "spec", "must be an object"),
            ({}, "spec", "must have exactly one of cron, at or every"),
            ({"cron": "* * * * *", "every": "PT1M"}, "spec", "got cron, every"),
            ({"cron": "* * * * *", "when": 1}, "spec.when", "is not a spec field"),
            (
                {"cron": "* * * * *", "time_zone": "Mars/Olympus"},
                "spec.time_zone",
                "unknown zone 'Mars/Olympus'",
            ),
            ({"cron": "* * * * *", "time_zone": ""}, "spec.time_zone", "must be an IANA zone name"),
            (
                {"cron": "* * * * *", "time_zone": "../../etc/passwd"},
                "spec.time_zone",
                "unknown zone",
            ),
            ({"every": "PT0S"}, "spec.every", "must be positive"),
            ({"every": "PT0.5S"}, "spec.every", "whole number of seconds"),
            ({"every": "P1M"}, "spec.every", "years and months are not fixed lengths"),
            ({"every": "15 minutes"}, "spec.every", "is not an ISO 8601 duration"),
            ({"every": 15}, "spec.every", "must be an ISO 8601 duration"),
            ({"at": "tomorrow"}, "spec.at", "is not an ISO 8601 date-time"),
            ({"at": "2026-12-01T09:00"}, "spec.at", "needs spec.time_zone"),
            (
                {"at": "2026-12-01T09:00Z", "start_at": "2026-12-01"},
                "spec.start_at",
                "has no offset",
            ),
            (
                {
                    "every": "PT1M",
                    "start_at": "2026-12-02T00:00:00Z",
                    "end_at": "2026-12-01T00:00:00Z",
                },
                "spec.end_at",
                "must not be before spec.start_at",
            ),
        ],
    )
    def test_refused_naming_the_field(self, data: object, field: str, reason: str) -> None:
        with pytest.raises(InvalidSchedule) as caught:
            parse_spec(data, created_at=CREATED)
        assert caught.value.field == field
        assert reason in caught.value.reason

    @pytest.mark.parametrize(
        ("gap", "fold", "field"),
        [
            ("later", None, "policy.dst_gap"),
            (None, "twice", "policy.dst_fold"),
            (1, None, "policy.dst_gap"),
        ],
    )
    def test_dst_policy_refusals(self, gap: object, fold: object, field: str) -> None:
        with pytest.raises(InvalidSchedule) as caught:
            parse_dst_policy(gap, fold)
        assert caught.value.field == field
        assert "is not one of" in caught.value.reason


def test_instants_are_aware_utc() -> None:
    spec = parse_spec({"cron": "0 9 * * *", "time_zone": "Asia/Tokyo"}, created_at=CREATED)
    slot = next_slot(spec, DstPolicy(), CREATED)
    assert slot is not None
    assert slot.scheduled_at.tzinfo is UTC
    assert slot.scheduled_at - CREATED < timedelta(days=1)
    with pytest.raises(ValueError, match="aware"):
        next_slot(spec, DstPolicy(), CREATED.replace(tzinfo=None))
