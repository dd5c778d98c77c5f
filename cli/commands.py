"""`duetime schedules ...`: the API's schedules from the command line.

`duetime runs ...` and `duetime dead-letters ...` live in ``cli/runs.py``;
the pages and tables they print, in ``cli/render.py``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cli import api_calls, render
from cli.api_calls import print_answer
from cli.client import ApiClient, ApiError
from cli.progress import Progress
from cli.when import NO_INSTANT, duration_arg, instant_arg, parse_when, utc_now
from domain.errors import InvalidSchedule
from domain.schedule import Overdue, Overlap
from domain.targets import MAX_TARGET_TIMEOUT_S
from domain.timeparse import format_instant, parse_duration
from domain.timezones import DstFold, DstGap

# Kept importable from here: other parts of the command print with them.
shown = render.shown
_rows = render.rows
_schedule_table = render.schedule_table


def add_parsers(subparsers: Any) -> None:
    common = api_calls.common_options()
    schedules = subparsers.add_parser(
        "schedules",
        help="create, describe, edit and manage schedules",
        description="Create, describe, edit and manage schedules through the duetime API.",
    )
    actions = schedules.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="each takes --help"
    )

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
    show.add_argument("schedule_id", help="the schedule (sch_...)")
    show.set_defaults(run=_show)

    describe = action(
        "describe",
        "the whole picture of one schedule",
        "Print one schedule as a page: its status, spec, policy, target, the watchdog's "
        "verdict, its last runs (lateness, attempts), its next occurrences (with DST notes) "
        "and the occurrences still planned under an older version. A deleted schedule "
        "is shown as deleted, with what of it stays readable.",
    )
    describe.add_argument("schedule_id", help="the schedule (sch_...)")
    describe.set_defaults(run=_describe)

    versions = action(
        "versions",
        "a schedule's versions, or one of them",
        "List every version of a schedule (oldest first) with what each changed, "
        "or print version N in full.",
    )
    versions.add_argument("schedule_id", help="the schedule (sch_...)")
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
    edit.add_argument("schedule_id", help="the schedule (sch_...)")
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
    backfill.add_argument("schedule_id", help="the schedule (sch_...)")
    backfill.add_argument(
        "--from", dest="start", required=True, help="an instant (2026-11-23T00:00:00Z) or 2d ago"
    )
    backfill.add_argument(
        "--to", dest="end", default="now", help="an instant or 1h ago (default now)"
    )
    backfill.add_argument(
        "--dry-run",
        action="store_true",
        help="list the occurrences it would create, and create none",
    )
    backfill.set_defaults(run=_backfill)

    rotate = action(
        "rotate-secret",
        "a new webhook signing secret, shown once",
        "Replace the schedule's webhook signing secret with a new one and print it once: "
        "the API never shows it again. The worker may sign with the previous one for up to "
        "5 more minutes, so a receiver accepts both for that long. Only webhook targets "
        "are signed (409 otherwise).",
    )
    rotate.add_argument("schedule_id", help="the schedule (sch_...)")
    rotate.set_defaults(run=_rotate_secret)

    acknowledge = action(
        "acknowledge",
        "accept a failed run so the watchdog stops calling the schedule overdue",
    )
    acknowledge.add_argument("schedule_id", help="the schedule (sch_...)")
    acknowledge.add_argument("--note", help="why (kept with the acknowledgement)")
    acknowledge.set_defaults(run=_acknowledge)

    for name, helptext in (
        ("pause", "stop new admissions"),
        ("resume", "resume from now"),
        ("delete", "delete (history stays)"),
        ("trigger", "one extra run now"),
    ):
        simple = action(name, helptext)
        simple.add_argument("schedule_id", help="the schedule (sch_...)")
        if name == "pause":
            simple.add_argument("--note", help="why (shown with the state)")
        simple.set_defaults(run=_simple_action, verb=name)


DST_GAP_HELP = (
    "a wall time the clocks jump over (spring forward): cron = as Debian cron (a fixed "
    "time runs at the first valid time, a * hour or minute field follows elapsed time), "
    "shift = read with the offset before the jump (02:30 runs at 03:30), next_valid = at "
    "the first wall time after the gap (03:00), skip = not at all that day"
)
DST_FOLD_HELP = (
    "a wall time the clocks go back over (it happens twice): cron = as Debian cron (a "
    "fixed time runs once, in the first copy; a * hour or minute field runs in both), "
    "first = the first copy, second = the second copy, both = both copies"
)


def _definition_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file",
        type=Path,
        help="the whole JSON body, as POST /schedules takes it (flags win over it); the "
        "way to give a payload or headers too rich for a flag",
    )
    parser.add_argument("--name", help="a short text naming the schedule")
    when = parser.add_argument_group("when", "one of --cron, --at, --every; the zone and bounds")
    kinds = when.add_mutually_exclusive_group()
    kinds.add_argument("--cron", help="five-field cron expression, in --tz ('0 9 * * MON-FRI')")
    kinds.add_argument("--at", help="one run: an instant with an offset, or a wall time with --tz")
    kinds.add_argument("--every", type=duration_arg, help="a duration: 10s, 15m, 1h or PT15M")
    when.add_argument(
        "--tz", help="IANA time zone the cron or wall time is read in (Europe/London)"
    )
    when.add_argument(
        "--start",
        type=instant_arg,
        help="no occurrence before this instant (ISO 8601 with an offset, or now); an every "
        "schedule counts its interval from it; 'none' removes it",
    )
    when.add_argument(
        "--end",
        type=instant_arg,
        help="no occurrence after this instant (ISO 8601 with an offset); 'none' removes it",
    )
    target = parser.add_argument_group(
        "target", "one of --webhook, --sqs, --lambda, --eventbridge or --target, each with its "
        "own options"
    )  # fmt: skip
    where = target.add_mutually_exclusive_group()
    where.add_argument("--webhook", metavar="URL", help="POST each occurrence to this URL")
    where.add_argument("--sqs", metavar="QUEUE_URL", help="send each occurrence to this queue")
    where.add_argument("--lambda", dest="lambda_arn", metavar="FUNCTION_ARN",
                       help="invoke this function with each occurrence")  # fmt: skip
    where.add_argument("--eventbridge", metavar="BUS", help="put each occurrence on this bus")
    where.add_argument("--job", metavar="NAME", help="run this job of the local stack's jobs file")
    where.add_argument(
        "--target", help='the whole target as JSON ({"type": "sqs", "queue_url": ...})'
    )
    target.add_argument(
        "--header",
        action="append",
        metavar="NAME:VALUE",
        help="webhook: an extra request header (repeat for more; kept on edit unless named "
        "again; to remove one give the whole target with --target)",
    )
    target.add_argument(
        "--timeout", type=duration_arg, help="webhook: how long to wait for an answer (10s)"
    )
    target.add_argument("--message-group-id", help="sqs: the message group of a FIFO queue")
    target.add_argument(
        "--invocation-type",
        choices=["Event", "RequestResponse"],
        help="lambda: Event (default, asynchronous) or RequestResponse (waits for the result)",
    )
    target.add_argument("--source", help="eventbridge: the event's source (default duetime)")
    target.add_argument(
        "--detail-type", help="eventbridge: the event's detail-type (default duetime.occurrence)"
    )
    parser.add_argument("--payload", help="payload as a JSON object, sent with every occurrence")
    policy = parser.add_argument_group(
        "policy", "each flag sets one policy field (over --policy and --file); durations as "
        "30s, 15m, 1h, 2d or ISO 8601 (PT15M)"
    )  # fmt: skip
    policy.add_argument("--policy", help="the whole policy as JSON")
    policy.add_argument(
        "--overdue",
        choices=[o.value for o in Overdue],
        help="occurrences missed while paused or down: catch_up_all = run each, "
        "latest_only = run the newest only, expire = drop those later than --catchup-window",
    )
    policy.add_argument(
        "--catchup-window", type=duration_arg, help="with --overdue expire: how late is too late"
    )
    policy.add_argument("--dst-gap", choices=[g.value for g in DstGap], help=DST_GAP_HELP)
    policy.add_argument("--dst-fold", choices=[f.value for f in DstFold], help=DST_FOLD_HELP)
    policy.add_argument(
        "--overlap",
        choices=[o.value for o in Overlap],
        help="when the previous run has not finished: allow_all = run anyway, skip = skip "
        "this occurrence",
    )
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
        loaded = _loads(_read(args.file), "--file")
        if not isinstance(loaded, dict):
            raise InvalidSchedule("--file", "must hold a JSON object")
        body = loaded
    if args.name:
        body["name"] = args.name
    spec = _spec(dict(body.get("spec") or {}), args)
    if spec:
        body["spec"] = spec
    target = _target(body.get("target"), args)
    if target is not None:
        body["target"] = target
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


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidSchedule("--file", f"cannot read {str(path)!r}: {error}") from None


def _spec(spec: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """``spec`` with --cron/--at/--every, --tz and --start/--end set over it."""
    for key in ("cron", "at", "every"):
        value = getattr(args, key)
        if value is not None:
            # A one-off takes no range; a cron or every keeps the one it had.
            kept = ("time_zone", "start_at", "end_at") if key != "at" else ("time_zone",)
            spec = {k: v for k, v in spec.items() if k in kept}
            spec[key] = value
    if args.tz:
        spec["time_zone"] = args.tz
    for flag, key in (("start", "start_at"), ("end", "end_at")):
        value = getattr(args, flag)
        if value == NO_INSTANT:
            spec.pop(key, None)
        elif value is not None:
            spec[key] = value
    return spec


# The flags that refine a target, with the type each goes with and its field.
_TARGET_OPTIONS = (
    ("timeout", "webhook", "timeout_s"),
    ("message_group_id", "sqs", "message_group_id"),
    ("invocation_type", "lambda", "invocation_type"),
    ("source", "eventbridge", "source"),
    ("detail_type", "eventbridge", "detail_type"),
)
_TARGET_FLAGS = (
    ("webhook", "webhook", "url"),
    ("sqs", "sqs", "queue_url"),
    ("lambda_arn", "lambda", "function_arn"),
    ("eventbridge", "eventbridge", "event_bus_name"),
    ("job", "command", "job"),
)


def _target(current: Any, args: argparse.Namespace) -> dict[str, Any] | None:
    """The target the flags give, over ``current``; None when no flag touches it."""
    target: dict[str, Any] | None = dict(current) if isinstance(current, dict) else None
    for flag, kind, field in _TARGET_FLAGS:
        value = getattr(args, flag)
        if value:
            # A new address for the same type keeps its options (headers, timeout).
            kept = target if target is not None and target.get("type") == kind else {}
            target = {**kept, "type": kind, field: value}
    if args.target:
        loaded = _loads(args.target, "--target")
        if not isinstance(loaded, dict):
            raise InvalidSchedule("--target", "must hold a JSON object")
        target = loaded
    options = [(flag, kind, field) for flag, kind, field in _TARGET_OPTIONS
               if getattr(args, flag) is not None]  # fmt: skip
    if args.header:
        options.append(("header", "webhook", "headers"))
    for flag, kind, field in options:
        name = "--" + flag.replace("_", "-")
        if target is None or target.get("type") != kind:
            here = f"the target here is {target.get('type')}" if target else "no target given"
            raise InvalidSchedule(name, f"goes with --{kind} ({here})")
        if flag == "header":
            target[field] = {**(target.get(field) or {}), **_headers(args.header)}
        elif flag == "timeout":
            seconds = parse_duration(args.timeout, name).total_seconds()
            if seconds > MAX_TARGET_TIMEOUT_S:
                longest = render.span(MAX_TARGET_TIMEOUT_S)
                raise InvalidSchedule(name, f"{render.span(seconds)} is more than {longest}")
            target[field] = seconds
        else:
            target[field] = getattr(args, flag)
    return target


def _headers(values: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, colon, text = value.partition(":")
        if not colon or not name.strip():
            raise InvalidSchedule("--header", f"{value!r} is not NAME:VALUE (X-Team: billing)")
        headers[name.strip()] = text.strip()
    return headers


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


def _create(args: argparse.Namespace) -> int:
    headers = {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else None
    answer = api_calls.client_for(args).request("POST", "/schedules", definition(args), headers)
    return print_answer(args, answer.body, render.schedule_table(answer.body))


def _list(args: argparse.Namespace) -> int:
    answer = api_calls.client_for(args).request(
        "GET", "/schedules", query={"limit": args.limit, "next_token": args.next_token}
    )
    table = render.schedules_table(answer.body.get("schedules", []))
    if answer.body.get("next_token"):
        table += f"\nmore: --next-token {answer.body['next_token']}"
    return print_answer(args, answer.body, table)


def _show(args: argparse.Namespace) -> int:
    answer = api_calls.client_for(args).request("GET", f"/schedules/{args.schedule_id}")
    return print_answer(args, answer.body, render.schedule_table(answer.body))


def _describe(args: argparse.Namespace) -> int:
    client = api_calls.client_for(args)
    runs_path = f"/schedules/{args.schedule_id}/runs"
    planned: list[dict[str, Any]] = []
    with Progress(f"reading {args.schedule_id}") as progress:
        try:
            body = client.request("GET", f"/schedules/{args.schedule_id}").body
        except ApiError as error:
            if error.status != 404:
                raise
            deleted_at = _deleted_at(error.body)
            if deleted_at is None:
                raise ApiError(
                    404, f"{error.message} (duetime schedules list shows the schedules there are)"
                ) from None
            progress.update(f"reading what stays of {args.schedule_id}")
            return _describe_deleted(args, client, error, deleted_at)
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
    return print_answer(args, body, render.describe_page(body, planned=planned))


def _deleted_at(body: Any) -> str | None:
    """When a 404's body says the schedule was deleted (at the top or in ``error``)."""
    for part in (body, body.get("error") if isinstance(body, dict) else None):
        if isinstance(part, dict) and isinstance(part.get("deleted_at"), str):
            return str(part["deleted_at"])
    return None


