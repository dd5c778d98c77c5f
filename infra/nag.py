"""cdk-nag: the rule pack the stack is checked against, and how findings are kept.

A finding is only ever acknowledged on the construct it concerns, one rule (or
one granular finding, ``AwsSolutions-IAM5[Resource::...]``) at a time, and
always with the reason it is acceptable here.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Acknowledgment, App, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

PACK: Final = "AwsSolutions"


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
