"""When a webhook schedule's signing secret is made, shown, rotated or
forgotten (``service.signing_secrets``), over an in-memory store."""

from __future__ import annotations

import logging

import pytest

from adapters.secrets import InMemorySecretStore, new_secret, put_first
from service.signing_secrets import NoWebhookTarget, SecretsUnavailable, SigningSecrets
from tests.conftest import build_schedule, utc

NOW = utc("2026-12-01T08:00:00Z")
QUEUE = {"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q"}


def secrets(store: InMemorySecretStore | None) -> SigningSecrets:
    return SigningSecrets(store, put_first, new_secret)


def test_a_retried_create_shows_the_secret_stored_the_first_time() -> None:
    store = InMemorySecretStore()
    schedule = build_schedule(NOW)
    first = secrets(store).on_create(schedule, created=True)
    assert first == store.get(schedule.schedule_id)
    assert secrets(store).on_create(schedule, created=False) == first


def test_a_retried_create_whose_secret_was_never_stored_gets_one() -> None:
    store = InMemorySecretStore()
    schedule = build_schedule(NOW)
    shown = secrets(store).on_create(schedule, created=False)
    assert shown is not None and shown == store.get(schedule.schedule_id)


def test_without_a_store_a_create_shows_a_secret_once_and_a_retry_none() -> None:
    schedule = build_schedule(NOW)
    assert secrets(None).on_create(schedule, created=True)
    assert secrets(None).on_create(schedule, created=False) is None


def test_a_schedule_of_another_target_gets_no_secret() -> None:
    store = InMemorySecretStore()
    schedule = build_schedule(NOW, target=QUEUE)
    assert secrets(store).on_create(schedule, created=True) is None
    assert secrets(store).on_edit(schedule) is None
    with pytest.raises(NoWebhookTarget, match="has no webhook target"):
        secrets(store).rotate(schedule)


def test_an_edit_gives_a_secret_only_to_a_webhook_schedule_without_one() -> None:
    store = InMemorySecretStore()
    schedule = build_schedule(NOW)
    given = secrets(store).on_edit(schedule)
    assert given == store.get(schedule.schedule_id)
    assert secrets(store).on_edit(schedule) is None


def test_a_rotation_replaces_the_secret_and_needs_a_store() -> None:
    store = InMemorySecretStore()
    schedule = build_schedule(NOW)
    first = secrets(store).on_create(schedule, created=True)
    rotated = secrets(store).rotate(schedule)
    assert rotated != first and rotated == store.get(schedule.schedule_id)
    with pytest.raises(SecretsUnavailable, match="keeps no signing secrets to rotate"):
        secrets(None).rotate(schedule)


class _Failing(InMemorySecretStore):
    def delete(self, schedule_id: str) -> None:
        raise RuntimeError("the store is down")


def test_forgetting_a_secret_never_fails_the_deletion(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemorySecretStore()
    schedule = build_schedule(NOW)
    secrets(store).on_create(schedule, created=True)
    secrets(store).forget(schedule.schedule_id)
    with pytest.raises(LookupError):
        store.get(schedule.schedule_id)
    with caplog.at_level(logging.ERROR, logger="duetime"):
        secrets(_Failing()).forget(schedule.schedule_id)
    assert "could not delete the signing secret" in caplog.text
    secrets(None).forget(schedule.schedule_id)
