"""The web console in a real browser: headless Chromium (Debian's package) over the local stack.

A person's path through it: open /console, create a schedule with the page's
form, watch its first run arrive on its page, pause it; then find a failed run
and its dead letter, and send it again. Screenshots are written to
$DUETIME_CONSOLE_SCREENSHOTS when set (docs/console/ holds the committed ones),
else to the test's temporary directory.

Select these tests with ``-m browser``; ``.ci/run`` installs chromium and
chromium-driver before ``make test``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite.queue import SqliteQueue
from tests.browser.support import HOSTILE_NAME, WAIT_S, Hooks
from tests.browser.support import css as _css
from tests.browser.support import errors as _errors
from tests.browser.support import post as _post
from tests.browser.support import shoot as _shoot
from tests.browser.support import wait as _wait
from tests.scenarios.local_processes import ROOT, call, free_port, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_create_a_schedule_see_it_run_and_pause_it_in_the_browser(
    stack: str, hooks: Hooks, browser: Any, shots: Path
) -> None:
    from selenium.webdriver.support.ui import Select

    browser.get(f"{stack}/console")
    _wait(browser, "the schedules page", lambda d: "No schedules yet" in d.page_source)

    # Given a schedule created with the page's form, every 2 seconds, to a webhook.
    _css(browser, "#create > summary")[0].click()
    _css(browser, "#c-name")[0].send_keys(HOSTILE_NAME)
    Select(_css(browser, "select[name=kind]")[0]).select_by_value("every")
    _css(browser, "input[name=when]")[0].send_keys("PT2S")
    _css(browser, "input[name=url]")[0].send_keys(hooks.url("ok"))
    _css(browser, "textarea[name=payload]")[0].send_keys('{"report": "sales"}')
    Select(_css(browser, "#c-overdue")[0]).select_by_value("catch_up_all")
    _css(browser, "#c-max-attempts")[0].send_keys("3")
    # The form shows the next runs it would make before anything is saved.
    _wait(browser, "the preview", lambda d: len(_css(d, "#create-form .preview tbody tr")) == 5)
    _shoot(browser, shots / "create.png")
    _css(browser, "#create-form button[type=submit]")[0].click()

    # Then its page opens, shows the signing secret once, and the name as text.
    _wait(browser, "the schedule's page", lambda d: "#/schedules/sch_" in d.current_url)
    schedule_id = browser.current_url.rsplit("/", 1)[1]
    secret = _wait(browser, "the secret", lambda d: _css(d, "#webhook-secret"))[0].text
    assert len(secret) >= 32
    _wait(browser, "the name", lambda d: _css(d, "h1")[0].text == HOSTILE_NAME)
    assert _css(browser, "main img, main b") == []
    schedule = call("GET", f"{stack}/schedules/{schedule_id}")
    assert schedule["name"] == HOSTILE_NAME and schedule["payload"] == {"report": "sales"}
    assert schedule["policy"]["overdue"] == "catch_up_all"
    assert schedule["policy"]["retry"]["max_attempts"] == 3

    # When its first run is delivered, it appears among the recent runs by itself.
    _wait(
        browser,
        "a succeeded run",
        lambda d: _css(d, 'tr[data-run][data-status="succeeded"]'),
    )
    assert hooks.keys and hooks.keys[0].startswith(schedule_id)
    row = _css(browser, 'tr[data-run][data-status="succeeded"]')[0]
    occurrence = row.get_attribute("data-run")
    _css(row, "button.attempts")[0].click()
    attempts = _wait(
        browser,
        "its attempts",
        lambda d: [
            t for t in _css(d, f'tr[data-attempts-of="{occurrence}"] table') if t.is_displayed()
        ],
    )
    assert "succeeded" in attempts[0].text and "200" in attempts[0].text
    _shoot(browser, shots / "schedule.png")

    # When Pause is pressed with a note, the page says paused, and so does the API.
    _css(browser, "#pause-note")[0].send_keys("quarter close")
    _css(browser, "#pause")[0].click()
    _wait(
        browser,
        "the paused badge",
        lambda d: _css(d, '.actions .badge[data-status="paused"]'),
    )
    _wait(browser, "Resume enabled", lambda d: _css(d, "#resume")[0].is_enabled())
    assert not _css(browser, "#pause")[0].is_enabled()
    assert "quarter close" in browser.page_source
    paused = call("GET", f"{stack}/schedules/{schedule_id}")
    assert paused["state"] == {"paused": True, "note": "quarter close"}

    # And its last success is the newest succeeded run's (not the watchdog's last look).
    def newest_success() -> str:
        path = f"{stack}/schedules/{schedule_id}/runs?status=succeeded&limit=1"
        return str(call("GET", path)["runs"][0]["finished_at"])

    _wait(
        browser,
        "the last success",
        lambda d: newest_success() in str(_css(d, "#last-success span")[0].get_attribute("title")),
    )

    # And the list shows it paused, with its last run, beside another schedule.
    # America/New_York springs forward on 2027-03-14 at 02:00 EST to 03:00 EDT:
    # 02:30 does not exist that day.
    nightly = _post(
        f"{stack}/schedules",
        {
            "name": "nightly export",
            "spec": {
                "cron": "30 2 * * *",
                "time_zone": "America/New_York",
                "start_at": "2027-03-12T00:00:00-05:00",
            },
            "policy": {"dst_gap": "next_valid"},
            "target": {"type": "webhook", "url": hooks.url("ok")},
        },
    )
    browser.get(f"{stack}/console#/")
    _wait(
        browser,
        "the list",
        lambda d: _css(d, f'tr[data-schedule="{schedule_id}"] .badge[data-status="paused"]'),
    )
    _wait(
        browser,
        "the last run",
        lambda d: _css(d, f'tr[data-schedule="{schedule_id}"] .badge[data-status="succeeded"]'),
    )
    _shoot(browser, shots / "schedules.png")

    # And the other's page notes the slot that daylight saving moves.
    _css(browser, f'tr[data-schedule="{nightly["id"]}"] a')[0].click()
    note = _wait(browser, "the DST note", lambda d: _css(d, ".note"))
    assert "02:30 does not exist" in note[0].text
    # Each time in the schedule's zone with its date, and in UTC.
    assert "2027-03-14 03:00:00 EDT" in browser.page_source
    assert "2027-03-14 07:00:00Z" in browser.page_source
    _shoot(browser, shots / "dst.png")
    assert _errors(browser) == []


def test_a_failed_run_and_a_dead_letter_are_listed_and_the_run_sent_again(
    stack: str, hooks: Hooks, browser: Any, shots: Path, tmp_path: Path
) -> None:
    # Given a message the worker cannot run (not an intent): it is dead-lettered.
    queue = SqliteQueue(tmp_path / "data" / "duetime.db")
    queue.send_body('{"not": "an intent"}')
    queue.close()
    wait_for(lambda: call("GET", f"{stack}/dead-letters")["dead_letters"], WAIT_S, "a dead letter")
    # And a one-off whose webhook answers 400: failed at once (a failed run says
    # why on its record; it leaves no dead letter).
    at = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    created = _post(
        f"{stack}/schedules",
        {
            "name": "invoice sync",
            "spec": {"at": at.isoformat()},
            "target": {"type": "webhook", "url": hooks.url("broken")},
            "policy": {"retry": {"max_attempts": 1}},
        },
    )
    schedule_id = created["id"]

    def failed() -> bool:
        runs = call("GET", f"{stack}/schedules/{schedule_id}/runs")["runs"]
        return any(run["status"] == "failed" for run in runs)

    wait_for(failed, WAIT_S, "the failed run")

    # When the failed runs page is opened, the run and the dead letter are there.
    browser.get(f"{stack}/console#/failed")
    run_row = _wait(
        browser, "the failed run", lambda d: _css(d, 'tr[data-run][data-status="failed"]')
    )
    assert "invoice sync" in run_row[0].text
    _wait(browser, "the dead letter", lambda d: _css(d, "tr[data-dead-letter]"))
    _shoot(browser, shots / "failed.png")

    # Then Retry runs it again under the same occurrence id and idempotency key.
    sent_before = len(hooks.keys)
    _css(run_row[0], "button.retry")[0].click()
    _wait(browser, "the retry notice", lambda d: "Retrying" in _css(d, "#notice")[0].text)
    wait_for(lambda: len(hooks.keys) > sent_before, WAIT_S, "the retried delivery")
    assert len(set(hooks.keys)) == 1  # one key: the same occurrence
    assert _errors(browser) == []


def test_duetime_console_serves_the_page_and_signs_its_calls_to_the_api(
    stack: str, hooks: Hooks, browser: Any, tmp_path: Path
) -> None:
    # Given `duetime console` in front of the stack (standing in for a deployed API:
    # it takes the signed calls as they are), with dummy credentials.
    port = free_port()
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "console", "--api-url", stack, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    console = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: call("GET", f"{console}/health")["status"] == "ok", 30, "the console")
        created = _post(
            f"{stack}/schedules",
            {
                "name": "weekly digest",
                "spec": {"cron": "0 8 * * MON", "time_zone": "America/New_York"},
                "target": {"type": "webhook", "url": hooks.url("ok")},
            },
        )

        # When the page is opened through it and Trigger is pressed,
        browser.get(f"{console}/console")
        link = _wait(
            browser,
            "the schedule",
            lambda d: _css(d, f'tr[data-schedule="{created["id"]}"] a'),
        )
        link[0].click()
        _wait(browser, "the trigger button", lambda d: _css(d, "#trigger"))[0].click()
        _wait(browser, "the trigger notice", lambda d: "Triggered" in _css(d, "#notice")[0].text)

        # Then the stack got the trigger, and the run shows on the page.
        runs = call("GET", f"{stack}/schedules/{created['id']}/runs")["runs"]
        assert [run["kind"] for run in runs] == ["trigger"]
        _wait(browser, "the triggered run", lambda d: _css(d, "tr[data-run]"))
        assert _errors(browser) == []
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert f"duetime console: {console}/console" in out.decode()


def test_sections_an_api_does_not_serve_say_so_and_the_rest_shows(
    stack: str, hooks: Hooks, browser: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.console import Forwarder, SigningClient, console_page
    from cli.local_http import ApiServer

    # Given an API without versions (an older one) and without a dead-letter listing
    # (as on AWS), in front of the stack.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    forward = Forwarder(SigningClient(stack, region="us-east-1"))

    def older_api(event: dict[str, Any], context: Any) -> dict[str, Any]:
        path = event["path"]
        if path.startswith("/dead-letters"):
            error = {"code": "not_available", "message": "SQS cannot list without receiving"}
            return {"statusCode": 501, "body": json.dumps({"error": {**error, "field": None}})}
        if path.endswith("/versions"):
            error = {"code": "no_route", "message": f"no route for GET {path}"}
            return {"statusCode": 404, "body": json.dumps({"error": {**error, "field": None}})}
        return forward(event, context)

    server = ApiServer(older_api, pages=console_page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        created = _post(
            f"{stack}/schedules",
            {
                "name": "hourly sync",
                "spec": {"cron": "0 * * * *"},
                "target": {"type": "webhook", "url": hooks.url("ok")},
            },
        )
        browser.get(f"{server.url}/console#/schedules/{created['id']}")
        _wait(browser, "the overview", lambda d: "cron 0 * * * *" in d.page_source)
        assert "This API does not serve versions" in browser.page_source
        assert _css(browser, "#pause")[0].is_enabled()

        browser.get(f"{server.url}/console#/failed")
        _wait(
            browser,
            "the dead letters' reason",
            lambda d: "Not available in this deployment: SQS cannot list" in d.page_source,
        )
        _wait(browser, "the failed runs", lambda d: "No runs yet." in d.page_source)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_the_create_form_shows_what_the_api_refused_and_nothing_is_created(
    stack: str, hooks: Hooks, browser: Any
) -> None:
    from selenium.webdriver.support.ui import Select

    browser.get(f"{stack}/console")
    _wait(browser, "the schedules page", lambda d: "No schedules yet" in d.page_source)
    _css(browser, "#create > summary")[0].click()
    _css(browser, "#c-name")[0].send_keys("bad cron")
    Select(_css(browser, "select[name=kind]")[0]).select_by_value("cron")
    _css(browser, "#c-when")[0].send_keys("61 * * * *")
    _css(browser, "#c-url")[0].send_keys(hooks.url("ok"))
    _css(browser, "#create-form button[type=submit]")[0].click()
    problem = _wait(browser, "the refusal", lambda d: _css(d, "#create-form p.error")[0].text)
    assert "HTTP 422" in problem and "spec.cron" in problem

    # A payload that is not JSON is refused before anything is sent.
    _css(browser, "#c-when")[0].clear()
    _css(browser, "#c-when")[0].send_keys("0 * * * *")
    _css(browser, "#c-payload")[0].send_keys("{not json")
    _css(browser, "#create-form button[type=submit]")[0].click()
    _wait(
        browser,
        "the payload refusal",
        lambda d: "The payload is not JSON" in _css(d, "#create-form p.error")[0].text,
    )
    assert call("GET", f"{stack}/schedules")["schedules"] == []
    assert "#/schedules/" not in browser.current_url
    # The one refused request is the 422 (logged by the browser as a failed load).
    assert [e for e in _errors(browser) if "422" not in e["message"]] == []
