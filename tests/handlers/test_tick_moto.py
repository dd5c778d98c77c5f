"""The tick handler over the DynamoDB store on moto: consecutive invocations,
the leases they leave behind and the size of the leases table."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.store import DynamoPorts, dynamo_store
from adapters.dynamodb.tables import TableNames
from bootstrap.aws import EARLY_MARGIN_S, AwsTick
from domain.partition import Partitioning
from handlers import tick as tick_handler
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.ports import Heartbeat
from service.schedules import ScheduleService
from service.watchdog import Watchdog
from tests.conftest import FakeClock, FakeQueue, definition, utc

SHARDS = 4
# A short lookahead keeps the moto tables small.
CONFIG = TickConfig(
    partitioning=Partitioning(shards=SHARDS, bucket_s=60), lookahead=timedelta(seconds=10)
)


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 6000  # budget: a single pass


@pytest.fixture
def aws() -> Iterator[tuple[Any, TableNames]]:
    with mock_aws():
        client = boto3.client("dynamodb")
        yield client, create_store_tables(client, "tick")


def store_of(aws: tuple[Any, TableNames]) -> DynamoPorts:
    client, names = aws
    return dynamo_store(client, names, lease_shards=SHARDS)


def container(store: DynamoPorts, clock: FakeClock, queue: FakeQueue, owner: str) -> Ticker:
    """The ticker a Lambda container builds for its invocations."""
    return Ticker(store, queue, clock, CONFIG, owner=owner)


def every_second(store: DynamoPorts, clock: FakeClock, count: int) -> None:
    schedules = ScheduleService(store, clock, CONFIG.partitioning)
    for n in range(count):
        schedules.create(
            definition(
                {
                    "name": f"job {n}",
                    "spec": {"every": "PT1S"},
                    "target": {"type": "webhook", "url": "https://example.com/hook"},
                }
            )
        )


def items(aws: tuple[Any, TableNames]) -> list[str]:
    client, names = aws
    return sorted(i["pk"]["S"] for i in client.scan(TableName=names.leases)["Items"])


def test_the_next_invocation_in_a_new_container_dispatches_every_shard_at_once(
    aws: tuple[Any, TableNames],
) -> None:
    # Given one invocation that ended five seconds ago in another container
    store, clock, queue = store_of(aws), FakeClock(utc("2026-12-01T08:00:00Z")), FakeQueue()
    every_second(store, clock, 8)
    first = tick_handler.handler({}, Context(), service=container(store, clock, queue, "c1"))
    assert first["passes"] == 1
    clock.advance(5)
    sent_before = len(queue.sent)

    # When a new container ticks, with the old leases' 30 s TTL far from over
    second = container(store, clock, queue, "c2")
    result = tick_handler.handler({}, Context(), service=second)

    # Then it held every shard the first one had (released when it ended) and
    # queued the next five seconds of every schedule ahead
    assert result["admitted"] == len(queue.sent) - sent_before == 8 * 5
    assert {lease.owner for lease in store.leases.leases()} == {"c2"}


def test_an_invocation_releases_its_shards_even_when_a_pass_fails(
    aws: tuple[Any, TableNames],
) -> None:
    store, clock, queue = store_of(aws), FakeClock(utc("2026-12-01T08:00:00Z")), FakeQueue()
    every_second(store, clock, 2)
    clock.advance(3)
    ticker = container(store, clock, queue, "c1")
    dispatch = ticker.dispatcher.dispatch

    def dispatch_then_fail(*args: Any, **kwargs: Any) -> Any:
        dispatch(*args, **kwargs)
        raise ConnectionError("the store went away mid-pass")

    ticker.dispatcher.dispatch = dispatch_then_fail  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        tick_handler.handler({}, Context(), service=ticker)
    assert store.leases.leases() and not any(
        lease.live(clock.now()) for lease in store.leases.leases()
    )


def test_the_same_container_keeps_one_owner_across_invocations(
    aws: tuple[Any, TableNames], monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Ticker] = []
    store, clock, queue = store_of(aws), FakeClock(utc("2026-12-01T08:00:00Z")), FakeQueue()

    def build(settings: Any, **hooks: Any) -> AwsTick:
        built.append(container(store, clock, queue, f"c{len(built)}"))
        return AwsTick(built[-1], None)

    monkeypatch.setattr(tick_handler, "build_aws_ticker", build)
    monkeypatch.setattr(tick_handler, "_container_ticker", None)
    owners = {tick_handler.handler({}, Context())["owner"] for _ in range(3)}
    assert owners == {"c0"} and len(built) == 1


def test_a_hundred_invocations_leave_the_leases_table_at_a_constant_size(
    aws: tuple[Any, TableNames],
) -> None:
    # Each invocation in its own container: the worst case for per-owner items.
    store, clock, queue = store_of(aws), FakeClock(utc("2026-12-01T08:00:00Z")), FakeQueue()
    schedules = ScheduleService(store, clock, CONFIG.partitioning)
    for n in range(8):  # work in the shards every minute, so each invocation leases some
        schedules.create(
            definition(
                {
                    "name": f"job {n}",
                    "spec": {"cron": "* * * * *"},
                    "target": {"type": "webhook", "url": "https://example.com/hook"},
                }
            )
        )
    clock.advance(55)
    tick_handler.handler({}, Context(), service=container(store, clock, queue, "c-first"))
    after_one = items(aws)
    for n in range(100):
        clock.advance(60)
        tick_handler.handler({}, Context(), service=container(store, clock, queue, f"c{n}"))
    assert items(aws) == after_one
    # The leases of the shards with work, the tick's heartbeat, and the plan
    # cursor (set by the first pass, moved once an hour idle): nothing per owner.
    leases = {f"L#{shard:06d}" for shard in range(SHARDS)}
    assert {i for i in after_one if i not in leases} == {"H#tick", "C#plan"}
    assert any(i in leases for i in after_one)


def test_a_pass_reads_leases_by_key_and_never_scans(
    aws: tuple[Any, TableNames],
) -> None:
    store, clock, queue = store_of(aws), FakeClock(utc("2026-12-01T08:00:00Z")), FakeQueue()
    every_second(store, clock, 1)
    operations = record_operations(store)
    tick_handler.handler({}, Context(), service=container(store, clock, queue, "c1"))
    store.leases.beat(Heartbeat("tick", clock.now(), {}))
    Watchdog(store, clock).run()
    assert "Scan" not in operations
    assert {"BatchGetItem", "GetItem"} <= set(operations)


def test_heartbeat_items_carry_a_ttl(aws: tuple[Any, TableNames]) -> None:
    client, names = aws
    store, at = store_of(aws), utc("2026-12-01T08:00:00Z")
    store.leases.beat(Heartbeat("watch:s1", at, {"status": "ok"}))
    store.leases.beat(Heartbeat("tick", at, {}))
    for key in ("H#watch:s1", "H#tick"):
        item = client.get_item(TableName=names.leases, Key={"pk": {"S": key}})["Item"]
        assert int(item["expires_at_epoch"]["N"]) == int((at + timedelta(days=7)).timestamp())
    ttl = client.describe_time_to_live(TableName=names.leases)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires_at_epoch"


def record_operations(store: DynamoPorts) -> list[str]:
    seen: list[str] = []
    store.records.client.meta.events.register(
        "before-parameter-build.dynamodb.*",
        lambda model, **_: seen.append(model.name),
    )
    return seen


def test_the_aws_ticker_counts_its_sends_and_sends_a_surges_second_early(
    aws: tuple[Any, TableNames], monkeypatch: pytest.MonkeyPatch
) -> None:
    from adapters.sqs import TICK_ALIGN_S
    from bootstrap.settings import Settings
    from service.planning.surge import TICK_RECORD_MIN, LoadRecordingQueue

    _, names = aws
    monkeypatch.setattr(tick_handler, "_container_ticker", None)
    monkeypatch.setattr(tick_handler, "_container_surges", None)
    settings = Settings(
        schedules_table=names.schedules,
        occurrences_table=names.occurrences,
        leases_table=names.leases,
        delivery_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/delivery",
        worker_function="duetime-worker",
        surge_min=30,
    )
    ticker = tick_handler.container_ticker(settings)
    queue = ticker.dispatcher.queue
    assert isinstance(queue, LoadRecordingQueue)
    assert (queue.deferred, queue.min_count, queue.early_min) == (True, TICK_RECORD_MIN, 30)
    # Its sends are aligned to the start of a second (adapters/sqs.py).
    assert getattr(queue.queue, "align_s", None) == TICK_ALIGN_S
    surges = tick_handler._container_surges
    assert surges is not None and surges.surge_min == 30 and surges.owner == ticker.owner

    # No worker function named: no ledger, no surge, nothing sent early.
    monkeypatch.setattr(tick_handler, "_container_ticker", None)
    monkeypatch.setattr(tick_handler, "_container_surges", None)
    plain = tick_handler.container_ticker(settings.model_copy(update={"worker_function": ""}))
    assert not isinstance(plain.dispatcher.queue, LoadRecordingQueue)
    assert getattr(plain.dispatcher.queue, "align_s", None) == TICK_ALIGN_S
    assert tick_handler._container_surges is None
    assert plain.early.quiet_until is None  # planning early is bounded by the budget alone


def test_the_aws_ticker_plans_early_until_a_margin_before_the_first_surge(
    aws: tuple[Any, TableNames], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from bootstrap.settings import Settings
    from service.planning.surge import drains_for, lead_s

    _, names = aws
    monkeypatch.setattr(tick_handler, "_container_ticker", None)
    monkeypatch.setattr(tick_handler, "_container_surges", None)
    settings = Settings(
        schedules_table=names.schedules,
        occurrences_table=names.occurrences,
        leases_table=names.leases,
        delivery_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/delivery",
        worker_function="duetime-worker",
        surge_min=30,
        plan_early=True,  # the stack's
    )
    ticker = tick_handler.container_ticker(settings)
    assert ticker.early.quiet_until is not None and ticker.config.plans_early
    now = datetime.now(UTC).replace(microsecond=0)
    until = now + timedelta(seconds=50)
    assert ticker.early.quiet_until(now, until) == until  # an empty ledger: no surge ahead
    # What the pass counted and has not written yet bounds it.
    second = now + timedelta(seconds=30)
    ticker.dispatcher.queue.pending[second] = 100  # type: ignore[attr-defined]
    moment = second - timedelta(seconds=lead_s(drains_for(100)) + EARLY_MARGIN_S)
    assert ticker.early.quiet_until(now, until) == moment

    # A ledger that cannot be read bounds nothing, and says so.
    surges = tick_handler._container_surges
    assert surges is not None

    def unreadable(start: datetime, end: datetime) -> dict[datetime, int]:
        raise ConnectionError("ledger down")

    monkeypatch.setattr(surges.ledger, "read", unreadable)
    assert ticker.early.quiet_until(now, until) == until
    assert "load ledger not read" in caplog.text
