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
import time
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from domain.run import DeliveryIntent
from service.ports import DeliveryQueue, delay_s, second_of

MAX_BATCH: Final = 10  # SQS's limit per SendMessageBatch
# The tick sends a chunk due later within this much of a whole second (see
# ``SqsDeliveryQueue``): an intent due at a whole second then becomes visible at
# most this late, for at most this much of the pass's time spent waiting.
TICK_ALIGN_S: Final = 0.5


class QueueSettings(Protocol):
    """What ``from_settings`` reads (``bootstrap.settings.Settings`` has it)."""

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
    delay = math.floor(ahead) if _goes_early(intent, early) else math.ceil(ahead)
    if delay > 0:
        found["DelaySeconds"] = delay
    return found


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _goes_early(intent: DeliveryIntent, early: Collection[datetime]) -> bool:
    """Whether the intent is of an ``early`` second: its delay is rounded down."""
    return bool(early) and second_of(intent.scheduled_at) in early


def _rounded_up(intent: DeliveryIntent, sent_at: datetime, early: Collection[datetime]) -> bool:
    """Whether the intent's delay is rounded up: due after a whole second of waiting,
    and not of an early second."""
    if (intent.scheduled_at - sent_at).total_seconds() < 1:
        return False
    return not _goes_early(intent, early)


class SqsDeliveryQueue(DeliveryQueue):
    """``clock`` is read before each request: SQS counts ``DelaySeconds`` from
    when it receives the message, and a pass that sends thousands of intents
    may send its last ones seconds after the ``now`` it read (the delay is
    then counted from the later of the two, so no intent is held back past
    its due second, nor becomes visible before it).

    With ``align_s`` (the tick's queue), a chunk holding an intent due at a later
    second is sent within the first ``align_s`` of a second, waiting for the next
    one if need be: a delay rounded up to whole seconds makes an intent sent at
    x.7 s visible 0.7 s after its whole second, so an aligned send bounds that
    to ``align_s``. The intents of an ``early`` second need no wait (rounded
    down, the worker holds them)."""

    def __init__(
        self,
        client: Any,
        queue_url: str,
        *,
        clock: Callable[[], datetime] = _utc_now,
        align_s: float | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        if not queue_url:
            raise ValueError("the delivery queue URL is required")
        if align_s is not None and not 0 < align_s < 1:
            raise ValueError("align_s is a fraction of a second, between 0 and 1")
        self.client = client
        self.queue_url = queue_url
        self.clock = clock
        self.align_s = align_s
        self.sleep = sleep  # None: time.sleep, looked up when it waits

    @classmethod
    def from_settings(
        cls, settings: QueueSettings, session: Any = None, *, align_s: float | None = None
    ) -> SqsDeliveryQueue:
        if session is None:
            import boto3

            session = boto3.session.Session()
        config = Config(
            retries={"mode": "standard", "max_attempts": 5}, connect_timeout=3, read_timeout=10
        )
        return cls(
            session.client("sqs", config=config), settings.delivery_queue_url, align_s=align_s
        )

    def send_batch(self, intents: Sequence[DeliveryIntent]) -> list[str]:
        return self._send(intents, None)

    def _aligned(
        self,
        chunk: Sequence[DeliveryIntent],
        sent_at: datetime,
        early: Collection[datetime],
        align_s: float,
    ) -> datetime:
        """When to send ``chunk``: now, or at the start of the next second when now
        is past ``align_s`` into this one and an intent's delay would round up."""
        into = sent_at.microsecond / 1_000_000
        if into <= align_s or not any(_rounded_up(i, sent_at, early) for i in chunk):
            return sent_at
        (self.sleep or time.sleep)(1 - into)
        return max(sent_at.replace(microsecond=0) + timedelta(seconds=1), self.clock())

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
            if sent_at is not None and self.align_s is not None:
                sent_at = self._aligned(chunk, sent_at, early, self.align_s)
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
