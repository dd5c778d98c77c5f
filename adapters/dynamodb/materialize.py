"""Materialization: a planning pass's slots stored as run records, and the
schedule's next slot moved on (its HEAD advanced, or its chain's line put on
a plan page).

For each schedule: a consistent read of the HEAD (nothing is written for a
schedule that moved), the occurrences, then the HEAD's advance conditioned
on version, ``next_due`` and active. Refused, it withdraws the occurrences it
wrote (deleted unless a dispatcher changed them in between).

A schedule whose occurrences are admitted as they are stored writes them
out of the outbox, stamped sent, and ``materialize`` returns them to send,
holding the batch's pages and advances: the caller sends, puts the intents
that failed in the outbox, then calls ``advance``. A crash before the advance
leaves the slots to be planned again, found unsent and returned to send
again. An intent sent costs no outbox entry and no mark-sent write.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from adapters.dynamodb import items as it
from adapters.dynamodb.plan_log import DynamoPlanLog
from adapters.dynamodb.plan_session import DynamoPlanSession
from adapters.dynamodb.run_records import HISTORY_RETENTION, DynamoRunRecords
from adapters.dynamodb.schedules import DUE_SHARDS
from adapters.dynamodb.tables import TableNames
from adapters.sealing import HeaderSeal
from domain.run import Run, RunStatus
from domain.schedule import ScheduleVersion
from service.ports import (
    Materialization,
    Materialized,
    MaterializeOutcome,
    PlanSession,
    ScheduleStore,
)

# A long materialization (a backlog) advances the HEAD after every this many
# occurrences, so a crash halfway redoes at most one chunk.
OCCURRENCES_PER_ADVANCE: Final = 49
# A record expires the history retention after its slot (TTL), and takes the
# ``next_due`` it names (what ``get`` shows of a chain) with it: a next slot
# later than that, less this margin (an outage of the tick, TTL's own delay),
# stays on the HEAD.
CHAIN_TTL_MARGIN: Final = timedelta(days=7)
# How a schedule stands for planning (``_head_mode``): its HEAD names the
# next slot (a seed), or its newest planned record does (its chain).
_SEED: Final = "seed"
_CHAIN: Final = "chain"


@dataclass
class _Stored:
    """What one chunk of a materialization stored: the occurrences this call
    wrote, and the runs whose intents to send."""

    written: list[Run] = field(default_factory=list)
    to_send: list[Run] = field(default_factory=list)
    # The HEAD is to be advanced after the chunk (False: the chain carries on,
    # on a plan page, and the HEAD is not written).
    advance: bool = True
    # A seed handed to its chain: the next slot, written on a plan page
    # before the HEAD leaves the ``due`` index.
    page: tuple[datetime, str, int] | None = None

    @property
    def inserted(self) -> tuple[str, ...]:
        return tuple(run.occurrence_id for run in self.written)


@dataclass(frozen=True)
class _Held:
    """A batch stored whose pages and advances wait for ``advance``."""

    batch: Sequence[Materialization]
    stored: list[MaterializeOutcome | _Stored | None]
    until: datetime | None
    session: DynamoPlanSession


class DynamoMaterializer(DynamoPlanLog, ScheduleStore):
    """The schedules port of the AWS store: the schedules (schedules.py),
    the planning reads (plan_log.py), and ``materialize`` and ``advance``:
    store, (the caller sends,) advance. The slots are stored through
    ``records``, the run records port it was built with."""

    def __init__(
        self,
        client: Any,
        tables: TableNames,
        *,
        due_shards: int = DUE_SHARDS,
        history_retention: timedelta = HISTORY_RETENTION,
        concurrency: int = 1,
        seal: HeaderSeal | None = None,
    ) -> None:
        """See ``DynamoSchedules`` and ``DynamoRunRecords``; the run records
        read the versions through this port's cache."""
        super().__init__(client, tables, due_shards=due_shards, concurrency=concurrency, seal=seal)
        self.history_retention = history_retention
        self.records = DynamoRunRecords(
            client,
            tables,
            history_retention=history_retention,
            concurrency=concurrency,
            versions=self.get_versions,
        )

    def save_version(self, new: ScheduleVersion, **change: Any) -> bool:
        """An edit (``DynamoSchedules.save_version``); once it is written, the
        old version's slots a pass stored and may have left unsent are put
        back in the outbox (``requeue_unsent``): no pass plans them again."""
        saved = super().save_version(new, **change)
        if saved:
            self.records.requeue_unsent(new.schedule_id)
        return saved

    def materialize(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        *,
        until: datetime | None = None,
        session: PlanSession | None = None,
    ) -> Materialized:
        """Store every schedule's occurrences, then (at once, or in ``advance``
        when some intents are to be sent first) write the plan page of the
        seeds handed to their chain and advance the HEADs that need it. A
        schedule carried on by its chain (``_chained``) writes no HEAD: its
        next slot is queued for the pass's pages. A schedule with more
        occurrences than one advance covers (a backlog) admitting none is
        materialized chunk by chunk on its HEAD (``_materialize_one``)."""
        s = self._session(session)

        def store(item: Materialization) -> MaterializeOutcome | _Stored | None:
            sending = any(run.status is RunStatus.ADMITTED for run in item.occurrences)
            chained = self._chained(item, until, s)
            if not (chained or sending) and len(item.occurrences) > OCCURRENCES_PER_ADVANCE:
                return self._materialize_one(item, s if until else None)
            mode = self._head_mode(item, s if until else None)
            if mode is None:
                return None
            if not chained:
                if mode == _CHAIN and not self._promote(
                    item.schedule_id, item.expected_version, item.expected_next_due
                ):
                    return None
                return self._store_chunk(item.occurrences, sending=sending)
            stored = self._store_chunk(item.occurrences, sending=sending, chain=_chain_fields(item))
            entry = (
                None
                if item.next_due is None
                else (item.next_due, item.schedule_id, item.expected_version)
            )
            if mode == _CHAIN:
                stored.advance = False
                if entry is not None:
                    with s.lock:
                        s.page_entries.append(entry)
            else:
                stored.page = entry
            return stored

        held = _Held(batch, self._each(store, batch), until, s)
        to_send = tuple(run for r in held.stored if isinstance(r, _Stored) for run in r.to_send)
        if not to_send:
            return Materialized(self._advance_batch(held, ()))
        outcomes = [_outcome(item, r) for item, r in zip(batch, held.stored, strict=True)]
        return Materialized(outcomes, to_send, held)

    def advance(self, stored: Materialized, sent: Collection[str]) -> list[MaterializeOutcome]:
        if stored.held is None:
            return stored.outcomes
        if not isinstance(stored.held, _Held):
            raise TypeError("not a materialization of a DynamoDB store")
        return self._advance_batch(stored.held, sent)

    def _advance_batch(self, held: _Held, sent: Collection[str]) -> list[MaterializeOutcome]:
        """Write the plan page of the seeds handed to their chain, then advance
        the HEADs: a seed's next slot is on a page before its HEAD leaves the
        ``due`` index, so a crash in between leaves it in both, never in
        neither."""
        pages = [r.page for r in held.stored if isinstance(r, _Stored) and r.page is not None]
        self._write_pages(pages, held.session)

        def advance(
            pair: tuple[Materialization, MaterializeOutcome | _Stored | None],
        ) -> MaterializeOutcome:
            item, result = pair
            if not isinstance(result, _Stored) or not result.advance:
                return _outcome(item, result)
            chained = self._chained(item, held.until, held.session)
            if self._advance(
                item, item.expected_next_due, item.next_due, item.last_materialized_at, chained
            ):
                return _outcome(item, result)
            return self._refused(item, result, (), sent)

        return self._each(advance, list(zip(held.batch, held.stored, strict=True)))

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
            written, to_send = self.records._write_occurrence(run, sending=sending, extra=extra)
            if written:
                stored.written.append(run)
            if to_send is not None:
                stored.to_send.append(to_send)
        return stored

    def _refused(
        self, item: Materialization, chunk: _Stored, inserted: Sequence[str], sent: Collection[str]
    ) -> MaterializeOutcome:
        """The advance was refused (the schedule moved meanwhile): withdraw
        the occurrences this call wrote that no other planner's advance
        covered (closing those whose intent was ``sent``). Kept: those
        another planner covered."""
        uncovered = self._uncovered(item.schedule_id, chunk.written)
        self.records._withdraw(uncovered, sent=sent)
        kept = [*inserted, *(r.occurrence_id for r in chunk.written if r not in uncovered)]
        return MaterializeOutcome(item.schedule_id, False, tuple(kept))

    def _materialize_one(
        self, item: Materialization, s: DynamoPlanSession | None
    ) -> MaterializeOutcome:
        """A backlog admitting nothing, on the HEAD, chunk by chunk: write a
        chunk's occurrences, then advance the HEAD on the materialization's
        condition: an idempotent sequence, not a transaction. A crash between
        the two leaves occurrences ahead of ``next_due``; the next pass plans
        the same slots again, finds them written and advances. When an
        advance is refused (the schedule moved meanwhile), the occurrences
        this call wrote for it, and no other planner's advance covered, are
        withdrawn. A schedule its chain carries is put back on its HEAD
        first."""
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
            stored = self._store_chunk(chunk, sending=False)
            if not self._advance(item, expected_due, next_due, last_at):
                return self._refused(item, stored, inserted, ())
            inserted += stored.inserted
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


def _outcome(
    item: Materialization, result: MaterializeOutcome | _Stored | None
) -> MaterializeOutcome:
    """The outcome of an item stored (and advanced, if it had to be)."""
    if isinstance(result, _Stored):
        return MaterializeOutcome(item.schedule_id, True, result.inserted)
    return result or MaterializeOutcome(item.schedule_id, False)


def _chain_fields(item: Materialization) -> dict[str, Any]:
    """What the last record of a schedule its chain carries on says: its
    ``next_due`` (what ``get`` shows), or ``chain_end`` when the spec has no
    slot after it. The next slot itself goes on a plan page."""
    if item.next_due is None:
        return {"chain_end": True}
    return {"next_due": it.iso(item.next_due)}