def _readable(client: ApiClient, path: str, query: dict[str, Any]) -> Any:
    """What a deleted schedule's route still answers, or None."""
    try:
        return client.request("GET", path, query=query).body
    except ApiError as error:
        if error.status in (404, 410):
            return None
        raise


def _describe_deleted(
    args: argparse.Namespace, client: ApiClient, error: ApiError, deleted_at: str
) -> int:
    """A deleted schedule: when it was deleted, its last version and its last runs,
    as far as the API still answers them."""
    if args.json:
        return print_answer(args, error.body, "")
    sid = args.schedule_id
    versions = _readable(client, f"/schedules/{sid}/versions", {"limit": 100}) or {}
    runs = _readable(client, "/runs", {"schedule_id": sid, "limit": 5}) or {}
    last = (versions.get("versions") or [None])[-1]
    return print_answer(
        args,
        error.body,
        render.deleted_page(sid, deleted_at, error.message, last, runs.get("runs")),
    )


def _versions(args: argparse.Namespace) -> int:
    client = api_calls.client_for(args)
    if args.number is not None:
        answer = client.request("GET", f"/schedules/{args.schedule_id}/versions/{args.number}")
        return print_answer(args, answer.body, render.version_page(answer.body))
    answer = client.request(
        "GET",
        f"/schedules/{args.schedule_id}/versions",
        query={"limit": args.limit, "next_token": args.next_token},
    )
    table = render.versions_table(answer.body.get("versions", []))
    if answer.body.get("next_token"):
        table += f"\nmore: --next-token {answer.body['next_token']}"
    return print_answer(args, answer.body, table)


