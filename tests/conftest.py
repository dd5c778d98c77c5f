"""Shared test fixtures: a fake clock, fresh schedule ids, dummy AWS settings,
and builders for schedules and occurrences."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite.store import SqliteStore
from adapters.targets.addresses import AddressPolicy
from domain.identity import new_schedule_id
from domain.partition import Partitioning
from domain.run import DeliveryIntent, Run, new_occurrence
from domain.schedule import Definition, Schedule, ScheduleState, ScheduleVersion, parse_policy
from domain.spec import next_slot, parse_spec
from domain.targets import parse_target
from handlers.api_models import definition_of
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.ports import DeliveryQueue
from service.schedules import ScheduleService

WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}


class FakeClock:
    """A clock that moves only when a test moves it."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("a fake clock starts at an aware instant")
        self.at = start.astimezone(UTC)

    def now(self) -> datetime:
        return self.at

    def advance(self, delta: timedelta | float) -> datetime:
        self.at += delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        return self.at

    def set(self, at: datetime) -> datetime:
        self.at = at.astimezone(UTC)
        return self.at


def random_schedule_id() -> str:
    """A schedule id no other test uses."""
    return new_schedule_id()


def definition(body: Mapping[str, Any]) -> Definition:
    """The schedule a JSON body describes, validated as the local stack's API
    validates it (a webhook on 127.0.0.1 is accepted)."""
    return definition_of(body, AddressPolicy.local())


def utc(text: str) -> datetime:
    """``utc("2026-12-01T09:00:00Z")``"""
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.fixture(autouse=True)
def dummy_aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reaches AWS: dummy credentials and a fixed region."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "duetime")
    monkeypatch.setenv("POWERTOOLS_DEV", "false")
    # `duetime local` run in-process sets these with os.environ.setdefault;
    # recorded here so that they are gone again after each test.
    for name in ("POWERTOOLS_METRICS_DISABLED", "POWERTOOLS_SERVICE_NAME"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    yield


@pytest.fixture
def without_range_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lift the domain's instant and duration bounds, as for a value stored
    before those rules existed (or one that slipped past them): the code that
    plans, judges and lists it must still not fail."""
    import domain.spec
    import domain.timeparse

    monkeypatch.setattr(domain.timeparse, "MIN_INSTANT", datetime.min.replace(tzinfo=UTC))
    monkeypatch.setattr(domain.timeparse, "MAX_INSTANT", datetime.max.replace(tzinfo=UTC))
    monkeypatch.setattr(domain.timeparse, "_MIN_WALL", datetime.min)  # noqa: DTZ901 - a wall time
    monkeypatch.setattr(domain.timeparse, "_MAX_WALL", datetime.max)  # noqa: DTZ901 - a wall time
    monkeypatch.setattr(domain.timeparse, "MAX_DURATION", timedelta.max)
    monkeypatch.setattr(domain.spec, "MAX_EVERY", timedelta.max)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(utc("2026-12-01T08:00:00Z"))


def build_schedule(
    now: datetime,
    *,
    schedule_id: str | None = None,
    spec: Mapping[str, Any] | None = None,
    policy: Mapping[str, Any] | None = None,
    target: Mapping[str, Any] | None = None,
    payload: Mapping[str, Any] | None = None,
    version: int = 1,
    name: str = "report",
    after: datetime | None = None,
) -> Schedule:
    """A schedule as ``create`` would store it, next_due computed from ``after`` (or now)."""
    schedule_id = schedule_id or random_schedule_id()
    parsed = parse_spec(dict(spec or {"cron": "0 9 * * *", "time_zone": "UTC"}), created_at=now)
    pol = parse_policy(dict(policy) if policy is not None else None)
    current = ScheduleVersion(
        schedule_id=schedule_id,
        version=version,
        name=name,
        spec=parsed,
        policy=pol,
        target=parse_target(dict(target or WEBHOOK)),
        payload=dict(payload or {}),
        created_at=now,
    )
    slot = next_slot(parsed, pol.dst, after or now)
    return Schedule(
        schedule_id=schedule_id,
        version=version,
        state=ScheduleState(),
        current=current,
        next_due=None if slot is None else slot.scheduled_at,
        last_materialized_at=None,
        created_at=now,
        updated_at=now,
    )


def build_occurrence(
    schedule: Schedule, now: datetime, partitioning: Partitioning | None = None
) -> Run:
    """The occurrence of the schedule's next_due slot, placed as the planner places it."""
    parts = partitioning or Partitioning()
    slot = next_slot(
        schedule.current.spec,
        schedule.current.policy.dst,
        (schedule.next_due or now) - timedelta(microseconds=1),
    )
    assert slot is not None
    return new_occurrence(
        schedule.schedule_id,
        schedule.version,
        slot,
        bucket=parts.placement(slot.scheduled_at, now),
        shard=parts.shard(schedule.schedule_id),
        materialized_at=now,
    )


@pytest.fixture
def make_schedule() -> Callable[..., Schedule]:
    return build_schedule


@pytest.fixture
def make_occurrence() -> Callable[..., Run]:
    return build_occurrence


class FakeQueue(DeliveryQueue):
    """Keeps what was sent; ``fail_with`` makes the next send raise (a crash)."""

    def __init__(self) -> None:
        self.sent: list[DeliveryIntent] = []
        self.fail_with: BaseException | None = None

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        if self.fail_with is not None:
            error, self.fail_with = self.fail_with, None
            raise error
        self.sent.extend(intents)
        return []

    def ids(self) -> list[str]:
        return [i.occurrence_id for i in self.sent]


def with_ports(store: SqliteStore, **ports: Any) -> SqliteStore:
    """``store`` with some of its ports (by name) made of other classes (a
    test's subclasses of the port's), on the same connection."""
    made = {name: kind(store.path, connection_of=store.retention) for name, kind in ports.items()}
    return replace(store, **made)


@dataclass
class World:
    """A store, a clock, the schedule use cases and a tick, on one SQLite file."""

    store: SqliteStore
    clock: FakeClock
    queue: FakeQueue
    schedules: ScheduleService
    config: TickConfig

    def ticker(self, owner: str = "tick-1", queue: DeliveryQueue | None = None) -> Ticker:
        return Ticker(self.store, queue or self.queue, self.clock, self.config, owner=owner)


def make_world(
    path: Path, clock: FakeClock, *, lookahead: timedelta = timedelta(seconds=90), shards: int = 4
) -> World:
    store = SqliteStore.open(path)
    config = TickConfig(
        partitioning=Partitioning(shards=shards, bucket_s=60),
        lookahead=lookahead,
    )
    return World(
        store=store,
        clock=clock,
        queue=FakeQueue(),
        schedules=ScheduleService(store, clock, config.partitioning),
        config=config,
    )


@pytest.fixture
def world(tmp_path: Path, clock: FakeClock) -> Iterator[World]:
    w = make_world(tmp_path / "duetime.db", clock)
    yield w
    w.store.close()
