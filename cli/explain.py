"""`duetime explain`: the next occurrences of a spec (cron, every or at, or a
stored schedule's), and its DST surprises."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from cli import api_calls
from cli.commands import DST_FOLD_HELP, DST_GAP_HELP
from cli.render import shown
from cli.when import duration_arg, instant_arg
from domain.errors import InvalidSchedule
from domain.explain import Explanation, explain
from domain.spec import parse_dst_policy, parse_spec
from domain.timeparse import parse_instant
from domain.timezones import DstFold, DstGap

SPEC_FIELDS = ("cron", "at", "every", "time_zone", "start_at", "end_at")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="show when a cron, every or at spec (or a stored schedule) fires, with DST notes",
        description="Show the next occurrences of a spec, computed by the same code the "
        "dispatcher uses, with notes where daylight saving moves or repeats one. The spec "
        "is a cron EXPRESSION, --every, --at, or a stored schedule's (--schedule ID, read "
        "from the API with its DST policy; the DST flags then try another policy).",
    )
    parser.add_argument(
        "expression", nargs="?", help="five-field cron expression or @nickname ('30 2 * * *')"
    )
    kinds = parser.add_mutually_exclusive_group()
    kinds.add_argument(
        "--every", type=duration_arg, help="an interval instead of cron: 10s, 15m, 1h or PT15M"
    )
    kinds.add_argument(
        "--at",
        help="one instant instead of cron: ISO 8601 with an offset, or a wall time with --tz",
    )
    kinds.add_argument(
        "--schedule", metavar="ID", help="a stored schedule's spec and DST policy (sch_...)"
    )
    parser.add_argument("--tz", help="IANA time zone (default UTC)")
    parser.add_argument(
        "--start",
        type=instant_arg,
        help="no occurrence before this instant; an --every interval counts from it "
        "(default: from --after)",
    )
    parser.add_argument("--end", type=instant_arg, help="no occurrence after this instant")
    parser.add_argument(
        "--after", help="start after this instant (ISO 8601 with offset); default now"
    )
    parser.add_argument("--count", type=int, default=10, help="how many occurrences (default 10)")
    parser.add_argument(
        "--dst-gap", choices=[g.value for g in DstGap], help=DST_GAP_HELP + " (default cron)"
    )
    parser.add_argument(
        "--dst-fold", choices=[f.value for f in DstFold], help=DST_FOLD_HELP + " (default cron)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    api_calls.add_api_options(parser, when="with --schedule: ")
    parser.set_defaults(run=run)


def _stored(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A stored schedule's spec (as parse_spec takes it), its policy, and a title."""
    body = api_calls.client_for(args).request("GET", f"/schedules/{args.schedule}").body
    stored = body.get("spec") or {}
    spec = {k: stored[k] for k in SPEC_FIELDS if stored.get(k) is not None}
    if spec.get("every") and not spec.get("start_at") and stored.get("anchor_at"):
        spec["start_at"] = stored["anchor_at"]  # the rhythm it keeps
    title = f"{shown(body.get('name'))} ({shown(body.get('id'))}), version {body.get('version')}"
    return spec, body.get("policy") or {}, title


def _given(args: argparse.Namespace) -> dict[str, Any]:
    if args.expression is not None:
        if args.every is not None or args.at is not None:
            raise InvalidSchedule("EXPRESSION", "give a cron expression, --every or --at: one")
        return {"cron": args.expression}
    if args.every is not None:
        return {"every": args.every}
    if args.at is not None:
        return {"at": args.at}
    raise InvalidSchedule(
        "EXPRESSION", "give a cron expression, --every D, --at T or --schedule ID"
    )


def run(args: argparse.Namespace) -> int:
    after = parse_instant(args.after, "--after") if args.after else datetime.now(UTC)
    if not 1 <= args.count <= 1000:
        raise InvalidSchedule("--count", "must be between 1 and 1000")
    policy: dict[str, Any] = {}
    title = None
    if args.schedule is not None:
        if args.expression is not None:
            raise InvalidSchedule("--schedule", "takes no cron expression: give one or the other")
        spec, policy, title = _stored(args)
    else:
        spec = _given(args)
    if args.tz:
        spec["time_zone"] = args.tz
    for flag, key in (("start", "start_at"), ("end", "end_at")):
        value = getattr(args, flag)
        if value == "none":
            spec.pop(key, None)
        elif value is not None:
            spec[key] = value
    parsed = parse_spec(spec, created_at=after)
    dst = parse_dst_policy(
        args.dst_gap or policy.get("dst_gap"), args.dst_fold or policy.get("dst_fold")
    )
    result = explain(parsed, dst, after, args.count)
    if args.json:
        print(render_json(result, args.schedule))
    else:
        print((title + "\n" if title else "") + render_table(result))
    return 0


def render_json(result: Explanation, schedule_id: str | None = None) -> str:
    data: dict[str, Any] = {
        "occurrences": [o.to_dict() for o in result.occurrences],
        "warnings": list(result.warnings),
    }
    if schedule_id is not None:
        data["schedule_id"] = schedule_id
    return json.dumps(data, indent=2)


def render_table(result: Explanation) -> str:
    rows = [("LOCAL", "UTC", "NOTE")] + [(o.local, o.utc, o.note or "") for o in result.occurrences]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows]
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)
