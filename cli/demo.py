"""`duetime demo`: one schedule's story, told by the code that runs duetime.

On a simulated clock and a fresh SQLite store, the demo drives the services
the local stack runs (the schedule use cases, the tick's plan and dispatch,
the SQLite delivery queue, the run worker) and prints what the store holds
after each step. It plans 24 h ahead, as a deployment may, so tomorrow's
occurrence is written a day before it is due:

1. on Monday morning a weekday 09:00 report in America/New_York is created
   and edited up to version 4;
2. a tick process writes Tuesday's occurrence a day ahead under version 4,
   admits Monday's, and is killed before sending its delivery intent; a new
   tick process sends it: one occurrence, one intent;
3. the queue delivers the same message twice: the email goes out once;
4. on Monday afternoon the schedule moves to Europe/London (version 5) while
   two tick processes run, one of them still holding a read of version 4:
   its write is refused, Tuesday's occurrence keeps its id, version and
   instant, no copy appears, and the next one is calculated under version 5
   (Wednesday 09:00 London);
5. a pause on Monday evening stops admissions: Tuesday's occurrence, planned
   a day ahead, is withdrawn (its record deleted), and the email already
   sent stays sent.

The report goes to a mail API (a webhook target); the demo simulates that API
in process, recording every call with its Idempotency-Key. The story is
deterministic: the clock starts at a fixed instant and the schedule id and run
tokens come from a seeded generator. (Queue message ids are random; the demo
names messages by their place in the queue instead.)
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import textwrap
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, TextIO

from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqlite.store import SqliteStore
from domain.delivery import Delivery, Outcome, format_instant
from domain.identity import new_schedule_id
from domain.run import DeliveryIntent, Run, RunStatus
from domain.schedule import Schedule
from domain.spec import spec_to_dict, spec_zone_name
from domain.targets import Target
from domain.timezones import load_zone
from handlers.api_models import definition_of
from handlers.worker import IntentBody, apply
from service.ports import DeliveryQueue, Materialization, MaterializeOutcome
from service.run_ports import NoTelemetry, QueueMessage
from service.runs import RunWorker
from service.schedules import ScheduleService
from service.tick import TickConfig, Ticker, TickReport

# Monday 2026-11-30, 07:00 in New York (EST, UTC-5) and 12:00 in London (GMT).
START_AT: Final = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DEFAULT_SEED: Final = 5
# The demo plans a day ahead, as a deployment may (the default is one tick ahead).
LOOKAHEAD: Final = timedelta(hours=24)
# How long the story waits for a thread it handed control to (a bug, if ever reached).
HANDOFF_TIMEOUT_S: Final = 60.0
NEW_YORK: Final = "America/New_York"
LONDON: Final = "Europe/London"
CRON: Final = "0 9 * * MON-FRI"
MAIL_API: Final = {"type": "webhook", "url": "https://mail.example.com/send"}
WIDTH: Final = 96
SUBJECT: Final = "Daily sales (US + EMEA)"
RECIPIENT: Final = "sales-leads@example.com"


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


class TickStore(SqliteStore):
    """The SQLite store as one tick process opens it.

    It keeps the ids of the occurrences its materializations wrote, and can
    hold a tick between its read and its write (``before_write``, called once
    with what the tick is about to write), so the story can show what happens
    in that moment. The write itself is the store's own.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.written: list[str] = []
        self.before_write: Callable[[Sequence[Materialization]], None] | None = None

    def materialize(
        self, batch: Sequence[Materialization], now: datetime, *, until: datetime | None = None
    ) -> list[MaterializeOutcome]:
        if batch and self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook(batch)
        outcomes = super().materialize(batch, now, until=until)
        for outcome in outcomes:
            self.written.extend(outcome.inserted)
        return outcomes


@dataclass
class TickProcess:
    name: str
    store: TickStore
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
class _Event:
    at: datetime
    actor: str
    what: str


# --- formatting ------------------------------------------------------------------------


def _utc(at: datetime | None) -> str:
    return "-" if at is None else format_instant(at)


def _clock(at: datetime | None) -> str:
    """``Mon 14:00:00Z``: a short instant for the story's timeline."""
    return "-" if at is None else f"{at.astimezone(UTC):%a %H:%M:%S}Z"


