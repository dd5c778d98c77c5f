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
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final, TextIO

from adapters.sqlite.queue import SqliteQueue
from cli.demo_render import DemoView, as_clock, as_utc, plural
from cli.demo_world import START_AT, DemoResult, KilledBeforeSend, ProcessKilled
from domain.run import Run, RunStatus
from domain.spec import spec_zone_name
from domain.timezones import load_zone
from handlers.api_models import definition_of
from handlers.intents import IntentBody, apply
from service.run_ports import QueueMessage
from service.runs import RunWorker

DEFAULT_SEED: Final = 5
NEW_YORK: Final = "America/New_York"
LONDON: Final = "Europe/London"
CRON: Final = "0 9 * * MON-FRI"
MAIL_API: Final = {"type": "webhook", "url": "https://mail.example.com/send"}
SUBJECT: Final = "Daily sales (US + EMEA)"
RECIPIENT: Final = "sales-leads@example.com"


class Demo(DemoView):
    """The story, step by step."""

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
                    as_clock(v.created_at),
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
        written = len(tick_1.schedules.written)
        try:
            self.tick("tick-1")
        except ProcessKilled:
            now = self.clock.now()
            held = [
                s for s in self.api_store.leases.leases() if s.owner == "tick-1" and s.live(now)
            ]
            admitted = sum(1 for r in self.runs() if r.admitted_at == now)
            parts = [f"admitted {admitted}", "killed before sending its intent"]
            if tick_1.schedules.written[written:]:
                parts.insert(0, self.wrote(tick_1.schedules.written[written:]))
            self.log("tick-1", f"tick ({plural(len(held), 'shard')}): " + "; ".join(parts))
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
            f"Monday's occurrence: {plural(len(today), 'record')}, "
            f"{plural(len(intents), 'intent id')}: "
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
        what = f"runs {intent.occurrence_id}: {plural(emails, 'email')} sent"
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
            f"Tuesday's 09:00: {plural(len(after), 'record')} for its slot, "
            f"{'unchanged' if unchanged else 'CHANGED'} by the move and the ticks after it ("
            + "; ".join(
                f"{r.occurrence_id}: version {r.version}, {as_utc(r.scheduled_at)}, "
                f"written {as_clock(r.materialized_at)}"
                for r in after
            )
            + f"); {plural(len(at_london), 'record') if at_london else 'none'} at "
            f"{as_utc(in_london)}, Tuesday 09:00 in London. "
            f"{plural(len(self.after_move), 'occurrence')} for {plural(len(slots), 'slot')}."
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
                f"{len(runs)} for {plural(len(keys), 'slot')}: "
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
