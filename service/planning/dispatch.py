"""Dispatch: admit or close the pending records due within the pass's reach, and send the admitted.

Per shard, one read of its earliest pending bucket; only a shard with pending
work due within the ``ahead`` reach is leased (``Dispatcher.lease``) and
walked, from that bucket, taking the pending records due by the reach, oldest
first, in batches, at most ``admit_limit`` per shard per pass (direct
admissions included), so a long outage cannot flood the workers. An idle pass
takes no lease. Each record is admitted (the conditional ``scheduled ->
admitted``) or closed, as the start decision says
(service/planning/judge.py); the intents of the admitted are sent, held back
until their due second, then marked sent (service/planning/outbox.py).
Admitted records never marked sent are sent again.

**Leases.** Several tick processes may share the shards. A pass leases a shard
only when it has work there (pending records due within its reach, or slots
to admit as it stores them); another process meets the shard held and leaves
it. A lease is fenced by its epoch (a number that only grows) and renewed once
less than half its TTL is left, so a busy pass hardly writes it. The leases
held are the one state that outlives a pass.
"""

from __future__ import annotations

import random
from datetime import datetime

from domain.run import PendingOccurrence, Run, RunStatus
from domain.schedule import QUARANTINED, QuarantineComponent
from service.planning import judge
from service.planning.config import TickConfig
from service.planning.outbox import DirectAdmission, send_intents
from service.planning.pass_state import DispatchReport, PassState
from service.ports import Clock, Closure, DeliveryQueue, Lease, Store
from service.quarantine import quarantine_schedule


