"""Delivery end to end on one SQLite file: tick -> SQLite queue -> worker loop -> a real
HTTP receiver on 127.0.0.1, started by the test. The store and the queue run on a
fake clock; the receiver and the HTTP calls are real.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import random
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from adapters.secrets import InMemorySecretStore
from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from adapters.targets import AddressPolicy, Targets, WebhookSender
from adapters.targets.signing import shown_secret
from adapters.telemetry import PowertoolsTelemetry
from cli.worker_pool import run_worker_loop
from domain.run import Run, RunStatus
from service.runs import RunReports, RunWorker
from tests.conftest import FakeClock, World, definition, make_world, utc


@dataclass
class Hit:
    headers: Message
    body: bytes

    @property
    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


@dataclass
class Receiver:
    """Answers from a script of (status, headers), then 200; records every request."""

    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    port: int = 0
    on_hit: Callable[[], None] | None = None  # runs once, inside the next request

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def verifies(self, hit: Hit, secret: str) -> bool:
        """Both signatures check out: the Standard Webhooks one with the library
        and the secret as users are given it, and the earlier releases' one."""
        try:
            Webhook(shown_secret(secret)).verify(hit.body, dict(hit.headers.items()))
        except WebhookVerificationError:
            return False
        timestamp = hit.headers["Duetime-Timestamp"]
        mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + hit.body, hashlib.sha256)
        return hmac.compare_digest(hit.headers["Duetime-Signature"], f"v1={mac.hexdigest()}")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.hits.append(Hit(self.headers, body))
            if state.on_hit is not None:
                hook, state.on_hit = state.on_hit, None
                hook()
            status, headers = state.script.pop(0) if state.script else (200, {})
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Stack:
    world: World
    clock: FakeClock
    queue: SqliteQueue
    runs: SqliteRunStore
    worker: RunWorker
    secrets: InMemorySecretStore
    secret: str = ""

    def work(self) -> dict[str, int]:
        """One poll of the worker loop."""
        return run_worker_loop(self.worker, self.queue, max_polls=1, wait_s=0)

    def run(self, occurrence_id: str) -> Run:
        run = self.runs.get_run(occurrence_id)
        assert run is not None
        return run


def make_stack(
    tmp_path: Path, runs_factory: Callable[[World], SqliteRunStore] | None = None
) -> Stack:
    clock = FakeClock(utc("2026-12-01T08:00:00Z"))
    world = make_world(tmp_path / "duetime.db", clock)
    queue = SqliteQueue(tmp_path / "duetime.db", clock=clock, visibility_timeout_s=60)
    run_store = runs_factory(world) if runs_factory else SqliteRunStore(world.store)
    secrets = InMemorySecretStore()
    sender = WebhookSender(secrets, AddressPolicy.local())
    worker = RunWorker(
        run_store,
        Targets.build(webhook=sender),
        clock,
        random.Random(11),
        telemetry=PowertoolsTelemetry(),
        new_token=lambda: "run-token",
    )
    return Stack(world, clock, queue, run_store, worker, secrets)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    built = make_stack(tmp_path)
    yield built
    built.queue.close()
    built.world.store.close()


def schedule_due(stack: Stack, url: str, policy: dict[str, Any] | None = None) -> str:
    """A webhook schedule due at 08:01, admitted and sent to the SQLite queue."""
    schedule, _ = stack.world.schedules.create(
        definition(
            {
                "name": "sales report",
                "spec": {"cron": "1 8 * * *"},
                "target": {"type": "webhook", "url": url, "timeout_s": 2},
                "policy": policy or {},
                "payload": {"report": "sales"},
            }
        )
    )
    stack.secret = stack.secrets.put(schedule.schedule_id)  # what the API hands out once
    ticker = stack.world.ticker(queue=stack.queue)
    ticker.tick_once()
    stack.clock.set(utc("2026-12-01T08:01:03Z"))
    ticker.tick_once()
    [run] = stack.world.store.records.runs(schedule.schedule_id, 5).items
    assert run.status is RunStatus.ADMITTED
    return run.occurrence_id


