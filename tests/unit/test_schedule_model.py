"""The schedule model: policy parsing and its refusals, partitions."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import InvalidSchedule
from domain.partition import Partitioning, bucket_of, shard_of
from domain.schedule import (
    Overdue,
    Overlap,
    parse_policy,
    policy_to_dict,
)

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_policy_defaults_are_latest_only_allow_all_and_five_quick_retries() -> None:
    policy = parse_policy(None)
    assert policy.overdue is Overdue.LATEST_ONLY and policy.overlap is Overlap.ALLOW_ALL
    assert (policy.retry.max_attempts, policy.retry.base_s, policy.retry.cap_s) == (5, 1.0, 30.0)
    assert policy.run_timeout == timedelta(minutes=15)
    assert parse_policy(policy_to_dict(policy)) == policy


def test_a_full_policy_round_trips() -> None:
    data = {
        "overdue": "expire",
        "catchup_window": "PT1H",
        "dst_gap": "shift",
        "dst_fold": "both",
        "overlap": "skip",
        "retry": {"max_attempts": 3, "base": "PT2S", "cap": "PT1M"},
        "run_timeout": "PT5M",
        "grace": "PT10M",
    }
    policy = parse_policy(data)
    assert policy_to_dict(policy) == data


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"overdue": "sometimes"}, "policy.overdue"),
        ({"overdue": "expire"}, "policy.catchup_window"),
        ({"catchup_window": "PT1H"}, "policy.catchup_window"),
        ({"overdue": "expire", "catchup_window": "soon"}, "policy.catchup_window"),
        ({"overlap": 3}, "policy.overlap"),
        ({"dst_fold": "twice"}, "policy.dst_fold"),
        ({"retry": {"max_attempts": 0}}, "policy.retry.max_attempts"),
        ({"retry": {"base": "PT1M", "cap": "PT1S"}}, "policy.retry.cap"),
        ({"retry": {"jitter": True}}, "policy.retry.jitter"),
        ({"run_timeout": "P2D"}, "policy.run_timeout"),
        ({"colour": "blue"}, "policy.colour"),
        ("fast", "policy"),
    ],
)
def test_bad_policies_are_refused_naming_the_field(data: object, field: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_policy(data)
    assert refused.value.field == field


def test_shards_are_stable_and_buckets_floor_the_instant() -> None:
    assert shard_of("sch_report", 16) == zlib.crc32(b"sch_report") % 16
    assert {shard_of(f"sch_{i:04d}", 16) for i in range(200)} == set(range(16))
    assert bucket_of(datetime(1970, 1, 1, 0, 1, 59, tzinfo=UTC), 60) == 1
    assert bucket_of(datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), 60) == -1


def test_a_late_occurrence_is_placed_at_its_materialization() -> None:
    parts = Partitioning(shards=4, bucket_s=60)
    scheduled = NOW - timedelta(hours=6)
    assert parts.placement(scheduled, NOW) == parts.bucket(NOW)
