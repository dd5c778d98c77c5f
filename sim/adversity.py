"""Which of AWS's weaker promises a simulation keeps: each on by default, each can be turned off.

Every scenario runs with AWS as it documents itself, not stronger: an index
that lags its table, invocations delivered at least once (not exactly once),
transactions that conflict, partitions that throttle, TTL deletions hours
late, the SQS in-flight cap and message size, API Gateway's 29 s. Each is
one name here; ``python -m sim <scenario> --without index-lag`` runs without
one (``--without all``: none), to show what it changes. docs/simulator.md
lists each with the AWS statement it models.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# The names ``--without`` takes, each a field of ``Adversities``.
NAMES = {
    "index-lag": "index_lag",
    "at-least-once": "at_least_once",
    "transaction-conflicts": "transaction_conflicts",
    "partition-throttling": "partition_throttling",
    "ttl-lag": "ttl_lag",
    "sqs-limits": "sqs_limits",
    "api-timeout": "api_timeout",
}


@dataclass(frozen=True)
class Adversities:
    index_lag: bool = True
    at_least_once: bool = True
    transaction_conflicts: bool = True
    partition_throttling: bool = True
    ttl_lag: bool = True
    sqs_limits: bool = True
    api_timeout: bool = True

    def on(self) -> list[str]:
        return [name for name, attribute in NAMES.items() if getattr(self, attribute)]


NONE = Adversities(**{attribute: False for attribute in NAMES.values()})


def without(names: list[str]) -> Adversities:
    """Every adversity but ``names`` (``all``: none). An unknown name is refused by name."""
    if "all" in names:
        return NONE
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        raise ValueError(
            f"--without: unknown adversity {', '.join(unknown)} "
            f"(known: {', '.join(sorted(NAMES))}, all)"
        )
    return dataclasses.replace(Adversities(), **{NAMES[name]: False for name in names})
