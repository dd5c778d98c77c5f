"""`duetime smoke` against a scripted API and queue: each way it can fail says
why, exits non-zero and still deletes its schedule."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cli.client import ApiClient, ApiError, Response
from cli.main import main
from cli.smoke import Clock, SmokeFailed, smoke

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/Duetime-SmokeQueue"
DUE = datetime(2026, 12, 1, 8, 0, 20, tzinfo=UTC)


class FakeClock(Clock):
    def __init__(self) -> None:
        self.at = datetime(2026, 12, 1, 8, 0, 0, 400_000, tzinfo=UTC)
        super().__init__(now=lambda: self.at, sleep=self.advance)

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


class FakeApi(ApiClient):
    """Answers the smoke command's calls; ``runs`` is what each poll sees next."""

    def __init__(self, runs: list[list[dict[str, Any]]]) -> None:
        super().__init__("http://127.0.0.1:9")
        self.runs = runs
        self.calls: list[tuple[str, str]] = []
        self.created: dict[str, Any] = {}

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> Response:
        self.calls.append((method, path))
        if method == "POST":
            self.created = body
            return Response(201, {"id": "smoke-1"}, {})
        if method == "GET":
            page = self.runs.pop(0) if len(self.runs) > 1 else self.runs[0]
            return Response(200, {"runs": page}, {})
        return Response(200, {}, {})


class FakeSqs:
    def __init__(self, clock: FakeClock, messages: list[dict[str, Any]]) -> None:
        self.clock = clock
        self.messages = messages
        self.deleted: list[str] = []

    def receive_message(self, **kwargs: Any) -> dict[str, Any]:
        if not self.messages:
            self.clock.advance(kwargs["WaitTimeSeconds"])
        found, self.messages = self.messages, []
        return {"Messages": found}

    def delete_message(self, QueueUrl: str, ReceiptHandle: str) -> None:
        self.deleted.append(ReceiptHandle)


def run(status: str, **fields: Any) -> dict[str, Any]:
    return {
        "occurrence_id": "smoke-1.v1.20261201T080020Z",
        "status": status,
        "scheduled_at": "2026-12-01T08:00:20Z",
        "started_at": "2026-12-01T08:00:21.500000Z",
        **fields,
    }


def message(occurrence_id: str, token: str) -> dict[str, Any]:
    return {
        "ReceiptHandle": f"r-{occurrence_id}",
        "Body": json.dumps({"occurrence_id": occurrence_id, "payload": {"smoke": token}}),
        "MessageAttributes": {
            "occurrence_id": {"DataType": "String", "StringValue": occurrence_id}
        },
    }


def test_a_run_that_succeeds_and_arrives_passes_and_the_schedule_is_deleted() -> None:
    clock = FakeClock()
    api = FakeApi([[], [run("admitted")], [run("succeeded")]])
    sqs = FakeSqs(clock, [])
    said: list[str] = []

    def receive(**kwargs: Any) -> dict[str, Any]:
        token = api.created["payload"]["smoke"]
        stray = message("other.v1.20261201T075900Z", "old")
        sqs.receive_message = FakeSqs(clock, []).receive_message  # type: ignore[method-assign]
        return {"Messages": [stray, message(run("x")["occurrence_id"], token)]}

    sqs.receive_message = receive  # type: ignore[method-assign]
    found = smoke(api, sqs, QUEUE, lead_s=20, timeout_s=60, say=said.append, clock=clock)

    assert found["status"] == "succeeded"
    assert api.created["spec"] == {"at": "2026-12-01T08:00:20Z"}
    assert api.created["target"] == {"type": "sqs", "queue_url": QUEUE}
    assert sqs.deleted == ["r-smoke-1.v1.20261201T080020Z"]  # only its own message
    assert api.calls[-1] == ("DELETE", "/schedules/smoke-1")
    assert any("(1.5 s late)" in line for line in said)


@pytest.mark.parametrize(
    ("final", "says"),
    [
        (run("failed", reason="attempts_exhausted"), "is failed (reason: attempts_exhausted"),
        (run("expired", reason="too_late"), "is expired"),
    ],
)
def test_a_run_that_ends_badly_fails_with_its_status_and_reason(
    final: dict[str, Any], says: str
) -> None:
    clock = FakeClock()
    api = FakeApi([[final]])
    with pytest.raises(SmokeFailed, match=says.replace("(", r"\(")):
        smoke(api, FakeSqs(clock, []), QUEUE, lead_s=20, timeout_s=60, say=print, clock=clock)
    assert api.calls[-1] == ("DELETE", "/schedules/smoke-1")


def test_no_run_by_the_deadline_fails_and_says_what_it_last_saw() -> None:
    clock = FakeClock()
    api = FakeApi([[run("admitted")]])
    with pytest.raises(SmokeFailed, match=r"no run succeeded by .*: run .* is admitted"):
        smoke(api, FakeSqs(clock, []), QUEUE, lead_s=20, timeout_s=30, say=print, clock=clock)
    assert api.calls[-1] == ("DELETE", "/schedules/smoke-1")


def test_a_run_whose_message_never_arrives_fails() -> None:
    clock = FakeClock()
    api = FakeApi([[run("succeeded")]])
    with pytest.raises(SmokeFailed, match=r"its message .* did not arrive"):
        smoke(api, FakeSqs(clock, []), QUEUE, lead_s=20, timeout_s=30, say=print, clock=clock)
    assert api.calls[-1] == ("DELETE", "/schedules/smoke-1")


def test_a_schedule_that_cannot_be_deleted_fails_the_smoke_run() -> None:
    clock = FakeClock()

    class Undeletable(FakeApi):
        def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Response:
            if method == "DELETE":
                raise ApiError(403, "not allowed")
            return super().request(method, path, body, **kw)

    api = Undeletable([[run("failed")]])
    with pytest.raises(SmokeFailed, match="is failed"):
        smoke(api, FakeSqs(clock, []), QUEUE, lead_s=20, timeout_s=30, say=print, clock=clock)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["smoke", "--api-url", "http://127.0.0.1:9"], "--queue-url is required"),
        (["smoke", "--queue-url", QUEUE, "--lead", "0"], "--lead must be in"),
        (["smoke", "--queue-url", QUEUE, "--timeout", "-1"], "--timeout above 0"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_created(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DUETIME_SMOKE_QUEUE_URL", raising=False)
    assert main(argv) == 2
    assert says in capsys.readouterr().err
