"""The plan log: the planning reads (``due``, ``due_ahead``, ``chain_crowd``)
and the end of a pass (``planned_through``), over the seeds and the HEAD
check (plan_seeds.py), the plan pages (plan_pages.py) and their cursor and
lease (plan_lease.py); what one pass keeps between its calls is its session
(plan_session.py). Only the holder of the plan lease plans.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Final

from adapters.dynamodb import items as it
from adapters.dynamodb import plan_lease as lease
from adapters.dynamodb import plan_pages as pages
from adapters.dynamodb.plan_seeds import due_schedules, seeds
from adapters.dynamodb.plan_session import DynamoPlanSession
from adapters.dynamodb.schedules import DynamoSchedules
from adapters.dynamodb.tables import _token, _untoken
from service.ports import DueSchedule, Page, PlanSession

# A pages' read costs a query per due hour it spans, from the cursor: a pass
# takes the plan lease (and so moves the cursor) when the cursor is this far
# behind, even with nothing to plan, so an idle deployment's read stays short.
PAGE_STALE: Final = timedelta(hours=1)

_log = logging.getLogger("duetime")


class DynamoPlanLog(DynamoSchedules):
    """The planning reads (``due``, ``due_ahead``, ``chain_crowd``), and the
    let-go of the plan lease (``planned_through``)."""

    # A plan page's line expires with the records (set by the run records).
    history_retention: timedelta

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
                lease.let_go(self, s.owner, None)

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
        (``plan_seeds.due_schedules``): the index may lag."""
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
        seeded = seeds(self, after, upper, after, limit)
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
            if not (seeded or chained or stale or line_due):
                return Page(())
            held, through = self._hold_plan(s)
            if not held:
                return Page(())
            s.floor = (until, through)
            if s.line_at_take is None or s.line_at_take <= until:
                chained = self._paged(through, until, after, limit, s)
        return self._due_page(seeded + chained, limit, s)

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
        merged = seeds(self, past or low, upper, past, limit)
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
        return Page(tuple(due_schedules(self, page, s)), next_token)

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
            known = lease.read_cursor(self)
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
        for key, entry in pages.read_pages(self, low, until, consistent=False)[0]:
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
        low = floor if floor is not None else until - pages.PAGE_REACH
        if low >= until:
            return []  # the cursor is past this horizon (a pass read the chain ahead)
        past = max((k for k in (after, s.key_floor) if k is not None), default=None)
        if s.pages_read is None or s.pages_read[0] != (low, until):
            lines, beyond = pages.read_pages(self, low, until)
            s.pages_read = ((low, until), lines)
            s.beyond = (until, beyond)
        return pages.entries_past(s.pages_read[1], past, limit)

    def _next_line(self, after: datetime, s: DynamoPlanSession) -> datetime | None:
        """A bound below every page line with a next slot after ``after`` (the
        cursor's new ``through``), for a holder that read the pages up to it:
        the earliest line past it in the minutes it read, else
        ``plan_pages.first_line_after``. None when this holding did not read
        up to ``after``."""
        if s.beyond is None or s.beyond[0] != after:
            return None
        if s.beyond[1] is not None:
            return s.beyond[1]
        return pages.first_line_after(self, after)

    def _write_pages(
        self, entries: Sequence[tuple[datetime, str, int]], s: DynamoPlanSession
    ) -> None:
        """Write next slots as plan pages (``plan_pages.write_pages``), each
        kept in the session's ``paged_entries`` first, for ``_rehome``."""
        if not entries:
            return
        with s.lock:
            s.paged_entries.extend(entries)
        pages.write_pages(self, entries, self.history_retention)

    def _chain_floor(self, until: datetime, s: DynamoPlanSession) -> datetime | None:
        """Where this pass's read of the plan pages starts: after the horizon
        of the last complete pass (None: from ``PAGE_REACH`` before). Read
        once per horizon."""
        if s.floor is not None and s.floor[0] == until:
            return s.floor[1]
        cursor = s.cursor = lease.read_cursor(self)
        floor = cursor.through
        s.floor = (until, floor)
        s.key_floor = cursor.partial
        with s.lock:
            s.heads_read.clear()  # a new horizon: what was read before is old
        return floor

    def _hold_plan(self, s: DynamoPlanSession) -> tuple[bool, datetime | None]:
        """Take the plan lease (``plan_lease.take``): whether this pass holds it
        now, and where the last holder's read stopped. One holder at a time
        plans, so no pass moves the read past entries another pass is still
        writing; what this one read of the pages before is read again."""
        before = lease.take(self, s.owner)
        if before is None:
            return False, None
        s.held, s.pages_read, s.beyond, s.cursor = True, None, None, before
        s.key_floor = before.partial
        with s.lock:
            s.paged_entries = []
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
        through = lease.moved(floor, until)
        partial = self._partial_after(through, token, s)
        try:
            self._write_pages(entries, s)
        except BaseException:
            if not lease.let_go(self, s.owner, floor):
                self._rehome(s)
            raise
        line = self._line_after(floor, through, s)
        if not lease.let_go(self, s.owner, through, partial, line):
            self._rehome(s)
            return
        left = partial if partial is not None else s.key_floor
        kept = through if through is not None else s.cursor.through if s.cursor else None
        s.cursor = lease.Cursor(kept, left or None, line, owned=False)

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
