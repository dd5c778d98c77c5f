"""Index lag and repeated passes, replayed by hand over DynamoDB + SQS on moto:
a seed handed over to the chain while the Runs table's ``next`` index lags,
and a second pass that reads that index before the entry arrives.

The planner (``DynamoStore.due``) moves its forward-only cursor past what
the second pass read: the seed's entry, arriving a moment later, is behind
the cursor and out of ``due``, and its schedule silently stops. The replay
fails on that planner (strict xfail) and must pass on one whose correctness
does not depend on reading its own writes through an index.
"""

from __future__ import annotations

import pytest

from tests.conftest import utc
from tests.model.machine import Violation
from tests.model.test_model import DynamoMachine

LOSES_THE_SEED = (
    "the planner moves its cursor after reading the lagging `next` index: "
    "a seed's hand-over written a moment before is left behind it"
)


def _a_seed_handed_over_then_a_second_pass(machine: DynamoMachine, lag_s: float) -> None:
    machine.start_near_a_dst_night("london fall back")  # 00:10Z
    machine.create("every 7 min", "latest_only")  # slots 00:17, 00:24, ... 00:45
    machine.index_lags(lag_s, "runs")
    # A pass 100 s before 00:45: it plans the missed slots and hands the seed
    # to the chain with its next slot, 00:45, just past its horizon (00:44:50).
    machine.clock.set(utc("2026-10-25T00:43:20Z"))
    machine.tick("tick-a")
    machine.promises_hold()
    # A schedule due at 00:45 gives the next pass something to plan.
    machine.create("new-york every 5 min", "latest_only")
    # The tick again, 15 s later (a repeated invocation, or the next one):
    # its horizon (00:45:05) passes 00:45.
    machine.time_passes(15)
    machine.tick("tick-b")
    machine.promises_hold()
    machine.index_lags(0.0, "all")
    machine.promises_hold()


def test_a_seed_handed_over_keeps_its_schedule_planned_without_lag() -> None:
    machine = DynamoMachine()
    _a_seed_handed_over_then_a_second_pass(machine, 0.0)
    machine.teardown()  # settles, then checks that no schedule stopped


@pytest.mark.xfail(strict=True, raises=Violation, reason=LOSES_THE_SEED)
def test_a_seed_handed_over_keeps_its_schedule_planned_under_index_lag() -> None:
    machine = DynamoMachine()
    _a_seed_handed_over_then_a_second_pass(machine, 30.0)
    machine.teardown()