def _edit(args: argparse.Namespace) -> int:
    client = api_calls.client_for(args)
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
    return print_answer(args, answer.body, render.schedule_table(answer.body))


def _backfill(args: argparse.Namespace) -> int:
    now = utc_now()
    start, end = parse_when(args.start, now, "--from"), parse_when(args.end, now, "--to")
    # Checked here so that the refusal names the flags (the API names its fields).
    if start > now:
        raise InvalidSchedule(
            "--from", f"{format_instant(start)} is in the future: backfill is for the past"
        )
    if end > now:
        raise InvalidSchedule(
            "--to", f"{format_instant(end)} is in the future: backfill is for the past"
        )
    if end < start:
        raise InvalidSchedule(
            "--to", f"{format_instant(end)} is before --from {format_instant(start)}"
        )
    body: dict[str, Any] = {"start_at": format_instant(start), "end_at": format_instant(end)}
    if args.dry_run:
        body["dry_run"] = True
    verb = "previewing" if args.dry_run else "backfilling"
    with Progress(f"{verb} {body['start_at']} to {body['end_at']}"):
        answer = api_calls.client_for(args).request(
            "POST", f"/schedules/{args.schedule_id}/backfill", body
        )
    runs = answer.body.get("runs") or []
    if args.dry_run:
        table = (
            f"would create {render.plural(len(runs), 'occurrence')} (kind backfill); "
            "dry run: nothing created"
        )
    else:
        created = answer.body.get("created", len(runs))
        table = f"created {render.plural(created, 'occurrence')} (kind backfill)"
    if runs:
        table += "\n" + render.runs_table(runs)
    return print_answer(args, answer.body, table)


