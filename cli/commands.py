"""`duetime schedules ...` and `duetime runs ...`: the API from the command line."""

from __future__ import annotations

import argparse
import json
import os
import unicodedata
from pathlib import Path
from typing import Any

from cli.client import DEFAULT_API_URL, ApiClient
from domain.errors import InvalidSchedule

ENV_API_URL = "DUETIME_API_URL"


def _common() -> argparse.ArgumentParser:
    """Options every schedules/runs action takes, after the action's name."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--api-url",
        default=os.environ.get(ENV_API_URL, DEFAULT_API_URL),
        help=f"the API (default ${ENV_API_URL} or {DEFAULT_API_URL})",
    )
    common.add_argument(
        "--sigv4",
        action="store_true",
        default=None,
        help="sign requests with your AWS credentials (automatic for AWS URLs)",
    )
    common.add_argument("--json", action="store_true", help="print the API's JSON")
    return common


def add_parsers(subparsers: Any) -> None:
    common = _common()
    schedules = subparsers.add_parser("schedules", help="create and manage schedules")
    actions = schedules.add_subparsers(dest="action", required=True)

    def action(name: str, helptext: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(name, help=helptext, parents=[common])
        return parser

    create = action("create", "create a schedule")
    _definition_arguments(create)
    create.add_argument("--idempotency-key", help="a retried create returns the same schedule")
    create.set_defaults(run=_create)

    listing = action("list", "list schedules")
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--next-token")
    listing.set_defaults(run=_list)

    show = action("show", "show one schedule")
    show.add_argument("schedule_id")
    show.set_defaults(run=_show)

    edit = action("edit", "replace a schedule's definition (a new version)")
    edit.add_argument("schedule_id")
    edit.add_argument("--version", type=int, required=True, help="the version you read (If-Match)")
    _definition_arguments(edit)
    edit.set_defaults(run=_edit)

    for name, helptext in (
        ("pause", "stop new admissions"),
        ("resume", "resume from now"),
        ("delete", "delete (history stays)"),
        ("trigger", "one extra run now"),
    ):
        simple = action(name, helptext)
        simple.add_argument("schedule_id")
        if name == "pause":
            simple.add_argument("--note")
        simple.set_defaults(run=_simple_action, verb=name)

    runs = subparsers.add_parser("runs", help="see runs")
    runs_sub = runs.add_subparsers(dest="action", required=True)
    runs_list = runs_sub.add_parser(
        "list", help="a schedule's runs, newest first", parents=[common]
    )
    runs_list.add_argument("schedule_id")
    runs_list.add_argument("--limit", type=int, default=20)
    runs_list.add_argument("--next-token")
    runs_list.set_defaults(run=_runs_list)
    runs_show = runs_sub.add_parser("show", help="one run", parents=[common])
    runs_show.add_argument("occurrence_id")
    runs_show.set_defaults(run=_runs_show)


def _definition_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file", type=Path, help="the whole JSON body, as POST /schedules takes it"
    )
    parser.add_argument("--name")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--cron", help="five-field cron expression")
    when.add_argument("--at", help="one instant, or a wall time with --tz")
    when.add_argument("--every", help="an ISO 8601 duration such as PT15M")
    parser.add_argument("--tz", help="IANA time zone")
    parser.add_argument("--webhook", help="target: POST to this URL")
    parser.add_argument("--target", help="target as JSON (sqs / lambda / eventbridge)")
    parser.add_argument("--payload", help="payload as JSON")
    parser.add_argument("--policy", help="policy as JSON")


def _loads(text: str, field: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidSchedule(field, f"is not valid JSON: {error}") from None


def definition(args: argparse.Namespace) -> dict[str, Any]:
    """The request body from --file and/or the flags (flags win)."""
    body: dict[str, Any] = {}
    if args.file is not None:
        loaded = _loads(args.file.read_text(), "--file")
        if not isinstance(loaded, dict):
            raise InvalidSchedule("--file", "must hold a JSON object")
        body.update(loaded)
    if args.name:
        body["name"] = args.name
    spec: dict[str, Any] = dict(body.get("spec") or {})
    for key in ("cron", "at", "every"):
        value = getattr(args, key)
        if value is not None:
            spec = {k: v for k, v in spec.items() if k not in ("cron", "at", "every")}
            spec[key] = value
    if args.tz:
        spec["time_zone"] = args.tz
    if spec:
        body["spec"] = spec
    if args.webhook:
        body["target"] = {"type": "webhook", "url": args.webhook}
    if args.target:
        body["target"] = _loads(args.target, "--target")
    if args.payload:
        body["payload"] = _loads(args.payload, "--payload")
    if args.policy:
        body["policy"] = _loads(args.policy, "--policy")
    return body


def _client(args: argparse.Namespace) -> ApiClient:
    return ApiClient(args.api_url, sigv4=args.sigv4)


def _print(args: argparse.Namespace, data: Any, table: str) -> int:
    print(json.dumps(data, indent=2) if args.json else table)
    return 0


# Characters a terminal would act on or hide (controls, format characters,
# surrogates, line and paragraph separators) are shown as escapes.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def shown(value: object) -> str:
    """``value`` as text safe to print: a NUL, ESC or newline in a name cannot
    move the cursor, recolour the terminal or forge a table row."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(
        (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        if unicodedata.category(c) in _UNPRINTABLE
        else c
        for c in text
    )


