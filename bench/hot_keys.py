"""The worst minute for DynamoDB partition keys, computed from the table
definitions and the items the store writes.

DynamoDB gives one partition key (of a table or of a global index) at most
1,000 write units a second. When N schedules fire at the same instant, every
write of their occurrences lands on some key; this module replays the write
pattern of one occurrence with the real item builders (``items``), asks each
table definition which keys every write touches (a sparse index only where
the item has its key attributes), and divides the writes each key receives by
the time the writers need to make them:

- the tick's phases run in at most ``tick_processes`` processes with
  ``requests_in_flight`` requests each, a request taking at least
  ``request_s``: so a phase of ``r`` requests per occurrence lasts at least
  ``N * r / (tick_processes * requests_in_flight / request_s)``. Planning
  reads the HEAD and puts the record (admitted and stamped sent, out of the
  outbox): the HEAD of a steady schedule is not written (``DynamoMaterializer.
  materialize``, then ``advance``); the send itself is a queue request, batched, and
  is not counted, which shortens the phase (a bound above);
- the pass ends by writing its schedules' next slots as plan pages, all of
  one due hour under one key, at most ``page_units_per_s`` a second to a key
  (``plan_pages.write_pages``), a page a request: a key's share lasts the
  longer of its requests at the tick's pace and its units at that rate;
- an intent whose send failed is the pessimistic case (``send_fails``):
  planning also puts its record in the outbox, and dispatch later marks it
  sent (out of the outbox) with one request per occurrence, the outbox
  query's pages not counted;
- the worker's phase (start, finish) writes only the occurrence's own record,
  a key of its own schedule, so its fleet's speed does not concentrate on
  any key; it is given the tick's pace, which overstates it.

    python -m adapters.dynamodb.hot_keys          # the table for 100,000 at 09:00

docs/sizing.md explains the figures; tests/unit/test_hot_keys.py checks them.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from adapters.definitions import OCCURRENCES, TABLES, TableDefinition
from adapters.dynamodb import items as it
from adapters.dynamodb.plan_pages import PAGE_UNITS_PER_S
from domain.run import Run, RunStatus, new_occurrence
from domain.spec import Slot
from service.planning.surge import TICK_RECORD_MIN

WRITE_UNITS_PER_KEY: Final = 1000  # DynamoDB's per-partition-key ceiling
KB: Final = 1024


@dataclass(frozen=True)
class Pace:
    """How fast the writers can go (the assumptions, in one place)."""

    shards: int = 16  # DUETIME_SHARDS: the outbox's partitions
    due_shards: int = 16  # adapters.dynamodb.schedules.DUE_SHARDS: the due index's partitions
    bucket_s: int = 60
    tick_processes: int = 2  # the tick function's reserved concurrency
    requests_in_flight: int = 8  # adapters.dynamodb.tables.CONCURRENCY
    request_s: float = 0.004  # a fast DynamoDB request from Lambda, in-region
    page_units_per_s: float = PAGE_UNITS_PER_S  # the plan pages' pace per key

    @property
    def tick_requests_per_s(self) -> float:
        return self.tick_processes * self.requests_in_flight / self.request_s


def ledger_units_per_s(pace: Pace, api_requests_per_s: float) -> float:
    """The most write units a second one load-ledger key (service/planning/surge.py) can take,
    with every sender on that one key: a tick pass writes one update (one unit: the
    item stays under 1 KB) per second it sent ``TICK_RECORD_MIN`` intents for at
    least, each of which took at least one request of its own to store; an API call
    writes one, and the API stage lets ``api_requests_per_s`` through. A surge's
    claim is one more write a surge, not counted."""
    return pace.tick_requests_per_s / TICK_RECORD_MIN + api_requests_per_s


@dataclass(frozen=True)
class Write:
    """One write of the pattern: a table, its item before and after."""

    phase: str
    table: TableDefinition
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None


def _key_value(item: Mapping[str, Any] | None, *names: str) -> str | None:
    if item is None or not all(name in item for name in names):
        return None
    return "|".join(str(next(iter(item[name].values()))) for name in names)


def _units(item: Mapping[str, Any] | None) -> int:
    """Write units of an item (1 KB each), by the length of its values' text:
    a bound above DynamoDB's own sizes for these items."""
    if not item:
        return 0
    size = sum(len(name) + len(str(value)) for name, value in item.items())
    return max(1, math.ceil(size / KB))