def _local(at: datetime, zone: str, *, date: bool = True) -> str:
    local = at.astimezone(load_zone(zone))
    return local.strftime("%a %Y-%m-%d %H:%M %Z" if date else "%a %H:%M %Z")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# --- the story -------------------------------------------------------------------------


class Demo:
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
        self.events: list[_Event] = []
        self.frozen: Frozen | None = None
        self.before_move: list[Run] = []
        self.after_move: list[Run] = []

    # --- processes --------------------------------------------------------------------

    def _open_store(self) -> SqliteStore:
        store = SqliteStore(self.db_path)
        self._closers.append(store.close)
        return store

    def _open_queue(self) -> SqliteQueue:
        queue = SqliteQueue(self.db_path, clock=self.clock)
        self._closers.append(queue.close)
        return queue

    def start_tick(self, name: str, queue: DeliveryQueue | None = None) -> TickProcess:
        store = TickStore(self.db_path)
        self._closers.append(store.close)
        ticker = Ticker(store, queue or self._open_queue(), self.clock, self.config, owner=name)
        process = TickProcess(name, store, ticker)
        self.ticks[name] = process
        return process

    def start_worker(self) -> tuple[RunWorker, SqliteQueue]:
        """A worker composed as the local stack composes it, with the mail API
        simulated and no log lines (the story prints the store instead)."""
        worker = RunWorker(
            SqliteRunStore(self._open_store()),
            self.mail,
            self.clock,
            random.Random(self.rng.random()),
            telemetry=NoTelemetry(),
            new_token=lambda: self.rng.randbytes(24).hex(),
        )
        return worker, self._open_queue()

    def close(self) -> None:
        if self.frozen is not None:
            # The story stopped early: let the frozen tick finish before its store closes.
            self.frozen.thawed.set()
            self.frozen.thread.join(HANDOFF_TIMEOUT_S)
            self.frozen = None
        for close in reversed(self._closers):
            close()
        self._closers = []

    # --- output -----------------------------------------------------------------------

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def say(self, text: str) -> None:
        self.print(textwrap.fill(text, WIDTH))

    def heading(self, text: str) -> None:
        self.print()
        self.print(text)
        self.print("-" * len(text))

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]

        def line(cells: Sequence[str]) -> str:
            return (
                "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
            ).rstrip()

        self.print(line(headers))
        self.print(line(["-" * w for w in widths]))
        for row in rows:
            self.print(line(row))

    def log(self, actor: str, what: str) -> None:
        self.events.append(_Event(self.clock.now(), actor, what))

    def show_log(self) -> None:
        rows: list[list[str]] = []
        for event in self.events:
            lines = textwrap.wrap(event.what, 66) or [""]
            rows.append([_clock(event.at), event.actor, lines[0]])
            rows.extend(["", "", more] for more in lines[1:])
        self.table(["at", "who", "what"], rows)
        self.events = []

    # --- reading the store ----------------------------------------------------------------

    def schedule(self) -> Schedule:
        return self.schedules.get(self.schedule_id, include_deleted=True)

    def runs(self) -> list[Run]:
        """The schedule's occurrences, oldest first."""
        return list(reversed(self.api_store.runs(self.schedule_id, 100).items))

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

    def show_schedule(self) -> None:
        schedule = self.schedule()
        spec = schedule.current.spec
        zone = spec_zone_name(spec)
        state = "paused" if schedule.state.paused else "active"
        if schedule.state.note:
            state += f' (note: "{schedule.state.note}")'
        due = "-"
        if schedule.next_due is not None:
            due = f"{_utc(schedule.next_due)} ({_local(schedule.next_due, zone)})"
            if schedule.state.paused:
                due += ", not planned while paused"
        facts = [
            ("schedule", schedule.schedule_id),
            ("version", str(schedule.version)),
            ("spec", f"{spec_to_dict(spec).get('cron', '')} in {zone}"),
            ("state", state),
            ("next_due", due),
        ]
        self.facts(facts)

    def facts(self, facts: Sequence[tuple[str, str]]) -> None:
        width = max(len(name) for name, _ in facts)
        for name, text in facts:
            self.print(f"  {name.ljust(width)}  {text}")

    def show_next(self, count: int) -> None:
        schedule = self.schedule()
        zone = spec_zone_name(schedule.current.spec)
        slots = self.schedules.next_occurrences(schedule, count)
        if not slots:
            self.print("  (none: the schedule is paused)")
            return
        self.table(
            [f"local ({zone})", "UTC", "version"],
            [
                [_local(s.scheduled_at, zone), _utc(s.scheduled_at), str(schedule.version)]
                for s in slots
            ],
        )

    def show_runs(self, columns: Sequence[str]) -> None:
        getters: dict[str, Callable[[Run], str]] = {
            "occurrence_id": lambda r: r.occurrence_id,
            "version": lambda r: str(r.version),
            "scheduled_at (UTC)": lambda r: _utc(r.scheduled_at),
            "local": lambda r: _local(r.scheduled_at, self.zone_of(r), date=False),
            "status": lambda r: r.status.value,
            "attempts": lambda r: str(r.attempts),
            "admitted_at": lambda r: _clock(r.admitted_at),
            "written_at": lambda r: _clock(r.materialized_at),
            "sent_at": lambda r: _clock(r.sent_at),
            "started_at": lambda r: _clock(r.started_at),
            "finished_at": lambda r: _clock(r.finished_at),
            "reason": lambda r: r.reason or "-",
        }
        runs = self.runs()
        if not runs:
            self.print("  (no occurrences stored)")
            return
        self.table(columns, [[getters[c](run) for c in columns] for run in runs])

    def show_queue(self) -> None:
        now = self.clock.now()
        rows: list[list[str]] = []
        for number, occurrence, receives, state, visible in self.messages():
            if state == "ready" and visible is not None and visible > now:
                state = f"in flight, visible again at {_clock(visible)}"
            rows.append([f"#{number}", occurrence, str(receives), state])
        if not rows:
            self.print("  (empty)")
            return
        self.table(["message", "intent for occurrence", "receives", "state"], rows)

    def show_outbox(self) -> None:
        if not self.mail.outbox:
            self.print("  (no email sent)")
            return
        self.table(
            ["sent_at", "to", "Idempotency-Key", "version"],
            [
                [_clock(e.sent_at), e.to, e.idempotency_key, str(e.version)]
                for e in self.mail.outbox
            ],
        )

    # --- ticking --------------------------------------------------------------------------

    def tick(self, name: str) -> TickReport:
        process = self.ticks[name]
        written = len(process.store.written)
        report = process.ticker.tick_once()
        self.intents_sent += report.dispatch.sent
        self.log(name, self._describe(report, process.store.written[written:]))
        return report

    def wrote(self, occurrence_ids: Sequence[str]) -> str:
        """``wrote 1 occurrence: Tue 09:00 EST (v4)``."""
        runs = [run for i in occurrence_ids if (run := self.api_store.get_run(i)) is not None]
        slots = ", ".join(
            f"{_local(r.scheduled_at, self.zone_of(r), date=False)} (v{r.version})" for r in runs
        )
        return f"wrote {_plural(len(occurrence_ids), 'occurrence')}: {slots}"

    def freeze_mid_tick(self, name: str) -> None:
        """Start a tick of ``name`` that stops between its read and its write,
        on its own thread; return once it has stopped there."""
        process = self.ticks[name]
        frozen = threading.Event()
        thawed = threading.Event()

        def hold(batch: Sequence[Materialization]) -> None:
            for item in batch:
                slots = ", ".join(_utc(r.scheduled_at) for r in item.occurrences)
                self.log(
                    name,
                    f"read version {item.expected_version}, due {_utc(item.expected_next_due)}; "
                    f"about to write {slots} (v{item.expected_version}); its host freezes",
                )
            frozen.set()
            if not thawed.wait(HANDOFF_TIMEOUT_S):
                raise ProcessKilled(f"{name} was never thawed")

        errors: list[BaseException] = []

        def run() -> None:
            try:
                self.tick(name)
            except BaseException as error:
                errors.append(error)

        process.store.before_write = hold
        thread = threading.Thread(target=run, name=name, daemon=True)
        self.frozen = Frozen(thread, thawed, errors)
        thread.start()
        while not frozen.wait(0.01):
            if not thread.is_alive():
                self.frozen = None
                raise RuntimeError(f"{name} had nothing to write") from next(iter(errors), None)

    def thaw(self) -> None:
        """Let the frozen tick carry on from its read, and wait for the tick to end."""
        frozen, self.frozen = self.frozen, None
        assert frozen is not None
        frozen.thawed.set()
        frozen.thread.join(HANDOFF_TIMEOUT_S)
        if frozen.thread.is_alive():
            raise RuntimeError(f"{frozen.thread.name} did not finish its tick")
        if frozen.errors:
            raise frozen.errors[0]

    def _describe(self, report: TickReport, written: Sequence[str]) -> str:
        plan, dispatch = report.plan, report.dispatch
        parts: list[str] = []
        if written:
            parts.append(self.wrote(written))
        if plan.conflicts:
            parts.append(
                f"{_plural(plan.conflicts, 'write')} refused (the schedule changed since its read)"
            )
        if dispatch.admitted:
            parts.append(f"admitted {dispatch.admitted}")
        closed = plan.skipped + plan.expired + dispatch.skipped + dispatch.expired
        if closed:
            parts.append(f"closed {closed} without admitting")
        if dispatch.sent:
            sent = f"sent {_plural(dispatch.sent, 'intent')}"
            if dispatch.resent:
                sent += f" ({dispatch.resent} admitted earlier, never sent)"
            parts.append(sent)
        shards = _plural(len(dispatch.shards), "shard")
        return f"tick ({shards}): " + ("; ".join(parts) or "nothing to do")

    # --- the five steps ---------------------------------------------------------------------

    def body(self, zone: str, to: str, subject: str, cc: str | None = None) -> dict[str, Any]:
        payload: dict[str, Any] = {"to": to, "subject": subject}
        if cc is not None:
            payload["cc"] = cc
        return {
            "name": "daily sales report",
            "spec": {"cron": CRON, "time_zone": zone},
            "target": dict(MAIL_API),
            "payload": payload,
        }

    def intro(self) -> None:
        self.print("duetime demo")
        self.print("============")
        self.say(
            "One schedule's first two days, on a simulated clock, over a fresh SQLite store, "
            "through the services the local stack runs: the schedule use cases, the tick "
            "(plan and dispatch), the SQLite delivery queue and the run worker. The report is "
            "emailed through a mail API (a webhook target), simulated here: it records every "
            "call with its Idempotency-Key. The demo plans "
            f"{self.config.lookahead.total_seconds() / 3600:g} h ahead, as a deployment may: "
            "each tick writes every occurrence due within the next "
            f"{self.config.lookahead.total_seconds() / 3600:g} hours, so tomorrow's 09:00 is "
            "stored at 09:00 today. The other tick settings are the defaults: "
            f"{self.config.partitioning.shards} shards, "
            f"{self.config.partitioning.bucket_s} s buckets, "
            f"{self.config.lease_ttl.total_seconds():g} s leases. The clock jumps from one "
            "moment of the story to the next; a tick in between would find nothing to do. "
            "Times are UTC; New York is UTC-5 (EST) and London UTC+0 (GMT) in December."
        )

    def edit(self, change: str, body: dict[str, Any]) -> None:
        """A PUT naming the version it read (If-Match), as the API makes it."""
        read = self.schedule().version
        edited = self.schedules.edit(self.schedule_id, read, definition_of(body))
        self.log("api", f"PUT If-Match {read}: {change} -> version {edited.version}")

    def show_versions(self) -> None:
        self.table(
            ["version", "created_at", "time zone", "to", "subject"],
            [
                [
                    str(v.version),
                    _clock(v.created_at),
                    spec_zone_name(v.spec),
                    str(v.payload.get("to")),
                    str(v.payload.get("subject")),
                ]
                for v in (
                    self.schedules.version(self.schedule_id, n)
                    for n in range(1, self.schedule().version + 1)
                )
            ],
        )

    def step_1_create(self) -> None:
        self.heading("1. A weekday 09:00 report in New York, edited up to version 4")
        self.say(
            "Monday morning, the report is created, then edited three times; each edit names "
            "the version it read (as If-Match) and makes a new version. No tick process is "
            "running yet, so no occurrence is stored."
        )
        self.print()
        schedule, _ = self.schedules.create(
            definition_of(self.body(NEW_YORK, "sales@example.com", "Daily sales"))
        )
        self.schedule_id = schedule.schedule_id
        self.log("api", f"POST /schedules: {CRON} in {NEW_YORK}, emailed via {MAIL_API['url']}")
        cc = "finance@example.com"
        edits = [
            ("adds a cc", self.body(NEW_YORK, "sales@example.com", "Daily sales", cc)),
            ("renames the subject", self.body(NEW_YORK, "sales@example.com", SUBJECT, cc)),
            ("changes the recipient", self.body(NEW_YORK, RECIPIENT, SUBJECT, cc)),
        ]
        for change, body in edits:
            self.clock.set(self.clock.now() + timedelta(minutes=5))
            self.edit(change, body)
        self.show_log()
        self.print()
        self.print("Versions:")
        self.show_versions()
        self.print()
        self.print("Stored schedule:")
        self.show_schedule()
        self.print()
        self.print("Its next occurrences (calculated; nothing is stored until a tick plans it):")
        self.show_next(6)

    def step_2_restart(self) -> None:
        self.heading("2. The scheduler restarts mid-tick")
        self.say(
            "tick-1 starts at 12:20Z; its first tick writes Monday's occurrence, due within "
            "24 h. At 14:00Z (09:00 New York) Tuesday's 09:00 comes within 24 h, and two tick "
            "processes tick: tick-3 reads the schedule and its host freezes before it writes "
            "(step 4 comes back to it); tick-1 writes Tuesday's occurrence a day ahead, admits "
            "Monday's, and is killed before it sends the delivery intent. Once tick-1's leases "
            "have run out, tick-2, a new tick process, takes its shards."
        )
        self.print()
        monday = self.schedule().next_due
        assert monday is not None
        self.clock.set(START_AT + timedelta(minutes=20))
        tick_1 = self.start_tick("tick-1", KilledBeforeSend())
        self.tick("tick-1")
        self.clock.set(monday)
        self.start_tick("tick-3")
        self.freeze_mid_tick("tick-3")
        written = len(tick_1.store.written)
        try:
            self.tick("tick-1")
        except ProcessKilled:
            now = self.clock.now()
            held = [s for s in self.api_store.leases() if s.owner == "tick-1" and s.live(now)]
            admitted = sum(1 for r in self.runs() if r.admitted_at == now)
            parts = [f"admitted {admitted}", "killed before sending its intent"]
            if tick_1.store.written[written:]:
                parts.insert(0, self.wrote(tick_1.store.written[written:]))
            self.log("tick-1", f"tick ({_plural(len(held), 'shard')}): " + "; ".join(parts))
        self.clock.set(monday + self.config.lease_ttl + timedelta(seconds=1))
        self.start_tick("tick-2")
        self.tick("tick-2")
        self.clock.set(self.clock.now() + timedelta(seconds=15))
        self.tick("tick-2")
        self.show_log()
        self.print()
        self.print("Stored occurrences:")
        self.show_runs(["occurrence_id", "local", "written_at", "status", "admitted_at", "sent_at"])
        self.print()
        self.print("Delivery queue:")
        self.show_queue()
        runs = self.runs()
        today = [r for r in runs if r.scheduled_at == monday]
        later = [r for r in runs if r.scheduled_at > monday]
        intents = {occurrence for _, occurrence, *_ in self.messages()}
        self.print()
        self.say(
            f"Monday's occurrence: {_plural(len(today), 'record')}, "
            f"{_plural(len(intents), 'intent id')}: "
            + ", ".join(sorted(intents))
            + ". "
            + " ".join(
                f"{self.day(r)}'s occurrence, written {self.ahead(r)} ahead under version "
                f"{r.version}, waits for its time ({r.status.value})."
                for r in later
            )
        )

    def day(self, run: Run) -> str:
        """``Tuesday``: the local weekday of an occurrence."""
        return run.scheduled_at.astimezone(load_zone(self.zone_of(run))).strftime("%A")

    @staticmethod
    def ahead(run: Run) -> str:
        """``24 h``: how long before its instant an occurrence was written."""
        assert run.materialized_at is not None
        return f"{(run.scheduled_at - run.materialized_at).total_seconds() / 3600:g} h"

    def step_3_duplicate_message(self) -> None:
        self.heading("3. The same queue message arrives twice")
        self.say(
            "worker-1 runs the occurrence and is stopped before it deletes the message. When "
            "the message's visibility timeout ends, the queue delivers it again, to worker-2."
        )
        self.print()
        first_worker, first_queue = self.start_worker()
        self.clock.set(self.clock.now() + timedelta(seconds=1))
        [first] = first_queue.receive(10, 0)
        self._handle("worker-1", first_worker, first_queue, first, delete=False)
        self.clock.set(self.clock.now() + timedelta(seconds=first_queue.visibility_timeout_s + 1))
        second_worker, second_queue = self.start_worker()
        [second] = second_queue.receive(10, 0)
        same = "the same message" if second.message_id == first.message_id else "another message"
        self.log("queue", f"delivers message #{self.message_number(second)} again ({same})")
        self._handle("worker-2", second_worker, second_queue, second, delete=True)
        self.show_log()
        self.print()
        self.print("Stored occurrences:")
        self.show_runs(["occurrence_id", "status", "attempts", "started_at", "finished_at"])
        self.print()
        self.print("Delivery queue:")
        self.show_queue()
        self.print()
        self.print("The mail API's outbox:")
        self.show_outbox()

    def _handle(
        self,
        name: str,
        worker: RunWorker,
        queue: SqliteQueue,
        message: QueueMessage,
        *,
        delete: bool,
    ) -> None:
        number = self.message_number(message)
        self.log(name, f"receives message #{number} (receive {message.receive_count})")
        sent_before = len(self.mail.outbox)
        intent = IntentBody.model_validate_json(message.body).to_intent()
        decision = worker.handle(intent, message.receive_count)
        emails = len(self.mail.outbox) - sent_before
        what = f"runs {intent.occurrence_id}: {_plural(emails, 'email')} sent"
        if emails == 0:
            what = f"{intent.occurrence_id}: nothing sent"
        self.log(name, f"{what}; decision: {decision.action} ({decision.reason})")
        if not delete:
            self.log(name, f"stopped before deleting message #{number}")
            return
        if apply(decision, queue, message, intent) == "deleted":
            queue.delete(message.receipt)
            self.log(name, f"deletes message #{number}")

    def step_4_move(self) -> None:
        self.heading("4. The schedule moves from New York to London while two schedulers tick")
        self.say(
            "Tuesday's occurrence has been stored since 14:00Z, under version 4. At 16:00Z "
            "(11:00 in New York) the report moves to Europe/London while two tick processes "
            "run: tick-2, started after tick-1's crash, which reads the schedule afresh on "
            "every tick, and tick-3, whose host thaws just after the move: it still holds what "
            "it read at 14:00Z (version 4, Tuesday's occurrence not yet written) and carries on "
            "with its write."
        )
        self.print()
        self.clock.set(START_AT.replace(hour=16))
        self.tick("tick-2")
        self.before_move = self.runs()
        self.edit(
            f"{NEW_YORK} -> {LONDON}", self.body(LONDON, RECIPIENT, SUBJECT, "finance@example.com")
        )
        self.log("tick-3", "its host thaws; it carries on with its read of version 4")
        self.thaw()
        for _ in range(2):
            self.clock.set(self.clock.now() + timedelta(seconds=15))
            self.tick("tick-2")
            self.tick("tick-3")
        self.after_move = self.runs()
        self.show_log()

        self.print()
        self.print("Versions:")
        self.show_versions()
        self.print()
        self.print("Stored occurrences:")
        self.show_runs(["occurrence_id", "version", "scheduled_at (UTC)", "local", "status"])
        tuesday = datetime(2026, 12, 1, 9, 0)  # noqa: DTZ001 - a wall time: Tuesday 09:00
        in_london = tuesday.replace(tzinfo=load_zone(LONDON))
        before = [r for r in self.before_move if r.wall == tuesday]
        after = [r for r in self.after_move if r.wall == tuesday]
        unchanged = before == after
        at_london = [r for r in self.after_move if r.scheduled_at == in_london]
        slots = {r.business_key for r in self.after_move}
        self.print()
        self.say(
            f"Tuesday's 09:00: {_plural(len(after), 'record')} for its slot, "
            f"{'unchanged' if unchanged else 'CHANGED'} by the move and the ticks after it ("
            + "; ".join(
                f"{r.occurrence_id}: version {r.version}, {_utc(r.scheduled_at)}, "
                f"written {_clock(r.materialized_at)}"
                for r in after
            )
            + f"); {_plural(len(at_london), 'record') if at_london else 'none'} at "
            f"{_utc(in_london)}, Tuesday 09:00 in London. "
            f"{_plural(len(self.after_move), 'occurrence')} for {_plural(len(slots), 'slot')}."
        )
        self.print()
        self.print("Stored schedule:")
        self.show_schedule()
        self.print()
        self.print("Its next occurrences, newly calculated under the current version:")
        self.show_next(3)

    def step_5_pause(self) -> None:
        self.heading("5. Pause stops admissions; the email already sent stays sent")
        self.say(
            "Monday evening, 17:00 in New York (22:00Z), the schedule is paused. On Tuesday both "
            "schedulers tick through 09:00 New York (14:00Z), when Tuesday's occurrence was "
            "due, and a worker polls the queue."
        )
        self.print()
        self.clock.set(START_AT.replace(hour=22))
        before = {r.occurrence_id for r in self.runs()}
        paused = self.schedules.pause(self.schedule_id, "waiting for the London team")
        withdrawn = sorted(before - {r.occurrence_id for r in self.runs()})
        self.log(
            "api",
            f'POST /pause (note: "{paused.state.note}"): '
            + ", ".join(f"{oid} withdrawn (planned)" for oid in withdrawn),
        )
        self.clock.set(START_AT + timedelta(days=1, hours=1, minutes=59, seconds=30))
        for n in range(3):
            if n:
                self.clock.set(self.clock.now() + timedelta(seconds=15))
            self.tick("tick-2")
            self.tick("tick-3")
        worker, queue = self.start_worker()
        messages = queue.receive(10, 0)
        for message in messages:
            self._handle("worker-3", worker, queue, message, delete=True)
        if not messages:
            self.log("worker-3", "polls the queue: no message")
        self.show_log()
        self.print()
        self.print("Stored occurrences:")
        self.show_runs(["occurrence_id", "version", "local", "status", "finished_at", "reason"])
        self.print()
        self.print("Delivery queue:")
        self.show_queue()
        self.print()
        self.print("The mail API's outbox:")
        self.show_outbox()
        self.print()
        self.print("Stored schedule:")
        self.show_schedule()
        self.print()
        self.print("Its next occurrences:")
        self.show_next(3)

    def summary(self) -> None:
        self.heading("In the store at the end")
        runs = self.runs()
        schedule = self.schedule()
        by_status: dict[str, int] = {}
        for run in runs:
            label = run.status.value
            if run.status is RunStatus.SKIPPED and run.reason:
                label += f" ({run.reason})"
            by_status[label] = by_status.get(label, 0) + 1
        keys = {r.business_key for r in runs}
        state = "paused" if schedule.state.paused else "active"
        facts = [
            ("schedule", f"{schedule.schedule_id}, version {schedule.version}, {state}"),
            (
                "occurrences",
                f"{len(runs)} for {_plural(len(keys), 'slot')}: "
                + ", ".join(f"{n} {s}" for s, n in by_status.items()),
            ),
            (
                "intents sent",
                f"{self.intents_sent}; messages left in the queue: "
                f"{len([m for m in self.messages() if m[3] == 'ready'])}",
            ),
            (
                "emails",
                f"{len(self.mail.outbox)}; Idempotency-Keys: "
                + ", ".join(e.idempotency_key for e in self.mail.outbox),
            ),
        ]
        self.facts(facts)


