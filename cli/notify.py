"""`duetime local --notify-url`: the local stack's channel for changed verdicts.

The watchdog posts each schedule whose verdict changes (ok to overdue or
unknown, and back) to the URL, as JSON or as a Slack-compatible body, at most
one message per schedule per minimum interval (service/alerts.py).
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from adapters.notify import FORMATS, WebhookNotifier
from domain.alerts import DEFAULT_MIN_INTERVAL
from service.alerts import Alerting


def parse_notify_url(text: str) -> str:
    """``--notify-url``: where changed verdicts are posted (http or https)."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"--notify-url takes an http:// or https:// URL with a host (got {text!r})"
        )
    return text.strip()


def add_arguments(parser: argparse.ArgumentParser, parse_interval: Any) -> None:
    parser.add_argument(
        "--notify-url",
        type=parse_notify_url,
        default=None,
        help="tell a person: POST each schedule whose watchdog verdict changes (ok to "
        "overdue or unknown, and back) to this URL",
    )
    parser.add_argument(
        "--notify-format",
        choices=FORMATS,
        default="json",
        help="json (default): the verdict as a JSON document; slack: a Slack-compatible "
        '{"text": ...} body',
    )
    parser.add_argument(
        "--notify-min-interval",
        type=parse_interval,
        default=None,
        metavar="INTERVAL",
        help="the least time between two messages about one schedule, such as 10m (the "
        "default) or 1h; a change inside it is sent when it ends, if it still holds",
    )


def alerting(args: argparse.Namespace) -> Alerting | None:
    """The notification webhook of ``--notify-url`` (None without it); each message
    links the schedule's page in the console of the API on ``--port``."""
    if not args.notify_url:
        return None
    console = f"http://127.0.0.1:{args.port}/console#/schedules/"
    interval = args.notify_min_interval
    return Alerting(
        WebhookNotifier(args.notify_url, args.notify_format),
        min_interval=DEFAULT_MIN_INTERVAL if interval is None else timedelta(seconds=interval),
        link=lambda schedule_id: console + schedule_id,
    )