class Dispatcher:
    def __init__(
        self,
        store: Store,
        queue: DeliveryQueue,
        clock: Clock,
        config: TickConfig,
        owner: str,
    ) -> None:
        self.store = store
        self.queue = queue
        self.clock = clock
        self.config = config
        self.owner = owner
        self.held: dict[int, Lease] = {}
        # The order this process visits shards in: its own, so that processes
        # starting together reach for different shards first.
        self.order = list(range(config.partitioning.shards))
        random.Random(owner).shuffle(self.order)
        # The planner admits as it stores only in shards this dispatcher says are ready.
        self.direct = DirectAdmission(store, queue, self._ready)

    def lease(self, shard: int, now: datetime) -> Lease | None:
        """This process's live lease on ``shard`` (taken or renewed when less
        than half its TTL is left), or None when another process holds it."""
        ttl = self.config.lease_ttl
        held = self.held.get(shard)
        if held is not None and held.expires_at - now > ttl / 2:
            return held
        lease = self.store.leases.acquire(shard, self.owner, now, ttl)
        if lease is None:
            self.held.pop(shard, None)
            return None
        self.held[shard] = lease
        return lease

    def release_all(self) -> None:
        """Release every lease held, so the next process takes the shards at
        once instead of waiting for the leases to expire."""
        now = self.clock.now()
        for lease in self.held.values():
            self.store.leases.release(lease.shard, lease.owner, lease.epoch, now)
        self.held = {}

    def dispatch(self, state: PassState) -> DispatchReport:
        """Dispatch the shards this process holds (taking or renewing their
        leases) into the pass's report; no batch is started after the pass's
        ``deadline`` (what is left stays pending, for the next pass)."""
        now = self.clock.now()
        parts = self.config.partitioning
        due_by = now + self.config.ahead
        to_bucket = parts.bucket(due_by)
        for shard in self.order:
            if self._out_of_time(state):
                break
            earliest = self.store.records.earliest_pending_bucket(shard)
            if earliest is None or earliest > to_bucket:
                continue
            if self.lease(shard, now) is None:
                continue  # another process holds it; it dispatches the shard
            state.dispatch.shards.append(shard)
            self._walk(shard, earliest, to_bucket, due_by, now, state)
        state.dispatch.shards.sort()
        return state.dispatch

    # --- readiness for direct admission -----------------------------------------------------

    def _ready(self, shard: int) -> int:
        """How many slots the planner may admit as it stores in ``shard`` this
        pass: ``admit_limit`` when the pass holds the shard and nothing pending
        there is due (a backlog goes first, through dispatch), else none. A
        shard's lease is taken the first time the planner asks, so a pass with
        nothing to admit directly costs nothing more."""
        now = self.clock.now()
        to_bucket = self.config.partitioning.bucket(now)
        if self.lease(shard, now) is None:
            return 0
        start = self.store.records.earliest_pending_bucket(shard)
        if start is None or start > to_bucket:
            return self.config.admit_limit  # nothing pending is due
        if self.store.records.pending_due(shard, start, to_bucket, now, 1):
            return 0
        return self.config.admit_limit

    # --- walking ------------------------------------------------------------------------------

    def _walk(
        self,
        shard: int,
        from_bucket: int,
        to_bucket: int,
        due_by: datetime,
        now: datetime,
        state: PassState,
    ) -> None:
        """Admit, close or resend the shard's pending records due by ``due_by``,
        oldest first, in batches, up to the shard's ``admit_limit`` for the pass."""
        # Direct admissions this pass count against the shard's limit.
        handled = state.spent.get(shard, 0)
        while handled < self.config.admit_limit and not self._out_of_time(state):
            limit = min(self.config.batch_size, self.config.admit_limit - handled)
            due = self.store.records.pending_due(shard, from_bucket, to_bucket, due_by, limit)
            if not due:
                break
            progress = self._dispatch_batch(due, now, state)
            handled += len(due)
            if not progress or len(due) < limit:
                break

    def _out_of_time(self, state: PassState) -> bool:
        if state.deadline is None or self.clock.now() < state.deadline:
            return False
        state.dispatch.out_of_time = True
        return True

    # --- one batch ------------------------------------------------------------------------------

    def _dispatch_batch(
        self, due: list[PendingOccurrence], now: datetime, state: PassState
    ) -> bool:
        """Admit, close or resend one batch. True if anything changed."""
        report = state.dispatch
        waiting = [r for r in due if r.status is RunStatus.SCHEDULED]
        resend = [
            r
            for r in due
            if r.status is not RunStatus.SCHEDULED and r.occurrence_id not in state.sent
        ]
        # The start decision, on the state the admission's write checks (a
        # refused one is decided again with its schedule read, below).
        versions = self.store.schedules.get_versions({(r.schedule_id, r.version) for r in waiting})
        to_admit: list[PendingOccurrence] = []
        closures: list[Closure] = []
        failed: dict[str, tuple[int, Exception]] = {}
        for run in waiting:
            version = versions.get((run.schedule_id, run.version))
            if version is None:
                to_admit.append(run)
                continue
            try:
                verdict = judge.before_write(
                    run.kind, run.scheduled_at, version.spec, version.policy, now
                )
            except Exception as error:  # any error sets that schedule aside
                # Not admitted; closed as quarantined, and its schedule set aside.
                failed.setdefault(run.schedule_id, (run.version, error))
                closures.append(Closure(run.occurrence_id, RunStatus.SKIPPED, QUARANTINED))
                continue
            closure = judge.closure(run.occurrence_id, verdict)
            if closure is None:
                to_admit.append(run)
            else:
                closures.append(closure)
        for schedule_id, (number, cause) in failed.items():
            if quarantine_schedule(
                self.store, schedule_id, number, cause, QuarantineComponent.DISPATCH, now
            ):
                report.quarantined.append(schedule_id)
        admitted = to_admit
        if to_admit:
            won = self.store.records.admit(to_admit, now)
            if len(won) != len(to_admit):  # some were refused
                kept = set(won)
                admitted = [p for p in to_admit if p.occurrence_id in kept]
        closed = set(self.store.records.close_runs(closures, now)) if closures else set()
        for closure in closures:
            if closure.occurrence_id in closed:
                if closure.status is RunStatus.SKIPPED:
                    report.skipped += 1
                else:
                    report.expired += 1
        refused = {r.occurrence_id for r in to_admit} - {r.occurrence_id for r in admitted}
        changed = bool(admitted or closed)
        if refused:
            changed |= self._close_refused(refused, now, report)
        report.admitted += len(admitted)
        if admitted:  # all admitted at ``now``: the oldest has the largest lag
            report.note_lag((now - min([p.scheduled_at for p in admitted])).total_seconds())
        report.resent += len(resend)
        sending: list[Run | PendingOccurrence] = [*resend, *admitted]
        changed |= send_intents(self.store, self.queue, sending, now, state)
        return changed

    def _close_refused(self, refused: set[str], now: datetime, report: DispatchReport) -> bool:
        """Close the records the store would not admit whose schedule no longer
        lets them start (``judge.after_refusal``)."""
        closures = [
            closure
            for occurrence_id in sorted(refused)
            if (closure := judge.after_refusal(self.store, occurrence_id, now)) is not None
        ]
        closed = self.store.records.close_runs(closures, now) if closures else []
        report.skipped += len(closed)
        return bool(closed)
