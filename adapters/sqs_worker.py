"""The delivery queue on SQS, as the worker uses it (and the sending side with it).

- A retry is a ``ChangeMessageVisibility`` of the received message to the
  backoff delay, whole seconds rounded up. SQS refuses a visibility that ends
  more than 12 hours after the receive, so a delay is capped 15 minutes short
  of that (the longest a worker can have held the message); every attempt is
  a fresh receive, so the limit applies per attempt.
- ``dead_letter`` sends the body to the DLQ, with the reason as a message
  attribute, then deletes the message: the run is already recorded as failed,
  and the DLQ keeps the evidence. The queue's own redrive policy
  (``maxReceiveCount``) stays as the backstop for messages no worker could
  handle at all.
- A stale receipt (the message was received again by someone else, or is
  already gone) is not an error: the newer holder decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from botocore.exceptions import ClientError

from adapters.sqs import SqsDeliveryQueue
from domain.backoff import visibility_timeout_s
from service.run_ports import QueueMessage, WorkQueue

MAX_BATCH: Final = 10  # SQS's limit per SendMessageBatch / ReceiveMessage
MAX_WAIT_S: Final = 20  # SQS's longest long poll
# SQS counts its 12-hour visibility limit from the receive; the worker may have
# spent up to a Lambda function's 15 minutes since then.
MAX_VISIBILITY_S: Final = 43_200 - 900
REASON_ATTRIBUTE: Final = "duetime-dead-letter-reason"
_STALE_RECEIPT: Final = frozenset(
    {
        "ReceiptHandleIsInvalid",
        "InvalidParameterValue",
        "MessageNotInflight",
        "AWS.SimpleQueueService.MessageNotInflight",
    }
)


class SqsWorkQueue(SqsDeliveryQueue, WorkQueue):
    """The delivery queue as a worker uses it; sending is the dispatcher's send."""

    def __init__(
        self,
        client: Any,
        queue_url: str,
        dlq_url: str,
        *,
        visibility_timeout_s: float | None = None,
    ) -> None:
        super().__init__(client, queue_url)
        self.dlq_url = dlq_url
        # None: the queue's own visibility timeout. A worker with a heartbeat
        # (the local stack over the emulator) asks for a short one per receive.
        self.visibility_timeout_s = visibility_timeout_s

    @classmethod
    def from_urls(
        cls,
        queue_url: str,
        dlq_url: str,
        client: Any = None,
        *,
        visibility_timeout_s: float | None = None,
    ) -> SqsWorkQueue:
        if client is None:
            import boto3

            client = boto3.client("sqs")
        return cls(client, queue_url, dlq_url, visibility_timeout_s=visibility_timeout_s)

    def receive(self, max_messages: int, wait_s: float) -> list[QueueMessage]:
        params: dict[str, Any] = {
            "QueueUrl": self.queue_url,
            "MaxNumberOfMessages": max(1, min(MAX_BATCH, max_messages)),
            "WaitTimeSeconds": max(0, min(MAX_WAIT_S, int(wait_s))),
            "MessageSystemAttributeNames": ["ApproximateReceiveCount"],
        }
        if self.visibility_timeout_s is not None:
            params["VisibilityTimeout"] = visibility_timeout_s(self.visibility_timeout_s)
        answer = self.client.receive_message(**params)
        return [
            QueueMessage(
                message_id=m["MessageId"],
                receipt=m["ReceiptHandle"],
                body=m["Body"],
                receive_count=int(m.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
            )
            for m in answer.get("Messages", [])
        ]

    def change_visibility(self, receipt: str, delay_s: float) -> None:
        try:
            self.client.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=receipt,
                VisibilityTimeout=min(visibility_timeout_s(delay_s), MAX_VISIBILITY_S),
            )
        except ClientError as error:
            if _code(error) not in _STALE_RECEIPT:
                raise

    def change_visibility_batch(self, receipts: Sequence[str], delay_s: float) -> None:
        timeout = min(visibility_timeout_s(delay_s), MAX_VISIBILITY_S)
        for start in range(0, len(receipts), MAX_BATCH):
            entries = [
                {"Id": str(n), "ReceiptHandle": r, "VisibilityTimeout": timeout}
                for n, r in enumerate(receipts[start : start + MAX_BATCH])
            ]
            answer = self.client.change_message_visibility_batch(
                QueueUrl=self.queue_url, Entries=entries
            )
            _raise_unless_stale(answer)

    def delete_batch(self, receipts: Sequence[str]) -> None:
        for start in range(0, len(receipts), MAX_BATCH):
            entries = [
                {"Id": str(n), "ReceiptHandle": r}
                for n, r in enumerate(receipts[start : start + MAX_BATCH])
            ]
            answer = self.client.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
            _raise_unless_stale(answer)

    def delete(self, receipt: str) -> None:
        try:
            self.client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt)
        except ClientError as error:
            if _code(error) not in _STALE_RECEIPT:
                raise

    def dead_letter(self, message: QueueMessage, reason: str) -> None:
        self.client.send_message(
            QueueUrl=self.dlq_url,
            MessageBody=message.body or "(empty)",
            MessageAttributes={
                REASON_ATTRIBUTE: {"DataType": "String", "StringValue": reason[:1024] or "-"}
            },
        )
        self.delete(message.receipt)


def _raise_unless_stale(answer: dict[str, Any]) -> None:
    """A batch answer's failures: a stale receipt is not one (the newer holder decides)."""
    failed = [f for f in answer.get("Failed", []) if f.get("Code") not in _STALE_RECEIPT]
    if failed:
        first = failed[0]
        raise RuntimeError(
            f"{len(failed)} of a batch failed on SQS, first: {first.get('Code')}: "
            f"{first.get('Message', '')}"
        )


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
