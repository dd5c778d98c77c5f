"""What the composition root builds on every platform, and the planner it builds from.

The planner's entry points (``Ticker``, ``TickConfig``, ``TickReport``,
``PlanNow``) are imported here and nowhere else outside the service layer:
handlers, the CLI and the benchmarks take them from this module.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import cached_property
from typing import Final

from adapters.secrets import SecretStore, new_secret, put_first
from adapters.targets.addresses import AddressPolicy
from bootstrap.settings import Settings
from domain.partition import Partitioning
from service.planning.config import TickConfig
from service.planning.pass_state import TickReport
from service.planning.ticker import PlanNow, Ticker
from service.run_views import RunViews
from service.runs import RunReports
from service.schedules import ScheduleService, TargetSupport
from service.signing_secrets import SigningSecrets
from service.watchdog import Watchdog

SQLITE_FILE: Final = "duetime.db"


@dataclass
class ApiServices:
    """What the routes call: the schedule use cases and the webhook secret store.

    ``secrets`` is None where no secret store is configured: a webhook
    schedule then still gets a signing secret, returned once, but duetime
    keeps no copy to sign with. ``runs`` takes the progress and completion
    reports of long jobs; where it is None those routes answer 501.
    ``views`` lists runs with filters, retries them and reads the dead
    letters; where it is None, runs are still listed (over the schedule
    store), and the retry and the dead letters answer 501.
    ``address_policy`` is the rule the deployment's worker applies to webhook
    addresses; a URL whose host is an address it refuses is refused at save.
    """

    schedules: ScheduleService
    secrets: SecretStore | None = None
    runs: RunReports | None = None
    views: RunViews | None = None
    address_policy: AddressPolicy = field(default_factory=AddressPolicy)

    @cached_property
    def run_views(self) -> RunViews:
        """The run views the routes use: ``views``, or where none are wired,
        listings over the schedule store (retry and dead letters answer 501)."""
        if self.views is not None:
            return self.views
        schedules = self.schedules
        return RunViews(schedules.store, None, schedules.clock, schedules.partitioning)

    @cached_property
    def signing_secrets(self) -> SigningSecrets:
        """The webhook schedules' signing secrets over ``secrets``."""
        return SigningSecrets(self.secrets, put_first, new_secret)

    @cached_property
    def watchdog(self) -> Watchdog:
        """The watchdog as the API uses it: to record an acknowledgement."""
        return Watchdog(self.schedules.store, self.schedules.clock)


# What the SQLite stack's worker delivers to (bootstrap.local.build_sqlite_worker
# builds the webhook sender only); a schedule naming another type is refused when
# saved there, rather than accepted and then failed at every run.
SQLITE_TARGETS: Final = TargetSupport(
    frozenset({"webhook"}),
    "deploy duetime to AWS (cdk deploy), or try them on this machine with "
    "`duetime local --store emulator`, which delivers them to its own emulated "
    "services, not to AWS",
)


def sqlite_targets(jobs: frozenset[str] | None) -> TargetSupport:
    """What the SQLite stack delivers to: SQLITE_TARGETS, and command targets
    naming one of ``jobs`` where a jobs file is loaded (``duetime local --jobs``)."""
    if jobs is None:
        return SQLITE_TARGETS
    return replace(SQLITE_TARGETS, types=SQLITE_TARGETS.types | {"command"}, jobs=jobs)


def partitioning(settings: Settings) -> Partitioning:
    return Partitioning(shards=settings.shards, bucket_s=settings.bucket_s)


def tick_config(settings: Settings) -> TickConfig:
    """The pass of a deployment (AWS or local): it queues ahead, up to the
    lookahead, so it needs to run only once per lookahead less a margin. A crowd
    on the chain, which a pass with time to spare plans early, is as many
    schedules at one instant as a surge starts for (``surgeMin``) unless
    ``crowdMin`` says otherwise."""
    return TickConfig(
        crowd_min=settings.crowd_min or settings.surge_min,
        plan_early=settings.plan_early,
        partitioning=partitioning(settings),
        lookahead=timedelta(seconds=settings.lookahead_s),
        lease_ttl=timedelta(seconds=settings.lease_ttl_s),
        plan_budget=timedelta(seconds=settings.tick_budget_s) if settings.tick_budget_s else None,
    )


def new_owner() -> str:
    """A name for a tick process, unique among processes sharing a store."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


__all__ = [
    "SQLITE_FILE",
    "SQLITE_TARGETS",
    "ApiServices",
    "PlanNow",
    "TickConfig",
    "TickReport",
    "Ticker",
    "new_owner",
    "partitioning",
    "sqlite_targets",
    "tick_config",
]
