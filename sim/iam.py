"""IAM as AWS judges a request: the action and resource it checks, and the role's verdict.

A request (service, operation, parameters) maps to one or more
(action, resource ARN) pairs, as the service authorizes it: a
``SendMessageBatch`` is ``sqs:SendMessage`` on the queue, a
``TransactWriteItems`` is each item's own action on its own table, a
``Query`` on an index is ``dynamodb:Query`` on ``table/NAME/index/INDEX``.
Every pair must be allowed by the role's policies and denied by none; a
secret's resource policy is judged too (``_secret_resource_policies``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Final

from sim.template import ACCOUNT, PARTITION, REGION, Stack, queue_arn_from_url

_DDB: Final = f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/"
_TRANSACT_ACTIONS: Final = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
# SQS batch operations are authorized as their single-message action.
_SQS_BATCH: Final = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}
# Services whose operations are authorized on "*" (no resource-level permissions).
_STAR_SERVICES: Final = {"cloudwatch": "cloudwatch", "sts": "sts", "xray": "xray"}


# The partition key attribute of every duetime table (adapters/definitions.py): what
# IAM's ``dynamodb:LeadingKeys`` condition key holds for a single-item request.
PARTITION_KEY: Final = "pk"


@dataclass(frozen=True)
class Check:
    action: str
    resource: str
    # The partition key values of the items a DynamoDB request touches (its
    # ``dynamodb:LeadingKeys``); empty when the request names none (a query's
    # key is in its expression and is not read here).
    leading_keys: tuple[str, ...] = ()


def checks(service: str, operation: str, params: Mapping[str, Any]) -> list[Check]:
    """The (action, resource) pairs AWS authorizes for one request."""
    if service == "dynamodb":
        return _dynamodb(operation, params)
    if service == "sqs":
        action = "sqs:" + _SQS_BATCH.get(operation, operation)
        if "QueueUrl" in params:
            return [Check(action, queue_arn_from_url(params["QueueUrl"]))]
        if "QueueName" in params:
            return [Check(action, f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:{params['QueueName']}")]
        return [Check(action, "*")]
    if service == "secretsmanager":
        return [Check("secretsmanager:" + operation, secret_arn(params))]
    if service == "ssm":
        return _ssm(operation, params)
    if service == "lambda":
        action = "lambda:InvokeFunction" if operation in ("Invoke", "InvokeAsync") else ""
        name = str(params.get("FunctionName", "*"))
        arn = (
            name
            if name.startswith("arn:")
            else (f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{name}")
        )
        return [Check(action or "lambda:" + operation, arn)]
    if service == "sns" and "TopicArn" in params:
        return [Check("sns:" + operation, str(params["TopicArn"]))]
    if service == "events" and operation == "PutEvents":
        found = []
        for entry in params.get("Entries", []):
            bus = str(entry.get("EventBusName") or "default")
            arn = (
                bus
                if bus.startswith("arn:")
                else (f"arn:{PARTITION}:events:{REGION}:{ACCOUNT}:event-bus/{bus}")
            )
            found.append(Check("events:PutEvents", arn))
        return found or [Check("events:PutEvents", "*")]
    prefix = _STAR_SERVICES.get(service, service)
    return [Check(f"{prefix}:{operation}", "*")]


def secret_arn(params: Mapping[str, Any]) -> str:
    """A secret's ARN: its name plus the six-character suffix Secrets Manager adds."""
    name = str(params.get("SecretId") or params.get("Name") or "*")
    if name.startswith("arn:"):
        return name
    return f"arn:{PARTITION}:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}-AbCdEf"


def parameter_arn(name: str) -> str:
    """A parameter's ARN: ``parameter`` and its name, which begins with ``/`` when it
    is in a path (``/duetime/x`` is ``parameter/duetime/x``, ``x`` is ``parameter/x``)."""
    if name.startswith("arn:"):
        return name
    return f"arn:{PARTITION}:ssm:{REGION}:{ACCOUNT}:parameter/{name.lstrip('/')}"


def _ssm(operation: str, params: Mapping[str, Any]) -> list[Check]:
    # GetParameters and DeleteParameters are authorized per name; a path read
    # on the path itself. The SecureString decryption is SSM's own call to KMS
    # (the aws/ssm key's policy allows the account's principals through SSM):
    # nothing the role is judged on.
    action = "ssm:" + operation
    if "Names" in params:
        return [Check(action, parameter_arn(str(n))) for n in params["Names"]]
    if "Name" in params:
        return [Check(action, parameter_arn(str(params["Name"])))]
    if "Path" in params:
        return [Check(action, parameter_arn(str(params["Path"])))]
    return [Check(action, "*")]


