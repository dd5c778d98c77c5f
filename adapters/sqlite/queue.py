"""The delivery queue of the one-machine mode: a table that behaves like SQS.

One row per message, with the instant it becomes visible, how often it was
received, the receipt of its latest receive, and a state (``ready`` or
``dead``). It is both sides of the queue: the dispatcher sends with
``send_batch`` (``DeliveryQueue``), workers ``receive`` / ``change_visibility``
/ ``delete`` / ``dead_letter`` (``WorkQueue``).

As on SQS:
- a receive makes a message invisible for the visibility timeout and hands
  out a new receipt; only that receipt can change or delete it, so a worker
  that was too slow cannot delete a copy another worker now holds;
- a message received more than ``max_receive_count`` times is moved to the
  dead state instead of being delivered (the redrive policy);
- delivery is at-least-once and unordered across visibility changes;
- a delivery intent sent ahead (``send_ahead``) is held back until its
  ``scheduled_at`` (``visible_at``, at most 15 minutes ahead, as SQS's
  ``DelaySeconds``), to the microsecond where SQS rounds up to the second.

Unlike the AWS queue (whose 15-minute visibility covers a whole Lambda
invocation), a receive here hides a message for ``HELD_VISIBILITY_S`` only:
the worker pool extends the visibility of every message it holds every few
seconds (``change_visibility_batch``), so the messages of a worker that was
killed come back within seconds, not minutes.

Several processes can share the file: a receive claims rows with a
conditional ``UPDATE ... WHERE visible_at <= now`` inside ``BEGIN IMMEDIATE``,
so two workers never receive one message at the same time. Instants come
from the injected clock, so tests move time by hand.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final

from adapters.definitions import DELIVERY_QUEUE
from adapters.sqlite.database import Database
from adapters.sqlite.tables import from_us, us
from domain.backoff import MAX_DELAY_S
from domain.run import DeliveryIntent
from service.clock import SystemClock
from service.ports import MAX_DELAY, Clock, DeliveryQueue
from service.run_ports import HELD_VISIBILITY_S, QueueMessage, WorkQueue

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS delivery_queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    sent_at INTEGER NOT NULL,
    visible_at INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt TEXT,
    state TEXT NOT NULL DEFAULT 'ready',
    dead_reason TEXT,
    dead_at INTEGER
);
CREATE INDEX IF NOT EXISTS delivery_queue_visible ON delivery_queue (visible_at, seq)
    WHERE state = 'ready';
CREATE INDEX IF NOT EXISTS delivery_queue_receipt ON delivery_queue (receipt)
    WHERE receipt IS NOT NULL;
"""

# The reason of a message the redrive moved (the dead-letter sweep looks for it).
REDRIVE_REASON: Final = "received more than the redrive limit"

_CANDIDATES: Final = (
    "SELECT seq FROM delivery_queue WHERE state = 'ready' AND visible_at <= ? "
    "ORDER BY visible_at, seq LIMIT ?"
)


