"""Materialization: a planning pass's slots stored as run records, and the
schedule's next slot moved on (its HEAD advanced, or its chain's line put on
a plan page).

For each schedule: a consistent read of the HEAD (nothing is written for a
schedule that moved), the occurrences, then the HEAD's advance conditioned
on version, ``next_due`` and active. Refused, it withdraws the occurrences it
wrote (deleted unless a dispatcher changed them in between). A record stored
admitted by ``materialize_sending`` is not put in the outbox: its intent is
sent before its schedule's HEAD advances, and only a failed send puts it
there (a crash before the advance leaves the slot to be planned, found and
sent again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from adapters.dynamodb import items as it
from adapters.dynamodb.plan_log import _CHAIN, _SEED, DynamoPlanLog, DynamoPlanSession
from adapters.dynamodb.run_records import DynamoRunRecords
from domain.run import Run
from service.ports import (
    Materialization,
    MaterializeOutcome,
    PlanSession,
)

# A long materialization (a backlog) advances the HEAD after every this many
# occurrences, so a crash halfway redoes at most one chunk.
OCCURRENCES_PER_ADVANCE: Final = 49
# A record expires the history retention after its slot (TTL), and takes the
# ``next_due`` it names (what ``get`` shows of a chain) with it: a next slot
# later than that, less this margin (an outage of the tick, TTL's own delay),
# stays on the HEAD.
CHAIN_TTL_MARGIN: Final = timedelta(days=7)


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


class DynamoMaterializer(DynamoPlanLog, DynamoRunRecords):
    """``materialize`` and ``materialize_sending``: store, (send,) advance."""

    def materialize(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        *,
        until: datetime | None = None,
        session: PlanSession | None = None,
    ) -> list[MaterializeOutcome]:
        return self._materialize_batch(batch, now, None, until, self._session(session))

    def materialize_sending(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        send: Callable[[Sequence[Run]], Sequence[str]],
        *,
        until: datetime | None = None,
        session: PlanSession | None = None,
    ) -> list[MaterializeOutcome]:
        """Store every schedule's occurrences, send the intents of the
        admitted ones in one call, put the few whose send failed in the
        outbox, then advance the HEADs that need it: an occurrence admitted
        as it is stored costs no outbox entry and no mark-sent write (see
        ``Store.materialize_sending`` for why a crash loses nothing)."""
        return self._materialize_batch(batch, now, send, until, self._session(session))

    def _materialize_batch(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        send: Callable[[Sequence[Run]], Sequence[str]] | None,
        until: datetime | None,
        session: DynamoPlanSession,
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
            chained = self._chained(item, until, session)
            if not chained and len(item.occurrences) > OCCURRENCES_PER_ADVANCE:
                return self._materialize_one(item, now, send, session if until else None)
            mode = self._head_mode(item, session if until else None)
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
                    with session.lock:
                        session.page_entries.append(entry)
            else:
                stored.page = entry
            return stored

        stored = self._each(store, batch)
        chunks = [s for s in stored if isinstance(s, _Stored)]
        if send is not None:
            self._send_or_outbox(chunks, send)
        self._write_pages([chunk.page for chunk in chunks if chunk.page is not None], session)

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
                chained=self._chained(item, until, session),
            ):
                return MaterializeOutcome(item.schedule_id, True, result.inserted)
            return self._refused(item, result, ())

        return self._each(advance, list(zip(batch, stored, strict=True)))

    def _chained(self, item: Materialization, until: datetime | None, s: DynamoPlanSession) -> bool:
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
            and s.held
            and 0 < len(item.occurrences) <= OCCURRENCES_PER_ADVANCE
            and (item.next_due is None or (item.next_due > until and self._past_cursor(item, s)))
            and (
                item.next_due is None
                or item.next_due
                < item.occurrences[-1].scheduled_at + self.history_retention - CHAIN_TTL_MARGIN
            )
        )

    def _past_cursor(self, item: Materialization, s: DynamoPlanSession) -> bool:
        """Whether the next holder's read of the chain (after the cursor's
        ``through`` and ``partial``) finds the item's next slot."""
        assert item.next_due is not None
        floor = s.floor[1] if s.floor is not None else None
        if floor is not None and item.next_due <= floor:
            return False
        key = s.key_floor
        return key is None or it.due_key(item.next_due, item.schedule_id) > key

    def _head_mode(self, item: Materialization, s: DynamoPlanSession | None) -> str | None:
        """How the item's schedule stands now (a strongly consistent read of
        the HEAD): ``_SEED`` when its HEAD names the item's ``next_due`` (a
        create, edit or resume set it, or a backlog keeps it there), ``_CHAIN``
        when the HEAD leaves the schedule to its chain (no ``due_key``), or
        None when the item is bound to be refused (another version, paused,
        deleted, quarantined, or a seed it does not start from). It saves the
        writes of a materialization bound to be refused; an advance's own
        condition decides. In a pass (``s``), a HEAD its ``due`` just
        read is used once, not read again."""
        head = None
        if s is not None:
            with s.lock:
                head = s.heads_read.pop(item.schedule_id, None)
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
        s: DynamoPlanSession | None,
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
        mode = self._head_mode(item, s)
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


def _chain_fields(item: Materialization) -> dict[str, Any]:
    """What the last record of a schedule its chain carries on says: its
    ``next_due`` (what ``get`` shows), or ``chain_end`` when the spec has no
    slot after it. The next slot itself goes on a plan page."""
    if item.next_due is None:
        return {"chain_end": True}
    return {"next_due": it.iso(item.next_due)}
