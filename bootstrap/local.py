"""The application on one machine: every part over one SQLite file.

The store, the delivery queue (a table with visibility times), the webhook
secrets and the dead letters live in ``duetime.db``; several processes may
open it at once. ``duetime local``, ``duetime demo``, the API handler run
with ``DUETIME_DATA_DIR`` and the benchmarks build their parts here.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.secrets import SecretStore
from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from adapters.targets import AddressPolicy, Targets, WebhookSender
from bootstrap.parts import (
    SQLITE_FILE,
    SQLITE_TARGETS,
    ApiServices,
    PlanNow,
    TickConfig,
    Ticker,
    new_owner,
    partitioning,
    tick_config,
)
from bootstrap.settings import Settings
from domain.delivery import TargetPort
from service.clock import SystemClock
from service.ports import Clock, DeliveryQueue
from service.run_ports import HELD_VISIBILITY_S, RunTelemetry
from service.run_views import RunViews
from service.runs import RunReports, RunWorker, WorkerConfig, new_run_token
from service.schedules import ScheduleService, TargetSupport
from service.watchdog import Watchdog

if TYPE_CHECKING:
    from adapters.sqlite.janitor import Janitor
    from service.alerts import Alerting
    from service.dead_letter_sweep import SweepReport


def database(data_dir: str | Path) -> Path:
    """The SQLite file of a data directory, which is created if missing."""
    directory = Path(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    return directory / SQLITE_FILE


def build_sqlite_services(
    settings: Settings,
    data_dir: str | Path,
    *,
    clock: Clock | None = None,
    secrets: SecretStore | None = None,
    target_support: TargetSupport | None = None,
    address_policy: AddressPolicy | None = None,
) -> ApiServices:
    """The API's use cases over the SQLite file in ``data_dir``: planning at the
    call (the local tick's queue is a table in the same file), retries sent on
    that queue, its dead letters. ``target_support`` defaults to SQLITE_TARGETS,
    ``address_policy`` to ``AddressPolicy.local()`` (the local worker's)."""
    from adapters.sqlite.dead_letters import SqliteDeadLetters

    path = database(data_dir)
    clock = clock or SystemClock()
    store = SqliteStore.open(path)
    if secrets is None:
        from adapters.sqlite.secrets import SqliteSecretStore

        secrets = SqliteSecretStore(path)
    run_store = SqliteRunStore(store)
    parts = partitioning(settings)
    queue = SqliteQueue(path, clock=clock, connection_of=store.retention)
    schedules = ScheduleService(
        store,
        clock,
        parts,
        target_support=target_support or SQLITE_TARGETS,
        planning=PlanNow(store, queue, clock, tick_config(settings)),
    )
    views = RunViews(
        store,
        run_store,
        clock,
        parts,
        queue=queue,
        dead_letters=SqliteDeadLetters(path, connection_of=store.retention),
    )
    return ApiServices(
        schedules,
        secrets,
        RunReports(run_store, clock),
        views,
        address_policy or AddressPolicy.local(),
    )


def build_sqlite_ticker(
    store: str | Path | SqliteStore,
    queue: DeliveryQueue | None = None,
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    owner: str | None = None,
    config: TickConfig | None = None,
) -> Ticker:
    """The tick over the one-machine store (a path, or a store already open):
    its passes as the settings configure them (``config`` replaces them), sending
    on ``queue`` (by default the SQLite queue in the same file)."""
    clock = clock or SystemClock()
    if not isinstance(store, SqliteStore):
        store = SqliteStore.open(store)
    if queue is None:
        queue = SqliteQueue(store.path, clock=clock, connection_of=store.retention)
    return Ticker(
        store,
        queue,
        clock,
        config or tick_config(settings or Settings()),
        owner=owner or new_owner(),
    )


def build_sqlite_worker(
    db_path: str | Path,
    secrets: SecretStore,
    *,
    telemetry: RunTelemetry | None = None,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    targets: TargetPort | None = None,
    address_policy: AddressPolicy | None = None,
    command: TargetPort | None = None,
    store: SqliteStore | None = None,
    new_token: Callable[[], str] = new_run_token,
) -> tuple[RunWorker, SqliteQueue]:
    """The worker and the queue over one SQLite file (the local stack).

    ``telemetry`` defaults to the attempts' log lines and metrics
    (``adapters.telemetry``). ``command`` runs command targets (the jobs file's
    ``CommandRunner``), where the stack has a jobs file; ``targets`` replaces
    every target (the demo's simulated mail API, a benchmark's receiver).
    ``store`` is an open store to share; ``new_token`` makes the run tokens.

    Webhooks may call 127.0.0.1 here (``AddressPolicy.local()``), so a receiver
    on the same machine can be tried out. Messages and run leases are held for
    ``HELD_VISIBILITY_S`` at a time: run it with ``run_worker_loop``, whose
    heartbeat extends them.
    """
    if telemetry is None:
        from adapters.telemetry import PowertoolsTelemetry

        telemetry = PowertoolsTelemetry()
    clock = clock or SystemClock()
    policy = address_policy or AddressPolicy.local()
    runs = SqliteRunStore(store or SqliteStore.open(db_path))
    worker = RunWorker(
        runs,
        targets or Targets.build(webhook=WebhookSender(secrets, policy), command=command),
        clock,
        rng or random.Random(),
        telemetry=telemetry,
        config=WorkerConfig(held_lease_s=HELD_VISIBILITY_S),
        new_token=new_token,
    )
    # The queue shares the run store's connection: one page cache, and the
    # pool's receives and deletes never wait on its own run writes.
    queue = SqliteQueue(
        db_path,
        clock=clock,
        visibility_timeout_s=HELD_VISIBILITY_S,
        connection_of=runs.store.retention,
    )
    return worker, queue


def build_sqlite_watchdog(
    db_path: str | Path, alerting: Alerting | None = None, *, clock: Clock | None = None
) -> Watchdog:
    """The watchdog over the SQLite store; ``alerting`` is its notification channel."""
    return Watchdog(SqliteStore.open(db_path), clock or SystemClock(), alerting)


@dataclass(frozen=True)
class Housekeeping:
    """The SQLite stack's retention and its dead-letter sweep (as the worker
    sweeps on AWS): ``janitor.run_once()`` then ``sweep()``, every few minutes."""

    janitor: Janitor
    sweep: Callable[[], SweepReport]
    close: Callable[[], None]  # closes their connections


def build_housekeeping(
    db_path: str | Path, retention: timedelta, *, logs: Path | None = None
) -> Housekeeping:
    """The janitor over the SQLite file (its retention; ``logs``: the command
    targets' log directory) and the sweep of the queue's dead letters."""
    from adapters.sqlite.dead_letters import SqliteDeadLetterInbox
    from adapters.sqlite.janitor import Janitor
    from service.dead_letter_sweep import sweep_dead_letters

    clock = SystemClock()
    store, queue = SqliteStore.open(db_path), SqliteQueue(db_path)
    janitor = Janitor(store, queue, clock, retention, logs=logs)
    inbox = SqliteDeadLetterInbox(db_path, connection_of=queue)
    runs = SqliteRunStore(store)

    def close() -> None:
        store.close()
        queue.close()

    return Housekeeping(janitor, lambda: sweep_dead_letters(inbox, runs, clock), close)