class SqliteQueue(Database, DeliveryQueue, WorkQueue):
    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock | None = None,
        visibility_timeout_s: float = HELD_VISIBILITY_S,
        max_receive_count: int = DELIVERY_QUEUE.max_receive_count,
        busy_timeout_s: float = 30.0,
        poll_interval_s: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
        connection_of: Database | None = None,
    ) -> None:
        super().__init__(path, SCHEMA, busy_timeout_s=busy_timeout_s, connection_of=connection_of)
        self.clock = clock or SystemClock()
        self.visibility_timeout_s = visibility_timeout_s
        self.max_receive_count = max_receive_count
        self.poll_interval_s = poll_interval_s
        self._sleep = sleep

    # --- the send side (the dispatcher) ----------------------------------------------------

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        return self._send(intents, None)

    def send_ahead(
        self,
        intents: Sequence[DeliveryIntent],
        now: datetime,
        early: Collection[datetime] = (),
    ) -> list[str]:
        # Visible at the due instant itself, to the microsecond: never early.
        return self._send(intents, now)

    def _send(self, intents: Sequence[DeliveryIntent], now: datetime | None) -> list[str]:
        # With ``now`` (send_ahead), an intent not due yet becomes visible at
        # its due instant, to the microsecond (SQS rounds up to the second).
        sent_at = us(self.clock.now())
        rows = []
        for intent in intents:
            visible_at = sent_at
            if now is not None and intent.scheduled_at > now:
                visible_at = us(min(intent.scheduled_at, now + MAX_DELAY))
            rows.append(
                (
                    uuid.uuid4().hex,
                    json.dumps(intent.to_dict(), separators=(",", ":")),
                    sent_at,
                    visible_at,
                )
            )
        with self._write() as db:
            db.executemany(
                "INSERT INTO delivery_queue (message_id, body, sent_at, visible_at) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )
        return []

    def send_body(self, body: str, delay_s: float = 0.0) -> str:
        """Send one raw message (tests, and bodies that are not intents)."""
        now = self.clock.now()
        message_id = uuid.uuid4().hex
        with self._write() as db:
            db.execute(
                "INSERT INTO delivery_queue (message_id, body, sent_at, visible_at) "
                "VALUES (?, ?, ?, ?)",
                (message_id, body, us(now), us(now + timedelta(seconds=delay_s))),
            )
        return message_id

    # --- the receive side (workers) -------------------------------------------------------

    def receive(self, max_messages: int, wait_s: float) -> list[QueueMessage]:
        deadline = time.monotonic() + max(0.0, wait_s)
        while True:
            messages = self._claim(max_messages)
            if messages or time.monotonic() >= deadline:
                return messages
            self._sleep(min(self.poll_interval_s, max(0.0, deadline - time.monotonic())))

    def _claim(self, max_messages: int) -> list[QueueMessage]:
        """One transaction, two statements, whatever ``max_messages`` is: the
        redrive of the first visible messages, then the claim of the first
        visible ones left. Each receipt is this receive's random prefix and the
        row's sequence number, so it is new on every receive."""
        now = self.clock.now()
        now_us = us(now)
        invisible_until = us(now + timedelta(seconds=self.visibility_timeout_s))
        limit = max(1, max_messages)
        prefix = uuid.uuid4().hex + "."
        with self._write() as db:
            # Redrive: a visible message already received max_receive_count times.
            db.execute(
                "UPDATE delivery_queue SET state = 'dead', dead_at = ?, receipt = NULL, "
                "dead_reason = ? "
                f"WHERE seq IN ({_CANDIDATES}) AND receive_count >= ?",
                (now_us, REDRIVE_REASON, now_us, limit, self.max_receive_count),
            )
            rows = db.execute(
                "UPDATE delivery_queue SET visible_at = ?, receive_count = receive_count + 1, "
                f"receipt = ? || seq WHERE seq IN ({_CANDIDATES}) "
                "RETURNING seq, message_id, body, receive_count, receipt",
                (invisible_until, prefix, now_us, limit),
            ).fetchall()
        rows.sort()  # RETURNING gives no order; hand them out in queue order
        return [QueueMessage(r[1], r[4], r[2], r[3]) for r in rows]

    def change_visibility(self, receipt: str, delay_s: float) -> None:
        delay_s = min(max(0.0, delay_s), MAX_DELAY_S)
        visible_at = us(self.clock.now() + timedelta(seconds=delay_s))
        with self._write() as db:
            db.execute(
                "UPDATE delivery_queue SET visible_at = ? WHERE receipt = ? AND state = 'ready'",
                (visible_at, receipt),
            )

    def change_visibility_batch(self, receipts: Sequence[str], delay_s: float) -> None:
        if not receipts:
            return
        delay_s = min(max(0.0, delay_s), MAX_DELAY_S)
        visible_at = us(self.clock.now() + timedelta(seconds=delay_s))
        with self._write() as db:
            db.executemany(
                "UPDATE delivery_queue SET visible_at = ? WHERE receipt = ? AND state = 'ready'",
                [(visible_at, receipt) for receipt in receipts],
            )

    def delete_batch(self, receipts: Sequence[str]) -> None:
        if not receipts:
            return
        with self._write() as db:
            db.executemany(
                "DELETE FROM delivery_queue WHERE receipt = ? AND state = 'ready'",
                [(receipt,) for receipt in receipts],
            )

    def delete(self, receipt: str) -> None:
        with self._write() as db:
            db.execute(
                "DELETE FROM delivery_queue WHERE receipt = ? AND state = 'ready'", (receipt,)
            )

    def dead_letter(self, message: QueueMessage, reason: str) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE delivery_queue SET state = 'dead', dead_reason = ?, dead_at = ?, "
                "receipt = NULL WHERE receipt = ? AND state = 'ready'",
                (reason, us(self.clock.now()), message.receipt),
            )

    # --- retention ------------------------------------------------------------------------

    def purge_dead(self, before: datetime, *, batch_size: int = 500) -> int:
        """Remove dead letters that died before ``before``, ``batch_size`` per write
        transaction; how many went. (Delivered messages are deleted when handled;
        dead ones are the only rows nothing else removes.)"""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        removed = 0
        while True:
            with self._write() as db:
                gone = int(
                    db.execute(
                        "DELETE FROM delivery_queue WHERE seq IN (SELECT seq FROM delivery_queue "
                        "WHERE state = 'dead' AND dead_at < ? ORDER BY seq LIMIT ?)",
                        (us(before), batch_size),
                    ).rowcount
                )
            removed += gone
            if gone < batch_size:
                return removed

    # --- for operators and tests ------------------------------------------------------------

    def dead_letters(self) -> list[tuple[str, str, str | None]]:
        """Every dead message: (message_id, body, reason), oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT message_id, body, dead_reason FROM delivery_queue "
                "WHERE state = 'dead' ORDER BY seq"
            ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def depth(self) -> int:
        """Messages still to be delivered (visible or not)."""
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM delivery_queue WHERE state = 'ready'"
            ).fetchone()
        return int(row[0])

    def next_visible_at(self) -> datetime | None:
        """When the next ready message becomes visible (None when there is none)."""
        with self._lock:
            row = self._db.execute(
                "SELECT MIN(visible_at) FROM delivery_queue WHERE state = 'ready'"
            ).fetchone()
        return None if row[0] is None else from_us(row[0])
