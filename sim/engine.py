"""Simulated time: one clock for everything in the process, and invocations that take turns.

``time-machine`` holds the wall clock (``datetime.now``, ``time.time``) at the
simulated instant, so the handlers' ``SystemClock``, Powertools and moto (SQS
visibility and delays) all see it. Each function invocation runs in its own
thread, but only one runs at a time: an invocation runs until it sleeps
(``time.sleep``, a target that takes 200 ms to answer), and the engine then
moves the clock to the next thing due, which may be another invocation.
Overlapping invocations therefore interleave at their sleeps, as two Lambda
containers interleave in time, and nothing real is waited for.

An invocation past its deadline (the function's Timeout) is stopped the way
Lambda stops it: ``FunctionTimedOut`` is raised at its next sleep or AWS
request, and it derives from ``BaseException`` so no ``except Exception`` in
the handler swallows it.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from datetime import UTC, datetime, timedelta
from typing import Any

import time_machine


class FunctionTimedOut(BaseException):
    """Lambda stopped the invocation at its timeout."""


class SimulationError(RuntimeError):
    """The simulation itself went wrong (not the code under test)."""


_REAL_SLEEP = time.sleep
_REAL_MONOTONIC = time.monotonic


class Process:
    """One running invocation: a thread that runs only while the engine lets it."""

    def __init__(
        self,
        engine: Engine,
        name: str,
        body: Callable[[], Any],
        deadline: float | None,
        *,
        parent: Process | None = None,
    ) -> None:
        self.engine = engine
        # A strand: a thread the invocation ``parent`` started (its worker's pool).
        # It runs in turn like any process, as part of its parent's invocation.
        self.parent = parent
        self.name = name
        self.body = body
        self.deadline = deadline
        self.started = engine.now
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False
        self.on_activate: Callable[[], None] | None = None
        self._go = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sim:{name}", daemon=True)
        self._timed_out = False

    def _run(self) -> None:
        self._go.wait()
        self._go.clear()
        try:
            self.result = self.body()
        except BaseException as error:  # the engine reports it; nothing escapes the thread
            self.error = error
        finally:
            self.done = True
            self.engine._yielded.set()

    def resume(self) -> None:
        """Let this process run until it sleeps or ends (called by the engine)."""
        if self.on_activate is not None:
            self.on_activate()
        self.engine._current = self
        self.engine._yielded.clear()
        if not self._thread.is_alive() and not self.done:
            self._thread.start()
        self._go.set()
        self.engine._yielded.wait()
        self.engine._current = None
        if self.done and self.parent is None and self.engine.on_process_end is not None:
            self.engine.on_process_end(self)

    def sleep(self, seconds: float) -> None:
        """Called from the process's own thread."""
        engine = self.engine
        wake = engine.now + max(0.0, seconds)
        if self.deadline is not None and wake > self.deadline:
            wake = self.deadline
            self._timed_out = True
        engine.at(wake, self.resume)
        engine._yielded.set()
        self._go.wait()
        self._go.clear()
        if self._timed_out:
            raise FunctionTimedOut(self.name)

    def check_deadline(self) -> None:
        if self.deadline is not None and self.engine.now >= self.deadline:
            self._timed_out = True
            raise FunctionTimedOut(self.name)