def _spec_text(spec: dict[str, Any]) -> str:
    for key in ("cron", "at", "every"):
        if spec.get(key) is not None:
            zone = spec.get("time_zone")
            return f"{key} {spec[key]}" + (f" ({zone})" if zone and key != "every" else "")
    return "?"


def _schedule_table(s: dict[str, Any]) -> str:
    state = s.get("state") or {}
    lines = [
        f"id:       {s.get('id')}",
        f"name:     {shown(s.get('name'))}",
        f"version:  {s.get('version')}",
        f"spec:     {_spec_text(s.get('spec') or {})}",
        f"state:    {'paused' if state.get('paused') else 'active'}"
        + (f" ({shown(state.get('note'))})" if state.get("note") else ""),
        f"target:   {(s.get('target') or {}).get('type')}",
    ]
    upcoming = s.get("next_occurrences") or []
    if upcoming:
        lines.append("next:")
        lines += [f"  {o.get('local')}  ({o.get('scheduled_at')})" for o in upcoming]
    if s.get("webhook_secret"):
        lines.append(f"webhook secret (shown once): {s['webhook_secret']}")
    return "\n".join(lines)


def _rows(headers: list[str], rows: list[list[str]]) -> str:
    cells = [[shown(cell) for cell in row] for row in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in cells
    )


def _create(args: argparse.Namespace) -> int:
    headers = {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else None
    answer = _client(args).request("POST", "/schedules", definition(args), headers)
    return _print(args, answer.body, _schedule_table(answer.body))


def _list(args: argparse.Namespace) -> int:
    answer = _client(args).request(
        "GET", "/schedules", query={"limit": args.limit, "next_token": args.next_token}
    )
    items = answer.body.get("schedules", [])
    rows = [
        [
            s.get("id", ""),
            s.get("name", ""),
            str(s.get("version", "")),
            "paused" if (s.get("state") or {}).get("paused") else "active",
            _spec_text(s.get("spec") or {}),
        ]
        for s in items
    ]
    table = _rows(["ID", "NAME", "VERSION", "STATE", "SPEC"], rows)
    if answer.body.get("next_token"):
        table += f"\nmore: --next-token {answer.body['next_token']}"
    return _print(args, answer.body, table)


def _show(args: argparse.Namespace) -> int:
    answer = _client(args).request("GET", f"/schedules/{args.schedule_id}")
    return _print(args, answer.body, _schedule_table(answer.body))


def _edit(args: argparse.Namespace) -> int:
    answer = _client(args).request(
        "PUT", f"/schedules/{args.schedule_id}", definition(args), {"If-Match": str(args.version)}
    )
    return _print(args, answer.body, _schedule_table(answer.body))


def _simple_action(args: argparse.Namespace) -> int:
    client = _client(args)
    if args.verb == "delete":
        answer = client.request("DELETE", f"/schedules/{args.schedule_id}")
    elif args.verb == "pause":
        note = {"note": args.note} if args.note else {}
        answer = client.request("POST", f"/schedules/{args.schedule_id}/pause", note)
    else:
        answer = client.request("POST", f"/schedules/{args.schedule_id}/{args.verb}", {})
    body = answer.body
    if args.verb == "trigger":
        return _print(args, body, _run_table(body))
    return _print(args, body, _schedule_table(body))


def _run_table(r: dict[str, Any]) -> str:
    keys = ["occurrence_id", "schedule_id", "version", "status", "attempts", "scheduled_at",
            "local", "admitted_at", "started_at", "finished_at", "reason"]  # fmt: skip
    lines = [f"{k + ':':<15}{shown(r.get(k))}" for k in keys if r.get(k) is not None]
    if r.get("result") is not None:
        lines.append(f"{'result:':<15}{json.dumps(r['result'])}")
    return "\n".join(lines)


def _runs_list(args: argparse.Namespace) -> int:
    answer = _client(args).request(
        "GET",
        f"/schedules/{args.schedule_id}/runs",
        query={"limit": args.limit, "next_token": args.next_token},
    )
    rows = [
        [
            r.get("occurrence_id", ""),
            r.get("status", ""),
            r.get("local") or r.get("scheduled_at", ""),
            str(r.get("attempts", "")),
            r.get("reason") or "",
        ]
        for r in answer.body.get("runs", [])
    ]
    table = _rows(["OCCURRENCE", "STATUS", "SCHEDULED (LOCAL)", "ATTEMPTS", "REASON"], rows)
    if answer.body.get("next_token"):
        table += f"\nmore: --next-token {answer.body['next_token']}"
    return _print(args, answer.body, table)


def _runs_show(args: argparse.Namespace) -> int:
    answer = _client(args).request("GET", f"/runs/{args.occurrence_id}")
    return _print(args, answer.body, _run_table(answer.body))
