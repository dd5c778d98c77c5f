"""The model's checks can fail: replays of the machine over the real SQLite
store (and DynamoDB on moto), once as the code is and once with a defect
planted, each defect one the campaign must report."""

from __future__ import annotations

import sys
from typing import Any

import pytest

import service.runs as runs_module
from domain.run import Reason, RunStatus, Verdict
from domain.schedule import Overdue
from domain.start import START
from service.schedules import ScheduleService
from tests.model.faults import FakeTarget
from tests.model.machine import DuetimeMachine, Violation
from tests.model.test_model import DynamoMachine, SqliteMachine


def _edit_after_an_outage(machine: SqliteMachine) -> None:
    machine.start_near_a_dst_night("london fall back")
    label = machine.create("every 7 min", "catch_up_all, 3 attempts")
    machine.promises_hold()
    machine.long_outage(2)
    machine.edit(label, "every 7 min", "catch_up_all, 3 attempts")
    machine.promises_hold()
    machine.tick("tick-a")
    machine.promises_hold()


def test_an_edit_after_an_outage_keeps_every_promise_in_the_model() -> None:
    machine = SqliteMachine()
    _edit_after_an_outage(machine)
    machine.teardown()  # settles, then checks that nothing is stuck


def test_the_model_reports_an_edit_that_loses_the_slots_due_in_an_outage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def forgetful(self: ScheduleService, schedule: object, now: object) -> list[object]:
        return []

    monkeypatch.setattr(ScheduleService, "_unplanned", forgetful)
    machine = SqliteMachine()
    try:
        with pytest.raises(Violation, match="no lost occurrence"):
            _edit_after_an_outage(machine)
    finally:
        machine.backend.close()


def test_the_model_reports_a_target_call_with_the_parameters_of_another_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    machine = SqliteMachine()
    try:
        machine.start_near_a_dst_night("new-york fall back")
        label = machine.create("every 7 min", "latest_only")
        machine.time_passes(5 * 60 + 50)
        machine.tick("tick-a")  # plans version 1's slot at 05:17
        machine.edit(label, "every 7 min", "latest_only")
        machine.time_passes(90)
        machine.tick("tick-a")  # admits it
        # The worker reads the current version instead of the occurrence's.
        runs = machine.worker.runs
        current = machine.observer.schedules.get(machine.models[label].schedule_id)
        assert current is not None
        monkeypatch.setattr(
            type(runs._inner),  # type: ignore[attr-defined]
            "get_version",
            lambda self, sid, version: current.current,
        )
        machine.deliver(0)
        with pytest.raises(Violation, match="never retroactive"):
            machine.promises_hold()
    finally:
        machine.backend.close()


def _a_queued_slot_delivered_after_an_outage(machine: SqliteMachine) -> None:
    machine.start_near_a_dst_night("london fall back")
    machine.create("every 7 min", "latest_only")
    machine.tick_when_next_due("tick-a", 0)  # admitted and sent as it comes due
    machine.promises_hold()
    machine.long_outage(2)  # its message waits; later slots come due meanwhile
    machine.deliver(0)
    machine.promises_hold()
    machine.tick("tick-a")
    machine.deliver(0)
    machine.promises_hold()


def test_latest_only_after_an_outage_keeps_every_promise_in_the_model() -> None:
    machine = SqliteMachine()
    _a_queued_slot_delivered_after_an_outage(machine)
    machine.teardown()


def test_the_model_reports_a_worker_that_starts_a_superseded_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The defect: the worker judges expire at start, but not latest_only.
    real = runs_module.decide_start

    def lenient(*args: Any, **kw: Any) -> Verdict:
        verdict = real(*args, **kw)
        return START if verdict.reason == Reason.SUPERSEDED else verdict

    monkeypatch.setattr(runs_module, "decide_start", lenient)
    machine = SqliteMachine()
    try:
        with pytest.raises(Violation, match="latest_only starts only the latest due slot"):
            _a_queued_slot_delivered_after_an_outage(machine)
    finally:
        machine.backend.close()


def _an_outage_of_the_tick(machine: DuetimeMachine) -> None:
    machine.start_near_a_dst_night("london fall back")
    machine.create("every 7 min", "latest_only")
    machine.create("every 7 min", "catch_up_all, 3 attempts")
    machine.create("every 7 min", "expire after 5 min")
    machine.tick_when_next_due("tick-a", 0)
    machine.deliver(0)
    machine.promises_hold()
    machine.outage(15)  # two or three slots of each come due; then a pass, and the worker
    machine.promises_hold()


@pytest.mark.parametrize("machine_type", [SqliteMachine, DynamoMachine], ids=["sqlite", "dynamodb"])
def test_after_an_outage_each_overdue_policy_holds_in_the_model(
    machine_type: type[DuetimeMachine],
) -> None:
    machine = machine_type()
    _an_outage_of_the_tick(machine)
    assert len(machine.target.calls) >= 4  # the latest_only slot, the catch_up_all ones, ...
    machine.teardown()


@pytest.mark.parametrize(
    ("defect", "promise"),
    [
        ("starts superseded slots", "after an outage latest_only runs the latest slot only"),
        ("supersedes every slot", "after an outage catch_up_all runs every slot"),
        ("expires nothing", "expire starts nothing later than its catchup_window"),
    ],
)
def test_the_model_reports_an_overdue_policy_broken_after_an_outage(
    monkeypatch: pytest.MonkeyPatch, defect: str, promise: str
) -> None:
    real = runs_module.decide_start

    def broken(*args: Any, **kw: Any) -> Verdict:
        verdict = real(*args, **kw)
        if defect == "starts superseded slots" and verdict.reason == Reason.SUPERSEDED:
            return START
        if defect == "expires nothing" and verdict.status is RunStatus.EXPIRED:
            return START
        catching_up = args[3].overdue is Overdue.CATCH_UP_ALL
        if defect == "supersedes every slot" and catching_up and verdict is START:
            return Verdict(RunStatus.SKIPPED, Reason.SUPERSEDED)
        return verdict

    # Wherever the service decides a start (the worker, the dispatcher).
    for name, module in list(sys.modules.items()):
        if name.startswith("service") and getattr(module, "decide_start", None) is real:
            monkeypatch.setattr(module, "decide_start", broken)
    machine = SqliteMachine()
    try:
        with pytest.raises(Violation, match=promise):
            _an_outage_of_the_tick(machine)
    finally:
        machine.backend.close()


def test_the_model_reports_an_attempt_that_reaches_the_target_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The defect: a worker that calls the target again for a message it
    # received twice (the duplicate is not recognised as the same attempt).
    real = FakeTarget.deliver

    def twice(self: FakeTarget, *args: Any, **kw: Any) -> Any:
        real(self, *args, **kw)
        return real(self, *args, **kw)

    monkeypatch.setattr(FakeTarget, "deliver", twice)
    machine = SqliteMachine()
    try:
        machine.start_near_a_dst_night("london fall back")
        machine.create("every 7 min", "catch_up_all, 3 attempts")
        machine.tick_when_next_due("tick-a", 0)
        with pytest.raises(Violation, match="no occurrence is delivered twice"):
            machine.deliver(0)
            machine.promises_hold()
    finally:
        machine.backend.close()
