"""Short runs of each simulator scenario, once per session, shared by the tests.

The templates are synthesized once (and kept in build/sim between sessions,
keyed by a hash of the infra sources and the asset). Each scenario runs
shortened: the tick's passes are thinned (``tick_interval_s``) and the
simulated span is minutes, not days; docs/simulator.md says how to run them
in full.
"""

from __future__ import annotations

import copy
import os
import warnings
from typing import Any

import pytest

from sim.synth import with_surge_min

DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}


@pytest.fixture(scope="session")
def templates() -> dict[str, dict[str, Any]]:
    from sim.synth import synthesize

    return synthesize()


def _run(name: str, templates: dict[str, dict[str, Any]], **options: Any) -> dict[str, Any]:
    from sim.scenario_blocks import Options
    from sim.scenarios import SCENARIOS

    # The run sets the functions' variables and the simulator's region; the tests after
    # it see the environment as it was.
    saved = dict(os.environ)
    os.environ.update(DUMMY_AWS_ENV)
    os.environ["AWS_DEFAULT_REGION"] = os.environ["AWS_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No application metrics to publish")
            return SCENARIOS[name](templates, Options(**options))
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def idle(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """20 idle minutes, sampled every 5 minutes, one tick pass per invocation.

    Without at-least-once invocation: the checks of flat growth compare the requests
    of each window, and a tick delivered twice adds a pass's requests to one of them
    (tests/sim/test_adversities.py shows the duplicates)."""
    from sim.adversity import without

    return _run(
        "idle-week",
        templates,
        hours=1 / 3,
        tick_interval_s=50,
        adversities=without(["at-least-once"]),
    )


@pytest.fixture(scope="session")
def faults(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The whole faults timeline (22 minutes), two tick passes per invocation."""
    return _run("faults", templates, tick_interval_s=25)


@pytest.fixture(scope="session")
def two_stacks(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """21 minutes; the second stack is stopped after 5 (its watchdog's silence takes
    three 5-minute periods to be an alarm)."""
    return _run("two-stacks", templates, hours=21 / 60, tick_interval_s=50)


@pytest.fixture(scope="session")
def mixed(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """10 schedules for 6 minutes and 10 seconds, ten tick passes per invocation.

    The tick that runs at 6:00 plans too, and its requests take simulated time (CPU
    and round trips): the extra 10 s let it end inside the run."""
    return _run("mixed-day", templates, hours=(360 + 10) / 3600, scale=0.01, tick_interval_s=5)


@pytest.fixture(scope="session")
def burst(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """30 occurrences due at one instant, 2 minutes after it."""
    return _run("burst", templates, count=30, hours=200 / 3600, tick_interval_s=25)


@pytest.fixture(scope="session")
def burst_one_worker(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A burst of 20 with the worker's reserved concurrency set to 1 in the template."""
    changed = copy.deepcopy(templates)
    for resource in changed["Duetime"]["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Function" and resource["Properties"][
            "Handler"
        ].endswith("worker.handler"):
            resource["Properties"]["ReservedConcurrentExecutions"] = 1
    return _run("burst", changed, count=20, hours=200 / 3600, tick_interval_s=25)


@pytest.fixture(scope="session")
def burst_surge(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A burst of 100 in a stack whose surges start at 20 intents a second: seven drains."""
    return _run(
        "burst", with_surge_min(templates, 20), count=100, hours=200 / 3600, tick_interval_s=25
    )


@pytest.fixture(scope="session")
def burst_no_surge(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The same burst of 100 with no surge (its threshold above the burst)."""
    return _run(
        "burst", with_surge_min(templates, 1000), count=100, hours=200 / 3600, tick_interval_s=25
    )


@pytest.fixture(scope="session")
def burst_tick_surge(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A burst of 100 created 200 s before its instant, beyond the lookahead, so the
    tick plans it (sending at fractions of a second), with surges from 20 a second."""
    return _run(
        "burst",
        with_surge_min(templates, 20),
        count=100,
        ahead_s=200.0,
        hours=320 / 3600,
        tick_interval_s=25,
    )


@pytest.fixture(scope="session")
def burst_hourly(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Five hourly crons created 200 s before their first instant, in a stack whose
    crowds on the chain start at 5 (``surgeMin``; the tick counts no second under 50
    in the ledger, so no surge starts): the tick plans the first early (seeds), and
    the second, an hour later, early from the chain."""
    return _run(
        "burst",
        with_surge_min(templates, 5),
        count=5,
        ahead_s=200.0,
        hourly=True,
        tick_interval_s=50,
    )


@pytest.fixture(scope="session")
def alerts(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """22 minutes: two failing schedules, one recovering at minute 16."""
    return _run("alerts", templates, tick_interval_s=25)


@pytest.fixture(scope="session")
def routes(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every API operation once, after two and a half minutes of runs."""
    return _run("routes", templates, tick_interval_s=25)


@pytest.fixture(scope="session")
def lateness(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """16 minutes: 120 one-offs due at one instant, each target answering in 60 s, behind a
    worker whose queue trigger is capped at 2 batches (sim/lateness.py)."""
    return _run("lateness", templates, tick_interval_s=50)
