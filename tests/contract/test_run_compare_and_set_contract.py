"""``RunStore.compare_and_set``: "write this run if the record is still that
one", on every run store (the fixtures of tests/unit/test_runs_store.py).
The domain's transitions make the run after; the store only checks the
occurrence id and the revision."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

import pytest

from domain import transitions as t
from domain.run import Run, RunStatus
from service.run_ports import RunStore
from tests.conftest import FakeClock
from tests.unit.test_runs_store import admitted_run, backend, put, runs

__all__ = ["backend", "put", "runs"]  # fixtures used by name


def started(runs: RunStore, run: Run, clock: FakeClock) -> Run:
    after = t.start_attempt(
        run, now=clock.now(), lease_until=clock.now() + timedelta(seconds=60), run_token_hash="h"
    )
    assert runs.compare_and_set(run, after)
    return after


def test_compare_and_set_writes_the_run_after_when_the_record_is_the_run_before(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    after = started(runs, run, clock)
    assert runs.get_run(run.occurrence_id) == after
    assert after.revision == 1


def test_compare_and_set_refuses_a_stale_run_and_writes_nothing(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    """Two workers read one run; the first to write wins, the second's write
    (from the same revision) is refused."""
    run = admitted_run(put, clock)
    first = started(runs, run, clock)
    second = t.start_attempt(run, now=clock.now(), lease_until=clock.now(), run_token_hash="x")
    assert runs.compare_and_set(run, second) is False
    assert runs.get_run(run.occurrence_id) == first


def test_compare_and_set_carries_a_run_through_every_state_and_back(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    steps = [
        lambda r: t.start_attempt(
            r, now=clock.now(), lease_until=clock.now() + timedelta(seconds=9), run_token_hash="h"
        ),
        lambda r: t.record_retry(r, attempt=1, now=clock.now(), outcome="transient", error="503"),
        lambda r: t.start_attempt(
            r, now=clock.now(), lease_until=clock.now() + timedelta(seconds=9), run_token_hash="h"
        ),
        lambda r: t.mark_accepted(
            r, attempt=2, now=clock.now(), deadline=clock.now() + timedelta(hours=1), result=None
        ),
        lambda r: t.report_progress(r, run_token_hash="h", progress={"rows": 1}),
        lambda r: t.complete(
            r, run_token_hash="h", succeeded=False, now=clock.now(), result=None, error="no"
        ),
        lambda r: t.retry(r, now=clock.now(), bucket=7, reason="retried on request"),
    ]
    for step in steps:
        clock.advance(1)
        after = step(run)
        assert runs.compare_and_set(run, after)
        assert runs.get_run(run.occurrence_id) == after  # every changed field is stored
        run = after
    assert run.status is RunStatus.ADMITTED and run.pending and run.bucket == 7
    assert run.revision == len(steps)


def test_compare_and_set_with_nothing_changed_still_checks_the_revision(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    assert runs.compare_and_set(run, run) is True
    after = started(runs, run, clock)
    assert runs.compare_and_set(run, run) is False
    assert runs.get_run(run.occurrence_id) == after


def test_compare_and_set_of_a_run_not_stored_writes_nothing(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(lambda _: None, clock)  # never put
    after = t.start_attempt(run, now=clock.now(), lease_until=clock.now(), run_token_hash=None)
    assert runs.compare_and_set(run, after) is False
    assert runs.get_run(run.occurrence_id) is None


def test_compare_and_set_refuses_to_change_a_runs_identity(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    run = admitted_run(put, clock)
    with pytest.raises(ValueError, match="occurrence ids differ"):
        runs.compare_and_set(run, replace(run, occurrence_id="sch_other.v1.20261201T090000Z"))
    with pytest.raises(ValueError, match="does not change a run's version"):
        runs.compare_and_set(run, replace(run, version=2, revision=1))
    assert runs.get_run(run.occurrence_id) == run


def test_a_transition_that_loses_a_race_reads_again_and_applies_its_guard(
    runs: RunStore, put: Callable[[Run], None], clock: FakeClock
) -> None:
    """A heartbeat moved the lease after the worker read its run: the
    worker's finish, from the run it read, loses the race, reads the run
    again and still ends the attempt (the guard holds on what is stored)."""
    run = admitted_run(put, clock)
    mine = started(runs, run, clock)
    assert runs.extend_lease(
        run.occurrence_id, attempt=1, until=clock.now() + timedelta(seconds=120)
    )
    ended = runs.finish(
        run.occurrence_id, attempt=1, status=RunStatus.SUCCEEDED, now=clock.now(), seen=mine
    )
    assert ended is not None and ended.status is RunStatus.SUCCEEDED
    assert ended.revision == 3
    assert runs.get_run(run.occurrence_id) == ended
