"""Surges (service/planning/surge.py): the load ledger's counts, and the tick's trigger that
starts drains before a crowded second, once, at its moment."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest

from domain.run import DeliveryIntent
from service.planning.surge import (
    DRAIN_READY_S,
    MAX_DRAINS,
    PER_DRAIN,
    LoadLedger,
    LoadRecordingQueue,
    Surges,
    drains_for,
    lead_s,
)
from service.ports import HOLD, DeliveryQueue, second_of
from tests.conftest import FakeClock, utc

NOW = utc("2026-12-01T08:02:00Z")


class MemoryLedger(LoadLedger):
    def __init__(self) -> None:
        self.counts: dict[datetime, int] = {}
        self.shards: list[int] = []
        self.claims: dict[datetime, str] = {}
        self.reads: list[tuple[datetime, datetime]] = []

    def record(self, counts: Mapping[datetime, int], shard: int) -> None:
        self.shards.append(shard)
        for second, n in counts.items():
            self.counts[second] = self.counts.get(second, 0) + n

    def read(self, start: datetime, end: datetime) -> dict[datetime, int]:
        self.reads.append((start, end))
        return {s: n for s, n in self.counts.items() if start <= s <= end}

    def claim(self, second: datetime, owner: str) -> bool:
        return self.claims.setdefault(second, owner) == owner


class BrokenLedger(MemoryLedger):
    def record(self, counts: Mapping[datetime, int], shard: int) -> None:
        raise ConnectionError("ledger down")


class SentQueue(DeliveryQueue):
    def __init__(self, failing: set[str] | None = None) -> None:
        self.sent: list[DeliveryIntent] = []
        self.failing = failing or set()
        self.early: list[set[datetime]] = []  # each send_ahead's early seconds

    def send_batch(self, intents: Any) -> list[str]:
        self.sent.extend(intents)
        return [i.occurrence_id for i in intents if i.occurrence_id in self.failing]

    def send_ahead(self, intents: Any, now: datetime, early: Any = ()) -> list[str]:
        self.early.append(set(early))
        return self.send_batch(intents)


def intent(n: int, at: datetime, schedule: str = "s1") -> DeliveryIntent:
    return DeliveryIntent(f"o{n}", schedule, 1, at)


# --- sizes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "drains"), [(1, 1), (PER_DRAIN, 1), (PER_DRAIN + 1, 2), (10_000, 667)]
)
def test_a_drain_takes_its_share_of_a_second(count: int, drains: int) -> None:
    assert drains_for(count) == drains


def test_the_drains_of_one_second_are_capped() -> None:
    assert drains_for(10_000_000) == MAX_DRAINS


# The worker's CPU for a message before its target is called, at 448 MB (four requests of
# about 5.7 ms in the simulator's model).
WORKER_START_CPU_S = 0.023


def test_the_lead_grows_with_the_invokes_to_send() -> None:
    assert lead_s(1) < lead_s(400)
    # Ready by the time a crowded second's intents may start to become visible.
    assert lead_s(1) > DRAIN_READY_S + HOLD.total_seconds()


def test_an_intent_is_counted_in_the_second_it_becomes_visible() -> None:
    assert second_of(utc("2026-12-01T08:03:00Z")) == utc("2026-12-01T08:03:00Z")
    assert second_of(utc("2026-12-01T08:03:00.2Z")) == utc("2026-12-01T08:03:01Z")


# --- counting -------------------------------------------------------------------------------


def test_what_is_queued_ahead_is_counted_by_due_second() -> None:
    ledger = MemoryLedger()
    queue = SentQueue()
    at = NOW + timedelta(seconds=60)
    later = NOW + timedelta(seconds=61)
    recording = LoadRecordingQueue(queue, ledger)
    assert recording.send_ahead([intent(1, at), intent(2, at), intent(3, later)], NOW) == []
    assert len(queue.sent) == 3
    assert ledger.counts == {at: 2, later: 1}


def test_a_pass_counts_only_its_crowded_seconds() -> None:
    ledger = MemoryLedger()
    at = NOW + timedelta(seconds=60)
    quiet = NOW + timedelta(seconds=70)
    batch = [intent(n, at) for n in range(10)] + [intent(99, quiet)]
    LoadRecordingQueue(SentQueue(), ledger, min_count=10).send_ahead(batch, NOW)
    assert ledger.counts == {at: 10}


def test_a_second_crowded_enough_for_a_surge_is_sent_early() -> None:
    at = NOW + timedelta(seconds=60)
    quiet = NOW + timedelta(seconds=70)
    queue = SentQueue()
    recording = LoadRecordingQueue(queue, MemoryLedger(), deferred=True, early_min=10)
    recording.send_ahead([intent(n, at) for n in range(10)] + [intent(99, quiet)], NOW)
    assert queue.early == [{at}]  # the quiet second stays rounded up


def test_a_second_goes_early_once_the_pass_has_sent_enough_of_it() -> None:
    at = NOW + timedelta(seconds=60)
    queue = SentQueue()
    recording = LoadRecordingQueue(queue, MemoryLedger(), deferred=True, early_min=10)
    recording.send_ahead([intent(n, at) for n in range(6)], NOW)
    recording.send_ahead([intent(n, at) for n in range(6, 12)], NOW)
    assert queue.early == [set(), {at}]
    recording.flush()  # the next pass starts counting again
    recording.send_ahead([intent(n, at) for n in range(12, 18)], NOW)
    assert queue.early[-1] == set()


def test_without_a_threshold_nothing_is_sent_early() -> None:
    at = NOW + timedelta(seconds=60)
    queue = SentQueue()
    LoadRecordingQueue(queue, MemoryLedger()).send_ahead([intent(n, at) for n in range(500)], NOW)
    assert queue.early == [set()]


def test_intents_not_sent_or_due_too_soon_are_not_counted() -> None:
    ledger = MemoryLedger()
    at = NOW + timedelta(seconds=60)
    soon = NOW + timedelta(seconds=DRAIN_READY_S / 2)  # no drain could be ready for it
    failed = LoadRecordingQueue(SentQueue(failing={"o1"}), ledger).send_ahead(
        [intent(1, at), intent(2, at), intent(3, soon)], NOW
    )
    assert failed == ["o1"]
    assert ledger.counts == {at: 1}


def test_intents_sent_at_once_are_not_counted() -> None:
    ledger = MemoryLedger()
    LoadRecordingQueue(SentQueue(), ledger).send_batch([intent(1, NOW + timedelta(minutes=1))])
    assert ledger.counts == {}


def test_a_ledger_that_fails_costs_the_surge_not_the_send() -> None:
    errors: list[Exception] = []
    queue = SentQueue()
    recording = LoadRecordingQueue(queue, BrokenLedger(), on_error=errors.append)
    assert recording.send_ahead([intent(1, NOW + timedelta(minutes=1))], NOW) == []
    assert len(queue.sent) == 1
    assert [type(e) for e in errors] == [ConnectionError]


def test_the_counter_shard_follows_the_schedule() -> None:
    ledger = MemoryLedger()
    recording = LoadRecordingQueue(SentQueue(), ledger)
    at = NOW + timedelta(minutes=1)
    for _ in range(2):
        recording.send_ahead([intent(1, at, "sched-a")], NOW)
    recording.send_ahead([intent(1, at, "sched-b")], NOW)
    assert ledger.shards[0] == ledger.shards[1]
    assert ledger.shards[2] != ledger.shards[0]


# --- the trigger ----------------------------------------------------------------------------


class Trigger:
    def __init__(self, surge_min: int = 100, refuse: int = 0) -> None:
        self.clock = FakeClock(NOW)
        self.ledger = MemoryLedger()
        self.invoked: list[tuple[datetime, list[dict[str, Any]]]] = []
        self.refuse = refuse

        def invoke(events: list[dict[str, Any]]) -> int:
            self.invoked.append((self.clock.now(), events))
            return min(self.refuse, len(events))

        def sleep(seconds: float) -> None:
            self.clock.advance(timedelta(seconds=seconds))

        self.surges = Surges(
            self.ledger, invoke, self.clock, sleep, owner="tick-1", surge_min=surge_min
        )


def test_a_crowded_second_gets_its_drains_its_lead_before_it() -> None:
    trigger = Trigger()
    second = NOW + timedelta(seconds=60)
    trigger.ledger.counts[second] = 1_000
    report = trigger.surges.run(until=NOW + timedelta(seconds=60))
    [(when, events)] = trigger.invoked
    assert len(events) == drains_for(1_000) == report.drains
    assert when == second - timedelta(seconds=lead_s(len(events)))
    assert {e["at"] for e in events} == {second.isoformat()}
    assert all(e["duetime"] == "drain" and e["limit"] == 18 for e in events)
    assert report.started == 1 and report.waited_s == pytest.approx(60 - lead_s(67))


def test_the_last_message_a_drain_of_a_burst_takes_starts_within_half_a_second() -> None:
    """A drain's messages share its container's CPU: the last of its take waits for the
    reads and writes of all the others before its target is called. At 25 a drain (30
    with the margin) that was 0.69 s of CPU, the burst's slowest starts."""
    trigger = Trigger()
    second = NOW + timedelta(seconds=60)
    trigger.ledger.counts[second] = 10_000
    trigger.surges.run(until=NOW + timedelta(seconds=60))
    [(_, events)] = trigger.invoked
    most = max(e["limit"] for e in events)
    assert most * WORKER_START_CPU_S < 0.5
    assert len(events) * most >= 12_000  # a fifth more than the second holds


