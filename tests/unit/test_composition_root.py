"""The application is wired in one place: bootstrap/. The entry points (the
Lambda handlers, the CLI, the simulator) ask it for their parts instead of
building the planner, the worker, the watchdog or the AWS stores themselves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINTS = ("handlers", "cli", "sim")
# What only the composition root builds.
BUILT_BY_THE_ROOT = re.compile(
    r"\b(Ticker|RunWorker|PlanNow|Surges|DynamoPorts|DynamoRunStore|SqsDeliveryQueue"
    r"|SqsWorkQueue|SqliteRunStore|LoadRecordingQueue|Janitor)(\(|\.from_\w+\(|\.open\()"
)


def wiring_outside_the_root(root: Path) -> list[str]:
    found = []
    for package in ENTRY_POINTS:
        for path in sorted((root / package).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if BUILT_BY_THE_ROOT.search(code) and not code.lstrip().startswith(("``", '"')):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_no_entry_point_builds_what_the_composition_root_builds() -> None:
    assert wiring_outside_the_root(ROOT) == []
