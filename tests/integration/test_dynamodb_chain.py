"""The planner's chain on DynamoDB: in a pass, a schedule's next slot goes
on a plan page, so a steady schedule's HEAD is never written by the tick; a
create, edit or resume names the next slot on the HEAD (a seed), which the
first pass hands over to the chain (its next slot on a page first).

Every test drives the real planner (``Ticker`` passes, queueing ahead as
deployed) over moto, and counts the requests each table receives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import DELIVERY_QUEUE, create_queues
from adapters.dynamodb import items
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.plan_lease import PLAN_CURSOR, PLAN_LEASE
from adapters.dynamodb.plan_session import DynamoPlanSession
from adapters.dynamodb.store import dynamo_store
from adapters.sqs import SqsDeliveryQueue
from domain.overview import ScheduleStatus, schedule_status
from domain.partition import Partitioning
from domain.run import RunKind, RunStatus
from service.planning.config import TickConfig
from service.planning.due import DueSlots
from service.planning.pass_state import PassState
from service.planning.ticker import Ticker
from service.schedules import ScheduleService
from tests.conftest import FakeClock, definition, utc

START = utc("2026-12-01T08:00:00Z")
WEBHOOK = {"type": "webhook", "url": "https://example.com/hook"}
PARTS = Partitioning(shards=2, bucket_s=60)
CONFIG = TickConfig(partitioning=PARTS, lookahead=timedelta(seconds=90))


class World:
    def __init__(self, client: Any, sqs: Any) -> None:
        self.client = client
        self.clock = FakeClock(START)
        self.tables = create_store_tables(client, "chain")
        self.store = dynamo_store(client, self.tables, due_shards=2)
        url = create_queues(sqs, "chain")[DELIVERY_QUEUE.env_var]
        self.ticker = Ticker(
            self.store, SqsDeliveryQueue(sqs, url), self.clock, CONFIG, owner="tick-1"
        )
        self.service = ScheduleService(self.store, self.clock, PARTS)
        self.calls: Counter[tuple[str, str]] = Counter()
        # Counted with the request's own parameters (before they are serialized).
        client.meta.events.register("before-parameter-build.dynamodb.*", self._count)

    def _count(self, model: Any, params: Any, **_: Any) -> None:
        tables = [params["TableName"]] if "TableName" in params else []
        tables += list(params.get("RequestItems", {}))  # BatchGetItem, BatchWriteItem
        for table in tables or [""]:
            self.calls[(model.name, str(table))] += 1

    def create(self, spec: dict[str, Any]) -> str:
        schedule, _ = self.service.create(
            definition({"name": "job", "spec": spec, "target": WEBHOOK})
        )
        return schedule.schedule_id

    def passes(self, minutes: int) -> None:
        """One tick pass a minute, as EventBridge Scheduler invokes it."""
        for _ in range(minutes):
            self.ticker.tick_once()
            self.clock.advance(60)

    def slots(self, schedule_id: str) -> list[tuple[str, RunStatus, int]]:
        runs = self.store.records.runs(schedule_id, 500).items
        return sorted((r.scheduled_at.isoformat(), r.status, r.version) for r in runs)

    def writes(self, table: str) -> int:
        return sum(
            n
            for (op, name), n in self.calls.items()
            if name == table and op in ("PutItem", "UpdateItem", "DeleteItem")
        )

    def head(self, schedule_id: str) -> dict[str, Any]:
        answer = self.client.get_item(
            TableName=self.tables.schedules, Key=items.head_key(schedule_id), ConsistentRead=True
        )
        return items.plain(answer["Item"])


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        yield World(
            boto3.client("dynamodb", region_name="us-east-1"),
            boto3.client("sqs", region_name="us-east-1"),
        )


def test_a_steady_schedule_is_carried_by_plan_pages_and_its_head_is_not_written(
    world: World,
) -> None:
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(1)  # the seed: planned, and handed over to the chain
    assert "due_key" not in world.head(sid)
    world.calls.clear()
    world.passes(10)
    assert world.writes(world.tables.schedules) == 0
    slots = world.slots(sid)
    expected = [(START + timedelta(minutes=m)).isoformat() for m in range(1, 12)]
    assert [s[0] for s in slots] == expected  # each minute once, 90 s ahead
    # One record per run, written once; the newest names the next slot.
    newest = world.store.records.runs(sid, 1).items[0]
    schedule = world.store.schedules.get(sid)
    assert schedule is not None
    assert schedule.next_due == newest.scheduled_at + timedelta(minutes=1)
    # The pass's horizon is where the next read of the index starts.
    cursor = world.client.get_item(
        TableName=world.tables.leases, Key=items.attrs({"pk": PLAN_CURSOR})
    )["Item"]
    assert items.from_iso(cursor["through"]["S"]) == world.clock.now() - timedelta(seconds=60 - 90)


def test_an_idle_pass_writes_no_cursor_until_it_is_an_hour_behind(world: World) -> None:
    # A deployment's first pass sets the cursor (the plan lease taken and let go).
    world.passes(1)
    first = _cursor(world)
    assert "owner" not in first
    # Then one write a pass, the tick's heartbeat; none to
    # the cursor, for an hour.
    world.calls.clear()
    world.passes(60)
    assert world.writes(world.tables.leases) == 60
    assert _cursor(world) == first
    # An hour behind, a pass moves it (take and let go), so the pages' read
    # from it spans at most two due hours: two queries, not one an hour idle.
    world.calls.clear()
    world.passes(2)
    assert world.writes(world.tables.leases) == 2 + 2
    assert items.from_iso(_cursor(world)["through"]) > items.from_iso(first["through"])


def test_an_edit_leaves_the_old_versions_chain_and_no_slot_runs_twice(world: World) -> None:
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(5)
    schedule = world.store.schedules.get(sid)
    assert schedule is not None
    world.service.edit(
        sid,
        schedule.version,
        definition(
            {
                "name": "job",
                "spec": {"every": "PT2M", "start_at": "2026-12-01T08:00:00Z"},
                "target": WEBHOOK,
            }
        ),
    )
    world.passes(10)
    slots = world.slots(sid)
    instants = [s[0] for s in slots]
    assert len(instants) == len(set(instants))
    edited_at = START + timedelta(minutes=5)
    # After the edit and what was already planned (90 s ahead), version 2's
    # every-two-minutes slots alone.
    later = [s for s in slots if s[0] > (edited_at + CONFIG.lookahead).isoformat()]
    assert later and all(version == 2 for _, _, version in later)
    assert all(utc(at).minute % 2 == 0 for at, _, _ in later)


def test_a_pause_stops_the_chain_and_a_resume_records_the_slots_it_skipped(
    world: World,
) -> None:
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(3)
    world.service.pause(sid)
    world.calls.clear()
    world.passes(5)
    assert world.writes(world.tables.occurrences) == 0  # nothing planned while paused
    world.service.resume(sid)
    world.passes(3)
    slots = world.slots(sid)
    instants = [s[0] for s in slots]
    assert len(instants) == len(set(instants))
    skipped = [s for s in slots if s[1] is RunStatus.SKIPPED]
    assert skipped, "the slots due while paused are recorded as skipped"
    resumed_at = START + timedelta(minutes=8)
    assert all(utc(at) <= resumed_at for at, _, _ in skipped)
    assert any(utc(at) > resumed_at for at, _, _ in slots)


def test_a_backlog_after_an_outage_is_caught_up_on_the_head_once(world: World) -> None:
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(2)
    world.clock.advance(timedelta(hours=2))  # no pass for two hours
    world.passes(2)
    slots = world.slots(sid)
    instants = [s[0] for s in slots]
    assert len(instants) == len(set(instants))
    # Every slot up to now has a record (run, or closed by the overdue policy).
    now = world.clock.now()
    due = [at for at in instants if utc(at) <= now]
    assert len(due) == int((now - utc("2026-12-01T08:01:00Z")).total_seconds() // 60) + 1
    assert "due_key" not in world.head(sid)  # back on its chain


def test_a_one_off_ends_its_chain(world: World) -> None:
    sid = world.create({"at": "2026-12-01T08:03:00Z"})
    world.passes(6)
    [(at, status, _)] = world.slots(sid)
    assert at == "2026-12-01T08:03:00+00:00" and status is RunStatus.ADMITTED
    schedule = world.store.schedules.get(sid)
    assert schedule is not None and schedule.next_due is None
    assert world.store.records.runs(sid, 5).items[0].kind is RunKind.SCHEDULED
    assert schedule_status(schedule, world.clock.now()) is ScheduleStatus.ENDED


def _cursor(world: World) -> dict[str, Any]:
    answer = world.client.get_item(
        TableName=world.tables.leases, Key=items.attrs({"pk": PLAN_CURSOR}), ConsistentRead=True
    )
    return items.plain(answer.get("Item", {}))


def test_a_pass_without_the_plan_lease_plans_nothing(world: World) -> None:
    # Two passes at once (an invocation that overran, one delivered twice):
    # if both planned, the later one could move the read past entries the
    # earlier one was still writing. Only the holder plans, the chain and
    # the seeds alike; the other writes nothing (it still dispatches).
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(2)
    seed = world.create({"every": "PT1M", "start_at": "2026-12-01T08:03:00Z"})
    holder = world.store
    holding = holder.schedules.plan_session()
    assert holder.schedules._hold_plan(holding)[0]
    other = dynamo_store(world.client, world.tables, due_shards=2)
    queue = world.ticker.dispatcher.queue
    late = Ticker(other, queue, world.clock, CONFIG, owner="tick-2")
    before = world.slots(sid)
    cursor = _cursor(world)
    world.calls.clear()
    late.tick_once()
    assert world.slots(sid) == before and world.slots(seed) == []
    assert world.writes(world.tables.occurrences) == 0
    assert world.writes(world.tables.schedules) == 0
    assert _cursor(world) == cursor  # not moved, and still the holder's
    # The holder lets go; the next pass of the other plans where it stopped.
    holder.schedules.planned_through(None, session=holding)
    late.tick_once()
    assert len(world.slots(sid)) == len(before) + 1
    assert [at for at, _, _ in world.slots(seed)] == ["2026-12-01T08:03:00+00:00"]
    assert "owner" not in _cursor(world)


def test_a_plan_lease_left_by_a_pass_that_died_is_taken_once_it_runs_out(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(2)
    dead = dynamo_store(world.client, world.tables, due_shards=2)
    dead_pass = dead.schedules.plan_session()
    assert dead.schedules._hold_plan(dead_pass)[0]  # and never lets go
    before = len(world.slots(sid))
    world.passes(1)
    assert len(world.slots(sid)) == before  # held: the chain waits
    monkeypatch.setattr("adapters.dynamodb.plan_lease.PLAN_LEASE", timedelta(seconds=-1))
    assert dead.schedules._hold_plan(dead_pass)[0]  # its lease, written as already run out
    world.passes(1)
    assert len(world.slots(sid)) == before + 2


def test_the_plan_lease_outlives_the_longest_tick_invocation() -> None:
    from infra.functions import tick_spec
    from infra.settings import Settings

    longest = tick_spec(Settings(tick_budget_s=55)).timeout.to_seconds()
    assert PLAN_LEASE.total_seconds() > longest


def _due_one_at_a_time(world: World) -> list[str]:
    """The schedules ``due`` names for the next pass's horizon, read one a
    page (bounded: a repeat across pages would never end)."""
    until = world.clock.now() + CONFIG.lookahead
    seen: list[str] = []
    token = None
    session = world.store.schedules.plan_session()
    for _ in range(10):
        page = world.store.schedules.due(until, 1, token, session=session)
        seen += [due.schedule_id for due in page.items]
        token = page.next_token
        if token is None:
            break
    world.store.schedules.planned_through(None, session=session)
    return seen


def test_the_chain_is_read_page_by_page_without_a_repeat(world: World) -> None:
    ids = {world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}) for _ in range(3)}
    world.passes(1)  # each handed to its chain, next slot 08:02
    assert sorted(_due_one_at_a_time(world)) == sorted(ids)


def test_a_listing_looks_up_the_chains_next_slot_only_when_asked(world: World) -> None:
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(2)
    world.calls.clear()
    [listed] = world.store.schedules.list_schedules(10).items
    schedule = world.store.schedules.get(sid)
    assert schedule is not None and listed.next_due == schedule.next_due
    assert world.calls[("Query", world.tables.occurrences)] == 2, world.calls  # listing, get
    world.calls.clear()
    world.store.schedules.list_schedules(10, next_due=False)  # the watchdog's: no lookup
    assert world.calls[("Query", world.tables.occurrences)] == 0


# --- plan pages: the next slots a pass's chain carries, one item a due minute ----


class PageWrites:
    """Every plan page put on the runs table, and a switch that refuses them."""

    def __init__(self, world: World) -> None:
        self.puts: list[dict[str, Any]] = []
        self.failing = False
        world.client.meta.events.register("before-parameter-build.dynamodb.PutItem", self._put)

    def _put(self, params: Any, **_: Any) -> None:
        item = params["Item"]
        if str(item["pk"]["S"]).startswith(items.PAGE_PREFIX):
            if self.failing:
                raise RuntimeError("the plan pages cannot be written")
            self.puts.append(item)

    def entries(self) -> list[tuple[Any, str, int]]:
        return [entry for page in self.puts for entry in items.page_entries(page)]


def test_schedules_planned_in_one_pass_share_one_plan_page(world: World) -> None:
    # Given 20 schedules every 10 minutes, created together and handed to
    # their chains by the first pass (their next slots on its page).
    pages = PageWrites(world)
    ids = [world.create({"every": "PT10M", "start_at": "2026-12-01T08:01:00Z"}) for _ in range(20)]
    world.passes(1)
    assert len(pages.puts) == 1 and len(items.page_entries(pages.puts[0])) == 20
    pages.puts.clear()
    # When the chain carries them for three more plannings.
    world.passes(31)
    # Then each planning wrote one page naming all 20 next slots.
    assert len(pages.puts) == 3
    assert all(len(items.page_entries(page)) == 20 for page in pages.puts)
    assert all(items.item_units(page) == 1 for page in pages.puts)
    assert {sid for _, sid, _ in pages.entries()} == set(ids)
    # And every slot was planned once, none missing.
    expected = [f"2026-12-01T08:{m}1:00+00:00" for m in range(4)]
    for sid in ids:
        assert [s[0] for s in world.slots(sid)] == expected


def test_a_pass_reads_its_pages_once_however_many_pages_of_due_it_plans(world: World) -> None:
    ids = {world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}) for _ in range(5)}
    world.passes(2)  # handed over, then carried on by a page
    small = TickConfig(partitioning=PARTS, lookahead=timedelta(seconds=90), page_size=1)
    world.ticker = Ticker(
        world.store, world.ticker.dispatcher.queue, world.clock, small, owner="tick-1"
    )
    page_reads: list[str] = []

    def count(params: Any, **_: Any) -> None:
        pk = params["ExpressionAttributeValues"].get(":pk", {}).get("S", "")
        if pk.startswith(items.PAGE_PREFIX):
            page_reads.append(pk)

    world.client.meta.events.register("before-parameter-build.dynamodb.Query", count)
    world.passes(1)
    # One query to see there is work, one after the plan lease is taken (a
    # holder before may have written since), for five pages of one due entry.
    assert page_reads == ["P#2026-12-01T08"] * 2
    for sid in ids:
        instants = [s[0] for s in world.slots(sid)]
        assert instants == [f"2026-12-01T08:0{m}:00+00:00" for m in range(1, 4)]


def test_a_pass_reads_no_plan_page_until_the_cursor_says_a_line_is_due(world: World) -> None:
    # Given an hourly schedule carried on a page (its next slot an hour on).
    sid = world.create({"every": "PT1H", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(2)
    page_reads: list[str] = []

    def count(params: Any, **_: Any) -> None:
        pk = params["ExpressionAttributeValues"].get(":pk", {}).get("S", "")
        if pk.startswith(items.PAGE_PREFIX):
            page_reads.append(pk)

    world.client.meta.events.register("before-parameter-build.dynamodb.Query", count)
    # When the passes of the hour in between run.
    world.passes(50)  # 08:02 to 08:51, horizons up to 08:52:30
    # Then none reads a page: the cursor says its next line is at 09:01.
    assert page_reads == []
    assert _cursor(world)["next_line"] == "2026-12-01T09:01:00.000000Z"
    # And the pass whose horizon reaches it plans the slot, on time.
    world.passes(10)
    assert page_reads
    assert [s[0] for s in world.slots(sid)] == [
        "2026-12-01T08:01:00+00:00",
        "2026-12-01T09:01:00+00:00",
    ]


def test_a_cursor_left_owned_by_a_holder_that_never_let_go_is_not_trusted(
    world: World,
) -> None:
    # Given an hourly schedule carried on a page, and a cursor left by a holder
    # that died after writing pages but before its let-go: its owner is still
    # there, its lease ran out, and its next_line does not count what it wrote.
    sid = world.create({"every": "PT1H", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(2)
    world.client.update_item(
        TableName=world.tables.leases,
        Key=items.attrs({"pk": PLAN_CURSOR}),
        UpdateExpression="SET #owner = :other, #held_until = :past, #line = :late",
        ExpressionAttributeNames={
            "#owner": "owner",
            "#held_until": "held_until",
            "#line": "next_line",
        },
        ExpressionAttributeValues={
            ":other": {"S": "plan-dead"},
            ":past": {"S": "2026-12-01T08:02:30.000000Z"},
            ":late": {"S": "2026-12-01T12:00:00.000000Z"},
        },
    )
    # When the passes up to the next slot run.
    world.passes(60)
    # Then the slot is planned: the pages were read, the stale bound ignored.
    assert [s[0] for s in world.slots(sid)] == [
        "2026-12-01T08:01:00+00:00",
        "2026-12-01T09:01:00+00:00",
    ]
    assert _cursor(world)["next_line"] == "2026-12-01T10:01:00.000000Z"


def test_the_pages_are_read_page_by_page_without_a_repeat(world: World) -> None:
    ids = {world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}) for _ in range(3)}
    world.passes(2)  # the second pass carried them on: next slots 08:03
    assert sorted(_due_one_at_a_time(world)) == sorted(ids)


def test_pages_that_cannot_be_written_move_no_cursor_and_the_next_pass_plans_again(
    world: World,
) -> None:
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(3)
    pages = PageWrites(world)
    cursor = _cursor(world)
    pages.failing = True
    with pytest.raises(RuntimeError, match="plan pages"):
        world.ticker.tick_once()
    # The pass wrote its slot, but not where the chain goes next: the cursor
    # stays, and the plan lease is let go; where the next line is, it no
    # longer claims to know (some of the pages may have been written).
    after = _cursor(world)
    assert "next_line" not in after
    assert after == {k: v for k, v in cursor.items() if k != "next_line"}
    world.clock.advance(60)
    pages.failing = False
    world.passes(3)
    instants = [s[0] for s in world.slots(sid)]
    assert instants == [f"2026-12-01T08:0{m}:00+00:00" for m in range(1, 8)]
    assert "owner" not in _cursor(world)


def test_a_page_carried_schedule_paused_deleted_or_edited_is_not_planned_from_its_page(
    world: World,
) -> None:
    paused = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    deleted = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(3)  # both on pages now
    world.service.pause(paused)
    world.service.delete(deleted)
    before = {sid: world.slots(sid) for sid in (paused, deleted)}
    world.calls.clear()
    world.passes(4)
    assert world.writes(world.tables.occurrences) == 0
    assert {sid: world.slots(sid) for sid in (paused, deleted)} == before


def test_a_schedule_whose_next_slot_outlives_its_last_record_stays_on_its_head(
    world: World,
) -> None:
    # A yearly schedule: its slot's record expires 90 days after it (TTL),
    # long before the next slot, so no record may carry that slot.
    yearly = world.create({"cron": "1 8 1 12 *", "time_zone": "UTC"})
    monthly = world.create({"cron": "1 8 1 * *", "time_zone": "UTC"})
    pages = PageWrites(world)
    world.passes(2)
    assert [s[0] for s in world.slots(yearly)] == ["2026-12-01T08:01:00+00:00"]
    # The yearly one's HEAD names its next slot, in the ``due`` index ...
    head = world.head(yearly)
    assert head["next_due"].startswith("2027-12-01T08:01:00")
    assert "due_key" in head
    # ... and the monthly one was handed to its chain as before.
    assert "due_key" not in world.head(monthly)
    assert {sid for _, sid, _ in pages.entries()} == {monthly}


# --- a broken hold of the plan lease, a crash, another planner ----------------------


def test_a_pass_that_lost_the_plan_lease_loses_no_slot(world: World) -> None:
    ids = [world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}) for _ in range(3)]
    world.passes(3)
    pages = PageWrites(world)
    other = boto3.client("dynamodb", region_name="us-east-1")  # uncounted, same backend
    stolen = []

    def steal(params: Any, **_: Any) -> None:
        # As the pass lets go, its lease has run out and another holder has it.
        if params.get("ConditionExpression") == "#owner = :me" and not stolen:
            stolen.append(True)
            other.update_item(
                TableName=world.tables.leases,
                Key=items.attrs({"pk": PLAN_CURSOR}),
                UpdateExpression="SET #owner = :other, #held_until = :past",
                ExpressionAttributeNames={"#owner": "owner", "#held_until": "held_until"},
                ExpressionAttributeValues={
                    ":other": {"S": "plan-other"},
                    ":past": {"S": items.iso(START)},  # and it ran out since
                },
            )

    world.client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", steal)
    cursor = _cursor(world)["through"]
    world.passes(1)
    assert stolen
    # The refused let-go moved nothing; the pass's next slots went on a page.
    assert _cursor(world)["through"] == cursor
    assert {sid for _, sid, _ in pages.entries()} == set(ids)
    world.passes(3)
    for sid in ids:
        assert [s[0] for s in world.slots(sid)] == [
            f"2026-12-01T08:0{m}:00+00:00" for m in range(1, 8)
        ]


def test_a_seed_whose_record_another_planner_put_first_still_goes_on(world: World) -> None:
    # The API plans a new schedule's seed while a pass does (``PlanNow``, on
    # the HEAD): its put of the slot's record comes first. The pass's hand-over
    # does not depend on its own put: the next slot goes on a page.
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    other = boto3.client("dynamodb", region_name="us-east-1")  # uncounted, same backend
    raced: list[str] = []

    def first(params: Any, **_: Any) -> None:
        item = params["Item"]
        if item["pk"]["S"] == sid and not raced:
            plain = {k: v for k, v in item.items() if k not in ("next_due", "chain_end")}
            other.put_item(TableName=params["TableName"], Item=plain)
            raced.append(item["sk"]["S"])

    world.client.meta.events.register("before-parameter-build.dynamodb.PutItem", first)
    world.passes(6)
    assert raced
    assert [s[0] for s in world.slots(sid)] == [f"2026-12-01T08:0{m}:00+00:00" for m in range(1, 7)]


def _expire_plan_lease(world: World) -> None:
    """The holder's lease, as if it had run out (a pass that ran for minutes)."""
    boto3.client("dynamodb", region_name="us-east-1").update_item(
        TableName=world.tables.leases,
        Key=items.attrs({"pk": PLAN_CURSOR}),
        UpdateExpression="SET #held_until = :past",
        ExpressionAttributeNames={"#held_until": "held_until"},
        ExpressionAttributeValues={":past": {"S": items.iso(START)}},
    )


