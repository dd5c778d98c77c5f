"""The watchdog use case: a verdict per schedule, and the age of the tick's heartbeat.

It reads through the same store ports as everything else, pages through the
schedules (memory does not grow with their number), and records each verdict
as a heartbeat item ``watch:<schedule_id>`` so the API can show it.

Given a time budget (``time_left``), a pass records after each page where
the next page starts (the heartbeat ``watchdog:cursor``) and stops after the
page during which the budget ran out; the next pass resumes there, and the
one after the end starts again from the beginning, so tens of thousands of
schedules are all judged over a few passes, each of which ends before its
function times out, and a pass cut off mid-way loses one page at most.
Counts then cover the schedules judged in that pass (``WatchReport.complete``
says whether that was all of them).

One schedule never fails the pass. A schedule whose verdict cannot be
computed is recorded as ``unknown`` with the error (in its verdict
heartbeat, which the watchdog may write; it does not quarantine the schedule,
which would need writes to the schedules and runs tables it has no business
with, and the tick sets aside on its own what it cannot plan); a schedule
whose runs cannot be read is logged and left for the next pass.

With ``alerting``, each page's verdicts then go to ``service.alerts``, which
tells the deployment's notification channels about those that changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from domain.errors import DuetimeError
from domain.run import Run, RunStatus, paused_until
from domain.schedule import Schedule, error_text
from domain.timeparse import format_instant, parse_instant
from domain.watch import Watch, WatchStatus, watch
from service.alerts import AlertCounts, Alerting, Alerts
from service.ports import Clock, Heartbeat, Store

WATCH_PREFIX: Final = "watch:"
CURSOR_COMPONENT: Final = "watchdog:cursor"
TICK_COMPONENT: Final = "tick"
PAGE: Final = 100
_log: Final = logging.getLogger("duetime")
# How many of a schedule's newest runs are searched for its last success.
RUNS_SEARCHED: Final = 50


@dataclass
class WatchReport:
    checked_at: datetime
    counts: dict[WatchStatus, int] = field(default_factory=dict)
    overdue: list[str] = field(default_factory=list)
    tick_heartbeat_age_s: float | None = None  # None: the tick has never beaten
    unknown: list[str] = field(default_factory=list)  # could not be judged: see the verdict
    unread: list[str] = field(default_factory=list)  # runs not readable: left for next pass
    set_aside: int = 0  # quarantined schedules (by the tick), not judged
    alerts: AlertCounts = field(default_factory=AlertCounts)
    judged: int = 0
    complete: bool = True  # False: the budget ran out; the next pass resumes

    def count(self, status: WatchStatus) -> int:
        return self.counts.get(status, 0)


def watch_component(schedule_id: str) -> str:
    return WATCH_PREFIX + schedule_id


# A user's acknowledgement of a schedule's failure: the heartbeat ``ack:<schedule_id>``
# holds the scheduled instant of the newest failure acknowledged ("until").
ACK_PREFIX: Final = "ack:"
ACK_REFRESH: Final = timedelta(days=1)
# What can be acknowledged: the runs that end badly and leave the slot without success.
ACKNOWLEDGEABLE: Final = frozenset({RunStatus.FAILED, RunStatus.EXPIRED})


def ack_component(schedule_id: str) -> str:
    return ACK_PREFIX + schedule_id


class NothingToAcknowledge(DuetimeError):
    def __init__(self, schedule_id: str, why: str) -> None:
        super().__init__(f"schedule {schedule_id!r} {why}")
        self.schedule_id = schedule_id


@dataclass(frozen=True)
class Acknowledged:
    run: Run  # the failure acknowledged
    at: datetime
    note: str | None
    verdict: Watch | None  # judged again at once (None: quarantined, not judged)


class Watchdog:
    def __init__(self, store: Store, clock: Clock, alerting: Alerting | None = None) -> None:
        self.store = store
        self.clock = clock
        self.alerts = None if alerting is None else Alerts(store, alerting)

    def check(self, schedule: Schedule, now: datetime) -> Watch:
        last_success, accounted = self._evidence(schedule)
        return watch(schedule, last_success, now, accounted)

    def _evidence(self, schedule: Schedule) -> tuple[datetime | None, datetime | None]:
        """The schedule's last success, and the newest slot otherwise accounted
        for: skipped while paused, or a failure a user acknowledged."""
        last_success: datetime | None = None
        accounted: datetime | None = None
        failed_since_success = False
        page = self.store.records.runs(schedule.schedule_id, RUNS_SEARCHED)
        for run in page.items:  # newest scheduled_at first
            if run.status is RunStatus.SUCCEEDED:
                last_success = run.scheduled_at
                break
            if run.status in ACKNOWLEDGEABLE:
                failed_since_success = True
            if accounted is None:
                accounted = paused_until(run)
        if failed_since_success:  # only then can an acknowledgement matter (one more read)
            acknowledged = self._acknowledged(schedule.schedule_id)
            if acknowledged is not None and (accounted is None or acknowledged > accounted):
                accounted = acknowledged
        return last_success, accounted

    # --- acknowledging a failure ----------------------------------------------------

    def _acknowledged(self, schedule_id: str) -> datetime | None:
        """The scheduled instant of the newest failure acknowledged, if any.

        The record is beaten again when a day old: a heartbeat item expires a
        week after its last beat on DynamoDB, and an acknowledgement must
        last as long as the failure it covers is among the newest runs.
        """
        beat = self.store.leases.heartbeat(ack_component(schedule_id))
        if beat is None:
            return None
        until = beat.detail.get("until")
        if not isinstance(until, str):
            return None
        now = self.clock.now()
        if now - beat.at > ACK_REFRESH:
            self.store.leases.beat(Heartbeat(beat.component, now, dict(beat.detail)))
        return parse_instant(until, "until")

    def acknowledge(self, schedule: Schedule, note: str | None = None) -> Acknowledged:
        """Acknowledge the schedule's newest failed or expired run (newer than
        its last success), so that the verdict stops counting it: a failed
        one-off then shows ``ended``, a recurring schedule waits for its next
        slot. The verdict is judged again at once and recorded.

        Refused (NothingToAcknowledge) when there is no such run, or it is
        acknowledged already. Nothing is written then.
        """
        now = self.clock.now()
        failure: Run | None = None
        for run in self.store.records.runs(schedule.schedule_id, RUNS_SEARCHED).items:
            if run.status is RunStatus.SUCCEEDED:
                break
            if run.status in ACKNOWLEDGEABLE and run.scheduled_at <= now:
                failure = run
                break
        if failure is None:
            raise NothingToAcknowledge(
                schedule.schedule_id,
                "has no failed or expired run since its last success to acknowledge",
            )
        previous = self._acknowledged(schedule.schedule_id)
        if previous is not None and previous >= failure.scheduled_at:
            raise NothingToAcknowledge(
                schedule.schedule_id,
                f"has its newest failed run ({failure.occurrence_id}) acknowledged already",
            )
        detail: dict[str, object] = {
            "until": format_instant(failure.scheduled_at),
            "occurrence_id": failure.occurrence_id,
            "note": note,
        }
        self.store.leases.beat(Heartbeat(ack_component(schedule.schedule_id), now, detail))
        verdict: Watch | None = None
        if schedule.quarantine is None:  # a quarantined schedule is not judged
            verdict = self.check(schedule, now)
            self.store.leases.beat(
                Heartbeat(watch_component(schedule.schedule_id), now, _detail(verdict))
            )
        return Acknowledged(failure, now, note, verdict)

    def run(self, time_left: Callable[[], float] | None = None) -> WatchReport:
        """Judge the schedules; with ``time_left`` (seconds), resume from the
        last pass's cursor, save it after each page, and stop once it reaches
        zero (see the module doc)."""
        now = self.clock.now()
        report = WatchReport(checked_at=now)
        token = self._cursor() if time_left is not None else None
        from_start = token is None
        while True:
            # The verdict reads the runs, not next_due: no lookup of it.
            page = self.store.schedules.list_schedules(PAGE, token, next_due=False)
            judged: list[tuple[Schedule, Watch]] = []
            for schedule in page.items:
                if schedule.quarantine is not None:
                    report.set_aside += 1
                    continue
                verdict = self._judge(schedule, now, report)
                if verdict is not None:
                    judged.append((schedule, verdict))
            if self.alerts is not None:
                self.alerts.after_page(judged, now, report.alerts)
            token = page.next_token
            if time_left is not None:  # where the next page starts (None: the beginning)
                self.store.leases.beat(Heartbeat(CURSOR_COMPONENT, now, {"token": token}))
            if token is None or (time_left is not None and time_left() <= 0):
                break
        report.complete = from_start and token is None
        tick = self.store.leases.heartbeat(TICK_COMPONENT)
        if tick is not None:
            report.tick_heartbeat_age_s = max(0.0, (now - tick.at).total_seconds())
        return report

    def _judge(self, schedule: Schedule, now: datetime, report: WatchReport) -> Watch | None:
        """One schedule's verdict, recorded; None when its runs could not be read."""
        schedule_id = schedule.schedule_id
        try:
            last_success, accounted = self._evidence(schedule)
        except Exception as error:  # the store's trouble, not the schedule's: next pass
            report.unread.append(schedule_id)
            _log.error(
                "schedule not judged: its runs could not be read",
                extra={"schedule_id": schedule_id, "error": error_text(error)},
            )
            return None
        try:
            verdict = watch(schedule, last_success, now, accounted)
            detail = _detail(verdict)
        except Exception as error:  # the schedule's own trouble: recorded, and told
            verdict = Watch(
                schedule_id, WatchStatus.UNKNOWN, now, None, last_success, None, error_text(error)
            )
            detail = _detail(verdict)
            report.unknown.append(schedule_id)
            _log.error(
                "schedule cannot be judged",
                extra={"schedule_id": schedule_id, "error": verdict.error},
            )
        report.judged += 1
        report.counts[verdict.status] = report.counts.get(verdict.status, 0) + 1
        if verdict.status is WatchStatus.OVERDUE:
            report.overdue.append(schedule_id)
        self.store.leases.beat(Heartbeat(watch_component(schedule_id), now, detail))
        return verdict

    def _cursor(self) -> str | None:
        beat = self.store.leases.heartbeat(CURSOR_COMPONENT)
        token = None if beat is None else beat.detail.get("token")
        return token if isinstance(token, str) else None

    def verdict(self, schedule_id: str) -> dict[str, object] | None:
        """The last recorded verdict of a schedule (for the API), or None."""
        beat = self.store.leases.heartbeat(watch_component(schedule_id))
        return dict(beat.detail) if beat is not None else None


def _detail(verdict: Watch) -> dict[str, object]:
    return {
        "status": verdict.status.value,
        "checked_at": format_instant(verdict.checked_at),
        "expected_at": format_instant(verdict.expected_at) if verdict.expected_at else None,
        "last_success_at": (
            format_instant(verdict.last_success_at) if verdict.last_success_at else None
        ),
        "grace_s": verdict.grace.total_seconds() if verdict.grace is not None else None,
        **({"error": verdict.error} if verdict.error is not None else {}),
    }
