"""Every benchmark whose numbers BENCHMARKS.md quotes still runs end to end.

The benches are commands, outside the product's import graph, so a change to
a port or a row layout can leave one broken with nothing else failing (the
growth bench and the soak had stopped running, unnoticed, before this test).
Each runs here at a toy size, in a process of its own as a person runs it:
what is checked is that it finishes and prints its report, not its numbers,
which only mean something at full size (BENCHMARKS.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (script and toy arguments, a line of its report)
BENCHES = [
    (["bench/admission.py", "--sizes", "200", "--rounds", "1"], "admission on SQLite"),
    (["bench/burst.py", "--sizes", "200", "--workers", "2", "--rounds", "1"], "| schedules |"),
    (
        ["bench/growth.py", "--real-runs", "300", "--days", "1", "--admission-n", "200"],
        "bytes per retained run",
    ),
    (["bench/run_listing.py", "--runs", "500", "--schedules", "10", "--rounds", "1"], "median"),
    (["bench/describe_requests.py", "--runs", "10", "--schedules", "2", "--repeat", "2"], "GET"),
    (["bench/soak.py", "--duration", "5", "--settle", "5", "--schedules", "2"], "lost: no record"),
    (["bench/watchdog_moto.py", "--schedules", "10", "--rounds", "1"], "judged/s"),
    (["bench/admission_moto.py", "--schedules", "10", "--rounds", "1"], "admitted and sent"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "reported"), BENCHES, ids=[b[0][0] for b in BENCHES])
def test_the_bench_runs_and_reports(argv: list[str], reported: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert reported in done.stdout, done.stdout[-3000:]
