"""The dead-letter sweep on the local stack: a run whose intent the SQLite queue's
redrive moved to its dead rows is closed, and the letter gets the reason why."""

from __future__ import annotations

from pathlib import Path

from adapters.sqlite.dead_letters import SqliteDeadLetterInbox, SqliteDeadLetters
from adapters.sqlite.queue import SqliteQueue
from adapters.sqlite.runs import SqliteRunStore
from domain.run import RunStatus
from service.dead_letter_sweep import sweep_dead_letters
from tests.conftest import FakeClock, World
from tests.handlers.test_worker import admitted


def test_a_run_whose_intent_the_redrive_moved_is_closed_once(
    world: World, clock: FakeClock, tmp_path: Path
) -> None:
    [intent] = admitted(world, clock, 1)
    queue = SqliteQueue(tmp_path / "duetime.db", clock=clock, max_receive_count=2)
    queue.send_batch([intent])
    for _ in range(3):  # received twice without a delete, then moved by the redrive
        queue.receive(10, 0)
        clock.advance(queue.visibility_timeout_s + 1)
    inbox = SqliteDeadLetterInbox(tmp_path / "duetime.db", connection_of=queue)
    runs = SqliteRunStore(world.store)

    report = sweep_dead_letters(inbox, runs, clock)

    assert (report.found, report.closed, report.left) == (1, 1, 0)
    run = runs.get_run(intent.occurrence_id)
    assert run is not None and run.status is RunStatus.FAILED
    assert run.reason is not None and run.reason.startswith("dead-lettered by the queue after")
    [letter] = SqliteDeadLetters(tmp_path / "duetime.db", connection_of=queue).page(10).items
    assert letter.reason == run.reason
    assert sweep_dead_letters(inbox, runs, clock).found == 0
    queue.close()
