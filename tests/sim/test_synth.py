"""The templates the simulator runs are made from the infra files on disk."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from sim import synth


def test_a_template_is_synthesized_from_the_files_not_from_modules_already_imported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A long-lived process (a test session) imported the stack before its files
    # changed: the template must still be the files' one, the one kept under
    # their hash.
    from aws_cdk import Stack

    def stale_stack(scope: Any, name: str, **_: Any) -> Stack:
        return Stack(scope, name)

    stale = types.ModuleType("infra.stack")
    stale.DuetimeStack = stale_stack  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "infra.stack", stale)
    monkeypatch.setattr(synth, "CACHE_DIR", tmp_path)

    templates = synth.synthesize({"Duetime": {}}, fresh=True)

    resources = templates["Duetime"].get("Resources", {})
    assert "SecretsSigningKey427004F6" in resources
    assert any(r["Type"] == "AWS::Lambda::Function" for r in resources.values())
