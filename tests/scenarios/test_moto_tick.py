"""Failures replayed on DynamoDB and SQS (moto in server mode, one boto3 client
per tick, as separate Lambda invocations would have).

- Two ticks dispatch the same shard at once: one holds the lease, the other
  stalled past its lease and carries on believing it still holds it. Every
  slot that came due is admitted exactly once, by one of them, and sent.
- A tick is killed between the admission commit and the SQS send: the next
  tick sends the intent; there is still one occurrence, admitted once.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

from adapters.definitions import DELIVERY_QUEUE, create_queues
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.store import DynamoPorts, dynamo_store
from adapters.dynamodb.tables import TableNames
from adapters.sqs import SqsDeliveryQueue
from domain.partition import Partitioning
from domain.run import DeliveryIntent, PendingOccurrence, RunStatus
from domain.spec import slots_after
from service.planning.config import TickConfig
from service.planning.pass_state import DispatchReport
from service.planning.ticker import Ticker
from service.ports import Lease, Materialized, MaterializeOutcome
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition, utc

pytestmark = pytest.mark.slow

START = utc("2026-12-01T08:00:00Z")
REGION = "us-east-1"
WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


class OneRequestAtATime(ThreadedMotoServer):
    """moto in server mode, answering one request at a time.

    DynamoDB applies each request atomically; moto's backends are not safe
    under concurrent requests (a transaction deep-copies tables that another
    request is writing, and an update is visible half applied). Serving one
    request at a time gives moto DynamoDB's atomicity, while the two ticks'
    requests still interleave in any order.
    """

    def _server_entry(self) -> None:
        lock = threading.Lock()
        app = DomainDispatcherApplication(create_backend_app)

        def serial(environ: Any, start_response: Any) -> Any:
            with lock:
                return list(app(environ, start_response))

        self._server = make_server(
            self._ip_address, self._port, serial, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = OneRequestAtATime(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def _client(endpoint: str, service: str) -> Any:
    """A client of its own, as each tick invocation has."""
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    return session.client(service, endpoint_url=endpoint)


@dataclass
class Deployment:
    endpoint: str
    tables: TableNames
    queue_url: str

    def store(self) -> DynamoPorts:
        # Several requests in flight per tick, as deployed; the server answers
        # them one at a time.
        client = _client(self.endpoint, "dynamodb")
        return dynamo_store(client, self.tables, due_shards=2, concurrency=4)

    def queue(self) -> SqsDeliveryQueue:
        return SqsDeliveryQueue(_client(self.endpoint, "sqs"), self.queue_url)

    def received(self) -> list[str]:
        """Every occurrence id on the delivery queue (drained)."""
        sqs = _client(self.endpoint, "sqs")
        ids: list[str] = []
        while True:
            messages = sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=60
            ).get("Messages", [])
            if not messages:
                return ids
            ids += [json.loads(m["Body"])["occurrence_id"] for m in messages]


@pytest.fixture
def deployment(endpoint: str) -> Deployment:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    tables = create_store_tables(_client(endpoint, "dynamodb"), prefix)
    urls = create_queues(_client(endpoint, "sqs"), prefix)
    return Deployment(endpoint, tables, urls[DELIVERY_QUEUE.env_var])


def recording(store: DynamoPorts, *, stalled: bool = False) -> list[str]:
    """The ids this tick's admissions win, kept as they are won: by the
    conditional admission, or inserted admitted by its materialization
    (direct admission). ``stalled``: the store as a tick that stalled past
    its lease sees it: it still believes every shard is its own, and
    dispatches them, without writing a lease (so the holder's stays the only
    one written, whenever it renews)."""
    admitted: list[str] = []
    admit, advance = store.records.admit, store.schedules.advance

    def admit_recorded(occurrences: Sequence[PendingOccurrence], now: datetime) -> list[str]:
        won = admit(occurrences, now)
        admitted.extend(won)
        return won

    def advance_recorded(stored: Materialized, sent: Collection[str]) -> list[MaterializeOutcome]:
        outcomes = advance(stored, sent)
        inserted = {i for outcome in outcomes for i in outcome.inserted}
        admitted.extend(r.occurrence_id for r in stored.to_send if r.occurrence_id in inserted)
        return outcomes

    def acquire_unwritten(shard: int, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
        return Lease(shard, owner, epoch=0, expires_at=now + ttl)

    store.records.admit = admit_recorded  # type: ignore[method-assign]
    store.schedules.advance = advance_recorded  # type: ignore[method-assign]
    if stalled:
        store.leases.acquire = acquire_unwritten  # type: ignore[method-assign]
    return admitted


STALLED = "tick-stalled"


def _create(service: ScheduleService, count: int, every: str) -> list[str]:
    return [
        service.create(
            definition(
                {
                    "name": f"job {i}",
                    "spec": {"every": every, "start_at": START.isoformat()},
                    "target": WEBHOOK,
                    "policy": {"overdue": "catch_up_all"},
                }
            )
        )[0].schedule_id
        for i in range(count)
    ]


def test_two_ticks_dispatching_one_shard_admit_each_occurrence_once(
    deployment: Deployment,
) -> None:
    clock = FakeClock(START - timedelta(seconds=1))
    config = TickConfig(
        partitioning=Partitioning(shards=1, bucket_s=60), lookahead=timedelta(seconds=10)
    )
    setup = deployment.store()
    ids = _create(ScheduleService(setup, clock, config.partitioning), 6, "PT10S")
    holder, stalled = deployment.store(), deployment.store()
    holder_won, stalled_won = recording(holder), recording(stalled, stalled=True)
    tickers = [
        Ticker(holder, deployment.queue(), clock, config, owner="tick-holder"),
        Ticker(stalled, deployment.queue(), clock, config, owner=STALLED),
    ]
    # The holder takes the lease first; the other's lease ran out long ago.
    assert tickers[0].dispatcher.lease(0, clock.now()) is not None
    errors: list[BaseException] = []
    reports: dict[str, list[DispatchReport]] = {t.owner: [] for t in tickers}

    def tick(ticker: Ticker, start: threading.Barrier) -> None:
        try:
            start.wait()
            reports[ticker.owner].append(ticker.tick_once().dispatch)
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    # Both tick the same shard at the same instants, concurrently, for a minute.
    for step in range(13):
        clock.set(START + timedelta(seconds=5 * step))
        start = threading.Barrier(len(tickers))
        threads = [threading.Thread(target=tick, args=(t, start)) for t in tickers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
    end = clock.now()

    due: set[str] = set()
    for sid in ids:
        schedule = setup.schedules.get(sid)
        assert schedule is not None
        expected = []
        first = START - timedelta(microseconds=1)  # start_at is inclusive
        for slot in slots_after(schedule.current.spec, schedule.current.policy.dst, first):
            if slot.scheduled_at > end:
                break
            expected.append(slot.scheduled_at)
        runs = [r for r in setup.records.runs(sid, 100).items if r.scheduled_at <= end]
        assert sorted(r.scheduled_at for r in runs) == expected  # nothing lost, no copy
        assert all(r.status is RunStatus.ADMITTED and not r.pending for r in runs)
        due |= {r.occurrence_id for r in runs}
    assert len(due) >= 6 * 6
    # Admitted once: the two ticks' wins are disjoint and cover every occurrence
    # (and the slots queued ahead of the end).
    won = set(holder_won) | set(stalled_won)
    assert not set(holder_won) & set(stalled_won)
    assert len(holder_won) + len(stalled_won) == len(won)
    assert due <= won
    assert due <= set(deployment.received())  # at least once
    [lease] = setup.leases.leases()
    assert lease.owner == "tick-holder"  # the stalled one never took it


class CrashingQueue(SqsDeliveryQueue):
    """The process is killed after the admission commit, before the send."""

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        raise SystemExit("killed between commit and send")

    def send_ahead(
        self, intents: Sequence[DeliveryIntent], now: datetime, early: Collection[datetime] = ()
    ) -> list[str]:
        raise SystemExit("killed between commit and send")


def test_a_restart_between_storing_an_admitted_occurrence_and_sending_it_is_repaired(
    deployment: Deployment,
) -> None:
    clock = FakeClock(START)
    config = TickConfig(partitioning=Partitioning(shards=2, bucket_s=60))
    store = deployment.store()
    service = ScheduleService(store, clock, config.partitioning)
    schedule, _ = service.create(
        definition({"name": "report", "spec": {"cron": "5 8 * * *"}, "target": WEBHOOK})
    )
    sid = schedule.schedule_id
    clock.set(utc("2026-12-01T08:05:01Z"))
    crashing = CrashingQueue(_client(deployment.endpoint, "sqs"), deployment.queue_url)
    with pytest.raises(SystemExit):
        Ticker(deployment.store(), crashing, clock, config, owner="tick-a").tick_once()
    [run] = store.records.runs(sid, 10).items
    # Stored admitted, out of the outbox, its intent not sent: the schedule
    # was not advanced past it, so the next pass plans the slot again.
    assert run.status is RunStatus.ADMITTED and not run.pending
    assert deployment.received() == []
    head = store.schedules.get(sid)
    assert head is not None and head.next_due == run.scheduled_at

    # The killed process's leases expire; a fresh process, with fresh clients, ticks.
    clock.advance(config.lease_ttl)
    Ticker(deployment.store(), deployment.queue(), clock, config, owner="tick-b").tick_once()
    assert deployment.received() == [run.occurrence_id]
    [after] = store.records.runs(sid, 10).items
    assert after.admitted_at == run.admitted_at  # admitted once, by the first tick
    assert not after.pending and after.sent_at == run.sent_at
    head = store.schedules.get(sid)
    assert head is not None and head.next_due is not None and head.next_due > run.scheduled_at
    Ticker(deployment.store(), deployment.queue(), clock, config, owner="tick-b").tick_once()
    assert deployment.received() == []
