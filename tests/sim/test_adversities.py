"""Each of AWS's weaker promises the simulator keeps happens when on, and not when off."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from adapters.definitions import Key, TableDefinition
from sim import at_least_once
from sim.adversity import NAMES, NONE, Adversities, without
from sim.at_least_once import AtLeastOnce
from sim.fastmoto import faster_moto
from sim.index_lag import IndexLag
from sim.limits import (
    API_GATEWAY_TIMEOUT_S,
    PARTITION_WCU_PER_S,
    SQS_MAX_MESSAGE_BYTES,
    Limits,
)

REGION = "us-east-1"
NOW_S = 1_796_112_000.0  # 2026-12-01T08:00:00Z


# --- the switches ----------------------------------------------------------------------------


def test_every_adversity_is_on_by_default_and_each_can_be_turned_off() -> None:
    assert Adversities().on() == list(NAMES)
    assert NONE.on() == []
    assert without(["index-lag"]).on() == [n for n in NAMES if n != "index-lag"]
    assert without(["all"]) == NONE


def test_an_unknown_adversity_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown adversity index-lgo"):
        without(["index-lgo"])


# --- index lag -------------------------------------------------------------------------------


@pytest.fixture
def gsi(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    clock = [NOW_S]
    lag = IndexLag(lambda: clock[0]) if request.param else None
    with mock_aws(), faster_moto(lambda: clock[0], lag):
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(
            TableName="heads",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "shard", "AttributeType": "S"},
                {"AttributeName": "due", "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "due",
                    "KeySchema": [
                        {"AttributeName": "shard", "KeyType": "HASH"},
                        {"AttributeName": "due", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield SimpleNamespace(dynamodb=dynamodb, clock=clock)


def _due(dynamodb: Any) -> list[str]:
    answer = dynamodb.query(
        TableName="heads",
        IndexName="due",
        KeyConditionExpression="shard = :s",
        ExpressionAttributeValues={":s": {"S": "0"}},
    )
    return [item["due"]["S"] for item in answer["Items"]]


def _put(dynamodb: Any, due: str) -> None:
    dynamodb.put_item(
        TableName="heads", Item={"pk": {"S": "h1"}, "shard": {"S": "0"}, "due": {"S": due}}
    )


@pytest.mark.parametrize("gsi", [True], indirect=True)
def test_an_index_sees_a_write_later_and_the_old_state_until_then(gsi: Any) -> None:
    _put(gsi.dynamodb, "08:01")
    assert _due(gsi.dynamodb) == []  # appears later
    gsi.clock[0] += 60
    assert _due(gsi.dynamodb) == ["08:01"]
    _put(gsi.dynamodb, "08:02")
    assert _due(gsi.dynamodb) == ["08:01"]  # changes later: the old entry meanwhile
    # The table itself sees the write at once.
    item = gsi.dynamodb.get_item(TableName="heads", Key={"pk": {"S": "h1"}}, ConsistentRead=True)
    assert item["Item"]["due"]["S"] == "08:02"
    gsi.clock[0] += 60
    assert _due(gsi.dynamodb) == ["08:02"]
    gsi.dynamodb.delete_item(TableName="heads", Key={"pk": {"S": "h1"}})
    assert _due(gsi.dynamodb) == ["08:02"]  # leaves later
    gsi.clock[0] += 60
    assert _due(gsi.dynamodb) == []


@pytest.mark.parametrize("gsi", [True], indirect=True)
def test_an_index_never_sees_a_cancelled_transaction(gsi: Any) -> None:
    with pytest.raises(ClientError):
        gsi.dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": "heads",
                        "Item": {"pk": {"S": "h2"}, "shard": {"S": "0"}, "due": {"S": "09:00"}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": "heads",
                        "Key": {"pk": {"S": "nobody"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )
    gsi.clock[0] += 60
    assert _due(gsi.dynamodb) == []


@pytest.mark.parametrize("gsi", [False], indirect=True)
def test_without_index_lag_an_index_sees_a_write_at_once(gsi: Any) -> None:
    _put(gsi.dynamodb, "08:01")
    assert _due(gsi.dynamodb) == ["08:01"]


def test_index_lag_has_a_tail_of_seconds_and_grows_under_a_burst() -> None:
    clock = [NOW_S]
    lag = IndexLag(lambda: clock[0])
    quiet = []
    for i in range(2000):  # one write every other second
        clock[0] = NOW_S + 2 * i
        quiet.append(lag.delay_s("t"))
    quiet.sort()
    assert quiet[len(quiet) // 2] < 0.5 < quiet[-1]
    assert quiet[-1] > 2.0
    clock[0] = NOW_S + 10_000
    burst = [lag.delay_s("t") for _ in range(5000)]  # one instant
    assert min(burst[-100:]) > 4.0


# --- at-least-once invocation ----------------------------------------------------------------


def test_events_are_sometimes_delivered_twice_together_or_apart_and_sometimes_late() -> None:
    chooser = AtLeastOnce(seed=3)
    deliveries = [chooser.deliveries() for _ in range(5000)]
    twice = [d for d in deliveries if len(d) == 2]
    assert chooser.duplicated == len(twice) > 0
    assert any(d[1] - d[0] < 0.1 for d in twice)  # concurrently
    assert any(d[1] - d[0] >= 1.0 for d in twice)  # seconds apart
    assert chooser.late > 0 and any(d[0] >= 5.0 for d in deliveries)


def _idle(templates: dict[str, Any], adversities: Adversities) -> dict[str, Any]:
    from tests.sim.conftest import _run

    return _run("idle-week", templates, hours=4 / 60, tick_interval_s=50, adversities=adversities)


def test_the_tick_is_invoked_twice_for_a_firing_under_its_reserved_concurrency(
    templates: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(at_least_once, "DUPLICATE_P", 1.0)
    monkeypatch.setattr(at_least_once, "LATE_P", 0.0)
    only = Adversities(**{a: a == "at_least_once" for a in NAMES.values()})
    on = _idle(templates, only)
    off = _idle(templates, NONE)
    tick_on = next(v for k, v in on["invocations"].items() if "Tick" in k)
    tick_off = next(v for k, v in off["invocations"].items() if "Tick" in k)
    fired = sum(tick_off.get(k, 0) for k in ("ok", "error", "timeout", "running"))
    assert on["adversity_effects"]["invocations_delivered_twice"] >= fired > 0
    started_on = sum(tick_on.get(k, 0) for k in ("ok", "error", "timeout", "running"))
    # Every firing delivered twice: each second delivery ran, or was throttled by the
    # tick's reserved concurrency (and retried by the async queue); the last firing's
    # second delivery may come after the run's end.
    assert started_on + tick_on.get("throttled", 0) >= 2 * fired - 1
    assert "throttled" not in tick_off and off["adversity_effects"] == {}


# --- DynamoDB: conflicts, partitions, TTL ----------------------------------------------------


def _account(now: list[float], invocation: list[int]) -> Any:
    table = TableDefinition("Heads", "", Key("pk"), Key("sk"))
    return SimpleNamespace(
        engine=SimpleNamespace(now=now[0]),
        tables={"heads": table},
        _invocation=lambda: invocation[0],
    )


def _update(pk: str = "S#1") -> dict[str, Any]:
    return {"TableName": "heads", "Key": {"pk": {"S": pk}, "sk": {"S": "HEAD"}}}


def _transaction(pk: str = "S#1") -> dict[str, Any]:
    return {"TransactItems": [{"Update": _update(pk)}]}


def test_a_transaction_and_a_write_on_one_item_in_one_instant_conflict() -> None:
    now, me = [NOW_S], [1]
    limits = Limits(_account(now, me))  # type: ignore[arg-type]
    actor: Any = None
    assert limits.conflict(actor, "dynamodb", "TransactWriteItems", _transaction()) is None
    me[0] = 2  # another invocation, the same instant
    refused = limits.conflict(actor, "dynamodb", "UpdateItem", _update())
    assert refused is not None
    assert refused.response["Error"]["Code"] == "TransactionConflictException"
    cancelled = limits.conflict(actor, "dynamodb", "TransactWriteItems", _transaction())
    assert cancelled is not None
    assert cancelled.response["CancellationReasons"] == [{"Code": "TransactionConflict"}]
    # Another item, or the same a moment later, is no conflict.
    assert limits.conflict(actor, "dynamodb", "UpdateItem", _update("S#2")) is None
    limits.account.engine.now = NOW_S + 1
    assert limits.conflict(actor, "dynamodb", "UpdateItem", _update()) is None
    assert limits.counts["transaction_conflicts"] == 2


def test_without_conflicts_no_fault_is_installed() -> None:
    account: Any = _account([NOW_S], [1])
    assert (
        Limits(account, conflicts=False).conflict not in Limits(account, conflicts=False).faults()
    )
    assert Limits(account).faults()  # on: installed


def test_a_partition_key_over_1000_write_units_a_second_is_throttled() -> None:
    account: Any = _account([NOW_S], [1])
    limits = Limits(account)
    answers = [
        limits.throttle(None, "dynamodb", "UpdateItem", _update())  # type: ignore[arg-type]
        for _ in range(PARTITION_WCU_PER_S + 1)
    ]
    assert answers[:-1] == [None] * PARTITION_WCU_PER_S
    last = answers[-1]
    assert last is not None
    assert last.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    # Other partition key values, and the next second, have their own units.
    assert limits.throttle(None, "dynamodb", "UpdateItem", _update("S#2")) is None  # type: ignore[arg-type]
    account.engine.now = NOW_S + 1
    assert limits.throttle(None, "dynamodb", "UpdateItem", _update()) is None  # type: ignore[arg-type]
    assert limits.throttle not in Limits(account, throttling=False).faults()


def test_ttl_deletes_hours_after_expiry_with_the_lag_and_at_expiry_without() -> None:
    account: Any = _account([NOW_S], [1])
    lagged, prompt = Limits(account), Limits(account, ttl_lag=False)
    key = json.dumps({"pk": {"S": "x"}})
    assert prompt.ttl_due("runs", key, NOW_S, NOW_S + 1)
    assert not lagged.ttl_due("runs", key, NOW_S, NOW_S + 1)
    assert not lagged.ttl_due("runs", key, NOW_S, NOW_S + 3599)
    assert lagged.ttl_due("runs", key, NOW_S, NOW_S + 48 * 3600 + 1)


# --- SQS and API Gateway ---------------------------------------------------------------------


def test_a_message_or_batch_over_256_kib_is_refused() -> None:
    account: Any = _account([NOW_S], [1])
    limits = Limits(account)
    big = "x" * (SQS_MAX_MESSAGE_BYTES + 1)
    one = limits.message_size(None, "sqs", "SendMessage", {"MessageBody": big})  # type: ignore[arg-type]
    assert one is not None and one.response["Error"]["Code"] == "InvalidParameterValue"
    half = "x" * (SQS_MAX_MESSAGE_BYTES // 2 + 1)
    entries = {"Entries": [{"Id": "1", "MessageBody": half}, {"Id": "2", "MessageBody": half}]}
    batch = limits.message_size(None, "sqs", "SendMessageBatch", entries)  # type: ignore[arg-type]
    assert batch is not None
    assert batch.response["Error"]["Code"] == "AWS.SimpleQueueService.BatchRequestTooLong"
    assert limits.message_size(None, "sqs", "SendMessage", {"MessageBody": "x"}) is None  # type: ignore[arg-type]
    assert limits.message_size not in Limits(account, sqs=False).faults()


def test_receives_stop_at_the_in_flight_cap_and_not_without_it() -> None:
    account: Any = _account([NOW_S], [1])
    assert Limits(account, in_flight_cap=5).over_in_flight_cap(5)
    assert not Limits(account, in_flight_cap=5).over_in_flight_cap(4)
    assert not Limits(account, sqs=False, in_flight_cap=5).over_in_flight_cap(5)
    assert Limits(account).in_flight_cap == 120_000


def test_api_gateway_gives_up_after_29_seconds_unless_off() -> None:
    account: Any = _account([NOW_S], [1])
    assert Limits(account).api_gateway_timed_out(API_GATEWAY_TIMEOUT_S + 0.1)
    assert not Limits(account).api_gateway_timed_out(API_GATEWAY_TIMEOUT_S)
    assert not Limits(account, api_timeout=False).api_gateway_timed_out(60.0)


# --- what the summary reports ----------------------------------------------------------------


def test_the_summary_counts_a_schedule_that_stopped_not_one_that_missed_once() -> None:
    from datetime import UTC, datetime, timedelta

    from sim.results import deliveries

    start = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    minutes = [start + timedelta(minutes=k) for k in range(1, 6)]

    def seen(schedule: str, at: datetime) -> Any:
        text = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        return SimpleNamespace(
            schedule_id=schedule,
            scheduled_at=text,
            key=f"{schedule}{text}",
            started_s=(at - start).total_seconds(),
            status=200,
        )

    sim: Any = SimpleNamespace(
        engine=SimpleNamespace(now=(start + timedelta(minutes=6)).timestamp(), start=start),
        labels={"s": "stopped", "m": "missed-once"},
        receiver=SimpleNamespace(
            deliveries=[seen("s", at) for at in minutes[:2]]
            + [seen("m", at) for at in minutes if at != minutes[2]]
        ),
    )
    found = deliveries(sim, {"s": minutes, "m": minutes}, settle_s=0.0)
    assert found["gaps"] == 4
    assert found["schedules_no_longer_planned"] == 1
    assert found["stopped_examples"] == ["stopped"]


def _stalled_api(templates: dict[str, Any], adversities: Adversities) -> tuple[int, Any]:
    """``GET /schedules`` whose first DynamoDB request takes 40 s (a fault), from an API
    function whose ``Timeout`` is 60 s (the stack's is API Gateway's own 29 s, so Lambda
    would cut it off first)."""
    import copy
    import os

    templates = copy.deepcopy(templates)
    for resource in templates["Duetime"]["Resources"].values():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::Lambda::Function" and props["Handler"].endswith("api.handler"):
            props["Timeout"] = 60
    from datetime import UTC, datetime

    from sim.scenario_blocks import PRIMARY
    from sim.world import Simulation
    from tests.sim.conftest import DUMMY_AWS_ENV

    saved = dict(os.environ)
    os.environ.update(DUMMY_AWS_ENV)
    os.environ["AWS_DEFAULT_REGION"] = os.environ["AWS_REGION"] = REGION
    try:
        start = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
        with Simulation(templates, start, adversities=adversities) as sim:
            sim.deploy(PRIMARY)
            left = [1]

            def stall(actor: Any, service: str, operation: str, params: Any) -> float | None:
                if left[0] and service == "dynamodb" and "Api" in actor.function:
                    left[0] -= 1
                    return 40.0
                return None

            sim.account.faults.append(stall)
            return sim.api(PRIMARY, "GET", "/schedules")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_api_gateway_answers_504_when_the_api_has_not_answered_in_29_seconds(
    templates: dict[str, Any],
) -> None:
    only = Adversities(**{a: a == "api_timeout" for a in NAMES.values()})
    status, answer = _stalled_api(templates, only)
    assert (status, answer) == (504, {"message": "Endpoint request timed out"})
    status, _ = _stalled_api(templates, NONE)
    assert status == 200  # without it the caller waits the 40 s for the function's answer
