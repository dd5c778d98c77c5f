"""The fixtures of the console's browser tests: the local stack, a webhook
receiver, headless Chromium, and where screenshots go."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.support import CHROMEDRIVER, CHROMIUM, Hooks
from tests.scenarios.local_processes import call, free_port, start, stop, wait_for


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