class Engine:
    """A discrete-event loop over simulated UTC time (seconds since the epoch)."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise SimulationError("the simulation starts at an aware instant")
        self.start = start.astimezone(UTC)
        self.now = self.start.timestamp()
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._travel: Any = None
        self._traveller: Any = None
        self._current: Process | None = None
        self._yielded = threading.Event()
        self._local = threading.local()
        self.on_process_end: Callable[[Process], None] | None = None
        self._main = threading.current_thread()
        self._clock_lock = threading.Lock()

    # --- clock ---------------------------------------------------------------------------------

    def __enter__(self) -> Engine:
        self._travel = time_machine.travel(self.start, tick=False)
        self._traveller = self._travel.start()
        setattr(time, "sleep", self._sleep)  # noqa: B010 - every caller, wherever it looked it up
        setattr(time, "monotonic", self._monotonic)  # noqa: B010
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep = _REAL_SLEEP
        time.monotonic = _REAL_MONOTONIC
        self._travel.stop()

    def moment(self) -> datetime:
        return datetime.fromtimestamp(self.now, UTC)

    def elapsed_s(self) -> float:
        return self.now - self.start.timestamp()

    def _move(self, t: float) -> None:
        if t < self.now:
            return
        self.now = t
        self._traveller.move_to(datetime.fromtimestamp(t, UTC))

    def advance(self, seconds: float) -> None:
        """Let time pass inside the running process (an AWS call that takes this long)."""
        self._move(self.now + seconds)

    # --- scheduling ----------------------------------------------------------------------------

    def at(self, t: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (t, next(self._seq), action))

    def after(self, seconds: float, action: Callable[[], None]) -> None:
        self.at(self.now + seconds, action)

    def next_at(self) -> float | None:
        """When the next event is due, None when none is."""
        return self._queue[0][0] if self._queue else None

    def current(self) -> Process | None:
        """The process whose turn it is (also seen from its thread pool's threads)."""
        return self._current

    def run_until(self, end: datetime | float) -> None:
        stop = end.timestamp() if isinstance(end, datetime) else end
        while self._queue and self._queue[0][0] <= stop:
            t, _, action = heapq.heappop(self._queue)
            self._move(t)
            action()
        self._move(stop)

    # --- what the code under test calls --------------------------------------------------------

    def _sleep(self, seconds: float) -> None:
        process = self._current
        if process is None:
            _REAL_SLEEP(seconds)
            return
        if threading.current_thread() is process._thread:
            process.sleep(seconds)
            return
        # A thread the running invocation started for itself, outside the simulator's turns
        # (the DynamoDB adapter's pool of writes, whose botocore retries back off): the
        # invocation holds its turn while it waits, so the wait is simulated time passing.
        with self._clock_lock:
            wake = self.now + max(0.0, seconds)
            if process.deadline is not None and wake >= process.deadline:
                self._move(process.deadline)
                raise FunctionTimedOut(process.name)
            self._move(wake)

    def _monotonic(self) -> float:
        return self.now - self.start.timestamp() + 1000.0


class SimFuture(Future[Any]):
    """A future whose ``result(timeout)`` waits in simulated time: the waiting
    invocation sleeps in short steps, so the strands it waits for take their turns."""

    STEP_S = 0.05

    def result(self, timeout: float | None = None) -> Any:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.done():
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                raise FutureTimeoutError()
            time.sleep(self.STEP_S if left is None else min(self.STEP_S, left))
        return super().result(timeout=0)


class SimExecutor:
    """What an invocation's ``ThreadPoolExecutor`` becomes in the simulation: each
    task is a strand of the invocation that submitted it, run in simulated time
    alongside it (Lambda runs a function's threads at once; here they take turns
    at their sleeps, as overlapping invocations do)."""

    def __init__(
        self,
        engine: Engine,
        max_workers: int | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        self.engine = engine
        # As many strands at once as the pool has threads; the rest wait their turn, as
        # a ThreadPoolExecutor's queued tasks do (None: one strand per task).
        self.max_workers = max_workers
        self._count = itertools.count(1)
        self._running = 0
        self._waiting: collections.deque[Process] = collections.deque()
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> SimFuture:
        parent = self.engine.current()
        if parent is None:
            raise SimulationError("a thread pool is used outside an invocation")
        future = SimFuture()

        def body() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as error:  # FunctionTimedOut included: the waiter sees it
                future.set_exception(error)
            finally:
                self._next()

        strand = Process(
            self.engine, f"{parent.name}/{next(self._count)}", body, parent.deadline, parent=parent
        )
        for name in ("function", "record", "out", "container"):
            if hasattr(parent, name):
                setattr(strand, name, getattr(parent, name))
        strand.on_activate = parent.on_activate
        with self._lock:
            if self.max_workers is not None and self._running >= self.max_workers:
                self._waiting.append(strand)
                return future
            self._running += 1
        self.engine.at(self.engine.now, strand.resume)
        return future

    def _next(self) -> None:
        """A strand ended: the next waiting task takes its thread."""
        with self._lock:
            if not self._waiting:
                self._running -= 1
                return
            strand = self._waiting.popleft()
        self.engine.at(self.engine.now, strand.resume)

    def map(self, fn: Callable[..., Any], *iterables: Any, timeout: float | None = None) -> Any:
        futures = [self.submit(fn, *args) for args in zip(*iterables, strict=False)]
        return (future.result(timeout) for future in futures)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass

    def __enter__(self) -> SimExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def aware(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)