def test_a_quiet_second_gets_no_surge() -> None:
    trigger = Trigger(surge_min=100)
    trigger.ledger.counts[NOW + timedelta(seconds=30)] = 99
    assert trigger.surges.run(until=NOW + timedelta(seconds=60)).started == 0
    assert trigger.invoked == []


def test_a_surge_is_started_once_whoever_sees_it() -> None:
    trigger = Trigger()
    second = NOW + timedelta(seconds=30)
    trigger.ledger.counts[second] = 500
    trigger.ledger.claims[second] = "tick-2"  # an overlapping pass took it
    assert trigger.surges.run(until=NOW + timedelta(seconds=60)).started == 0
    assert trigger.invoked == []


def test_a_surge_whose_moment_is_after_the_next_pass_is_left_to_it() -> None:
    trigger = Trigger()
    trigger.ledger.counts[NOW + timedelta(seconds=85)] = 500
    assert trigger.surges.run(until=NOW + timedelta(seconds=60)).seen == 0
    assert trigger.invoked == [] and trigger.clock.now() == NOW


def test_a_surge_whose_moment_passed_starts_at_once_while_its_second_is_ahead() -> None:
    trigger = Trigger()
    trigger.ledger.counts[NOW + timedelta(seconds=1)] = 500
    trigger.ledger.counts[NOW - timedelta(seconds=1)] = 500  # gone: nothing to start
    report = trigger.surges.run(until=NOW + timedelta(seconds=60))
    [(when, _)] = trigger.invoked
    assert when == NOW and report.started == 1 and report.waited_s == 0


