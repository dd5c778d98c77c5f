"""Fixtures for the handler tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from cli.local_http import ApiServer
from cli.main import main
from handlers.api import ApiServices, handler
from service.schedules import ScheduleService
from tests.conftest import FakeClock
from tests.handlers.cli_driver import Run


@pytest.fixture
def server(tmp_path: Path, clock: FakeClock) -> Iterator[ApiServer]:
    """The API handler over SQLite, served over real HTTP on 127.0.0.1."""
    store = SqliteStore.open(tmp_path / "duetime.db")
    services = ApiServices(ScheduleService(store, clock), InMemorySecretStore())

    def api(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return handler(event, context, service=services)

    server = ApiServer(api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
    store.close()


@pytest.fixture
def duetime(capsys: pytest.CaptureFixture[str], server: ApiServer) -> Run:
    """The `duetime` command against ``server``: (exit code, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--api-url", server.url])
        out, err = capsys.readouterr()
        return code, out, err

    return run
