"""`duetime import-crontab FILE`: a crontab as jobs and schedules.

Each command line of the crontab becomes a job (its line, run by the
crontab's shell: ``["/bin/sh", "-c", "<the line>"]``, in ``HOME``, with the
environment lines above it) and a schedule with a command target naming that
job (its five fields, in its zone: ``CRON_TZ`` or ``TZ`` lines above it,
else ``--zone``, else this machine's zone).

Without options it only shows what each line becomes, with its next runs.
``--jobs-out FILE`` writes the jobs file (never over an existing file);
``duetime local`` reads it when it starts (``--jobs FILE``, or ``jobs.toml``
in its data directory). ``--apply`` then creates the schedules through the
API at ``--api-url``, as ``duetime schedules create`` does; a schedule that
already runs that job is left alone, so applying twice creates nothing new.

What cron does and duetime cannot is refused, with the line and the reason,
and then nothing is written or created: ``@reboot``, a sixth time field
(seconds or years), an unescaped ``%`` (cron's newline and standard input),
``MAILTO`` (a run keeps its output instead). Exit status: 0, or 1 when a line
was refused (or the API refused a schedule), 2 for bad options.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.targets.jobs import Job, JobsFileError, duration_seconds, jobs_toml, parse_jobs
from cli.client import ApiError
from domain.cron import NICKNAMES, CronExpression
from domain.errors import InvalidSchedule
from domain.spec import parse_dst_policy, parse_spec, slots_after
from domain.timezones import load_zone

DEFAULT_SHELL = "/bin/sh"
PREVIEW_RUNS = 3

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")
# A token that reads as a cron time field rather than a program.
_TIME_FIELD = re.compile(r"^[0-9*][0-9*/,\-]*$")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Entry:
    """One command line of the crontab, as a job and a schedule."""

    line: int
    text: str
    job: Job
    cron: str
    zone: str


@dataclass(frozen=True)
class Refusal:
    line: int
    text: str
    reason: str


@dataclass
class Crontab:
    entries: list[Entry] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)


def local_zone() -> str:
    """This machine's zone name: ``TZ``, else what /etc/localtime points to, else UTC."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        candidates.append(os.readlink("/etc/localtime").split("zoneinfo/", 1)[-1])
    for name in candidates:
        if not name:
            continue
        try:
            load_zone(name)
        except InvalidSchedule:
            continue
        return name
    return "UTC"


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _job_name(command: str, taken: set[str], line: int) -> str:
    """A name from the command's program (``backup.sh``), unique in the file."""
    program = ""
    for word in command.split():
        if _ASSIGNMENT.match(word) or word[0] in "<>&|;(" or word[0].isdigit():
            continue
        program = os.path.basename(word.strip("\"'"))
        break
    base = _NAME_CHARS.sub("-", program).strip("-._")[:48] or f"line-{line}"
    name, number = base, 2
    while name in taken:
        name, number = f"{base}-{number}", number + 1
    taken.add(name)
    return name


