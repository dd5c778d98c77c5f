"""Requests map to the action and resource AWS authorizes, and roles judge them as AWS does."""

from __future__ import annotations

from typing import Any

import pytest

from sim.iam import Check, checks, role_policy
from sim.template import Stack

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/"
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/work"


def _stack(*statements: dict[str, Any]) -> Stack:
    return Stack(
        "S",
        {
            "Resources": {
                "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
                "Policy": {
                    "Type": "AWS::IAM::Policy",
                    "Properties": {
                        "PolicyDocument": {"Statement": list(statements)},
                        "Roles": [{"Ref": "Role"}],
                    },
                },
                "Unrelated": {
                    "Type": "AWS::IAM::Policy",
                    "Properties": {
                        "PolicyDocument": {
                            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]
                        },
                        "Roles": [{"Ref": "Other"}],
                    },
                },
            }
        },
    )


def test_send_message_batch_is_send_message_on_the_queue_arn() -> None:
    assert checks("sqs", "SendMessageBatch", {"QueueUrl": QUEUE_URL}) == [
        Check("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:work")
    ]


def test_a_transaction_is_each_items_own_action_on_its_own_table() -> None:
    params = {
        "TransactItems": [
            {"Put": {"TableName": "a", "Item": {}}},
            {"Update": {"TableName": "b", "Key": {}}},
            {"Delete": {"TableName": "a", "Key": {}}},
            {"ConditionCheck": {"TableName": "c", "Key": {}}},
        ]
    }
    assert checks("dynamodb", "TransactWriteItems", params) == [
        Check("dynamodb:PutItem", TABLE + "a"),
        Check("dynamodb:UpdateItem", TABLE + "b"),
        Check("dynamodb:DeleteItem", TABLE + "a"),
        Check("dynamodb:ConditionCheckItem", TABLE + "c"),
    ]


def test_a_query_on_an_index_is_authorized_on_the_index_arn() -> None:
    assert checks("dynamodb", "Query", {"TableName": "t", "IndexName": "due"}) == [
        Check("dynamodb:Query", TABLE + "t/index/due")
    ]


def test_batch_write_is_authorized_on_every_table_it_writes() -> None:
    params = {"RequestItems": {"a": [], "b": []}}
    assert checks("dynamodb", "BatchWriteItem", params) == [
        Check("dynamodb:BatchWriteItem", TABLE + "a"),
        Check("dynamodb:BatchWriteItem", TABLE + "b"),
    ]


def test_metrics_are_authorized_on_any_resource() -> None:
    assert checks("cloudwatch", "PutMetricData", {}) == [Check("cloudwatch:PutMetricData", "*")]


def test_a_secret_name_matches_a_prefix_grant_with_the_suffix_secrets_manager_adds() -> None:
    policy = role_policy(
        _stack(
            {
                "Effect": "Allow",
                "Action": "secretsmanager:GetSecretValue",
                "Resource": "arn:aws:secretsmanager:us-east-1:123456789012:secret:app/hooks/*",
            }
        ),
        "Role",
    )
    [check] = checks("secretsmanager", "GetSecretValue", {"SecretId": "app/hooks/sch_1"})
    assert policy.judge(check).allowed
    [other] = checks("secretsmanager", "GetSecretValue", {"SecretId": "other/sch_1"})
    assert not policy.judge(other).allowed


PARAMETER = "arn:aws:ssm:us-east-1:123456789012:parameter"


def test_a_parameter_in_a_path_is_authorized_on_parameter_and_its_name() -> None:
    # A name that begins with "/" is not "parameter//...": the ARN is "parameter"
    # followed by the name; a name without a path gets the "/" added.
    assert checks("ssm", "GetParameter", {"Name": "/app/hooks/sch_1", "WithDecryption": True}) == [
        Check("ssm:GetParameter", PARAMETER + "/app/hooks/sch_1")
    ]
    assert checks("ssm", "PutParameter", {"Name": "flat"}) == [
        Check("ssm:PutParameter", PARAMETER + "/flat")
    ]
    assert checks("ssm", "GetParameters", {"Names": ["/a/x", "/b/y"]}) == [
        Check("ssm:GetParameters", PARAMETER + "/a/x"),
        Check("ssm:GetParameters", PARAMETER + "/b/y"),
    ]


