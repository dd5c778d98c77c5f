"""How the `duetime` command prints what the API answers: pages and tables.

Every text that came from a record (a name, a pause note, a reason, an error)
goes through ``shown`` before it reaches the terminal.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

# Characters a terminal would act on or hide (controls, format characters,
# surrogates, line and paragraph separators) are shown as escapes.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def shown(value: object) -> str:
    """``value`` as text safe to print: a NUL, ESC or newline in a name cannot
    move the cursor, recolour the terminal or forge a table row."""
    text = "" if value is None else str(value)
    if text.isprintable():
        return text
    return "".join(
        (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        if unicodedata.category(c) in _UNPRINTABLE
        else c
        for c in text
    )


def rows(headers: list[str], table: Iterable[list[Any]]) -> str:
    """A plain table: columns two spaces apart, every cell escaped."""
    cells = [[shown(cell) for cell in row] for row in [headers, *table]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in cells
    )


def span(seconds: float | None) -> str:
    """Seconds as a person reads them: ``0.4s``, ``12s``, ``2m05s``, ``3h10m``, ``2d4h``."""
    if seconds is None:
        return ""
    sign = "-" if seconds < 0 else ""
    value = abs(float(seconds))
    if value < 10:
        return f"{sign}{value:.1f}s".replace(".0s", "s")
    total = round(value)
    if total < 60:
        return f"{sign}{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{sign}{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{sign}{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{sign}{days}d{hours}h"


def plural(count: object, noun: str, nouns: str | None = None) -> str:
    """``1 attempt``, ``3 attempts``, ``0 occurrences``; ``nouns`` for an irregular plural."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


# --- schedules -----------------------------------------------------------------------


def status_of(s: Mapping[str, Any]) -> str:
    """The schedule's one-word status: the API's ``status`` when it sends one,
    else what its record shows (deleted, quarantined, paused, active)."""
    status = s.get("status")
    if isinstance(status, str) and status:
        return status
    if s.get("deleted_at"):
        return "deleted"
    if s.get("quarantine"):
        return "quarantined"
    if (s.get("state") or {}).get("paused"):
        return "paused"
    return "active"


def status_text(s: Mapping[str, Any]) -> str:
    """The status with what explains it: the pause note, when it was deleted,
    why it was set aside."""
    status = status_of(s)
    state = s.get("state") or {}
    if status == "paused" and state.get("note"):
        return f"paused ({shown(state['note'])})"
    if status == "deleted" and s.get("deleted_at"):
        return f"deleted at {s['deleted_at']}"
    if status == "quarantined" and s.get("quarantine"):
        q = s["quarantine"]
        return f"quarantined ({q.get('component')}: {shown(q.get('reason'))}, at {q.get('at')})"
    if status == "ended":
        return "ended (no occurrence will come)"
    if status != "paused" and state.get("paused"):
        # e.g. a deleted schedule that was paused: both are true
        return f"{status}, paused" + (f" ({shown(state['note'])})" if state.get("note") else "")
    return status


def spec_text(spec: Mapping[str, Any]) -> str:
    for key in ("cron", "at", "every"):
        if spec.get(key) is not None:
            zone = spec.get("time_zone")
            text = f"{key} {shown(spec[key])}" + (
                f" ({shown(zone)})" if zone and key != "every" else ""
            )
            if spec.get("start_at"):
                text += f" from {spec['start_at']}"
            if spec.get("end_at"):
                text += f" until {spec['end_at']}"
            return text
    return "?"


def target_text(target: Mapping[str, Any]) -> str:
    kind = target.get("type")
    where = {
        "webhook": target.get("url"),
        "sqs": target.get("queue_url"),
        "lambda": target.get("function_arn"),
        "eventbridge": target.get("event_bus_name"),
        "command": target.get("job"),
    }.get(str(kind))
    text = f"{shown(kind)} {shown(where)}" if where else shown(kind)
    if kind == "webhook" and target.get("timeout_s") is not None:
        text += f" (timeout {span(target['timeout_s'])})"
    if kind == "lambda" and target.get("invocation_type"):
        text += f" ({shown(target['invocation_type'])})"
    if kind == "eventbridge" and target.get("source"):
        text += f" (source {shown(target['source'])}, {shown(target.get('detail_type'))})"
    if kind == "sqs" and target.get("message_group_id"):
        text += f" (group {shown(target['message_group_id'])})"
    return text


