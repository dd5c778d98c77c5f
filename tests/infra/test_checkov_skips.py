"""Checkov's findings the stack accepts are marked in the template, each with its reason.

Checkov reads ``Metadata.checkov.skip`` of a resource. The tables have no customer
managed KMS key (CKV_AWS_119) and the signing key uses the aws/secretsmanager key
(CKV_AWS_149): both for the $1.00 a month a customer managed key costs, with the
sensitive values sealed by the application (docs/decisions.md).
"""

from __future__ import annotations

from typing import Any

from tests.infra.helpers import resources


def _skips(resource: dict[str, Any]) -> dict[str, str]:
    skip = resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    return {s["id"]: s["comment"] for s in skip}


def test_every_table_says_why_it_has_no_customer_managed_key(
    template: dict[str, Any],
) -> None:
    tables = resources(template, "AWS::DynamoDB::Table")
    assert len(tables) == 4
    for logical_id, table in tables.items():
        reason = _skips(table).get("CKV_AWS_119", "")
        assert "$1.00 a month" in reason and "sealed" in reason, logical_id
        assert "$1.50 idle budget" in reason, logical_id


def test_the_signing_key_says_why_it_has_no_customer_managed_key(
    template: dict[str, Any],
) -> None:
    [key] = resources(template, "AWS::SecretsManager::Secret").values()
    assert "$1.00 a month" in _skips(key).get("CKV_AWS_149", "")
