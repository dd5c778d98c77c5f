"""Global secondary indexes that lag their table, as DynamoDB's do.

DynamoDB propagates a table write to its GSIs asynchronously: a Query on a
GSI is eventually consistent only, and an item written, changed or deleted a
moment ago may still be missing from it, or be there as it was. moto updates
its indexes with the write itself. Here each write to an item of a table with
GSIs is seen by them ``lag_s`` later (``IndexLag.delay_s``: a log-normal
with a median of 0.2 s and a tail of seconds, plus 1 ms per write the table
took in the last second, so a burst of writes lags longer, up to 30 s); until
then a Query on any of its GSIs answers from the item's state before the
write (or its absence). An item's writes become visible in order. The
table's own Query and GetItem, and LSIs, see every write at once.

The narrowest seam: ``sim.fastmoto`` hands moto's query code the items of
one key value; for a GSI query it asks ``candidates`` here, which replaces
each item with writes still in flight by the state its index sees now.
A cancelled transaction's writes are never seen (``begin``/``end``).
"""

from __future__ import annotations

import copy
import math
import random
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

MEDIAN_S = 0.2
SIGMA = 1.0  # log-normal: p99 about 2 s, one in 10,000 past 8 s
PER_RECENT_WRITE_S = 0.001
MAX_S = 30.0

Key = tuple[Any, Any]  # (hash value, range value) as moto holds them


class IndexLag:
    def __init__(self, clock: Callable[[], float], seed: int = 7) -> None:
        self.clock = clock
        self.rng = random.Random(f"index-lag-{seed}")
        # table name -> item key -> [(visible at, the item's state then, or None)]
        self.pending: dict[str, dict[Key, deque[tuple[float, Any]]]] = {}
        # table name -> item key -> the state its GSIs see now (while writes are pending)
        self.seen: dict[str, dict[Key, Any]] = {}
        self.recent: dict[str, deque[float]] = {}
        self._transaction: list[tuple[Any, Key, Any, Any]] | None = None
        # GSI queries answered with at least one item as it was, by "<table>/<index>"
        self.stale_answers: Counter[str] = Counter()
        self.max_lag_s = 0.0

    def delay_s(self, table_name: str) -> float:
        now = self.clock()
        recent = self.recent.setdefault(table_name, deque())
        recent.append(now)
        while recent and recent[0] < now - 1.0:
            recent.popleft()
        lag = self.rng.lognormvariate(math.log(MEDIAN_S), SIGMA)
        return min(MAX_S, lag + PER_RECENT_WRITE_S * len(recent))

    # --- writes ---------------------------------------------------------------------------------

    def before_write(self, table: Any, key: Key, stored: Any) -> Any:
        """The item's state before a write (a copy: moto updates items in place), or None
        when the table has no GSI."""
        if not table.global_indexes:
            return None
        return (copy.deepcopy(stored),)

    def written(self, table: Any, key: Key, before: Any, after: Any) -> None:
        """A write to ``key`` happened (``before``: what ``before_write`` returned)."""
        if before is None:
            return
        state = copy.deepcopy(after)
        if self._transaction is not None:
            self._transaction.append((table, key, before[0], state))
            return
        self._record(table.name, key, before[0], state)

    def _record(self, table_name: str, key: Key, before: Any, after: Any) -> None:
        pending = self.pending.setdefault(table_name, {})
        queue = pending.get(key)
        if queue is None:
            queue = pending[key] = deque()
            self.seen.setdefault(table_name, {})[key] = before
        lag = self.delay_s(table_name)
        self.max_lag_s = max(self.max_lag_s, lag)
        at = self.clock() + lag
        if queue and queue[-1][0] > at:
            at = queue[-1][0]  # an item's writes reach its indexes in order
        queue.append((at, after))

    def begin(self) -> None:
        self._transaction = []

    def end(self, committed: bool) -> None:
        writes, self._transaction = self._transaction or [], None
        if not committed:
            return
        for table, key, before, after in writes:
            self._record(table.name, key, before, after)

    # --- queries --------------------------------------------------------------------------------

    def _catch_up(self, table_name: str) -> dict[Key, Any]:
        """The keys whose GSI entries still lag, each with the state the GSIs see now."""
        now = self.clock()
        pending = self.pending.get(table_name, {})
        seen = self.seen.setdefault(table_name, {})
        for key in list(pending):
            queue = pending[key]
            while queue and queue[0][0] <= now:
                seen[key] = queue.popleft()[1]
            if not queue:
                del pending[key]
                del seen[key]
        return seen

    def candidates(
        self, table: Any, index_name: str, attribute: str, value: Any, current: list[Any]
    ) -> list[Any]:
        """The items a GSI query on ``attribute`` = ``value`` sees: ``current`` (moto's,
        up to date) with every item whose writes are in flight replaced by its state then."""
        if index_name not in {i.name for i in table.global_indexes}:
            return current
        seen = self._catch_up(table.name)
        if not seen:
            return current
        found = [i for i in current if (i.hash_key, i.range_key) not in seen]
        stale = len(found) != len(current)
        for state in seen.values():
            held = None if state is None else state.attrs.get(attribute)
            if held is not None and held == value:
                found.append(state)
                stale = True
        if stale:
            self.stale_answers[f"{table.name}/{index_name}"] += 1
        return found
