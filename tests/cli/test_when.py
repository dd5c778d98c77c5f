"""The durations and instants typed on the command line, and their refusals."""

from __future__ import annotations

import argparse
from datetime import timedelta

import pytest

from cli.when import duration_arg, interval_arg, parse_span, when_text
from domain.errors import InvalidSchedule
from tests.conftest import utc

NOW = utc("2026-12-01T12:00:00Z")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("15m", 900), ("1h30m", 5400), ("2d", 172_800), ("1w", 604_800),
     ("PT15M", 900), ("p1d", 86_400), (" 1H ", 3600)],
)  # fmt: skip
def test_spans_in_short_and_iso_forms(text: str, seconds: int) -> None:
    assert parse_span(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "soon", "1y", "1h-", "m5", "P1M", "1.5h", "-1h", "1h 30m"])
def test_a_span_that_is_not_one_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(ValueError, match=r"such as|fixed lengths|ISO 8601"):
        parse_span(text)


def test_duration_flags_become_iso_8601() -> None:
    assert duration_arg("90s") == "PT1M30S"
    assert duration_arg("PT15M") == "PT15M"
    assert duration_arg("2d") == "P2D"


@pytest.mark.parametrize("text", ["0s", "PT0S", "ten minutes", "P1M"])
def test_zero_and_unreadable_durations_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration_arg(text)


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2.0), ("500ms", 0.5), ("1m", 60.0)])
def test_intervals(text: str, seconds: float) -> None:
    assert interval_arg(text) == seconds


@pytest.mark.parametrize("text", ["0s", "100ms", "2h", "fast", "-1s"])
def test_intervals_out_of_range_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        interval_arg(text)


@pytest.mark.parametrize(
    ("text", "instant"),
    [("1h", "2026-12-01T11:00:00Z"), ("1h ago", "2026-12-01T11:00:00Z"),
     ("2d", "2026-11-29T12:00:00Z"), ("PT30M", "2026-12-01T11:30:00Z"),
     ("now", "2026-12-01T12:00:00Z"),
     ("2026-11-30T09:00:00+01:00", "2026-11-30T08:00:00Z")],
)  # fmt: skip
def test_since_takes_a_time_ago_or_an_instant(text: str, instant: str) -> None:
    assert when_text(text, NOW, "--since") == instant


@pytest.mark.parametrize("text", ["yesterday", "2026-11-30T09:00:00", "1x", "2026-13-01T00:00Z"])
def test_since_refuses_what_is_neither_with_the_flag_named(text: str) -> None:
    with pytest.raises(InvalidSchedule) as error:
        when_text(text, NOW, "--since")
    assert error.value.field == "--since"
