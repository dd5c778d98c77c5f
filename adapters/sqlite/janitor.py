"""Retention for the one-machine store: the janitor pass and its setting.

The SQLite store keeps one row per occurrence (about half a kilobyte with its
indexes, docs/sizing.md), so an every-second schedule adds some 45 MB a day. A
janitor pass removes what no promise needs any more:

- finished runs scheduled more than the retention ago (the AWS tables expire
  theirs by TTL after the same 90 days by default), batched, never anything
  waiting, admitted, running or retrying (``SqliteRetention.purge_history``);
- dead letters that died more than the retention ago (``SqliteQueue.purge_dead``);
- the watchdog verdicts of deleted schedules;
- command targets' output logs last written more than the retention ago
  (``logs``, adapters/targets/command.py), so a run's log goes with its record.

Freed pages are reused by SQLite's own free list, so once the retention holds
the file stops growing (bench/growth.py).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from adapters.sqlite.queue import SqliteQueue
    from adapters.sqlite.store import SqliteStore
    from service.ports import Clock

DEFAULT_RETENTION: Final = timedelta(days=90)  # as the AWS tables' TTL
MIN_RETENTION: Final = timedelta(hours=1)
MAX_RETENTION: Final = timedelta(days=3650)
# How often the local stack runs a pass.
JANITOR_INTERVAL_S: Final = 300.0
_UNITS: Final = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_retention(text: str) -> timedelta:
    """``90d``, ``2w``, ``36h`` or ``90m``: how long finished history is kept."""
    match = re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"--retention takes a whole number and a unit (m, h, d, w) such as 90d, 7d "
            f"or 36h (got {text!r})"
        )
    retention = timedelta(seconds=int(match[1]) * _UNITS[match[2]])
    if not MIN_RETENTION <= retention <= MAX_RETENTION:
        raise argparse.ArgumentTypeError(
            f"--retention must be between 1h and 3650d (got {text.strip()!r})"
        )
    return retention


class _Pacer:
    """Between purge batches, a pause four times as long as the batch took (at
    least 5 ms): a long purge (a first pass over months of history) takes at
    most a fifth of the write lock's time, and a waiting tick gets in between."""

    def __init__(self, sleep: Callable[[float], None] = time.sleep) -> None:
        self._sleep = sleep
        self._since: float | None = None

    def reset(self) -> None:
        """A new pass: the first batch is measured from here."""
        self._since = time.perf_counter()

    def __call__(self) -> None:
        now = time.perf_counter()
        took = 0.0 if self._since is None else now - self._since
        self._sleep(max(0.005, 4 * min(took, 0.25)))
        self._since = time.perf_counter()


@dataclass(frozen=True)
class JanitorReport:
    runs: int
    dead_letters: int
    heartbeats: int
    logs: int = 0


class Janitor:
    """One pass over the store and the queue; the local stack runs it every few minutes."""

    def __init__(
        self,
        store: SqliteStore,
        queue: SqliteQueue,
        clock: Clock,
        retention: timedelta = DEFAULT_RETENTION,
        *,
        between_batches: Callable[[], None] | None = None,
        logs: Path | None = None,
    ) -> None:
        if not MIN_RETENTION <= retention <= MAX_RETENTION:
            raise ValueError("retention must be between 1 hour and 3650 days")
        self.store = store
        self.queue = queue
        self.clock = clock
        self.retention = retention
        self.between_batches = between_batches or _Pacer()
        self.logs = logs

    def run_once(self) -> JanitorReport:
        from service.alerts import ALERT_PREFIX
        from service.watchdog import ACK_PREFIX, WATCH_PREFIX

        if isinstance(self.between_batches, _Pacer):
            self.between_batches.reset()
        now = self.clock.now()
        before = now - self.retention
        runs = self.store.retention.purge_history(before, between_batches=self.between_batches)
        dead = self.queue.purge_dead(before)
        beats = self.store.leases.purge_orphan_heartbeats(WATCH_PREFIX)
        beats += self.store.leases.purge_orphan_heartbeats(ACK_PREFIX)
        beats += self.store.leases.purge_orphan_heartbeats(ALERT_PREFIX)
        logs = 0 if self.logs is None else purge_logs(self.logs, before)
        return JanitorReport(runs, dead, beats, logs)


def purge_logs(root: Path, before: datetime) -> int:
    """Remove the files under ``root`` last written before ``before``; how many went."""
    if not root.is_dir():
        return 0
    cutoff = before.timestamp()
    removed = 0
    for path in root.rglob("*.log"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed
