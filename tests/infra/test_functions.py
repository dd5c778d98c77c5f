"""The four functions: one helper's shape, each with exactly its environment."""

from __future__ import annotations

import re
from typing import Any

import pytest

from adapters.definitions import (
    ENV_SECRETS_TABLE,
    FUNCTION_ENV,
    LEASES,
    METRICS_NAMESPACE,
    OCCURRENCES,
    SCHEDULES,
)
from tests.infra.conftest import Synthesized
from tests.infra.helpers import function, logical_id, resources

HANDLERS = {
    "api": "handlers.api.handler",
    "tick": "handlers.tick.handler",
    "worker": "handlers.worker.handler",
    "watchdog": "handlers.watchdog.handler",
}
POWERTOOLS_ENV = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "LOG_LEVEL"}


def test_there_is_one_function_per_handler(template: dict[str, Any]) -> None:
    handlers = sorted(
        f["Properties"]["Handler"] for f in resources(template, "AWS::Lambda::Function").values()
    )
    assert handlers == sorted(HANDLERS.values())
    assert set(HANDLERS) == set(FUNCTION_ENV)


@pytest.mark.parametrize("name", HANDLERS)
def test_functions_run_on_arm64_with_the_newest_python_cdk_knows(
    template: dict[str, Any], name: str
) -> None:
    from aws_cdk import aws_lambda

    newest = max(
        (
            getattr(aws_lambda.Runtime, n)
            for n in dir(aws_lambda.Runtime)
            if n.startswith("PYTHON_")
        ),
        key=lambda r: tuple(int(p) for p in re.findall(r"\d+", r.name)),
    )
    _, fn = function(template, HANDLERS[name])
    assert fn["Properties"]["Architectures"] == ["arm64"]
    assert fn["Properties"]["Runtime"] == newest.name


@pytest.mark.parametrize("name", HANDLERS)
def test_each_function_gets_exactly_its_env_keys(template: dict[str, Any], name: str) -> None:
    _, fn = function(template, HANDLERS[name])
    env = fn["Properties"]["Environment"]["Variables"]
    assert set(env) == set(FUNCTION_ENV[name]) | POWERTOOLS_ENV
    assert env["POWERTOOLS_SERVICE_NAME"] == "Duetime"  # the stack's name
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE
    assert env["LOG_LEVEL"] == "INFO"


@pytest.mark.parametrize("name", HANDLERS)
def test_table_env_vars_name_the_right_tables(template: dict[str, Any], name: str) -> None:
    _, fn = function(template, HANDLERS[name])
    env = fn["Properties"]["Environment"]["Variables"]
    for definition in (SCHEDULES, OCCURRENCES, LEASES):
        if definition.env_var in env:
            table_id = logical_id(
                template, "AWS::DynamoDB::Table", f"Tables{definition.logical_id}"
            )
            assert env[definition.env_var] == {"Ref": table_id}


def test_only_the_api_and_the_worker_are_told_the_secrets_table(template: dict[str, Any]) -> None:
    table_id = logical_id(template, "AWS::DynamoDB::Table", "SecretsWebhookSecrets")
    for name in ("api", "worker"):
        _, fn = function(template, HANDLERS[name])
        assert fn["Properties"]["Environment"]["Variables"][ENV_SECRETS_TABLE] == {"Ref": table_id}
    for name in ("tick", "watchdog"):
        _, fn = function(template, HANDLERS[name])
        assert ENV_SECRETS_TABLE not in fn["Properties"]["Environment"]["Variables"]


@pytest.mark.parametrize("stack", ["DuetimeWildcard", "DuetimeSandbox"])
def test_without_the_dynamodb_store_no_function_is_told_a_secrets_table(
    synthesized: Synthesized, stack: str
) -> None:
    # The keys are otherwise each function's own (ssm and secretsmanager).
    t = synthesized.template(stack)
    for name, handler in HANDLERS.items():
        _, fn = function(t, handler)
        env = set(fn["Properties"]["Environment"]["Variables"])
        assert ENV_SECRETS_TABLE not in env
        assert env - POWERTOOLS_ENV <= set(FUNCTION_ENV[name])


def test_all_functions_share_one_code_asset(template: dict[str, Any]) -> None:
    keys = {
        str(f["Properties"]["Code"]["S3Key"])
        for f in resources(template, "AWS::Lambda::Function").values()
    }
    assert len(keys) == 1


def test_the_tick_has_reserved_concurrency_and_nothing_else_does(template: dict[str, Any]) -> None:
    for name, handler in HANDLERS.items():
        _, fn = function(template, handler)
        reserved = fn["Properties"].get("ReservedConcurrentExecutions")
        assert (reserved is not None) == (name == "tick"), name
    _, tick = function(template, HANDLERS["tick"])
    assert tick["Properties"]["ReservedConcurrentExecutions"] >= 1


