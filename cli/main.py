"""The `duetime` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cli import commands, console, crontab, demo, explain, local, smoke
from domain.errors import DuetimeError

EVERYDAY = """\
everyday commands (each takes --help; --json prints the API's JSON):
  duetime schedules create --name N --every 10s --webhook URL   (+ policy flags)
  duetime schedules list
  duetime schedules describe ID       status, policy, watch, last and next runs
  duetime schedules versions ID [N]   every version and what it changed
  duetime schedules edit ID --name N  changes only what is given (If-Match)
  duetime schedules pause ID --note N / resume ID / trigger ID / delete ID
  duetime schedules backfill ID --from 2d --to now
  duetime schedules acknowledge ID    accept a failed run (no longer overdue)
  duetime runs list [ID] --status failed --since 1h --kind trigger --planned
  duetime runs show OCC               one run with its progress and attempts
  duetime runs follow [ID] [--json]   runs as they happen, until Ctrl-C
  duetime runs retry OCC              run a failed or expired occurrence again
  duetime dead-letters list
  duetime console --api-url URL       the web console of a deployed stack
  duetime import-crontab FILE         a crontab as jobs and schedules (docs/commands.md)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="duetime",
        description="duetime: schedules with one run record per occurrence.",
        epilog=EVERYDAY,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    explain.add_parser(subparsers)
    commands.add_parsers(subparsers)
    local.add_parser(subparsers)
    crontab.add_parser(subparsers)
    demo.add_parser(subparsers)
    smoke.add_parser(subparsers)
    console.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except DuetimeError as error:
        print(f"duetime {args.command}: {error}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
