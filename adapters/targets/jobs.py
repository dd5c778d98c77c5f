"""The jobs file: the commands this machine's owner lets schedules run.

A command target names a job (``{"type": "command", "job": "nightly-report"}``);
what the job runs is written here, in a TOML file that ``duetime local``
reads when it starts (``--jobs FILE``, or ``jobs.toml`` in the data
directory). The HTTP API never carries a command line and cannot add a job:
whoever can write this file can already run commands on the machine.

    [jobs.nightly-report]
    command = ["/usr/local/bin/report", "--since", "yesterday"]
    directory = "/srv/reports"      # default: the jobs file's directory
    timeout = "30m"                 # the time budget (default 1h)
    kill_grace = "10s"              # SIGTERM, then SIGKILL this much later
    retry_exit_codes = [75]         # retried with the schedule's backoff
    env = { PGHOST = "db.internal" }

Rules the checks follow, each refusal naming the job and the field
(``jobs.nightly-report.command: ...``):
- ``command`` is a list of strings (an argv), never one string: a shell line
  is written as ``["sh", "-c", "..."]``, so that a shell is the owner's
  choice; its program must exist (a path, or a name found on ``PATH``);
- ``directory`` exists; a relative one is read from the jobs file's directory;
- ``timeout`` and ``kill_grace`` are ``"90s"``, ``"30m"``, ``"2h"``, an ISO
  8601 duration (``"PT30M"``) or a number of seconds; the budget is 1 s to 7 days;
- ``env`` values are strings, and names are not ``DUETIME_*`` (duetime sets
  those: the run's identity);
- ``retry_exit_codes`` are 1-255 and not 0 or 124; 75 (EX_TEMPFAIL) is always
  retried.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from domain.errors import DuetimeError
from domain.targets import check_job_name

JOBS_FILE_NAME: Final = "jobs.toml"
DEFAULT_TIMEOUT_S: Final = 3600.0
DEFAULT_KILL_GRACE_S: Final = 10.0
MAX_TIMEOUT_S: Final = 7 * 86400.0
MAX_KILL_GRACE_S: Final = 600.0
MAX_JOBS: Final = 1000
EX_TEMPFAIL: Final = 75
EX_TIMEOUT: Final = 124  # as GNU timeout reports a command it stopped
ENV_PREFIX: Final = "DUETIME_"

_FIELDS: Final = frozenset(
    {"command", "directory", "timeout", "kill_grace", "retry_exit_codes", "env"}
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_SHORT_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


class JobsFileError(DuetimeError):
    """The jobs file cannot be used; the message names the file, job and field."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


@dataclass(frozen=True)
class Job:
    """One job: what runs, where, with what, for how long."""

    name: str
    command: tuple[str, ...]
    directory: Path
    env: tuple[tuple[str, str], ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    kill_grace_s: float = DEFAULT_KILL_GRACE_S
    retry_exit_codes: frozenset[int] = field(default_factory=lambda: frozenset({EX_TEMPFAIL}))

    def __post_init__(self) -> None:
        check_job_name(self.name, "job")
        if not self.command or not all(isinstance(arg, str) for arg in self.command):
            raise ValueError("command is a non-empty tuple of strings")
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:
            raise ValueError(f"timeout_s must be in (0, {MAX_TIMEOUT_S:g}]")
        if not 0 <= self.kill_grace_s <= MAX_KILL_GRACE_S:
            raise ValueError(f"kill_grace_s must be in [0, {MAX_KILL_GRACE_S:g}]")


@dataclass(frozen=True)
class Jobs:
    """The jobs of one jobs file, by name."""

    source: Path | None
    by_name: Mapping[str, Job]

    def __iter__(self) -> Iterator[Job]:
        return iter(self.by_name.values())

    def __len__(self) -> int:
        return len(self.by_name)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.by_name)

    def get(self, name: str) -> Job | None:
        return self.by_name.get(name)


def find_jobs(path: Path | None, data_dir: Path) -> Jobs | None:
    """The jobs of ``path`` or, without one, of ``jobs.toml`` in the data
    directory when there is one; None when there is no jobs file."""
    if path is None:
        path = data_dir / JOBS_FILE_NAME
        if not path.exists():
            return None
    return load_jobs(Path(path))


