"""The REST API: every route proxied to the api function, every method SigV4-signed.

Callers sign requests with their AWS credentials (Signature Version 4, service
``execute-api``) and need ``execute-api:Invoke`` on the API. API Gateway
rejects unsigned or unauthorized requests before the function runs.
"""

from __future__ import annotations

from aws_cdk import CfnOutput, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.log_groups import log_group
from infra.nag import acknowledge
from infra.settings import Settings

STAGE = "v1"


class Api(Construct):
    def __init__(
        self, scope: Construct, id: str, *, handler: lambda_.IFunction, settings: Settings
    ) -> None:
        super().__init__(scope, id)
        self.access_logs = log_group(self, "AccessLogs", settings)
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            description="duetime schedules and runs",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # API Gateway writes access logs through one role per account and
            # region; see docs/deploy.md for the setting that leaves it alone.
            cloud_watch_role=settings.manage_api_gateway_account,
            cloud_watch_role_removal_policy=(
                RemovalPolicy.RETAIN if settings.manage_api_gateway_account else None
            ),
            deploy_options=apigw.StageOptions(
                stage_name=STAGE,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
                throttling_rate_limit=settings.api_throttle_rate,
                throttling_burst_limit=settings.api_throttle_burst,
            ),
        )
        self.validator = self.rest_api.add_request_validator(
            "Validator", validate_request_body=True, validate_request_parameters=True
        )
        integration = apigw.LambdaIntegration(handler)
        # "/" and everything under it go to the one function; its router
        # answers 404/405 for paths and methods it does not know.
        for resource in (self.rest_api.root, self.rest_api.root.add_resource("{proxy+}")):
            resource.add_method(
                "ANY",
                integration,
                authorization_type=apigw.AuthorizationType.IAM,
                request_validator=self.validator,
            )

        self.url = self.rest_api.url
        self.invoke_arn = self.rest_api.arn_for_execute_api(stage=STAGE)
        CfnOutput(self, "Url", value=self.url, description="Base URL of the API (SigV4)")
        CfnOutput(
            self,
            "InvokeArn",
            value=self.invoke_arn,
            description="Resource for execute-api:Invoke in a caller's IAM policy",
        )
        self._acknowledge(settings)

    def _acknowledge(self, settings: Settings) -> None:
        stage = self.rest_api.deployment_stage
        acknowledge(
            stage,
            "AwsSolutions-APIG3",
            "Every method requires SigV4-signed requests from IAM principals of the "
            "account, and the stage is throttled; a WAF web ACL (billed per ACL and per "
            "request) adds little in front of that. Associate one if the API is "
            "reachable by untrusted networks you want to filter.",
        )
        for method in self.rest_api.methods:
            acknowledge(
                method,
                "AwsSolutions-COG4",
                "Authorization is AWS_IAM (SigV4): callers are IAM principals, not "
                "Cognito users, so a Cognito authorizer does not apply.",
            )
        if settings.manage_api_gateway_account:
            role = self.rest_api.node.try_find_child("CloudWatchRole")
            if role is not None:
                acknowledge(
                    role,
                    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                    "service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
                    "API Gateway's account-wide logging role needs exactly this "
                    "AWS-maintained policy to create and write its log groups.",
                )