def key_writes(write: Write) -> list[tuple[str, str, int]]:
    """(table or index, partition key value, write units) for one write."""
    table = write.table
    units = max(_units(write.before), _units(write.after))
    pk = _key_value(write.after or write.before, table.partition_key.name)
    assert pk is not None
    found = [(table.logical_id, pk, units)]
    if table.local_indexes:
        raise ValueError(f"{table.logical_id} has a local index: its item collections are capped")
    for index in table.global_indexes:
        names = [index.partition_key.name] + ([index.sort_key.name] if index.sort_key else [])
        old = _key_value(write.before, *names)
        new = _key_value(write.after, *names)
        name = f"{table.logical_id}.{index.name}"
        partition_of = index.partition_key.name
        projected = units if index.projection == "ALL" else 1
        if old is None and new is None:
            continue
        if old != new:
            if old is not None:
                found.append((name, str(_key_value(write.before, partition_of)), projected))
            if new is not None:
                found.append((name, str(_key_value(write.after, partition_of)), projected))
        elif index.projection == "ALL" and write.before != write.after:
            found.append((name, str(_key_value(write.after, partition_of)), projected))
    return found


def occurrence_writes(
    schedule_id: str, at: datetime, pace: Pace, *, send_fails: bool = False
) -> list[Write]:
    """Every write of one occurrence, as the store makes them: its intent
    sent as it is planned, or (``send_fails``) its send failed, so it waits
    in the outbox until dispatch sends it again."""
    shard = zlib.crc32(schedule_id.encode()) % pace.shards
    bucket = int(at.timestamp()) // pace.bucket_s
    run = new_occurrence(
        schedule_id,
        1,
        Slot(at, at.replace(tzinfo=None)),
        bucket=bucket,
        shard=shard,
        materialized_at=at - timedelta(seconds=60),
    )
    retention = timedelta(days=90)
    tomorrow = at + timedelta(days=1)
    # The planner's chain: the record names its schedule's next slot, which
    # the pass's plan pages carry (``page_writes``); the HEAD is not written
    # (``DynamoMaterializer.materialize`` and ``advance``, a steady schedule).
    chain = it.attrs({"next_due": it.iso(tomorrow)})
    # Stored admitted and stamped sent, out of the outbox (``_write_occurrence``).
    stored = replace(run, status=RunStatus.ADMITTED, admitted_at=at, sent_at=at, pending=False)
    running = replace(stored, status=RunStatus.RUNNING, attempts=1, started_at=at)
    done = replace(running, status=RunStatus.SUCCEEDED, finished_at=at)

    def record(r: Run) -> dict[str, Any]:
        return {**it.record_item(r, retention), **chain}

    planned = [Write("plan", OCCURRENCES, None, record(stored))]
    if send_fails:
        # Into the outbox (``_into_outbox``), then out of it (``mark_sent``).
        waiting = replace(stored, sent_at=None, pending=True)
        planned.append(Write("plan", OCCURRENCES, record(stored), record(waiting)))
        later = [Write("dispatch", OCCURRENCES, record(waiting), record(stored))]
    else:
        later = []
    return [
        *planned,
        *later,
        Write("run", OCCURRENCES, record(stored), record(running)),
        Write("run", OCCURRENCES, record(running), record(done)),
    ]


