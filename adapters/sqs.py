"""The dispatcher's side of the delivery queue on SQS: send delivery intents.

At-least-once: an intent that could not be sent is reported back by its
occurrence id and the dispatcher sends it again on a later pass (the record
stays pending until then). Nothing here raises for what SQS answered about
one chunk: a refused or unreachable call fails that chunk's intents, and the
next chunks are still tried.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from domain.run import DeliveryIntent
from service.ports import DeliveryQueue, delay_s, second_of

MAX_BATCH: Final = 10  # SQS's limit per SendMessageBatch


class QueueSettings(Protocol):
    """What ``from_settings`` reads (the handlers' Settings has it)."""

    @property
    def delivery_queue_url(self) -> str: ...


def body(intent: DeliveryIntent) -> str:
    """The message body a worker reads back with ``DeliveryIntent.from_dict``."""
    return json.dumps(intent.to_dict(), separators=(",", ":"))


def entry(
    index: int, intent: DeliveryIntent, now: datetime | None, early: Collection[datetime] = ()
) -> dict[str, Any]:
    """One SendMessageBatch entry: the intent, held back until its due second
    (``DelaySeconds`` is whole seconds: rounded up, so never visible early; for
    an ``early`` second's intent, rounded down, so visible less than a second
    before its time, and the worker holds it until then)."""
    found: dict[str, Any] = {"Id": str(index), "MessageBody": body(intent)}
    if now is None:
        return found
    ahead = delay_s(intent.scheduled_at, now)
    goes_early = bool(early) and second_of(intent.scheduled_at) in early
    delay = math.floor(ahead) if goes_early else math.ceil(ahead)
    if delay > 0:
        found["DelaySeconds"] = delay
    return found


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SqsDeliveryQueue(DeliveryQueue):
    """``clock`` is read before each request: SQS counts ``DelaySeconds`` from
    when it receives the message, and a pass that sends thousands of intents
    may send its last ones seconds after the ``now`` it read (the delay is
    then counted from the later of the two, so no intent is held back past
    its due second, nor becomes visible before it)."""

    def __init__(
        self, client: Any, queue_url: str, *, clock: Callable[[], datetime] = _utc_now
    ) -> None:
        if not queue_url:
            raise ValueError("the delivery queue URL is required")
        self.client = client
        self.queue_url = queue_url
        self.clock = clock

    @classmethod
    def from_settings(cls, settings: QueueSettings, session: Any = None) -> SqsDeliveryQueue:
        if session is None:
            import boto3

            session = boto3.session.Session()
        config = Config(
            retries={"mode": "standard", "max_attempts": 5}, connect_timeout=3, read_timeout=10
        )
        return cls(session.client("sqs", config=config), settings.delivery_queue_url)

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        return self._send(intents, None)

    def send_ahead(
        self,
        intents: Sequence[DeliveryIntent],
        now: datetime,
        early: Collection[datetime] = (),
    ) -> list[str]:
        return self._send(intents, now, early)

    def _send(
        self,
        intents: Sequence[DeliveryIntent],
        now: datetime | None,
        early: Collection[datetime] = (),
    ) -> list[str]:
        failed: list[str] = []
        for start in range(0, len(intents), MAX_BATCH):
            chunk = intents[start : start + MAX_BATCH]
            # Entry ids only need to be unique within one call; an occurrence
            # id holds dots, which SQS refuses in an entry id.
            sent_at = None if now is None else max(now, self.clock())
            entries = [entry(i, x, sent_at, early) for i, x in enumerate(chunk)]
            try:
                answer = self.client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            except (ClientError, BotoCoreError):
                failed.extend(intent.occurrence_id for intent in chunk)
                continue
            failed.extend(
                chunk[int(entry["Id"])].occurrence_id for entry in answer.get("Failed", [])
            )
        return failed