def _leading_keys(params: Mapping[str, Any]) -> tuple[str, ...]:
    item = params.get("Item") or params.get("Key") or {}
    value = item.get(PARTITION_KEY, {})
    return (str(value["S"]),) if isinstance(value, Mapping) and "S" in value else ()


def _dynamodb(operation: str, params: Mapping[str, Any]) -> list[Check]:
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found = []
        for entry in params.get("TransactItems", []):
            [(kind, item)] = entry.items()
            found.append(
                Check(
                    "dynamodb:" + _TRANSACT_ACTIONS[kind],
                    _DDB + item["TableName"],
                    _leading_keys(item),
                )
            )
        return found
    if operation in ("BatchWriteItem", "BatchGetItem"):
        return [Check("dynamodb:" + operation, _DDB + t) for t in params.get("RequestItems", {})]
    table = params.get("TableName")
    if table is None:
        return [Check("dynamodb:" + operation, "*")]
    resource = _DDB + str(table)
    if params.get("IndexName"):
        resource += "/index/" + str(params["IndexName"])
    return [Check("dynamodb:" + operation, resource, _leading_keys(params))]


# --- policies --------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _pattern(text: str, ignore_case: bool) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in text)
    return re.compile(f"^{body}$", re.IGNORECASE if ignore_case else 0)


