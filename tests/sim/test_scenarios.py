"""The deployment, run the way AWS runs it, keeps its promises (short runs of each scenario).

Tests marked xfail(strict=True) state the correct behaviour of something the
simulator shows failing today (the reason says what); each flips to a failure
once it is fixed, and its marker goes.
"""

from __future__ import annotations

from typing import Any

import pytest

# What the simulator still shows on the tree as it stands, not yet explained.
OPEN_LATENESS = "p99 start lateness in the short mixed run is still over 12 s"


def _alarm(result: dict[str, Any], stack: str, name: str) -> dict[str, Any]:
    alarm: dict[str, Any] = result["alarms"][f"{stack}-{name}"]
    return alarm


def _denied_by(result: dict[str, Any], function_part: str) -> list[dict[str, Any]]:
    return [d for d in result["denied_calls"] if function_part in d["function"]]


# --- every scenario --------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["idle", "faults", "two_stacks", "mixed"])
def test_the_tick_worker_and_api_are_never_denied(
    scenario: str, request: pytest.FixtureRequest
) -> None:
    result = request.getfixturevalue(scenario)
    for part in ("Tick", "Worker", "Api"):
        assert _denied_by(result, part) == [], part


def test_the_watchdog_is_never_denied(faults: dict[str, Any]) -> None:
    assert _denied_by(faults, "Watchdog") == []


def test_every_scenario_reports_the_fields_the_cli_promises(idle: dict[str, Any]) -> None:
    for key in (
        "scenario",
        "simulated_s",
        "denied_calls",
        "unused_grants",
        "due",
        "delivered",
        "duplicates",
        "gaps",
        "lateness_s",
        "items_by_table",
        "requests_by_operation",
        "usd_per_million_runs",
        "usd_per_month_idle",
        "alarms",
    ):
        assert key in idle, key


def test_grants_no_request_used_are_listed_per_function(idle: dict[str, Any]) -> None:
    # Idle, the API is never called: every one of its grants is unused.
    api = [g for g in idle["unused_grants"] if "FunctionsApi" in g["function"]]
    assert any(g["action"] == "secretsmanager:CreateSecret" for g in api)
    # The tick's lease writes are used at once.
    used_by_tick = [
        g
        for g in idle["unused_grants"]
        if "FunctionsTick" in g["function"]
        and g["action"] == "dynamodb:PutItem"
        and "Leases" in g["resource"]
    ]
    assert used_by_tick == []


# --- idle ------------------------------------------------------------------------------------


def test_idle_costs_a_few_dollars_a_month(idle: dict[str, Any]) -> None:
    assert idle["due"] == 0
    assert idle["usd_per_million_runs"] is None
    assert 0 < idle["usd_per_month_idle"] < 50


def test_idle_tables_do_not_grow(idle: dict[str, Any]) -> None:
    samples = idle["items_samples"]
    settled, last = samples[1], samples[-1]
    grown = {k: (settled[k], last[k]) for k in settled if k != "at_s" and last[k] > settled[k]}
    assert grown == {}


def test_idle_items_read_per_window_stay_flat(idle: dict[str, Any]) -> None:
    read = idle["items_read_by_window"][1:]
    assert max(read) <= min(read) * 1.02 + 2


def test_idle_requests_per_window_stay_flat(idle: dict[str, Any]) -> None:
    requests = idle["requests_by_window"][1:]
    assert max(requests) <= min(requests) * 1.05 + 5


def test_idle_alarms_that_watch_the_tick_stay_ok(idle: dict[str, Any]) -> None:
    assert not _alarm(idle, "Duetime", "TickHeartbeatMissing")["into_alarm_s"]
    assert not _alarm(idle, "Duetime", "TickErrors")["into_alarm_s"]


def test_idle_the_watchdog_does_not_fail(idle: dict[str, Any]) -> None:
    assert not _alarm(idle, "Duetime", "WatchdogErrors")["into_alarm_s"]


def test_the_watchdog_does_not_fail_while_schedules_exist(faults: dict[str, Any]) -> None:
    assert not _alarm(faults, "Duetime", "WatchdogErrors")["into_alarm_s"]


# --- mixed ------------------------------------------------------------------------------------


def test_mixed_every_due_occurrence_reaches_its_target_once(mixed: dict[str, Any]) -> None:
    assert mixed["due"] > 0
    assert mixed["gaps"] == 0, mixed["gap_examples"]
    assert mixed["duplicates"] == 0
    assert mixed["unexpected"] == 0


@pytest.mark.xfail(strict=True, reason=OPEN_LATENESS)
def test_mixed_occurrences_start_within_seconds_of_their_time(mixed: dict[str, Any]) -> None:
    # At most one thinned pass (5 s here), the event source mapping's poll (1 s) and its
    # batching window (5 s), and the answer; today a new invocation waits for leases.
    assert mixed["lateness_s"]["p99"] <= 12


