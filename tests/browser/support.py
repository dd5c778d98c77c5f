"""What the console's browser tests share: a webhook receiver, and the steps of
driving a page (wait for something, find elements, take a screenshot)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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


def wait(driver: Any, what: str, check: Any) -> Any:
    """What ``check`` answers once it is truthy; an element the page replaced
    meanwhile (each refresh rebuilds the tables) counts as not yet."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(
        driver,
        WAIT_S,
        poll_frequency=0.2,
        ignored_exceptions=[StaleElementReferenceException],
    ).until(lambda d: check(d), message=f"waited {WAIT_S} s for {what}")


def css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    found: list[Any] = driver.find_elements(By.CSS_SELECTOR, selector)
    return found


def shoot(driver: Any, path: Path) -> None:
    """The whole page, as a person sees it from the top."""
    driver.execute_script("window.scrollTo(0, 0)")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(900, int(height) + 160), 2400))
    driver.save_screenshot(str(path))
    driver.set_window_size(1280, 900)


def errors(driver: Any) -> list[dict[str, Any]]:
    # Script errors, and requests the API refused (a query parameter it does not
    # take, a route it does not have): each a bug of the page.
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def post(url: str, body: Any) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def send(method: str, url: str, body: Any = None, **headers: str) -> tuple[int, Any]:
    """One API call; its status and JSON body, an error status included."""
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
