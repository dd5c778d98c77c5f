"""A schedule's webhook signing secret through the API: rotated on request, deleted with it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.secrets import InMemorySecretStore, MovingSecretStore, SecretNotFound
from adapters.sqlite.store import SqliteStore
from adapters.targets.signing import shown_secret
from handlers.api import ApiServices
from service.schedules import ScheduleService
from tests.conftest import FakeClock
from tests.handlers.test_api import REPORT, Api


@pytest.fixture
def api(tmp_path: Path, clock: FakeClock) -> Iterator[Api]:
    db = tmp_path / "duetime.db"
    store = SqliteStore.open(db)
    secrets = InMemorySecretStore()
    yield Api(ApiServices(ScheduleService(store, clock), secrets), db, clock, secrets)
    store.close()


def test_rotating_answers_a_new_secret_once_and_the_worker_reads_it(api: Api) -> None:
    created = api.create().body
    old = created["webhook_secret"]

    answer = api.call("POST", f"/schedules/{created['id']}/rotate-secret")

    assert answer.status == 200, answer.body
    new = answer.body["webhook_secret"]
    assert isinstance(new, str) and new != old
    assert shown_secret(api.secrets.get(created["id"])) == new
    assert answer.body["version"] == created["version"]  # the schedule itself is unchanged
    assert api.call("GET", f"/schedules/{created['id']}").body["webhook_secret"] is None


def test_rotating_a_schedule_without_a_webhook_is_refused_and_stores_nothing(api: Api) -> None:
    queue = {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"}
    created = api.create({**REPORT, "target": queue}).body
    before = api.snapshot()

    answer = api.call("POST", f"/schedules/{created['id']}/rotate-secret")

    assert answer.status == 409
    assert answer.error["code"] == "no_webhook_target"
    assert "no webhook target" in answer.error["message"]
    assert api.snapshot() == before
    assert api.secrets._secrets == {}


def test_rotating_an_unknown_or_deleted_schedule_is_not_found(api: Api) -> None:
    created = api.create().body
    secret = created["webhook_secret"]
    api.call("DELETE", f"/schedules/{created['id']}")

    for schedule_id in (created["id"], "sch_unknown"):
        answer = api.call("POST", f"/schedules/{schedule_id}/rotate-secret")
        assert answer.status == 404
    assert secret not in map(shown_secret, api.secrets._secrets.values())


def test_deleting_a_schedule_deletes_its_secret(api: Api) -> None:
    created = api.create().body

    answer = api.call("DELETE", f"/schedules/{created['id']}")

    assert answer.status == 200
    with pytest.raises(SecretNotFound):
        api.secrets.get(created["id"])


def test_a_secret_that_cannot_be_deleted_does_not_undo_the_deletion(api: Api) -> None:
    class Failing(InMemorySecretStore):
        def delete(self, schedule_id: str) -> None:
            raise RuntimeError("throttled")

    failing = Failing()
    api.services = ApiServices(api.services.schedules, failing)
    created = api.create().body

    answer = api.call("DELETE", f"/schedules/{created['id']}")

    assert answer.status == 200
    assert api.call("GET", f"/schedules/{created['id']}").status == 404
    # left behind, logged
    assert shown_secret(failing.get(created["id"])) == created["webhook_secret"]


def test_rotating_an_old_schedules_secret_moves_it_to_the_new_store(api: Api) -> None:
    old_store, new_store = InMemorySecretStore(), InMemorySecretStore()
    api.services = ApiServices(api.services.schedules, MovingSecretStore(new_store, old_store))
    created = api.create().body
    schedule_id = created["id"]
    # As if made before the move: its secret is in the old store only.
    old_store._secrets[schedule_id] = new_store._secrets.pop(schedule_id)

    answer = api.call("POST", f"/schedules/{schedule_id}/rotate-secret")

    assert shown_secret(new_store.get(schedule_id)) == answer.body["webhook_secret"]
    with pytest.raises(SecretNotFound):
        old_store.get(schedule_id)


class Recording(InMemorySecretStore):
    """An old store that counts what is asked of it."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, str]] = []

    def get(self, schedule_id: str) -> str:
        self.asked.append(("get", schedule_id))
        return super().get(schedule_id)

    def delete(self, schedule_id: str) -> None:
        self.asked.append(("delete", schedule_id))
        super().delete(schedule_id)


def test_a_new_schedules_secret_asks_nothing_of_the_old_store(api: Api) -> None:
    # A burst of creations must not send a delete per schedule to SSM, which
    # answers a few a second: a new schedule has no older copy anywhere.
    old_store, new_store = Recording(), InMemorySecretStore()
    api.services = ApiServices(api.services.schedules, MovingSecretStore(new_store, old_store))

    created = api.create().body

    assert shown_secret(new_store.get(created["id"])) == created["webhook_secret"]
    assert old_store.asked == []
    # A rotation still removes an older copy
    api.call("POST", f"/schedules/{created['id']}/rotate-secret")
    assert old_store.asked == [("delete", created["id"])]


def test_an_edit_that_adds_a_webhook_reads_the_old_store_but_deletes_nothing(api: Api) -> None:
    old_store, new_store = Recording(), InMemorySecretStore()
    api.services = ApiServices(api.services.schedules, MovingSecretStore(new_store, old_store))
    queue = {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"}
    created = api.create({**REPORT, "target": queue}).body

    answer = api.call(
        "PUT",
        f"/schedules/{created['id']}",
        {**REPORT, "target": REPORT["target"]},
        headers={"If-Match": str(created["version"])},
    )

    assert answer.status == 200, answer.body
    assert shown_secret(new_store.get(created["id"])) == answer.body["webhook_secret"]
    assert old_store.asked == [("get", created["id"])]


@pytest.mark.parametrize("route", ["rotate-secret", "trigger"])
def test_a_field_sent_to_a_route_that_takes_none_is_refused_and_nothing_changes(
    api: Api, route: str
) -> None:
    created = api.create().body
    before = api.snapshot()
    secret = api.secrets.get(created["id"])

    answer = api.call("POST", f"/schedules/{created['id']}/{route}", {"reason": "why not"})

    assert answer.status == 422, answer.body
    assert answer.error["field"] == "reason"
    assert api.snapshot() == before
    assert api.secrets.get(created["id"]) == secret
    # No body, or an empty object, is what they take.
    assert api.call("POST", f"/schedules/{created['id']}/{route}", {}).status in (200, 201)
