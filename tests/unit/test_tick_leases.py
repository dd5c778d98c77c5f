"""A tick leases a shard only when it has work there, and renews its lease at
half its TTL: an idle pass takes no lease, a busy one hardly writes one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite.leases import SqliteLeases
from adapters.sqlite.store import SqliteStore
from domain.partition import Partitioning
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.ports import Heartbeat, Lease
from service.schedules import ScheduleService
from tests.conftest import FakeClock, FakeQueue, definition, with_ports


class CountingLeases(SqliteLeases):
    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.acquires = 0
        self.beats = 0

    def acquire(self, shard: int, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
        self.acquires += 1
        return super().acquire(shard, owner, now, ttl)

    def beat(self, heartbeat: Heartbeat) -> None:
        self.beats += 1
        super().beat(heartbeat)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = with_ports(SqliteStore.open(tmp_path / "duetime.db"), leases=CountingLeases)
    yield store
    store.close()


def test_an_idle_pass_takes_no_lease_and_beats_once(store: SqliteStore, clock: FakeClock) -> None:
    config = TickConfig(partitioning=Partitioning(shards=4))
    ticker = Ticker(store, FakeQueue(), clock, config, owner="tick-a")
    for _ in range(10):
        report = ticker.tick_once()
        assert report.dispatch.shards == []
        clock.advance(1)
    assert store.leases.acquires == 0 and store.leases.leases() == []
    assert store.leases.beats == 10  # the tick's heartbeat, once a pass


def test_a_busy_shards_lease_is_renewed_once_half_its_ttl_has_passed(
    store: SqliteStore, clock: FakeClock
) -> None:
    config = TickConfig(partitioning=Partitioning(shards=1), lease_ttl=timedelta(seconds=30))
    ScheduleService(store, clock, config.partitioning).create(
        definition(
            {
                "name": "every second",
                "spec": {"every": "PT1S"},
                "target": {"type": "webhook", "url": "https://example.com/hook"},
            }
        )
    )
    ticker = Ticker(store, FakeQueue(), clock, config, owner="tick-a")
    ticker.tick_once()
    assert store.leases.acquires == 1  # taken on the first pass, which had slots to admit
    [first] = store.leases.leases()

    for _ in range(14):  # one pass a second, for 14 s: more than half the TTL left
        clock.advance(1)
        assert ticker.tick_once().dispatch.admitted == 1  # one more slot within reach
    assert store.leases.acquires == 1
    assert store.leases.leases() == [first]

    clock.advance(2)  # 16 s in: less than half left, so it is renewed
    ticker.tick_once()
    assert store.leases.acquires == 2
    [renewed] = store.leases.leases()
    assert renewed.epoch == first.epoch
    assert renewed.expires_at == clock.now() + timedelta(seconds=30)