def page_writes(schedules: Sequence[str], at: datetime, pace: Pace) -> list[HotKey]:
    """The plan pages a pass writes for ``schedules`` planned at ``at`` whose
    next slot is a day later: the hottest key's units and how long its
    writes last at the pages' pace."""
    tomorrow = at + timedelta(days=1)
    pages = it.page_items([(tomorrow, sid, 1) for sid in schedules], "t" * 12, timedelta(days=90))
    units: Counter[str] = Counter()
    requests: Counter[str] = Counter()
    for page in pages:
        key = str(it.value(page["pk"]))
        units[key] += it.item_units(page)
        requests[key] += 1
    found = []
    for key, total in units.items():
        seconds = max(1.0, requests[key] / pace.tick_requests_per_s, total / pace.page_units_per_s)
        found.append(HotKey(OCCURRENCES.logical_id, key, "pages", total, seconds, total / seconds))
    return found


# Requests per occurrence in each phase (reads included: they take a slot in
# flight), when the send succeeds and when it fails.
PHASE_REQUESTS: Final = {
    False: {"plan": 2, "run": 3},
    True: {"plan": 3, "dispatch": 1, "run": 3},
}


@dataclass(frozen=True)
class HotKey:
    name: str  # table or "table.index"
    key: str
    phase: str
    units: int  # write units the key receives in the phase
    seconds: float  # the phase's shortest duration
    per_s: float


def worst_minute(
    schedules: int, pace: Pace | None = None, *, send_fails: bool = False
) -> list[HotKey]:
    """Per table or index, the most written partition key of each phase when
    ``schedules`` schedules fire at one instant (and, with ``send_fails``,
    every intent's send fails as it is planned); hottest first.

    Schedules that share their shard and due shard write the same index keys,
    so one of each such group is replayed and its index writes are counted
    once per member; a key that names the schedule itself (its partition of
    a table) is written by that schedule alone.
    """
    pace = pace or Pace()
    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    groups: dict[tuple[int, str], list[str]] = {}
    for n in range(schedules):
        sid = f"sch_{n:016x}"
        signature = (zlib.crc32(sid.encode()) % pace.shards, it.due_shard(sid, pace.due_shards))
        groups.setdefault(signature, []).append(sid)
    counts: Counter[tuple[str, str, str]] = Counter()
    for members in groups.values():
        sid = members[0]
        for write in occurrence_writes(sid, at, pace, send_fails=send_fails):
            for name, key, units in key_writes(write):
                own = sid in key  # a key of this schedule alone
                counts[(write.phase, name, key)] += units if own else units * len(members)
    hottest: dict[tuple[str, str], HotKey] = {}
    members = [sid for group in groups.values() for sid in group]
    for page in page_writes(members, at, pace):
        current = hottest.get((page.phase, page.name))
        if current is None or page.units > current.units:
            hottest[(page.phase, page.name)] = page
    for (phase, name, key), units in counts.items():
        seconds = schedules * PHASE_REQUESTS[send_fails][phase] / pace.tick_requests_per_s
        candidate = HotKey(name, key, phase, units, seconds, units / seconds)
        current = hottest.get((phase, name))
        if current is None or candidate.units > current.units:
            hottest[(phase, name)] = candidate
    return sorted(hottest.values(), key=lambda h: -h.per_s)


def local_indexes() -> list[str]:
    return [f"{t.logical_id}.{i.name}" for t in TABLES for i in t.local_indexes]


def main() -> None:
    schedules = 100_000
    pace = Pace()
    print(
        f"{schedules:,} schedules at one instant; tick: {pace.tick_processes} processes x "
        f"{pace.requests_in_flight} requests in flight x {pace.request_s * 1000:g} ms "
        f"= {pace.tick_requests_per_s:,.0f} requests/s; S = {pace.shards}, "
        f"due shards = {pace.due_shards}"
    )
    header = f"{'send':<7} {'table or index':<22} {'phase':<9} {'units':>7} {'seconds':>8}"
    print(f"{header} {'units/s':>8}")
    for send_fails, send in ((False, "sent"), (True, "failed")):
        for hot in worst_minute(schedules, pace, send_fails=send_fails):
            print(
                f"{send:<7} {hot.name:<22} {hot.phase:<9} {hot.units:>7,} "
                f"{hot.seconds:>8.1f} {hot.per_s:>8.1f}"
            )


if __name__ == "__main__":
    main()
