"""cdk-nag AwsSolutions: no unacknowledged finding, and every acknowledgement says why."""

from __future__ import annotations

import pytest

from tests.infra.conftest import Synthesized


def test_synthesis_with_aws_solutions_checks_raises_nothing(synthesized: Synthesized) -> None:
    report = synthesized.outdir / "validation-report.json"
    details = report.read_text() if report.exists() else ""
    assert synthesized.error is None, f"{synthesized.error}\n{details}"


def test_every_acknowledgement_is_an_aws_solutions_rule_with_a_reason(
    synthesized: Synthesized,
) -> None:
    assert synthesized.acknowledgements, "expected the documented acknowledgements"
    for path, rule, reason in synthesized.acknowledgements:
        assert rule.startswith("AwsSolutions::AwsSolutions-"), (path, rule)
        assert len(reason.split()) >= 8, f"{path} {rule}: give a real reason, not {reason!r}"


def test_acknowledgements_sit_on_the_construct_they_concern(synthesized: Synthesized) -> None:
    # No blanket stack-level acknowledgement: each is scoped below the stack.
    for path, rule, _ in synthesized.acknowledgements:
        assert path.count("/") >= 1, f"{rule} is acknowledged for a whole stack ({path})"


def test_an_acknowledgement_without_a_reason_is_refused() -> None:
    from aws_cdk import App, Stack

    from infra.nag import acknowledge

    stack = Stack(App(), "Probe")
    with pytest.raises(ValueError, match="reason"):
        acknowledge(stack, "AwsSolutions-SQS3", "  ")