def run_demo(out: TextIO, *, db_path: Path | None = None, seed: int = DEFAULT_SEED) -> DemoResult:
    """Tell the story into ``out``. With ``db_path`` (a file that must not exist
    yet) the store is kept there; otherwise it lives in a temporary directory."""
    if db_path is not None:
        if db_path.exists():
            raise FileExistsError(f"{db_path} exists; the demo starts from an empty store")
        return _tell(db_path, out, seed)
    with tempfile.TemporaryDirectory(prefix="duetime-demo-") as directory:
        return _tell(Path(directory) / "duetime.db", out, seed)


def _tell(db_path: Path, out: TextIO, seed: int) -> DemoResult:
    demo = Demo(db_path, out, seed)
    try:
        demo.intro()
        demo.step_1_create()
        demo.step_2_restart()
        demo.step_3_duplicate_message()
        demo.step_4_move()
        demo.step_5_pause()
        demo.summary()
    finally:
        demo.close()
    return DemoResult(
        demo.schedule_id,
        list(demo.mail.outbox),
        demo.intents_sent,
        demo.before_move,
        demo.after_move,
    )


# --- the command -----------------------------------------------------------------------


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="tell duetime's story on a simulated clock: restarts, duplicates, edits, pause",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--db",
        type=Path,
        help="keep the store in this SQLite file (must not exist) to inspect it afterwards",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"seed for ids (default {DEFAULT_SEED})"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        run_demo(sys.stdout, db_path=args.db, seed=args.seed)
    except FileExistsError as error:
        print(f"duetime demo: {error}", file=sys.stderr)
        return 2
    return 0
