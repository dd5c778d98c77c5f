"""The signing-secret calls of the API and the worker are exactly their grants.

The stores run on moto the way each function uses them (the API creates,
reads back, rotates and deletes a schedule's secret; the worker reads it),
for a schedule made on SSM and for one made before, in Secrets Manager. Each
request is mapped to the IAM action and resource AWS checks (sim/iam.py: a
parameter's ARN is ``parameter`` and its name) and judged against the role
in the synthesized template; and every secret grant of the role is used by
some request, so none is left over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.secrets import (
    CachedSecretStore,
    SecretNotFound,
    SecretsManagerSecretStore,
    aws_secret_store,
)
from sim.iam import Check, checks, role_policy
from sim.template import Stack
from tests.infra.helpers import function_role

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


def judge(template: dict[str, Any], handler: str, recorder: Recorder) -> None:
    stack = Stack("S", template)
    policy = role_policy(stack, function_role(template, handler))
    refused = [c for c in recorder.checks if not policy.judge(c).allowed]
    assert refused == []
    granted = {
        (action, resource)
        for action, resource in policy.grants()
        if action.startswith(("ssm:", "secretsmanager:"))
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


@pytest.mark.parametrize(
    ("stack", "kind"), [("Duetime", "ssm"), ("DuetimeSandbox", "secretsmanager")]
)
def test_the_apis_secret_calls_are_its_grants(
    synthesized: Any, account: Callable[[Recorder | None], Clients], stack: str, kind: str
) -> None:
    template = synthesized.template(stack)
    prefix = f"duetime/{stack}/webhooks/"
    before = SecretsManagerSecretStore(account(None)("secretsmanager"), prefix)
    before.put("sch_made_before")  # a secret from before the move, in Secrets Manager
    recorder = Recorder()
    store = aws_secret_store(kind, prefix, account(recorder))

    api_lifecycle(store, "sch_new")
    api_lifecycle(store, "sch_made_before")

    judge(template, "handlers.api.handler", recorder)


@pytest.mark.parametrize(
    ("stack", "kind"), [("Duetime", "ssm"), ("DuetimeSandbox", "secretsmanager")]
)
def test_the_workers_secret_calls_are_its_grants(
    synthesized: Any, account: Callable[[Recorder | None], Clients], stack: str, kind: str
) -> None:
    template = synthesized.template(stack)
    prefix = f"duetime/{stack}/webhooks/"
    SecretsManagerSecretStore(account(None)("secretsmanager"), prefix).put("sch_made_before")
    aws_secret_store(kind, prefix, account(None)).put("sch_new")
    recorder = Recorder()
    store = CachedSecretStore(aws_secret_store(kind, prefix, account(recorder)))

    for schedule_id in ("sch_new", "sch_made_before", "sch_new"):
        assert store.get(schedule_id)

    judge(template, "handlers.worker.handler", recorder)
