"""The signing-secret calls of the API and the worker are exactly their grants.

The stores run on moto the way each function uses them (the API creates,
reads back, rotates and deletes a schedule's secret; the worker reads it),
for a schedule made with the store chosen and for ones made before, in SSM
and in Secrets Manager. Each request is mapped to the IAM action and resource
AWS checks (sim/iam.py: a parameter's ARN is ``parameter`` and its name, an
item's the table's) and judged against the role in the synthesized template;
and every secret grant of the role is used by some request, so none is left
over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.definitions import WEBHOOK_SECRETS, create_table
from adapters.secrets import (
    CachedSecretStore,
    SecretNotFound,
    SecretsManagerSecretStore,
    SsmSecretStore,
    aws_secret_store,
    create_signing_key,
    ssm_path,
)
from sim.iam import Check, checks, role_policy
from sim.template import Stack
from tests.infra.helpers import function_role, resources

# The stacks of tests/infra/conftest.py and the store each chose.
STORES = [("Duetime", "dynamodb"), ("DuetimeWildcard", "ssm"), ("DuetimeSandbox", "secretsmanager")]

Clients = Callable[[str], Any]


class Recorder:
    def __init__(self) -> None:
        self.checks: list[Check] = []

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.checks += checks(model.service_model.service_name, model.name, params)


@pytest.fixture
def account() -> Iterator[Callable[[Recorder | None], Clients]]:
    with mock_aws():

        def clients(recorder: Recorder | None) -> Clients:
            def make(service: str) -> Any:
                client = boto3.client(service, region_name="eu-west-1")
                if recorder is not None:
                    client.meta.events.register("before-parameter-build", recorder)
                return client

            return make

        yield clients


def secrets_table(name: str, template: dict[str, Any]) -> str:
    """The physical name of the stack's secrets table, or "" when it has none."""
    stack = Stack(name, template)
    found = [k for k in resources(template, "AWS::DynamoDB::Table") if k.startswith("Secrets")]
    return stack.names[found[0]] if found else ""


def judge(name: str, template: dict[str, Any], handler: str, recorder: Recorder) -> None:
    stack = Stack(name, template)
    policy = role_policy(stack, function_role(template, handler))
    refused = [c for c in recorder.checks if not policy.judge(c).allowed]
    assert refused == []
    table = secrets_table(name, template)
    granted = {
        (action, resource)
        for action, resource in policy.grants()
        if action.startswith(("ssm:", "secretsmanager:"))
        or (table and resource.endswith(f":table/{table}"))
    }
    used = {
        (action, resource) for c in recorder.checks for action, resource in policy.judge(c).used
    }
    assert granted == used, f"granted but never called: {sorted(granted - used)}"


def api_lifecycle(store: Any, schedule_id: str) -> None:
    """What the API does with one schedule's secret over its life."""
    try:
        store.get(schedule_id)  # a retried create or an edit looks first
    except SecretNotFound:
        store.put(schedule_id)
    store.put(schedule_id)  # a rotation
    store.delete(schedule_id)  # the schedule deleted


def made_before(clients: Clients, kind: str, prefix: str) -> None:
    """Secrets from before the move: in Secrets Manager, and (before the table) in SSM."""
    SecretsManagerSecretStore(clients("secretsmanager"), prefix).put("sch_in_secrets_manager")
    if kind == "dynamodb":
        SsmSecretStore(clients("ssm"), ssm_path(prefix)).put("sch_in_ssm")


def store_of(kind: str, prefix: str, clients: Clients, table: str) -> Any:
    if table:
        create_table(clients("dynamodb"), WEBHOOK_SECRETS, table)
        create_signing_key(clients("secretsmanager"), prefix)  # the stack makes its own
    return aws_secret_store(kind, prefix, clients, table=table)


OLD = ("sch_in_secrets_manager", "sch_in_ssm")


@pytest.mark.parametrize(("stack", "kind"), STORES)
def test_the_apis_secret_calls_are_its_grants(
    synthesized: Any, account: Callable[[Recorder | None], Clients], stack: str, kind: str
) -> None:
    template = synthesized.template(stack)
    prefix = f"duetime/{stack}/webhooks/"
    table = secrets_table(stack, template)
    assert bool(table) is (kind == "dynamodb")
    store_of(kind, prefix, account(None), table)
    made_before(account(None), kind, prefix)
    recorder = Recorder()
    store = aws_secret_store(kind, prefix, account(recorder), table=table)

    api_lifecycle(store, "sch_new")
    for schedule_id in OLD:
        api_lifecycle(store, schedule_id)

    judge(stack, template, "handlers.api.handler", recorder)


@pytest.mark.parametrize(("stack", "kind"), STORES)
def test_the_workers_secret_calls_are_its_grants(
    synthesized: Any, account: Callable[[Recorder | None], Clients], stack: str, kind: str
) -> None:
    template = synthesized.template(stack)
    prefix = f"duetime/{stack}/webhooks/"
    table = secrets_table(stack, template)
    store_of(kind, prefix, account(None), table).put("sch_new")
    made_before(account(None), kind, prefix)
    recorder = Recorder()
    store = CachedSecretStore(aws_secret_store(kind, prefix, account(recorder), table=table))

    for schedule_id in ("sch_new", *OLD, "sch_new"):
        if schedule_id == "sch_in_ssm" and kind != "dynamodb":
            continue  # only the table's store has secrets from before in SSM
        assert store.get(schedule_id)

    judge(stack, template, "handlers.worker.handler", recorder)
