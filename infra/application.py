"""Build the CDK app: the stack from context settings, checked by cdk-nag."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import App

from infra.nag import add_checks
from infra.settings import Settings
from infra.stack import DuetimeStack


def build_app(
    context: Mapping[str, Any] | None = None, outdir: str | None = None
) -> tuple[App, DuetimeStack]:
    """The app with one environment-agnostic stack: synth needs no AWS account."""
    app = App(context=dict(context or {}), outdir=outdir)
    settings = Settings.from_context(app.node.try_get_context)
    stack = DuetimeStack(app, settings.stack_name, settings=settings)
    add_checks(app)
    return app, stack
