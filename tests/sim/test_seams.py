"""The seams the simulator uses are parameters of the code, and replace only what they name."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from adapters.secrets import InMemorySecretStore
from adapters.targets.signing import legacy_signature as sign
from adapters.targets.webhook import WebhookSender, _Answer
from domain.delivery import Delivery
from domain.targets import WebhookTarget

SCHEDULE_ID = "sch_seam"
SECRET = "whsec_seam"


def _delivery() -> Delivery:
    return Delivery(
        occurrence_id="occ_seam_20261201T0800Z",
        schedule_id=SCHEDULE_ID,
        version=1,
        scheduled_at=datetime(2026, 12, 1, 8, 0, tzinfo=UTC),
        attempt=1,
        late_by_s=0.0,
        payload={"n": 1},
    )


def test_a_webhook_exchange_replaces_the_http_call_and_nothing_around_it() -> None:
    calls: list[tuple[str, dict[str, str], bytes]] = []

    def exchange(url: str, headers: dict[str, str], body: bytes, deadline: float) -> _Answer:
        calls.append((url, headers, body))
        return _Answer(status=503, location=None, retry_after="7", body=b"busy")

    sender = WebhookSender(InMemorySecretStore({SCHEDULE_ID: SECRET}), exchange=exchange)
    # The address is never resolved: the exchange stands for the whole network call.
    outcome = sender.deliver(
        WebhookTarget("https://nowhere.target.example/hook"), _delivery(), timeout_s=5
    )
    [(url, headers, body)] = calls
    assert url == "https://nowhere.target.example/hook"
    stamp = int(headers["Duetime-Timestamp"])
    assert headers["Duetime-Signature"] == sign(SECRET, stamp, body)
    assert headers["Idempotency-Key"] == _delivery().idempotency_key
    # The outcome rules still apply: a 503 with Retry-After is transient, with its delay.
    assert (outcome.kind, outcome.status_code, outcome.retry_after_s) == ("transient", 503, 7.0)


def test_a_webhook_without_a_secret_is_refused_before_any_exchange() -> None:
    calls: list[str] = []

    def exchange(url: str, headers: dict[str, str], body: bytes, deadline: float) -> _Answer:
        calls.append(url)
        return _Answer(status=200, location=None, retry_after=None, body=b"")

    sender = WebhookSender(InMemorySecretStore(), exchange=exchange)
    outcome = sender.deliver(
        WebhookTarget("https://nowhere.target.example/hook"), _delivery(), timeout_s=5
    )
    assert calls == []
    assert outcome.kind == "permanent"
    assert outcome.error == "no signing secret is stored for this schedule"


def test_the_worker_draws_its_back_off_from_the_generator_it_is_given() -> None:
    from bootstrap import aws
    from bootstrap.settings import Settings
    from service.run_ports import NoTelemetry

    parts = aws.AwsWorkerParts(runs=object(), targets=object(), queue=object())  # type: ignore[arg-type]
    rng = random.Random(3)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aws, "build_aws_parts", lambda *args, **kwargs: parts)
        built, _ = aws.build_aws_worker(Settings(), telemetry=NoTelemetry(), rng=rng)
    assert built.rng is rng
