"""Writes that met a transaction on the same item are tried again, a few times, with jitter.

DynamoDB refuses a plain write (PutItem, UpdateItem, DeleteItem) to an item
that a ``TransactWriteItems`` is changing at that moment with
``TransactionConflictException``, and cancels a transaction that meets another
one (or a plain write) with ``TransactionCanceledException`` whose reason is
``TransactionConflict``. Neither changed anything, so sending the same
request again is safe, conditional writes included: the condition is checked
again on the item as it is then.

botocore's ``standard`` (and ``adaptive``) retry mode does not retry either:
its throttling list names ``TransactionInProgressException`` (an idempotent
transaction token still in use), not a conflict, and a conflict is an HTTP
400. So a tick's plain write that met an API edit's transaction failed the
whole pass. ``retry_conflicts`` adds the one missing rule to a client: its
``needs-retry`` handler answers a conflict with a full-jitter delay, at most
``CONFLICT_ATTEMPTS`` sends in all; every other error is left to the
configured retry mode. The store's transactions use ``conflict_delay_s``
between their own attempts (adapters/dynamodb/tables.py, ``_transact``).
"""

from __future__ import annotations

import random
from typing import Any, Final

# Sends of one request in all, the first included: the last retry waits up to
# 0.32 s, and about 0.6 s are spent waiting at most, for a conflict that lasts
# as long as one transaction (tens of milliseconds).
CONFLICT_ATTEMPTS: Final = 6
CONFLICT_BASE_S: Final = 0.01
TRANSACTION_CONFLICT: Final = "TransactionConflictException"

_rng = random.Random()


def conflict_delay_s(attempt: int, rng: random.Random = _rng) -> float:
    """Full jitter after the ``attempt``-th send (1-based): uniform(0, base * 2**attempt)."""
    return rng.uniform(0.0, CONFLICT_BASE_S * 2**attempt)


def retry_on_conflict(
    *, attempts: int, response: Any = None, caught_exception: Any = None, **_: Any
) -> float | None:
    """A ``needs-retry`` handler: the delay before sending again, or None to leave
    the decision to the client's retry mode."""
    if caught_exception is not None or response is None or attempts >= CONFLICT_ATTEMPTS:
        return None
    parsed = response[1] if isinstance(response, tuple) and len(response) > 1 else None
    if not isinstance(parsed, dict):
        return None
    if parsed.get("Error", {}).get("Code") != TRANSACTION_CONFLICT:
        return None
    return conflict_delay_s(attempts)


def retry_conflicts(client: Any) -> Any:
    """``client`` (a DynamoDB client) with conflicts retried; returned for chaining."""
    client.meta.events.register("needs-retry.dynamodb", retry_on_conflict)
    return client
