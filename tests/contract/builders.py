"""What the store contract tests build their records with, through the ports only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from domain.partition import Partitioning
from domain.run import Run, new_occurrence
from domain.schedule import (
    Quarantine,
    QuarantineComponent,
    Schedule,
    ScheduleVersion,
    parse_policy,
)
from domain.spec import Slot, parse_spec, slots_after
from service.ports import Materialization, Store
from service.run_ports import RunStore
from tests.conftest import build_occurrence, build_schedule, random_schedule_id, utc

NOW = utc("2026-12-01T08:00:00Z")
PARTS = Partitioning(shards=4, bucket_s=60)
_US = timedelta(microseconds=1)
# Opens another store object over the same data (the ``reopen`` fixture).
Opener = Callable[[], Store]


def run_store_of(store: Store) -> RunStore:
    """The run store over the same backend (a run's life after admission)."""
    from adapters.dynamodb.runs import DynamoRunStore
    from adapters.dynamodb.store import DynamoPorts
    from adapters.sqlite.runs import SqliteRunStore
    from adapters.sqlite.store import SqliteStore

    if isinstance(store, SqliteStore):
        return SqliteRunStore(store)
    assert isinstance(store, DynamoPorts)
    return DynamoRunStore(store)


def slot_run(schedule_id: str, at: str, *, version: int = 1) -> Run:
    """A waiting record of the slot at ``at``, placed by ``PARTS``."""
    instant = utc(at)
    return new_occurrence(
        schedule_id,
        version,
        Slot(instant, instant.replace(tzinfo=None)),
        bucket=PARTS.bucket(instant),
        shard=PARTS.shard(schedule_id),
        materialized_at=NOW,
    )


def created_with_runs(store: Store, *instants: str) -> tuple[str, list[Run]]:
    """A new schedule with waiting records at ``instants``, inserted."""
    sid = random_schedule_id()
    store.schedules.create(build_schedule(NOW, schedule_id=sid))
    runs = [slot_run(sid, at) for at in instants]
    assert store.records.insert(runs) == [r.occurrence_id for r in runs]
    return sid, runs


def materialization(schedule: Schedule, run: Run, **changes: object) -> Materialization:
    """The materialization of ``run``, the schedule's next slot, advancing it a day."""
    assert schedule.next_due is not None
    fields = {
        "schedule_id": schedule.schedule_id,
        "expected_version": schedule.version,
        "expected_next_due": schedule.next_due,
        "last_materialized_at": run.scheduled_at,
        "occurrences": (run,),
        **changes,
    }
    if "next_due" not in fields:
        fields["next_due"] = schedule.next_due + timedelta(days=1)
    return Materialization(**fields)  # type: ignore[arg-type]


def materialize_next(store: Store, schedule_id: str, now: datetime = NOW) -> Run:
    """Materialize the stored schedule's next slot, as a planner outside a pass."""
    schedule = store.schedules.get(schedule_id)
    assert schedule is not None and schedule.next_due is not None
    run = build_occurrence(schedule, now, PARTS)
    [outcome] = store.schedules.materialize([materialization(schedule, run)], now).outcomes
    assert outcome.applied and outcome.inserted == (run.occurrence_id,)
    return run


def plan_pass(
    store: Store, until: datetime, now: datetime, *, limit: int = 100, pages: int | None = None
) -> list[str]:
    """One planning pass, as the planner drives the port: each page of
    ``due(until)`` read, every slot of each schedule up to ``until``
    materialized (``until`` given) with ``next_due`` moved to the slot after,
    then ``planned_through``. With ``pages``, the pass stops after that many
    pages (its budget), saying so. The occurrence ids written."""
    written: list[str] = []
    token: str | None = None
    read = 0
    session = store.schedules.plan_session()
    while True:
        page = store.schedules.due(until, limit, token, session=session)
        batch = []
        for due in page.items:
            slots: list[Slot] = []
            following: datetime | None = None
            for slot in slots_after(due.spec, due.policy.dst, due.next_due - _US):
                if slot.scheduled_at > until:
                    following = slot.scheduled_at
                    break
                slots.append(slot)
            runs = tuple(
                new_occurrence(
                    due.schedule_id,
                    due.version,
                    slot,
                    bucket=PARTS.placement(slot.scheduled_at, now),
                    shard=PARTS.shard(due.schedule_id),
                    materialized_at=now,
                )
                for slot in slots
            )
            batch.append(
                Materialization(
                    due.schedule_id,
                    due.version,
                    due.next_due,
                    following,
                    runs[-1].scheduled_at if runs else None,
                    runs,
                )
            )
        for outcome in store.schedules.materialize(
            batch, now, until=until, session=session
        ).outcomes:
            written += outcome.inserted
        token = page.next_token
        read += 1
        if token is None:
            store.schedules.planned_through(until, session=session)
            return written
        if pages is not None and read >= pages:
            store.schedules.planned_through(None, token, session=session)
            return written


def next_version(schedule: Schedule, spec: dict[str, str], now: datetime = NOW) -> ScheduleVersion:
    return ScheduleVersion(
        schedule_id=schedule.schedule_id,
        version=schedule.version + 1,
        name="moved",
        spec=parse_spec(spec, created_at=now),
        policy=parse_policy(None),
        target=schedule.current.target,
        payload={"v": schedule.version + 1},
        created_at=now,
    )


def quarantine_at(
    at: str = "2026-12-01T08:00:30Z", error: str = "date value out of range"
) -> Quarantine:
    return Quarantine.of(OverflowError(error), QuarantineComponent.PLAN, utc(at))
