"""The signing secrets of webhook schedules, as the schedule use cases hand
them out: each is shown once, and where the deployment keeps a copy (to sign
with), that copy is the one shown.

- A create shows the schedule's new secret; a retried create (same
  Idempotency-Key) shows the same one, and a schedule whose first create
  stopped before its secret was stored gets one then.
- An edit that gives a schedule its first webhook target gives it a secret.
- A rotation replaces the secret (409 without a webhook target, 501 where
  no copy is kept).
- A delete forgets it, best effort: the schedule is deleted either way.

Where no store is configured a webhook schedule still gets a secret on
create, returned once, but nothing keeps a copy to sign with.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from domain.errors import DuetimeError
from domain.schedule import Schedule
from domain.targets import WebhookTarget

_log: Final = logging.getLogger("duetime")


class SecretPort(Protocol):
    """Where the signing secrets live (``adapters.secrets``)."""

    def put(self, schedule_id: str) -> str:
        """A new secret, stored in place of any earlier one, and returned."""
        ...

    def get(self, schedule_id: str) -> str:
        """The stored secret; a ``LookupError`` when there is none."""
        ...

    def delete(self, schedule_id: str) -> None:
        """Forget the secret; a missing one is not an error."""
        ...


class NoWebhookTarget(DuetimeError):
    """A webhook-only operation on a schedule whose target is not a webhook (HTTP 409)."""

    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"schedule {schedule_id!r} has no webhook target, so no signing secret")
        self.schedule_id = schedule_id


class SecretsUnavailable(DuetimeError):
    """A rotation where the deployment keeps no signing secrets (HTTP 501)."""

    def __init__(self) -> None:
        super().__init__("this deployment keeps no signing secrets to rotate")


def _webhook(schedule: Schedule) -> bool:
    return isinstance(schedule.current.target, WebhookTarget)


@dataclass(frozen=True)
class SigningSecrets:
    """The secrets of webhook schedules over ``store`` (None: none kept).

    ``first(store, schedule_id)`` stores a schedule's first secret, where no
    store holds one for it yet; ``fresh()`` makes a secret that no store keeps.
    """

    store: SecretPort | None
    first: Callable[[SecretPort, str], str]
    fresh: Callable[[], str]

    def on_create(self, schedule: Schedule, created: bool) -> str | None:
        """The secret a create answers with: None for another target, or for a
        retried create where no copy is kept."""
        if not _webhook(schedule):
            return None
        if self.store is None:
            return self.fresh() if created else None
        if not created:
            try:
                return self.store.get(schedule.schedule_id)
            except LookupError:
                pass
        return self.first(self.store, schedule.schedule_id)

    def on_edit(self, schedule: Schedule) -> str | None:
        """A new secret when an edit gave the schedule its first webhook target."""
        if self.store is None or not _webhook(schedule):
            return None
        try:
            self.store.get(schedule.schedule_id)
        except LookupError:
            return self.first(self.store, schedule.schedule_id)
        return None

    def rotate(self, schedule: Schedule) -> str:
        """A new secret in place of the old one."""
        if not _webhook(schedule):
            raise NoWebhookTarget(schedule.schedule_id)
        if self.store is None:
            raise SecretsUnavailable()
        return self.store.put(schedule.schedule_id)

    def forget(self, schedule_id: str) -> None:
        """Forget a deleted schedule's secret; a failure is logged, not raised."""
        if self.store is None:
            return
        try:
            self.store.delete(schedule_id)
        except Exception:  # the schedule is deleted either way; the secret is left behind
            _log.exception("could not delete the signing secret of a deleted schedule")
