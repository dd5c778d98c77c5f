"""What every command that calls the API shares: its options (``--api-url``,
``--sigv4``, ``--json``), its client, and how it prints an answer.

``duetime schedules`` (``cli/commands.py``), ``duetime runs`` and
``duetime dead-letters`` (``cli/runs.py``) and ``duetime import-crontab``
take them from here.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from cli.client import DEFAULT_API_URL, ENV_API_URL, ApiClient


def add_api_options(parser: argparse.ArgumentParser, when: str = "") -> None:
    """``--api-url`` and ``--sigv4``: where the API is and how to sign for it
    (``when``: the condition under which a command calls it, for the help)."""
    parser.add_argument(
        "--api-url",
        default=os.environ.get(ENV_API_URL, DEFAULT_API_URL),
        help=f"{when}the API (default ${ENV_API_URL} or {DEFAULT_API_URL})",
    )
    parser.add_argument(
        "--sigv4",
        action="store_true",
        default=None,
        help=f"{when}sign requests with your AWS credentials (automatic for AWS URLs)",
    )


def common_options() -> argparse.ArgumentParser:
    """Options every schedules/runs action takes, after the action's name."""
    common = argparse.ArgumentParser(add_help=False)
    add_api_options(common)
    common.add_argument(
        "--json", action="store_true", help="print the API's JSON instead of a page or a table"
    )
    return common


def client_for(args: argparse.Namespace) -> ApiClient:
    """The API client a command talks to (tests replace this function)."""
    return ApiClient(args.api_url, sigv4=args.sigv4)


def print_answer(args: argparse.Namespace, data: Any, table: str) -> int:
    """The API's JSON with ``--json``, else the page or table made of it."""
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else table)
    return 0
