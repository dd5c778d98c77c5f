"""The jobs file: read once at start, every mistake refused naming the job and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.targets.jobs import (
    DEFAULT_KILL_GRACE_S,
    DEFAULT_TIMEOUT_S,
    Job,
    JobsFileError,
    jobs_toml,
    load_jobs,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "jobs.toml"
    path.write_text(text)
    return path


def test_a_job_with_every_field(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    path = write(
        tmp_path,
        """
[jobs.nightly-report]
command = ["sh", "-c", "echo hi"]
directory = "reports"
timeout = "30m"
kill_grace = "5s"
retry_exit_codes = [75, 24]
env = { PGHOST = "db.internal", PGPORT = "5432" }

[jobs.backup]
command = ["true"]
""",
    )
    jobs = load_jobs(path)
    assert jobs.names == {"nightly-report", "backup"}
    nightly = jobs.get("nightly-report")
    assert nightly == Job(
        name="nightly-report",
        command=("sh", "-c", "echo hi"),
        directory=(tmp_path / "reports").resolve(),
        env=(("PGHOST", "db.internal"), ("PGPORT", "5432")),
        timeout_s=1800.0,
        kill_grace_s=5.0,
        retry_exit_codes=frozenset({75, 24}),
    )
    backup = jobs.get("backup")
    assert backup is not None
    assert backup.directory == tmp_path.resolve()  # the jobs file's directory
    assert (backup.timeout_s, backup.kill_grace_s) == (DEFAULT_TIMEOUT_S, DEFAULT_KILL_GRACE_S)
    assert backup.retry_exit_codes == {75}


@pytest.mark.parametrize("timeout", ['"90s"', '"2h"', '"PT1H30M"', "45", "2.5"])
def test_durations_in_several_spellings(tmp_path: Path, timeout: str) -> None:
    path = write(tmp_path, f'[jobs.a]\ncommand = ["true"]\ntimeout = {timeout}\n')
    job = load_jobs(path).get("a")
    assert job is not None
    assert (
        job.timeout_s
        == {'"90s"': 90, '"2h"': 7200, '"PT1H30M"': 5400, "45": 45, "2.5": 2.5}[timeout]
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[jobs.a]\ncommand = "pg_dump mydb"\n',
            "jobs.a.command: must be a list of strings (the program and its arguments), not "
            'one string; for a shell line write ["sh", "-c", "pg_dump mydb"]',
        ),
        ("[jobs.a]\ntimeout = 5\n", "jobs.a.command: is required"),
        ("[jobs.a]\ncommand = []\n", "jobs.a.command: must be a non-empty list of strings"),
        ('[jobs.a]\ncommand = ["true", 3]\n', "jobs.a.command: every item must be a string"),
        (
            '[jobs.a]\ncommand = ["no-such-program-here"]\n',
            "jobs.a.command: 'no-such-program-here' is not found on PATH",
        ),
        (
            '[jobs.a]\ncommand = ["/no/such/file"]\n',
            "jobs.a.command: '/no/such/file' is not an executable file",
        ),
        (
            '[jobs.a]\ncommand = ["true"]\ndirectory = "missing"\n',
            "jobs.a.directory: ",
        ),
        (
            '[jobs.a]\ncommand = ["true"]\ntimeout = "soon"\n',
            "jobs.a.timeout: 'soon' is not a duration",
        ),
        ('[jobs.a]\ncommand = ["true"]\ntimeout = "0s"\n', "jobs.a.timeout: must be from 1s"),
        ('[jobs.a]\ncommand = ["true"]\ntimeout = "8d"\n', "jobs.a.timeout: must be from 1s"),
        (
            '[jobs.a]\ncommand = ["true"]\nkill_grace = "1h"\n',
            "jobs.a.kill_grace: must be from 0s to 10m",
        ),
        (
            '[jobs.a]\ncommand = ["true"]\nretry_exit_codes = [0]\n',
            "jobs.a.retry_exit_codes: 0: exit codes are 1-255",
        ),
        (
            '[jobs.a]\ncommand = ["true"]\nretry_exit_codes = "75"\n',
            "jobs.a.retry_exit_codes: must be a list of whole numbers",
        ),
        (
            '[jobs.a]\ncommand = ["true"]\nenv = { DUETIME_ATTEMPT = "1" }\n',
            "jobs.a.env.DUETIME_ATTEMPT: DUETIME_* names are set by duetime",
        ),
        (
            '[jobs.a]\ncommand = ["true"]\nenv = { PORT = 5432 }\n',
            "jobs.a.env.PORT: must be a string",
        ),
        ('[jobs.a]\ncommand = ["true"]\nshell = "bash"\n', "jobs.a.shell: is not a job field"),
        ('[jobs."../etc"]\ncommand = ["true"]\n', "jobs.../etc: a job name is 1-64"),
        ('[job.a]\ncommand = ["true"]\n', "job: is not a jobs file key"),
        ("[jobs.a\n", "is not valid TOML"),
    ],
)
def test_a_mistake_is_refused_naming_the_job_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(JobsFileError) as refused:
        load_jobs(path)
    assert message in str(refused.value)
    assert str(refused.value).startswith(f"{path}: ")


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(JobsFileError, match="cannot be read"):
        load_jobs(tmp_path / "nope.toml")


def test_a_written_jobs_file_reads_back(tmp_path: Path) -> None:
    job = Job(
        name="backup.db",
        command=("/bin/sh", "-c", 'pg_dump "my db" > /tmp/x\n# "quoted" \\ tab\t'),
        directory=tmp_path,
        env=(("PATH", "/usr/bin:/bin"), ("MSG", 'a "b" \\ c')),
        timeout_s=5400,
        retry_exit_codes=frozenset({75, 24}),
    )
    path = write(tmp_path, jobs_toml([job], comments={"backup.db": "line 3 of crontab"}))
    assert path.read_text().startswith("# line 3 of crontab\n")
    assert load_jobs(path).get("backup.db") == job


def test_the_local_stack_finds_jobs_toml_in_its_data_directory(tmp_path: Path) -> None:
    from cli.local import LocalStack
    from cli.main import build_parser

    write(tmp_path, '[jobs.a]\ncommand = ["true"]\n')
    stack = LocalStack(build_parser().parse_args(["local", "--data-dir", str(tmp_path)]))
    stack._load_jobs()
    assert stack.jobs is not None and stack.jobs.names == {"a"}
    assert "jobs:     1 from " in stack.banner()


def test_the_emulator_stack_refuses_a_jobs_file(tmp_path: Path) -> None:
    from cli.local import CannotStart, LocalStack
    from cli.main import build_parser

    path = write(tmp_path, '[jobs.a]\ncommand = ["true"]\n')
    argv = ["local", "--store", "emulator", "--data-dir", str(tmp_path), "--jobs", str(path)]
    stack = LocalStack(build_parser().parse_args(argv))
    with pytest.raises(CannotStart, match="command targets run over the SQLite store only"):
        stack._load_jobs()