def policy_lines(policy: Mapping[str, Any]) -> list[str]:
    retry = policy.get("retry") or {}
    overdue = f"overdue {policy.get('overdue')}"
    if policy.get("catchup_window"):
        overdue += f" (catchup window {policy['catchup_window']})"
    grace = policy.get("grace") or "one interval (default)"
    return [
        f"{overdue}, overlap {policy.get('overlap')}",
        f"dst gap {policy.get('dst_gap')}, dst fold {policy.get('dst_fold')}",
        f"retry up to {plural(retry.get('max_attempts'), 'attempt')}, backoff "
        f"{retry.get('base')} to {retry.get('cap')}",
        f"run timeout {policy.get('run_timeout')}, grace {grace}",
    ]


def watch_text(watch: Mapping[str, Any] | None) -> str:
    if not watch:
        return "not judged yet (the watchdog has not passed)"
    text = str(watch.get("status"))
    details = []
    if watch.get("error"):  # unknown: the watchdog could not judge it
        details.append(f"cannot be judged ({watch['error']})")
    if watch.get("expected_at"):
        details.append(f"expected {watch['expected_at']}")
    details.append(
        f"last success {watch['last_success_at']}"
        if watch.get("last_success_at")
        else "no success yet"
    )
    return f"{text}: " + ", ".join(details)


def watch_detail(watch: Mapping[str, Any] | None) -> str:
    """The grace the verdict allowed and when it was reached."""
    details = []
    if watch and watch.get("grace_s") is not None:
        details.append(f"grace {span(watch['grace_s'])}")
    if watch and watch.get("checked_at"):
        details.append(f"checked {watch['checked_at']}")
    return ", ".join(details)


def schedule_table(s: Mapping[str, Any]) -> str:
    """The short page create, show, edit, pause, resume and delete print."""
    lines = [
        f"id:       {shown(s.get('id'))}",
        f"name:     {shown(s.get('name'))}",
        f"version:  {s.get('version')}",
        f"spec:     {spec_text(s.get('spec') or {})}",
        f"state:    {status_text(s)}",
        f"target:   {target_text(s.get('target') or {})}",
    ]
    upcoming = s.get("next_occurrences") or []
    if upcoming and status_of(s) not in ("deleted", "ended"):
        lines.append("next:")
        lines += [
            f"  {o.get('local')}  ({o.get('scheduled_at')})"
            + (f"  {shown(o['dst_note'])}" if o.get("dst_note") else "")
            for o in upcoming
        ]
    if s.get("webhook_secret"):
        lines.append(f"webhook secret (shown once): {s['webhook_secret']}")
    return "\n".join(lines)


def _indent(text: str, by: str = "  ") -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


