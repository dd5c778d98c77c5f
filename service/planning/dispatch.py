"""Dispatch: admit or close the pending records that are due, and send the admitted.

For each shard it holds a lease on, a pass walks the buckets from where the
shard's work starts and takes the pending records due by its reach, oldest
first, in batches, at most ``admit_limit`` per shard per pass (direct
admissions included), so a long outage cannot flood the workers. Each record
is admitted (the conditional ``scheduled -> admitted``) or closed, as the start
decision says (service/planning/judge.py); the intents of the admitted are sent,
then marked sent (service/planning/outbox.py). Admitted records never marked
sent are sent again.

- **Due now** (a pass without queue ahead): every shard of the process's fair
  share is walked from its checkpoint up to now, and the checkpoint then moves
  as far as ``Partitioning.next_checkpoint`` allows, by a write fenced by the
  lease epoch.
- **Queue ahead**: one read of each shard's earliest pending bucket; only a
  shard with pending work due within the ``ahead`` reach is leased and walked,
  from that bucket, and no checkpoint is written. An idle pass takes no lease.
"""

from __future__ import annotations

from datetime import datetime

from domain.run import PendingOccurrence, Run, RunStatus
from domain.schedule import QUARANTINED, QuarantineComponent
from service.planning import judge
from service.planning.config import TickConfig
from service.planning.membership import Membership
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
        self.membership = Membership(store, clock, config, owner)
        # The planner admits as it stores only in shards this dispatcher says are ready.
        self.direct = DirectAdmission(store, queue, self._ready)

    def acquire_leases(self, now: datetime) -> list[Lease]:
        return self.membership.acquire_leases(now)

    def release_all(self) -> None:
        self.membership.release_all()

    def dispatch(self, state: PassState) -> DispatchReport:
        """Dispatch the shards this process holds (taking or renewing their
        leases) into the pass's report; no batch is started after the pass's
        ``deadline`` (what is left stays pending, for the next pass)."""
        now = self.clock.now()
        if self.config.queue_ahead:
            self._dispatch_ahead(now, state)
        else:
            leases = self.acquire_leases(now)
            state.dispatch.shards = [lease.shard for lease in leases]
            for lease in leases:
                self._dispatch_shard(lease, now, state)
        return state.dispatch

    # --- readiness for direct admission -----------------------------------------------------

    def _ready(self, state: PassState, shard: int) -> int:
        """How many slots the planner may admit as it stores in ``shard`` this
        pass: ``admit_limit`` when the pass holds the shard and nothing pending
        there is due (a backlog goes first, through dispatch), else none. Leases
        are taken the first time the planner asks, so a pass with nothing due
        to admit directly costs nothing more."""
        now = self.clock.now()
        to_bucket = self.config.partitioning.bucket(now)
        if self.config.queue_ahead:
            if self.membership.lease(shard, now) is None:
                return 0
            start = self.store.earliest_pending_bucket(shard)
            if start is None or start > to_bucket:
                return self.config.admit_limit  # nothing pending is due
        else:
            if state.leases is None:
                state.leases = {lease.shard: lease for lease in self.acquire_leases(now)}
            lease = state.leases.get(shard)
            if lease is None or not lease.live(now):
                return 0
            start = self._start_bucket(lease, now)
        if self.store.pending_due(shard, start, to_bucket, now, 1):
            return 0
        return self.config.admit_limit

    # --- walking ------------------------------------------------------------------------------

    def _dispatch_ahead(self, now: datetime, state: PassState) -> None:
        """Per shard, one read of its earliest pending bucket; only a shard with
        pending work due within the ``ahead`` reach is leased and walked."""
        parts = self.config.partitioning
        due_by = now + self.config.ahead
        to_bucket = parts.bucket(due_by)
        for shard in self.membership.order:
            if self._out_of_time(state):
                return
            earliest = self.store.earliest_pending_bucket(shard)
            if earliest is None or earliest > to_bucket:
                continue
            lease = self.membership.lease(shard, now)
            if lease is None:
                continue  # another process holds it; it dispatches the shard
            state.dispatch.shards.append(shard)
            self._walk(shard, earliest, to_bucket, due_by, now, state)
        state.dispatch.shards.sort()

    def _start_bucket(self, lease: Lease, now: datetime) -> int:
        """The bucket dispatch starts from: the lease's checkpoint, or for a
        shard never checkpointed, the earliest pending one (or the first open)."""
        if lease.checkpoint is not None:
            return lease.checkpoint
        parts = self.config.partitioning
        earliest = self.store.earliest_pending_bucket(lease.shard)
        start = parts.first_open_bucket(now)
        return start if earliest is None else min(start, earliest)

    def _dispatch_shard(self, lease: Lease, now: datetime, state: PassState) -> None:
        parts = self.config.partitioning
        shard = lease.shard
        if not lease.live(now):
            return  # lost it while stalled; acquire_leases decides again next pass
        if self._out_of_time(state):
            return  # the checkpoint stays: the next pass walks from it
        checkpoint = self._start_bucket(lease, now)
        self._walk(shard, checkpoint, parts.bucket(now), now, now, state)
        earliest = self.store.earliest_pending_bucket(shard, checkpoint)
        target = parts.next_checkpoint(checkpoint, earliest, now)
        if target != lease.checkpoint and not self.store.set_checkpoint(
            shard, self.owner, lease.epoch, target
        ):
            state.dispatch.checkpoint_refused.append(shard)

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
            due = self.store.pending_due(shard, from_bucket, to_bucket, due_by, limit)
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
        versions = self.store.get_versions({(r.schedule_id, r.version) for r in waiting})
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
            won = self.store.admit(to_admit, now)
            if len(won) != len(to_admit):  # some were refused
                kept = set(won)
                admitted = [p for p in to_admit if p.occurrence_id in kept]
        closed = set(self.store.close_runs(closures, now)) if closures else set()
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
        closed = self.store.close_runs(closures, now) if closures else []
        report.skipped += len(closed)
        return bool(closed)