def test_surges_start_in_the_order_of_their_moments() -> None:
    trigger = Trigger()
    first, second = NOW + timedelta(seconds=20), NOW + timedelta(seconds=40)
    trigger.ledger.counts[second] = 200
    trigger.ledger.counts[first] = 5_000
    trigger.surges.run(until=NOW + timedelta(seconds=60))
    assert [events[0]["at"] for _, events in trigger.invoked] == [
        first.isoformat(),
        second.isoformat(),
    ]


def test_refused_invokes_are_reported() -> None:
    trigger = Trigger(refuse=2)
    trigger.ledger.counts[NOW + timedelta(seconds=30)] = 500
    report = trigger.surges.run(until=NOW + timedelta(seconds=60))
    assert report.refused == 2 and report.drains == drains_for(500)


def test_the_pass_reads_the_ledger_as_far_as_its_longest_lead() -> None:
    trigger = Trigger()
    trigger.surges.run(until=NOW + timedelta(seconds=60))
    [(start, end)] = trigger.ledger.reads
    assert start == NOW
    assert end == NOW + timedelta(seconds=60 + lead_s(MAX_DRAINS))


def test_a_pass_adds_up_its_sends_and_writes_its_crowded_seconds_once_at_its_end() -> None:
    ledger = MemoryLedger()
    at = NOW + timedelta(seconds=60)
    quiet = NOW + timedelta(seconds=70)
    recording = LoadRecordingQueue(SentQueue(), ledger, min_count=30, deferred=True)
    for page in range(4):  # four sends of 10 for the same second, one for a quiet one
        recording.send_ahead([intent(page * 10 + n, at) for n in range(10)], NOW)
    recording.send_ahead([intent(99, quiet)], NOW)
    assert ledger.counts == {}  # nothing written while the pass sends
    recording.flush()
    assert ledger.counts == {at: 40} and len(ledger.shards) == 1
    recording.flush()  # the next pass starts from nothing
    assert ledger.counts == {at: 40} and len(ledger.shards) == 1


