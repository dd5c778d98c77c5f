"""A request is answered with the services its handler call was given, even
where another copy of the API module has included the same routers since (as
the simulator loads one per Lambda container)."""

from __future__ import annotations

import json
from pathlib import Path

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.store import SqliteStore
from cli.local_http import to_event
from handlers.api import ApiServices, handler
from service.schedules import ScheduleService
from sim.functions import fresh_module
from tests.conftest import FakeClock

HOST = {"Host": "127.0.0.1:8787"}


def test_a_copy_of_the_api_module_leaves_the_first_answering(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = SqliteStore.open(tmp_path / "duetime.db")
    services = ApiServices(ScheduleService(store, clock), InMemorySecretStore())
    try:
        fresh_module("handlers.api")  # includes the shared routers in a resolver of its own
        for path, status in (("/schedules", 200), ("/runs", 200), ("/runs/run_x", 404)):
            answer = handler(to_event("GET", path, HOST, b""), None, service=services)
            assert answer["statusCode"] == status, (path, answer["body"])
        assert json.loads(answer["body"])["error"]["code"] == "run_not_found"
    finally:
        store.close()
