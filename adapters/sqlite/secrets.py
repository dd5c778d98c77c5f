"""Webhook signing secrets in the local stack's SQLite file.

The file sits in the data directory the operator chose; the secrets are as
safe as that directory (keep it private). On AWS they live in Secrets Manager.
"""

from __future__ import annotations

from pathlib import Path

from adapters.secrets import SecretNotFound, _check_schedule_id, new_secret
from adapters.sqlite.database import Database

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS webhook_secrets "
    "(schedule_id TEXT PRIMARY KEY, secret TEXT NOT NULL)"
)


class SqliteSecretStore(Database):
    """A ``SecretStore`` over the ``webhook_secrets`` table of the SQLite store's file."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0) -> None:
        super().__init__(path, _SCHEMA, busy_timeout_s=busy_timeout_s)

    def put(self, schedule_id: str) -> str:
        _check_schedule_id(schedule_id)
        secret = new_secret()
        with self._write() as db:
            db.execute(
                "INSERT INTO webhook_secrets (schedule_id, secret) VALUES (?, ?) "
                "ON CONFLICT (schedule_id) DO UPDATE SET secret = excluded.secret",
                (schedule_id, secret),
            )
        return secret

    def get(self, schedule_id: str) -> str:
        _check_schedule_id(schedule_id)
        with self._lock:
            row = self._db.execute(
                "SELECT secret FROM webhook_secrets WHERE schedule_id = ?", (schedule_id,)
            ).fetchone()
        if row is None:
            raise SecretNotFound(schedule_id)
        return str(row[0])

    def delete(self, schedule_id: str) -> None:
        _check_schedule_id(schedule_id)
        with self._write() as db:
            db.execute("DELETE FROM webhook_secrets WHERE schedule_id = ?", (schedule_id,))