def test_a_parameter_path_grant_covers_its_parameters_and_nothing_beside_it() -> None:
    policy = role_policy(
        _stack(
            {
                "Effect": "Allow",
                "Action": ["ssm:GetParameter"],
                "Resource": PARAMETER + "/app/hooks/*",
            }
        ),
        "Role",
    )
    [inside] = checks("ssm", "GetParameter", {"Name": "/app/hooks/sch_1"})
    [beside] = checks("ssm", "GetParameter", {"Name": "/app/hooksx"})
    [write] = checks("ssm", "PutParameter", {"Name": "/app/hooks/sch_1"})
    assert policy.judge(inside).allowed
    assert not policy.judge(beside).allowed
    assert not policy.judge(write).allowed


def test_only_the_roles_own_policies_count() -> None:
    policy = role_policy(
        _stack({"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": TABLE + "t"}), "Role"
    )
    assert policy.judge(Check("dynamodb:GetItem", TABLE + "t")).allowed
    verdict = policy.judge(Check("dynamodb:PutItem", TABLE + "t"))
    assert not verdict.allowed
    assert "implicit deny" in verdict.reason


def test_wildcards_match_actions_case_insensitively_and_resources_exactly() -> None:
    policy = role_policy(
        _stack({"Effect": "Allow", "Action": "DynamoDB:Get*", "Resource": TABLE + "t*"}), "Role"
    )
    assert policy.judge(Check("dynamodb:GetItem", TABLE + "t/index/x")).allowed
    assert not policy.judge(Check("dynamodb:GetItem", TABLE.upper() + "T")).allowed


def test_an_explicit_deny_wins_over_any_allow() -> None:
    policy = role_policy(
        _stack(
            {"Effect": "Allow", "Action": "sqs:*", "Resource": "*"},
            {"Effect": "Deny", "Action": "sqs:DeleteQueue", "Resource": "*"},
        ),
        "Role",
    )
    assert policy.judge(Check("sqs:SendMessage", "q")).allowed
    verdict = policy.judge(Check("sqs:DeleteQueue", "q"))
    assert not verdict.allowed
    assert "explicitly denied" in verdict.reason


def test_not_action_and_not_resource_allow_everything_else() -> None:
    policy = role_policy(
        _stack({"Effect": "Allow", "NotAction": "sqs:*", "NotResource": TABLE + "secret"}), "Role"
    )
    assert policy.judge(Check("dynamodb:GetItem", TABLE + "t")).allowed
    assert not policy.judge(Check("sqs:SendMessage", "q")).allowed
    assert not policy.judge(Check("dynamodb:GetItem", TABLE + "secret")).allowed


def test_a_statement_with_a_condition_does_not_apply_and_is_reported() -> None:
    policy = role_policy(
        _stack(
            {
                "Effect": "Allow",
                "Action": "sqs:SendMessage",
                "Resource": "*",
                "Condition": {"Bool": {"aws:SecureTransport": "true"}},
            }
        ),
        "Role",
    )
    assert not policy.judge(Check("sqs:SendMessage", "q")).allowed
    assert policy.unknown_conditions


def test_a_leading_keys_condition_is_judged_on_the_items_partition_key() -> None:
    policy = role_policy(
        _stack(
            {
                "Effect": "Allow",
                "Action": "dynamodb:PutItem",
                "Resource": TABLE + "leases",
                "Condition": {
                    "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["H#ack:*", "H#watch:*"]}
                },
            }
        ),
        "Role",
    )

    def put(pk: str) -> Check:
        [check] = checks("dynamodb", "PutItem", {"TableName": "leases", "Item": {"pk": {"S": pk}}})
        return check

    assert put("H#ack:sch_1") == Check("dynamodb:PutItem", TABLE + "leases", ("H#ack:sch_1",))
    assert policy.judge(put("H#ack:sch_1")).allowed
    assert policy.judge(put("H#watch:sch_1")).allowed
    assert not policy.judge(put("L#000001")).allowed  # a lease
    assert not policy.judge(put("H#watchdog:cursor")).allowed
    assert not policy.judge(put("H#alert:sch_1")).allowed
    assert not policy.unknown_conditions


