"""The REST API: SigV4 on every method, validated, throttled, logged."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import Synthesized
from tests.infra.helpers import dumps, function, only, resources


def test_every_method_requires_iam_authorization_and_validation(template: dict[str, Any]) -> None:
    methods = resources(template, "AWS::ApiGateway::Method")
    validator_id, _ = only(template, "AWS::ApiGateway::RequestValidator")
    assert methods
    for method_id, method in methods.items():
        props = method["Properties"]
        assert props["AuthorizationType"] == "AWS_IAM", method_id
        assert props["RequestValidatorId"] == {"Ref": validator_id}, method_id


def test_the_request_validator_checks_bodies_and_parameters(template: dict[str, Any]) -> None:
    _, validator = only(template, "AWS::ApiGateway::RequestValidator")
    assert validator["Properties"]["ValidateRequestBody"] is True
    assert validator["Properties"]["ValidateRequestParameters"] is True


def test_every_path_is_proxied_to_the_api_function(template: dict[str, Any]) -> None:
    api_id, _ = function(template, "handlers.api.handler")
    methods = resources(template, "AWS::ApiGateway::Method").values()
    assert {m["Properties"]["HttpMethod"] for m in methods} == {"ANY"}
    assert len(methods) == 2  # "/" and "/{proxy+}"
    for method in methods:
        integration = method["Properties"]["Integration"]
        assert integration["Type"] == "AWS_PROXY"
        assert api_id in dumps(integration["Uri"])
    _, proxy = only(template, "AWS::ApiGateway::Resource")
    assert proxy["Properties"]["PathPart"] == "{proxy+}"


def test_the_stage_is_throttled_and_writes_access_logs(template: dict[str, Any]) -> None:
    _, stage = only(template, "AWS::ApiGateway::Stage")
    props = stage["Properties"]
    log_group_id = props["AccessLogSetting"]["DestinationArn"]["Fn::GetAtt"][0]
    assert template["Resources"][log_group_id]["Type"] == "AWS::Logs::LogGroup"
    assert "$context.requestId" in props["AccessLogSetting"]["Format"]
    (settings,) = props["MethodSettings"]
    assert settings["HttpMethod"] == "*" and settings["ResourcePath"] == "/*"
    assert settings["ThrottlingRateLimit"] == 50
    assert settings["ThrottlingBurstLimit"] == 100
    assert settings["LoggingLevel"] == "ERROR"
    assert settings["DataTraceEnabled"] is False


def test_the_api_is_regional(template: dict[str, Any]) -> None:
    _, api = only(template, "AWS::ApiGateway::RestApi")
    assert api["Properties"]["EndpointConfiguration"] == {"Types": ["REGIONAL"]}


def test_the_account_logging_role_can_be_left_to_the_account(synthesized: Synthesized) -> None:
    assert resources(synthesized.template("Duetime"), "AWS::ApiGateway::Account")
    assert not resources(synthesized.template("DuetimeSandbox"), "AWS::ApiGateway::Account")


def test_outputs_give_callers_the_url_and_the_invoke_resource(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    assert any(k.startswith("ApiUrl") for k in outputs)
    assert any(k.startswith("ApiInvokeArn") for k in outputs)
