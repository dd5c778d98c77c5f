"""An idle tick reads but hardly writes: leases are renewed at half their TTL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from adapters.sqlite.store import SqliteStore
from domain.partition import Partitioning
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.ports import Heartbeat, Lease
from tests.conftest import FakeClock, FakeQueue


class CountingStore(SqliteStore):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.acquires = 0
        self.beats = 0

    def acquire(self, shard: int, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
        self.acquires += 1
        return super().acquire(shard, owner, now, ttl)

    def beat(self, heartbeat: Heartbeat) -> None:
        self.beats += 1
        super().beat(heartbeat)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CountingStore]:
    store = CountingStore(tmp_path / "duetime.db")
    yield store
    store.close()


def test_leases_are_renewed_once_half_their_ttl_has_passed(
    store: CountingStore, clock: FakeClock
) -> None:
    config = TickConfig(partitioning=Partitioning(shards=4), lease_ttl=timedelta(seconds=30))
    ticker = Ticker(store, FakeQueue(), clock, config, owner="tick-a")
    ticker.tick_once()
    assert store.acquires == 4  # taken on the first pass
    first = {lease.shard: lease.expires_at for lease in store.leases()}

    for _ in range(14):  # one pass a second, for 14 s: more than half the TTL left
        clock.advance(1)
        report = ticker.tick_once()
        assert report.dispatch.shards == [0, 1, 2, 3]
    assert store.acquires == 4
    assert {lease.shard: lease.expires_at for lease in store.leases()} == first

    clock.advance(2)  # 16 s in: less than half left, so each is renewed
    ticker.tick_once()
    assert store.acquires == 8
    assert all(lease.expires_at == clock.now() + timedelta(seconds=30) for lease in store.leases())


def test_membership_is_beaten_every_quarter_ttl(store: CountingStore, clock: FakeClock) -> None:
    config = TickConfig(partitioning=Partitioning(shards=1), lease_ttl=timedelta(seconds=20))
    ticker = Ticker(store, FakeQueue(), clock, config, owner="tick-a")
    member_beats = []
    for _ in range(11):
        before = store.beats
        ticker.tick_once()
        member_beats.append(store.beats - before)
        clock.advance(1)
    # Each pass writes the tick heartbeat; the member heartbeat only every 5 s.
    assert member_beats == [2, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2]
