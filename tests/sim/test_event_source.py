"""The SQS event source mapping's scaling, as Lambda documents it for standard queues:
five concurrent batches at first, 300 more a minute while messages are left after the
pollers took theirs, at most 1,000, back to five after a quiet minute, and never over
the function's or the account's limit."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sim.world import (
    ACCOUNT_CONCURRENCY,
    ESM_MAX_BATCHES,
    ESM_START_BATCHES,
    EventSourceMapping,
    esm_ceiling,
    scale,
)


def _mapping(reserved: int | None = None, maximum: int | None = None) -> EventSourceMapping:
    function: Any = SimpleNamespace(reserved=reserved)
    return EventSourceMapping(
        function=function,
        queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/q",
        queue_arn="arn:aws:sqs:us-east-1:123456789012:q",
        batch_size=10,
        window_s=5.0,
        partial=True,
        maximum_concurrency=maximum,
    )


def _busy_seconds(mapping: EventSourceMapping, seconds: int, ceiling: int) -> list[int]:
    allowed = []
    for t in range(seconds):
        scale(mapping, backlog=1000, now=float(t), ceiling=ceiling)  # messages left over
        allowed.append(mapping.allowed)
    return allowed


def test_a_backlog_grows_the_mapping_by_300_batches_a_minute_from_five() -> None:
    mapping = _mapping()
    assert mapping.allowed == ESM_START_BATCHES
    allowed = _busy_seconds(mapping, 60, ceiling=ESM_MAX_BATCHES)
    assert allowed[-1] == ESM_START_BATCHES + 300


def test_a_mapping_never_runs_more_batches_than_its_ceiling() -> None:
    mapping = _mapping()
    allowed = _busy_seconds(mapping, 600, ceiling=ESM_MAX_BATCHES)
    assert max(allowed) == ESM_MAX_BATCHES
    assert _busy_seconds(_mapping(), 60, ceiling=7)[-1] == 7


def test_a_mapping_whose_pollers_keep_up_does_not_grow() -> None:
    mapping = _mapping()
    for t in range(60):
        scale(mapping, backlog=0, now=float(t), ceiling=ESM_MAX_BATCHES)
    assert mapping.allowed == ESM_START_BATCHES


def test_a_quiet_minute_scales_the_mapping_back_to_five() -> None:
    mapping = _mapping()
    _busy_seconds(mapping, 30, ceiling=ESM_MAX_BATCHES)
    for t in range(30, 30 + 60):
        scale(mapping, backlog=0, now=float(t), ceiling=ESM_MAX_BATCHES)
    assert mapping.allowed > ESM_START_BATCHES
    scale(mapping, backlog=0, now=30.0 + 60, ceiling=ESM_MAX_BATCHES)
    assert mapping.allowed == ESM_START_BATCHES


def test_the_ceiling_is_the_lowest_of_maximum_concurrency_reserved_and_the_account() -> None:
    tick: Any = SimpleNamespace(reserved=2)
    assert esm_ceiling(_mapping(), [tick]) == ACCOUNT_CONCURRENCY - 2
    assert esm_ceiling(_mapping(maximum=50), [tick]) == 50
    assert esm_ceiling(_mapping(reserved=3, maximum=50), [tick]) == 3


class _Queue:
    """SQS's receive, as far as a poller sees it: at most ten messages a request."""

    def __init__(self, depth: int) -> None:
        self.left = depth
        self.requests: list[int] = []

    def receive_message(self, MaxNumberOfMessages: int, **_: Any) -> dict[str, Any]:
        self.requests.append(MaxNumberOfMessages)
        n = min(MaxNumberOfMessages, 10, self.left)
        self.left -= n
        return {"Messages": [{"MessageId": str(i)} for i in range(n)]} if n else {}


def _receive(depth: int, batch: int, in_flight: int = 0) -> tuple[int, _Queue, int]:
    from collections import Counter

    from sim.limits import Limits
    from sim.world import Simulation

    queue = _Queue(depth)
    poller: Any = SimpleNamespace(
        esm_requests=Counter(),
        account=SimpleNamespace(sim=SimpleNamespace(sqs=queue)),
        limits=Limits(account=None, in_flight_cap=100),  # type: ignore[arg-type]
        _in_flight=lambda url: in_flight,
    )
    got = Simulation._receive(poller, _mapping(), batch)
    return len(got), queue, poller.esm_requests["sqs:ReceiveMessage"]


def test_a_batch_larger_than_ten_takes_a_poller_several_receives() -> None:
    got, queue, counted = _receive(depth=1000, batch=25)
    assert got == 25
    assert queue.requests == [10, 10, 5]
    assert counted == 3


def test_a_poller_stops_receiving_when_the_queue_runs_dry() -> None:
    got, queue, counted = _receive(depth=13, batch=100)
    assert got == 13
    assert queue.requests == [10, 10]
    assert counted == 2
    assert _receive(depth=0, batch=10)[0] == 0


def test_a_poller_receives_nothing_while_the_queue_is_at_its_in_flight_cap() -> None:
    got, queue, counted = _receive(depth=50, batch=10, in_flight=100)
    assert (got, queue.requests, counted) == (0, [], 1)  # OverLimit: one refused receive
    assert _receive(depth=50, batch=10, in_flight=99)[0] == 10
