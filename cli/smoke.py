"""`duetime smoke`: one occurrence end to end on a deployed stack.

It creates a one-off schedule due shortly whose target is the stack's smoke
queue (the ``SmokeQueueUrl`` output), waits for its run to succeed through the
API, receives the delivered message from the queue with the caller's own AWS
credentials, prints how late the run started and the message arrived, and
deletes the schedule. Exit 0 when all of that happened; 1 with the reason
when something did not (the schedule is deleted either way).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from cli.client import DEFAULT_API_URL, ApiClient, ApiError

ENV_API_URL = "DUETIME_API_URL"
ENV_QUEUE_URL = "DUETIME_SMOKE_QUEUE_URL"
# Statuses a run does not leave; only "succeeded" passes.
FINAL = frozenset({"succeeded", "failed", "expired", "skipped", "cancelled"})
POLL_S = 2.0


class SmokeFailed(Exception):
    """The smoke run did not do what it should; the message says what and where."""


@dataclass
class Clock:
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    sleep: Callable[[float], None] = time.sleep


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "smoke",
        help="run one occurrence end to end on a deployed stack",
        description=(
            "Create a schedule due in --lead seconds that sends to the stack's smoke "
            "queue, wait for its run to succeed and its message to arrive, show the "
            "lateness, and delete the schedule."
        ),
    )
    parser.add_argument(
        "--api-url",
        default=os.environ.get(ENV_API_URL, DEFAULT_API_URL),
        help=f"the stack's API (the ApiUrl output; default ${ENV_API_URL})",
    )
    parser.add_argument(
        "--queue-url",
        default=os.environ.get(ENV_QUEUE_URL),
        help=f"the stack's smoke queue (the SmokeQueueUrl output; default ${ENV_QUEUE_URL})",
    )
    parser.add_argument(
        "--sigv4",
        action="store_true",
        default=None,
        help="sign API requests with your AWS credentials (automatic for AWS URLs)",
    )
    parser.add_argument("--region", help="AWS region (default: from the URLs or your profile)")
    parser.add_argument(
        "--lead", type=float, default=20.0, help="seconds from now the occurrence is due"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        help="seconds to wait for the run and the message after it is due",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.queue_url:
        print(
            "duetime smoke: --queue-url is required (the stack's SmokeQueueUrl output)",
            file=sys.stderr,
        )
        return 2
    if not 0 < args.lead <= 60 or args.timeout <= 0:
        print("duetime smoke: --lead must be in (0, 60] and --timeout above 0", file=sys.stderr)
        return 2
    import boto3

    region = args.region or _region_of_queue(args.queue_url)
    api = ApiClient(args.api_url, sigv4=args.sigv4, region=args.region)
    sqs = boto3.client("sqs", region_name=region)
    try:
        smoke(api, sqs, args.queue_url, lead_s=args.lead, timeout_s=args.timeout, say=print)
    except SmokeFailed as failure:
        print(f"duetime smoke: FAILED: {failure}", file=sys.stderr)
        return 1
    print("duetime smoke: OK")
    return 0


def smoke(
    api: ApiClient,
    sqs: Any,
    queue_url: str,
    *,
    lead_s: float,
    timeout_s: float,
    say: Callable[[str], None],
    clock: Clock | None = None,
) -> dict[str, Any]:
    """Create, wait, receive, delete; the succeeded run, or ``SmokeFailed``."""
    clock = clock or Clock()
    due = (clock.now() + timedelta(seconds=lead_s)).replace(microsecond=0)
    token = uuid.uuid4().hex
    created = api.request(
        "POST",
        "/schedules",
        {
            "name": f"duetime smoke {due:%Y-%m-%dT%H:%M:%SZ}",
            "spec": {"at": due.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "target": {"type": "sqs", "queue_url": queue_url},
            "payload": {"smoke": token},
        },
    ).body
    schedule_id = str(created["id"])
    say(f"created schedule {schedule_id}, due at {due.isoformat()}")
    deadline = due + timedelta(seconds=timeout_s)
    failure: SmokeFailed | None = None
    found: dict[str, Any] = {}
    try:
        found = _wait_for_run(api, schedule_id, deadline, clock)
        say(
            f"run {found['occurrence_id']} succeeded: scheduled {found['scheduled_at']}, "
            f"started {found.get('started_at')} ({_late(found, 'started_at')} late)"
        )
        arrived = _receive(sqs, queue_url, found["occurrence_id"], token, deadline, clock)
        late = (arrived - _instant(found["scheduled_at"])).total_seconds()
        say(f"message received from the smoke queue {late:.1f} s after the occurrence was due")
    except SmokeFailed as error:
        failure = error
    finally:
        try:
            api.request("DELETE", f"/schedules/{schedule_id}")
            say(f"deleted schedule {schedule_id}")
        except ApiError as error:
            failure = failure or SmokeFailed(f"could not delete schedule {schedule_id}: {error}")
    if failure is not None:
        raise failure
    return found


def _wait_for_run(
    api: ApiClient, schedule_id: str, deadline: datetime, clock: Clock
) -> dict[str, Any]:
    last = "no run yet"
    while True:
        runs = api.request("GET", f"/schedules/{schedule_id}/runs", query={"limit": 5}).body
        for found in (runs or {}).get("runs", []):
            status = found.get("status")
            last = f"run {found.get('occurrence_id')} is {status}"
            if status == "succeeded":
                return dict(found)
            if status in FINAL:
                raise SmokeFailed(
                    f"{last} (reason: {found.get('reason') or 'none'}, "
                    f"result: {found.get('result')})"
                )
        if clock.now() >= deadline:
            raise SmokeFailed(f"no run succeeded by {deadline.isoformat()}: {last}")
        clock.sleep(POLL_S)


def _receive(
    sqs: Any, queue_url: str, occurrence_id: str, token: str, deadline: datetime, clock: Clock
) -> datetime:
    """When the run's message was seen on the queue (and removed from it)."""
    while True:
        left = (deadline - clock.now()).total_seconds()
        if left <= 0:
            raise SmokeFailed(
                f"the run succeeded but its message ({occurrence_id}) did not arrive on "
                f"{queue_url} by {deadline.isoformat()}"
            )
        try:
            answer = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=int(min(10, max(1, left))),
                MessageAttributeNames=["All"],
            )
        except Exception as error:
            raise SmokeFailed(f"cannot receive from {queue_url}: {error}") from None
        for message in answer.get("Messages", []):
            attribute = message.get("MessageAttributes", {}).get("occurrence_id", {})
            if attribute.get("StringValue") == occurrence_id and token in message.get("Body", ""):
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
                return clock.now()


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _late(found: dict[str, Any], field_name: str) -> str:
    if not found.get(field_name):
        return "?"
    late = _instant(found[field_name]) - _instant(found["scheduled_at"])
    return f"{late.total_seconds():.1f} s"


def _region_of_queue(url: str) -> str | None:
    # https://sqs.<region>.amazonaws.com/<account>/<name>
    parts = (urllib.parse.urlsplit(url).hostname or "").split(".")
    return parts[1] if len(parts) >= 4 and parts[0] == "sqs" else None
