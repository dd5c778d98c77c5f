"""The dead-letter sweep: a run whose intent SQS dead-lettered by itself is closed,
and each such letter is counted once, for the alarm on newly arrived dead letters."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from adapters.definitions import DELIVERY_QUEUE, Metric
from adapters.sqlite.runs import SqliteRunStore
from adapters.sqs_worker import REASON_ATTRIBUTE, SqsWorkQueue
from domain.run import RunStatus
from handlers.worker import handler
from service.dead_letter_sweep import DeadLetterInbox, Letter, sweep_dead_letters
from tests.conftest import FakeClock, World
from tests.handlers.test_worker import admitted, emitted, sqs, worker_for
from tests.unit.test_runs import FakeTarget

__all__ = ["sqs"]  # the moto queues fixture

SWEEP = {"source": "duetime.scheduler", "duetime": "sweep"}


def _redriven_by_sqs(client: Any, queue: SqsWorkQueue) -> None:
    """Receive every message until SQS moves it to the DLQ (workers that never finished)."""
    for _ in range(DELIVERY_QUEUE.max_receive_count + 1):
        client.receive_message(QueueUrl=queue.queue_url, VisibilityTimeout=0)


def _letters(client: Any, queue: SqsWorkQueue) -> list[dict[str, Any]]:
    return list(
        client.receive_message(
            QueueUrl=queue.dlq_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=0,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
    )


def test_a_run_whose_intent_sqs_dead_lettered_is_closed_and_counted_once(
    world: World,
    clock: FakeClock,
    sqs: tuple[Any, SqsWorkQueue],
    capsys: pytest.CaptureFixture[str],
) -> None:
    client, queue = sqs
    [stuck] = admitted(world, clock, 1)
    queue.send_batch([stuck])
    _redriven_by_sqs(client, queue)
    [letter] = _letters(client, queue)
    assert REASON_ATTRIBUTE not in letter.get("MessageAttributes", {})
    assert world.store.records.get_run(stuck.occurrence_id).status is RunStatus.ADMITTED  # type: ignore[union-attr]
    capsys.readouterr()
    worker = worker_for(world, clock, FakeTarget())

    first = handler(SWEEP, None, worker=worker, queue=queue)  # type: ignore[arg-type]

    assert first == {"found": 1, "closed": 1, "left": 0}
    run = world.store.records.get_run(stuck.occurrence_id)
    assert run is not None and run.status is RunStatus.FAILED
    assert run.reason is not None and run.reason.startswith("dead-lettered by the queue")
    [marked] = _letters(client, queue)
    assert json.loads(marked["Body"])["occurrence_id"] == stuck.occurrence_id
    assert marked["MessageAttributes"][REASON_ATTRIBUTE]["StringValue"] == run.reason
    metrics, _ = emitted(capsys.readouterr().out)
    assert metrics[Metric.DEAD_LETTERED] == [1]

    # The next sweep passes the marked letter by: the alarm clears by itself.
    again = handler(SWEEP, None, worker=worker, queue=queue)  # type: ignore[arg-type]
    assert again == {"found": 0, "closed": 0, "left": 0}
    metrics, _ = emitted(capsys.readouterr().out)
    assert Metric.DEAD_LETTERED not in metrics


def test_a_letter_the_worker_dead_lettered_with_its_reason_is_not_swept(
    world: World, clock: FakeClock, sqs: tuple[Any, SqsWorkQueue]
) -> None:
    client, queue = sqs
    client.send_message(
        QueueUrl=queue.dlq_url,
        MessageBody="{}",
        MessageAttributes={REASON_ATTRIBUTE: {"DataType": "String", "StringValue": "not one"}},
    )
    worker = worker_for(world, clock, FakeTarget())
    assert handler(SWEEP, None, worker=worker, queue=queue) == {  # type: ignore[arg-type]
        "found": 0,
        "closed": 0,
        "left": 0,
    }


class ListInbox(DeadLetterInbox):
    def __init__(self, letters: list[Letter]) -> None:
        self.letters = letters
        self.marked: list[tuple[str, str]] = []

    def unmarked(self, limit: int) -> list[Letter]:
        return [x for x in self.letters if x.receipt not in dict(self.marked)][:limit]

    def mark(self, letter: Letter, reason: str) -> None:
        self.marked.append((letter.receipt, reason))


def test_a_run_still_running_under_its_lease_is_left_for_a_later_sweep(
    world: World, clock: FakeClock
) -> None:
    # Its worker may still record how the attempt ended; once the lease has
    # run out, the sweep closes it with the attempt marked lost.
    [intent] = admitted(world, clock, 1)
    runs = SqliteRunStore(world.store)
    run = runs.get_run(intent.occurrence_id)
    assert run is not None
    runs.start_attempt(
        intent.occurrence_id,
        now=clock.now(),
        lease_until=clock.now() + timedelta(seconds=60),
        run_token_hash=None,
        seen=run,
    )
    inbox = ListInbox([Letter("r1", "{}", intent.occurrence_id, None, 25)])

    assert sweep_dead_letters(inbox, runs, clock).left == 1
    assert inbox.marked == []

    clock.advance(61)
    report = sweep_dead_letters(inbox, runs, clock)
    assert (report.found, report.closed, report.left) == (1, 1, 0)
    ended = runs.get_run(intent.occurrence_id)
    assert ended is not None and ended.status is RunStatus.FAILED
    assert [a.outcome for a in ended.attempt_log] == ["lost"]


def test_a_letter_whose_run_already_ended_is_marked_without_touching_the_run(
    world: World, clock: FakeClock
) -> None:
    [intent] = admitted(world, clock, 1)
    runs = SqliteRunStore(world.store)
    run = runs.get_run(intent.occurrence_id)
    assert run is not None
    runs.finish(
        intent.occurrence_id,
        attempt=None,
        status=RunStatus.SKIPPED,
        now=clock.now(),
        reason="paused",
        seen=run,
    )
    inbox = ListInbox(
        [Letter("r1", "{}", intent.occurrence_id, None, 25), Letter("r2", "x", None, None, 25)]
    )

    report = sweep_dead_letters(inbox, runs, clock)

    assert (report.found, report.closed, report.left) == (2, 0, 0)
    assert runs.get_run(intent.occurrence_id).status is RunStatus.SKIPPED  # type: ignore[union-attr]
