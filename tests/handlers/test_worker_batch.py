"""The worker on Lambda: a batch's records at once, within the function's time,
with clients built once per container and bounded target calls."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from adapters.observability import metrics
from adapters.secrets import CachedSecretStore, InMemorySecretStore, SecretNotFound
from adapters.targets.aws import (
    LAMBDA_TARGET_READ_TIMEOUT_S,
    control_client_config,
    lambda_client_config,
)
from domain.delivery import Delivery, Outcome, TargetPort
from domain.run import RunStatus
from domain.targets import Target
from handlers import worker as worker_handler
from handlers.worker import INVOCATION_MARGIN_S, handler
from tests.conftest import FakeClock, World
from tests.handlers.test_worker import (
    FakeWorkQueue,
    admitted,
    body,
    event,
    record,
    worker_for,
)


class Context:
    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


class RendezvousTarget(TargetPort):
    """Succeeds only once ``parties`` calls are in flight together."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=5)
        self.timeouts: list[float] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.timeouts.append(timeout_s)
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            return Outcome.transient("called one after another")
        return Outcome.succeeded(200)


class StuckTarget(TargetPort):
    """Answers at once, except for one schedule whose call hangs until released."""

    def __init__(self, stuck_schedule: str) -> None:
        self.stuck_schedule = stuck_schedule
        self.release = threading.Event()
        self.timeouts: list[float] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        self.timeouts.append(timeout_s)
        if delivery.schedule_id == self.stuck_schedule:
            self.release.wait(10)
        return Outcome.succeeded(200)


def test_a_batch_of_ten_runs_its_records_at_once(world: World, clock: FakeClock) -> None:
    intents = admitted(world, clock, 10)
    target = RendezvousTarget(10)
    response = handler(
        event(*(record(f"m{i}", body(x)) for i, x in enumerate(intents))),
        Context(remaining_ms=150_000),
        worker=worker_for(world, clock, target),  # type: ignore[arg-type]
        queue=FakeWorkQueue(),
    )
    assert response == {"batchItemFailures": []}
    assert not target.barrier.broken


def test_each_call_is_bounded_by_the_time_the_invocation_has_left(
    world: World, clock: FakeClock
) -> None:
    [intent] = admitted(world, clock, 1)
    target = RendezvousTarget(1)
    handler(
        event(record("m0", body(intent))),
        Context(remaining_ms=40_000),
        worker=worker_for(world, clock, target),  # type: ignore[arg-type]
        queue=FakeWorkQueue(),
    )
    assert target.timeouts == [40.0 - INVOCATION_MARGIN_S]


def test_a_record_still_running_at_the_deadline_comes_back_and_the_rest_are_answered(
    world: World, clock: FakeClock
) -> None:
    stuck, *others = admitted(world, clock, 3)
    target = StuckTarget(stuck.schedule_id)
    queue = FakeWorkQueue()
    try:
        response = handler(
            event(*(record(f"m{i}", body(x)) for i, x in enumerate([stuck, *others]))),
            # one second of budget after the margin
            Context(remaining_ms=int((INVOCATION_MARGIN_S + 1) * 1000)),
            worker=worker_for(world, clock, target),  # type: ignore[arg-type]
            queue=queue,
        )
    finally:
        target.release.set()
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    # Released at once, not left hidden for the queue's visibility timeout: the
    # attempt's run lease keeps the next receiver off until it ends.
    assert queue.visibility == [("receipt-m0", 0.0)]
    assert all(t <= 1.0 for t in target.timeouts)
    # The stuck call still ends (here, once released) and records its run;
    # its metrics must not leak into the next test's flush.
    for thread in threading.enumerate():
        if thread.name.startswith("record"):
            thread.join(timeout=10)
    run = world.store.records.get_run(stuck.occurrence_id)
    assert run is not None and run.status is RunStatus.SUCCEEDED
    metrics().clear_metrics()


def test_the_container_builds_its_clients_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []

    def build(settings: Any, **parts: Any) -> tuple[Any, Any]:
        built.append(1)
        return object(), object()

    monkeypatch.setattr(worker_handler, "build_aws_worker", build)
    monkeypatch.setattr(worker_handler, "_container_worker", None)
    first = worker_handler.container_worker()
    assert worker_handler.container_worker() is first
    assert built == [1]


def test_a_lambda_target_is_invoked_once_per_attempt_with_a_bounded_read() -> None:
    config = lambda_client_config()
    assert config.retries == {"mode": "standard", "total_max_attempts": 1}
    assert config.read_timeout == LAMBDA_TARGET_READ_TIMEOUT_S
    assert config.connect_timeout <= 5
    control = control_client_config()
    assert control.read_timeout <= 10 and control.retries["total_max_attempts"] == 2


def test_the_clients_the_worker_builds_use_the_bounded_configs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bootstrap.settings import Settings

    made: dict[str, Any] = {}
    import boto3

    original = boto3.session.Session.client

    def client(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        made.setdefault(name, kwargs.get("config"))
        return original(self, name, *args, **kwargs)

    monkeypatch.setattr(boto3.session.Session, "client", client)
    from bootstrap.aws import build_aws_parts

    build_aws_parts(
        Settings(
            schedules_table="s",
            occurrences_table="o",
            leases_table="l",
            delivery_queue_url="https://sqs.eu-west-1.amazonaws.com/1/q",
            delivery_dlq_url="https://sqs.eu-west-1.amazonaws.com/1/d",
        )
    )
    assert made["lambda"].retries == {"mode": "standard", "total_max_attempts": 1}
    for name in ("sqs", "events", "secretsmanager", "ssm", "dynamodb"):
        assert made[name] is not None and made[name].read_timeout <= 10


class CountingSecrets(InMemorySecretStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get(self, schedule_id: str) -> str:
        self.reads += 1
        return super().get(schedule_id)


def test_a_signing_secret_is_read_once_per_ttl_and_a_rotation_is_seen_after_it() -> None:
    now = [0.0]
    inner = CountingSecrets()
    cache = CachedSecretStore(inner, ttl_s=300, monotonic=lambda: now[0])
    old = inner.put("s1")
    assert cache.get("s1") == old and cache.get("s1") == old
    assert inner.reads == 1
    new = inner.put("s1")  # rotated by the API, elsewhere
    now[0] = 299.0
    assert cache.get("s1") == old
    now[0] = 300.0
    assert cache.get("s1") == new and inner.reads == 2


def test_a_rotation_or_delete_through_the_cache_takes_effect_at_once() -> None:
    cache = CachedSecretStore(InMemorySecretStore(), ttl_s=300, monotonic=lambda: 0.0)
    first = cache.put("s1")
    assert cache.get("s1") == first
    second = cache.put("s1")
    assert second != first and cache.get("s1") == second
    cache.delete("s1")
    with pytest.raises(SecretNotFound):
        cache.get("s1")


def test_a_missing_secret_is_not_remembered() -> None:
    inner = CountingSecrets()
    cache = CachedSecretStore(inner, monotonic=lambda: 0.0)
    for _ in range(2):
        with pytest.raises(SecretNotFound):
            cache.get("s1")
    assert inner.reads == 2
    inner.put("s1")
    assert cache.get("s1")


def test_a_cache_that_cannot_hold_anything_is_refused() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        CachedSecretStore(InMemorySecretStore(), max_entries=0)
