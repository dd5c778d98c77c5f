"""Lambda as the simulator charges it: asynchronous Invoke from handler code (judged by IAM,
answered 202, run by the async queue, throttles retried), the scaling rate and the account's
concurrency, cold starts, and each AWS request's CPU on its container's share of a core."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from sim.aws import CPU_PER_REQUEST_S, DEFAULT_NETWORK_LATENCY_S, NETWORK_LATENCY_S
from sim.engine import SimExecutor
from sim.functions import (
    COLD_START_CPU_S,
    INIT_BUILD_CPU_S,
    INIT_IMPORT_CPU_S,
    SCALING_ENVIRONMENTS,
    Function,
    Invocation,
    ScalingRate,
    cpu_factor,
)
from sim.template import ACCOUNT, REGION
from sim.world import ASYNC_QUEUE_DELAY_S, ASYNC_RETRY_FIRST_S, Simulation

START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
T0 = START.timestamp()
HANDLERS = "tests.sim.lambda_handlers"
INIT_HANDLERS = "tests.sim.lambda_init_handlers"  # builds its clients in the init phase
STACK = "LambdaModel"


def _arn(name: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"


def _role(actions: list[str], resources: list[str]) -> dict[str, Any]:
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {"Statement": []},
            "Policies": [
                {
                    "PolicyName": "grants",
                    "PolicyDocument": {
                        "Statement": [{"Effect": "Allow", "Action": actions, "Resource": resources}]
                    },
                }
            ],
        },
    }


def _function(
    name: str, handler: str, role: str, module: str = HANDLERS, **props: Any
) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "FunctionName": name,
            "Handler": f"{module}.{handler}",
            "Role": {"Fn::GetAtt": [role, "Arn"]},
            "Timeout": 60,
            "MemorySize": 448,
            **props,
        },
    }


def _template(target_reserved: int | None = None) -> dict[str, Any]:
    target: dict[str, Any] = {}
    if target_reserved is not None:
        target["ReservedConcurrentExecutions"] = target_reserved
    return {
        "Resources": {
            "Allowed": _role(["lambda:InvokeFunction"], [_arn("target"), _arn("target") + ":*"]),
            "Refused": _role(["lambda:InvokeFunction"], [_arn("another")]),
            "Plain": _role(["sts:GetCallerIdentity"], ["*"]),
            "Invoker": _function("invoker", "invoker", "Allowed"),
            "Outsider": _function("outsider", "invoker", "Refused"),
            "Target": _function("target", "target", "Plain", **target),
            "Requester": _function("requester", "requester", "Plain"),
            "Large": _function("large", "target", "Plain", MemorySize=3008),
            "Built": _function("built", "target", "Plain", INIT_HANDLERS),
            "Prebuilt": _function("prebuilt", "target", "Plain", INIT_HANDLERS, MemorySize=3008),
        }
    }


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.sim.conftest import DUMMY_AWS_ENV

    for key, value in DUMMY_AWS_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


@pytest.fixture
def sim_of() -> Iterator[Any]:
    stack: list[Simulation] = []

    def make(template: dict[str, Any]) -> Simulation:
        sim = Simulation({STACK: template}, START)
        sim.__enter__()
        # The requester's thread pool runs as strands of its invocation (the worker's seam).
        executor = functools.partial(SimExecutor, sim.engine)
        sim.seams.setdefault(HANDLERS, []).append(
            lambda module: setattr(module, "ThreadPoolExecutor", executor)
        )
        sim.deploy(STACK)
        stack.append(sim)
        return sim

    yield make
    for sim in stack:
        sim.__exit__(None, None, None)


def _fn(sim: Simulation, logical_id: str) -> Function:
    return sim.function(STACK, logical_id)


def _warm(sim: Simulation, function: Function) -> None:
    """One invocation to get a warm container (its cold start spent)."""
    function.invoke(sim.engine, {}, "manual")
    sim.engine.run_until(sim.engine.now + 10)


def _request_s(function: Function, service: str) -> float:
    """One request's time: its CPU at the function's factor, then the round trip."""
    latency = NETWORK_LATENCY_S.get(service, DEFAULT_NETWORK_LATENCY_S)
    return CPU_PER_REQUEST_S * cpu_factor(function.memory_mb) + latency


# --- asynchronous Invoke ---------------------------------------------------------------------


def test_an_event_invoke_is_answered_202_and_runs_the_target_after_the_queue_delay(
    sim_of: Any,
) -> None:
    sim = sim_of(_template())
    invoker, target = _fn(sim, "Invoker"), _fn(sim, "Target")
    _warm(sim, invoker)
    _warm(sim, target)
    began = sim.engine.now
    record = invoker.invoke(sim.engine, {"target": "target", "payload": {"n": 7}}, "manual")
    sim.engine.run_until(began + 5)
    assert record is not None and record.outcome == "ok", record.error
    # Lambda's answer to an Event invocation, given by the simulator (never by moto).
    assert record.result["status"] == 202
    assert record.result["payload"] == ""
    answered = record.result["at"]
    assert answered == pytest.approx(began + _request_s(invoker, "lambda"), abs=1e-6)
    [ran] = [r for r in target.invocations if r.source == "async"]
    assert ran.result["event"] == {"n": 7}
    assert T0 + ran.started_s == pytest.approx(answered + ASYNC_QUEUE_DELAY_S, abs=1e-6)
    # Judged and counted as any request: the grant on the target's ARN was used.
    assert sim.account.ledger.requests_by_function[(invoker.key, "lambda:Invoke")] == 1
    assert (invoker.key, "lambda:InvokeFunction", _arn("target")) in sim.account.ledger.used_grants
    assert sim.account.ledger.denied == []


def test_an_event_invoke_by_arn_is_judged_on_the_functions_arn(sim_of: Any) -> None:
    sim = sim_of(_template())
    invoker, target = _fn(sim, "Invoker"), _fn(sim, "Target")
    record = invoker.invoke(sim.engine, {"target": target.arn, "payload": {}}, "manual")
    sim.engine.run_until(T0 + 10)
    assert record is not None and record.result["status"] == 202
    assert [r.source for r in target.invocations] == ["async"]


def test_an_event_invoke_the_role_does_not_grant_is_refused_and_runs_nothing(
    sim_of: Any,
) -> None:
    sim = sim_of(_template())
    outsider, target = _fn(sim, "Outsider"), _fn(sim, "Target")
    record = outsider.invoke(sim.engine, {"target": "target", "payload": {}}, "manual")
    sim.engine.run_until(T0 + 10)
    assert record is not None and record.result["error"] == "AccessDeniedException"
    [denied] = sim.account.ledger.denied
    assert (denied.action, denied.resource) == ("lambda:InvokeFunction", _arn("target"))
    assert target.invocations == []


def test_a_request_response_invoke_of_a_simulated_function_is_refused_by_name(
    sim_of: Any,
) -> None:
    sim = sim_of(_template())
    invoker = _fn(sim, "Invoker")
    event = {"target": "target", "payload": {}, "type": "RequestResponse"}
    record = invoker.invoke(sim.engine, event, "manual")
    sim.engine.run_until(T0 + 10)
    assert record is not None and record.outcome == "error"
    assert "SimulationError" in record.error and "RequestResponse" in record.error


def test_an_async_invoke_over_reserved_concurrency_is_retried_with_back_off(
    sim_of: Any,
) -> None:
    sim = sim_of(_template(target_reserved=1))
    invoker, target = _fn(sim, "Invoker"), _fn(sim, "Target")
    _warm(sim, invoker)
    callers = [
        invoker.invoke(
            sim.engine, {"target": "target", "payload": {"n": n, "sleep_s": 5}}, "manual"
        )
        for n in (1, 2)
    ]
    sim.engine.run_until(sim.engine.now + 60)
    assert all(c is not None and c.result["status"] == 202 for c in callers)
    accepted = callers[1].result["at"] - T0  # type: ignore[union-attr]
    first, second = target.invocations
    # The second event found the one reserved execution busy (the first's 5 s): throttled,
    # back in the queue, retried after 1 s, 2 s, 4 s (doubling), run once the first ended.
    assert target.throttled_by["reserved"] == 3
    assert [t - accepted for t in target.throttles] == pytest.approx(
        [ASYNC_QUEUE_DELAY_S + d for d in (0.0, 1.0, 3.0)], abs=1e-6
    )
    assert first.ended_s is not None and second.started_s >= first.ended_s
    assert second.started_s - accepted == pytest.approx(
        ASYNC_QUEUE_DELAY_S + ASYNC_RETRY_FIRST_S * (1 + 2 + 4), abs=1e-6
    )
    assert sorted(r.result["event"]["n"] for r in target.invocations) == [1, 2]
    assert sim.async_dropped == 0


# --- the scaling rate and the account's concurrency ------------------------------------------


def test_a_function_starts_at_most_1000_environments_in_10_seconds() -> None:
    rate = ScalingRate()
    assert all(rate.take(100.0) for _ in range(SCALING_ENVIRONMENTS))
    assert not rate.take(100.0)
    # Refilled continuously, 100 a second, and never banked beyond 1,000.
    assert sum(rate.take(101.0) for _ in range(200)) == 100
    assert sum(rate.take(1000.0) for _ in range(2000)) == SCALING_ENVIRONMENTS


def test_an_invocation_needing_a_new_environment_beyond_the_scaling_rate_is_throttled(
    sim_of: Any,
) -> None:
    sim = sim_of(_template())
    target = _fn(sim, "Target")
    target.scaling.tokens = 2.0  # two new environments left in this 10 s
    started = [target.invoke(sim.engine, {"sleep_s": 5}, "manual") for _ in range(3)]
    assert [r is not None for r in started] == [True, True, False]
    assert target.throttled_by == {"scaling": 1}
    sim.engine.run_until(T0 + 30)
    # A warm environment needs no new one: it runs whatever the rate allows.
    target.scaling.tokens = 0.0
    target.scaling.at = sim.engine.now
    assert target.invoke(sim.engine, {}, "manual") is not None


def test_unreserved_functions_share_what_reservations_leave_of_the_account(
    sim_of: Any,
) -> None:
    sim = sim_of(_template(target_reserved=2))
    sim.concurrency.limit = 5  # the account's 1,000, made small: 2 reserved, 3 left
    target, large = _fn(sim, "Target"), _fn(sim, "Large")
    busy = [large.invoke(sim.engine, {"sleep_s": 5}, "manual") for _ in range(4)]
    assert [r is not None for r in busy] == [True, True, True, False]
    assert large.throttled_by == {"account": 1}
    # The reserved function keeps its own two, whatever the others use.
    reserved = [target.invoke(sim.engine, {"sleep_s": 5}, "manual") for _ in range(3)]
    assert [r is not None for r in reserved] == [True, True, False]
    assert target.throttled_by == {"reserved": 1}
    sim.engine.run_until(T0 + 30)
    assert large.invoke(sim.engine, {}, "manual") is not None


# --- cold starts -----------------------------------------------------------------------------


def _cold_then_warm(sim_of: Any, logical_id: str, memory_mb: int) -> tuple[Invocation, Invocation]:
    """``logical_id`` (of ``memory_mb``) invoked on a new container, then again on it warm."""
    sim = sim_of(_template())
    function = _fn(sim, logical_id)
    assert function.memory_mb == memory_mb
    cold = function.invoke(sim.engine, {}, "manual")
    sim.engine.run_until(T0 + 10)
    warm = function.invoke(sim.engine, {}, "manual")
    sim.engine.run_until(T0 + 20)
    assert cold is not None and warm is not None
    return cold, warm


@pytest.mark.parametrize(("logical_id", "memory_mb"), [("Target", 448), ("Large", 3008)])
def test_a_cold_start_imports_on_a_full_core_and_builds_clients_at_the_functions_share(
    sim_of: Any, logical_id: str, memory_mb: int
) -> None:
    # A module with no init_container leaves its clients to its first invocation: the
    # init phase (burst CPU) imports it, then the handler's share of a vCPU builds them.
    cold, warm = _cold_then_warm(sim_of, logical_id, memory_mb)
    build_s = INIT_BUILD_CPU_S * max(1.0, 1769 / memory_mb)  # 0.51 s at 448 MB, 0.13 at 3008
    assert cold.cold and cold.init_s == pytest.approx(INIT_IMPORT_CPU_S)
    assert cold.duration_s == pytest.approx(INIT_IMPORT_CPU_S + build_s)  # billed
    assert not warm.cold and warm.duration_s == 0.0
    assert cold.outcome == warm.outcome == "ok"


@pytest.mark.parametrize(("logical_id", "memory_mb"), [("Built", 448), ("Prebuilt", 3008)])
def test_a_module_that_builds_its_clients_in_the_init_phase_starts_on_a_full_core(
    sim_of: Any, logical_id: str, memory_mb: int
) -> None:
    cold, warm = _cold_then_warm(sim_of, logical_id, memory_mb)
    # The whole cold start on one core, whatever the memory, and all of it in the init.
    assert cold.init_s == pytest.approx(COLD_START_CPU_S)
    assert cold.duration_s == pytest.approx(COLD_START_CPU_S)
    # init_container ran once, in the init phase (before the handler), not again when warm.
    [init_at] = cold.result["inits"]
    assert init_at == pytest.approx(T0)
    assert cold.result["at"] == pytest.approx(T0 + COLD_START_CPU_S)
    assert warm.result["inits"] == [init_at] and warm.duration_s == 0.0


def test_the_timeout_counts_from_the_end_of_the_init_phase(sim_of: Any) -> None:
    sim = sim_of(_template())
    function = _fn(sim, "Target")
    record = function.invoke(sim.engine, {"sleep_s": 120}, "manual")
    sim.engine.run_until(T0 + 200)
    assert record is not None and record.outcome == "timeout"
    assert record.duration_s == pytest.approx(INIT_IMPORT_CPU_S + function.timeout_s)


def test_the_api_is_exempt_from_the_cold_start(sim_of: Any) -> None:
    sim = sim_of(_template())
    record = _fn(sim, "Target").invoke(sim.engine, {}, "api")
    sim.engine.run_until(T0 + 10)
    assert record is not None and record.cold and record.outcome == "ok"
    assert record.init_s == 0.0 and record.duration_s == 0.0


# --- CPU per request, one core per container ---------------------------------------------------


def test_requests_of_two_strands_of_one_container_wait_for_its_cpu(sim_of: Any) -> None:
    sim = sim_of(_template())
    requester = _fn(sim, "Requester")
    _warm(sim, requester)
    record = requester.invoke(sim.engine, {"strands": 2}, "manual")
    sim.engine.run_until(sim.engine.now + 10)
    assert record is not None and record.outcome == "ok", record.error
    cpu = CPU_PER_REQUEST_S * cpu_factor(448)  # 5.7 ms at 448 MB
    latency = DEFAULT_NETWORK_LATENCY_S  # STS: the default round trip
    # The second strand's request is built after the first's: one core slice between them.
    assert sorted(record.result["answered_s"]) == pytest.approx(
        [cpu + latency, 2 * cpu + latency], abs=1e-6
    )


def test_requests_of_two_containers_do_not_wait_for_each_other(sim_of: Any) -> None:
    sim = sim_of(_template())
    requester = _fn(sim, "Requester")
    # Two warm containers: two overlapping invocations, then their second invocations.
    for _ in range(2):
        requester.invoke(sim.engine, {"sleep_s": 0}, "manual")
    sim.engine.run_until(sim.engine.now + 10)
    assert len(requester.idle) == 2
    records = [requester.invoke(sim.engine, {"strands": 1}, "manual") for _ in range(2)]
    sim.engine.run_until(sim.engine.now + 10)
    one = _request_s(requester, "sts")
    for record in records:
        assert record is not None and record.outcome == "ok", record.error
        assert record.result["answered_s"] == pytest.approx([one], abs=1e-6)
    assert {r.container for r in records if r is not None} == {c.id for c in requester.idle}


def test_the_apis_requests_take_no_time(sim_of: Any) -> None:
    sim = sim_of(_template())
    record = _fn(sim, "Requester").invoke(sim.engine, {"strands": 1}, "api")
    sim.engine.run_until(T0 + 10)
    assert record is not None and record.outcome == "ok", record.error
    assert record.result["answered_s"] == [0.0]
