"""The delivery queue on SQS, as the worker uses it (and the sending side with it).

- A retry (``retry_later``: a backoff, a 202 job's deadline, another
  worker's lease) is a new message with the same body, sent with
  ``DelaySeconds`` (whole seconds rounded up, at most SQS's 900), and the
  received one is deleted by the caller. A delayed message is not in flight:
  a standard queue holds about 120,000 messages in flight, and retries that
  each held theirs for up to 12 hours (a visibility change) could reach that
  during one popular target's outage and stop every delivery. A wait longer
  than 900 s is a chain: the worker reads the run when the message arrives
  and sends the next link (the run stores its backoff, service/runs.py). A
  new message also starts its receive count again, so a run's attempts do not
  add up towards the redrive limit. If the delete is lost, the old message
  comes back too: a duplicate, which the run's stored state makes harmless
  (docs/decisions.md, "Dead letters, retries and a failed invocation").
- ``dead_letter`` sends the body to the DLQ, with the reason as a message
  attribute, then deletes the message: a message that cannot be run at all
  (a run that failed is recorded as failed and its message deleted). The
  queue's own redrive policy (``maxReceiveCount``) moves a message no worker
  finished with; the dead-letter sweep closes its run and gives it a reason
  (service/dead_letter_sweep.py).
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
MAX_DELAY_S: Final = 900  # SQS's longest DelaySeconds
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

    def retry_later(self, message: QueueMessage, delay_s: float) -> bool:
        self.client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=message.body,
            DelaySeconds=min(visibility_timeout_s(delay_s), MAX_DELAY_S),
        )
        return True

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
