"""Alerts that reach a person: a changed verdict is one message, on both stores.

A schedule due at 09:00 every day; its runs are written straight into the
store (failed, then succeeded), and the watchdog runs on a fake clock. The
channel is the local stack's notification webhook, posting to a receiver on
127.0.0.1, or a recording channel where the HTTP part is not the point.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import service.watchdog as watchdog_module
from adapters.notify import WebhookNotifier
from domain.alerts import Alert
from domain.run import RunStatus
from domain.schedule import Schedule
from domain.watch import WatchStatus
from service.alerts import Alerting, Notifier, NotifyFailed, alert_component
from service.ports import Store
from service.watchdog import Watchdog
from tests.conftest import FakeClock, build_occurrence, build_schedule, utc
from tests.contract.conftest import STORES

CREATED = utc("2026-12-01T08:00:00Z")
DAILY = {"cron": "0 9 * * *", "time_zone": "UTC"}
# 09:00 came due; the grace of a daily schedule is its run timeout plus two minutes.
OVERDUE_AT = utc("2026-12-01T10:00:00Z")
MINUTE = timedelta(minutes=1)


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    yield from STORES[request.param](tmp_path)


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps each body it is posted; ``fail``
    makes it answer 503 to that many posts first."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.fail = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                data = json.loads(self.rfile.read(length))
                if receiver.fail:
                    receiver.fail -= 1
                    self.send_response(503)
                else:
                    receiver.bodies.append(data)
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


class Recording(Notifier):
    def __init__(self) -> None:
        self.sent: list[Alert] = []
        self.broken = False

    def send(self, alert: Alert) -> None:
        if self.broken:
            raise NotifyFailed("channel down")
        self.sent.append(alert)


def daily(store: Store) -> Schedule:
    schedule = build_schedule(CREATED, spec=DAILY, name="nightly report")
    store.schedules.create(schedule)
    return schedule


def run(store: Store, schedule: Schedule, day: int, status: RunStatus) -> None:
    """The run of 09:00 on December ``day``, finished with ``status``."""
    at = utc(f"2026-12-{day:02d}T09:00:00Z")
    slot = build_occurrence(replace(schedule, next_due=at), at)
    assert slot.scheduled_at == at
    store.records.insert([replace(slot, status=status)])


def test_a_schedule_that_starts_failing_is_one_message_and_one_more_when_it_recovers(
    store: Store, receiver: Receiver
) -> None:
    schedule = daily(store)
    clock = FakeClock(utc("2026-12-01T08:30:00Z"))
    alerting = Alerting(
        WebhookNotifier(receiver.url),
        min_interval=timedelta(minutes=10),
        link=lambda sid: f"http://127.0.0.1:8080/console#/schedules/{sid}",
    )
    watchdog = Watchdog(store, clock, alerting)
    watchdog.run()  # ok: nothing to say
    assert receiver.bodies == []

    run(store, schedule, 1, RunStatus.FAILED)
    for minutes in (0, 1, 2):  # overdue, and still overdue on the passes after
        clock.set(OVERDUE_AT + minutes * MINUTE)
        watchdog.run()
    [overdue] = receiver.bodies
    assert overdue["schedule_id"] == schedule.schedule_id
    assert overdue["name"] == "nightly report"
    assert (overdue["verdict"], overdue["previous"]) == ("overdue", "ok")
    assert overdue["last_success_at"] is None
    assert overdue["expected_at"] == "2026-12-01T09:00:00Z"
    assert overdue["command"] == f"duetime schedules describe {schedule.schedule_id}"
    assert overdue["url"].endswith(f"#/schedules/{schedule.schedule_id}")
    assert overdue["text"].startswith("duetime: schedule 'nightly report' is overdue")

    run(store, schedule, 2, RunStatus.SUCCEEDED)
    for at in ("2026-12-02T09:05:00Z", "2026-12-02T09:06:00Z"):
        clock.set(utc(at))
        watchdog.run()
    assert len(receiver.bodies) == 2
    recovered = receiver.bodies[1]
    assert (recovered["verdict"], recovered["previous"]) == ("ok", "overdue")
    assert recovered["last_success_at"] == "2026-12-02T09:00:00Z"


def test_a_restart_does_not_send_again(store: Store) -> None:
    schedule = daily(store)
    run(store, schedule, 1, RunStatus.FAILED)
    clock = FakeClock(OVERDUE_AT)
    first = Recording()
    Watchdog(store, clock, Alerting(first)).run()
    assert len(first.sent) == 1
    # A new process: what was sent is read back from the store.
    clock.set(OVERDUE_AT + timedelta(hours=3))
    second = Recording()
    Watchdog(store, clock, Alerting(second)).run()
    assert second.sent == []


def hourly(store: Store) -> Schedule:
    """Due every hour, overdue 10 minutes after a slot without success."""
    schedule = build_schedule(
        CREATED, spec={"cron": "0 * * * *", "time_zone": "UTC"}, policy={"grace": "PT10M"}
    )
    store.schedules.create(schedule)
    return schedule


def hour_run(store: Store, schedule: Schedule, hour: int, status: RunStatus) -> None:
    at = utc(f"2026-12-01T{hour:02d}:00:00Z")
    slot = build_occurrence(replace(schedule, next_due=at), at)
    store.records.insert([replace(slot, status=status)])


def test_a_flapping_schedule_is_told_at_most_once_an_interval_with_its_latest_state(
    store: Store,
) -> None:
    schedule = hourly(store)
    clock = FakeClock(utc("2026-12-01T09:20:00Z"))
    channel = Recording()
    watchdog = Watchdog(store, clock, Alerting(channel, min_interval=timedelta(hours=1)))
    hour_run(store, schedule, 9, RunStatus.FAILED)
    watchdog.run()
    assert [a.status for a in channel.sent] == [WatchStatus.OVERDUE]

    # It recovers 42 minutes later: held, the interval is not over.
    hour_run(store, schedule, 10, RunStatus.SUCCEEDED)
    clock.set(utc("2026-12-01T10:02:00Z"))
    report = watchdog.run()
    assert report.alerts.held == 1 and len(channel.sent) == 1
    # The interval over, the latest state (ok) is sent, once.
    clock.set(utc("2026-12-01T10:21:00Z"))
    watchdog.run()
    watchdog.run()
    assert [a.status for a in channel.sent] == [WatchStatus.OVERDUE, WatchStatus.OK]


def test_a_change_that_turns_back_within_the_interval_says_nothing(store: Store) -> None:
    schedule = hourly(store)
    clock = FakeClock(utc("2026-12-01T09:20:00Z"))
    channel = Recording()
    watchdog = Watchdog(store, clock, Alerting(channel, min_interval=timedelta(hours=2)))
    hour_run(store, schedule, 9, RunStatus.FAILED)
    watchdog.run()
    hour_run(store, schedule, 10, RunStatus.SUCCEEDED)
    clock.set(utc("2026-12-01T10:02:00Z"))
    assert watchdog.run().alerts.held == 1
    hour_run(store, schedule, 11, RunStatus.FAILED)
    clock.set(utc("2026-12-01T11:20:00Z"))  # overdue again, the interval over
    report = watchdog.run()
    assert report.count(WatchStatus.OVERDUE) == 1 and report.alerts.held == 0
    assert [a.status for a in channel.sent] == [WatchStatus.OVERDUE]  # still what was said


def test_a_channel_that_fails_is_logged_and_tried_again_next_pass(
    store: Store, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    schedule = daily(store)
    run(store, schedule, 1, RunStatus.FAILED)
    clock = FakeClock(OVERDUE_AT)
    notifier = WebhookNotifier(receiver.url, retries=1, backoff_s=0)
    watchdog = Watchdog(store, clock, Alerting(notifier))
    receiver.fail = 2  # the attempt and its retry

    report = watchdog.run()

    assert report.alerts.failed == 1 and report.judged == 1 and receiver.bodies == []
    assert any(r.getMessage() == "alert not sent" for r in caplog.records)
    clock.set(OVERDUE_AT + MINUTE)
    assert watchdog.run().alerts.sent == 1
    assert [b["verdict"] for b in receiver.bodies] == ["overdue"]


def test_a_channel_that_cannot_be_reached_never_fails_the_pass(store: Store) -> None:
    schedule = daily(store)
    run(store, schedule, 1, RunStatus.FAILED)
    # Nothing listens on port 9 of this machine: refused at once.
    notifier = WebhookNotifier("http://127.0.0.1:9/", retries=0, timeout_s=1)
    report = Watchdog(store, FakeClock(OVERDUE_AT), Alerting(notifier)).run()
    assert report.alerts.failed == 1 and report.count(WatchStatus.OVERDUE) == 1


def test_two_passes_at_once_send_one_message(store: Store) -> None:
    """The claim is conditioned on the record both passes read: the second loses."""
    schedule = daily(store)
    run(store, schedule, 1, RunStatus.FAILED)
    channel = Recording()
    clock = FakeClock(OVERDUE_AT)
    first = Watchdog(store, clock, Alerting(channel))
    second = Watchdog(store, clock, Alerting(channel))
    real = store.leases.heartbeats_of
    seen = real([alert_component(schedule.schedule_id)])  # what both read: nothing

    def stale(components: Any) -> Any:
        return dict(seen)

    first.run()
    store.leases.heartbeats_of = stale  # type: ignore[method-assign]
    try:
        second.run()
    finally:
        store.leases.heartbeats_of = real  # type: ignore[method-assign]
    assert len(channel.sent) == 1


def test_a_schedule_that_cannot_be_judged_is_told_with_its_error(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = daily(store)

    def broken(*args: Any) -> Any:
        raise OverflowError("date value out of range")

    monkeypatch.setattr(watchdog_module, "watch", broken)
    channel = Recording()
    Watchdog(store, FakeClock(OVERDUE_AT), Alerting(channel)).run()
    [alert] = channel.sent
    assert alert.status is WatchStatus.UNKNOWN and alert.schedule_id == schedule.schedule_id
    assert alert.error == "OverflowError: date value out of range"
    assert "cannot be judged" in alert.title


def test_the_slack_format_posts_the_text(receiver: Receiver, tmp_path: Path) -> None:
    store = next(STORES["sqlite"](tmp_path))
    schedule = daily(store)
    run(store, schedule, 1, RunStatus.FAILED)
    Watchdog(store, FakeClock(OVERDUE_AT), Alerting(WebhookNotifier(receiver.url, "slack"))).run()
    [body] = receiver.bodies
    assert list(body) == ["text"]
    assert body["text"].splitlines()[0] == "duetime: schedule 'nightly report' is overdue"
    assert f"see: duetime schedules describe {schedule.schedule_id}" in body["text"]


def test_duetime_local_notify_options_make_the_watchdogs_channel(
    receiver: Receiver, tmp_path: Path
) -> None:
    from cli.local import LocalStack
    from cli.main import build_parser
    from cli.notify import alerting as local_alerting

    args = build_parser().parse_args(
        [
            "local",
            "--data-dir",
            str(tmp_path),
            "--port",
            "8181",
            "--notify-url",
            receiver.url,
            "--notify-format",
            "slack",
            "--notify-min-interval",
            "1h",
        ]
    )
    stack = LocalStack(args)
    alerting = local_alerting(args)
    assert alerting is not None
    assert alerting.min_interval == timedelta(hours=1)
    assert "telling " + receiver.url in stack.banner()
    store = next(STORES["sqlite"](tmp_path))
    schedule = daily(store)
    run(store, schedule, 1, RunStatus.FAILED)
    Watchdog(store, FakeClock(OVERDUE_AT), alerting).run()
    [body] = receiver.bodies
    assert f"http://127.0.0.1:8181/console#/schedules/{schedule.schedule_id}" in body["text"]
    # Without --notify-url, no channel.
    plain = build_parser().parse_args(["local", "--data-dir", str(tmp_path)])
    assert local_alerting(plain) is None
