"""The synthesized CloudFormation template, read the way CloudFormation would.

Physical names are made up the way CloudFormation makes them (stack name,
logical id, a stable suffix), so two stacks in one account never collide, and
every intrinsic the stack uses (Ref, Fn::GetAtt, Fn::Join, Fn::Sub,
Fn::Select, Fn::Split) resolves to the names, URLs and ARNs of the resources
the simulator creates.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

ACCOUNT: Final = "123456789012"  # moto's default account
REGION: Final = "us-east-1"
PARTITION: Final = "aws"


class TemplateError(ValueError):
    """The template holds something the simulator cannot read; the message names it."""


def physical_name(stack: str, logical_id: str, limit: int = 80) -> str:
    suffix = hashlib.sha256(f"{stack}/{logical_id}".encode()).hexdigest()[:12].upper()
    return f"{stack}-{logical_id}"[: limit - 13] + "-" + suffix


@dataclass
class Stack:
    """One stack's resources, with what CloudFormation would have named them."""

    name: str
    template: dict[str, Any]
    names: dict[str, str] = field(default_factory=dict)  # logical id -> physical name

    def __post_init__(self) -> None:
        for logical_id, resource in self.resources.items():
            kind = resource["Type"]
            props = resource.get("Properties", {})
            if kind == "AWS::DynamoDB::Table":
                self.names[logical_id] = props.get("TableName") or physical_name(
                    self.name, logical_id
                )
            elif kind == "AWS::SQS::Queue":
                self.names[logical_id] = props.get("QueueName") or physical_name(
                    self.name, logical_id
                )
            elif kind == "AWS::Lambda::Function":
                self.names[logical_id] = props.get("FunctionName") or physical_name(
                    self.name, logical_id, 64
                )
            elif kind == "AWS::IAM::Role":
                self.names[logical_id] = props.get("RoleName") or physical_name(
                    self.name, logical_id, 64
                )
            elif kind == "AWS::SecretsManager::Secret":
                self.names[logical_id] = props.get("Name") or physical_name(self.name, logical_id)
            elif kind == "AWS::CloudWatch::Alarm":
                self.names[logical_id] = props.get("AlarmName") or physical_name(
                    self.name, logical_id
                )
            else:
                self.names[logical_id] = physical_name(self.name, logical_id)

    @property
    def resources(self) -> dict[str, Any]:
        resources: dict[str, Any] = self.template.get("Resources", {})
        return resources

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.resources.items() if r["Type"] == kind}

    def props(self, logical_id: str) -> dict[str, Any]:
        props: dict[str, Any] = self.resources[logical_id].get("Properties", {})
        return props

    # --- what each resource is called ----------------------------------------------------------

    def arn(self, logical_id: str) -> str:
        kind = self.resources[logical_id]["Type"]
        name = self.names[logical_id]
        base = f"arn:{PARTITION}"
        if kind == "AWS::DynamoDB::Table":
            return f"{base}:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        if kind == "AWS::SQS::Queue":
            return f"{base}:sqs:{REGION}:{ACCOUNT}:{name}"
        if kind == "AWS::Lambda::Function":
            return f"{base}:lambda:{REGION}:{ACCOUNT}:function:{name}"
        if kind == "AWS::IAM::Role":
            return f"{base}:iam::{ACCOUNT}:role/{name}"
        if kind == "AWS::Logs::LogGroup":
            group = self.props(logical_id).get("LogGroupName")
            group = self.resolve(group) if group is not None else name
            return f"{base}:logs:{REGION}:{ACCOUNT}:log-group:{group}:*"
        if kind == "AWS::SNS::Topic":
            return f"{base}:sns:{REGION}:{ACCOUNT}:{name}"
        if kind == "AWS::SecretsManager::Secret":
            return f"{base}:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}-SIMXYZ"
        return f"{base}:cloudformation:{REGION}:{ACCOUNT}:resource/{self.name}/{logical_id}"

    def ref(self, logical_id: str) -> str:
        """What ``Ref`` answers: a queue's URL, an ARN for topics and secrets, else the name."""
        kind = self.resources[logical_id]["Type"]
        if kind == "AWS::SQS::Queue":
            return queue_url(self.names[logical_id])
        if kind in ("AWS::SNS::Topic", "AWS::SecretsManager::Secret"):
            return self.arn(logical_id)
        return self.names[logical_id]

    def get_att(self, logical_id: str, attribute: str) -> str:
        if logical_id not in self.resources:
            raise TemplateError(f"Fn::GetAtt names {logical_id}, which is not in the template")
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute == "QueueName":
            return self.names[logical_id]
        if attribute == "QueueUrl":
            return queue_url(self.names[logical_id])
        raise TemplateError(f"Fn::GetAtt {logical_id}.{attribute} is not modelled")

    def resolve(self, value: Any) -> Any:
        """Every intrinsic in ``value`` replaced by what CloudFormation would put there."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, Mapping):
            return value
        if len(value) != 1:
            return {k: self.resolve(v) for k, v in value.items()}
        [(key, arg)] = value.items()
        if key == "Ref":
            return self._pseudo(arg) if arg.startswith("AWS::") else self.ref(arg)
        if key == "Fn::GetAtt":
            logical_id, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
            return self.get_att(logical_id, attribute)
        if key == "Fn::Join":
            separator, parts = arg
            return separator.join(str(self.resolve(p)) for p in parts)
        if key == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else arg
            return self._sub(text, {k: self.resolve(v) for k, v in variables.items()})
        if key == "Fn::Select":
            index, items = arg
            return self.resolve(items)[int(index)]
        if key == "Fn::Split":
            separator, text = arg
            return str(self.resolve(text)).split(separator)
        if key.startswith("Fn::"):
            raise TemplateError(f"{key} is not modelled")
        return {key: self.resolve(arg)}

    def _pseudo(self, name: str) -> str:
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": PARTITION,
            "AWS::StackName": self.name,
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name not in pseudo:
            raise TemplateError(f"Ref {name} is not modelled")
        return pseudo[name]

    def _sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(variables[name])
            if name.startswith("AWS::"):
                return self._pseudo(name)
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return self.ref(name)

        return re.sub(r"\$\{([^}!]+)\}", one, text)


def queue_url(name: str) -> str:
    return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"


def queue_arn_from_url(url: str) -> str:
    account, name = url.rstrip("/").split("/")[-2:]
    return f"arn:{PARTITION}:sqs:{REGION}:{account}:{name}"