def test_a_hand_over_paged_after_another_holder_read_the_pages_is_put_back_on_its_head(
    world: World,
) -> None:
    # A pass takes the plan lease and finds a new schedule's seed; it runs so
    # long that its lease runs out, and another pass takes it. That one reads
    # the ``due`` index (the seed is there) and the pages (the first pass has
    # not written its hand-over yet); then the first pass pages the next slot
    # and moves the HEAD out of ``due``; then the second reads the HEAD (no
    # longer a seed: set aside) and moves the cursor past the paged slot.
    steady = world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"})
    world.passes(3)
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:04:00Z"})
    slow = world.store
    now = world.clock.now()
    horizon = now + CONFIG.lookahead
    session = slow.schedules.plan_session()
    page = slow.schedules.due(horizon, 100, session=session)
    assert sid in {due.schedule_id for due in page.items}
    _expire_plan_lease(world)
    other_client = boto3.client("dynamodb", region_name="us-east-1")
    other = dynamo_store(other_client, world.tables, due_shards=2)
    queue = world.ticker.dispatcher.queue
    fast = Ticker(other, queue, world.clock, CONFIG, owner="tick-2")
    interleaved: list[bool] = []

    def slow_plans_now(**_: Any) -> None:
        if interleaved:
            return
        interleaved.append(True)
        world.ticker.planner._plan_page(
            page.items,
            DueSlots(CONFIG, now, horizon),
            PassState(now, session=session),
            until=horizon,
        )

    other_client.meta.events.register("before-call.dynamodb.BatchGetItem", slow_plans_now)
    world.clock.advance(150)  # the other pass runs once the first one's lease ran out
    fast.tick_once()
    assert interleaved
    assert "due_key" not in world.head(sid)  # handed over: its next slot, 08:05, on a page
    assert items.from_iso(_cursor(world)["through"]) > utc("2026-12-01T08:05:00Z")
    # The first pass's let-go is refused: it puts the slot back on the HEAD.
    slow.schedules.planned_through(horizon, session=session)
    head = world.head(sid)
    assert "due_key" in head and head["next_due"] == "2026-12-01T08:05:00.000000Z"
    world.clock.advance(60)
    world.passes(4)
    last = world.clock.now() - timedelta(seconds=60) + CONFIG.lookahead
    for schedule, first in ((sid, 4), (steady, 1)):
        expected = [
            (START + timedelta(minutes=m)).isoformat()
            for m in range(first, 60)
            if START + timedelta(minutes=m) <= last
        ]
        assert [s[0] for s in world.slots(schedule)] == expected


