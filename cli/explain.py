"""`duetime explain`: the next occurrences of a cron expression, and its DST surprises."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from domain.explain import Explanation, explain
from domain.spec import parse_dst_policy, parse_spec
from domain.timeparse import parse_instant
from domain.timezones import DstFold, DstGap


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="show when a cron expression fires, in a time zone, with DST notes",
        description="Show the next occurrences of a cron expression, computed by the same "
        "code the dispatcher uses, with notes where daylight saving moves or repeats one.",
    )
    parser.add_argument("expression", help="five-field cron expression or @nickname")
    parser.add_argument("--tz", default="UTC", help="IANA time zone (default UTC)")
    parser.add_argument(
        "--after", help="start after this instant (ISO 8601 with offset); default now"
    )
    parser.add_argument("--count", type=int, default=10, help="how many occurrences (default 10)")
    parser.add_argument("--dst-gap", choices=[g.value for g in DstGap], default="cron")
    parser.add_argument("--dst-fold", choices=[f.value for f in DstFold], default="cron")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    after = parse_instant(args.after, "--after") if args.after else datetime.now(UTC)
    if not 1 <= args.count <= 1000:
        raise SystemExit("duetime explain: --count must be between 1 and 1000")
    spec = parse_spec({"cron": args.expression, "time_zone": args.tz}, created_at=after)
    dst = parse_dst_policy(args.dst_gap, args.dst_fold)
    result = explain(spec, dst, after, args.count)
    print(render_json(result) if args.json else render_table(result))
    return 0


def render_json(result: Explanation) -> str:
    return json.dumps(
        {
            "occurrences": [o.to_dict() for o in result.occurrences],
            "warnings": list(result.warnings),
        },
        indent=2,
    )


def render_table(result: Explanation) -> str:
    rows = [("LOCAL", "UTC", "NOTE")] + [(o.local, o.utc, o.note or "") for o in result.occurrences]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows]
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)