def test_sns_publish_is_authorized_on_the_topic() -> None:
    topic = "arn:aws:sns:us-east-1:123456789012:alarms"
    assert checks("sns", "Publish", {"TopicArn": topic, "Message": "m"}) == [
        Check("sns:Publish", topic)
    ]


@pytest.mark.parametrize("operation", ["SendMessage", "ReceiveMessage"])
def test_grants_list_every_action_and_resource_pair(operation: str) -> None:
    policy = role_policy(
        _stack(
            {
                "Effect": "Allow",
                "Action": ["sqs:SendMessage", "sqs:ReceiveMessage"],
                "Resource": ["a", "b"],
            }
        ),
        "Role",
    )
    assert (f"sqs:{operation}", "a") in policy.grants()
    assert (f"sqs:{operation}", "b") in policy.grants()


SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:"


def _keyed_stack() -> Stack:
    """Two roles granted a key by name and six-character suffix, as infra/secrets.py
    grants it, and the key's resource policy refusing it to every other principal."""
    stack = _stack(
        {
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":secretsmanager:us-east-1:",
                        {"Ref": "AWS::AccountId"},
                        ":secret:app/key-??????",
                    ],
                ]
            },
        }
    )
    stack.template["Resources"].update(
        {
            "Key": {"Type": "AWS::SecretsManager::Secret", "Properties": {"Name": "app/key"}},
            "Reader": {"Type": "AWS::IAM::Role", "Properties": {}},
            "Broad": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyDocument": {
                        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]
                    },
                    "Roles": [{"Ref": "Other"}],
                },
            },
            "Other": {"Type": "AWS::IAM::Role", "Properties": {}},
            "KeyPolicy": {
                "Type": "AWS::SecretsManager::ResourcePolicy",
                "Properties": {
                    "SecretId": {"Ref": "Key"},
                    "ResourcePolicy": {
                        "Statement": [
                            {
                                "Effect": "Deny",
                                "Principal": {"AWS": "*"},
                                "Action": ["secretsmanager:GetSecretValue"],
                                "Resource": "*",
                                "Condition": {
                                    "StringNotEquals": {
                                        "aws:PrincipalArn": [
                                            {"Fn::GetAtt": ["Role", "Arn"]},
                                            {"Fn::GetAtt": ["Reader", "Arn"]},
                                        ]
                                    }
                                },
                            }
                        ]
                    },
                },
            },
        }
    )
    return Stack(stack.name, stack.template)


def test_a_grant_by_name_and_six_question_marks_covers_the_secret_and_no_longer_name() -> None:
    policy = role_policy(_keyed_stack(), "Role")
    [key] = checks("secretsmanager", "GetSecretValue", {"SecretId": "app/key"})
    assert key.resource == SECRET + "app/key-AbCdEf"
    assert policy.judge(key).allowed
    [longer] = checks("secretsmanager", "GetSecretValue", {"SecretId": "app/key-old"})
    assert not policy.judge(longer).allowed
    assert not policy.unknown_conditions


def test_a_secrets_deny_unless_principal_applies_only_to_principals_it_does_not_list() -> None:
    stack = _keyed_stack()
    [key] = checks("secretsmanager", "GetSecretValue", {"SecretId": "app/key"})
    # A listed role is not denied: its own grant decides.
    assert role_policy(stack, "Role").judge(key).allowed
    reader = role_policy(stack, "Reader").judge(key)
    assert not reader.allowed and "implicit" in reader.reason
    # An unlisted role is denied, whatever its own policy allows.
    other = role_policy(stack, "Other").judge(key)
    assert not other.allowed and "explicitly denied by KeyPolicy" in other.reason
    # The Deny names the key alone.
    [elsewhere] = checks("secretsmanager", "GetSecretValue", {"SecretId": "app/other"})
    assert role_policy(stack, "Other").judge(elsewhere).allowed
