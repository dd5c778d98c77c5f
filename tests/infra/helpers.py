"""Reading a synthesized CloudFormation template in tests."""

from __future__ import annotations

import json
from typing import Any


def resources(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def only(template: dict[str, Any], type_: str, **properties: Any) -> tuple[str, dict[str, Any]]:
    """The one resource of a type whose properties include the given values."""
    found = [
        (k, v)
        for k, v in resources(template, type_).items()
        if all(v.get("Properties", {}).get(p) == value for p, value in properties.items())
    ]
    assert len(found) == 1, f"expected one {type_} with {properties}, found {len(found)}"
    return found[0]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def logical_id(template: dict[str, Any], type_: str, prefix: str) -> str:
    """The logical ID of the one resource of a type whose ID starts with prefix."""
    found = [k for k in resources(template, type_) if k.startswith(prefix)]
    assert len(found) == 1, f"expected one {type_} named {prefix}*, found {found}"
    return found[0]


def function(template: dict[str, Any], handler: str) -> tuple[str, dict[str, Any]]:
    return only(template, "AWS::Lambda::Function", Handler=handler)


def function_role(template: dict[str, Any], handler: str) -> str:
    _, fn = function(template, handler)
    role = fn["Properties"]["Role"]
    return str(role["Fn::GetAtt"][0])


def statements(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """Every Allow statement of every policy attached to the role."""
    found: list[dict[str, Any]] = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"].get("Roles", []):
            found.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    for inline in template["Resources"][role]["Properties"].get("Policies", []):
        found.extend(inline["PolicyDocument"]["Statement"])
    assert all(s["Effect"] == "Allow" for s in found)
    return found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def can(template: dict[str, Any], role: str, action: str, resource: str) -> bool:
    """Whether the role is allowed ``action`` on a resource mentioning ``resource``.

    ``resource`` is matched against each resource's JSON: a logical ID, an ARN,
    or "*" for the bare wildcard resource.
    """
    for statement in statements(template, role):
        if action not in _as_list(statement["Action"]):
            continue
        for res in _as_list(statement["Resource"]):
            if res == resource or (resource != "*" and resource in dumps(res)):
                return True
    return False


def actions(template: dict[str, Any], role: str) -> set[str]:
    return {a for s in statements(template, role) for a in _as_list(s["Action"])}
