"""The AWS store: schedules, occurrences, leases and heartbeats in three DynamoDB tables.

The run records and the leases and heartbeats are ports of their own
(run_records.py, leases.py, over tables.py), which ``DynamoStore`` inherits;
the schedules and their planning are here.

Every identity rule is a condition expression on the write that applies it,
never a read followed by a blind write:

- create: the HEAD, version 1 and the idempotency record are put together,
  each on ``attribute_not_exists``;
- edit: the HEAD update (conditioned on the version read, ``next_due`` and
  not deleted) and the put of the new version item, in one transaction;
- an occurrence: one conditional put of its record, keyed by schedule and
  instant (``attribute_not_exists``), which refuses a second write of it and
  another version's occurrence at that instant; a slot whose wall time
  another instant may hold (only within a day of an edit that changed the
  zone) is first looked up by its business key (see items);
- materialize: a consistent read of the HEAD (nothing is written for a
  schedule that moved), the occurrences, then the HEAD's advance conditioned
  on version, ``next_due`` and active. Refused, it withdraws the occurrences
  it wrote (deleted unless a dispatcher changed them in between).

The outbox index is sparse and KEYS_ONLY: a record is in it while it has
``outbox_key`` and ``pending_shard``, which it gets when stored (and again
when a user retries it: ``DynamoRunStore.retry``) and loses when ``mark_sent``
or a closure removes them; admission does not touch it. A record stored
admitted by ``materialize_sending`` is not put in it: its intent is sent
before its schedule's HEAD advances, and only a failed send puts it there
(a crash before the advance leaves the slot to be planned, found and sent
again). Index
reads are eventually consistent; the records they lead to are
read consistently, every decision taken on them is re-checked by a conditional
write, and the dispatcher only moves a checkpoint past buckets that closed a
bucket width plus a safety margin ago.

Page tokens are base64 JSON of the next query's ExclusiveStartKey.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from botocore.exceptions import ClientError

from adapters.dynamodb import items as it
from adapters.dynamodb.conflicts import retry_conflicts
from adapters.dynamodb.leases import DynamoLeases
from adapters.dynamodb.run_records import HISTORY_RETENTION, DynamoRunRecords, zone_changed_at
from adapters.dynamodb.tables import CONCURRENCY as CONCURRENCY
from adapters.dynamodb.tables import (
    DynamoTables,
    _failed_condition,
    _token,
    _untoken,
    client_config,
)
from adapters.dynamodb.tables import TableNames as TableNames
from adapters.dynamodb.tables import TableSettings as TableSettings
from adapters.sealing import HeaderSeal
from domain.run import Run
from domain.schedule import (
    Quarantine,
    QuarantineComponent,
    Schedule,
    ScheduleVersion,
    quarantine_to_text,
)
from service.ports import (
    DueSchedule,
    Materialization,
    MaterializeOutcome,
    Page,
    Store,
)

# A long materialization (a backlog) advances the HEAD after every this many
# occurrences, so a crash halfway redoes at most one chunk.
OCCURRENCES_PER_ADVANCE: Final = 49
# How many partitions of the "due" index the HEADs spread over. A deployment
# constant: every writer and reader of one table must use the same value.
DUE_SHARDS: Final = 16
# Versions kept decoded in memory (immutable once written; bounded, so a
# tick's memory does not grow with the number of schedules).
VERSION_CACHE_SIZE: Final = 4096

# The leases table item that holds how far planning has read the plan pages,
# and the plan lease: the one pass that plans, for at most this long (longer
# than the tick function's timeout, so no holder outlives it).
PLAN_CURSOR: Final = "C#plan"
PLAN_LEASE: Final = timedelta(seconds=120)
# How a schedule stands for planning (``DynamoStore._head_mode``): its HEAD
# names the next slot (a seed), or its newest planned record does (its chain).
_SEED: Final = "seed"
_CHAIN: Final = "chain"
# A pass writes the next slots its chain carries as plan pages (see items),
# at most this many write units a second to one page partition (DynamoDB's
# ceiling for a key is 1,000; half is left for the estimate of a page's size).
# With no cursor yet, the pages of this long before the horizon are read.
PAGE_UNITS_PER_S: Final = 500
PAGE_REACH: Final = timedelta(days=1)
# A pages' read costs a query per due hour it spans, from the cursor: a pass
# takes the plan lease (and so moves the cursor) when the cursor is this far
# behind, even with nothing to plan, so an idle deployment's read stays short.
PAGE_STALE: Final = timedelta(hours=1)
# A record expires the history retention after its slot (TTL), and takes the
# ``next_due`` it names (what ``get`` shows of a chain) with it: a next slot
# later than that, less this margin (an outage of the tick, TTL's own delay),
# stays on the HEAD.
CHAIN_TTL_MARGIN: Final = timedelta(days=7)

_log = logging.getLogger("duetime")


@dataclass
class _Stored:
    """What one chunk of a materialization stored: the occurrences this call
    wrote, the runs whose intents to send, and the ids of those sent."""

    written: list[Run] = field(default_factory=list)
    to_send: list[Run] = field(default_factory=list)
    sent: set[str] = field(default_factory=set)
    # The HEAD is to be advanced after the chunk (False: the chain carries on,
    # on a plan page, and the HEAD is not written).
    advance: bool = True
    # A seed handed to its chain: the next slot, written on a plan page
    # before the HEAD leaves the ``due`` index.
    page: tuple[datetime, str, int] | None = None

    @property
    def inserted(self) -> tuple[str, ...]:
        return tuple(run.occurrence_id for run in self.written)


class DynamoStore(DynamoRunRecords, DynamoLeases, Store):
    """Schedules, occurrences and leases over a DynamoDB client (low-level API)."""

    def __init__(
        self,
        client: Any,
        tables: TableNames,
        *,
        due_shards: int = DUE_SHARDS,
        history_retention: timedelta = HISTORY_RETENTION,
        concurrency: int = 1,
        lease_shards: int | None = None,
        seal: HeaderSeal | None = None,
    ) -> None:
        """``concurrency``: independent conditional writes (admissions,
        closures, materializations of different schedules) and index queries
        in flight at once. Keep 1 on in-process moto, whose backends are not
        safe under concurrent requests. ``lease_shards``: the deployment's
        shard count, so the leases are read by key rather than by a scan.
        ``seal``: webhook header values are sealed in the version items this
        store writes and opened in those it reads (adapters.sealing); without
        it they are written in the body, and sealed ones read as names with
        empty values."""
        self.seal = seal
        if due_shards < 1:
            raise ValueError("due_shards must be at least 1")
        DynamoTables.__init__(self, client, tables, concurrency=concurrency)
        self.due_shards = due_shards
        self.lease_shards = lease_shards
        self.history_retention = history_retention
        self._versions: OrderedDict[tuple[str, int], ScheduleVersion] = OrderedDict()
        self._versions_lock = threading.Lock()
        # Versions whose stored form no rule reads any more, with the error (bounded).
        self._unreadable: dict[tuple[str, int], Exception] = {}
        self._zone_changes: dict[tuple[str, int], datetime | None] = {}
        # Where the plan pages' read starts for a horizon (the cursor's
        # ``through``; see ``due`` and ``planned_through``).
        self._floor: tuple[datetime, datetime | None] | None = None
        # Whether this store holds the plan lease (see ``_hold_plan``), as whom.
        self._plan_held = False
        self._plan_owner = f"plan-{uuid.uuid4().hex}"
        self._heads_read: dict[str, dict[str, Any]] = {}
        # The next slots this pass's chain carries, written as plan pages
        # when it ends (``planned_through``); every entry put on a page while
        # this store held the plan lease (see ``_rehome``); and the pages a
        # pass read, by its range, as sorted (due_key, entry) pairs.
        self._page_entries: list[tuple[datetime, str, int]] = []
        self._paged_entries: list[tuple[datetime, str, int]] = []
        # Where a pass that stopped at its budget left off inside the chain: every
        # entry with a ``due_key`` up to it is planned (the cursor's ``partial``).
        self._key_floor: str | None = None
        self._pages_read: (
            tuple[tuple[datetime, datetime], list[tuple[str, dict[str, Any]]]] | None
        ) = None

    @classmethod
    def from_settings(
        cls, settings: TableSettings, session: Any = None, *, seal: HeaderSeal | None = None
    ) -> DynamoStore:
        """The store of a deployment: table names from its settings, a fresh client."""
        if session is None:
            import boto3

            session = boto3.session.Session()
        client = retry_conflicts(session.client("dynamodb", config=client_config()))
        return cls(
            client,
            TableNames(settings.schedules_table, settings.occurrences_table, settings.leases_table),
            concurrency=CONCURRENCY,
            lease_shards=getattr(settings, "shards", None),
            seal=seal,
        )

    # --- schedules ----------------------------------------------------------------

    def create(
        self, schedule: Schedule, idempotency_key: str | None = None
    ) -> tuple[Schedule, bool]:
        t = self.tables.schedules
        operations = [
            self._put_new(t, it.head_item(schedule, self.due_shards)),
            self._put_new(t, it.version_item(schedule.current, self.seal)),
        ]
        if idempotency_key is not None:
            record = {
                **it.create_key(idempotency_key),
                **it.attrs(
                    {"schedule_id": schedule.schedule_id, "created_at": it.iso(schedule.created_at)}
                ),
            }
            operations.insert(0, self._put_new(t, record))
        reasons = self._transact(operations)
        if reasons is None:
            self._remember(schedule.current)
            return schedule, True
        if idempotency_key is not None and reasons[0] == "ConditionalCheckFailed":
            answer = self.client.get_item(
                TableName=t, Key=it.create_key(idempotency_key), ConsistentRead=True
            )
            first_id = str(it.plain(answer["Item"])["schedule_id"])
            first = self.get(first_id)
            assert first is not None, "a create key and its schedule are written together"
            return first, False
        raise ValueError(f"schedule {schedule.schedule_id} exists")

    def _schedules(
        self, heads: Sequence[Mapping[str, Any]], *, quarantine: bool = False
    ) -> list[Schedule]:
        """The schedules of ``heads``, leaving out one whose stored version can no
        longer be read (logged by ``get_versions``); with ``quarantine``, that
        one is quarantined."""
        pairs = [(str(it.value(h["schedule_id"])), int(it.value(h["version"]))) for h in heads]
        versions = self.get_versions(pairs)
        found: list[Schedule] = []
        for head, pair in zip(heads, pairs, strict=True):
            version = versions.get(pair)
            if version is not None:
                found.append(it.schedule_from_head(head, version))
            elif quarantine and pair in self._unreadable:
                error = self._unreadable[pair]
                now = datetime.now(UTC)
                self.quarantine(*pair, Quarantine.of(error, QuarantineComponent.PLAN, now))
        return found

    def get(self, schedule_id: str) -> Schedule | None:
        """The schedule, its ``next_due`` the first slot not planned yet: named
        by its HEAD, or by its newest planned record (``_with_chain``)."""
        head = self._head(schedule_id)
        return None if head is None else self._with_chain(self._schedules([head]), [head])[0]

    def head(self, schedule_id: str) -> Schedule | None:
        """The schedule as its HEAD stores it (one read; ``next_due`` may be
        behind, when its chain of records carries it): for checks of its
        version and state."""
        head = self._head(schedule_id)
        return None if head is None else self._schedules([head])[0]

    def _head(self, schedule_id: str) -> dict[str, Any] | None:
        answer = self.client.get_item(
            TableName=self.tables.schedules, Key=it.head_key(schedule_id), ConsistentRead=True
        )
        head: dict[str, Any] | None = answer.get("Item")
        return head

    def _with_chain(
        self, schedules: list[Schedule], heads: Sequence[Mapping[str, Any]]
    ) -> list[Schedule]:
        """``schedules`` (read from ``heads``), each one its chain carries
        given the ``next_due`` its newest planned record names."""
        chained = {
            str(it.value(h["schedule_id"]))
            for h in heads
            if "due_key" not in h and "next_due" in h and "deleted_at" not in h
        }
        if not chained:
            return schedules

        def one(schedule: Schedule) -> Schedule:
            if schedule.schedule_id not in chained:
                return schedule
            found = self._chain_head(schedule.schedule_id)
            if found is None:
                return schedule
            next_due, last_at = found
            return replace(schedule, next_due=next_due, last_materialized_at=last_at)

        return self._each(one, schedules)

    def _chain_head(self, schedule_id: str) -> tuple[datetime | None, datetime] | None:
        """What the schedule's newest planned record says: the next slot (None:
        its spec had no slot after it) and its own instant, the last planned;
        None when none of the newest records says."""
        request = {
            **self.records_newest_first(schedule_id, consistent=True, page=25),
            "ProjectionExpression": "#next_due, #chain_end, #scheduled_at",
            "ExpressionAttributeNames": {
                "#next_due": "next_due",
                "#chain_end": "chain_end",
                "#scheduled_at": "scheduled_at",
            },
        }
        for seen, item in enumerate(self._query(request)):
            if "next_due" in item or "chain_end" in item:
                last_at = it.from_iso(str(it.value(item["scheduled_at"])))
                if "chain_end" in item:
                    return None, last_at
                return it.from_iso(str(it.value(item["next_due"]))), last_at
            if seen >= 100:
                break
        return None

    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        return self.get_versions([(schedule_id, version)]).get((schedule_id, version))

    def get_versions(
        self, keys: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], ScheduleVersion]:
        wanted = set(keys)
        found = {k: v for k in wanted if (v := self._versions.get(k)) is not None}
        missing = sorted(wanted - found.keys())
        if missing:
            for item in self._batch_get(
                self.tables.schedules, [it.version_key(sid, v) for sid, v in missing]
            ):
                try:
                    value = it.version_from_item(item, self.seal)
                except Exception as error:  # a rule tightened since it was saved
                    key = (str(it.value(item["schedule_id"])), int(it.value(item["version"])))
                    _log.error(
                        "stored schedule cannot be read",
                        extra={"schedule_id": key[0], "version": key[1], "error": repr(error)},
                    )
                    with self._versions_lock:
                        self._unreadable[key] = error
                        while len(self._unreadable) > VERSION_CACHE_SIZE:
                            self._unreadable.pop(next(iter(self._unreadable)))
                    continue
                self._remember(value)
                found[(value.schedule_id, value.version)] = value
        return found

    def versions(
        self, schedule_id: str, limit: int, token: str | None = None
    ) -> Page[ScheduleVersion]:
        """One query on the schedule's partition, version items (``V#...``) in
        key order, which is version order (the number is zero-padded)."""
        pk = it.schedule_pk(schedule_id)
        if token is not None:
            start = _untoken(token)
            if set(start) != {"pk", "sk"} or start.get("pk") != {"S": pk}:
                raise ValueError("not a page token from this store")
            sk = start["sk"]
            if not isinstance(sk, dict) or not str(sk.get("S", "")).startswith("V#"):
                raise ValueError("not a page token from this store")
        found, next_token = self._query_page(
            {
                "TableName": self.tables.schedules,
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :v)",
                "ExpressionAttributeValues": {":pk": {"S": pk}, ":v": {"S": "V#"}},
                "ConsistentRead": True,
            },
            limit,
            token,
            ("pk", "sk"),
        )
        items: list[ScheduleVersion] = []
        for item in found:
            value = it.version_from_item(item, self.seal)
            self._remember(value)
            items.append(value)
        return Page(tuple(items), next_token)

    def _remember(self, version: ScheduleVersion) -> None:
        with self._versions_lock:
            self._versions[(version.schedule_id, version.version)] = version
            while len(self._versions) > VERSION_CACHE_SIZE:
                self._versions.popitem(last=False)

    def list_schedules(
        self, limit: int, token: str | None = None, *, next_due: bool = True
    ) -> Page[Schedule]:
        found, next_token = self._query_page(
            {
                "TableName": self.tables.schedules,
                "IndexName": "listing",
                "KeyConditionExpression": "#entity = :entity",
                "ExpressionAttributeNames": {"#entity": "entity"},
                "ExpressionAttributeValues": {":entity": {"S": it.ENTITY_SCHEDULE}},
            },
            limit,
            token,
            ("pk", "sk", "entity", "created_key"),
        )
        heads = {
            str(it.value(h["pk"])): h
            for h in self._batch_get(
                self.tables.schedules, [{"pk": f["pk"], "sk": f["sk"]} for f in found]
            )
        }
        ordered = [
            heads[pk]
            for f in found
            if (pk := str(it.value(f["pk"]))) in heads and "deleted_at" not in heads[pk]
        ]
        schedules = self._schedules(ordered)
        if next_due:  # one query of the newest records per schedule its chain carries
            schedules = self._with_chain(schedules, ordered)
        return Page(tuple(schedules), next_token)

    def due(self, until: datetime, limit: int, token: str | None = None) -> Page[DueSchedule]:
        """Seeds, from the ``due`` index of the Schedules table (a HEAD that
        names its next slot: a create, edit or resume, or a backlog), and the
        schedules their chain carries, from the plan pages after the last
        complete pass's horizon (``planned_through``), merged by (next_due,
        schedule_id). Only for the pass that holds the plan lease, taken here
        when there is anything to plan (or the cursor is stale): the pages it
        plans from are read after the take, so every page a holder before it
        wrote is in the read. A pass that cannot take it gets nothing. Every
        row is checked against its HEAD, read consistently
        (``_due_schedules``): the index may lag."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        upper = f"{it.iso(until)}#{it.KEY_CEILING}"
        after = str(_untoken(token)["due_key"]) if token else None
        if after is not None and after >= upper:
            return Page(())
        seeds = self._seeds(after, upper, after, limit)
        floor = self._chain_floor(until)
        chained = self._paged(floor, until, after, limit)
        if not self._plan_held:
            stale = floor is None or floor < until - PAGE_STALE
            if not (seeds or chained or stale):
                return Page(())
            held, through = self._hold_plan()
            if not held:
                return Page(())
            self._floor = (until, through)
            chained = self._paged(through, until, after, limit)
        merged = sorted(seeds + chained, key=lambda item: str(it.value(item["due_key"])))
        page = merged[:limit]
        next_token = (
            _token({"due_key": str(it.value(page[-1]["due_key"]))}) if len(merged) > limit else None
        )
        return Page(tuple(self._due_schedules(page)), next_token)

    def due_ahead(
        self, after: datetime, until: datetime, limit: int, token: str | None = None
    ) -> Page[DueSchedule]:
        """The ``due`` index's HEADs (seeds) with a next slot in ``(after,
        until]`` (no cursor: a seed stays in the index until it is planned).
        Only for the holder of the plan lease, taken here when there is a seed
        to plan: a seed planned early goes on the chain, so a frequent schedule
        is selected again by the lookahead and filled a block, not planned
        early a slot a pass; ``planned_through(None)`` writes what it chained
        and lets the lease go. Another pass holding it: none."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        low = f"{it.iso(after)}#{it.KEY_CEILING}"
        upper = f"{it.iso(until)}#{it.KEY_CEILING}"
        past = str(_untoken(token)["due_key"]) if token else None
        if past is not None and past >= upper:
            return Page(())
        merged = self._seeds(past or low, upper, past, limit)
        if not merged or not (self._plan_held or self._hold_plan()[0]):
            return Page(())
        merged.sort(key=lambda item: str(it.value(item["due_key"])))
        page = merged[:limit]
        next_token = (
            _token({"due_key": str(it.value(page[-1]["due_key"]))}) if len(merged) > limit else None
        )
        return Page(tuple(self._due_schedules(page)), next_token)

    def chain_crowd(self, after: datetime, until: datetime, least: int) -> datetime | None:
        """The latest instant in ``(after, until]`` with at least ``least`` chain
        entries that no pass has read yet (past the cursor's ``through`` and
        ``partial``): counted from the plan pages, without reading a HEAD.
        Entries of a schedule since edited or paused count too; ``due`` sets
        them aside. An idle pass pays a consistent read of the cursor and one
        of the due hour's pages."""
        if least < 1:
            raise ValueError("least must be at least 1")
        answer = self.client.get_item(
            TableName=self.tables.leases, Key=it.attrs({"pk": PLAN_CURSOR}), ConsistentRead=True
        )
        cursor = answer.get("Item")
        through = _through(cursor)
        low = after if through is None else max(after, through)
        if low >= until:
            return None
        past = f"{it.iso(low)}#{it.KEY_CEILING}"
        if (partial := _partial(cursor)) is not None:
            past = max(past, partial)
        counts: Counter[datetime] = Counter()
        for key, entry in self._read_pages(low, until):
            if key > past:
                counts[it.from_iso(str(it.value(entry["next_due"])))] += 1
        crowded = [at for at, count in counts.items() if count >= least]
        return max(crowded) if crowded else None

    def _paged(
        self, floor: datetime | None, until: datetime, after: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """Up to ``limit + 1`` chain entries of the plan pages, with a next
        slot in ``(floor, until]`` (with no floor, the ``PAGE_REACH`` before
        ``until``) and a ``due_key`` past ``after`` and past where a pass that
        stopped at its budget left off (the cursor's ``partial``). The pages
        of a range are read once a holding of the plan lease, however many
        pages of ``due`` it asks for."""
        low = floor if floor is not None else until - PAGE_REACH
        if low >= until:
            return []  # the cursor is past this horizon (a pass read the chain ahead)
        past = max((k for k in (after, self._key_floor) if k is not None), default=None)
        if self._pages_read is None or self._pages_read[0] != (low, until):
            self._pages_read = ((low, until), self._read_pages(low, until))
        return _past(self._pages_read[1], past, limit)

    def _read_pages(self, low: datetime, upper: datetime) -> list[tuple[str, dict[str, Any]]]:
        """Every entry of the plan pages with a next slot in ``(low, upper]``,
        once each, in ``due_key`` order: a query of each due hour's partition
        between the two minutes, read consistently (the last holder wrote
        them before it let the plan lease go)."""
        first, last = it.page_minute(low), it.page_minute(upper)
        hours = []
        hour = first.replace(minute=0)
        while hour <= last:
            hours.append(hour)
            hour += timedelta(hours=1)
        bounds = {":low": {"S": it.iso(first)}, ":high": {"S": f"{it.iso(last)}#{it.KEY_CEILING}"}}

        def one(hour: datetime) -> list[dict[str, Any]]:
            return list(
                self._query(
                    {
                        "TableName": self.tables.occurrences,
                        "KeyConditionExpression": "pk = :pk AND sk BETWEEN :low AND :high",
                        "ExpressionAttributeValues": {":pk": {"S": it.page_pk(hour)}, **bounds},
                        "ConsistentRead": True,
                    }
                )
            )

        found: dict[tuple[str, int], dict[str, Any]] = {}
        for items in self._each(one, hours):
            for item in items:
                for at, schedule_id, version in it.page_entries(item):
                    if low < at <= upper:
                        found[(it.due_key(at, schedule_id), version)] = _chain_entry(
                            at, schedule_id, version
                        )
        return [(key[0], found[key]) for key in sorted(found)]

    def _write_pages(self, entries: Sequence[tuple[datetime, str, int]]) -> None:
        """Write next slots as plan pages, at most ``PAGE_UNITS_PER_S`` write
        units a second to one partition (a due hour's); each entry is kept
        in ``_paged_entries`` first, for ``_rehome``."""
        if not entries:
            return
        with self._versions_lock:
            self._paged_entries.extend(entries)
        token = uuid.uuid4().hex[:12]
        opened: dict[str, tuple[float, int]] = {}  # partition: its second's start, units spent
        for item in it.page_items(entries, token, self.history_retention):
            pk, units = str(it.value(item["pk"])), it.item_units(item)
            now = time.monotonic()
            start, spent = opened.get(pk, (now, 0))
            if now - start >= 1.0:
                start, spent = now, 0
            elif spent and spent + units > PAGE_UNITS_PER_S:
                time.sleep(1.0 - (now - start))
                start, spent = time.monotonic(), 0
            self.client.put_item(TableName=self.tables.occurrences, Item=item)
            opened[pk] = (start, spent + units)

    def _seeds(
        self, low: str | None, upper: str, after: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """Up to ``limit + 1`` entries of each shard of the ``due`` index with
        a key in ``[low, upper]`` and past ``after`` (the page token's)."""

        def one(shard: int) -> list[dict[str, Any]]:
            values: dict[str, Any] = {":shard": {"S": str(shard)}, ":upper": {"S": upper}}
            condition = "#shard = :shard AND #key <= :upper"
            if low is not None:
                values[":low"] = {"S": low}
                condition = "#shard = :shard AND #key BETWEEN :low AND :upper"
            request = {
                "TableName": self.tables.schedules,
                "IndexName": "due",
                "KeyConditionExpression": condition,
                "ExpressionAttributeNames": {"#shard": "due_shard", "#key": "due_key"},
                "ExpressionAttributeValues": values,
                # One more than a page, and one for the item the token names.
                "Limit": limit + 2,
            }
            found: list[dict[str, Any]] = []
            for item in self._query(request):
                if after is not None and str(it.value(item["due_key"])) <= after:
                    continue
                found.append(item)
                if len(found) > limit:
                    break
            return found

        return [item for found in self._each(one, range(self.due_shards)) for item in found]

    def _due_schedules(self, page: Sequence[Mapping[str, Any]]) -> list[DueSchedule]:
        """The planning view of a page of ``due`` index items (seeds) and plan
        page entries, each checked against its schedule's HEAD, read
        consistently: a seed counts only while its HEAD still names it (the
        index may lag: a HEAD since planned, edited, paused or deleted is
        still there as it was); a page entry only while its schedule is at
        the entry's version, active, and not named by its HEAD (a seed there
        supersedes the chain)."""
        wanted = list({str(it.value(i["schedule_id"])) for i in page})
        current = {
            str(it.value(head["schedule_id"])): head
            for head in self._batch_get(
                self.tables.schedules, [it.head_key(sid) for sid in wanted], consistent=True
            )
        }
        with self._versions_lock:
            # Read consistently a moment ago: the materialization's check uses
            # them once instead of reading each HEAD again (``_head_mode``).
            self._heads_read.update(current)
        rows: list[tuple[Mapping[str, Any], datetime]] = []
        for item in page:
            head = current.get(str(it.value(item["schedule_id"])))
            if head is None:
                continue
            if _CHAIN not in item:
                if head.get("due_key") != item["due_key"] or not it.head_active(head):
                    continue
            elif not _carried_by_chain(head, int(it.value(item["version"]))):
                continue
            rows.append((head, it.from_iso(str(it.value(item["next_due"])))))
        found = self._schedules([head for head, _ in rows], quarantine=True)
        by_id = {s.schedule_id: s for s in found}
        due: list[DueSchedule] = []
        for row, next_due in rows:
            schedule = by_id.get(str(it.value(row["schedule_id"])))
            if schedule is None:
                continue
            v = schedule.current
            due.append(
                DueSchedule(schedule.schedule_id, schedule.version, next_due, v.spec, v.policy)
            )
        return due

    def _chain_floor(self, until: datetime) -> datetime | None:
        """Where this pass's read of the plan pages starts: after the horizon
        of the last complete pass (None: from ``PAGE_REACH`` before). Read
        once per horizon."""
        if self._floor is not None and self._floor[0] == until:
            return self._floor[1]
        answer = self.client.get_item(
            TableName=self.tables.leases, Key=it.attrs({"pk": PLAN_CURSOR}), ConsistentRead=True
        )
        item = answer.get("Item")
        floor = _through(item)
        self._floor = (until, floor)
        self._key_floor = _partial(item)
        with self._versions_lock:
            self._heads_read.clear()  # a new pass: what an earlier one read is old
        return floor

    def _hold_plan(self) -> tuple[bool, datetime | None]:
        """Take the plan lease (the cursor item's owner, for ``PLAN_LEASE``):
        whether this store holds it now, and where the last holder's read
        stopped. One holder at a time plans, so no pass moves the read past
        entries another pass is still writing; what this one read of the
        pages before is read again (a holder may have written since)."""
        now = datetime.now(UTC)
        try:
            answer = self.client.update_item(
                TableName=self.tables.leases,
                Key=it.attrs({"pk": PLAN_CURSOR}),
                UpdateExpression="SET #owner = :me, #held_until = :held_until",
                ConditionExpression=(
                    "attribute_not_exists(#owner) OR #owner = :me OR #held_until < :now"
                ),
                ExpressionAttributeNames={"#owner": "owner", "#held_until": "held_until"},
                ExpressionAttributeValues={
                    ":me": {"S": self._plan_owner},
                    ":held_until": {"S": it.iso(now + PLAN_LEASE)},
                    ":now": {"S": it.iso(now)},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if not _failed_condition(error):
                raise
            return False, None
        self._plan_held = True
        self._pages_read = None
        with self._versions_lock:
            self._paged_entries = []
        self._key_floor = _partial(answer.get("Attributes"))
        return True, _through(answer.get("Attributes"))

    def planned_through(self, until: datetime | None, token: str | None = None) -> None:
        """The pass ends: it puts the next slots its chain carries on plan
        pages; then, with ``until``, it planned every chain entry up to it,
        and the next holder reads after it (forward only); with None, it
        stopped early and moves nothing, but with the ``token`` of the page
        it stopped before, the cursor's ``partial`` keeps its last
        ``due_key``, and the next holder reads the chain after it (10,000
        entries of one instant are planned over several passes, not the same
        first ones by each). Either way the plan lease is let go. A pass that
        did not hold it writes nothing. Pages that cannot be written move
        nothing: the next holder reads again from the same place, and plans
        the same slots again (found written). A let-go refused (the lease
        ran out and another pass took it) puts back on their HEADs the
        schedules whose next slots this holder paged (``_rehome``)."""
        floor = self._floor[1] if self._floor is not None else None
        self._floor = None
        self._pages_read = None
        with self._versions_lock:
            entries, self._page_entries = self._page_entries, []
        if not self._plan_held:
            return
        self._plan_held = False
        through = _moved(floor, until)
        partial = self._partial_after(through, token)
        try:
            self._write_pages(entries)
        except BaseException:
            if not self._let_plan_go(floor, None):
                self._rehome()
            raise
        if not self._let_plan_go(floor, until, partial):
            self._rehome()

    def _rehome(self) -> None:
        """This store's hold of the plan lease was broken: another pass took
        it (once it had run out) and may have read the pages, and moved the
        cursor, before this one's pages were written. Each schedule whose next
        slot this holder put on a page is put back on its HEAD at that slot
        (``_promote``: only while its chain still carries it), in the ``due``
        index, which is read without a cursor: planned again, never lost."""
        with self._versions_lock:
            entries, self._paged_entries = self._paged_entries, []
        _log.warning(
            "plan lease lost; next slots put back on their HEADs", extra={"count": len(entries)}
        )
        self._each(lambda entry: self._promote(entry[1], entry[2], entry[0]), sorted(set(entries)))

    def _partial_after(self, through: datetime | None, token: str | None) -> str | None:
        """The cursor's ``partial`` once this pass lets go: "" to remove it (the
        cursor passed its instant), a ``due_key`` to set, None to leave it."""
        if token is not None:
            stopped = str(_untoken(token)["due_key"])
            return max(stopped, self._key_floor or "")
        key = self._key_floor
        if key is not None and through is not None and it.from_iso(key.split("#")[0]) <= through:
            return ""
        return None

    def _let_plan_go(
        self, floor: datetime | None, until: datetime | None, partial: str | None = None
    ) -> bool:
        """Let go of the plan lease, moving the cursor to ``until`` if given
        (and past ``floor``) and setting its ``partial`` (``_partial_after``);
        False if the lease was no longer this store's."""
        through = _moved(floor, until)
        sets, removes = [], ["#owner", "#held_until"]
        values: dict[str, Any] = {":me": {"S": self._plan_owner}}
        names = {"#owner": "owner", "#held_until": "held_until"}
        if partial is not None:
            names["#partial"] = "partial"
            if partial:
                sets.append("#partial = :partial")
                values[":partial"] = {"S": partial}
            else:
                removes.append("#partial")
        if through is not None:
            sets.append("#through = :through")
            values[":through"] = {"S": it.iso(through)}
            names["#through"] = "through"
        update = ("SET " + ", ".join(sets) + " " if sets else "") + "REMOVE " + ", ".join(removes)
        try:
            self.client.update_item(
                TableName=self.tables.leases,
                Key=it.attrs({"pk": PLAN_CURSOR}),
                UpdateExpression=update,
                ConditionExpression="#owner = :me",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if not _failed_condition(error):
                raise
            return False  # refused: the lease ran out and another holder took it
        return True

    @staticmethod
    def _next_due_condition(expected: datetime | None) -> tuple[str, dict[str, Any]]:
        """The HEAD still names ``expected`` (the ``next_due`` the caller read),
        or leaves its schedule to the chain, where no planner moves the HEAD."""
        chain = "attribute_not_exists(#due_key) AND attribute_exists(#next_due)"
        if expected is None:
            return f"(attribute_not_exists(#next_due) OR ({chain}))", {}
        return (
            f"(#next_due = :expected_due OR ({chain}))",
            {":expected_due": {"S": it.iso(expected)}},
        )

    @staticmethod
    def _next_due_fields(schedule_id: str, next_due: datetime | None) -> dict[str, Any]:
        return {
            "next_due": it.opt_iso(next_due),
            "due_key": None if next_due is None else it.due_key(next_due, schedule_id),
        }

    def save_version(
        self,
        new: ScheduleVersion,
        *,
        expected_next_due: datetime | None,
        next_due: datetime | None,
        now: datetime,
    ) -> bool:
        due_condition, due_values = self._next_due_condition(expected_next_due)
        t = self.tables.schedules
        reasons = self._transact(
            [
                self._update_op(
                    t,
                    it.head_key(new.schedule_id),
                    set_={
                        "version": new.version,
                        "updated_at": it.iso(now),
                        **self._next_due_fields(new.schedule_id, next_due),
                    },
                    remove=("quarantine",),
                    condition=(
                        "attribute_exists(pk) AND #version = :expected_version AND "
                        f"{due_condition} AND attribute_not_exists(#deleted_at)"
                    ),
                    names={"#deleted_at": "deleted_at"},
                    values={":expected_version": {"N": str(new.version - 1)}, **due_values},
                ),
                self._put_new(t, it.version_item(new, self.seal)),
            ]
        )
        if reasons is not None:
            return False
        self._remember(new)
        return True

    def pause(self, schedule_id: str, note: str | None, now: datetime) -> bool:
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_={"paused": True, "note": note, "updated_at": it.iso(now)},
                remove=("due_shard",),
                condition="attribute_exists(pk) AND attribute_not_exists(#deleted_at)",
                names={"#deleted_at": "deleted_at"},
            )
            is not None
        )

    def resume(
        self,
        schedule_id: str,
        *,
        expected_next_due: datetime | None,
        next_due: datetime | None,
        now: datetime,
    ) -> bool:
        due_condition, due_values = self._next_due_condition(expected_next_due)
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_={
                    "paused": False,
                    "note": None,
                    "updated_at": it.iso(now),
                    "due_shard": it.due_shard(schedule_id, self.due_shards),
                    **self._next_due_fields(schedule_id, next_due),
                },
                remove=("quarantine",),
                condition=(
                    "attribute_exists(pk) AND #paused = :true AND "
                    f"attribute_not_exists(#deleted_at) AND {due_condition}"
                ),
                names={"#deleted_at": "deleted_at"},
                values={":true": {"BOOL": True}, **due_values},
            )
            is not None
        )

    def quarantine(self, schedule_id: str, version: int, quarantine: Quarantine) -> bool:
        # Out of the due index by removing due_key (due_shard says paused or
        # not, and stays); save_version and resume set due_key again.
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_={"quarantine": quarantine_to_text(quarantine)},
                remove=("due_key",),
                condition=(
                    "attribute_exists(pk) AND #version = :version "
                    "AND attribute_not_exists(#deleted_at)"
                ),
                names={"#version": "version", "#deleted_at": "deleted_at"},
                values={":version": {"N": str(version)}},
            )
            is not None
        )

    def delete(self, schedule_id: str, now: datetime) -> bool:
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_={"deleted_at": it.iso(now), "updated_at": it.iso(now)},
                remove=("next_due", "due_key", "due_shard", "entity"),
                condition="attribute_exists(pk) AND attribute_not_exists(#deleted_at)",
            )
            is not None
        )

    def materialize(
        self, batch: Sequence[Materialization], now: datetime, *, until: datetime | None = None
    ) -> list[MaterializeOutcome]:
        return self._materialize_batch(batch, now, None, until)

    def materialize_sending(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        send: Callable[[Sequence[Run]], Sequence[str]],
        *,
        until: datetime | None = None,
    ) -> list[MaterializeOutcome]:
        """Store every schedule's occurrences, send the intents of the
        admitted ones in one call, put the few whose send failed in the
        outbox, then advance the HEADs that need it: an occurrence admitted
        as it is stored costs no outbox entry and no mark-sent write (see
        ``Store.materialize_sending`` for why a crash loses nothing)."""
        return self._materialize_batch(batch, now, send, until)

    def _materialize_batch(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        send: Callable[[Sequence[Run]], Sequence[str]] | None,
        until: datetime | None,
    ) -> list[MaterializeOutcome]:
        """Store every schedule's occurrences (and send their intents, with
        ``send``), write the plan page of the seeds handed to their chain,
        then advance the HEADs that need it. A schedule carried on by its
        chain (``_chained``) writes no HEAD: its next slot is queued for the
        pass's pages. A seed's next slot is on a page before its HEAD leaves
        the ``due`` index, so a crash in between leaves it in both, never in
        neither. A schedule with more occurrences than one advance covers (a
        backlog) is materialized chunk by chunk on its HEAD."""

        def store(item: Materialization) -> MaterializeOutcome | _Stored | None:
            chained = self._chained(item, until)
            if not chained and len(item.occurrences) > OCCURRENCES_PER_ADVANCE:
                return self._materialize_one(item, now, send, in_pass=until is not None)
            mode = self._head_mode(item, in_pass=until is not None)
            if mode is None:
                return None
            if not chained:
                if mode == _CHAIN and not self._promote(
                    item.schedule_id, item.expected_version, item.expected_next_due
                ):
                    return None
                return self._store_chunk(list(item.occurrences), sending=send is not None)
            stored = self._store_chunk(
                list(item.occurrences), sending=send is not None, chain=_chain_fields(item)
            )
            entry = (
                None
                if item.next_due is None
                else (item.next_due, item.schedule_id, item.expected_version)
            )
            if mode == _CHAIN:
                stored.advance = False
                if entry is not None:
                    with self._versions_lock:
                        self._page_entries.append(entry)
            else:
                stored.page = entry
            return stored

        stored = self._each(store, batch)
        chunks = [s for s in stored if isinstance(s, _Stored)]
        if send is not None:
            self._send_or_outbox(chunks, send)
        self._write_pages([chunk.page for chunk in chunks if chunk.page is not None])

        def advance(
            pair: tuple[Materialization, MaterializeOutcome | _Stored | None],
        ) -> MaterializeOutcome:
            item, result = pair
            if result is None:
                return MaterializeOutcome(item.schedule_id, False)
            if isinstance(result, MaterializeOutcome):
                return result
            if not result.advance:
                return MaterializeOutcome(item.schedule_id, True, result.inserted)
            if self._advance(
                item,
                item.expected_next_due,
                item.next_due,
                item.last_materialized_at,
                now,
                chained=self._chained(item, until),
            ):
                return MaterializeOutcome(item.schedule_id, True, result.inserted)
            return self._refused(item, result, ())

        return self._each(advance, list(zip(batch, stored, strict=True)))

    # --- the chain -----------------------------------------------------------------

    def _chained(self, item: Materialization, until: datetime | None) -> bool:
        """Whether the item's schedule is carried on by its chain (its next
        slot on a plan page) instead of its HEAD advancing: in a planning
        pass (``until``) that holds the plan lease (``_hold_plan``), for a
        schedule whose next slot falls after the pass's horizon and past the
        cursor (so the next holder's read of the pages, which starts after
        both, finds it), written in one chunk. A backlog, a call from outside
        a pass, or nothing to write stays on the HEAD; so does a schedule
        whose next slot comes after its last record, and the ``next_due`` on
        it, would have expired, less ``CHAIN_TTL_MARGIN``: a slot months
        away. A pass that read the chain ahead of its lookahead
        (``chain_crowd``) may have moved the cursor beyond ``until``."""
        return (
            until is not None
            and self._plan_held
            and 0 < len(item.occurrences) <= OCCURRENCES_PER_ADVANCE
            and (item.next_due is None or (item.next_due > until and self._past_cursor(item)))
            and (
                item.next_due is None
                or item.next_due
                < item.occurrences[-1].scheduled_at + self.history_retention - CHAIN_TTL_MARGIN
            )
        )

    def _past_cursor(self, item: Materialization) -> bool:
        """Whether the next holder's read of the chain (after the cursor's
        ``through`` and ``partial``) finds the item's next slot."""
        assert item.next_due is not None
        floor = self._floor[1] if self._floor is not None else None
        if floor is not None and item.next_due <= floor:
            return False
        key = self._key_floor
        return key is None or it.due_key(item.next_due, item.schedule_id) > key

    def _head_mode(self, item: Materialization, *, in_pass: bool = False) -> str | None:
        """How the item's schedule stands now (a strongly consistent read of
        the HEAD): ``_SEED`` when its HEAD names the item's ``next_due`` (a
        create, edit or resume set it, or a backlog keeps it there), ``_CHAIN``
        when the HEAD leaves the schedule to its chain (no ``due_key``), or
        None when the item is bound to be refused (another version, paused,
        deleted, quarantined, or a seed it does not start from). It saves the
        writes of a materialization bound to be refused; an advance's own
        condition decides. In a pass (``in_pass``), a HEAD its ``due`` just
        read is used once, not read again."""
        head = None
        if in_pass:
            with self._versions_lock:
                head = self._heads_read.pop(item.schedule_id, None)
        if head is None:
            head = self._head(item.schedule_id)
        if head is None:
            return None
        v = it.plain(head)
        if int(v["version"]) != item.expected_version or not it.head_active(head):
            return None
        if "due_key" not in v:
            return _CHAIN if v.get("next_due") is not None else None
        return _SEED if v.get("next_due") == it.iso(item.expected_next_due) else None

    def _promote(self, schedule_id: str, version: int, next_due: datetime) -> bool:
        """Put a schedule carried by its chain back on its HEAD, at
        ``next_due`` (a backlog to write in chunks, planning from outside a
        pass, or a next slot paged by a holder that lost the plan lease), so
        the HEAD's advances take it from there."""
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_=self._next_due_fields(schedule_id, next_due),
                condition=f"attribute_not_exists(#due_key) AND {it.ACTIVE_CONDITION}",
                names={"#due_key": "due_key", **it.ACTIVE_NAMES},
                values={
                    ":expected_version": {"N": str(version)},
                    ":false": {"BOOL": False},
                },
            )
            is not None
        )

    def _store_chunk(
        self, runs: Sequence[Run], *, sending: bool, chain: Mapping[str, Any] | None = None
    ) -> _Stored:
        """Put a chunk's occurrences (see ``_write_occurrence``); the last one's
        record with ``chain``, if given."""
        stored = _Stored()
        last = len(runs) - 1
        for index, run in enumerate(runs):
            extra = chain if index == last else None
            if sending:
                written, to_send = self._write_occurrence(run, sending=True, extra=extra)
            elif extra is None:
                written, to_send = self._put_occurrence(run), None
            else:
                written, to_send = self._write_occurrence(run, sending=False, extra=extra)[0], None
            if written:
                stored.written.append(run)
            if to_send is not None:
                stored.to_send.append(to_send)
        return stored

    def _send_or_outbox(
        self, chunks: Sequence[_Stored], send: Callable[[Sequence[Run]], Sequence[str]]
    ) -> None:
        """Send the chunks' intents in one call; the ones that failed enter
        the outbox, for dispatch to send again. Both before any advance: a
        crash in between leaves the slots to be planned again."""
        runs = [run for chunk in chunks for run in chunk.to_send]
        if not runs:
            return
        failed = set(send(runs))
        for chunk in chunks:
            chunk.sent = {r.occurrence_id for r in chunk.to_send} - failed
        self._each(self._into_outbox, [run for run in runs if run.occurrence_id in failed])

    def _refused(
        self, item: Materialization, chunk: _Stored, inserted: Sequence[str]
    ) -> MaterializeOutcome:
        """The advance was refused (the schedule moved meanwhile): withdraw
        the occurrences this call wrote that no other planner's advance
        covered. Kept: those another planner covered."""
        uncovered = self._uncovered(item.schedule_id, chunk.written)
        self._withdraw(uncovered, sent=chunk.sent)
        kept = [*inserted, *(r.occurrence_id for r in chunk.written if r not in uncovered)]
        return MaterializeOutcome(item.schedule_id, False, tuple(kept))

    def _materialize_one(
        self,
        item: Materialization,
        now: datetime,
        send: Callable[[Sequence[Run]], Sequence[str]] | None,
        *,
        in_pass: bool,
    ) -> MaterializeOutcome:
        """A backlog, on the HEAD, chunk by chunk: write a chunk's occurrences
        (with ``send``, send its admitted intents), then advance the HEAD on
        the materialization's condition: an idempotent sequence, not a
        transaction. A crash between the two leaves occurrences ahead of
        ``next_due``; the next pass plans the same slots again, finds them
        written and advances. When an advance is refused (the schedule moved
        meanwhile), the occurrences this call wrote for it, and no other
        planner's advance covered, are withdrawn. A schedule its chain
        carries is put back on its HEAD first."""
        mode = self._head_mode(item, in_pass=in_pass)
        if mode is None:
            return MaterializeOutcome(item.schedule_id, False)
        if mode == _CHAIN and not self._promote(
            item.schedule_id, item.expected_version, item.expected_next_due
        ):
            return MaterializeOutcome(item.schedule_id, False)
        runs = list(item.occurrences)
        size = OCCURRENCES_PER_ADVANCE
        chunks = [runs[i : i + size] for i in range(0, len(runs), size)] or [[]]
        expected_due = item.expected_next_due
        inserted: list[str] = []
        for index, chunk in enumerate(chunks):
            last = index + 1 == len(chunks)
            # Advanced chunk by chunk, next_due always names the first slot not
            # yet written, so a crash halfway leaves a consistent schedule.
            next_due = item.next_due if last else chunks[index + 1][0].scheduled_at
            last_at = item.last_materialized_at if last else chunk[-1].scheduled_at
            stored = self._store_chunk(chunk, sending=send is not None)
            if send is not None:
                self._send_or_outbox([stored], send)
            written = stored.written
            if not self._advance(item, expected_due, next_due, last_at, now):
                return self._refused(item, stored, inserted)
            inserted += [run.occurrence_id for run in written]
            assert next_due is not None or last
            if next_due is not None:
                expected_due = next_due
        return MaterializeOutcome(item.schedule_id, True, tuple(inserted))

    def _uncovered(self, schedule_id: str, written: Sequence[Run]) -> list[Run]:
        """Of the occurrences a refused materialization wrote, those no advance
        has covered: past the HEAD's ``last_materialized_at``. Another planner
        that wrote the same slots (and found these written) advanced past
        them, so they stay; a pause, delete or edit leaves them uncovered."""
        if not written:
            return []
        answer = self.client.get_item(
            TableName=self.tables.schedules,
            Key=it.head_key(schedule_id),
            ConsistentRead=True,
        )
        last = (answer.get("Item") or {}).get("last_materialized_at")
        covered = None if last is None else it.from_iso(str(it.value(last)))
        return [run for run in written if covered is None or run.scheduled_at > covered]

    def _advance(
        self,
        item: Materialization,
        expected_due: datetime,
        next_due: datetime | None,
        last_at: datetime | None,
        now: datetime,
        *,
        chained: bool = False,
    ) -> bool:
        """Move the HEAD from ``expected_due`` to ``next_due``; ``chained``:
        and leave the schedule to its chain (out of the ``due`` index)."""
        fields = self._next_due_fields(item.schedule_id, next_due)
        if chained:
            fields["due_key"] = None
        return (
            self._update(
                self.tables.schedules,
                it.head_key(item.schedule_id),
                set_={
                    **fields,
                    "last_materialized_at": it.opt_iso(last_at),
                },
                condition=f"#next_due = :expected_due AND {it.ACTIVE_CONDITION}",
                names=it.ACTIVE_NAMES,
                values={
                    ":expected_version": {"N": str(item.expected_version)},
                    ":expected_due": {"S": it.iso(expected_due)},
                    ":false": {"BOOL": False},
                },
            )
            is not None
        )

    def _zone_changed_at(self, schedule_id: str, version: int) -> datetime | None:
        """When the schedule last changed its zone, as of ``version``
        (``run_records.zone_changed_at``), from the versions this store keeps.
        Versions never change, so neither does the answer: it is kept."""
        key = (schedule_id, version)
        if key in self._zone_changes:
            return self._zone_changes[key]
        found = self.get_versions([(schedule_id, v) for v in range(1, version + 1)])
        answer = zone_changed_at(found, schedule_id, version)
        with self._versions_lock:
            self._zone_changes[key] = answer
            while len(self._zone_changes) > VERSION_CACHE_SIZE:
                self._zone_changes.pop(next(iter(self._zone_changes)))
        return answer


