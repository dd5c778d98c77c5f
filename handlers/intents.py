"""A delivery intent message: its body, its run, and the decision applied to
the message (a retry, a dead letter, a delete). The Lambda worker, the local
stack's worker pool (cli/worker_pool.py) and ``duetime demo`` share it.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from adapters.definitions import Metric
from adapters.observability import logger, put_count
from domain.run import DeliveryIntent
from service.ports import HOLD
from service.run_ports import QueueMessage, WorkQueue
from service.runs import Decision, RunWorker


class IntentBody(BaseModel):
    """The JSON body of a delivery intent message."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    occurrence_id: str = Field(min_length=1, max_length=512)
    schedule_id: str = Field(min_length=1, max_length=128)
    version: int = Field(ge=1)
    scheduled_at: AwareDatetime
    attempt: int = Field(default=0, ge=0)

    def to_intent(self) -> DeliveryIntent:
        return DeliveryIntent(
            occurrence_id=self.occurrence_id,
            schedule_id=self.schedule_id,
            version=self.version,
            scheduled_at=self.scheduled_at,
            attempt=self.attempt,
        )


class RetryLater(Exception):
    """Reported to the batch processor so SQS delivers the message again later."""


Handled = Literal["deleted", "retry", "dead_lettered"]


def handle_message(worker: RunWorker, queue: WorkQueue, message: QueueMessage) -> Handled:
    """Parse, run and apply the decision to the message (everything but delete-on-success,
    which the caller does: SQS after a Lambda success, ``run_worker_loop`` itself)."""
    try:
        intent = IntentBody.model_validate_json(message.body).to_intent()
    except ValidationError as error:
        reason = f"not a delivery intent: {error.error_count()} error(s), first: " + (
            f"{'.'.join(str(p) for p in error.errors()[0]['loc'])} {error.errors()[0]['msg']}"
        )
        logger().error("bad message", extra={"message_id": message.message_id, "reason": reason})
        queue.dead_letter(message, reason)
        put_count(Metric.DEAD_LETTERED, 1)
        return "dead_lettered"
    # A crowded second's intent becomes visible up to HOLD before its time (its
    # delay rounded down, so the surge's drains start it on time): held until then.
    early_s = (intent.scheduled_at - worker.clock.now()).total_seconds()
    if 0 < early_s <= HOLD.total_seconds():
        time.sleep(early_s)
    decision = worker.handle(intent, message.receive_count)
    return apply(decision, queue, message, intent)


def apply(
    decision: Decision, queue: WorkQueue, message: QueueMessage, intent: DeliveryIntent
) -> Handled:
    if decision.action == "retry":
        if queue.retry_later(message, decision.delay_s):
            return "deleted"  # a new, delayed message carries the intent now
        return "retry"
    if decision.action == "dead_letter":
        logger().warning(
            "dead-lettered",
            extra={"occurrence_id": intent.occurrence_id, "reason": decision.reason},
        )
        queue.dead_letter(message, decision.reason)
        put_count(Metric.DEAD_LETTERED, 1)
        return "dead_lettered"
    return "deleted"
