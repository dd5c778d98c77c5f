"""How long to wait before the next attempt: exponential backoff, full jitter.

Counting: ``attempt`` is the number of attempts already made, so it is 1 when
the first attempt has just failed. Before attempt ``n + 1`` the run waits

    uniform(0, min(cap_s, base_s * 2 ** n))

seconds, drawn from an injected ``random.Random`` so that a seed gives the
same delays every time. With ``base_s=5`` and ``cap_s=900`` the ceilings are
10, 20, 40, 80, ... seconds, and 900 from the eighth failure on.

Full jitter spreads the retries of many runs that failed together (a target
that was down for a minute) over the whole window instead of sending them
back in waves.

When the target asked for a pause (``Retry-After``), the delay is never less
than that pause, even above ``cap_s``. Every delay is at most 12 hours
(``MAX_DELAY_S``). The run stores when its next attempt may start; on SQS the
wait is a chain of delayed messages (adapters/sqs_worker.py).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Final

from domain.errors import InvalidSchedule

# The longest a retry is put off (SQS's maximum visibility timeout, where it began).
MAX_DELAY_S: Final = 43_200.0
MAX_ATTEMPTS_LIMIT: Final = 20


def retry_delay_s(
    attempt: int,
    base_s: float,
    cap_s: float,
    rng: random.Random,
    retry_after_s: float | None = None,
) -> float:
    """Seconds to wait after ``attempt`` attempts have failed (``attempt`` >= 1).

    ``uniform(0, min(cap_s, base_s * 2 ** attempt))``, raised to
    ``retry_after_s`` when that is larger, and never above ``MAX_DELAY_S``.
    """
    if attempt < 1:
        raise ValueError(f"attempt counts attempts already made and starts at 1, not {attempt}")
    if not (base_s > 0 and math.isfinite(base_s)):
        raise ValueError(f"base_s must be a positive number, not {base_s}")
    if not (cap_s >= base_s and math.isfinite(cap_s)):
        raise ValueError(f"cap_s must be a number >= base_s, not {cap_s}")
    try:
        ceiling = min(cap_s, math.ldexp(base_s, attempt))
    except OverflowError:
        ceiling = cap_s
    delay = rng.uniform(0.0, ceiling)
    if retry_after_s is not None and math.isfinite(retry_after_s):
        delay = max(delay, retry_after_s)
    return min(max(delay, 0.0), MAX_DELAY_S)


def visibility_timeout_s(delay_s: float) -> int:
    """A delay as an SQS visibility timeout: whole seconds, rounded up, 0..43200."""
    return min(math.ceil(max(delay_s, 0.0)), int(MAX_DELAY_S))


@dataclass(frozen=True)
class RetryPolicy:
    """How a schedule's runs retry a transient failure.

    ``max_attempts`` counts every attempt, the first included: 1 means never
    retry. After the last attempt, the run fails. The API reads it from a
    schedule's ``policy.retry`` (``domain.schedule``), where base and cap are
    durations.
    """

    max_attempts: int = 5
    base_s: float = 1.0
    cap_s: float = 30.0

    def __post_init__(self) -> None:
        field = "policy.retry"
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise InvalidSchedule(f"{field}.max_attempts", "must be a whole number")
        if not 1 <= self.max_attempts <= MAX_ATTEMPTS_LIMIT:
            raise InvalidSchedule(
                f"{field}.max_attempts",
                f"must be 1-{MAX_ATTEMPTS_LIMIT}, not {self.max_attempts}",
            )
        for name in ("base_s", "cap_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidSchedule(f"{field}.{name}", "must be a number of seconds")
            if not math.isfinite(value):
                raise InvalidSchedule(f"{field}.{name}", "must be a finite number of seconds")
        if self.base_s <= 0:
            raise InvalidSchedule(f"{field}.base_s", f"must be more than 0, not {self.base_s}")
        if self.cap_s < self.base_s:
            raise InvalidSchedule(
                f"{field}.cap_s", f"must be at least base_s ({self.base_s:g}), not {self.cap_s:g}"
            )
        if self.cap_s > MAX_DELAY_S:
            raise InvalidSchedule(
                f"{field}.cap_s",
                f"must be at most {MAX_DELAY_S:g} (12 hours, the SQS visibility limit)",
            )

    def allows_another(self, attempts_made: int) -> bool:
        """Whether a transient failure of attempt ``attempts_made`` is retried."""
        return attempts_made < self.max_attempts

    def delay_s(
        self, attempts_made: int, rng: random.Random, retry_after_s: float | None = None
    ) -> float:
        """The wait before attempt ``attempts_made + 1``; see ``retry_delay_s``."""
        return retry_delay_s(attempts_made, self.base_s, self.cap_s, rng, retry_after_s)