def _rotate_secret(args: argparse.Namespace) -> int:
    answer = api_calls.client_for(args).request(
        "POST", f"/schedules/{args.schedule_id}/rotate-secret", {}
    )
    page = render.schedule_table(answer.body)
    if answer.body.get("webhook_secret"):
        page += (
            "\ngive it to the receiver now: the worker may sign with the previous one for up "
            "to 5 more minutes (docs/webhooks.md)"
        )
    return print_answer(args, answer.body, page)


def _acknowledge(args: argparse.Namespace) -> int:
    body = {"note": args.note} if args.note else {}
    answer = api_calls.client_for(args).request(
        "POST", f"/schedules/{args.schedule_id}/acknowledge", body
    )
    data = answer.body
    if isinstance(data, dict) and "id" in data and "spec" in data:
        page = render.schedule_table(data)
        if data.get("watch"):
            page += f"\nwatch:    {render.watch_text(data['watch'])}"
            page += f"\n          {render.watch_detail(data['watch'])}"
        return print_answer(args, data, page)
    return print_answer(args, data, f"acknowledged: {render.shown(render.compact_json(data))}")


def _simple_action(args: argparse.Namespace) -> int:
    client = api_calls.client_for(args)
    if args.verb == "delete":
        answer = client.request("DELETE", f"/schedules/{args.schedule_id}")
    elif args.verb == "pause":
        note = {"note": args.note} if args.note else {}
        answer = client.request("POST", f"/schedules/{args.schedule_id}/pause", note)
    else:
        answer = client.request("POST", f"/schedules/{args.schedule_id}/{args.verb}", {})
    body = answer.body
    if args.verb == "trigger":
        return print_answer(args, body, render.run_table(body))
    return print_answer(args, body, render.schedule_table(body))
