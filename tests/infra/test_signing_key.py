"""The signing key every webhook secret is derived from: only the API and the worker read it.

The stack's secrets table holds a generation number per schedule and nothing
that signs (tests/integration/test_secrets.py shows the items on moto); the
key that turns a generation into a secret is one Secrets Manager secret.
These tests read the synthesized template: who is granted the key, what its
resource policy refuses everyone else, and that it outlives the stack with
``duetime:retain`` as the table does.
"""

from __future__ import annotations

from typing import Any

import pytest

from adapters.secrets import signing_key_name
from tests.infra.conftest import Synthesized
from tests.infra.helpers import dumps, function_role, resources, statements

KEY_NAME = signing_key_name("duetime/Duetime/webhooks/")
HANDLERS = ("api", "tick", "worker", "watchdog")


def the_key(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    [(logical_id, secret)] = [
        (k, r)
        for k, r in resources(template, "AWS::SecretsManager::Secret").items()
        if r["Properties"].get("Name") == KEY_NAME
    ]
    return logical_id, secret


def key_readers(template: dict[str, Any]) -> set[str]:
    """The handlers whose role is granted anything on the key."""
    return {
        handler
        for handler in HANDLERS
        for s in statements(template, function_role(template, f"handlers.{handler}.handler"))
        if KEY_NAME in dumps(s["Resource"])
    }


def test_the_stack_generates_the_key_and_keeps_it_with_retain(template: dict[str, Any]) -> None:
    _, secret = the_key(template)
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["PasswordLength"] >= 64
    assert "SecretString" not in secret["Properties"]  # no value in the template
    assert secret["DeletionPolicy"] == "Retain"


def test_only_the_api_and_the_worker_are_granted_the_key(template: dict[str, Any]) -> None:
    assert key_readers(template) == {"api", "worker"}
    for handler in ("api", "worker"):
        role = function_role(template, f"handlers.{handler}.handler")
        granted = {
            action
            for s in statements(template, role)
            if KEY_NAME in dumps(s["Resource"])
            for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        }
        assert granted == {"secretsmanager:GetSecretValue"}


def test_the_keys_policy_refuses_its_value_to_every_other_principal(
    template: dict[str, Any],
) -> None:
    logical_id, _ = the_key(template)
    [policy] = [
        r["Properties"]["ResourcePolicy"]
        for r in resources(template, "AWS::SecretsManager::ResourcePolicy").values()
        if r["Properties"]["SecretId"] == {"Ref": logical_id}
    ]
    [deny] = policy["Statement"]
    assert deny["Effect"] == "Deny"
    assert deny["Principal"] == {"AWS": "*"}
    assert "secretsmanager:GetSecretValue" in deny["Action"]
    allowed = deny["Condition"]["StringNotEquals"]["aws:PrincipalArn"]
    roles = {function_role(template, f"handlers.{h}.handler") for h in ("api", "worker")}
    assert sorted(dumps(arn) for arn in allowed) == sorted(
        dumps({"Fn::GetAtt": [role, "Arn"]}) for role in roles
    )


@pytest.mark.parametrize("stack", ["DuetimeWildcard", "DuetimeSandbox"])
def test_a_stack_on_another_store_makes_no_key(synthesized: Synthesized, stack: str) -> None:
    template = synthesized.template(stack)
    names = [
        r["Properties"].get("Name", "")
        for r in resources(template, "AWS::SecretsManager::Secret").values()
    ]
    assert not [n for n in names if n.endswith("-signing-key")]
