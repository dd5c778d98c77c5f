"""The local stack's worker: ``run_worker_loop`` runs a ``WorkerPool``, threads
that apply the worker's decisions (handlers/intents.py) to messages from the
SQLite queue (or SQS over the emulator), with a heartbeat that keeps each held
message hidden and each run in flight leased for seconds at a time, so the work
of a killed process is taken over within seconds. The worker and its queue
come from the composition root (``bootstrap.local.build_sqlite_worker``, or
``bootstrap.aws.build_aws_worker`` over the emulator).
"""

from __future__ import annotations

import queue as queue_module
import threading
import time
from collections.abc import Callable
from typing import Any

from adapters.observability import (
    logger,
)
from adapters.telemetry import flush_metrics
from handlers.intents import Handled, handle_message
from service.run_ports import (
    HELD_VISIBILITY_S,
    QueueMessage,
    WorkQueue,
)
from service.runs import RunWorker

# Messages a pool over the SQLite queue receives at a time (SQS gives at most
# 10): a receive there is one write transaction whatever its size, and a
# burst's receives came about five messages at a time (bench/burst.py: about
# 0.6 against 0.57 ms of CPU a run at 25).
SQLITE_RECEIVE_BATCH = 25

# Finished messages are deleted in batches: when this many are waiting, or
# this long after the keeper's last pass. A write transaction for every one or
# two messages was a sixth of the pool's writes in a burst (bench/burst.py);
# a message not yet deleted stays hidden (its visibility is at least
# ``HELD_VISIBILITY_S``) and, if the process dies first, comes back and is
# deleted as the duplicate of a finished run.
DELETE_BATCH = 50
DELETE_WAIT_S = 0.2


