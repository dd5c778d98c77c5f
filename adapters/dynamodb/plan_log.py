"""The plan log: the plan pages, their cursor and the plan lease.

A schedule's next slot lives in one of two places: its HEAD (a seed, in the
Schedules table's ``due`` index) or a line of a plan page (its chain),
written by the pass that planned it (see items for the page layout, and
docs/decisions.md, "The next slot's one home"). Only the holder of the plan
lease (``C#plan`` in the leases table) plans; it reads the pages from the
cursor's ``through`` (and ``partial``) to its horizon, consistently, and
moves the cursor in its let-go, conditioned on still owning the lease.
Every row it plans from is checked against its HEAD, read consistently.

The cursor also says where the next page line is (``next_line``: no line has
a next slot between ``through`` and it), kept by each holder's let-go, so a
pass whose horizon falls before it reads no page (docs/decisions.md, "A pass
reads the plan pages only when the cursor says a line is due").
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from botocore.exceptions import ClientError

from adapters.dynamodb import items as it
from adapters.dynamodb.schedules import DynamoSchedules
from adapters.dynamodb.tables import TableNames, _failed_condition, _token, _untoken
from adapters.sealing import HeaderSeal
from service.ports import (
    DueSchedule,
    Page,
    PlanSession,
)

# The leases table item that holds how far planning has read the plan pages,
# and the plan lease: the one pass that plans, for at most this long (longer
# than the tick function's timeout, so no holder outlives it).
PLAN_CURSOR: Final = "C#plan"
PLAN_LEASE: Final = timedelta(seconds=120)
# How a schedule stands for planning (``_head_mode``): its HEAD names the
# next slot (a seed), or its newest planned record does (its chain).
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

_log = logging.getLogger("duetime")


@dataclass(frozen=True)
class _Cursor:
    """The plan cursor item, as planning reads it."""

    through: datetime | None  # the last complete holder's horizon
    partial: str | None  # the due_key up to which a holder out of time planned
    # No page line has a next slot in (through, next_line); None: not known.
    next_line: datetime | None
    owned: bool  # a holder took the plan lease and has not let it go

    @classmethod
    def of(cls, item: Mapping[str, Any] | None) -> _Cursor:
        line = None if item is None else item.get("next_line")
        return cls(
            _through(item),
            _partial(item),
            None if line is None else it.from_iso(str(it.value(line))),
            item is not None and "owner" in item,
        )

    def quiet_until(self) -> datetime | None:
        """Before when no page line can be due, if the cursor says so: its
        ``next_line``, unless a holder has not let go (it may have written
        lines its let-go would have counted)."""
        return None if self.owned else self.next_line


@dataclass(eq=False)
class DynamoPlanSession(PlanSession):
    """What one pass of the DynamoDB planner keeps between its calls: made by
    ``plan_session`` when the pass begins, handed to each planning call,
    dropped when the pass ends (so the store holds none of it)."""

    # Where the plan pages' read starts for a horizon (the cursor's
    # ``through``; see ``due`` and ``planned_through``).
    floor: tuple[datetime, datetime | None] | None = None
    # Whether this pass holds the plan lease (see ``_hold_plan``), and who it
    # is when it does: one name per pass, so two passes over one store object
    # (overlapping invocations in one process) are two holders, not one.
    held: bool = False
    owner: str = field(default_factory=lambda: f"plan-{uuid.uuid4().hex}")
    # The HEADs its ``due`` read consistently, used once by ``_head_mode``.
    heads_read: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The next slots its chain carries, written as plan pages when it ends
    # (``planned_through``); every entry put on a page while it held the plan
    # lease (see ``_rehome``).
    page_entries: list[tuple[datetime, str, int]] = field(default_factory=list)
    paged_entries: list[tuple[datetime, str, int]] = field(default_factory=list)
    # Where a pass that stopped at its budget left off inside the chain: every
    # entry with a ``due_key`` up to it is planned (the cursor's ``partial``).
    key_floor: str | None = None
    # The pages it read, by their range, as sorted (due_key, entry) pairs.
    pages_read: tuple[tuple[datetime, datetime], list[tuple[str, dict[str, Any]]]] | None = None
    # The cursor as this pass last saw it: read once per horizon
    # (``_chain_floor``), or as its own let-go left it; ``chain_crowd`` uses it.
    cursor: _Cursor | None = None
    # The cursor's ``next_line`` as this holding took it, when the holder before
    # let go (so it is true); None: not known.
    line_at_take: datetime | None = None
    # The upper bound of the last range this holding read, and the earliest
    # line past it in the minutes it read (None: none there).
    beyond: tuple[datetime, datetime | None] | None = None
    # Materialization runs a batch's schedules in a thread pool.
    lock: threading.Lock = field(default_factory=threading.Lock)


class DynamoPlanLog(DynamoSchedules):
    """The planning reads (``due``, ``due_ahead``, ``chain_crowd``), the plan
    pages, their cursor and the plan lease (``planned_through``)."""

    # A plan page's line expires with the records (set by the run records).
    history_retention: timedelta

    def __init__(
        self,
        client: Any,
        tables: TableNames,
        *,
        due_shards: int,
        concurrency: int = 1,
        seal: HeaderSeal | None = None,
    ) -> None:
        DynamoSchedules.__init__(
            self, client, tables, due_shards=due_shards, concurrency=concurrency, seal=seal
        )

    def plan_session(self) -> DynamoPlanSession:
        return DynamoPlanSession()

    @staticmethod
    def _session(session: PlanSession | None) -> DynamoPlanSession:
        """The pass's session; a call without one (not from a pass) gets its
        own, which ends with it."""
        if session is None:
            return DynamoPlanSession()
        if not isinstance(session, DynamoPlanSession):
            raise TypeError("not a plan session of a DynamoDB store")
        return session

    @contextmanager
    def _reading(self, session: PlanSession | None) -> Iterator[DynamoPlanSession]:
        """The session of one planning read. A read outside a pass (no
        session: a tool, a test) is a pass of its own: if it took the plan
        lease it lets go when it ends, moving nothing."""
        s = self._session(session)
        try:
            yield s
        finally:
            if session is None and s.held:
                self._let_plan_go(s, None, None)

    def due(
        self,
        until: datetime,
        limit: int,
        token: str | None = None,
        *,
        session: PlanSession | None = None,
    ) -> Page[DueSchedule]:
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
        with self._reading(session) as s:
            return self._due(s, until, limit, after, upper)

    def _due(
        self, s: DynamoPlanSession, until: datetime, limit: int, after: str | None, upper: str
    ) -> Page[DueSchedule]:
        seeds = self._seeds(after, upper, after, limit)
        floor = self._chain_floor(until, s)
        # The pages are read only when the cursor cannot say that no line is
        # due by the horizon; before the take, not even then when it says one is.
        quiet = s.line_at_take if s.held else s.cursor.quiet_until() if s.cursor else None
        line_due = quiet is not None and quiet <= until
        chained: list[dict[str, Any]] = []
        if quiet is None or (s.held and line_due):
            chained = self._paged(floor, until, after, limit, s)
        if not s.held:
            stale = floor is None or floor < until - PAGE_STALE
            if not (seeds or chained or stale or line_due):
                return Page(())
            held, through = self._hold_plan(s)
            if not held:
                return Page(())
            s.floor = (until, through)
            if s.line_at_take is None or s.line_at_take <= until:
                chained = self._paged(through, until, after, limit, s)
        return self._due_page(seeds + chained, limit, s)

    def due_ahead(
        self,
        after: datetime,
        until: datetime,
        limit: int,
        token: str | None = None,
        *,
        session: PlanSession | None = None,
    ) -> Page[DueSchedule]:
        """The ``due`` index's HEADs (seeds) with a next slot in ``(after,
        until]`` (no cursor: a seed stays in the index until it is planned).
        Only for the holder of the plan lease, taken here when there is a seed
        to plan: a seed planned early goes on the chain, so a frequent schedule
        is selected again by the lookahead, not planned early a slot a pass;
        ``planned_through(None)`` writes what it chained and lets the lease
        go. Another pass holding it: none."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        low = f"{it.iso(after)}#{it.KEY_CEILING}"
        upper = f"{it.iso(until)}#{it.KEY_CEILING}"
        past = str(_untoken(token)["due_key"]) if token else None
        if past is not None and past >= upper:
            return Page(())
        merged = self._seeds(past or low, upper, past, limit)
        with self._reading(session) as s:
            if not merged or not (s.held or self._hold_plan(s)[0]):
                return Page(())
            return self._due_page(merged, limit, s)

    def _due_page(
        self, merged: list[dict[str, Any]], limit: int, s: DynamoPlanSession
    ) -> Page[DueSchedule]:
        """The first ``limit`` rows by ``due_key``, each checked against its HEAD."""
        merged.sort(key=lambda item: str(it.value(item["due_key"])))
        page = merged[:limit]
        next_token = (
            _token({"due_key": str(it.value(page[-1]["due_key"]))}) if len(merged) > limit else None
        )
        return Page(tuple(self._due_schedules(page, s)), next_token)

    def chain_crowd(
        self,
        after: datetime,
        until: datetime,
        least: int,
        *,
        session: PlanSession | None = None,
    ) -> datetime | None:
        """The latest instant in ``(after, until]`` with at least ``least`` chain
        entries that no pass has read yet (past the cursor's ``through`` and
        ``partial``): counted from the plan pages, without reading a HEAD.
        Entries of a schedule since edited or paused count too; ``due`` sets
        them aside. The cursor is the pass's (``session``: as its planning read
        or left it), else read; when it says no line is due by ``until``, no
        page is read. The pages are read eventually consistent: a crowd is a
        reason to plan early, which ``due`` then does on its own consistent
        reads; one a moment old is found by the next pass."""
        if least < 1:
            raise ValueError("least must be at least 1")
        known = session.cursor if isinstance(session, DynamoPlanSession) else None
        if known is None:
            answer = self.client.get_item(
                TableName=self.tables.leases,
                Key=it.attrs({"pk": PLAN_CURSOR}),
                ConsistentRead=True,
            )
            known = _Cursor.of(answer.get("Item"))
        through = known.through
        low = after if through is None else max(after, through)
        if low >= until:
            return None
        quiet = known.quiet_until()
        if quiet is not None and quiet > until:
            return None
        past = f"{it.iso(low)}#{it.KEY_CEILING}"
        if (partial := known.partial) is not None:
            past = max(past, partial)
        counts: Counter[datetime] = Counter()
        for key, entry in self._read_pages(low, until, consistent=False)[0]:
            if key > past:
                counts[it.from_iso(str(it.value(entry["next_due"])))] += 1
        crowded = [at for at, count in counts.items() if count >= least]
        return max(crowded) if crowded else None

    def _paged(
        self,
        floor: datetime | None,
        until: datetime,
        after: str | None,
        limit: int,
        s: DynamoPlanSession,
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
        past = max((k for k in (after, s.key_floor) if k is not None), default=None)
        if s.pages_read is None or s.pages_read[0] != (low, until):
            lines, beyond = self._read_pages(low, until)
            s.pages_read = ((low, until), lines)
            s.beyond = (until, beyond)
        return _past(s.pages_read[1], past, limit)

    def _read_pages(
        self, low: datetime, upper: datetime, *, consistent: bool = True
    ) -> tuple[list[tuple[str, dict[str, Any]]], datetime | None]:
        """Every entry of the plan pages with a next slot in ``(low, upper]``,
        once each, in ``due_key`` order: a query of each due hour's partition
        between the two minutes, read consistently (the last holder wrote
        them before it let the plan lease go); and the earliest line after
        ``upper`` in the minutes read (``upper``'s own), if any."""
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
                        "ConsistentRead": consistent,
                    }
                )
            )

        found: dict[tuple[str, int], dict[str, Any]] = {}
        beyond: datetime | None = None
        for items in self._each(one, hours):
            for item in items:
                for at, schedule_id, version in it.page_entries(item):
                    if low < at <= upper:
                        found[(it.due_key(at, schedule_id), version)] = _chain_entry(
                            at, schedule_id, version
                        )
                    elif at > upper and (beyond is None or at < beyond):
                        beyond = at
        return [(key[0], found[key]) for key in sorted(found)], beyond

    def _next_line(self, after: datetime, s: DynamoPlanSession) -> datetime | None:
        """A bound below every page line with a next slot after ``after`` (the
        cursor's new ``through``), for a holder that read the pages up to it:
        the earliest line past it in the minutes it read, else the minute of
        the first page item of a later minute (a query of one item in the
        rest of ``after``'s hour, then one in the next hour), else the end of
        the next hour. None when this holding did not read up to ``after``."""
        if s.beyond is None or s.beyond[0] != after:
            return None
        if s.beyond[1] is not None:
            return s.beyond[1]
        hour = after.replace(minute=0, second=0, microsecond=0)
        for partition, start in (
            (hour, f"{it.iso(it.page_minute(after))}#{it.KEY_CEILING}"),
            (hour + timedelta(hours=1), None),
        ):
            values: dict[str, Any] = {":pk": {"S": it.page_pk(partition)}}
            condition = "pk = :pk"
            if start is not None:
                values[":start"] = {"S": start}
                condition += " AND sk > :start"
            answer = self.client.query(
                TableName=self.tables.occurrences,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=values,
                ConsistentRead=True,
                Limit=1,
            )
            for item in answer.get("Items", []):
                return it.from_iso(str(it.value(item["sk"])).split("#", 1)[0])
        return hour + timedelta(hours=2)

    def _write_pages(
        self, entries: Sequence[tuple[datetime, str, int]], s: DynamoPlanSession
    ) -> None:
        """Write next slots as plan pages, at most ``PAGE_UNITS_PER_S`` write
        units a second to one partition (a due hour's); each entry is kept
        in the session's ``paged_entries`` first, for ``_rehome``."""
        if not entries:
            return
        with s.lock:
            s.paged_entries.extend(entries)
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

    def _due_schedules(
        self, page: Sequence[Mapping[str, Any]], s: DynamoPlanSession
    ) -> list[DueSchedule]:
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
        with s.lock:
            # Read consistently a moment ago: the materialization's check uses
            # them once instead of reading each HEAD again (``_head_mode``).
            s.heads_read.update(current)
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

    def _chain_floor(self, until: datetime, s: DynamoPlanSession) -> datetime | None:
        """Where this pass's read of the plan pages starts: after the horizon
        of the last complete pass (None: from ``PAGE_REACH`` before). Read
        once per horizon."""
        if s.floor is not None and s.floor[0] == until:
            return s.floor[1]
        answer = self.client.get_item(
            TableName=self.tables.leases, Key=it.attrs({"pk": PLAN_CURSOR}), ConsistentRead=True
        )
        cursor = s.cursor = _Cursor.of(answer.get("Item"))
        floor = cursor.through
        s.floor = (until, floor)
        s.key_floor = cursor.partial
        with s.lock:
            s.heads_read.clear()  # a new horizon: what was read before is old
        return floor

    def _hold_plan(self, s: DynamoPlanSession) -> tuple[bool, datetime | None]:
        """Take the plan lease (the cursor item's owner, for ``PLAN_LEASE``):
        whether this pass holds it now, and where the last holder's read
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
                    ":me": {"S": s.owner},
                    ":held_until": {"S": it.iso(now + PLAN_LEASE)},
                    ":now": {"S": it.iso(now)},
                },
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if not _failed_condition(error):
                raise
            return False, None
        s.held = True
        s.pages_read = None
        s.beyond = None
        with s.lock:
            s.paged_entries = []
        before = s.cursor = _Cursor.of(answer.get("Attributes"))
        s.key_floor = before.partial
        # True only if the holder before let go: one that did not may have
        # written lines its let-go would have counted.
        s.line_at_take = before.quiet_until()
        return True, before.through

    def planned_through(
        self,
        until: datetime | None,
        token: str | None = None,
        *,
        session: PlanSession | None = None,
    ) -> None:
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
        s = self._session(session)
        floor = s.floor[1] if s.floor is not None else None
        s.floor = None
        s.pages_read = None
        with s.lock:
            entries, s.page_entries = s.page_entries, []
        if not s.held:
            return
        s.held = False
        through = _moved(floor, until)
        partial = self._partial_after(through, token, s)
        try:
            self._write_pages(entries, s)
        except BaseException:
            if not self._let_plan_go(s, floor, None):
                self._rehome(s)
            raise
        line = self._line_after(floor, through, s)
        if not self._let_plan_go(s, floor, until, partial, line):
            self._rehome(s)
            return
        left = partial if partial is not None else s.key_floor
        kept = through if through is not None else s.cursor.through if s.cursor else None
        s.cursor = _Cursor(kept, left or None, line, owned=False)

    def _line_after(
        self, floor: datetime | None, through: datetime | None, s: DynamoPlanSession
    ) -> datetime | None:
        """The cursor's ``next_line`` once this holder lets go: the earliest of
        the line it found at its take (while still past the cursor) or else
        the next line past the new ``through`` (``_next_line``), and every line
        this holding wrote; None (not known) when neither is known."""
        line = s.line_at_take
        moves = through is not None and (floor is None or through > floor)
        if moves and through is not None and (line is None or line <= through):
            line = self._next_line(through, s)
        if line is None:
            return None
        with s.lock:
            written = [at for at, _, _ in s.paged_entries]
        return min([line, *written])

    def _rehome(self, s: DynamoPlanSession) -> None:
        """This pass's hold of the plan lease was broken: another pass took
        it (once it had run out) and may have read the pages, and moved the
        cursor, before this one's pages were written. Each schedule whose next
        slot this holder put on a page is put back on its HEAD at that slot
        (``_promote``: only while its chain still carries it), in the ``due``
        index, which is read without a cursor: planned again, never lost."""
        with s.lock:
            entries, s.paged_entries = s.paged_entries, []
        _log.warning(
            "plan lease lost; next slots put back on their HEADs", extra={"count": len(entries)}
        )
        self._each(lambda entry: self._promote(entry[1], entry[2], entry[0]), sorted(set(entries)))

    def _partial_after(
        self, through: datetime | None, token: str | None, s: DynamoPlanSession
    ) -> str | None:
        """The cursor's ``partial`` once this pass lets go: "" to remove it (the
        cursor passed its instant), a ``due_key`` to set, None to leave it."""
        if token is not None:
            stopped = str(_untoken(token)["due_key"])
            return max(stopped, s.key_floor or "")
        key = s.key_floor
        if key is not None and through is not None and it.from_iso(key.split("#")[0]) <= through:
            return ""
        return None

    def _let_plan_go(
        self,
        s: DynamoPlanSession,
        floor: datetime | None,
        until: datetime | None,
        partial: str | None = None,
        line: datetime | None = None,
    ) -> bool:
        """Let go of the plan lease, moving the cursor to ``until`` if given
        (and past ``floor``), setting its ``partial`` (``_partial_after``) and
        its ``next_line`` (None: removed, not known); False if the lease was
        no longer this pass's."""
        through = _moved(floor, until)
        sets, removes = [], ["#owner", "#held_until"]
        values: dict[str, Any] = {":me": {"S": s.owner}}
        names = {"#owner": "owner", "#held_until": "held_until", "#line": "next_line"}
        if line is not None:
            sets.append("#line = :line")
            values[":line"] = {"S": it.iso(line)}
        else:
            removes.append("#line")
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


def _carried_by_chain(head: Mapping[str, Any], version: int) -> bool:
    """Whether a HEAD leaves its schedule, at ``version``, to its chain: the
    version is current, no seed names the next slot, and it is active."""
    return (
        head.get("version") == {"N": str(version)}
        and "due_key" not in head
        and "next_due" in head
        and it.head_active(head)
    )
