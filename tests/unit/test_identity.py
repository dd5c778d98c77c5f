"""Occurrence identity: deterministic, URL-safe, and parseable."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from domain.errors import InvalidSchedule
from domain.identity import (
    OccurrenceKey,
    business_key,
    check_schedule_id,
    new_schedule_id,
    occurrence_id,
    parse_occurrence_id,
)


def test_occurrence_id_is_derived_from_the_identity_alone() -> None:
    at = datetime(2026, 12, 1, 14, tzinfo=UTC)
    assert occurrence_id("sch_report", 4, at) == "sch_report.v4.20261201T140000Z"
    assert occurrence_id("sch_report", 4, at) == OccurrenceKey("sch_report", 4, at).occurrence_id
    assert occurrence_id("sch_report", 5, at) != occurrence_id("sch_report", 4, at)


def test_occurrence_id_round_trips_with_microseconds() -> None:
    at = datetime(2026, 12, 1, 14, 0, 0, 250000, tzinfo=UTC)
    text = occurrence_id("sch_x01", 12, at)
    assert text == "sch_x01.v12.20261201T140000.250000Z"
    assert parse_occurrence_id(text) == OccurrenceKey("sch_x01", 12, at)


def test_occurrence_id_is_url_safe() -> None:
    text = occurrence_id(new_schedule_id(), 1, datetime.now(UTC))
    assert re.fullmatch(r"[A-Za-z0-9._~-]+", text)


@pytest.mark.parametrize(
    "bad", ["", "sch_x.v0.20261201T140000Z", "sch_x.v1.2026-12-01", "SCH.v1.20261201T140000Z", "x"]
)
def test_malformed_occurrence_ids_are_refused(bad: str) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        parse_occurrence_id(bad)
    assert caught.value.field == "occurrence_id"


def test_new_schedule_ids_are_valid_and_distinct() -> None:
    ids = {new_schedule_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(check_schedule_id(i) == i for i in ids)
    with pytest.raises(InvalidSchedule):
        check_schedule_id("Bad Id")


def test_business_key_names_the_slot_not_the_version() -> None:
    wall = datetime(2026, 11, 1, 1, 30)
    assert business_key("sch_a", wall, 0) == "sch_a#2026-11-01T01:30:00#0"
    assert business_key("sch_a", wall, 1) != business_key("sch_a", wall, 0)
    with pytest.raises(ValueError, match="naive"):
        business_key("sch_a", wall.replace(tzinfo=UTC), 0)