def test_reserved_concurrency_can_be_turned_off_for_small_accounts(
    synthesized: Synthesized,
) -> None:
    _, tick = function(synthesized.template("DuetimeSandbox"), HANDLERS["tick"])
    assert "ReservedConcurrentExecutions" not in tick["Properties"]


def test_the_tick_pass_ends_before_the_next_minute_and_the_function_outlives_it(
    template: dict[str, Any],
) -> None:
    _, tick = function(template, HANDLERS["tick"])
    budget = int(tick["Properties"]["Environment"]["Variables"]["DUETIME_TICK_BUDGET_S"])
    assert budget < 60
    assert tick["Properties"]["Timeout"] > budget


def test_the_tick_gets_the_memory_its_setting_names(synthesized: Synthesized) -> None:
    # 512 MB unless told; a stack planning large bursts gives it a whole vCPU (1769 MB).
    _, default = function(synthesized.template("Duetime"), HANDLERS["tick"])
    _, sandbox = function(synthesized.template("DuetimeSandbox"), HANDLERS["tick"])
    assert default["Properties"]["MemorySize"] == 512
    assert sandbox["Properties"]["MemorySize"] == 1769
    _, worker = function(synthesized.template("DuetimeSandbox"), HANDLERS["worker"])
    assert worker["Properties"]["MemorySize"] == 448  # the others keep theirs


def test_api_timeout_fits_api_gateway_integration_timeout(template: dict[str, Any]) -> None:
    _, api = function(template, HANDLERS["api"])
    assert api["Properties"]["Timeout"] <= 29


def test_scheduled_functions_are_not_retried_by_lambda(template: dict[str, Any]) -> None:
    # The next scheduled pass supersedes a failed one; retries would overlap it.
    configs = resources(template, "AWS::Lambda::EventInvokeConfig").values()
    retried = {
        c["Properties"]["FunctionName"]["Ref"]: c["Properties"]["MaximumRetryAttempts"]
        for c in configs
    }
    for name in ("tick", "watchdog"):
        fn_id, _ = function(template, HANDLERS[name])
        assert retried[fn_id] == 0


@pytest.mark.parametrize("name", HANDLERS)
def test_each_function_logs_to_its_own_log_group_with_retention(
    template: dict[str, Any], name: str
) -> None:
    _, fn = function(template, HANDLERS[name])
    group_id = fn["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    group = template["Resources"][group_id]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] == 30


def test_the_worker_outlives_its_longest_target_call_and_the_time_to_record_it(
    template: dict[str, Any],
) -> None:
    # A batch's records run at once; the slowest allowed call (a Lambda
    # RequestResponse target) plus the margin the handler keeps for
    # recording outcomes and answering the partial batch response must fit
    # in the function's timeout, so a batch never times out as a whole.
    from adapters.targets.aws import LAMBDA_TARGET_READ_TIMEOUT_S
    from handlers.worker import INVOCATION_MARGIN_S

    _, worker = function(template, HANDLERS["worker"])
    timeout = worker["Properties"]["Timeout"]
    assert timeout >= LAMBDA_TARGET_READ_TIMEOUT_S + INVOCATION_MARGIN_S
    assert timeout <= 150  # a crashed batch holds its messages this plus 30 s (visibility)


@pytest.mark.parametrize("name", ["api", "tick"])
def test_the_tick_and_the_api_plan_with_the_same_lookahead(
    template: dict[str, Any], name: str
) -> None:
    from adapters.definitions import ENV_LOOKAHEAD_S, ENV_PLAN_EARLY

    _, fn = function(template, HANDLERS[name])
    env = fn["Properties"]["Environment"]["Variables"]
    assert env[ENV_LOOKAHEAD_S] == "90"
    # Only the tick plans early (the API plans one schedule, up to the lookahead).
    assert env.get(ENV_PLAN_EARLY) == ("true" if name == "tick" else None)


def test_a_drain_lambda_could_not_start_within_a_minute_is_dropped_not_retried(
    template: dict[str, Any],
) -> None:
    # A drain (service/planning/surge.py) is worth something only at its instant; what it would
    # have received, the queue trigger delivers.
    worker_fn, _ = function(template, HANDLERS["worker"])
    [config] = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::EventInvokeConfig").values()
        if r["Properties"]["FunctionName"] == {"Ref": worker_fn}
    ]
    assert config["MaximumEventAgeInSeconds"] == 60
    assert config["MaximumRetryAttempts"] == 0
