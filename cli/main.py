"""The `duetime` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cli import commands, console, demo, explain, local, smoke
from domain.errors import DuetimeError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="duetime", description="duetime: schedules with one run record per occurrence."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    explain.add_parser(subparsers)
    commands.add_parsers(subparsers)
    local.add_parser(subparsers)
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
