"""A pause withdraws what was planned, on every store.

An every-second schedule planned 90 s ahead (every slot admitted and queued
with a delay) is paused for a minute: the slots planned after the pause are
withdrawn in one step, so its default run listing (what came due) grows by a
handful of rows at most, not by a lookahead's worth of skipped records; the
intents already queued for them are dropped by the worker; the resume records
the pause as one summary of the slots it kept from running (however long it
was, beyond the lookahead too, and once if the resume is tried again); after
the resume every slot runs once.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from domain.delivery import Delivery, Outcome
from domain.partition import Partitioning
from domain.run import DeliveryIntent, Run, RunKind, RunStatus
from domain.targets import Target
from service.planning.config import TickConfig
from service.planning.ticker import PlanNow, Ticker
from service.ports import DeliveryQueue, Store
from service.run_views import RunViews
from service.runs import RunWorker
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition, utc
from tests.contract.builders import run_store_of

START = utc("2026-12-01T08:00:00Z")
CONFIG = TickConfig(
    partitioning=Partitioning(shards=1, bucket_s=60),
    lookahead=timedelta(seconds=90),
)
WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


@dataclass
class HeldQueue(DeliveryQueue):
    held: list[DeliveryIntent] = field(default_factory=list)

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        self.held.extend(intents)
        return []

    def due(self, now: datetime) -> list[DeliveryIntent]:
        ready = sorted(
            (i for i in self.held if i.scheduled_at <= now), key=lambda i: i.scheduled_at
        )
        self.held = [i for i in self.held if i.scheduled_at > now]
        return ready


class Calls:
    def __init__(self) -> None:
        self.ids: list[str] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.ids.append(delivery.occurrence_id)
        return Outcome.succeeded(200)


class EachSecond:
    """An every-second schedule on ``store``, planned 90 s ahead, its intents
    delivered as they become visible."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clock = clock = FakeClock(START)
        self.queue = queue = HeldQueue()
        self.target = Calls()
        self.ticker = Ticker(store, queue, clock, CONFIG, owner="tick-1")
        self.worker = RunWorker(run_store_of(store), self.target, clock, random.Random(1))
        self.service = ScheduleService(
            store, clock, CONFIG.partitioning, planning=PlanNow(store, queue, clock, CONFIG)
        )
        self.views = RunViews(store, None, clock, CONFIG.partitioning)
        body = {"name": "each second", "spec": {"every": "PT1S"}, "target": WEBHOOK}
        self.sid = self.service.create(definition(body))[0].schedule_id

    def seconds(self, count: int) -> None:
        for _ in range(count):
            self.clock.advance(1)
            if self.clock.now().second % 10 == 0:
                self.ticker.tick_once()
            for intent in self.queue.due(self.clock.now()):
                self.worker.handle(intent)

    def listed(self) -> list[Run]:
        return list(self.views.list(schedule_id=self.sid, limit=100).items)


def test_pausing_an_every_second_schedule_for_a_minute_adds_a_handful_of_rows(
    store: Store,
) -> None:
    each = EachSecond(store)
    sid, service, seconds, target = each.sid, each.service, each.seconds, each.target
    views = each.views

    def listed() -> int:
        return len(each.listed())

    # Given the schedule running for 10 s, planned 90 s ahead
    seconds(10)
    assert listed() == 10
    # When it is paused for a minute, then resumed
    service.pause(sid, "maintenance")
    seconds(60)
    service.resume(sid)
    seconds(10)
    # Then its default listing grew by the 10 s it ran after the resume and
    # a handful of rows at most for the minute it was paused
    assert listed() <= 10 + 10 + 5
    paused = [
        r
        for r in views.list(schedule_id=sid, limit=100).items
        if START + timedelta(seconds=10) < r.scheduled_at <= START + timedelta(seconds=70)
    ]
    assert len(paused) <= 5
    # And the pause is recorded by one summary of the slots it kept from running
    assert [(r.kind, r.status, r.reason) for r in paused] == [
        (
            RunKind.SUMMARY,
            RunStatus.SKIPPED,
            "paused: 60 slots skipped, 2026-12-01T08:00:11Z to 2026-12-01T08:01:10Z",
        )
    ]
    # And nothing ran while paused; after the resume every slot ran once
    assert len(target.ids) == len(set(target.ids))
    ran = sorted(
        r.scheduled_at
        for r in views.list(schedule_id=sid, limit=100).items
        if r.status is RunStatus.SUCCEEDED
    )
    assert ran[-10:] == [START + timedelta(seconds=71 + i) for i in range(10)]
    assert all(
        not START + timedelta(seconds=10) < at <= START + timedelta(seconds=70) for at in ran
    )


def test_a_pause_longer_than_the_lookahead_is_one_row_recorded_once(store: Store) -> None:
    each = EachSecond(store)
    each.seconds(10)
    before = len(each.listed())
    # Paused for three minutes: twice the lookahead, so slots never planned too
    each.service.pause(each.sid)
    each.seconds(180)
    # The resume's first write loses a race once (it tries again a second later)
    resume, refused = store.schedules.resume, []

    def lose_once(schedule_id: str, **kw: Any) -> bool:
        if not refused:
            refused.append(kw)
            each.clock.advance(1)
            return False
        return resume(schedule_id, **kw)

    store.schedules.resume = lose_once  # type: ignore[method-assign]
    each.service.resume(each.sid)
    assert refused
    # Then the three minutes paused are one row of its listing
    paused_until = START + timedelta(seconds=190)
    rows = [r for r in each.listed() if r.scheduled_at <= paused_until]
    assert len(rows) == before + 1
    assert (rows[0].kind, rows[0].status, rows[0].reason) == (
        RunKind.SUMMARY,
        RunStatus.SKIPPED,
        "paused: 180 slots skipped, 2026-12-01T08:00:11Z to 2026-12-01T08:03:10Z",
    )
