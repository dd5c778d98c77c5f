"""Which shards this process dispatches: leases shared by heartbeat membership.

Several tick processes share the shards. Each beats a heartbeat under
``MEMBER_PREFIX``, counts the live members from theirs, keeps or takes free and
expired shards up to its fair share (shards / members, rounded up) and releases
the rest. A lease is fenced by its epoch (a number that only grows), so a stale
holder's writes are refused.

Membership and leases are written only when they need it: a member beats every
quarter of the lease TTL, and a lease is renewed once less than half of it is
left, so an idle pass reads but hardly writes. This is the one state that
outlives a pass: the leases held and the last beat.
"""

from __future__ import annotations

import math
import random
from datetime import datetime
from typing import Final

from service.planning.config import TickConfig
from service.ports import Clock, Heartbeat, Lease, Store

MEMBER_PREFIX: Final = "tick/"


class Membership:
    def __init__(self, store: Store, clock: Clock, config: TickConfig, owner: str) -> None:
        self.store = store
        self.clock = clock
        self.config = config
        self.owner = owner
        self.held: dict[int, Lease] = {}
        self._beaten_at: datetime | None = None
        # The order this process visits shards in: its own, so that processes
        # starting together reach for different shards first.
        self.order = list(range(config.partitioning.shards))
        random.Random(owner).shuffle(self.order)

    def acquire_leases(self, now: datetime) -> list[Lease]:
        """Renew or take shards up to this process's fair share; release the rest."""
        shards = self.config.partitioning.shards
        ttl = self.config.lease_ttl
        if self._beaten_at is None or now - self._beaten_at >= ttl / 4:
            self.store.beat(Heartbeat(MEMBER_PREFIX + self.owner, now, {}))
            self._beaten_at = now
        members = {
            h.component for h in self.store.heartbeats(MEMBER_PREFIX) if h.at > now - ttl
        } | {MEMBER_PREFIX + self.owner}
        fair = math.ceil(shards / len(members))
        records = {lease.shard: lease for lease in self.store.leases()}
        mine = [s for s in self.order if (r := records.get(s)) and r.owner == self.owner]
        held: dict[int, Lease] = {}
        for shard in mine:
            record = records[shard]
            if len(held) >= fair:
                if record.live(now):
                    self.store.release(shard, self.owner, record.epoch, now)
                continue
            if record.expires_at - now > ttl / 2:
                held[shard] = record  # still mine for a while: no write
                continue
            lease = self.store.acquire(shard, self.owner, now, ttl)
            if lease is not None:
                held[shard] = lease
        for shard in self.order:
            if len(held) >= fair:
                break
            if shard in held:
                continue
            other = records.get(shard)
            if other is not None and other.live(now):
                continue
            taken = self.store.acquire(shard, self.owner, now, ttl)
            if taken is not None:
                held[shard] = taken
        self.held = held
        return [held[s] for s in sorted(held)]

    def lease(self, shard: int, now: datetime) -> Lease | None:
        """This process's live lease on ``shard`` (taken or renewed when less
        than half its TTL is left), or None when another process holds it."""
        ttl = self.config.lease_ttl
        held = self.held.get(shard)
        if held is not None and held.expires_at - now > ttl / 2:
            return held
        lease = self.store.acquire(shard, self.owner, now, ttl)
        if lease is None:
            self.held.pop(shard, None)
            return None
        self.held[shard] = lease
        return lease

    def release_all(self) -> None:
        """Release every lease held and leave the membership (a beat that is
        already a lease TTL old), so the next process takes every shard at
        once instead of waiting for the leases to expire or counting this one
        in its fair share."""
        now = self.clock.now()
        for lease in self.held.values():
            self.store.release(lease.shard, lease.owner, lease.epoch, now)
        self.held = {}
        if self._beaten_at is not None:
            self.store.beat(Heartbeat(MEMBER_PREFIX + self.owner, now - self.config.lease_ttl, {}))
            self._beaten_at = None
