"""The lease and heartbeat port's contract (``LeaseStore`` in service/ports.py),
on every store: a shard's dispatch lease taken, renewed, released and fenced by
its epoch; a component's heartbeats, written plainly or only over the record
the writer read.
"""

from __future__ import annotations

from datetime import timedelta

from service.ports import Heartbeat, Store
from tests.contract.builders import NOW

TTL = timedelta(seconds=30)

# --- leases -------------------------------------------------------------------------------


def test_a_free_lease_is_taken_with_epoch_one_and_renewed_with_the_same_epoch(store: Store) -> None:
    lease = store.leases.acquire(3, "tick-a", NOW, TTL)
    assert lease is not None and (lease.owner, lease.epoch) == ("tick-a", 1)
    assert lease.expires_at == NOW + TTL
    renewed = store.leases.acquire(3, "tick-a", NOW + timedelta(seconds=10), TTL)
    assert renewed is not None and renewed.epoch == 1
    assert renewed.expires_at == NOW + timedelta(seconds=40)


def test_a_live_lease_is_refused_to_another_owner(store: Store) -> None:
    assert store.leases.acquire(0, "tick-a", NOW, TTL) is not None
    assert store.leases.acquire(0, "tick-b", NOW + timedelta(seconds=29), TTL) is None
    assert store.leases.acquire(1, "tick-b", NOW, TTL) is not None
    [held, _] = store.leases.leases()
    assert (held.owner, held.epoch, held.expires_at) == ("tick-a", 1, NOW + TTL)


def test_taking_over_an_expired_lease_increments_the_epoch_and_fences_the_old_holder(
    store: Store,
) -> None:
    old = store.leases.acquire(0, "tick-a", NOW, TTL)
    assert old is not None
    new = store.leases.acquire(0, "tick-b", NOW + TTL, TTL)
    assert new is not None and new.epoch == old.epoch + 1
    # The former holder wakes up: its release is refused, the new holder's lease stays.
    assert not store.leases.release(0, "tick-a", old.epoch, NOW + TTL)
    assert store.leases.leases()[0] == new
    # And it cannot renew the lease it lost while the new holder's is live.
    assert store.leases.acquire(0, "tick-a", NOW + TTL + timedelta(seconds=1), TTL) is None


def test_an_owner_taking_back_its_own_expired_lease_gets_a_new_epoch(store: Store) -> None:
    old = store.leases.acquire(0, "tick-a", NOW, TTL)
    assert old is not None
    again = store.leases.acquire(0, "tick-a", NOW + TTL, TTL)
    assert again is not None and again.epoch == old.epoch + 1


def test_release_frees_the_lease_for_the_next_owner(store: Store) -> None:
    lease = store.leases.acquire(1, "tick-a", NOW, TTL)
    assert lease is not None
    assert not store.leases.release(1, "tick-a", lease.epoch + 1, NOW)
    assert not store.leases.release(1, "tick-b", lease.epoch, NOW)
    assert store.leases.release(1, "tick-a", lease.epoch, NOW)
    taken = store.leases.acquire(1, "tick-b", NOW, TTL)
    assert taken is not None and taken.epoch == lease.epoch + 1
    assert [(x.shard, x.owner) for x in store.leases.leases()] == [(1, "tick-b")]


def test_release_expires_the_lease_now_keeping_its_epoch(store: Store) -> None:
    lease = store.leases.acquire(1, "tick-a", NOW, TTL)
    assert lease is not None
    released_at = NOW + timedelta(seconds=5)
    assert store.leases.release(1, "tick-a", lease.epoch, released_at)
    [after] = store.leases.leases()
    assert (after.owner, after.epoch) == ("tick-a", lease.epoch)
    assert after.expires_at == released_at and not after.live(released_at)


def test_leases_lists_every_lease_by_shard(store: Store) -> None:
    assert store.leases.leases() == []
    for shard in (2, 0, 3):
        assert store.leases.acquire(shard, f"tick-{shard}", NOW, TTL) is not None
    assert [(x.shard, x.owner) for x in store.leases.leases()] == [
        (0, "tick-0"),
        (2, "tick-2"),
        (3, "tick-3"),
    ]


# --- heartbeats ---------------------------------------------------------------------------


def test_heartbeats_keep_the_latest_beat(store: Store) -> None:
    assert store.leases.heartbeat("tick") is None
    store.leases.beat(Heartbeat("tick", NOW, {"admitted": 1}))
    store.leases.beat(Heartbeat("tick", NOW + timedelta(seconds=5), {"admitted": 2}))
    beat = store.leases.heartbeat("tick")
    assert beat == Heartbeat("tick", NOW + timedelta(seconds=5), {"admitted": 2})


def test_a_heartbeats_detail_is_read_back_as_written(store: Store) -> None:
    detail = {"admitted": 3, "lag_s": 0.25, "shards": [0, 2], "last": {"id": "occ_1"}, "ok": True}
    store.leases.beat(Heartbeat("watch:x", NOW, detail))
    assert store.leases.heartbeat("watch:x") == Heartbeat("watch:x", NOW, detail)


def test_a_conditional_beat_writes_only_over_the_record_it_read(store: Store) -> None:
    first = Heartbeat("alert:s1", NOW, {"status": "overdue"})
    assert store.leases.beat_if(first, None)  # no record yet
    assert not store.leases.beat_if(Heartbeat("alert:s1", NOW, {"status": "ok"}), None)
    later = Heartbeat("alert:s1", NOW + timedelta(minutes=1), {"status": "ok"})
    assert not store.leases.beat_if(later, NOW - timedelta(seconds=1))  # another beat read
    assert store.leases.heartbeat("alert:s1") == first  # nothing written by the refusals
    assert store.leases.beat_if(later, NOW)
    assert store.leases.heartbeat("alert:s1") == later
    # A record expected that is not there: nothing written.
    assert not store.leases.beat_if(Heartbeat("alert:s2", NOW, {}), NOW)
    assert store.leases.heartbeat("alert:s2") is None


def test_heartbeats_of_many_components_are_read_at_once(store: Store) -> None:
    components = [f"alert:s{i:03d}" for i in range(130)]  # more than one DynamoDB batch
    for component in components[::2]:
        store.leases.beat(Heartbeat(component, NOW, {"n": component}))
    found = store.leases.heartbeats_of(components)
    assert sorted(found) == components[::2]
    assert found["alert:s000"] == Heartbeat("alert:s000", NOW, {"n": "alert:s000"})
    assert store.leases.heartbeats_of([]) == {}
