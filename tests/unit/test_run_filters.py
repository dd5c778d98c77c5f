"""A run listing's filters, read once from the query's text (``RunFilters``)."""

from __future__ import annotations

import pytest

from domain.errors import InvalidSchedule
from service.run_views import InvalidListing, RunFilters


def test_run_filters_are_read_once_and_refused_naming_the_first_bad_one() -> None:
    filters = RunFilters.parse("failed, expired", "trigger", None, None, "oldest", "planned")
    assert {s.value for s in filters.statuses} == {"failed", "expired"}
    assert {k.value for k in filters.kinds} == {"trigger"}
    assert not filters.newest_first and filters.include_planned
    with pytest.raises(InvalidListing, match="status: 'nope' is not one of") as refused:
        RunFilters.parse("nope", "nope", "bad", None)
    assert refused.value.field == "status"
    with pytest.raises(InvalidListing) as refused:
        RunFilters.parse(None, "", None, None)
    assert refused.value.field == "kind" and "an empty name" in str(refused.value)
    with pytest.raises(InvalidSchedule):
        RunFilters.parse(None, None, "yesterday", None)
    with pytest.raises(InvalidListing, match="since: must be before until"):
        RunFilters.parse(None, None, "2026-12-02T00:00:00Z", "2026-12-01T00:00:00Z")


def test_filters_made_directly_are_refused_when_since_is_not_before_until() -> None:
    at = RunFilters.parse(None, None, "2026-12-01T00:00:00Z", None).since
    with pytest.raises(InvalidListing, match="since: must be before until"):
        RunFilters(since=at, until=at)
