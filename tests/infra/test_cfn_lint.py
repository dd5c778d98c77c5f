"""cfn-lint on every synthesized template: no errors, no warnings but CDK's own W3005."""

from __future__ import annotations

import pytest

from tests.infra.conftest import Synthesized


@pytest.mark.parametrize("stack", ["Duetime", "DuetimeSandbox", "DuetimeWildcard"])
def test_cfn_lint_finds_nothing(synthesized: Synthesized, stack: str) -> None:
    from cfnlint.api import ManualArgs, lint_file

    synthesized.template(stack)  # fails clearly if synthesis did
    # W3005 (redundant DependsOn) is how CDK itself writes some dependencies.
    matches = lint_file(
        synthesized.outdir / f"{stack}.template.json",
        config=ManualArgs(ignore_checks=["W3005"], regions=["us-east-1", "eu-west-1"]),
    )
    assert not matches, "\n".join(str(m) for m in matches)
