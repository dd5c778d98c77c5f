"""The world of `duetime demo` (cli/demo.py): a simulated clock, a simulated
mail API, tick processes that can be killed or frozen, and the parts the story
drives, built by the composition root (``bootstrap.local``) as the local stack
builds them, over one SQLite file. ``DemoWorld`` opens the processes and reads
what the store holds."""

from __future__ import annotations

import json
import random
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, TextIO

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.database import Database
from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.schedules import SqliteSchedules
from adapters.sqlite.store import SqliteStore
from bootstrap.local import build_sqlite_ticker, build_sqlite_worker
from domain.delivery import Delivery, Outcome
from domain.identity import new_schedule_id
from domain.run import DeliveryIntent, Run
from domain.schedule import Schedule
from domain.spec import spec_zone_name
from domain.targets import Target
from service.planning.config import TickConfig
from service.planning.ticker import Ticker
from service.ports import DeliveryQueue, Materialization, Materialized, PlanSession
from service.run_ports import NoTelemetry, QueueMessage
from service.runs import RunWorker
from service.schedules import ScheduleService

# Monday 2026-11-30, 07:00 in New York (EST, UTC-5) and 12:00 in London (GMT).
START_AT: Final = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
# The demo plans a day ahead, as a deployment may (the default is one tick ahead).
LOOKAHEAD: Final = timedelta(hours=24)
# How long the story waits for a thread it handed control to (a bug, if ever reached).
HANDOFF_TIMEOUT_S: Final = 60.0

# --- the simulated world ---------------------------------------------------------------


class SimulatedClock:
    """Time moves only when the story moves it."""

    def __init__(self, start: datetime) -> None:
        self.at = start

    def now(self) -> datetime:
        return self.at

    def set(self, at: datetime) -> None:
        if at < self.at:
            raise ValueError("the simulated clock only moves forward")
        self.at = at


@dataclass(frozen=True)
class Email:
    """One call the mail API received."""

    sent_at: datetime
    to: str
    subject: str
    idempotency_key: str
    version: int
    attempt: int


class MailApi:
    """The mail API the report's webhook calls, simulated: every call sends an email.

    A ``TargetPort``: the worker hands it each attempt as it would hand it to
    the webhook sender. It keeps every call, so a second call for one
    occurrence would show as a second email.
    """

    def __init__(self, clock: SimulatedClock) -> None:
        self.clock = clock
        self.outbox: list[Email] = []

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome:
        payload = delivery.payload
        self.outbox.append(
            Email(
                sent_at=self.clock.now(),
                to=str(payload.get("to", "")),
                subject=str(payload.get("subject", "")),
                idempotency_key=delivery.idempotency_key,
                version=delivery.version,
                attempt=delivery.attempt,
            )
        )
        return Outcome.succeeded(200, '{"status":"sent"}')


class ProcessKilled(Exception):
    """Stands for kill -9: the process stops where it is and cleans nothing up."""


class KilledBeforeSend(DeliveryQueue):
    """The queue as a tick process sees it when it is killed just before sending."""

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        raise ProcessKilled("killed before sending")


class TickSchedules(SqliteSchedules):
    """The SQLite schedules port as one tick process opens it.

    It keeps the ids of the occurrences its materializations wrote, and can
    hold a tick between its read and its write (``before_write``, called once
    with what the tick is about to write), so the story can show what happens
    in that moment. The write itself is the store's own.
    """

    def __init__(self, path: str | Path, *, connection_of: Database) -> None:
        super().__init__(path, connection_of=connection_of)
        self.written: list[str] = []
        self.before_write: Callable[[Sequence[Materialization]], None] | None = None

    def materialize(
        self,
        batch: Sequence[Materialization],
        now: datetime,
        *,
        until: datetime | None = None,
        session: PlanSession | None = None,
    ) -> Materialized:
        if batch and self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook(batch)
        stored = super().materialize(batch, now, until=until, session=session)
        for outcome in stored.outcomes:  # final: SQLite holds no advance
            self.written.extend(outcome.inserted)
        return stored


@dataclass
class TickProcess:
    name: str
    store: SqliteStore
    schedules: TickSchedules
    ticker: Ticker


@dataclass
class Frozen:
    """A tick process whose host is suspended (a paused VM, a long GC pause)
    between its read and its write. It runs on its own thread, so the story
    goes on meanwhile; thawed, it carries on from where it stopped."""

    thread: threading.Thread
    thawed: threading.Event
    errors: list[BaseException]


