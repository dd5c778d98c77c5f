"""Retry delays: exponential backoff with full jitter, from an injected random source."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.backoff import (
    MAX_DELAY_S,
    RetryPolicy,
    retry_delay_s,
    visibility_timeout_s,
)
from domain.errors import InvalidSchedule

# Computed once with random.Random(20260401), base 5 s, cap 900 s, attempts
# 1..10, and written down: if the formula or the way it draws from the random
# source changes, this list stops matching and the change has to be deliberate.
SEEDED_DELAYS = [
    8.758461104711037,
    15.791639591270979,
    9.493393745394702,
    2.5902701752966095,
    126.90327899354754,
    195.1607356875471,
    245.1509204338185,
    190.46793172987825,
    474.3455325172515,
    377.5821029841522,
]


def test_a_seed_gives_the_same_delays_every_time() -> None:
    rng = random.Random(20260401)

    delays = [retry_delay_s(attempt, 5.0, 900.0, rng) for attempt in range(1, 11)]

    assert delays == pytest.approx(SEEDED_DELAYS, rel=1e-12)


def test_the_policy_draws_the_same_delays_as_the_function() -> None:
    policy = RetryPolicy(max_attempts=11, base_s=5.0, cap_s=900.0)
    rng = random.Random(20260401)

    assert [policy.delay_s(n, rng) for n in range(1, 11)] == pytest.approx(SEEDED_DELAYS)


def test_the_window_doubles_with_each_attempt_until_the_cap() -> None:
    # A source that always draws the top of the window shows the ceilings.
    class Top(random.Random):
        def random(self) -> float:
            return 1.0

    ceilings = [retry_delay_s(n, 5.0, 100.0, Top()) for n in range(1, 7)]

    assert ceilings == [10.0, 20.0, 40.0, 80.0, 100.0, 100.0]


@given(
    attempt=st.integers(min_value=1, max_value=5000),
    base_s=st.floats(min_value=0.001, max_value=3600.0),
    extra_s=st.floats(min_value=0.0, max_value=40000.0),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_a_delay_never_exceeds_the_cap(
    attempt: int, base_s: float, extra_s: float, seed: int
) -> None:
    cap_s = min(base_s + extra_s, MAX_DELAY_S)

    delay = retry_delay_s(attempt, base_s, cap_s, random.Random(seed))

    assert 0.0 <= delay <= cap_s


@given(
    attempt=st.integers(min_value=1, max_value=30),
    retry_after_s=st.floats(min_value=0.0, max_value=10 * MAX_DELAY_S),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_retry_after_is_honoured_up_to_the_sqs_limit(
    attempt: int, retry_after_s: float, seed: int
) -> None:
    delay = retry_delay_s(attempt, 1.0, 60.0, random.Random(seed), retry_after_s=retry_after_s)

    assert delay >= min(retry_after_s, MAX_DELAY_S)
    assert delay <= max(60.0, min(retry_after_s, MAX_DELAY_S))
    assert delay <= MAX_DELAY_S


def test_retry_after_above_the_cap_wins_over_the_cap() -> None:
    delay = retry_delay_s(1, 1.0, 10.0, random.Random(1), retry_after_s=120.0)

    assert delay == 120.0


def test_retry_after_beyond_twelve_hours_is_cut_to_the_sqs_limit() -> None:
    delay = retry_delay_s(1, 1.0, 10.0, random.Random(1), retry_after_s=86_400.0)

    assert delay == MAX_DELAY_S


def test_a_short_retry_after_does_not_shorten_the_backoff() -> None:
    drawn = retry_delay_s(3, 10.0, 900.0, random.Random(7))

    assert retry_delay_s(3, 10.0, 900.0, random.Random(7), retry_after_s=0.5) == max(drawn, 0.5)


def test_attempt_counts_from_one() -> None:
    with pytest.raises(ValueError, match="starts at 1"):
        retry_delay_s(0, 1.0, 10.0, random.Random(1))


def test_visibility_timeout_rounds_up_and_stays_within_sqs_limits() -> None:
    assert visibility_timeout_s(0.0) == 0
    assert visibility_timeout_s(0.2) == 1
    assert visibility_timeout_s(12.0) == 12
    assert visibility_timeout_s(MAX_DELAY_S + 5) == 43_200


def test_max_attempts_counts_the_first_attempt() -> None:
    policy = RetryPolicy(max_attempts=3, base_s=1.0, cap_s=10.0)

    assert [policy.allows_another(n) for n in (1, 2, 3)] == [True, True, False]
    assert RetryPolicy(max_attempts=1, base_s=1.0, cap_s=1.0).allows_another(1) is False


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_attempts": 0}, "policy.retry.max_attempts"),
        ({"max_attempts": 21}, "policy.retry.max_attempts"),
        ({"max_attempts": 2.5}, "policy.retry.max_attempts"),
        ({"max_attempts": True}, "policy.retry.max_attempts"),
        ({"base_s": 0}, "policy.retry.base_s"),
        ({"base_s": -1.0}, "policy.retry.base_s"),
        ({"base_s": float("nan")}, "policy.retry.base_s"),
        ({"base_s": "5"}, "policy.retry.base_s"),
        ({"base_s": 10.0, "cap_s": 5.0}, "policy.retry.cap_s"),
        ({"cap_s": 43_201.0}, "policy.retry.cap_s"),
        ({"cap_s": float("inf")}, "policy.retry.cap_s"),
    ],
)
def test_a_bad_retry_policy_is_refused_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        RetryPolicy(**kwargs)

    assert refused.value.field == field
    assert str(refused.value).startswith(f"{field}: ")


def test_the_limits_themselves_are_allowed() -> None:
    RetryPolicy(max_attempts=1, base_s=0.001, cap_s=0.001)
    RetryPolicy(max_attempts=20, base_s=1.0, cap_s=43_200.0)
