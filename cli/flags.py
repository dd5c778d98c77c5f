"""Which flag sets which field of the API: one table, so that a refusal names
the flag the user typed (``--from``), not the field the API checked
(``start_at``).

The API and the domain name a bad input by its dotted path in the request
(``spec.time_zone``, ``policy.retry.cap``, ``spec.cron.minute``); a command
that sent it from a flag says the flag instead. A field under one of these
(``spec.cron.minute``) keeps the rest of its path (``--cron minute``).
"""

from __future__ import annotations

import re

from cli.client import ApiError
from domain.errors import DuetimeError, InvalidSchedule

# The API's field (a request body's dotted path, or a query parameter) -> the flag.
FIELD_FLAGS: dict[str, str] = {
    "name": "--name",
    "spec.cron": "--cron",
    "spec.at": "--at",
    "spec.every": "--every",
    "spec.time_zone": "--tz",
    "spec.start_at": "--start",
    "spec.end_at": "--end",
    "target": "--target",
    "target.url": "--webhook",
    "target.headers": "--header",
    "target.timeout_s": "--timeout",
    "target.queue_url": "--sqs",
    "target.message_group_id": "--message-group-id",
    "target.function_arn": "--lambda",
    "target.invocation_type": "--invocation-type",
    "target.event_bus_name": "--eventbridge",
    "target.source": "--source",
    "target.detail_type": "--detail-type",
    "target.job": "--job",
    "payload": "--payload",
    "policy": "--policy",
    "policy.overdue": "--overdue",
    "policy.catchup_window": "--catchup-window",
    "policy.dst_gap": "--dst-gap",
    "policy.dst_fold": "--dst-fold",
    "policy.overlap": "--overlap",
    "policy.retry.max_attempts": "--max-attempts",
    "policy.retry.base": "--retry-base",
    "policy.retry.cap": "--retry-cap",
    "policy.run_timeout": "--run-timeout",
    "policy.grace": "--grace",
    # schedules backfill
    "start_at": "--from",
    "end_at": "--to",
    "dry_run": "--dry-run",
    # schedules pause / acknowledge, runs cancel
    "note": "--note",
    "reason": "--reason",
    # the listings' query parameters
    "status": "--status",
    "kind": "--kind",
    "since": "--since",
    "until": "--until",
    "order": "--order",
    "include": "--planned",
    "limit": "--limit",
    "next_token": "--next-token",
}

# Where a command takes a field from something other than the usual flag.
COMMAND_FLAGS: dict[str, dict[str, str]] = {
    "explain": {"spec.cron": "EXPRESSION", "spec": "EXPRESSION"},
}

# Field names that read as identifiers (``start_at``, ``spec.time_zone``): only
# these are replaced inside a message, where a plain word (name, kind) is English.
_IDENTIFIER = re.compile(r"(?<![\w.-])([a-z]+(?:[._][a-z]+)+)(?![\w-])")


def flag_for(field: str, command: str = "") -> str | None:
    """The flag that sets ``field`` (``spec.cron.minute`` -> ``--cron minute``)."""
    table = {**FIELD_FLAGS, **COMMAND_FLAGS.get(command, {})}
    parts = field.split(".")
    for cut in range(len(parts), 0, -1):
        flag = table.get(".".join(parts[:cut]))
        if flag is not None:
            rest = ".".join(parts[cut:])
            return f"{flag} {rest}" if rest else flag
    return None


def _in_flags(text: str, command: str) -> str:
    """``text`` with each field name it quotes written as its flag."""

    def swap(match: re.Match[str]) -> str:
        word = match[1]
        return flag_for(word, command) or word if "_" in word or "." in word else word

    return _IDENTIFIER.sub(swap, text)


def flagged(error: DuetimeError, command: str) -> DuetimeError:
    """``error`` as the command's user reads it: fields named by their flags."""
    if isinstance(error, ApiError) and error.field:
        flag = flag_for(error.field, command)
        if flag is None:
            return error
        message = error.message
        if message.startswith(f"{error.field}: "):
            message = f"{flag}: {_in_flags(message[len(error.field) + 2 :], command)}"
        else:
            message = f"{flag}: {_in_flags(message, command)}"
        return ApiError(error.status, message, None, error.body)
    if isinstance(error, InvalidSchedule):
        flag = flag_for(error.field, command)
        if flag is None or error.field.startswith("-"):
            return error
        return InvalidSchedule(flag, _in_flags(error.reason, command))
    return error
