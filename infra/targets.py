"""What the worker may call: the target ARNs listed in ``duetime:targetArns``.

Webhook targets need no AWS permission. Lambda, SQS and EventBridge targets
do, and the worker gets exactly one action per listed ARN:

- ``arn:aws:lambda:...:function:NAME[:ALIAS]``   lambda:InvokeFunction
- ``arn:aws:sqs:...:QUEUE``                     sqs:SendMessage
- ``arn:aws:events:...:event-bus/NAME``         events:PutEvents
- ``arn:aws:kms:...:key/ID`` (the key of an encrypted target queue)
                                               kms:GenerateDataKey, kms:Decrypt

The default is none. ``["*"]`` is the documented wildcard: the three target
actions on every resource, acknowledged to cdk-nag with its reason.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_iam as iam

from infra.nag import acknowledge
from infra.settings import Settings

ACTIONS: Final[dict[str, tuple[str, ...]]] = {
    "lambda": ("lambda:InvokeFunction",),
    "sqs": ("sqs:SendMessage",),
    "events": ("events:PutEvents",),
    "kms": ("kms:GenerateDataKey", "kms:Decrypt"),
}
WILDCARD_SERVICES: Final = ("lambda", "sqs", "events")


def grant_targets(role: iam.IRole, settings: Settings) -> None:
    if settings.targets_wildcard:
        actions = [a for service in WILDCARD_SERVICES for a in ACTIONS[service]]
        role.add_to_principal_policy(iam.PolicyStatement(actions=actions, resources=["*"]))
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "duetime:targetArns is '*': the deployer chose to let the worker invoke any "
            "Lambda function, send to any SQS queue and put events on any bus that "
            "schedules name as targets. List the target ARNs to narrow this.",
        )
        return
    by_service: dict[str, list[str]] = {}
    for arn in settings.target_arns:
        by_service.setdefault(arn.split(":")[2], []).append(arn)
    for service, arns in sorted(by_service.items()):
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(ACTIONS[service]), resources=arns)
        )
    for arn in settings.target_arns:
        if "*" in arn:
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::{arn}]",
                "The deployer listed this ARN pattern in duetime:targetArns: the worker "
                "may call the targets it matches and nothing else.",
            )
