"""Changing a schedule from the web console, in headless Chromium over the local stack.

A person's path through each change: edit every field (and meet a conflict when
someone else edited first), delete after saying yes, backfill a range after
seeing its slots, rotate the signing secret and copy it the one time it is
shown, cancel a run that has not ended, and find a schedule in a long list.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.browser.support import Hooks, css, errors, post, send, shoot, wait
from tests.scenarios.local_processes import call

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NEW_YORK_WEEKDAYS = {"cron": "0 9 * * MON-FRI", "time_zone": "America/New_York"}


def _type(driver: Any, selector: str, text: str) -> None:
    field = css(driver, selector)[0]
    field.clear()
    field.send_keys(text)


def _choose(driver: Any, selector: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(css(driver, selector)[0]).select_by_value(value)


def _value(driver: Any, selector: str) -> str:
    return str(css(driver, selector)[0].get_attribute("value"))


def _open(driver: Any, stack: str, schedule_id: str) -> None:
    driver.get(f"{stack}/console#/schedules/{schedule_id}")
    wait(
        driver, "the schedule's page", lambda d: css(d, "#edit") and css(d, "#edit")[0].is_enabled()
    )


def _notice(driver: Any, words: str) -> None:
    wait(driver, f"the notice {words!r}", lambda d: words in css(d, "#notice")[0].text)


def _edit_every_field(driver: Any) -> None:
    _type(driver, "#e-name", "sales report (EU)")
    _type(driver, "#e-when", "30 8 * * MON-FRI")
    _type(driver, "#e-zone", "Europe/London")
    _type(driver, "#e-start-at", "2027-01-04T00:00:00Z")
    _type(driver, "#e-end-at", "2027-12-31T00:00:00Z")
    _type(driver, "#e-payload", '{"region": "eu"}')
    _choose(driver, "#e-overdue", "expire")
    _type(driver, "#e-catchup-window", "PT10M")
    _choose(driver, "#e-dst-gap", "skip")
    _choose(driver, "#e-dst-fold", "first")
    _choose(driver, "#e-overlap", "skip")
    _type(driver, "#e-max-attempts", "2")
    _type(driver, "#e-base", "PT2S")
    _type(driver, "#e-cap", "PT20S")
    _type(driver, "#e-run-timeout", "PT5M")
    _type(driver, "#e-grace", "PT30M")


def test_an_edit_saves_every_field_with_if_match_and_a_conflict_is_shown_with_a_reload(
    stack: str, hooks: Hooks, browser: Any, shots: Path
) -> None:
    created = post(
        f"{stack}/schedules",
        {
            "name": "sales report",
            "spec": NEW_YORK_WEEKDAYS,
            "target": {"type": "webhook", "url": hooks.url("ok")},
        },
    )
    url = f"{stack}/schedules/{created['id']}"
    _open(browser, stack, created["id"])

    # Given the edit form, filled with version 1 as read.
    css(browser, "#edit")[0].click()
    wait(browser, "the edit form", lambda d: css(d, "#edit-form"))
    assert _value(browser, "#e-name") == "sales report"
    assert _value(browser, "#e-when") == "0 9 * * MON-FRI"
    assert _value(browser, "#e-zone") == "America/New_York"
    assert _value(browser, "#e-url") == hooks.url("ok")
    assert _value(browser, "#e-max-attempts") == "5"

    # When every field is changed, and someone else saves version 2 meanwhile,
    _edit_every_field(browser)
    wait(
        browser,
        "the preview",
        lambda d: "LOCAL (EUROPE/LONDON)" in css(d, "#edit-form .preview")[0].text.upper(),
    )
    theirs = {**created, "spec": {**NEW_YORK_WEEKDAYS, "cron": "0 10 * * MON-FRI"}}
    body = {k: theirs[k] for k in ("name", "spec", "target")}
    assert send("PUT", url, body, **{"If-Match": '"1"'})[0] == 200
    css(browser, "#edit-form button[type=submit]")[0].click()

    # Then the save is refused plainly, and nothing of it is written.
    conflict = wait(browser, "the conflict", lambda d: css(d, "#edit-conflict .conflict"))[0]
    assert "HTTP 412" in conflict.text and "you edited version 1" in conflict.text
    stored = call("GET", url)
    assert stored["version"] == 2 and stored["spec"]["cron"] == "0 10 * * MON-FRI"
    assert stored["name"] == "sales report"
    shoot(browser, shots / "edit.png")

    # When the latest version is reloaded, the form holds version 2; changed and saved again,
    css(browser, "#edit-reload")[0].click()
    wait(
        browser, "version 2 in the form", lambda d: "version 2" in css(d, "#edit-panel h2")[0].text
    )
    assert _value(browser, "#e-when") == "0 10 * * MON-FRI"
    assert css(browser, "#edit-conflict .conflict") == []
    _edit_every_field(browser)
    css(browser, "#edit-form button[type=submit]")[0].click()
    _notice(browser, "Saved: version 3")

    # Then version 3 holds every field as entered.
    saved = call("GET", url)
    assert saved["version"] == 3 and saved["name"] == "sales report (EU)"
    assert {k: saved["spec"][k] for k in ("cron", "time_zone", "start_at", "end_at")} == {
        "cron": "30 8 * * MON-FRI",
        "time_zone": "Europe/London",
        "start_at": "2027-01-04T00:00:00Z",
        "end_at": "2027-12-31T00:00:00Z",
    }
    policy = saved["policy"]
    assert (policy["overdue"], policy["catchup_window"]) == ("expire", "PT10M")
    assert (policy["dst_gap"], policy["dst_fold"], policy["overlap"]) == ("skip", "first", "skip")
    assert policy["retry"] == {"max_attempts": 2, "base": "PT2S", "cap": "PT20S"}
    assert (policy["run_timeout"], policy["grace"]) == ("PT5M", "PT30M")
    assert saved["payload"] == {"region": "eu"}
    wait(browser, "version 3 on the page", lambda d: "version 3" in d.page_source)
    # The one refused request is the 412 (logged by the browser as a failed load).
    assert [e for e in errors(browser) if "412" not in e["message"]] == []


def test_delete_asks_first_and_the_runs_stay_readable(
    stack: str, hooks: Hooks, browser: Any
) -> None:
    created = post(
        f"{stack}/schedules",
        {
            "name": "old export",
            "spec": {"every": "PT1H"},
            "target": {"type": "webhook", "url": hooks.url("ok")},
        },
    )
    url = f"{stack}/schedules/{created['id']}"
    _open(browser, stack, created["id"])

    # When Delete is pressed and then declined, nothing happens.
    css(browser, "#delete")[0].click()
    dialog = wait(browser, "the question", lambda d: css(d, "#delete-dialog"))[0]
    assert "old export" in dialog.text and "cannot be undone" in dialog.text
    css(browser, "#delete-dialog-dismiss")[0].click()
    wait(browser, "the question gone", lambda d: not css(d, "#delete-dialog"))
    assert call("GET", url)["status"] == "active"

    # When it is confirmed, the schedule is deleted and the list says so.
    css(browser, "#delete")[0].click()
    wait(browser, "the question", lambda d: css(d, "#delete-dialog-confirm"))[0].click()
    _notice(browser, "Deleted old export")
    assert browser.current_url.endswith("#/")
    assert send("GET", url)[0] == 404
    assert send("GET", f"{stack}/runs?schedule_id={created['id']}")[0] == 200  # its runs stay
    wait(browser, "the list", lambda d: "No schedules yet" in d.page_source)
    assert errors(browser) == []


def _minute(at: datetime) -> datetime:
    return at.replace(second=0, microsecond=0)


def test_a_backfill_shows_its_slots_before_creating_them(
    stack: str, hooks: Hooks, browser: Any, shots: Path
) -> None:
    created = post(
        f"{stack}/schedules",
        {
            "name": "minute sync",
            "spec": {"cron": "* * * * *", "time_zone": "Europe/Paris"},
            "target": {"type": "webhook", "url": hooks.url("ok")},
        },
    )
    url = f"{stack}/schedules/{created['id']}"
    # A range that holds four past minutes.
    last = _minute(datetime.now(UTC)) - timedelta(minutes=1)
    start = last - timedelta(minutes=3, seconds=30)
    _open(browser, stack, created["id"])

    css(browser, "#backfill")[0].click()
    _type(browser, "#bf-from", start.isoformat().replace("+00:00", "Z"))
    _type(browser, "#bf-to", (last + timedelta(seconds=30)).isoformat().replace("+00:00", "Z"))
    css(browser, "#bf-preview")[0].click()

    # Then the four slots are listed, and nothing is created yet.
    slots = wait(browser, "the slots", lambda d: css(d, "#bf-result tr[data-slot]"))
    assert len(slots) == 4
    assert "4 run(s) would be created" in css(browser, "#bf-result")[0].text
    backfilled = f"{url}/runs?kind=backfill"
    assert call("GET", backfilled)["runs"] == []
    shoot(browser, shots / "backfill.png")

    # When they are created, the runs are there.
    css(browser, "#bf-create")[0].click()
    _notice(browser, "Backfilled: 4 run(s) created")
    assert len(call("GET", backfilled)["runs"]) == 4
    assert errors(browser) == []


def test_a_rotated_secret_is_shown_once_with_a_copy_button(
    stack: str, hooks: Hooks, browser: Any
) -> None:
    created = post(
        f"{stack}/schedules",
        {
            "name": "signed hook",
            "spec": {"every": "PT1H"},
            "target": {"type": "webhook", "url": hooks.url("ok")},
        },
    )
    _open(browser, stack, created["id"])
    assert css(browser, "#webhook-secret") == []

    # When Rotate secret is pressed and confirmed,
    css(browser, "#rotate-secret")[0].click()
    wait(browser, "the question", lambda d: css(d, "#rotate-dialog-confirm"))[0].click()

    # Then the new secret is shown, with the warning that it will not be shown again.
    secret = wait(browser, "the new secret", lambda d: css(d, "#webhook-secret"))[0].text
    assert len(secret) >= 32 and secret != created["webhook_secret"]
    box = css(browser, ".secret")[0].text
    assert "It will not be shown again" in box and "up to 5 minutes" in box
    css(browser, "#copy-secret")[0].click()
    wait(browser, "the copy", lambda d: css(d, "#copy-secret")[0].text != "Copy")

    # And the page, opened again, no longer shows it.
    browser.refresh()
    wait(browser, "the page again", lambda d: css(d, "#rotate-secret"))
    assert css(browser, "#webhook-secret") == []
    assert secret not in browser.page_source
    assert errors(browser) == []


def test_a_slot_planned_ahead_is_upcoming_and_can_be_cancelled(
    stack: str, hooks: Hooks, browser: Any
) -> None:
    # Given a schedule whose next slot is within the lookahead: created ahead of its time.
    created = post(
        f"{stack}/schedules",
        {
            "name": "minutely",
            "spec": {"every": "PT60S", "time_zone": "Asia/Tokyo"},
            "target": {"type": "webhook", "url": hooks.url("ok")},
        },
    )
    _open(browser, stack, created["id"])
    row = wait(browser, "the planned slot", lambda d: css(d, "tr[data-planned]"))[0]
    occurrence = row.get_attribute("data-planned")
    assert row.get_attribute("data-status") in ("planned", "scheduled", "admitted")
    assert " GMT+9" in row.text and "Z" in row.text  # in the schedule's zone and in UTC

    # When Cancel is pressed with a reason and confirmed,
    css(row, "button.cancel")[0].click()
    wait(browser, "the question", lambda d: css(d, "#cancel-reason"))[0].send_keys("not today")
    css(browser, "#cancel-dialog-confirm")[0].click()

    # Then the run is cancelled, with the reason.
    _notice(browser, "now cancelled")
    run = call("GET", f"{stack}/runs/{occurrence}")
    assert run["status"] == "cancelled" and "not today" in (run["reason"] or "")
    assert errors(browser) == []


def test_the_list_is_searched_and_filtered(stack: str, hooks: Hooks, browser: Any) -> None:
    ids = {}
    for name in ("sales report", "nightly export", "invoice sync"):
        body = {
            "name": name,
            "spec": {"every": "PT1H"},
            "target": {"type": "webhook", "url": hooks.url("ok")},
        }
        ids[name] = post(f"{stack}/schedules", body)["id"]
    post(f"{stack}/schedules/{ids['nightly export']}/pause", {"note": "holidays"})
    browser.get(f"{stack}/console")

    def shown(d: Any) -> list[str]:
        # Read at once in the page: a refresh replaces the rows between two calls.
        names: list[str] = d.execute_script(
            "return [...document.querySelectorAll('tr[data-schedule]')]"
            ".filter((r) => !r.hidden).map((r) => r.dataset.name).sort()"
        )
        return names

    wait(browser, "the list", lambda d: len(shown(d)) == 3)
    _type(browser, "#filter-text", "SALES")
    wait(browser, "the search", lambda d: shown(d) == ["sales report"])
    _type(browser, "#filter-text", ids["invoice sync"][-6:])
    wait(browser, "the search by id", lambda d: shown(d) == ["invoice sync"])
    _type(browser, "#filter-text", " ")  # typed, so the page hears it: no search
    _choose(browser, "#filter-status", "paused")
    wait(browser, "the paused one", lambda d: shown(d) == ["nightly export"])
    _choose(browser, "#filter-status", "")
    _choose(browser, "#filter-target", "sqs")
    wait(browser, "no sqs schedule", lambda d: shown(d) == [])
    assert "showing 0 of 3" in css(browser, "#filter-count")[0].text
    _choose(browser, "#filter-target", "webhook")
    wait(browser, "all three", lambda d: len(shown(d)) == 3)
    assert errors(browser) == []