def _unescape_percent(command: str) -> str | None:
    """The command with ``\\%`` as ``%``; None when it holds an unescaped ``%``."""
    out, escaped = [], False
    for char in command:
        if escaped:
            out.append(char if char == "%" else "\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "%":
            return None
        else:
            out.append(char)
    if escaped:
        out.append("\\")
    return "".join(out)


def parse_crontab(
    text: str,
    *,
    zone: str,
    directory: Path,
    timeout_s: float,
) -> Crontab:
    """Every line of a crontab, read as cron reads it: entries and refusals."""
    result = Crontab()
    env: dict[str, str] = {}
    shell = DEFAULT_SHELL
    home = directory
    taken: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue

        def refuse(reason: str, number: int = number, line: str = line) -> None:
            result.refusals.append(Refusal(number, line, reason))

        assignment = _ASSIGNMENT.match(line)
        if assignment is not None:
            name, value = assignment[1], _unquote(assignment[2])
            if name in ("CRON_TZ", "TZ"):
                try:
                    load_zone(value)
                except InvalidSchedule:
                    refuse(f"{name}={value}: not a time zone duetime knows (an IANA name)")
                    continue
                zone = value
                if name == "TZ":
                    env[name] = value
            elif name in ("MAILTO", "MAILFROM"):
                if value:
                    refuse(
                        f"{name}: duetime does not mail a job's output; each run keeps its exit "
                        "code, the tail of its output and a log file (delete the line, or set "
                        f'{name}="")'
                    )
            elif name == "SHELL":
                shell = value
                env[name] = value
            else:
                if name == "HOME":
                    home = Path(value)
                env[name] = value
            continue

        if line.startswith("@"):
            nickname, _, command = line.partition(" ")
            nickname = nickname.lower()
            if nickname == "@reboot":
                refuse("@reboot runs at boot, not at a time: start it from your init system")
                continue
            if nickname not in NICKNAMES:
                refuse(f"{nickname} is not a cron nickname ({', '.join(sorted(NICKNAMES))})")
                continue
            expression, command = NICKNAMES[nickname], command.strip()
            if not command:
                refuse("has no command")
                continue
        else:
            parts = line.split(None, 5)
            if len(parts) < 6:
                refuse("needs five time fields and a command")
                continue
            expression, command = " ".join(parts[:5]), parts[5]
            first_word = command.split(None, 1)[0]
            if _TIME_FIELD.match(first_word):
                refuse(
                    f"has a sixth time field ({first_word!r}: seconds or years); duetime's cron "
                    "has five (minute hour day-of-month month day-of-week)"
                )
                continue
        try:
            CronExpression.parse(expression)
        except InvalidSchedule as error:
            refuse(f"{expression}: {error}")
            continue
        shell_line = _unescape_percent(command)
        if shell_line is None:
            refuse(
                "an unescaped % (cron ends the command there and sends the rest as standard "
                "input, which duetime does not); write \\% for a literal %"
            )
            continue
        try:
            job = Job(
                name=_job_name(command, taken, number),
                command=(shell, "-c", shell_line),
                directory=home,
                env=tuple(env.items()),
                timeout_s=timeout_s,
            )
        except ValueError as error:
            refuse(str(error))
            continue
        result.entries.append(Entry(number, line, job, expression, zone))
    return result


def _check_jobs(crontab: Crontab) -> None:
    """Each job as ``duetime local`` will check it (its shell exists, its
    directory too); one that would not pass is refused with its line."""
    for entry in list(crontab.entries):
        table = {
            "command": list(entry.job.command),
            "directory": str(entry.job.directory),
            "env": dict(entry.job.env),
        }
        try:
            parse_jobs({"jobs": {entry.job.name: table}}, base=Path.cwd())
        except JobsFileError as error:
            crontab.entries.remove(entry)
            reason = str(error).split(": ", 1)[-1]
            crontab.refusals.append(Refusal(entry.line, entry.text, reason))


def next_runs(entry: Entry, now: datetime, count: int = PREVIEW_RUNS) -> list[datetime]:
    spec = parse_spec({"cron": entry.cron, "time_zone": entry.zone}, created_at=now)
    zone = load_zone(entry.zone)
    slots = slots_after(spec, parse_dst_policy(), now)
    return [next(slots).scheduled_at.astimezone(zone) for _ in range(count)]


def schedule_body(entry: Entry) -> dict[str, Any]:
    return {
        "name": entry.job.name,
        "spec": {"cron": entry.cron, "time_zone": entry.zone},
        "target": {"type": "command", "job": entry.job.name},
    }


def preview(crontab: Crontab, now: datetime) -> str:
    lines: list[str] = []
    for entry in crontab.entries:
        runs = ", ".join(at.strftime("%Y-%m-%d %H:%M %Z") for at in next_runs(entry, now))
        lines += [
            f"line {entry.line}: {entry.text}",
            f"  job       {entry.job.name}: {json.dumps(list(entry.job.command))}",
            f"            in {entry.job.directory}, time budget {entry.job.timeout_s:g} s",
            f"  schedule  cron {entry.cron!r} in {entry.zone}",
            f"  next      {runs}",
        ]
    for refusal in sorted(crontab.refusals, key=lambda r: r.line):
        lines.append(f"line {refusal.line}: refused: {refusal.reason}")
        lines.append(f"  {refusal.text}")
    summary = f"{len(crontab.entries)} line(s) to import"
    if crontab.refusals:
        summary += f", {len(crontab.refusals)} refused: nothing is written or created"
    lines.append(summary)
    return "\n".join(lines)


def add_parser(subparsers: Any) -> None:
    from cli.api_calls import common_options

    parser = subparsers.add_parser(
        "import-crontab",
        help="turn a crontab into jobs and schedules (a preview unless --jobs-out/--apply)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common_options()],
    )
    parser.add_argument(
        "file", type=Path, help="a crontab, as `crontab -l` prints it (- for stdin)"
    )
    parser.add_argument(
        "--zone", default=None, help="the zone of lines without CRON_TZ (default: this machine's)"
    )
    parser.add_argument(
        "--jobs-out", type=Path, default=None, metavar="FILE", help="write the jobs file here"
    )
    parser.add_argument(
        "--apply", action="store_true", help="create the schedules through the API at --api-url"
    )
    parser.add_argument(
        "--timeout", default="1h", help="each job's time budget (cron has none; default 1h)"
    )
    parser.add_argument(
        "--directory",
        type=Path,
        default=None,
        help="where the jobs run unless the crontab sets HOME (default: your home directory)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    def fail(message: str) -> int:
        print(f"duetime import-crontab: {message}", file=sys.stderr)
        return 2

    zone = args.zone or local_zone()
    try:
        load_zone(zone, "--zone")
    except InvalidSchedule as error:
        return fail(str(error))
    try:
        timeout_s = duration_seconds(args.timeout)
    except ValueError as error:
        return fail(f"--timeout: {error}")
    if not 1 <= timeout_s <= 7 * 86400:
        return fail("--timeout: must be from 1s to 7d")
    try:
        text = sys.stdin.read() if str(args.file) == "-" else args.file.read_text()
    except (OSError, UnicodeDecodeError) as error:
        return fail(f"{args.file}: cannot be read: {error}")
    if args.jobs_out is not None and args.jobs_out.exists():
        return fail(
            f"--jobs-out {args.jobs_out}: exists; choose a new file (it is never overwritten)"
        )

    directory = (args.directory or Path.home()).resolve()
    crontab = parse_crontab(text, zone=zone, directory=directory, timeout_s=timeout_s)
    _check_jobs(crontab)
    now = datetime.now(UTC)
    if args.json:
        print(json.dumps(_as_json(crontab, now), indent=2, ensure_ascii=False))
    else:
        print(preview(crontab, now))
    if crontab.refusals:
        return 1
    if args.jobs_out is not None:
        comments = {e.job.name: f"line {e.line} of {args.file}: {e.text}" for e in crontab.entries}
        args.jobs_out.write_text(jobs_toml([e.job for e in crontab.entries], comments=comments))
        print(f"wrote {len(crontab.entries)} job(s) to {args.jobs_out}", file=sys.stderr)
    if args.apply:
        return _apply(args, crontab)
    return 0


def _apply(args: argparse.Namespace, crontab: Crontab) -> int:
    from cli import api_calls

    client = api_calls.client_for(args)
    existing = _scheduled_jobs(client)
    out = sys.stderr if args.json else sys.stdout  # keep --json's stdout one document
    code = 0
    for entry in crontab.entries:
        if entry.job.name in existing:
            known = existing[entry.job.name]
            print(f"line {entry.line}: {entry.job.name}: already scheduled ({known})", file=out)
            continue
        try:
            answer = client.request("POST", "/schedules", schedule_body(entry))
        except ApiError as error:
            code = 1
            hint = ""
            if error.field == "target.job" or error.field == "target.type":
                hint = (
                    " (start `duetime local` again with this jobs file: it reads jobs when "
                    "it starts)"
                )
            print(f"line {entry.line}: {entry.job.name}: refused: {error}{hint}", file=sys.stderr)
            continue
        print(f"line {entry.line}: {entry.job.name}: created {answer.body['id']}", file=out)
    return code


def _scheduled_jobs(client: Any) -> dict[str, str]:
    """Job name -> the id of a schedule whose target already runs it."""
    found: dict[str, str] = {}
    token = None
    while True:
        answer = client.request("GET", "/schedules", query={"limit": 100, "next_token": token})
        for schedule in answer.body.get("schedules", []):
            target = schedule.get("target") or {}
            if target.get("type") == "command" and target.get("job"):
                found.setdefault(target["job"], schedule["id"])
        token = answer.body.get("next_token")
        if not token:
            return found


def _as_json(crontab: Crontab, now: datetime) -> dict[str, Any]:
    return {
        "entries": [
            {
                "line": entry.line,
                "job": {
                    "name": entry.job.name,
                    "command": list(entry.job.command),
                    "directory": str(entry.job.directory),
                    "env": dict(entry.job.env),
                    "timeout_s": entry.job.timeout_s,
                },
                "schedule": schedule_body(entry),
                "next": [at.isoformat() for at in next_runs(entry, now)],
            }
            for entry in crontab.entries
        ],
        "refused": [
            {"line": r.line, "text": r.text, "reason": r.reason}
            for r in sorted(crontab.refusals, key=lambda r: r.line)
        ],
    }
