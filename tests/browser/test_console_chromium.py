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
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.local_processes import ROOT, call, free_port, start, stop, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_S = 45
# A name a careless page would run as HTML.
HOSTILE_NAME = '<img src=x onerror="document.title=1"> sales & <b>report</b>'


class Hooks(ThreadingHTTPServer):
    """A webhook receiver: /ok answers 200, /broken answers 400 (not retried: dead-lettered)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _HookHandler)
        self.keys: list[str] = []
        self.lock = threading.Lock()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{path}"


class _HookHandler(BaseHTTPRequestHandler):
    server: Hooks

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.keys.append(self.headers.get("Idempotency-Key", ""))
        self.send_response(200 if self.path == "/ok" else 400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def hooks() -> Iterator[Hooks]:
    server = Hooks()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[str]:
    """`duetime local` on a free port over a fresh data directory; its URL."""
    port = free_port()
    process = start(
        tmp_path / "data",
        "--port",
        str(port),
        "--echo-port",
        "0",
        "--tick-interval",
        "0.2",
        "--worker-processes",
        "1",
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: call("GET", f"{url}/health")["status"] == "ok", 30, "the local stack")
        yield url
    finally:
        stop(process)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if shutil.which(p) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not found: `apt-get install -y chromium chromium-driver` "
            "(.ci/run does), or leave these tests out with -m 'not browser'"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("DUETIME_CONSOLE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _wait(driver: Any, what: str, check: Any) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S, poll_frequency=0.2).until(
        lambda d: check(d), message=f"waited {WAIT_S} s for {what}"
    )


def _css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    found: list[Any] = driver.find_elements(By.CSS_SELECTOR, selector)
    return found


def _shoot(driver: Any, path: Path) -> None:
    """The whole page, as a person sees it from the top."""
    driver.execute_script("window.scrollTo(0, 0)")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(900, int(height) + 160), 2400))
    driver.save_screenshot(str(path))
    driver.set_window_size(1280, 900)


def _errors(driver: Any) -> list[dict[str, Any]]:
    # Script errors, and requests the API refused (a query parameter it does not
    # take, a route it does not have): each a bug of the page.
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def _post(url: str, body: Any) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


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
    assert "2027-03-14 07:00:00Z" in browser.page_source
    _shoot(browser, shots / "dst.png")
    assert _errors(browser) == []


def test_a_failed_run_and_its_dead_letter_are_listed_and_sent_again(
    stack: str, hooks: Hooks, browser: Any, shots: Path
) -> None:
    # Given a one-off whose webhook answers 400: failed at once, dead-lettered.
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

    # When the failed runs page is opened, the run and its dead letter are there.
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
    from handlers.local_http import ApiServer

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