def describe_page(s: Mapping[str, Any], *, planned: Iterable[Mapping[str, Any]] = ()) -> str:
    """`duetime schedules describe`: the whole picture of one schedule.

    ``planned`` are its runs already created and still to come (the API's
    ``next_occurrences`` are the ones not created yet)."""
    policy = policy_lines(s.get("policy") or {})
    lines = [
        f"{shown(s.get('name'))}  ({shown(s.get('id'))})",
        f"  status:   {status_text(s)}",
        f"  version:  {s.get('version')} (schedule created {s.get('created_at')})",
        f"  spec:     {spec_text(s.get('spec') or {})}",
        f"  target:   {target_text(s.get('target') or {})}",
        f"  payload:  {shown(compact_json(s.get('payload') or {}))}",
        f"  policy:   {policy[0]}",
        *(f"            {line}" for line in policy[1:]),
        f"  watch:    {watch_text(s.get('watch'))}",
    ]
    if watch_detail(s.get("watch")):
        lines.append(f"            {watch_detail(s.get('watch'))}")
    recent = s.get("recent_runs")
    lines += ["", "Recent runs"]
    if recent:
        lines.append(_indent(runs_table(recent)))
    elif recent is None:
        lines.append("  (not in this answer; see: duetime runs list " + shown(s.get("id")) + ")")
    else:
        lines.append("  none yet")
    # Created and not started: waiting (scheduled), or queued ahead to be
    # delivered at their instant (admitted). Older versions' have their own section.
    planned = [
        r
        for r in planned
        if r.get("status") in ("planned", "scheduled", "admitted")
        and r.get("version") == s.get("version")
    ]
    if planned:
        lines += ["", "Planned (already created, still to come)"]
        lines.append(
            _indent(
                rows(
                    ["OCCURRENCE", "STATUS", "KIND", "SCHEDULED (LOCAL)"],
                    [
                        [r.get("occurrence_id"), r.get("status"), r.get("kind"), r.get("local")]
                        for r in planned
                    ],
                )
            )
        )
    lines += ["", "Next occurrences" + (" (not created yet)" if planned else "")]
    upcoming = s.get("next_occurrences") or []
    if upcoming:
        lines.append(
            _indent(
                rows(
                    ["LOCAL", "UTC", "VERSION", "NOTE"],
                    [
                        [
                            o.get("local"),
                            o.get("scheduled_at"),
                            o.get("version") or s.get("version"),
                            o.get("dst_note") or "",
                        ]
                        for o in upcoming
                    ],
                )
            )
        )
    else:
        lines.append(f"  none ({status_of(s)})")
    older = s.get("planned_under_older_versions") or []
    if older:
        lines += ["", "Planned under an older version (they keep that version's definition)"]
        lines.append(
            _indent(
                rows(
                    ["OCCURRENCE", "VERSION", "STATUS", "SCHEDULED (LOCAL)"],
                    [
                        [r.get("occurrence_id"), r.get("version"), r.get("status"), r.get("local")]
                        for r in older
                    ],
                )
            )
        )
    return "\n".join(lines)


def deleted_page(
    schedule_id: str,
    deleted_at: str,
    message: str,
    last_version: Mapping[str, Any] | None,
    recent_runs: list[Mapping[str, Any]] | None,
) -> str:
    """`duetime schedules describe` of a deleted schedule: when, what it was (its
    last version, when the API still answers it) and its last runs."""
    name = shown(last_version.get("name")) if last_version else "(deleted schedule)"
    lines = [f"{name}  ({shown(schedule_id)})", f"  status:   deleted at {deleted_at}"]
    if message:
        lines.append(f"            {shown(message)}")
    if last_version:
        lines += [
            f"  version:  {last_version.get('version')} (the last, created "
            f"{last_version.get('created_at')})",
            f"  spec:     {spec_text(last_version.get('spec') or {})}",
            f"  target:   {target_text(last_version.get('target') or {})}",
        ]
    lines += ["", "Recent runs"]
    lines.append(_indent(runs_table(recent_runs)) if recent_runs else "  none")
    sid = shown(schedule_id)
    lines += [
        "",
        "No occurrence will come. Its history stays readable:",
        f"  duetime runs list {sid}",
        f"  duetime schedules versions {sid}",
    ]
    return "\n".join(lines)


def schedules_table(items: Iterable[Mapping[str, Any]]) -> str:
    return rows(
        ["ID", "NAME", "VERSION", "STATE", "SPEC"],
        [
            [
                s.get("id"),
                s.get("name"),
                s.get("version"),
                status_of(s),
                spec_text(s.get("spec") or {}),
            ]
            for s in items
        ],
    )


# --- versions ------------------------------------------------------------------------


def versions_table(items: Iterable[Mapping[str, Any]]) -> str:
    return rows(
        ["VERSION", "CREATED", "CHANGED", "SPEC", "NAME"],
        [
            [
                v.get("version"),
                v.get("created_at"),
                ", ".join(v.get("changed") or []) or ("(first)" if v.get("version") == 1 else "-"),
                spec_text(v.get("spec") or {}),
                v.get("name"),
            ]
            for v in items
        ],
    )


