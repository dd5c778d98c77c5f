"""A misspelt zone is refused with the zone it most likely meant."""

from __future__ import annotations

import pytest

from domain.errors import InvalidSchedule
from domain.timezones import load_zone, suggested_zone


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("Europe/Londn", "Europe/London"),
        ("europe/paris", "Europe/Paris"),
        ("America/New York", "America/New_York"),
        ("US/Pacifc", "US/Pacific"),
        ("London", "Europe/London"),
        ("tokyo", "Asia/Tokyo"),
    ],
)
def test_a_misspelt_zone_suggests_the_one_meant(typed: str, meant: str) -> None:
    assert suggested_zone(typed) == meant
    with pytest.raises(InvalidSchedule) as refused:
        load_zone(typed, "spec.time_zone")
    assert refused.value.field == "spec.time_zone"
    assert refused.value.reason == f"unknown zone {typed!r}; did you mean {meant!r}?"


@pytest.mark.parametrize("typed", ["Mars/Olympus", "../../etc/passwd", "x"])
def test_nothing_like_a_zone_gets_no_suggestion(typed: str) -> None:
    assert suggested_zone(typed) is None
    with pytest.raises(InvalidSchedule) as refused:
        load_zone(typed, "spec.time_zone")
    assert refused.value.reason == f"unknown zone {typed!r}"
