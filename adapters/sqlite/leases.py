"""The lease and heartbeat port over SQLite (``LeaseStore``, service/ports.py):
one row per dispatch shard's lease, taken, renewed and fenced by its epoch in
one upsert; one row per component's heartbeat.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from adapters.sqlite.tables import Tables, from_us, us
from service.ports import Heartbeat, Lease, LeaseStore


class SqliteLeases(Tables, LeaseStore):
    """Leases and heartbeats in the store's file."""

    def acquire(self, shard: int, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
        now_us = us(now)
        with self._write() as db:
            row = db.execute(
                "INSERT INTO leases (shard, owner, epoch, expires_at) "
                "VALUES (?, ?, 1, ?) ON CONFLICT (shard) DO UPDATE SET "
                "epoch = CASE WHEN leases.owner = excluded.owner AND leases.expires_at > ? "
                "THEN leases.epoch ELSE leases.epoch + 1 END, "
                "owner = excluded.owner, expires_at = excluded.expires_at "
                "WHERE leases.owner = excluded.owner OR leases.expires_at <= ? "
                "RETURNING shard, owner, epoch, expires_at",
                (shard, owner, us(now + ttl), now_us, now_us),
            ).fetchone()
        return None if row is None else _lease(row)

    def release(self, shard: int, owner: str, epoch: int, now: datetime) -> bool:
        with self._write() as db:
            return (
                db.execute(
                    "UPDATE leases SET expires_at = ? WHERE shard = ? AND owner = ? AND epoch = ?",
                    (us(now), shard, owner, epoch),
                ).rowcount
                == 1
            )

    def leases(self) -> list[Lease]:
        rows = self._read("SELECT shard, owner, epoch, expires_at FROM leases ORDER BY shard")
        return [_lease(r) for r in rows]

    def beat(self, heartbeat: Heartbeat) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO heartbeats VALUES (?, ?, ?) ON CONFLICT (component) DO UPDATE SET "
                "at = excluded.at, detail = excluded.detail",
                (heartbeat.component, us(heartbeat.at), json.dumps(dict(heartbeat.detail))),
            )

    def purge_orphan_heartbeats(self, prefix: str) -> int:
        """Remove the ``<prefix><schedule_id>`` heartbeats of deleted schedules."""
        with self._write() as db:
            return int(
                db.execute(
                    "DELETE FROM heartbeats WHERE substr(component, 1, ?) = ? AND NOT EXISTS ("
                    "SELECT 1 FROM schedules s WHERE s.schedule_id = substr(component, ?) "
                    "AND s.deleted_at IS NULL)",
                    (len(prefix), prefix, len(prefix) + 1),
                ).rowcount
            )

    def heartbeat(self, component: str) -> Heartbeat | None:
        rows = self._read("SELECT at, detail FROM heartbeats WHERE component = ?", (component,))
        if not rows:
            return None
        return Heartbeat(component, from_us(rows[0][0]), json.loads(rows[0][1]))

    def heartbeats_of(self, components: Sequence[str]) -> dict[str, Heartbeat]:
        found: dict[str, Heartbeat] = {}
        for start in range(0, len(components), 500):  # under SQLite's variable limit
            chunk = list(components[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            rows = self._read(
                f"SELECT component, at, detail FROM heartbeats WHERE component IN ({marks})",
                chunk,
            )
            found.update({r[0]: Heartbeat(r[0], from_us(r[1]), json.loads(r[2])) for r in rows})
        return found

    def beat_if(self, heartbeat: Heartbeat, expected_at: datetime | None) -> bool:
        with self._write() as db:
            row = db.execute(
                "SELECT at FROM heartbeats WHERE component = ?", (heartbeat.component,)
            ).fetchone()
            if (None if row is None else row[0]) != (
                None if expected_at is None else us(expected_at)
            ):
                return False
            db.execute(
                "INSERT INTO heartbeats VALUES (?, ?, ?) ON CONFLICT (component) DO UPDATE SET "
                "at = excluded.at, detail = excluded.detail",
                (heartbeat.component, us(heartbeat.at), json.dumps(dict(heartbeat.detail))),
            )
            return True


def _lease(row: Sequence[Any]) -> Lease:
    return Lease(shard=row[0], owner=row[1], epoch=row[2], expires_at=from_us(row[3]))
