"""The `duetime` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from cli import commands, console, crontab, demo, explain, local, runs, smoke
from cli.flags import flagged
from domain.errors import DuetimeError

EVERYDAY = """\
everyday commands (each takes --help; --json prints the API's JSON):
  duetime schedules create --name N --every 10s --webhook URL   (+ policy flags)
  duetime schedules list
  duetime schedules describe ID       status, policy, watch, last and next runs
  duetime schedules versions ID [N]   every version and what it changed
  duetime schedules edit ID --name N  changes only what is given (If-Match)
  duetime schedules pause ID --note N / resume ID / trigger ID / delete ID
  duetime schedules backfill ID --from 2d --to now [--dry-run]
  duetime schedules acknowledge ID    accept a failed run (no longer overdue)
  duetime schedules rotate-secret ID  a new webhook signing secret, shown once
  duetime runs list [ID] --status failed --since 1h --kind trigger --planned
  duetime runs show OCC               one run with its progress and attempts
  duetime runs follow [ID] [--json]   runs as they happen, until Ctrl-C
  duetime runs retry OCC              run a failed or expired occurrence again
  duetime runs cancel OCC [--reason R]  cancel a run that has not finished
  duetime dead-letters list / retry ID
  duetime explain '30 2 * * *' --tz Europe/London   (or --every D, --at T, --schedule ID)
  duetime local                       the whole stack on this machine
  duetime console --api-url URL       the web console of a deployed stack
  duetime import-crontab FILE         a crontab as jobs and schedules (docs/commands.md)

The API is $DUETIME_API_URL, else http://127.0.0.1:8080 (a `duetime local`);
--api-url names another.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="duetime",
        description="duetime: schedules with one run record per occurrence.",
        epilog=EVERYDAY,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", title="commands", help="each takes --help"
    )
    explain.add_parser(subparsers)
    commands.add_parsers(subparsers)
    runs.add_parsers(subparsers)
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
        print(f"duetime {args.command}: {flagged(error, args.command)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`duetime runs follow --json | head -3`): it has
        # all it wanted. Point stdout at /dev/null so that the interpreter's
        # last flush does not fail again, and end quietly.
        _stdout_to_devnull()
        return 0
    return code


def _stdout_to_devnull() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (stdout replaced in process)
        pass


if __name__ == "__main__":
    sys.exit(main())
