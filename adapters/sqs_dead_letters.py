"""The dead letters of the SQS delivery queue, read without consuming them.

SQS has no way to read a queue other than receiving its messages, so a
listing is a peek: ``ReceiveMessage`` with ``VisibilityTimeout=0``. The
messages stay visible to anyone else at once and nothing is deleted. Each
peek raises a message's ``ApproximateReceiveCount``; that is harmless here,
as the dead-letter queue has no redrive policy of its own, so no count moves
a message anywhere.

What a listing can and cannot promise:

- Best effort: a receive answers with up to 10 messages, sampled from some of
  the queue's servers, so a listing holds at most ``limit`` messages gathered
  over a few receives, not necessarily all of them, in no particular order.
  A message may be missing from one listing and shown in the next.
- ``discard`` receives what it can see (held out of sight for a moment),
  deletes the messages of the occurrence and makes the others visible again
  at once: best effort, like a listing.
- No pages: SQS cannot continue a receive where the last one stopped, so the
  page token is always None (and a token passed in is refused).

The worker dead-letters a message by sending its body to the queue with the
reason as a message attribute (adapters/sqs_worker.py); ``dead_lettered_at``
is that send's ``SentTimestamp``. A message the delivery queue's own redrive
moved there has no reason, and SQS keeps its original send time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from adapters.sqlite.dead_letters import intent_ids
from adapters.sqs_worker import MAX_BATCH, REASON_ATTRIBUTE
from service.dead_letter_sweep import DeadLetterInbox, Letter
from service.ports import Page
from service.run_views import DeadLetter, DeadLetters

# Receives per listing: SQS samples servers per receive, so a few receives
# find more of a small queue than one; an empty answer ends the listing early.
MAX_RECEIVES: Final = 5
# How long ``discard`` holds the messages it looks at out of sight (seconds).
DISCARD_HOLD_S: Final = 30
# How long the sweep hides each letter it received: long enough that its next
# receives find others, short enough that a listing misses it only briefly.
SWEEP_HIDE_S: Final = 30


class SqsDeadLetters(DeadLetters):
    def __init__(self, client: Any, dlq_url: str) -> None:
        self.client = client
        self.dlq_url = dlq_url

    @classmethod
    def from_url(cls, dlq_url: str, client: Any = None) -> SqsDeadLetters:
        if client is None:
            import boto3

            client = boto3.client("sqs")
        return cls(client, dlq_url)

    def page(self, limit: int, token: str | None = None) -> Page[DeadLetter]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        if token is not None:
            raise ValueError("the dead-letter queue on SQS has no pages")
        found: dict[str, DeadLetter] = {}
        for _ in range(MAX_RECEIVES):
            answer = self.client.receive_message(
                QueueUrl=self.dlq_url,
                MaxNumberOfMessages=min(MAX_BATCH, limit - len(found)),
                WaitTimeSeconds=0,
                VisibilityTimeout=0,
                MessageSystemAttributeNames=["SentTimestamp", "ApproximateReceiveCount"],
                MessageAttributeNames=[REASON_ATTRIBUTE],
            )
            messages = answer.get("Messages", [])
            if not messages:
                break
            for message in messages:
                letter = _letter(message)
                found.setdefault(letter.id, letter)
            if len(found) >= limit:
                break
        return Page(tuple(list(found.values())[:limit]), None)

    def discard(self, occurrence_id: str) -> int:
        gone = 0
        for _ in range(MAX_RECEIVES):
            answer = self.client.receive_message(
                QueueUrl=self.dlq_url,
                MaxNumberOfMessages=MAX_BATCH,
                WaitTimeSeconds=0,
                VisibilityTimeout=DISCARD_HOLD_S,
            )
            messages = answer.get("Messages", [])
            if not messages:
                break
            for message in messages:
                handle = message["ReceiptHandle"]
                if intent_ids(str(message.get("Body", "")))[0] == occurrence_id:
                    self.client.delete_message(QueueUrl=self.dlq_url, ReceiptHandle=handle)
                    gone += 1
                else:
                    self.client.change_message_visibility(
                        QueueUrl=self.dlq_url, ReceiptHandle=handle, VisibilityTimeout=0
                    )
        return gone


def _letter(message: dict[str, Any]) -> DeadLetter:
    attributes = message.get("Attributes", {})
    reason = message.get("MessageAttributes", {}).get(REASON_ATTRIBUTE, {}).get("StringValue")
    sent = attributes.get("SentTimestamp")
    body = str(message.get("Body", ""))
    occurrence_id, schedule_id = intent_ids(body)
    return DeadLetter(
        id=str(message["MessageId"]),
        occurrence_id=occurrence_id,
        schedule_id=schedule_id,
        reason=reason if isinstance(reason, str) else None,
        dead_lettered_at=None if sent is None else datetime.fromtimestamp(int(sent) / 1000, tz=UTC),
        receive_count=int(attributes.get("ApproximateReceiveCount", "1")),
        body=body,
    )


class SqsDeadLetterInbox(DeadLetterInbox):
    """The delivery DLQ as the dead-letter sweep consumes it (service/dead_letter_sweep.py).

    ``unmarked`` receives (hiding each letter ``SWEEP_HIDE_S``, so that the next
    receives of one sweep find others) until it has ``limit`` letters without
    the reason attribute, or a receive comes back empty. ``mark`` sends the body
    again with the reason attribute, then deletes the original: the letter's
    ``SentTimestamp`` becomes the sweep's, its reason says when SQS moved it.
    """

    def __init__(self, client: Any, dlq_url: str) -> None:
        self.client = client
        self.dlq_url = dlq_url

    def unmarked(self, limit: int) -> list[Letter]:
        found: list[Letter] = []
        for _ in range(max(1, limit // MAX_BATCH) * 2):
            answer = self.client.receive_message(
                QueueUrl=self.dlq_url,
                MaxNumberOfMessages=MAX_BATCH,
                WaitTimeSeconds=0,
                VisibilityTimeout=SWEEP_HIDE_S,
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
                MessageAttributeNames=[REASON_ATTRIBUTE],
            )
            messages = answer.get("Messages", [])
            if not messages:
                break
            for message in messages:
                if REASON_ATTRIBUTE in message.get("MessageAttributes", {}):
                    continue
                body = str(message.get("Body", ""))
                # SQS keeps the count the delivery queue reached; this receive adds one.
                count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
                found.append(
                    Letter(
                        receipt=message["ReceiptHandle"],
                        body=body,
                        occurrence_id=intent_ids(body)[0],
                        reason=None,
                        receive_count=max(1, count - 1),
                    )
                )
            if len(found) >= limit:
                break
        return found[:limit]

    def mark(self, letter: Letter, reason: str) -> None:
        self.client.send_message(
            QueueUrl=self.dlq_url,
            MessageBody=letter.body or "(empty)",
            MessageAttributes={
                REASON_ATTRIBUTE: {"DataType": "String", "StringValue": reason[:1024]}
            },
        )
        self.client.delete_message(QueueUrl=self.dlq_url, ReceiptHandle=letter.receipt)
