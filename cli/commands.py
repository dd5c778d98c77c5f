"""`duetime schedules ...`: the API's schedules from the command line.

`duetime runs ...` and `duetime dead-letters ...` live in ``cli/runs.py``;
the pages and tables they print, in ``cli/render.py``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from cli import render
from cli.client import DEFAULT_API_URL, ApiClient, ApiError
from cli.progress import Progress
from cli.when import duration_arg, utc_now, when_text
from domain.errors import InvalidSchedule
from domain.schedule import Overdue, Overlap
from domain.timeparse import format_instant
from domain.timezones import DstFold, DstGap

ENV_API_URL = "DUETIME_API_URL"

# Kept importable from here: other parts of the command print with them.
shown = render.shown
_rows = render.rows
_schedule_table = render.schedule_table


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


def client_for(args: argparse.Namespace) -> ApiClient:
    """The API client a command talks to (tests replace this function)."""
    return ApiClient(args.api_url, sigv4=args.sigv4)


def add_parsers(subparsers: Any) -> None:
    from cli import runs

    common = _common()
    schedules = subparsers.add_parser(
        "schedules",
        help="create, describe, edit and manage schedules",
        description="Create, describe, edit and manage schedules through the duetime API.",
    )
    actions = schedules.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, helptext: str, description: str | None = None) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name, help=helptext, description=description or helptext, parents=[common]
        )
        return parser

    create = action(
        "create",
        "create a schedule",
        "Create a schedule from flags and/or a JSON body (--file); flags win over the file.",
    )
    _definition_arguments(create)
    create.add_argument("--idempotency-key", help="a retried create returns the same schedule")
    create.set_defaults(run=_create)

    listing = action("list", "list schedules with their state")
    listing.add_argument("--limit", type=int, default=50, help="page size, 1-100 (default 50)")
    listing.add_argument("--next-token", help="the token the previous page printed")
    listing.set_defaults(run=_list)

    show = action("show", "show one schedule (short; see describe)")
    show.add_argument("schedule_id")
    show.set_defaults(run=_show)

    describe = action(
        "describe",
        "the whole picture of one schedule",
        "Print one schedule as a page: its status, spec, policy, target, the watchdog's "
        "verdict, its last runs (lateness, attempts), its next occurrences (with DST notes) "
        "and the occurrences still planned under an older version.",
    )
    describe.add_argument("schedule_id")
    describe.set_defaults(run=_describe)

    versions = action(
        "versions",
        "a schedule's versions, or one of them",
        "List every version of a schedule (oldest first) with what each changed, "
        "or print version N in full.",
    )
    versions.add_argument("schedule_id")
    versions.add_argument("number", nargs="?", type=int, help="print this version in full")
    versions.add_argument("--limit", type=int, default=50, help="page size, 1-100 (default 50)")
    versions.add_argument("--next-token", help="the token the previous page printed")
    versions.set_defaults(run=_versions)

    edit = action(
        "edit",
        "change what the flags give (a new version)",
        "Change only what the flags give: the command reads the schedule, applies the flags "
        "and sends the edit with If-Match naming the version it read. With --version the "
        "edit is refused (412) unless the schedule is still at that version. An edit never "
        "fires retroactively: occurrences already planned keep their version.",
    )
    edit.add_argument("schedule_id")
    edit.add_argument(
        "--version",
        type=int,
        help="the version you read; refused if the schedule has moved on (default: the current)",
    )
    _definition_arguments(edit)
    edit.set_defaults(run=_edit)

    backfill = action(
        "backfill",
        "create the past occurrences of a range that do not exist yet",
        "Create the occurrences between --from and --to (both inclusive, not in the future) "
        "that do not exist yet, as kind backfill; never a second copy of one that does.",
    )
    backfill.add_argument("schedule_id")
    backfill.add_argument(
        "--from", dest="start", required=True, help="an instant (2026-11-23T00:00:00Z) or 2d ago"
    )
    backfill.add_argument(
        "--to", dest="end", default="now", help="an instant or 1h ago (default now)"
    )
    backfill.set_defaults(run=_backfill)

    acknowledge = action(
        "acknowledge",
        "accept a failed run so the watchdog stops calling the schedule overdue",
    )
    acknowledge.add_argument("schedule_id")
    acknowledge.add_argument("--note", help="why (kept with the acknowledgement)")
    acknowledge.set_defaults(run=_acknowledge)

    for name, helptext in (
        ("pause", "stop new admissions"),
        ("resume", "resume from now"),
        ("delete", "delete (history stays)"),
        ("trigger", "one extra run now"),
    ):
        simple = action(name, helptext)
        simple.add_argument("schedule_id")
        if name == "pause":
            simple.add_argument("--note", help="why (shown with the state)")
        simple.set_defaults(run=_simple_action, verb=name)

    runs.add_parsers(subparsers, common)


def _definition_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file", type=Path, help="the whole JSON body, as POST /schedules takes it"
    )
    parser.add_argument("--name")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--cron", help="five-field cron expression")
    when.add_argument("--at", help="one instant, or a wall time with --tz")
    when.add_argument("--every", type=duration_arg, help="a duration: 10s, 15m, 1h or PT15M")
    parser.add_argument("--tz", help="IANA time zone")
    parser.add_argument("--webhook", help="target: POST to this URL")
    parser.add_argument("--target", help="target as JSON (sqs / lambda / eventbridge)")
    parser.add_argument("--payload", help="payload as JSON")
    policy = parser.add_argument_group(
        "policy", "each flag sets one policy field (over --policy and --file); durations as "
        "30s, 15m, 1h, 2d or ISO 8601 (PT15M)"
    )  # fmt: skip
    policy.add_argument("--policy", help="the whole policy as JSON")
    policy.add_argument("--overdue", choices=[o.value for o in Overdue])
    policy.add_argument(
        "--catchup-window", type=duration_arg, help="with --overdue expire: how late is too late"
    )
    policy.add_argument("--dst-gap", choices=[g.value for g in DstGap])
    policy.add_argument("--dst-fold", choices=[f.value for f in DstFold])
    policy.add_argument("--overlap", choices=[o.value for o in Overlap])
    policy.add_argument("--max-attempts", type=int, help="attempts per run, retries included")
    policy.add_argument("--retry-base", type=duration_arg, help="first retry delay")
    policy.add_argument("--retry-cap", type=duration_arg, help="longest retry delay")
    policy.add_argument("--run-timeout", type=duration_arg, help="how long one attempt may run")
    policy.add_argument(
        "--grace", type=duration_arg, help="how late a success may be before it is overdue"
    )


def _loads(text: str, field: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidSchedule(field, f"is not valid JSON: {error}") from None


def _apply_policy_flags(policy: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """``policy`` with each policy flag given set over it."""
    out = dict(policy)
    for flag in ("overdue", "catchup_window", "dst_gap", "dst_fold", "overlap", "run_timeout",
                 "grace"):  # fmt: skip
        value = getattr(args, flag, None)
        if value is not None:
            out[flag] = value
    if (
        args.overdue is not None
        and args.overdue != Overdue.EXPIRE.value
        and args.catchup_window is None
    ):
        # A catchup window goes with expire only: leaving expire drops it.
        out.pop("catchup_window", None)
    retry = dict(out.get("retry") or {})
    for flag, key in (("max_attempts", "max_attempts"), ("retry_base", "base"),
                      ("retry_cap", "cap")):  # fmt: skip
        value = getattr(args, flag, None)
        if value is not None:
            retry[key] = value
    if retry:
        out["retry"] = retry
    return out


def _policy_flags_given(args: argparse.Namespace) -> bool:
    return any(
        getattr(args, flag, None) is not None
        for flag in ("overdue", "catchup_window", "dst_gap", "dst_fold", "overlap",
                     "max_attempts", "retry_base", "retry_cap", "run_timeout", "grace")
    )  # fmt: skip


def definition(args: argparse.Namespace, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request body: ``base`` (an edit's current definition), then --file,
    then the flags (flags win)."""
    body: dict[str, Any] = dict(base or {})
    if args.file is not None:
        loaded = _loads(args.file.read_text(), "--file")
        if not isinstance(loaded, dict):
            raise InvalidSchedule("--file", "must hold a JSON object")
        body = loaded
    if args.name:
        body["name"] = args.name
    spec: dict[str, Any] = dict(body.get("spec") or {})
    for key in ("cron", "at", "every"):
        value = getattr(args, key)
        if value is not None:
            # A one-off takes no range; a cron or every keeps the one it had.
            kept = ("time_zone", "start_at", "end_at") if key != "at" else ("time_zone",)
            spec = {k: v for k, v in spec.items() if k in kept}
            spec[key] = value
    if args.tz:
        spec["time_zone"] = args.tz
    if spec:
        body["spec"] = spec
    if args.webhook:
        target = dict(body.get("target") or {})
        # A new URL for a webhook keeps its headers and timeout.
        kept_target = target if target.get("type") == "webhook" else {}
        body["target"] = {**kept_target, "type": "webhook", "url": args.webhook}
    if args.target:
        body["target"] = _loads(args.target, "--target")
    if args.payload:
        body["payload"] = _loads(args.payload, "--payload")
    if args.policy:
        policy = _loads(args.policy, "--policy")
        if not isinstance(policy, dict):
            raise InvalidSchedule("--policy", "must hold a JSON object")
        body["policy"] = policy
    if _policy_flags_given(args):
        body["policy"] = _apply_policy_flags(dict(body.get("policy") or {}), args)
    return body