def test_a_pass_that_dies_after_its_pages_before_the_cursor_loses_nothing(world: World) -> None:
    ids = [world.create({"every": "PT1M", "start_at": "2026-12-01T08:01:00Z"}) for _ in range(3)]
    world.passes(2)
    dying: list[bool] = []

    def die(params: Any, **_: Any) -> None:
        if params.get("ConditionExpression") == "#owner = :me" and not dying:
            dying.append(True)
            raise SystemExit("killed between its pages and the cursor")

    world.client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", die)
    cursor = _cursor(world)["through"]
    with pytest.raises(SystemExit):
        world.ticker.tick_once()
    assert _cursor(world)["through"] == cursor and "owner" in _cursor(world)
    world.clock.advance(60)
    _expire_plan_lease(world)  # 120 s later, as the lease runs out
    world.passes(3)
    for sid in ids:
        assert [s[0] for s in world.slots(sid)] == [
            f"2026-12-01T08:0{m}:00+00:00" for m in range(1, 7)
        ]


def test_two_passes_through_one_store_never_see_each_others_state(world: World) -> None:
    # What a pass keeps between its planning calls is its own session, held
    # by its PassState: another pass through the same store object that ends
    # in between lets go of nothing and moves nothing of the first one's.
    world.passes(1)
    sid = world.create({"every": "PT1M", "start_at": "2026-12-01T08:02:00Z"})
    store = world.store
    now = world.clock.now()
    horizon = now + CONFIG.lookahead
    first = PassState(now, session=store.schedules.plan_session())
    second = PassState(now, session=store.schedules.plan_session())
    page = store.schedules.due(horizon, 100, session=first.session)
    assert [due.schedule_id for due in page.items] == [sid]
    store.schedules.planned_through(horizon, session=second.session)
    assert isinstance(first.session, DynamoPlanSession)
    assert isinstance(second.session, DynamoPlanSession)
    assert first.session.held and sid in first.session.heads_read
    assert not second.session.held and second.session.heads_read == {}
    assert _cursor(world).get("owner")  # the first pass still holds the plan lease
    slots = DueSlots(CONFIG, now, horizon)
    world.ticker.planner._plan_page(page.items, slots, first, until=horizon)
    store.schedules.planned_through(horizon, session=first.session)
    assert "owner" not in _cursor(world)
    assert items.from_iso(_cursor(world)["through"]) == horizon
    assert [at for at, _, _ in world.slots(sid)][:1] == ["2026-12-01T08:02:00+00:00"]
