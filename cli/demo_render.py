"""How `duetime demo` (cli/demo.py) shows its story: tables of what the store
holds, the timeline of who did what, and the ticks it narrates."""

from __future__ import annotations

import textwrap
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Final

from cli.demo_world import HANDOFF_TIMEOUT_S, DemoWorld, Event, Frozen, ProcessKilled
from domain.delivery import format_instant
from domain.run import Run
from domain.spec import spec_to_dict, spec_zone_name
from domain.timezones import load_zone
from service.planning.pass_state import TickReport
from service.ports import Materialization

WIDTH: Final = 96


def as_utc(at: datetime | None) -> str:
    return "-" if at is None else format_instant(at)


def as_clock(at: datetime | None) -> str:
    """``Mon 14:00:00Z``: a short instant for the story's timeline."""
    return "-" if at is None else f"{at.astimezone(UTC):%a %H:%M:%S}Z"


def as_local(at: datetime, zone: str, *, date: bool = True) -> str:
    local = at.astimezone(load_zone(zone))
    return local.strftime("%a %Y-%m-%d %H:%M %Z" if date else "%a %H:%M %Z")


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class DemoView(DemoWorld):
    """The world as the story shows it."""

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
        self.events.append(Event(self.clock.now(), actor, what))

    def show_log(self) -> None:
        rows: list[list[str]] = []
        for event in self.events:
            lines = textwrap.wrap(event.what, 66) or [""]
            rows.append([as_clock(event.at), event.actor, lines[0]])
            rows.extend(["", "", more] for more in lines[1:])
        self.table(["at", "who", "what"], rows)
        self.events = []

    # --- reading the store ----------------------------------------------------------------

    def show_schedule(self) -> None:
        schedule = self.schedule()
        spec = schedule.current.spec
        zone = spec_zone_name(spec)
        state = "paused" if schedule.state.paused else "active"
        if schedule.state.note:
            state += f' (note: "{schedule.state.note}")'
        due = "-"
        if schedule.next_due is not None:
            due = f"{as_utc(schedule.next_due)} ({as_local(schedule.next_due, zone)})"
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
                [as_local(s.scheduled_at, zone), as_utc(s.scheduled_at), str(schedule.version)]
                for s in slots
            ],
        )

    def show_runs(self, columns: Sequence[str]) -> None:
        getters: dict[str, Callable[[Run], str]] = {
            "occurrence_id": lambda r: r.occurrence_id,
            "version": lambda r: str(r.version),
            "scheduled_at (UTC)": lambda r: as_utc(r.scheduled_at),
            "local": lambda r: as_local(r.scheduled_at, self.zone_of(r), date=False),
            "status": lambda r: r.status.value,
            "attempts": lambda r: str(r.attempts),
            "admitted_at": lambda r: as_clock(r.admitted_at),
            "written_at": lambda r: as_clock(r.materialized_at),
            "sent_at": lambda r: as_clock(r.sent_at),
            "started_at": lambda r: as_clock(r.started_at),
            "finished_at": lambda r: as_clock(r.finished_at),
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
                state = f"in flight, visible again at {as_clock(visible)}"
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
                [as_clock(e.sent_at), e.to, e.idempotency_key, str(e.version)]
                for e in self.mail.outbox
            ],
        )

    # --- ticking --------------------------------------------------------------------------

    def tick(self, name: str) -> TickReport:
        process = self.ticks[name]
        written = len(process.schedules.written)
        report = process.ticker.tick_once()
        self.intents_sent += report.dispatch.sent
        self.log(name, self._describe(report, process.schedules.written[written:]))
        return report

    def wrote(self, occurrence_ids: Sequence[str]) -> str:
        """``wrote 1 occurrence: Tue 09:00 EST (v4)``."""
        runs = [
            run for i in occurrence_ids if (run := self.api_store.records.get_run(i)) is not None
        ]
        slots = ", ".join(
            f"{as_local(r.scheduled_at, self.zone_of(r), date=False)} (v{r.version})" for r in runs
        )
        return f"wrote {plural(len(occurrence_ids), 'occurrence')}: {slots}"

    def freeze_mid_tick(self, name: str) -> None:
        """Start a tick of ``name`` that stops between its read and its write,
        on its own thread; return once it has stopped there."""
        process = self.ticks[name]
        frozen = threading.Event()
        thawed = threading.Event()

        def hold(batch: Sequence[Materialization]) -> None:
            for item in batch:
                slots = ", ".join(as_utc(r.scheduled_at) for r in item.occurrences)
                self.log(
                    name,
                    f"read version {item.expected_version}, due {as_utc(item.expected_next_due)}; "
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

        process.schedules.before_write = hold
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
                f"{plural(plan.conflicts, 'write')} refused (the schedule changed since its read)"
            )
        if dispatch.admitted:
            parts.append(f"admitted {dispatch.admitted}")
        closed = plan.skipped + plan.expired + dispatch.skipped + dispatch.expired
        if closed:
            parts.append(f"closed {closed} without admitting")
        if dispatch.sent:
            sent = f"sent {plural(dispatch.sent, 'intent')}"
            if dispatch.resent:
                sent += f" ({dispatch.resent} admitted earlier, never sent)"
            parts.append(sent)
        shards = plural(len(dispatch.shards), "shard")
        return f"tick ({shards}): " + ("; ".join(parts) or "nothing to do")
