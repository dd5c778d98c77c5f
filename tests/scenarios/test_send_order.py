"""The planner's order for a slot admitted as it is stored: store, send, outbox
for what failed, advance (service/planning/planner.py), on both stores.

A pass killed at its send, or whose send fails, leaves the run to be sent by
a later pass: in the outbox, or with its schedule not advanced past it, so
the next pass plans the slot again and is handed it to send. Were the
schedule advanced before the send, a DynamoDB record stored out of the
outbox would be lost.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from domain.partition import Partitioning
from domain.run import DeliveryIntent, RunStatus
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.ports import Store
from tests.conftest import FakeClock, FakeQueue, build_schedule, utc
from tests.contract.builders import Opener
from tests.contract.conftest import OPENERS

CREATED = utc("2026-12-01T08:00:00Z")
DUE = utc("2026-12-01T08:05:00Z")
CONFIG = TickConfig(partitioning=Partitioning(shards=2, bucket_s=60), lookahead=timedelta(0))


class RefusingQueue(FakeQueue):
    """A queue that cannot send the intents of ``refused`` (and says so)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: set[str] = set()

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        failed = [i.occurrence_id for i in intents if i.occurrence_id in self.refused]
        super().send_batch([i for i in intents if i.occurrence_id not in self.refused])
        return failed


@pytest.fixture(params=sorted(OPENERS))
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    yield from OPENERS[request.param](tmp_path)


def _due_schedule(store: Store) -> tuple[str, str]:
    """A schedule due at 08:05, and the id of that slot's run."""
    schedule = build_schedule(CREATED, spec={"cron": "5 8 * * *"})
    store.schedules.create(schedule)
    assert schedule.next_due == DUE
    return schedule.schedule_id, f"{schedule.schedule_id}.v1.20261201T080500Z"


def _tick(store: Store, queue: FakeQueue, clock: FakeClock, owner: str) -> None:
    Ticker(store, queue, clock, CONFIG, owner=owner).tick_once()


def test_a_pass_killed_at_its_send_leaves_the_run_to_the_next_pass(reopen: Opener) -> None:
    store, queue, clock = reopen(), RefusingQueue(), FakeClock(DUE + timedelta(seconds=1))
    sid, occurrence_id = _due_schedule(store)
    queue.fail_with = SystemExit("killed at the send")
    with pytest.raises(SystemExit):
        _tick(store, queue, clock, "tick-a")
    # Stored admitted, never sent: in the outbox, or its schedule not advanced.
    restarted = reopen()
    run = restarted.records.get_run(occurrence_id)
    assert run is not None and run.status is RunStatus.ADMITTED and queue.sent == []
    head = restarted.schedules.get(sid)
    assert head is not None
    assert run.pending or head.next_due == DUE

    clock.advance(CONFIG.lease_ttl)  # tick-a's leases run out
    _tick(restarted, queue, clock, "tick-b")
    assert [i.occurrence_id for i in queue.sent] == [occurrence_id]
    head = restarted.schedules.get(sid)
    assert head is not None and head.next_due == DUE + timedelta(days=1)
    after = restarted.records.get_run(occurrence_id)
    assert after is not None and after.admitted_at == run.admitted_at and not after.pending


def test_a_failed_send_waits_in_the_outbox_and_the_next_pass_sends_it(reopen: Opener) -> None:
    store, queue, clock = reopen(), RefusingQueue(), FakeClock(DUE + timedelta(seconds=1))
    sid, occurrence_id = _due_schedule(store)
    queue.refused.add(occurrence_id)
    _tick(store, queue, clock, "tick-a")
    run = store.records.get_run(occurrence_id)
    assert run is not None and run.status is RunStatus.ADMITTED
    assert run.pending and run.sent_at is None and queue.sent == []
    head = store.schedules.get(sid)
    assert head is not None and head.next_due == DUE + timedelta(days=1)

    queue.refused.clear()
    clock.advance(timedelta(seconds=1))
    _tick(store, queue, clock, "tick-a")  # dispatch sends it from the outbox
    assert [i.occurrence_id for i in queue.sent] == [occurrence_id]
    sent = store.records.get_run(occurrence_id)
    assert sent is not None and not sent.pending