def test_503_then_200_is_two_attempts_with_one_key(stack: Stack, receiver: Receiver) -> None:
    receiver.script = [(503, {})]
    occurrence_id = schedule_due(stack, receiver.url())

    assert stack.work()["retry"] == 1
    run = stack.run(occurrence_id)
    assert run.status is RunStatus.RETRYING and run.attempt_log[0].error == "HTTP 503"
    assert stack.work()["polls"] == 1 and len(receiver.hits) == 1  # not visible yet

    stack.clock.advance(2.0)  # past the full-jitter delay (at most 2 s after attempt 1)
    assert stack.work()["deleted"] == 1

    assert [h.headers["Idempotency-Key"] for h in receiver.hits] == [occurrence_id] * 2
    assert [h.json["attempt"] for h in receiver.hits] == [1, 2]
    first = receiver.hits[0].json
    assert first["scheduled_at"] == "2026-12-01T08:01:00Z" and first["late_by_s"] == 3.0
    assert first["payload"] == {"report": "sales"} and first["version"] == 1
    assert all(receiver.verifies(hit, stack.secret) for hit in receiver.hits)
    run = stack.run(occurrence_id)
    assert run.status is RunStatus.SUCCEEDED and run.attempts == 2
    assert run.result is not None and run.result["status_code"] == 200
    assert stack.queue.depth() == 0 and stack.queue.dead_letters() == []


def test_429_with_retry_after_waits_as_long_as_the_target_asked(
    stack: Stack, receiver: Receiver
) -> None:
    receiver.script = [(429, {"Retry-After": "90"})]
    schedule_due(stack, receiver.url())
    stack.work()
    stack.clock.advance(89)
    stack.work()
    assert len(receiver.hits) == 1
    stack.clock.advance(2)
    assert stack.work()["deleted"] == 1 and len(receiver.hits) == 2


def test_400_fails_at_once_and_leaves_no_dead_letter(stack: Stack, receiver: Receiver) -> None:
    # A run that fails for good says why on its record; its message is deleted,
    # not dead-lettered (a dead letter is what the queue gave up on itself).
    receiver.script = [(400, {})]
    occurrence_id = schedule_due(stack, receiver.url())
    assert stack.work()["deleted"] == 1
    run = stack.run(occurrence_id)
    assert run.status is RunStatus.FAILED and run.reason == "permanent error: HTTP 400"
    assert stack.queue.dead_letters() == [] and stack.queue.depth() == 0
    stack.clock.advance(3600)
    stack.work()
    assert len(receiver.hits) == 1


def test_a_202_job_completes_through_its_run_token(stack: Stack, receiver: Receiver) -> None:
    receiver.script = [(202, {})]
    occurrence_id = schedule_due(stack, receiver.url(), {"run_timeout": "PT10M"})
    assert stack.work()["retry"] == 1
    assert receiver.hits[0].json["run_token"] == "run-token"

    reports = RunReports(stack.runs, stack.clock)
    stack.clock.advance(120)
    reports.progress(occurrence_id, "run-token", {"percent": 50})
    assert stack.run(occurrence_id).progress == {"percent": 50}
    reports.complete(occurrence_id, "run-token", succeeded=True, result={"rows": 12})

    stack.clock.advance(10 * 60)  # the message returns at the deadline and is removed
    assert stack.work()["deleted"] == 1
    run = stack.run(occurrence_id)
    assert run.status is RunStatus.SUCCEEDED and run.attempts == 1 and len(receiver.hits) == 1
    assert stack.queue.depth() == 0


def test_a_receiver_that_never_answers_times_out_and_is_retried(stack: Stack) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections, never answers
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
        schedule, _ = stack.world.schedules.create(
            definition(
                {
                    "name": "slow",
                    "spec": {"cron": "1 8 * * *"},
                    "target": {"type": "webhook", "url": url, "timeout_s": 0.3},
                }
            )
        )
        stack.secrets.put(schedule.schedule_id)
        ticker = stack.world.ticker(queue=stack.queue)
        ticker.tick_once()
        stack.clock.set(utc("2026-12-01T08:01:00Z"))
        ticker.tick_once()
        assert stack.work()["retry"] == 1
    finally:
        listener.close()
    [run] = stack.world.store.records.runs(schedule.schedule_id, 1).items
    assert run.status is RunStatus.RETRYING
    assert run.attempt_log[0].error == "timed out after 0.3s"
