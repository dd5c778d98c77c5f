"""The dead letters of the one-machine delivery queue, read without consuming them.

Dead messages are rows of ``delivery_queue`` in state ``dead`` (see
adapters/sqlite/queue.py); nothing receives them, so reading them changes
nothing. Newest first, by the queue's sequence number; a page token is the
sequence number of the last row returned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.sqlite.database import Database
from adapters.sqlite.queue import REDRIVE_REASON, SCHEMA
from adapters.sqlite.tables import from_us
from service.dead_letter_sweep import DeadLetterInbox, Letter
from service.ports import Page
from service.run_views import DeadLetter, DeadLetters


def intent_ids(body: str) -> tuple[str | None, str | None]:
    """The occurrence and schedule a body names, when it is a delivery intent."""
    try:
        data = json.loads(body)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    occurrence, schedule = data.get("occurrence_id"), data.get("schedule_id")
    return (
        occurrence if isinstance(occurrence, str) else None,
        schedule if isinstance(schedule, str) else None,
    )


class SqliteDeadLetters(Database, DeadLetters):
    def __init__(self, path: str | Path, *, connection_of: Database | None = None) -> None:
        super().__init__(path, SCHEMA, connection_of=connection_of)

    def page(self, limit: int, token: str | None = None) -> Page[DeadLetter]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        before = 2**62
        if token:
            if not (token.isascii() and token.isdigit() and len(token) <= 19):
                raise ValueError("not a page token from this queue")
            before = int(token)
        with self._lock:
            rows: list[Any] = self._db.execute(
                "SELECT seq, message_id, body, dead_reason, dead_at, receive_count "
                "FROM delivery_queue WHERE state = 'dead' AND seq < ? ORDER BY seq DESC LIMIT ?",
                (before, limit + 1),
            ).fetchall()
        letters = []
        for seq, message_id, body, reason, dead_at, receive_count in rows[:limit]:
            del seq
            occurrence_id, schedule_id = intent_ids(body)
            letters.append(
                DeadLetter(
                    id=message_id,
                    occurrence_id=occurrence_id,
                    schedule_id=schedule_id,
                    reason=reason,
                    dead_lettered_at=None if dead_at is None else from_us(dead_at),
                    receive_count=int(receive_count),
                    body=body,
                )
            )
        next_token = str(rows[limit - 1][0]) if len(rows) > limit else None
        return Page(tuple(letters), next_token)

    def discard(self, occurrence_id: str) -> int:
        with self._lock:
            rows: list[Any] = self._db.execute(
                "SELECT seq, body FROM delivery_queue WHERE state = 'dead'"
            ).fetchall()
        settled = [(seq,) for seq, body in rows if intent_ids(body)[0] == occurrence_id]
        if not settled:
            return 0
        with self._write() as db:
            db.executemany("DELETE FROM delivery_queue WHERE seq = ? AND state = 'dead'", settled)
        return len(settled)


class SqliteDeadLetterInbox(Database, DeadLetterInbox):
    """The dead rows as the dead-letter sweep consumes them (service/dead_letter_sweep.py):
    the ones the redrive moved carry ``REDRIVE_REASON`` until the sweep marks them."""

    def __init__(self, path: str | Path, *, connection_of: Database | None = None) -> None:
        super().__init__(path, SCHEMA, connection_of=connection_of)

    def unmarked(self, limit: int) -> list[Letter]:
        with self._lock:
            rows: list[Any] = self._db.execute(
                "SELECT seq, body, receive_count FROM delivery_queue "
                "WHERE state = 'dead' AND dead_reason = ? ORDER BY seq LIMIT ?",
                (REDRIVE_REASON, max(1, limit)),
            ).fetchall()
        return [
            Letter(
                receipt=str(seq),
                body=body,
                occurrence_id=intent_ids(body)[0],
                reason=None,
                receive_count=int(count),
            )
            for seq, body, count in rows
        ]

    def mark(self, letter: Letter, reason: str) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE delivery_queue SET dead_reason = ? WHERE seq = ? AND state = 'dead'",
                (reason, int(letter.receipt)),
            )