def editable(current: dict[str, Any], *, keep_rhythm: bool = True) -> dict[str, Any]:
    """The definition a schedule answer describes, as PUT /schedules/{id} takes it.

    An ``every`` schedule without ``start_at`` is anchored at its creation; with
    ``keep_rhythm`` the edit sends that anchor as ``start_at`` so that its
    rhythm stays where it was (a new spec of another kind needs no anchor).
    """
    spec = {
        k: v
        for k, v in (current.get("spec") or {}).items()
        if v is not None and k in ("cron", "at", "every", "time_zone", "start_at", "end_at")
    }
    anchor = (current.get("spec") or {}).get("anchor_at")
    if keep_rhythm and spec.get("every") is not None and "start_at" not in spec and anchor:
        spec["start_at"] = anchor
    policy = {k: v for k, v in (current.get("policy") or {}).items() if v is not None}
    target = {k: v for k, v in (current.get("target") or {}).items() if v is not None}
    return {
        "name": current.get("name"),
        "spec": spec,
        "target": target,
        "payload": current.get("payload") or {},
        "policy": policy,
    }


def _print(args: argparse.Namespace, data: Any, table: str) -> int:
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else table)
    return 0


def _create(args: argparse.Namespace) -> int:
    headers = {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else None
    answer = client_for(args).request("POST", "/schedules", definition(args), headers)
    return _print(args, answer.body, render.schedule_table(answer.body))


def _list(args: argparse.Namespace) -> int:
    answer = client_for(args).request(
        "GET", "/schedules", query={"limit": args.limit, "next_token": args.next_token}
    )
    table = render.schedules_table(answer.body.get("schedules", []))
    if answer.body.get("next_token"):
        table += f"\nmore: --next-token {answer.body['next_token']}"
    return _print(args, answer.body, table)


def _show(args: argparse.Namespace) -> int:
    answer = client_for(args).request("GET", f"/schedules/{args.schedule_id}")
    return _print(args, answer.body, render.schedule_table(answer.body))


def _describe(args: argparse.Namespace) -> int:
    client = client_for(args)
    runs_path = f"/schedules/{args.schedule_id}/runs"
    planned: list[dict[str, Any]] = []
    with Progress(f"reading {args.schedule_id}") as progress:
        body = client.request("GET", f"/schedules/{args.schedule_id}").body
        if body.get("recent_runs") is None:
            # An answer without them (an older API): read the last runs the list way.
            progress.update(f"reading the runs of {args.schedule_id}")
            runs = client.request("GET", runs_path, query={"limit": 5}).body
            body = {**body, "recent_runs": runs.get("runs", [])}
        if not args.json:
            # The next occurrences the API lists are those not created yet; the
            # ones the planner already created are runs still to come.
            progress.update(f"reading the planned runs of {args.schedule_id}")
            since = format_instant(utc_now())
            query = {"include": "planned", "since": since, "order": "oldest", "limit": 5}
            planned = client.request("GET", runs_path, query=query).body.get("runs") or []
    return _print(args, body, render.describe_page(body, planned=planned))


def _versions(args: argparse.Namespace) -> int:
    client = client_for(args)
    if args.number is not None:
        answer = client.request("GET", f"/schedules/{args.schedule_id}/versions/{args.number}")
        return _print(args, answer.body, render.version_page(answer.body))
    answer = client.request(
        "GET",
        f"/schedules/{args.schedule_id}/versions",
        query={"limit": args.limit, "next_token": args.next_token},
    )
    table = render.versions_table(answer.body.get("versions", []))
    if answer.body.get("next_token"):
        table += f"\nmore: --next-token {answer.body['next_token']}"
    return _print(args, answer.body, table)


def _edit(args: argparse.Namespace) -> int:
    client = client_for(args)
    if args.file is None:
        current = client.request("GET", f"/schedules/{args.schedule_id}").body
        base = editable(current, keep_rhythm=args.cron is None and args.at is None)
        version = args.version if args.version is not None else current.get("version")
    else:
        base = {}
        version = args.version
        if version is None:
            version = client.request("GET", f"/schedules/{args.schedule_id}").body.get("version")
    body = definition(args, base)
    if body == base:
        raise InvalidSchedule("edit", "give at least one flag to change (or --file)")
    try:
        answer = client.request(
            "PUT", f"/schedules/{args.schedule_id}", body, {"If-Match": str(version)}
        )
    except ApiError as error:
        if error.status == 412:
            raise ApiError(
                412,
                f"{error.message} (duetime schedules describe {args.schedule_id} "
                "shows the current version)",
            ) from None
        raise
    return _print(args, answer.body, render.schedule_table(answer.body))


def _backfill(args: argparse.Namespace) -> int:
    now = utc_now()
    body = {
        "start_at": when_text(args.start, now, "--from"),
        "end_at": when_text(args.end, now, "--to"),
    }
    with Progress(f"backfilling {body['start_at']} to {body['end_at']}"):
        answer = client_for(args).request("POST", f"/schedules/{args.schedule_id}/backfill", body)
    runs = answer.body.get("runs") or []
    created = answer.body.get("created", len(runs))
    table = f"created {created} occurrence{'s' if created != 1 else ''} (kind backfill)"
    if runs:
        table += "\n" + render.runs_table(runs)
    return _print(args, answer.body, table)


def _acknowledge(args: argparse.Namespace) -> int:
    body = {"note": args.note} if args.note else {}
    answer = client_for(args).request("POST", f"/schedules/{args.schedule_id}/acknowledge", body)
    data = answer.body
    if isinstance(data, dict) and "id" in data and "spec" in data:
        page = render.schedule_table(data)
        if data.get("watch"):
            page += f"\nwatch:    {render.watch_text(data['watch'])}"
            page += f"\n          {render.watch_detail(data['watch'])}"
        return _print(args, data, page)
    return _print(args, data, f"acknowledged: {render.shown(render.compact_json(data))}")


def _simple_action(args: argparse.Namespace) -> int:
    client = client_for(args)
    if args.verb == "delete":
        answer = client.request("DELETE", f"/schedules/{args.schedule_id}")
    elif args.verb == "pause":
        note = {"note": args.note} if args.note else {}
        answer = client.request("POST", f"/schedules/{args.schedule_id}/pause", note)
    else:
        answer = client.request("POST", f"/schedules/{args.schedule_id}/{args.verb}", {})
    body = answer.body
    if args.verb == "trigger":
        return _print(args, body, render.run_table(body))
    return _print(args, body, render.schedule_table(body))
