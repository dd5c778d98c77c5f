"""Intrinsics resolve to what CloudFormation would put there, for the simulator's resources."""

from __future__ import annotations

import pytest

from sim.template import Stack, TemplateError

TEMPLATE = {
    "Resources": {
        "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
        "Named": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "fixed"}},
    }
}


def test_ref_of_a_table_is_its_name_and_of_a_queue_its_url() -> None:
    stack = Stack("S", TEMPLATE)
    assert stack.resolve({"Ref": "Table"}) == stack.names["Table"]
    assert stack.resolve({"Ref": "Named"}) == (
        "https://sqs.us-east-1.amazonaws.com/123456789012/fixed"
    )


def test_two_stacks_never_share_a_generated_name() -> None:
    assert Stack("A", TEMPLATE).names["Table"] != Stack("B", TEMPLATE).names["Table"]


def test_get_att_join_and_sub_resolve_arns() -> None:
    stack = Stack("S", TEMPLATE)
    table = stack.names["Table"]
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}"
    assert stack.resolve({"Fn::GetAtt": ["Table", "Arn"]}) == arn
    assert stack.resolve({"Fn::Join": ["", [{"Fn::GetAtt": ["Table", "Arn"]}, "/index/x"]]}) == (
        arn + "/index/x"
    )
    assert stack.resolve({"Fn::Sub": "${Table.Arn}/${AWS::Region}/${Named}"}) == (
        f"{arn}/us-east-1/https://sqs.us-east-1.amazonaws.com/123456789012/fixed"
    )
    assert stack.resolve({"Fn::GetAtt": ["Named", "QueueName"]}) == "fixed"


def test_an_intrinsic_the_simulator_does_not_model_is_refused_by_name() -> None:
    with pytest.raises(TemplateError, match="Fn::ImportValue"):
        Stack("S", TEMPLATE).resolve({"Fn::ImportValue": "x"})


def test_a_get_att_of_a_missing_resource_is_refused_by_name() -> None:
    with pytest.raises(TemplateError, match="Nope"):
        Stack("S", TEMPLATE).resolve({"Fn::GetAtt": ["Nope", "Arn"]})
