"""A command target names a job of the machine's jobs file: accepted where one is
loaded (the local stack with ``--jobs``), refused with 422 everywhere else, and
the API never carries a command line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from bootstrap.settings import Settings
from domain.errors import InvalidSchedule
from handlers.api import SQLITE_FILE, build_services, sqlite_targets
from service.schedules import NO_JOBS_FILE
from tests.conftest import FakeClock, definition
from tests.handlers.test_api import REPORT, Api

NIGHTLY = {**REPORT, "target": {"type": "command", "job": "nightly-report"}}


def _api(tmp_path: Path, clock: FakeClock, jobs: frozenset[str] | None) -> Iterator[Api]:
    secrets = InMemorySecretStore()
    services = build_services(
        Settings(),
        data_dir=tmp_path,
        clock=clock,
        secrets=secrets,
        target_support=sqlite_targets(jobs),
    )
    yield Api(services, tmp_path / SQLITE_FILE, clock, secrets)
    store = services.schedules.store
    assert isinstance(store, SqliteStore)
    store.close()


@pytest.fixture
def with_jobs(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    """The local stack's API with a jobs file of two jobs."""
    yield from _api(tmp_path, clock, frozenset({"nightly-report", "backup"}))


@pytest.fixture
def without_jobs(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    yield from _api(tmp_path, clock, None)


def test_a_schedule_names_a_job_of_the_jobs_file(with_jobs: Api) -> None:
    created = with_jobs.create(NIGHTLY).body
    assert created["target"]["type"] == "command"
    assert created["target"]["job"] == "nightly-report"
    shown = with_jobs.call("GET", f"/schedules/{created['id']}").body
    assert shown["target"]["job"] == "nightly-report"


def test_an_unknown_job_is_refused_naming_target_job_and_nothing_is_stored(
    with_jobs: Api,
) -> None:
    before = with_jobs.snapshot()
    answer = with_jobs.call(
        "POST", "/schedules", {**REPORT, "target": {"type": "command", "job": "nightly"}}
    )
    assert answer.status == 422
    assert answer.error["field"] == "target.job"
    assert answer.error["message"] == (
        "target.job: no job 'nightly' in this machine's jobs file (it has: backup, nightly-report)"
    )
    assert with_jobs.snapshot() == before


def test_an_edit_to_an_unknown_job_is_refused_and_the_schedule_keeps_its_job(
    with_jobs: Api,
) -> None:
    created = with_jobs.create(NIGHTLY).body
    before = with_jobs.snapshot()
    answer = with_jobs.call(
        "PUT",
        f"/schedules/{created['id']}",
        {**REPORT, "target": {"type": "command", "job": "gone"}},
        headers={"If-Match": '"1"'},
    )
    assert answer.status == 422
    assert answer.error["field"] == "target.job"
    assert with_jobs.snapshot() == before


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"type": "command", "job": "nightly-report", "command": ["rm", "-rf", "/"]}, "command"),
        ({"type": "command", "job": "nightly-report", "argv": ["sh"]}, "argv"),
        ({"type": "command", "job": "../etc/passwd"}, "target.job"),
        ({"type": "command"}, "target.job"),
    ],
)
def test_the_api_carries_no_command_line(
    with_jobs: Api, target: dict[str, Any], field: str
) -> None:
    before = with_jobs.snapshot()
    answer = with_jobs.call("POST", "/schedules", {**REPORT, "target": target})
    assert answer.status == 422
    assert field in answer.error["field"]
    assert with_jobs.snapshot() == before


def test_without_a_jobs_file_a_command_target_is_refused(without_jobs: Api) -> None:
    before = without_jobs.snapshot()
    answer = without_jobs.call("POST", "/schedules", NIGHTLY)
    assert answer.status == 422
    assert answer.error["field"] == "target.type"
    assert answer.error["message"] == f"target.type: {NO_JOBS_FILE}"
    assert without_jobs.snapshot() == before


def test_a_deployment_on_aws_refuses_a_command_target(clock: FakeClock) -> None:
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "commands")
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
        )
        services = build_services(settings, clock=clock, secrets=InMemorySecretStore())
        with pytest.raises(InvalidSchedule) as refused:
            services.schedules.create(definition(NIGHTLY))
        assert refused.value.field == "target.type"
        assert str(refused.value) == f"target.type: {NO_JOBS_FILE}"
