"""Sending the intents of admitted records, and admitting as the planner stores.

**The outbox.** An admitted record stays pending until its intent is sent and
the record marked sent (``send_intents``): a pass that crashes between the two
leaves it pending, and dispatch sends it again. An intent may be sent twice; a
record is never admitted twice.

**Direct admission.** A slot that is due, or due within the pass's ``ahead``
reach, is admitted by the write that stores it (the conditional schedule
update checks version, ``next_due`` and that the schedule is active, and the
record's unique keys make the insert happen once at most) rather than read back
from the pending index later. Only in shards that are ready for it (held by
this pass and with no due backlog: a backlog goes first, through dispatch,
oldest first), within the shard's ``admit_limit``. Then the intents are sent
(``DirectAdmission.send``) before the store advances their schedules
(``Store.advance``): a record the store put in the outbox (SQLite) is marked
sent as dispatch does; one it stored out of it, its schedule's advance held
(DynamoDB), needs no mark-sent write and enters the outbox only if its send
failed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from domain.run import DeliveryIntent, PendingOccurrence, Run
from service.planning.pass_state import DispatchReport, PassState
from service.ports import DeliveryQueue, Store


def send_only(
    queue: DeliveryQueue,
    runs: Sequence[Run | PendingOccurrence],
    now: datetime,
    report: DispatchReport,
) -> list[str]:
    """Send the intents of admitted records, each held back until its due
    time, and count them; the ids that could not be sent (nothing is marked)."""
    if not runs:
        return []
    failed = queue.send_ahead([DeliveryIntent.for_run(r) for r in runs], now)
    report.send_failures += len(failed)
    report.sent += len(runs) - len(set(failed))
    return list(failed)


def send_intents(
    store: Store,
    queue: DeliveryQueue,
    runs: Sequence[Run | PendingOccurrence],
    now: datetime,
    state: PassState,
) -> bool:
    """Send the intents of admitted records, each held back until its due
    time, then mark the sent ones sent. True if any was sent."""
    if not runs:
        return False
    failed = set(send_only(queue, runs, now, state.dispatch))
    sent = [r.occurrence_id for r in runs if r.occurrence_id not in failed]
    if not sent:
        return False
    store.records.mark_sent(sent, now)
    state.sent.update(r.occurrence_id for r in runs)
    return True


class DirectAdmission:
    """Where the planner may admit as it stores, and what becomes of the
    admitted: ``ready`` says how many a shard may take in a pass (asked once
    per shard and pass; the room left is the pass's)."""

    def __init__(self, store: Store, queue: DeliveryQueue, ready: Callable[[int], int]) -> None:
        self.store = store
        self.queue = queue
        self.ready = ready

    def room(self, state: PassState, shard: int) -> int:
        """How many more occurrences the pass may admit directly in ``shard``."""
        room = state.room.get(shard)
        if room is None:
            room = state.room[shard] = self.ready(shard)
        return room

    def take(self, state: PassState, shard: int, count: int) -> None:
        state.room[shard] -= count

    def send(self, state: PassState, runs: Sequence[Run], now: datetime) -> set[str]:
        """Send the intents of records just stored admitted (``Materialized.to_send``):
        those sent leave the outbox, those whose send failed enter it. The ids sent."""
        failed = set(send_only(self.queue, runs, now, state.dispatch))
        self.store.records.into_outbox(
            [r for r in runs if r.occurrence_id in failed and not r.pending]
        )
        sent = {r.occurrence_id for r in runs} - failed
        marked = [r.occurrence_id for r in runs if r.pending and r.occurrence_id in sent]
        if marked:
            self.store.records.mark_sent(marked, now)
        state.sent.update(sent)
        return sent

    def count(self, state: PassState, runs: list[Run], now: datetime) -> None:
        """Count the occurrences just admitted (and stored)."""
        spent = state.spent
        for run in runs:
            spent[run.shard] = spent.get(run.shard, 0) + 1
        # All admitted at ``now``: the oldest has the largest lag.
        state.dispatch.admitted += len(runs)
        state.dispatch.note_lag((now - min(r.scheduled_at for r in runs)).total_seconds())