def version_page(v: Mapping[str, Any]) -> str:
    policy = policy_lines(v.get("policy") or {})
    changed = ", ".join(v.get("changed") or []) or "nothing (the first version)"
    return "\n".join(
        [
            f"version:  {v.get('version')} (created {v.get('created_at')})",
            f"changed:  {shown(changed)}",
            f"name:     {shown(v.get('name'))}",
            f"spec:     {spec_text(v.get('spec') or {})}",
            f"target:   {target_text(v.get('target') or {})}",
            f"payload:  {shown(compact_json(v.get('payload') or {}))}",
            f"policy:   {policy[0]}",
            *(f"          {line}" for line in policy[1:]),
        ]
    )


# --- runs ----------------------------------------------------------------------------


def late_text(run: Mapping[str, Any]) -> str:
    late = run.get("late_s")
    return span(late) if late is not None else ""


def runs_table(items: Iterable[Mapping[str, Any]]) -> str:
    return rows(
        ["OCCURRENCE", "STATUS", "KIND", "SCHEDULED (LOCAL)", "LATE", "ATTEMPTS", "REASON"],
        [
            [
                r.get("occurrence_id"),
                r.get("status"),
                r.get("kind") or "",
                r.get("local") or r.get("scheduled_at"),
                late_text(r),
                r.get("attempts"),
                r.get("reason") or "",
            ]
            for r in items
        ],
    )


_RUN_KEYS = [
    "occurrence_id", "schedule_id", "version", "status", "kind", "attempts",
    "scheduled_at", "local", "admitted_at", "started_at", "finished_at", "reason",
]  # fmt: skip


def attempts_table(attempts: Iterable[Mapping[str, Any]]) -> str:
    return rows(
        ["#", "STARTED", "FINISHED", "OUTCOME", "STATUS", "ERROR", "WAIT"],
        [
            [
                a.get("number"),
                a.get("started_at"),
                a.get("finished_at") or "",
                a.get("outcome") or "",
                a.get("status_code") if a.get("status_code") is not None else "",
                a.get("error") or "",
                span(a.get("wait_s")),
            ]
            for a in attempts
        ],
    )


def run_table(r: Mapping[str, Any]) -> str:
    lines = [f"{k + ':':<15}{shown(r.get(k))}" for k in _RUN_KEYS if r.get(k) is not None]
    if r.get("late_s") is not None:
        lines.append(f"{'late:':<15}{late_text(r)} after scheduled_at")
    if r.get("progress") is not None:
        lines.append(f"{'progress:':<15}{shown(compact_json(r['progress']))}")
    if r.get("result") is not None:
        lines.append(f"{'result:':<15}{shown(compact_json(r['result']))}")
    attempts = r.get("attempts_log")
    if attempts:
        lines += ["attempts:", _indent(attempts_table(attempts))]
    return "\n".join(lines)


def follow_line(
    observed_at: str, run: Mapping[str, Any], previous: str | None, *, event: str = "changed"
) -> str:
    """One line of `duetime runs follow`: what changed, when it was seen.

    ``event`` is ``current`` (as it stood when following began), ``new`` or ``changed``.
    """
    status = str(run.get("status"))
    if event == "current":
        change = status
    elif previous is None:
        change = f"new, {status}"
    elif previous == status:
        change = f"{status} again"
    else:
        change = f"{previous} -> {status}"
    parts = [observed_at, shown(run.get("occurrence_id")), change]
    if run.get("kind") and run.get("kind") != "scheduled":
        parts.append(f"kind {shown(run['kind'])}")
    if run.get("attempts"):
        parts.append(f"attempt {run['attempts']}")
    if run.get("late_s") is not None:
        parts.append(f"{late_text(run)} late")
    if run.get("reason"):
        parts.append(shown(run["reason"]))
    return "  ".join(parts)


# --- dead letters --------------------------------------------------------------------


def dead_letters_table(items: Iterable[Mapping[str, Any]]) -> str:
    return rows(
        ["ID", "OCCURRENCE", "SCHEDULE", "DEAD-LETTERED", "RECEIVES", "REASON"],
        [
            [
                d.get("id"),
                d.get("occurrence_id") or "-",
                d.get("schedule_id") or "-",
                d.get("dead_lettered_at"),
                d.get("receive_count"),
                d.get("reason") or "",
            ]
            for d in items
        ],
    )
