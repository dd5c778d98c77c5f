#!/usr/bin/env python3
"""CDK entry point (`npx cdk synth`, `npx cdk deploy`): see docs/deploy.md."""

from infra.application import build_app

if __name__ == "__main__":
    app, _ = build_app()
    app.synth()
