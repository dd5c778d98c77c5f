"""`npx cdk synth` works with cdk.json, offline, as a user would run it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.infra.conftest import DUMMY_AWS_ENV, QUIET_ENV

ROOT = Path(__file__).resolve().parents[2]


def test_cdk_json_runs_the_app_with_the_project_venv() -> None:
    config = json.loads((ROOT / "cdk.json").read_text())
    assert config["app"] == ".venv/bin/python app.py"


@pytest.mark.slow
def test_npx_cdk_synth_succeeds(lambda_asset: Path, tmp_path: Path) -> None:
    if shutil.which("npx") is None or shutil.which("node") is None:
        pytest.skip("node/npx is not installed")
    if not (ROOT / "node_modules" / "aws-cdk").is_dir():
        pytest.fail("the aws-cdk CLI is not installed: run `make install` (npm install)")
    env = {**os.environ, **QUIET_ENV, **DUMMY_AWS_ENV}
    env.pop("AWS_PROFILE", None)
    done = subprocess.run(
        ["npx", "--no-install", "cdk", "synth", "--no-notices", "--quiet", "-o", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    template = json.loads((tmp_path / "Duetime.template.json").read_text())
    assert "AWS::Scheduler::Schedule" in {r["Type"] for r in template["Resources"].values()}
