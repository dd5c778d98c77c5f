"""Fixtures for the scenario tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.scenarios.local_processes import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()