def _chain_entry(at: datetime, schedule_id: str, version: int) -> dict[str, Any]:
    """A plan page's entry as a ``due`` entry."""
    return {
        "due_key": {"S": it.due_key(at, schedule_id)},
        "schedule_id": {"S": schedule_id},
        "version": {"N": str(version)},
        "next_due": {"S": it.iso(at)},
        _CHAIN: True,
    }


def _past(
    entries: Sequence[tuple[str, dict[str, Any]]], after: str | None, limit: int
) -> list[dict[str, Any]]:
    """Up to ``limit + 1`` of ``entries`` (sorted (due_key, entry) pairs) with
    a ``due_key`` past ``after``: a page of ``due`` and whether there is more."""
    start = 0 if after is None else bisect.bisect_right(entries, after, key=lambda e: e[0])
    return [entry for _, entry in entries[start : start + limit + 1]]


def _moved(floor: datetime | None, until: datetime | None) -> datetime | None:
    """Where a pass that read from ``floor`` leaves the cursor: at ``until``
    if it planned through it and that is forward, else where it was."""
    return floor if until is None or (floor is not None and floor >= until) else until


def _partial(item: Mapping[str, Any] | None) -> str | None:
    """The ``due_key`` up to which a pass that stopped at its budget planned the
    chain, past the cursor's ``through``, if one did."""
    if item is None or "partial" not in item:
        return None
    return str(it.value(item["partial"]))


def _through(item: Mapping[str, Any] | None) -> datetime | None:
    """Where the cursor item says the last complete pass stopped, if anywhere."""
    if item is None or "through" not in item:
        return None
    return it.from_iso(str(it.value(item["through"])))


def _chain_fields(item: Materialization) -> dict[str, Any]:
    """What the last record of a schedule its chain carries on says: its
    ``next_due`` (what ``get`` shows), or ``chain_end`` when the spec has no
    slot after it. The next slot itself goes on a plan page."""
    if item.next_due is None:
        return {"chain_end": True}
    return {"next_due": it.iso(item.next_due)}


def _carried_by_chain(head: Mapping[str, Any], version: int) -> bool:
    """Whether a HEAD leaves its schedule, at ``version``, to its chain: the
    version is current, no seed names the next slot, and it is active."""
    return (
        head.get("version") == {"N": str(version)}
        and "due_key" not in head
        and "next_due" in head
        and it.head_active(head)
    )
