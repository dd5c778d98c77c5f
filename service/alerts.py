"""Sending the watchdog's changed verdicts to the deployment's notification channels.

The rules of what is news are in ``domain.alerts``; this is their use over the
store and a ``Notifier`` (a webhook on one machine, the alarm topic on AWS).

What was last sent about a schedule is the heartbeat ``alert:<schedule_id>``
(its detail: the verdict sent and when), in the leases table the watchdog
already writes, so a restart does not send again. After each page of verdicts
the pass reads those records in one request, and for each schedule whose
verdict is news it first claims the record (a write conditioned on the
record it read), then sends: two passes at once (a repeated invocation) send
one message, not two. A send that fails puts the record back, so the next
pass tries again; it is logged and never fails the pass.

The record is written again when a day old (a heartbeat item expires a week
after its last write on DynamoDB), so a schedule overdue for weeks is not
told again as if new.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from domain.alerts import DEFAULT_MIN_INTERVAL, Alert, Change, Notified, change
from domain.errors import DuetimeError
from domain.schedule import Schedule
from domain.timeparse import format_instant, parse_instant
from domain.watch import Watch, WatchStatus
from service.ports import Heartbeat, Store

ALERT_PREFIX: Final = "alert:"
REFRESH: Final = timedelta(days=1)

_log: Final = logging.getLogger("duetime")


def alert_component(schedule_id: str) -> str:
    return ALERT_PREFIX + schedule_id


def describe_command(schedule_id: str) -> str:
    return f"duetime schedules describe {schedule_id}"


class NotifyFailed(DuetimeError):
    """A channel did not take the message (after its own retries)."""


class Notifier(ABC):
    """A notification channel."""

    @abstractmethod
    def send(self, alert: Alert) -> None:
        """Deliver one message, or raise NotifyFailed."""


@dataclass(frozen=True)
class Alerting:
    """Where changed verdicts go, and how often at most per schedule."""

    notifier: Notifier
    min_interval: timedelta = DEFAULT_MIN_INTERVAL
    # The page that shows a schedule (the local console), when there is one.
    link: Callable[[str], str | None] = field(default=lambda schedule_id: None)


@dataclass
class AlertCounts:
    sent: int = 0
    held: int = 0  # changed within the minimum interval: compared again next pass
    failed: int = 0  # the channel refused; tried again next pass


class Alerts:
    def __init__(self, store: Store, alerting: Alerting) -> None:
        self.store = store
        self.alerting = alerting

    def after_page(
        self, verdicts: Sequence[tuple[Schedule, Watch]], now: datetime, counts: AlertCounts
    ) -> None:
        """Send what is news among one page's verdicts. Never raises: a store or
        channel failure is logged, and the next pass compares again."""
        if not verdicts:
            return
        try:
            records = self.store.leases.heartbeats_of(
                [alert_component(s.schedule_id) for s, _ in verdicts]
            )
        except Exception:
            _log.exception("alert records could not be read", extra={"schedules": len(verdicts)})
            return
        for schedule, verdict in verdicts:
            record = records.get(alert_component(schedule.schedule_id))
            try:
                self._one(schedule, verdict, record, now, counts)
            except Exception:
                _log.exception("alert not sent", extra={"schedule_id": schedule.schedule_id})
                counts.failed += 1

    def _one(
        self,
        schedule: Schedule,
        verdict: Watch,
        record: Heartbeat | None,
        now: datetime,
        counts: AlertCounts,
    ) -> None:
        notified = _notified(record)
        decided = change(verdict.status, notified, now, self.alerting.min_interval)
        if decided is Change.HELD:
            counts.held += 1
            return
        if decided is Change.NONE:
            if record is not None and now - record.at > REFRESH:
                self.store.leases.beat_if(
                    Heartbeat(record.component, now, dict(record.detail)), record.at
                )
            return
        component = alert_component(schedule.schedule_id)
        claim = Heartbeat(
            component,
            now,
            {"status": verdict.status.value, "sent_at": format_instant(now)},
        )
        if not self.store.leases.beat_if(claim, None if record is None else record.at):
            return  # another pass claimed this change: it sends
        alert = Alert(
            schedule_id=schedule.schedule_id,
            name=schedule.current.name,
            status=verdict.status,
            previous=WatchStatus.OK if notified is None else notified.status,
            checked_at=verdict.checked_at,
            last_success_at=verdict.last_success_at,
            expected_at=verdict.expected_at,
            error=verdict.error,
            command=describe_command(schedule.schedule_id),
            url=self.alerting.link(schedule.schedule_id),
        )
        try:
            self.alerting.notifier.send(alert)
        except Exception as error:
            counts.failed += 1
            _log.error(
                "alert not sent",
                extra={
                    "schedule_id": schedule.schedule_id,
                    "verdict": verdict.status.value,
                    "error": f"{type(error).__name__}: {error}",
                },
            )
            self._put_back(claim, record)
            return
        counts.sent += 1
        _log.info(
            "alert sent",
            extra={
                "schedule_id": schedule.schedule_id,
                "verdict": verdict.status.value,
                "previous": alert.previous.value,
            },
        )

    def _put_back(self, claim: Heartbeat, record: Heartbeat | None) -> None:
        """Undo a claim whose message was not sent, so the next pass sends it."""
        if record is None:
            # Never notified before: the record says so (clear, sent long ago).
            before = Heartbeat(
                claim.component,
                claim.at,
                {"status": WatchStatus.OK.value, "sent_at": format_instant(_LONG_AGO)},
            )
        else:
            before = Heartbeat(claim.component, claim.at, dict(record.detail))
        # Conditioned on the claim: a pass that claimed after it keeps its claim.
        # ``at`` stays the claim's, so the condition of the next claim reads it.
        self.store.leases.beat_if(before, claim.at)


_LONG_AGO: Final = datetime.fromisoformat("2000-01-01T00:00:00+00:00")


def _notified(record: Heartbeat | None) -> Notified | None:
    if record is None:
        return None
    try:
        status = WatchStatus(str(record.detail["status"]))
        sent_at = parse_instant(str(record.detail["sent_at"]), "sent_at")
    except (KeyError, ValueError, DuetimeError):
        return None  # unreadable: as if never notified
    return Notified(status, sent_at)