def test_the_trigger_writes_what_its_pass_counted_before_it_reads() -> None:
    trigger = Trigger()
    second = NOW + timedelta(seconds=30)
    recording = LoadRecordingQueue(SentQueue(), trigger.ledger, min_count=50, deferred=True)
    recording.send_ahead([intent(n, second) for n in range(500)], NOW)
    trigger.surges.counted = recording.flush
    assert trigger.surges.run(until=NOW + timedelta(seconds=60)).started == 1


# --- how long a pass may plan early -----------------------------------------------------------


MARGIN = timedelta(seconds=10)


def test_with_no_surge_ahead_a_pass_may_plan_early_until_its_deadline() -> None:
    trigger = Trigger(surge_min=100)
    trigger.ledger.counts[NOW + timedelta(seconds=30)] = 99  # quiet
    trigger.ledger.counts[NOW - timedelta(seconds=5)] = 5_000  # gone
    until = NOW + timedelta(seconds=50)
    assert trigger.surges.quiet_until(NOW, until, margin=MARGIN) == until


def test_planning_early_ends_a_margin_before_the_first_surges_moment() -> None:
    trigger = Trigger(surge_min=100)
    first, later = NOW + timedelta(seconds=30), NOW + timedelta(seconds=40)
    trigger.ledger.counts[later] = 5_000
    trigger.ledger.counts[first] = 500
    moment = first - timedelta(seconds=lead_s(drains_for(500)))
    got = trigger.surges.quiet_until(NOW, NOW + timedelta(seconds=50), margin=MARGIN)
    assert got == moment - MARGIN


def test_what_the_pass_counted_and_has_not_written_counts_too() -> None:
    trigger = Trigger(surge_min=100)
    second = NOW + timedelta(seconds=40)
    trigger.ledger.counts[second] = 60
    pending = {second: 60}  # 120 in all: a surge
    got = trigger.surges.quiet_until(NOW, NOW + timedelta(seconds=50), pending, margin=MARGIN)
    assert got == second - timedelta(seconds=lead_s(drains_for(120))) - MARGIN
    assert trigger.ledger.counts == {second: 60}  # read, not written


def test_a_surge_whose_moment_is_past_the_deadline_bounds_nothing() -> None:
    trigger = Trigger(surge_min=100)
    trigger.ledger.counts[NOW + timedelta(seconds=80)] = 500
    until = NOW + timedelta(seconds=50)
    assert trigger.surges.quiet_until(NOW, until, margin=MARGIN) == until


def test_a_surge_at_hand_leaves_no_time_to_plan_early() -> None:
    trigger = Trigger(surge_min=100)
    trigger.ledger.counts[NOW + timedelta(seconds=3)] = 500
    got = trigger.surges.quiet_until(NOW, NOW + timedelta(seconds=50), margin=MARGIN)
    assert got == NOW