def load_jobs(path: Path, *, environ: Mapping[str, str] | None = None) -> Jobs:
    """The jobs of the file at ``path``, every one checked, or ``JobsFileError``."""
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise JobsFileError(where, f"cannot be read: {error.strerror or error}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise JobsFileError(where, "is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise JobsFileError(where, f"is not valid TOML: {error}") from None
    return parse_jobs(data, base=path.resolve().parent, source=path, environ=environ)


def parse_jobs(
    data: Mapping[str, Any],
    *,
    base: Path,
    source: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Jobs:
    """The jobs a decoded jobs file describes; relative directories are read from ``base``."""
    where = str(source) if source is not None else "jobs file"
    unknown = sorted(str(key) for key in data if key != "jobs")
    if unknown:
        raise JobsFileError(
            where, f"{unknown[0]}: is not a jobs file key (only [jobs.NAME] tables)"
        )
    tables = data.get("jobs", {})
    if not isinstance(tables, Mapping):
        raise JobsFileError(where, "jobs: must be tables such as [jobs.nightly-report]")
    if len(tables) > MAX_JOBS:
        raise JobsFileError(where, f"jobs: at most {MAX_JOBS} jobs")
    path_env = (os.environ if environ is None else environ).get("PATH", os.defpath)
    jobs = {
        str(name): _parse_job(str(name), table, base, where, path_env)
        for name, table in tables.items()
    }
    return Jobs(source, jobs)


def _parse_job(name: str, table: object, base: Path, where: str, path_env: str) -> Job:
    prefix = f"jobs.{name}"

    def refuse(key: str, message: str) -> JobsFileError:
        return JobsFileError(where, f"{prefix}.{key}: {message}" if key else f"{prefix}: {message}")

    try:
        check_job_name(name, prefix)
    except DuetimeError:
        raise refuse(
            "",
            "a job name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        ) from None
    if not isinstance(table, Mapping):
        raise refuse("", "must be a table ([jobs.NAME])")
    unknown = sorted(str(key) for key in table if key not in _FIELDS)
    if unknown:
        raise refuse(unknown[0], f"is not a job field (fields: {', '.join(sorted(_FIELDS))})")

    command = table.get("command")
    if command is None:
        raise refuse("command", 'is required: a list such as ["/usr/bin/pg_dump", "mydb"]')
    if isinstance(command, str):
        raise refuse(
            "command",
            "must be a list of strings (the program and its arguments), not one string; "
            f'for a shell line write ["sh", "-c", {json.dumps(command)}]',
        )
    if not isinstance(command, list) or not command:
        raise refuse("command", "must be a non-empty list of strings")
    if not all(isinstance(arg, str) for arg in command):
        raise refuse("command", "every item must be a string")
    if any("\0" in arg for arg in command) or not command[0]:
        raise refuse("command", "must not hold NUL characters or an empty program")

    raw_directory = table.get("directory")
    if raw_directory is None:
        directory = base
    elif not isinstance(raw_directory, str) or not raw_directory:
        raise refuse("directory", "must be a path")
    else:
        directory = (base / Path(raw_directory).expanduser()).resolve()
    if not directory.is_dir():
        raise refuse("directory", f"{directory} is not a directory")

    env = table.get("env", {})
    if not isinstance(env, Mapping):
        raise refuse("env", 'must be a table of names to strings: env = { NAME = "value" }')
    pairs: list[tuple[str, str]] = []
    for key, value in env.items():
        if not _ENV_NAME.match(str(key)):
            raise refuse(f"env.{key}", "is not an environment variable name")
        if str(key).upper().startswith(ENV_PREFIX):
            raise refuse(
                f"env.{key}", f"{ENV_PREFIX}* names are set by duetime (the run's identity)"
            )
        if not isinstance(value, str) or "\0" in value:
            raise refuse(f"env.{key}", 'must be a string (quote numbers: "5432")')
        pairs.append((str(key), value))

    program = command[0]
    job_path = dict(pairs).get("PATH", path_env)
    if os.sep in program:
        resolved = (directory / program) if not os.path.isabs(program) else Path(program)
        if not (resolved.is_file() and os.access(resolved, os.X_OK)):
            raise refuse("command", f"{program!r} is not an executable file")
    elif shutil.which(program, path=job_path) is None:
        raise refuse("command", f"{program!r} is not found on PATH ({job_path})")

    timeout_s = _seconds(table.get("timeout"), DEFAULT_TIMEOUT_S, refuse, "timeout")
    if not 1 <= timeout_s <= MAX_TIMEOUT_S:
        raise refuse("timeout", "must be from 1s to 7d")
    grace_s = _seconds(table.get("kill_grace"), DEFAULT_KILL_GRACE_S, refuse, "kill_grace")
    if not 0 <= grace_s <= MAX_KILL_GRACE_S:
        raise refuse("kill_grace", "must be from 0s to 10m")

    codes = table.get("retry_exit_codes", [EX_TEMPFAIL])
    if not isinstance(codes, list) or not all(
        isinstance(code, int) and not isinstance(code, bool) for code in codes
    ):
        raise refuse("retry_exit_codes", "must be a list of whole numbers such as [75]")
    for code in codes:
        if code in (0, EX_TIMEOUT) or not 1 <= code <= 255:
            raise refuse(
                "retry_exit_codes",
                f"{code}: exit codes are 1-255; 0 is success and 124 a timeout (always retried)",
            )
    return Job(
        name=name,
        command=tuple(command),
        directory=directory,
        env=tuple(pairs),
        timeout_s=timeout_s,
        kill_grace_s=grace_s,
        retry_exit_codes=frozenset(codes) | {EX_TEMPFAIL},
    )


def _seconds(value: object, default: float, refuse: Any, key: str) -> float:
    if value is None:
        return default
    try:
        return duration_seconds(value)
    except ValueError as error:
        raise refuse(key, str(error)) from None


def duration_seconds(value: object) -> float:
    """``"90s"``, ``"30m"``, ``"2h"``, ``"1d"``, ``"PT30M"`` or a number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        short = _SHORT_DURATION.match(value)
        if short is not None:
            return float(short[1]) * _UNITS[short[2]]
        iso = _ISO_DURATION.match(value.strip().upper())
        if iso is not None and value.strip().upper() not in ("P", "PT"):
            parts = {k: float(v or 0) for k, v in iso.groupdict().items()}
            return parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]
    raise ValueError(f'{value!r} is not a duration such as "90s", "30m", "2h" or "PT30M"')


# --- writing ------------------------------------------------------------------------------


def toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's (\\", \\\\, \\n, \\uXXXX ...)."""
    return json.dumps(text, ensure_ascii=False)


def jobs_toml(jobs: list[Job], *, comments: Mapping[str, str] | None = None) -> str:
    """A jobs file holding ``jobs``; ``load_jobs`` reads it back. ``comments``
    puts a comment line above a job (by name)."""
    lines: list[str] = []
    for job in jobs:
        if lines:
            lines.append("")
        note = (comments or {}).get(job.name)
        if note:
            lines += [f"# {line}" for line in note.splitlines()]
        lines.append(f"[jobs.{toml_string(job.name)}]")
        lines.append("command = [" + ", ".join(toml_string(arg) for arg in job.command) + "]")
        lines.append(f"directory = {toml_string(str(job.directory))}")
        lines.append(f"timeout = {toml_string(_duration_text(job.timeout_s))}")
        if job.kill_grace_s != DEFAULT_KILL_GRACE_S:
            lines.append(f"kill_grace = {toml_string(_duration_text(job.kill_grace_s))}")
        extra = sorted(job.retry_exit_codes - {EX_TEMPFAIL})
        if extra:
            lines.append(f"retry_exit_codes = {[EX_TEMPFAIL, *extra]}")
        if job.env:
            lines.append(
                "env = { "
                + ", ".join(f"{toml_string(k)} = {toml_string(v)}" for k, v in job.env)
                + " }"
            )
    return "\n".join(lines) + "\n"


def _duration_text(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
