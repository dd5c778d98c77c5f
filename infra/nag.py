"""cdk-nag: the rule pack the stack is checked against, and how findings are kept.

A finding is only ever acknowledged on the construct it concerns, one rule (or
one granular finding, ``AwsSolutions-IAM5[Resource::...]``) at a time, and
always with the reason it is acceptable here.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Acknowledgment, App, CfnResource, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import Construct, IConstruct

PACK: Final = "AwsSolutions"

# Why no table has a customer managed KMS key (Checkov's CKV_AWS_119), said once.
TABLE_CMK_REASON: Final = (
    "No customer managed KMS key on the tables: a key costs $1.00 a month, which with "
    "the stack's idle compute, DynamoDB and SQS and the $0.40 signing key is over the "
    "$1.50 idle budget (docs/cost.md). The sensitive values are protected by the "
    "application instead: webhook signing secrets are derived from the signing key, "
    "never stored, and header values are sealed under it with AES-GCM; only the API "
    "and worker roles may read the key (docs/decisions.md, 'Webhook signing secrets "
    "derived from one key'). The tables stay encrypted at rest with the AWS managed key."
)
# Why the signing key uses the aws/secretsmanager key (Checkov's CKV_AWS_149).
SIGNING_KEY_CMK_REASON: Final = (
    "The signing key is encrypted with the aws/secretsmanager key: a customer managed "
    "key costs $1.00 a month, over the idle budget, and would add no reader restriction "
    "the key's resource policy does not already make (only the API and worker roles)."
)


def add_checks(app: App) -> None:
    """Make synthesis fail on any AwsSolutions finding that is not acknowledged."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Keep the finding ``rule`` (e.g. "AwsSolutions-SQS3") on ``scope``, because ``reason``."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule} needs a reason")
    if not rule.startswith(f"{PACK}-"):
        raise ValueError(f"{rule}: only {PACK} rules are acknowledged here")
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{PACK}::{rule}", reason=reason))


def skip_checkov(scope: IConstruct, check: str, reason: str) -> None:
    """Record on ``scope``'s CloudFormation resource that Checkov's ``check`` (e.g.
    "CKV_AWS_119") is accepted, and why: Checkov reads ``Metadata.checkov.skip``."""
    if not reason.strip():
        raise ValueError(f"skipping {check} needs a reason")
    resource = scope.node.default_child if isinstance(scope, Construct) else None
    if not isinstance(resource, CfnResource):
        raise ValueError(f"{scope}: no CloudFormation resource to mark for {check}")
    checkov = resource.get_metadata("checkov") or {}
    skips = [*checkov.get("skip", []), {"id": check, "comment": reason}]
    resource.add_metadata("checkov", {**checkov, "skip": skips})
