"""Synthesize the stack once per session and share the templates.

One CDK app holds three stacks: the defaults (webhook secrets in the secrets
table), a sandbox variant (nothing retained, explicit target ARNs, an alarm
email, webhook secrets in Secrets Manager) and one with the documented target
wildcard and webhook secrets as SSM parameters, the earlier default.
Synthesizing them together costs one jsii start and one asset hash instead of
three. cdk-nag runs on all of them during that synthesis.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# jsii reads these when its Node process starts, at the first aws_cdk import.
QUIET_ENV = {
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    "CDK_DISABLE_CLI_TELEMETRY": "true",
    "CDK_DISABLE_VERSION_CHECK": "1",
    "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED": "true",
    "npm_config_update_notifier": "false",
}
for _key, _value in QUIET_ENV.items():
    os.environ.setdefault(_key, _value)

# Never real credentials: nothing here may reach AWS.
DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_REGION": "eu-west-1",
}
SANDBOX_TARGETS = (
    "arn:aws:lambda:eu-west-1:111111111111:function:report-builder",
    "arn:aws:sqs:eu-west-1:111111111111:nightly-jobs",
    "arn:aws:events:eu-west-1:111111111111:event-bus/ops",
    "arn:aws:lambda:eu-west-1:111111111111:function:team-*",
)


@dataclass
class Synthesized:
    outdir: Path
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: BaseException | None = None
    acknowledgements: list[tuple[str, str, str]] = field(default_factory=list)

    def template(self, stack: str) -> dict[str, Any]:
        if self.error is not None:
            pytest.fail(f"synthesis failed: {self.error}")
        return self.templates[stack]


@pytest.fixture(scope="session", autouse=True)
def dummy_aws_credentials() -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in DUMMY_AWS_ENV}
    os.environ.update(DUMMY_AWS_ENV)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def lambda_asset() -> Path:
    """The real asset (pip wheels for Lambda + the project's packages), built once."""
    from infra import build_asset

    return build_asset.build().out_dir


@pytest.fixture(scope="session")
def synthesized(lambda_asset: Path, tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    from aws_cdk import App, Validations

    from infra.nag import add_checks
    from infra.settings import Settings
    from infra.stack import DuetimeStack

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = App(outdir=str(outdir))
    stacks = {
        "Duetime": Settings(),
        "DuetimeSandbox": Settings(
            stack_name="DuetimeSandbox",
            retain=False,
            target_arns=SANDBOX_TARGETS,
            alarm_email="ops@example.com",
            tick_reserved_concurrency=0,
            manage_api_gateway_account=False,
            dispatch_lag_p99_threshold_s=30,
            log_retention_days=7,
            secret_store="secretsmanager",
            surge_min=0,
            tick_memory_mb=1769,
            worker_max_concurrency=20,
            start_lateness_p99_threshold_s=5,
        ),
        "DuetimeWildcard": Settings(
            stack_name="DuetimeWildcard", target_arns=("*",), secret_store="ssm"
        ),
    }
    for name, settings in stacks.items():
        DuetimeStack(app, name, settings=settings)
    add_checks(app)

    result = Synthesized(outdir=outdir)
    try:
        assembly = app.synth()
    except Exception as exc:  # cdk-nag findings surface here as ValidationFailed
        result.error = exc
        return result
    for name in stacks:
        result.templates[name] = assembly.get_stack_by_name(name).template
    key = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    for construct in app.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == key:
                for rule, reason in dict(entry.data).items():
                    result.acknowledgements.append((construct.node.path, rule, reason))
    return result


@pytest.fixture(scope="session")
def template(synthesized: Synthesized) -> dict[str, Any]:
    """The default stack's CloudFormation template, as JSON."""
    return synthesized.template("Duetime")


@pytest.fixture(scope="session")
def cdk_template(template: dict[str, Any]) -> Any:
    """The same template wrapped for aws_cdk.assertions."""
    from aws_cdk.assertions import Template

    return Template.from_json(template)