def matches(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    return _pattern(pattern, ignore_case).match(value) is not None


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


@dataclass(frozen=True)
class Statement:
    effect: str  # "Allow" | "Deny"
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    not_actions: tuple[str, ...] = ()
    not_resources: tuple[str, ...] = ()
    condition: Mapping[str, Any] | None = None
    source: str = ""  # the policy's logical id

    def applies(self, check: Check) -> tuple[bool, str, str] | None:
        """(matched, action pattern, resource pattern) if this statement covers the check."""
        if self.actions:
            action = next(
                (a for a in self.actions if matches(a, check.action, ignore_case=True)), None
            )
        else:
            excluded = any(matches(a, check.action, ignore_case=True) for a in self.not_actions)
            action = None if excluded else "NotAction:" + ",".join(self.not_actions)
        if action is None:
            return None
        if self.resources:
            resource = next((r for r in self.resources if matches(r, check.resource)), None)
        else:
            excluded = any(matches(r, check.resource) for r in self.not_resources)
            resource = None if excluded else "NotResource:" + ",".join(self.not_resources)
        if resource is None:
            return None
        return True, action, resource


_LIKE: Final = ("ForAllValues:StringLike", "StringLike")


_PRINCIPAL_ARN: Final = "aws:PrincipalArn"


def _condition_met(
    condition: Mapping[str, Any], check: Check, principal_arn: str = ""
) -> bool | None:
    """Whether the condition holds for the request; None when it is not modelled.

    Modelled: ``dynamodb:LeadingKeys`` under ``ForAllValues:StringLike`` (or
    ``StringLike``), on a request whose items' partition keys are known: every
    key must match one of the patterns (``*`` and ``?`` wildcards, case-sensitive);
    ``aws:PrincipalArn`` under ``StringEquals`` or ``StringNotEquals``: the
    calling role's ARN equals one of the values (or none of them).
    """
    if len(condition) != 1:
        return None
    [(operator, tests)] = condition.items()
    if operator in ("StringEquals", "StringNotEquals") and set(tests) == {_PRINCIPAL_ARN}:
        if not principal_arn:
            return None
        listed = principal_arn in _as_list(tests[_PRINCIPAL_ARN])
        return listed if operator == "StringEquals" else not listed
    if operator not in _LIKE or set(tests) != {"dynamodb:LeadingKeys"}:
        return None
    if not check.leading_keys:
        return None
    patterns = _as_list(tests["dynamodb:LeadingKeys"])
    return all(any(matches(p, key) for p in patterns) for key in check.leading_keys)


@dataclass
class Verdict:
    allowed: bool
    reason: str
    used: list[tuple[str, str]] = field(default_factory=list)  # (action, resource) patterns


@dataclass
class RolePolicy:
    """Every statement that applies to one role: its inline and attached policies."""

    role: str
    statements: list[Statement]
    arn: str = ""  # the role's ARN, what ``aws:PrincipalArn`` is compared with
    unknown: list[str] = field(default_factory=list)  # what could not be read (managed policies)
    unknown_conditions: list[str] = field(default_factory=list)

    def judge(self, check: Check) -> Verdict:
        allow: list[tuple[str, str]] = []
        for statement in self.statements:
            hit = statement.applies(check)
            if hit is None:
                continue
            if statement.condition:
                met = _condition_met(statement.condition, check, self.arn)
                if met is None:
                    # A condition not modelled: the statement does not apply.
                    self.unknown_conditions.append(
                        f"{statement.source}: condition {sorted(statement.condition)} "
                        f"on {check.action}"
                    )
                    continue
                if not met:
                    continue
            if statement.effect == "Deny":
                return Verdict(False, f"explicitly denied by {statement.source}")
            allow.append((hit[1], hit[2]))
        if allow:
            return Verdict(True, "allowed", allow)
        return Verdict(False, "no statement allows it (implicit deny)")

    def grants(self) -> list[tuple[str, str]]:
        """Every (action pattern, resource pattern) pair an Allow statement gives."""
        pairs = []
        for s in self.statements:
            if s.effect != "Allow":
                continue
            for action in s.actions or ("NotAction:" + ",".join(s.not_actions),):
                for resource in s.resources or ("NotResource:" + ",".join(s.not_resources),):
                    pairs.append((action, resource))
        return pairs


def role_policy(stack: Stack, role_id: str) -> RolePolicy:
    """The statements of a role from the template: inline, AWS::IAM::Policy, managed."""
    statements: list[Statement] = []
    unknown: list[str] = []
    role_props = stack.props(role_id)
    for policy in role_props.get("Policies", []):
        statements += _statements(
            stack, policy["PolicyDocument"], f"{role_id}/{policy['PolicyName']}"
        )
    for logical_id, resource in stack.of_type("AWS::IAM::Policy").items():
        roles = [
            r.get("Ref") for r in resource["Properties"].get("Roles", []) if isinstance(r, dict)
        ]
        if role_id in roles:
            statements += _statements(stack, resource["Properties"]["PolicyDocument"], logical_id)
    for logical_id, resource in stack.of_type("AWS::IAM::ManagedPolicy").items():
        roles = [
            r.get("Ref") for r in resource["Properties"].get("Roles", []) if isinstance(r, dict)
        ]
        if role_id in roles:
            statements += _statements(stack, resource["Properties"]["PolicyDocument"], logical_id)
    for arn in role_props.get("ManagedPolicyArns", []):
        if isinstance(arn, dict) and "Ref" in arn and arn["Ref"] in stack.resources:
            ref = arn["Ref"]
            statements += _statements(stack, stack.props(ref)["PolicyDocument"], ref)
        else:
            unknown.append(str(stack.resolve(arn)))
    statements += _secret_resource_policies(stack, unknown)
    return RolePolicy(stack.names[role_id], statements, stack.arn(role_id), unknown)


def _secret_resource_policies(stack: Stack, unknown: list[str]) -> list[Statement]:
    """The statements of the secrets' resource policies that name every principal.

    A secret's resource policy says ``"Resource": "*"``, meaning the secret
    itself: here that is the secret's name and Secrets Manager's six-character
    suffix. In one account, an Allow in either the role's or the secret's policy
    allows, and an explicit Deny in either denies. A statement naming some
    principals is not modelled (it is listed as unknown).
    """
    found: list[Statement] = []
    for logical_id, resource in stack.of_type("AWS::SecretsManager::ResourcePolicy").items():
        props = resource["Properties"]
        secret = props["SecretId"].get("Ref") if isinstance(props["SecretId"], dict) else None
        if secret not in stack.resources:
            unknown.append(f"{logical_id}: the secret {props['SecretId']!r}")
            continue
        name = stack.names[secret]
        arn = f"arn:{PARTITION}:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}-??????"
        for raw in _as_list(props["ResourcePolicy"].get("Statement", [])):
            principal = stack.resolve(raw.get("Principal"))
            if principal not in ("*", {"AWS": "*"}):
                unknown.append(f"{logical_id}: a statement for {principal!r}")
                continue
            for s in _statements(stack, {"Statement": [raw]}, logical_id):
                found.append(
                    replace(s, resources=tuple(arn if r == "*" else r for r in s.resources))
                )
    return found


def _statements(stack: Stack, document: Mapping[str, Any], source: str) -> list[Statement]:
    found = []
    for raw in _as_list(document.get("Statement", [])):
        s = stack.resolve(raw)
        found.append(
            Statement(
                effect=s.get("Effect", "Allow"),
                actions=tuple(_as_list(s["Action"])) if "Action" in s else (),
                resources=tuple(_as_list(s["Resource"])) if "Resource" in s else (),
                not_actions=tuple(_as_list(s.get("NotAction", []))),
                not_resources=tuple(_as_list(s.get("NotResource", []))),
                condition=s.get("Condition"),
                source=source,
            )
        )
    return found


def flatten(values: Iterable[Iterable[Check]]) -> list[Check]:
    return [c for group in values for c in group]