@dataclass
class DemoResult:
    """What the story left behind, for tests and for ``--db``."""

    schedule_id: str
    emails: list[Email]
    intents_sent: int
    # The schedule's occurrences just before the move to London, and once both
    # tick processes have ticked after it.
    before_move: list[Run]
    after_move: list[Run]


@dataclass
class Event:
    at: datetime
    actor: str
    what: str


# --- formatting ------------------------------------------------------------------------

# --- the processes ---------------------------------------------------------------------


class DemoWorld:
    """The processes of the story over one SQLite file, and what the store holds."""

    def __init__(self, db_path: Path, out: TextIO, seed: int) -> None:
        self.db_path = db_path
        self.out = out
        self.rng = random.Random(seed)
        self.clock = SimulatedClock(START_AT)
        self.config = TickConfig(lookahead=LOOKAHEAD)
        self.mail = MailApi(self.clock)
        self._closers: list[Callable[[], None]] = []
        # The API process: the schedule use cases over their own connection.
        self.api_store = self._open_store()
        self.schedules = ScheduleService(
            self.api_store,
            self.clock,
            self.config.partitioning,
            new_id=lambda: new_schedule_id(self.rng.randbytes(10)),
        )
        self._peek = sqlite3.connect(str(db_path))
        self._closers.append(self._peek.close)
        self.schedule_id = ""
        self.ticks: dict[str, TickProcess] = {}
        self.intents_sent = 0
        self.events: list[Event] = []
        self.frozen: Frozen | None = None
        self.before_move: list[Run] = []
        self.after_move: list[Run] = []

    # --- processes --------------------------------------------------------------------

    def _open_store(self) -> SqliteStore:
        store = SqliteStore.open(self.db_path)
        self._closers.append(store.close)
        return store

    def _open_queue(self) -> SqliteQueue:
        queue = SqliteQueue(self.db_path, clock=self.clock)
        self._closers.append(queue.close)
        return queue

    def start_tick(self, name: str, queue: DeliveryQueue | None = None) -> TickProcess:
        opened = self._open_store()
        schedules = TickSchedules(self.db_path, connection_of=opened.retention)
        store = replace(opened, schedules=schedules)
        ticker = build_sqlite_ticker(
            store, queue or self._open_queue(), clock=self.clock, owner=name, config=self.config
        )
        process = TickProcess(name, store, schedules, ticker)
        self.ticks[name] = process
        return process

    def start_worker(self) -> tuple[RunWorker, SqliteQueue]:
        """A worker composed as the local stack composes it, with the mail API
        simulated and no log lines (the story prints the store instead)."""
        store = self._open_store()
        worker, queue = build_sqlite_worker(
            self.db_path,
            InMemorySecretStore(),  # the mail API is no webhook: nothing is signed
            telemetry=NoTelemetry(),
            clock=self.clock,
            rng=random.Random(self.rng.random()),
            targets=self.mail,
            store=store,
            new_token=lambda: self.rng.randbytes(24).hex(),
        )
        self._closers.append(queue.close)
        return worker, queue

    def close(self) -> None:
        if self.frozen is not None:
            # The story stopped early: let the frozen tick finish before its store closes.
            self.frozen.thawed.set()
            self.frozen.thread.join(HANDOFF_TIMEOUT_S)
            self.frozen = None
        for close in reversed(self._closers):
            close()
        self._closers = []

    def schedule(self) -> Schedule:
        return self.schedules.get(self.schedule_id, include_deleted=True)

    def runs(self) -> list[Run]:
        """The schedule's occurrences, oldest first."""
        return list(reversed(self.api_store.records.runs(self.schedule_id, 100).items))

    def zone_of(self, run: Run) -> str:
        return spec_zone_name(self.schedules.version(run.schedule_id, run.version).spec)

    def messages(self) -> list[tuple[int, str, int, str, datetime | None]]:
        """The delivery queue as stored: (number, occurrence id, receives, state, visible at)."""
        rows = self._peek.execute(
            "SELECT seq, body, receive_count, state, visible_at FROM delivery_queue ORDER BY seq"
        ).fetchall()
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        return [
            (
                int(seq),
                str(json.loads(body)["occurrence_id"]),
                int(receives),
                str(state),
                None if visible is None else epoch + timedelta(microseconds=int(visible)),
            )
            for seq, body, receives, state, visible in rows
        ]

    def message_number(self, message: QueueMessage) -> int:
        row = self._peek.execute(
            "SELECT seq FROM delivery_queue WHERE message_id = ?", (message.message_id,)
        ).fetchone()
        return int(row[0])