class WorkerPool:
    """Delivery workers in one process: a receiver, ``workers`` threads that
    run messages, and a keeper that deletes in batches and beats the heartbeat.

    - The receiver keeps at most ``max(2 * workers, max_messages)`` messages
      held (received, not yet handled), receiving up to ``max_messages`` at a
      time once no more than ``workers // 2`` are waiting, so a worker that
      frees up finds the next message waiting and receives come in batches.
    - Each worker thread runs one message at a time; a target that hangs
      until its timeout holds one thread, not the others.
    - The keeper deletes finished messages in one statement or request per
      batch (``DELETE_BATCH`` of them, or what finished within
      ``DELETE_WAIT_S``), and every ``heartbeat_s`` makes every held message
      invisible for another ``visibility_s`` and extends the run lease of
      every attempt in flight (``RunWorker.extend_leases``). A killed process beats no more:
      its messages come back, and its runs can be taken over, within
      ``visibility_s``.
    - On stop, messages received but not started are made visible again at
      once, and the workers finish what they run (up to ``drain_s``).
    """

    def __init__(
        self,
        worker: RunWorker,
        queue: WorkQueue,
        *,
        workers: int = 1,
        max_messages: int = 10,
        wait_s: float = 1.0,
        visibility_s: float = HELD_VISIBILITY_S,
        heartbeat_s: float | None = None,
        drain_s: float = 10.0,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a worker pool needs at least one worker (got {workers})")
        self.worker = worker
        self.queue = queue
        self.workers = workers
        self.max_messages = max(1, max_messages)
        self.wait_s = wait_s
        self.visibility_s = visibility_s
        self.heartbeat_s = heartbeat_s if heartbeat_s is not None else visibility_s / 5
        self.drain_s = drain_s
        # Held at once: enough that a worker that frees up finds the next message
        # waiting, and that a receive brings a full batch.
        self.capacity = max(2 * workers, self.max_messages)
        self._low_water = workers // 2  # receive again when this few are waiting
        self.totals = {"polls": 0, "deleted": 0, "retry": 0, "dead_lettered": 0, "errors": 0}
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # the receiver waits here when full
        self._held: dict[str, QueueMessage] = {}  # receipt -> message, received not yet handled
        self._ready: queue_module.SimpleQueue[QueueMessage | None] = queue_module.SimpleQueue()
        self._to_delete: list[str] = []
        self._deletes = threading.Event()  # the keeper waits here for finished messages
        # A retry's visibility change and the heartbeat's never interleave, so
        # the heartbeat cannot overwrite a backoff delay with its shorter hold.
        self._beat_lock = threading.Lock()
        self._handling_queue = _HeldQueue(queue, self)
        self.beats = 0  # heartbeats so far

    def run(
        self, stop: threading.Event | None = None, max_polls: int | None = None
    ) -> dict[str, int]:
        """Receive and handle until ``stop`` is set (or after ``max_polls`` receives,
        once what they brought is handled). Returns the counts."""
        stop = stop or threading.Event()
        threads = [
            threading.Thread(target=self._work, name=f"duetime-worker-{n}", daemon=True)
            for n in range(self.workers)
        ]
        keeper = threading.Thread(
            target=self._keep, args=(stop,), name="duetime-keeper", daemon=True
        )
        for thread in threads:
            thread.start()
        keeper.start()
        try:
            self._receive(stop, max_polls)
        finally:
            unstarted: list[str] = []
            while True:
                try:
                    message = self._ready.get_nowait()
                except queue_module.Empty:
                    break
                if message is not None:
                    unstarted.append(message.receipt)
            with self._lock:
                for receipt in unstarted:
                    self._held.pop(receipt, None)
            for _ in threads:
                self._ready.put(None)  # one stop sign per worker
            self._safely(self.queue.change_visibility_batch, unstarted, 0.0)
            deadline = time.monotonic() + self.drain_s
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            stop.set()
            self._deletes.set()
            keeper.join(5.0)
            self._flush_deletes()
            flush_metrics()
        return dict(self.totals)

    # --- the receiver (the calling thread) --------------------------------------------

    def _receive(self, stop: threading.Event, max_polls: int | None) -> None:
        while not stop.is_set():
            if max_polls is not None and self.totals["polls"] >= max_polls:
                with self._room:
                    while self._held and not stop.is_set():
                        self._room.wait(0.1)
                return
            with self._room:
                room = self.capacity - len(self._held)
                if room <= 0 or self._ready.qsize() > self._low_water:
                    # Enough is waiting: receive once it runs low, a batch at a time.
                    self._room.wait(0.1)
                    continue
            try:
                messages = self.queue.receive(min(self.max_messages, room), self.wait_s)
            except Exception:
                logger().exception("receive failed")
                stop.wait(1.0)
                continue
            with self._lock:
                self.totals["polls"] += 1
                for message in messages:
                    self._held[message.receipt] = message
            for message in messages:
                self._ready.put(message)
            if not messages and self.wait_s <= 0:
                stop.wait(0.2)

    # --- the workers --------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            message = self._ready.get()
            if message is None:
                return
            try:
                handled: Handled | None = handle_message(self.worker, self._handling_queue, message)
            except Exception:
                handled = None
                logger().exception("message not handled", extra={"id": message.message_id})
            with self._room:
                self._held.pop(message.receipt, None)
                if handled is None:
                    self.totals["errors"] += 1
                else:
                    self.totals[handled] += 1
                    if handled == "deleted":
                        self._to_delete.append(message.receipt)
                full = len(self._to_delete) >= DELETE_BATCH
                if self._ready.qsize() <= self._low_water:
                    self._room.notify()
            if full:
                self._deletes.set()

    # --- the keeper ---------------------------------------------------------------------

    def _keep(self, stop: threading.Event) -> None:
        last_beat = time.monotonic()
        last_flush = last_beat
        while not stop.is_set():
            self._deletes.wait(DELETE_WAIT_S)
            self._deletes.clear()
            self._flush_deletes()
            now = time.monotonic()
            if now - last_beat >= self.heartbeat_s:
                last_beat = now
                self._beat()
            if now - last_flush >= 1.0:
                last_flush = now
                flush_metrics()

    def _beat(self) -> None:
        self.beats += 1
        with self._beat_lock:
            with self._lock:
                receipts = list(self._held)
            self._safely(self.queue.change_visibility_batch, receipts, self.visibility_s)
        self._safely(self.worker.extend_leases)

    def _release(self, receipt: str) -> None:
        """The message's visibility is the decision's now: the heartbeat lets go."""
        with self._lock:
            self._held.pop(receipt, None)

    def _flush_deletes(self) -> None:
        with self._lock:
            receipts, self._to_delete = self._to_delete, []
        # If this fails, each message comes back after its visibility timeout
        # and is deleted then, as a duplicate of a finished run.
        if receipts:
            self._safely(self.queue.delete_batch, receipts)

    @staticmethod
    def _safely(call: Callable[..., Any], *args: Any) -> bool:
        try:
            call(*args)
        except Exception:
            logger().exception("queue housekeeping failed", extra={"call": call.__name__})
            return False
        return True


class _HeldQueue(WorkQueue):
    """The queue as a pool's worker threads use it: a visibility change (a
    retry's delay) first takes the message out of the heartbeat's hands."""

    def __init__(self, queue: WorkQueue, pool: WorkerPool) -> None:
        self._queue = queue
        self._pool = pool

    def receive(self, max_messages: int, wait_s: float) -> list[QueueMessage]:
        return self._queue.receive(max_messages, wait_s)

    def change_visibility(self, receipt: str, delay_s: float) -> None:
        with self._pool._beat_lock:
            self._pool._release(receipt)
            self._queue.change_visibility(receipt, delay_s)

    def retry_later(self, message: QueueMessage, delay_s: float) -> bool:
        with self._pool._beat_lock:
            self._pool._release(message.receipt)
            return self._queue.retry_later(message, delay_s)

    def delete(self, receipt: str) -> None:
        self._queue.delete(receipt)

    def dead_letter(self, message: QueueMessage, reason: str) -> None:
        self._queue.dead_letter(message, reason)


def run_worker_loop(
    worker: RunWorker,
    queue: WorkQueue,
    *,
    stop: threading.Event | None = None,
    workers: int = 1,
    max_messages: int = 10,
    wait_s: float = 1.0,
    max_polls: int | None = None,
    visibility_s: float = HELD_VISIBILITY_S,
    heartbeat_s: float | None = None,
) -> dict[str, int]:
    """Poll ``queue`` and handle every message with a pool of ``workers`` threads
    until ``stop`` is set (or ``max_polls`` receives are handled).

    A message whose handling raised stays in the queue and comes back after its
    visibility timeout, as on SQS. See ``WorkerPool``.
    """
    pool = WorkerPool(
        worker,
        queue,
        workers=workers,
        max_messages=max_messages,
        wait_s=wait_s,
        visibility_s=visibility_s,
        heartbeat_s=heartbeat_s,
    )
    return pool.run(stop, max_polls)