def test_mixed_cost_per_run_comes_out_of_the_same_run(mixed: dict[str, Any]) -> None:
    assert mixed["usd_per_million_runs"] is not None
    assert mixed["usd_per_million_runs"] > 0
    assert mixed["requests_by_operation"]["sqs:SendMessageBatch"] > 0


# --- faults ----------------------------------------------------------------------------------


def test_faults_no_occurrence_is_delivered_under_two_keys(faults: dict[str, Any]) -> None:
    assert faults["duplicates"] == 0
    assert faults["unexpected"] == 0


def test_faults_no_occurrence_is_lost(faults: dict[str, Any]) -> None:
    assert faults["gaps"] == 0, faults["gap_examples"]


def _timeout_s(templates: dict[str, dict[str, Any]], stack: str, prefix: str) -> int:
    resources = templates[stack]["Resources"]
    [timeout] = [
        r["Properties"].get("Timeout", 3)
        for logical_id, r in resources.items()
        if r["Type"] == "AWS::Lambda::Function" and logical_id.startswith(prefix)
    ]
    return int(timeout)


def test_faults_a_stalled_tick_is_cut_off_at_its_timeout(
    faults: dict[str, Any], templates: dict[str, dict[str, Any]]
) -> None:
    # The stall outlasts the tick's Timeout, whatever it is: Lambda stops it right there.
    timeout_s = _timeout_s(templates, "Duetime", "FunctionsTick")
    [cut] = [t for t in faults["timeouts"] if "FunctionsTick" in t["function"]]
    assert cut["duration_s"] == timeout_s
    assert cut["error"] == f"Task timed out after {timeout_s} seconds"
    assert cut["started_s"] <= faults["stall_at_s"] < cut["started_s"] + timeout_s


def test_faults_the_heartbeat_alarm_fires_within_its_window_and_clears(
    faults: dict[str, Any],
) -> None:
    alarm = _alarm(faults, "Duetime", "TickHeartbeatMissing")
    # The tick stops at 360 s; three one-minute periods later the alarm must be on.
    assert alarm["into_alarm_s"] and 360 < alarm["into_alarm_s"][0] <= 360 + 4 * 60
    # Back at 960 s: OK again within a few periods.
    assert alarm["out_of_alarm_s"] and 960 < alarm["out_of_alarm_s"][0] <= 960 + 4 * 60


def test_faults_an_always_failing_target_raises_the_dead_letter_alarm(
    faults: dict[str, Any],
) -> None:
    assert _alarm(faults, "Duetime", "DeliveryDlqNotEmpty")["into_alarm_s"]


def test_faults_a_schedule_gone_silent_raises_the_overdue_alarm(faults: dict[str, Any]) -> None:
    assert _alarm(faults, "Duetime", "SchedulesOverdue")["into_alarm_s"]


def test_faults_slow_targets_do_not_time_the_worker_out(faults: dict[str, Any]) -> None:
    worker = next(v for k, v in faults["invocations"].items() if "FunctionsWorker" in k)
    assert worker.get("timeout", 0) == 0


def test_faults_a_tick_over_its_reserved_concurrency_is_throttled(faults: dict[str, Any]) -> None:
    tick = next(v for k, v in faults["invocations"].items() if "FunctionsTick" in k)
    assert tick.get("throttled", 0) >= 1


def test_faults_a_throttled_write_is_retried_not_fatal(faults: dict[str, Any]) -> None:
    throttles = [
        f
        for f in faults["injected_faults"]
        if f["effect"] == "ProvisionedThroughputExceededException"
    ]
    assert len(throttles) == 3
    assert not any("ProvisionedThroughputExceeded" in e for e in faults["errors"])


# --- two stacks ------------------------------------------------------------------------------


def test_two_stacks_the_stopped_stacks_heartbeat_alarm_fires(two_stacks: dict[str, Any]) -> None:
    alarm = _alarm(two_stacks, "DuetimeOther", "TickHeartbeatMissing")
    # Stopped at 300 s: three missing one-minute periods later.
    assert alarm["into_alarm_s"] and alarm["into_alarm_s"][0] <= 300 + 4 * 60


def test_two_stacks_the_live_stacks_tick_alarms_stay_ok(two_stacks: dict[str, Any]) -> None:
    for name in ("TickHeartbeatMissing", "TickErrors", "DispatchLagHigh", "DeliveryDlqNotEmpty"):
        assert not _alarm(two_stacks, "Duetime", name)["into_alarm_s"], name


def test_two_stacks_the_live_stacks_alarms_all_stay_ok(two_stacks: dict[str, Any]) -> None:
    fired = [
        n for n, a in two_stacks["alarms"].items() if n.startswith("Duetime-") and a["into_alarm_s"]
    ]
    assert fired == []


def test_two_stacks_the_live_stack_keeps_delivering(two_stacks: dict[str, Any]) -> None:
    assert two_stacks["due"] > 0
    assert two_stacks["gaps"] == 0
