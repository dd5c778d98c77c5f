"""`duetime runs ...` and `duetime dead-letters ...`: what ran, what failed, what to run again."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TextIO

from cli import api_calls, render
from cli.api_calls import print_answer
from cli.client import ApiClient, ApiError
from cli.progress import Progress, on_terminal
from cli.when import interval_arg, utc_now, when_text
from domain.errors import InvalidSchedule
from domain.run import TERMINAL, RunKind, RunStatus
from domain.timeparse import format_instant

STATUSES = [s.value for s in RunStatus]
KINDS = [k.value for k in RunKind]
FOLLOW_PAGE = 100
# How follow waits between polls (tests replace it).
_sleep = time.sleep
# How many runs follow reads one by one per poll: those it saw unfinished that
# have left the newest page.
FOLLOW_STRAYS = 20


def add_parsers(subparsers: Any) -> None:
    common = api_calls.common_options()
    runs = subparsers.add_parser(
        "runs",
        help="list, show, follow, retry and cancel runs",
        description="The runs of one schedule or of all: list them with filters, show one "
        "with its attempts, follow them as they happen, run a failed one again, cancel one.",
    )
    actions = runs.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="each takes --help"
    )

    def action(name: str, helptext: str, description: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name, help=helptext, description=description, parents=[common]
        )
        return parser

    listing = action(
        "list",
        "runs, newest first, filtered",
        "List the runs of one schedule (or of all schedules without an ID), newest "
        "scheduled_at first. Occurrences still to come are left out unless --planned.",
    )
    listing.add_argument("schedule_id", nargs="?", help="one schedule's runs (default: all)")
    _filter_arguments(listing)
    listing.add_argument("--limit", type=int, default=20, help="page size, 1-100 (default 20)")
    listing.add_argument("--next-token", help="the token the previous page printed")
    listing.set_defaults(run=_list)

    show = action(
        "show", "one run with its progress and attempts", "Show one run: its times, "
        "lateness, result, the progress a long job reported, and every attempt."
    )  # fmt: skip
    show.add_argument("occurrence_id", help="the run's occurrence id (sch_....v1.2026...)")
    show.set_defaults(run=_show)

    follow = action(
        "follow",
        "print runs as they appear and change, until Ctrl-C",
        "Poll the API and print each new run and each change of a run's status as it "
        "happens, one line each (--json: one JSON object a line), until Ctrl-C. It watches "
        "the newest 100 runs and any run it saw unfinished.",
    )
    follow.add_argument("schedule_id", nargs="?", help="one schedule's runs (default: all)")
    follow.add_argument(
        "--interval", type=interval_arg, default=2.0, help="time between polls (default 2s)"
    )
    follow.add_argument(
        "--last", type=int, default=5, help="runs shown as they stand on start (default 5)"
    )
    follow.set_defaults(run=_follow)

    retry = action(
        "retry",
        "run a failed or expired occurrence again",
        "Run a failed or expired occurrence again, under the same occurrence id and "
        "idempotency key, as a new attempt. A run that succeeded, is still running or "
        "was skipped is refused (409).",
    )
    retry.add_argument("occurrence_id", help="the run's occurrence id (sch_....v1.2026...)")
    retry.set_defaults(run=_retry)

    cancel = action(
        "cancel",
        "cancel a run that has not finished",
        "Cancel a run that has not finished: one still to come does not start, one waiting "
        "for a retry gets no other attempt. A webhook already sent cannot be recalled: the "
        "run is marked cancelled and its late answer ignored. A run that already finished "
        "is refused (409, naming its status).",
    )
    cancel.add_argument("occurrence_id", help="the run's occurrence id (sch_....v1.2026...)")
    cancel.add_argument("--reason", help="why (kept on the run)")
    cancel.set_defaults(run=_cancel)

    dead = subparsers.add_parser(
        "dead-letters",
        help="the deliveries that ended in the dead-letter queue",
        description="The delivery intents that ended in the dead-letter queue, with why.",
    )
    dead_actions = dead.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="each takes --help"
    )
    dead_list = dead_actions.add_parser(
        "list",
        help="list dead letters",
        description="List the dead letters with their reason; run one again with "
        "`duetime dead-letters retry ID`.",
        parents=[common],
    )
    dead_list.add_argument("--limit", type=int, default=50, help="page size, 1-100 (default 50)")
    dead_list.add_argument("--next-token", help="the token the previous page printed")
    dead_list.set_defaults(run=_dead_letters)
    dead_retry = dead_actions.add_parser(
        "retry",
        help="run a dead letter's occurrence again (it leaves the list)",
        description="Run the occurrence a dead letter was for again, as `duetime runs retry` "
        "does; the dead letter then leaves the list. ID is the dead letter's ID from "
        "`duetime dead-letters list`, or its occurrence id.",
        parents=[common],
    )
    dead_retry.add_argument(
        "dead_letter_id", metavar="ID", help="a dead letter's ID or its occurrence id"
    )
    dead_retry.set_defaults(run=_retry_dead_letter)


def _filter_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--status",
        action="append",
        metavar="STATUS[,STATUS]",
        help=f"only these statuses ({', '.join(STATUSES)}); repeat or comma-separate",
    )
    parser.add_argument(
        "--kind",
        action="append",
        metavar="KIND[,KIND]",
        help=f"only these kinds ({', '.join(KINDS)}); repeat or comma-separate",
    )
    parser.add_argument(
        "--since",
        help="scheduled at or after: a time ago (30m, 1h, 2d) or an instant with an offset",
    )
    parser.add_argument("--until", help="scheduled before: a time ago or an instant")
    parser.add_argument(
        "--order", choices=["newest", "oldest"], default=None, help="by scheduled_at (newest)"
    )
    parser.add_argument("--planned", action="store_true", help="include occurrences still to come")


def _names(values: list[str] | None, allowed: list[str], flag: str) -> str | None:
    if not values:
        return None
    names = [n.strip() for value in values for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise InvalidSchedule(
            flag, f"{', '.join(unknown) or 'nothing'} is not one of {', '.join(allowed)}"
        )
    return ",".join(dict.fromkeys(names))


def filters(args: argparse.Namespace, now: datetime) -> dict[str, Any]:
    """The query parameters for the filter flags, checked before anything is sent."""
    since = when_text(args.since, now, "--since") if args.since else None
    until = when_text(args.until, now, "--until") if args.until else None
    if since and until and since >= until:
        raise InvalidSchedule("--since", f"{since} is not before --until {until}")
    return {
        "status": _names(args.status, STATUSES, "--status"),
        "kind": _names(args.kind, KINDS, "--kind"),
        "since": since,
        "until": until,
        "order": args.order,
        "include": "planned" if args.planned else None,
    }


def _path(schedule_id: str | None) -> str:
    return f"/schedules/{schedule_id}/runs" if schedule_id else "/runs"


def _list(args: argparse.Namespace) -> int:
    # GET /runs?schedule_id= reads a deleted schedule's runs too.
    query = {
        **filters(args, utc_now()),
        "schedule_id": args.schedule_id,
        "limit": args.limit,
        "next_token": args.next_token,
    }
    with Progress("reading runs"):
        answer = api_calls.client_for(args).request("GET", "/runs", query=query)
    items = answer.body.get("runs", [])
    table = render.runs_table(items) if items else "no runs match"
    if answer.body.get("next_token"):
        table += f"\nmore: --next-token {answer.body['next_token']}"
    return print_answer(args, answer.body, table)


def _show(args: argparse.Namespace) -> int:
    answer = api_calls.client_for(args).request("GET", f"/runs/{args.occurrence_id}")
    return print_answer(args, answer.body, render.run_table(answer.body))


def _retry(args: argparse.Namespace) -> int:
    answer = api_calls.client_for(args).request("POST", f"/runs/{args.occurrence_id}/retry", {})
    return print_answer(args, answer.body, render.run_table(answer.body))


def _cancel(args: argparse.Namespace) -> int:
    body = {"reason": args.reason} if args.reason else {}
    answer = api_calls.client_for(args).request("POST", f"/runs/{args.occurrence_id}/cancel", body)
    return print_answer(args, answer.body, render.run_table(answer.body))


# How many pages of dead letters `dead-letters retry` reads looking for an ID.
DEAD_LETTER_PAGES = 20


def _dead_letter_occurrence(client: ApiClient, letter_id: str) -> str:
    """The occurrence the dead letter ``letter_id`` was for; an occurrence id
    given instead is taken as it is (no need to read the queue)."""
    if letter_id.startswith("sch_") and "." in letter_id:
        return letter_id
    token: str | None = None
    for _ in range(DEAD_LETTER_PAGES):
        query = {"limit": 100, "next_token": token}
        page = client.request("GET", "/dead-letters", query=query).body
        for letter in page.get("dead_letters") or []:
            if letter.get("id") == letter_id:
                occurrence = letter.get("occurrence_id")
                if not occurrence:
                    raise InvalidSchedule(
                        "ID", f"dead letter {letter_id} names no occurrence: there is no run "
                        "to retry (its body is in `duetime dead-letters list --json`)"
                    )  # fmt: skip
                return str(occurrence)
        token = page.get("next_token")
        if not token:
            break
    raise InvalidSchedule(
        "ID", f"no dead letter {letter_id!r} (duetime dead-letters list shows them)"
    )


def _retry_dead_letter(args: argparse.Namespace) -> int:
    client = api_calls.client_for(args)
    occurrence = _dead_letter_occurrence(client, args.dead_letter_id)
    answer = client.request("POST", f"/runs/{occurrence}/retry", {})
    return print_answer(args, answer.body, render.run_table(answer.body))


def _dead_letters(args: argparse.Namespace) -> int:
    answer = api_calls.client_for(args).request(
        "GET", "/dead-letters", query={"limit": args.limit, "next_token": args.next_token}
    )
    items = answer.body.get("dead_letters", [])
    table = render.dead_letters_table(items) if items else "no dead letters"
    if answer.body.get("next_token"):
        table += f"\nmore: --next-token {answer.body['next_token']}"
    return print_answer(args, answer.body, table)


# --- follow ----------------------------------------------------------------------------


class Follower:
    """What `runs follow` has seen, and what is new on each poll.

    A run is reported when it first appears and whenever its status or its
    attempt count changes. Runs it saw unfinished are read one by one once they
    leave the newest page, so a slow run's end is not missed.
    """

    def __init__(self, client: ApiClient, path: str) -> None:
        self.client = client
        self.path = path
        self.seen: dict[str, tuple[str, int]] = {}

    def poll(self) -> list[tuple[dict[str, Any], str | None]]:
        """The runs that changed since the last poll, oldest first, each with its
        previous status (None for a run not seen before)."""
        page = self.client.request("GET", self.path, query={"limit": FOLLOW_PAGE}).body
        runs: list[dict[str, Any]] = list(reversed(page.get("runs") or []))
        listed = {r.get("occurrence_id") for r in runs}
        unfinished = [
            occurrence
            for occurrence, (status, _) in self.seen.items()
            if occurrence not in listed and status not in TERMINAL
        ]
        for occurrence in unfinished[:FOLLOW_STRAYS]:
            try:
                runs.append(self.client.request("GET", f"/runs/{occurrence}").body)
            except ApiError as error:
                if error.status != 404:
                    raise
                del self.seen[occurrence]
        return self._changes(runs)

    def _changes(self, runs: Iterable[dict[str, Any]]) -> list[tuple[dict[str, Any], str | None]]:
        changed: list[tuple[dict[str, Any], str | None]] = []
        for run in runs:
            key = str(run.get("occurrence_id"))
            now = (str(run.get("status")), int(run.get("attempts") or 0))
            before = self.seen.get(key)
            if before != now:
                changed.append((run, None if before is None else before[0]))
            self.seen[key] = now
        return changed


def _event(
    kind: str, run: dict[str, Any], previous: str | None, observed_at: str, as_json: bool
) -> str:
    if as_json:
        return json.dumps(
            {"event": kind, "observed_at": observed_at, "previous_status": previous, "run": run},
            ensure_ascii=False,
        )
    return render.follow_line(observed_at, run, previous, event=kind)


def follow(
    follower: Follower,
    *,
    interval_s: float,
    last: int,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = utc_now,
) -> int:
    """Poll until Ctrl-C; 0 then. The first poll's errors end the command, a
    later outage is reported once and waited out."""
    first = follower.poll()
    observed = format_instant(now())
    for run, _ in first[-last:] if last > 0 else []:
        print(_event("current", run, None, observed, as_json), file=out, flush=True)
    failing = False
    try:
        while True:
            sleep(interval_s)
            try:
                changes = follower.poll()
            except ApiError as error:
                if error.status and error.status < 500:
                    raise
                if not failing:
                    print(f"duetime runs follow: {error}; still trying", file=err, flush=True)
                failing = True
                continue
            if failing:
                print("duetime runs follow: the API answers again", file=err, flush=True)
                failing = False
            observed = format_instant(now())
            for run, previous in changes:
                kind = "new" if previous is None else "changed"
                print(_event(kind, run, previous, observed, as_json), file=out, flush=True)
    except KeyboardInterrupt:
        return 0


def _follow(args: argparse.Namespace) -> int:
    if args.last < 0:
        raise InvalidSchedule("--last", "must be 0 or more")
    follower = Follower(api_calls.client_for(args), _path(args.schedule_id))
    if on_terminal():
        whose = args.schedule_id or "all schedules"
        print(f"following the runs of {whose} (Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        return follow(
            follower,
            interval_s=args.interval,
            last=args.last,
            as_json=args.json,
            out=sys.stdout,
            err=sys.stderr,
            sleep=_sleep,
            now=utc_now,
        )
    except KeyboardInterrupt:
        return 0
