"""Burst delivery on one machine: N cron schedules due in the same minute,
delivered as webhooks to a local receiver by the real tick and worker pool.

Per round:

1. a fresh SQLite data directory gets N schedules (``0 9 * * *`` in UTC, one
   webhook secret each), written in bulk through the store, not one API call
   each;
2. a receiver starts in a process of its own: a small HTTP/1.1 server (one
   thread, ``selectors``) with keep-alive that answers 200 and records the
   arrival time and the ``Idempotency-Key`` of every request;
3. the tick loop (one pass a second, the local stack's settings) and the
   worker pool (``--workers`` threads) run in this process, as
   ``duetime local --only tick,worker`` runs them, until every run succeeded.

The clock of the tick and the workers is the system clock shifted so that the
schedules' 09:00 comes three seconds after the start (rather than waiting for
a real minute boundary); every figure is a difference of instants on that one
clock, and the receiver's arrival times are shifted the same way.

Reported, per size and worker count (medians over rounds): lateness of the
first attempt's start (``started_at - scheduled_at``, from the run records)
and of the arrival at the receiver (arrival - ``scheduled_at``), p50 / p99 /
max, and deliveries a second (N over the time from 09:00 to the last arrival).

    .venv/bin/python bench/burst.py      # 1,000 and 10,000; 1, 4, 8, 16 workers; 3 rounds
    .venv/bin/python bench/burst.py --sizes 2000 --workers 8 --rounds 1
    .venv/bin/python bench/burst.py --sizes 2000 --workers 8 --profile   # where the time goes
    .venv/bin/python bench/burst.py --sizes 10000 --workers 8 --thread-cpu   # CPU by thread
    .venv/bin/python bench/burst.py --parts 2000   # CPU per call of each part of a run
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import selectors
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "duetime")

LEAD_S = 3.0  # the burst is due this long after the tick and workers start


# --- the receiver (its own process) --------------------------------------------------------


def _requests(buffer: bytearray, records: list[tuple[float, str]]) -> int:
    """Take every complete request off the front of ``buffer`` (HTTP/1.1,
    ``Content-Length`` bodies), record its arrival; how many there were."""
    count = 0
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return count
        length, key = 0, ""
        for line in bytes(buffer[:end]).split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"idempotency-key":
                key = value.strip().decode("latin-1")
        if len(buffer) < end + 4 + length:
            return count
        del buffer[: end + 4 + length]
        records.append((time.time(), key))
        count += 1


_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def receiver_main(port_file: str, out_file: str) -> None:
    """An HTTP/1.1 server on one thread and ``selectors``: keep-alive,
    ``Content-Length`` bodies, 200 to every request, arrival time and
    ``Idempotency-Key`` recorded. Lean on purpose: it shares the two cores
    with what is measured (its CPU per request is reported)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    records: list[tuple[float, str]] = []
    selector = selectors.DefaultSelector()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(1024)
    selector.register(server, selectors.EVENT_READ, None)
    started_cpu = time.process_time()
    Path(port_file).write_text(str(server.getsockname()[1]))
    while not stop.is_set():
        for key, _ in selector.select(0.2):
            if key.data is None:
                connection, _ = server.accept()
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                selector.register(connection, selectors.EVENT_READ, bytearray())
                continue
            connection = key.fileobj  # type: ignore[assignment]
            try:
                data = connection.recv(65536)
            except OSError:
                data = b""
            if not data:
                selector.unregister(connection)
                connection.close()
                continue
            key.data.extend(data)
            answered = _requests(key.data, records)
            if answered:
                connection.sendall(_ANSWER * answered)
    Path(out_file).write_text(
        json.dumps({"cpu_s": time.process_time() - started_cpu, "records": records})
    )


def start_receiver(workdir: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    port_file, out_file = workdir / "port", workdir / "arrivals.json"
    process = subprocess.Popen(
        [sys.executable, __file__, "--receiver", str(port_file), str(out_file)]
    )
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline:
            raise RuntimeError("the receiver did not start")
        time.sleep(0.02)
    return process, int(port_file.read_text()), out_file


# --- more worker processes (as ``duetime local --only worker`` beside the first) -----------


def worker_process_main(db: str, offset_s: float, workers: int, cpu_file: str) -> None:
    from adapters.sqlite.secrets import SqliteSecretStore
    from bootstrap.local import build_sqlite_worker
    from cli.worker_pool import SQLITE_RECEIVE_BATCH, run_worker_loop

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the attempt lines, as redirected
    clock = ShiftedClock(timedelta(seconds=offset_s))
    worker, queue = build_sqlite_worker(db, SqliteSecretStore(db), clock=clock)
    run_worker_loop(
        worker,
        queue,
        stop=stop,
        workers=workers,
        wait_s=0.5,
        max_messages=SQLITE_RECEIVE_BATCH,
    )
    Path(cpu_file).write_text(str(time.process_time()))


def start_worker_process(
    db: Path, offset: timedelta, workers: int, cpu_file: Path
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--worker-process",
            str(db),
            str(offset.total_seconds()),
            str(workers),
            str(cpu_file),
        ]
    )


# --- seeding -------------------------------------------------------------------------------


def seed(path: Path, n: int, url: str, due: datetime) -> None:
    """N schedules due at ``due`` (a 09:00 UTC), each with its signing secret, in bulk."""
    from adapters.secrets import new_secret
    from adapters.sqlite.schedules import _SCHEDULE_COLUMNS, SqliteSchedules
    from adapters.sqlite.secrets import SqliteSecretStore
    from adapters.sqlite.store import SqliteStore
    from domain.schedule import Schedule, ScheduleState, ScheduleVersion, parse_policy
    from domain.spec import next_slot, parse_spec
    from domain.targets import parse_target

    store = SqliteStore.open(path)
    secrets = SqliteSecretStore(path)
    created = due - timedelta(days=1)
    target = parse_target({"type": "webhook", "url": url})
    policy = parse_policy({})
    spec = parse_spec({"cron": "0 9 * * *", "time_zone": "UTC"}, created_at=created)
    slot = next_slot(spec, policy.dst, created)
    assert slot is not None and slot.scheduled_at == due, slot
    rows, versions = [], []
    for i in range(n):
        sid = f"sch_burst{i:08d}"
        version = ScheduleVersion(sid, 1, f"burst {i}", spec, policy, target, {"i": i}, created)
        rows.append(
            SqliteSchedules._schedule_row(
                Schedule(sid, 1, ScheduleState(), version, due, None, created, created)
            )
        )
        versions.append(version)
    with store.records._write() as db:
        marks = ",".join("?" * len(rows[0]))
        db.executemany(f"INSERT INTO schedules ({_SCHEDULE_COLUMNS}) VALUES ({marks})", rows)
        for version in versions:
            SqliteSchedules._insert_version(db, version)
    with secrets._write() as db:
        db.executemany(
            "INSERT INTO webhook_secrets (schedule_id, secret) VALUES (?, ?)",
            [(f"sch_burst{i:08d}", new_secret()) for i in range(n)],
        )
    secrets.close()
    store.close()


# --- a profile of every thread (py-spy is not at hand) ---------------------------------------


class ThreadProfiles:
    """cProfile in every thread started while it is on; ``print`` merges them.

    Times are CPU-bound Python time per function (``tottime``), summed over the
    threads, so waiting on a lock or a socket shows as the call that waited."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self._original = threading.Thread.run

    def __enter__(self) -> ThreadProfiles:
        profiles, original = self.profiles, self._original

        def run(thread: threading.Thread) -> None:
            profile = cProfile.Profile(time.thread_time)
            profiles.append(profile)
            profile.enable()
            try:
                original(thread)
            finally:
                profile.disable()

        threading.Thread.run = run  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        threading.Thread.run = self._original  # type: ignore[method-assign]

    def print(self, top: int = 45) -> None:
        stats = pstats.Stats(self.profiles[0], stream=sys.stderr)
        for profile in self.profiles[1:]:
            stats.add(profile)
        stats.sort_stats("tottime").print_stats(top)
        if os.environ.get("BURST_PROFILE_OUT"):
            stats.dump_stats(os.environ["BURST_PROFILE_OUT"])


class ThreadCpu:
    """The CPU time of every thread started while it is on, by thread name
    (worker threads together), without a profiler's cost."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._original = threading.Thread.run
        self._lock = threading.Lock()

    def __enter__(self) -> ThreadCpu:
        seconds, original, lock = self.seconds, self._original, self._lock

        def run(thread: threading.Thread) -> None:
            try:
                original(thread)
            finally:
                name = thread.name
                if name.startswith("duetime-worker-"):
                    name = "duetime-worker-*"
                with lock:
                    seconds[name] = seconds.get(name, 0.0) + time.thread_time()

        threading.Thread.run = run  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        threading.Thread.run = self._original  # type: ignore[method-assign]

    def print(self, n: int, process_s: float) -> None:
        print(f"CPU ms a run by thread (this process, {n:,} runs)", file=sys.stderr)
        for name, spent in sorted(self.seconds.items(), key=lambda item: -item[1]):
            print(f"  {name}: {1000 * spent / n:.3f}", file=sys.stderr)
        rest = process_s - sum(self.seconds.values())
        print(f"  the rest (main thread, interpreter): {1000 * rest / n:.3f}", file=sys.stderr)


# --- one round -----------------------------------------------------------------------------


class ShiftedClock:
    """The system clock plus a fixed offset."""

    def __init__(self, offset: timedelta) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def one_round(
    n: int, workers: int, *, processes: int = 1, profile: bool = False, thread_cpu: bool = False
) -> dict[str, float]:
    from adapters.sqlite.queue import SqliteQueue
    from adapters.sqlite.secrets import SqliteSecretStore
    from adapters.sqlite.tables import from_us
    from bootstrap.local import build_sqlite_ticker, build_sqlite_worker
    from bootstrap.settings import Settings
    from cli.worker_pool import SQLITE_RECEIVE_BATCH, run_worker_loop

    with tempfile.TemporaryDirectory(prefix="duetime-burst-") as tmp:
        workdir = Path(tmp)
        db = workdir / "duetime.db"
        receiver, port, arrivals_file = start_receiver(workdir)
        try:
            due = datetime(2026, 12, 1, 9, tzinfo=UTC)
            seed(db, n, f"http://127.0.0.1:{port}/hook", due)
            clock = ShiftedClock(due - timedelta(seconds=LEAD_S) - datetime.now(UTC))
            settings = Settings().model_copy(
                update={"allow_private_targets": True, "tick_budget_s": 0, "lease_ttl_s": 5.0}
            )
            queue = SqliteQueue(db, clock=clock)
            ticker = build_sqlite_ticker(db, queue, settings, clock=clock)
            secrets = SqliteSecretStore(db)
            worker, work_queue = build_sqlite_worker(db, secrets, clock=clock)
            stop = threading.Event()

            def tick_loop() -> None:
                while not stop.is_set():
                    ticker.tick_once()
                    stop.wait(1.0)

            threads = [
                threading.Thread(target=tick_loop, daemon=True),
                threading.Thread(
                    target=run_worker_loop,
                    args=(worker, work_queue),
                    kwargs={
                        "stop": stop,
                        "workers": workers,
                        "wait_s": 0.5,
                        "max_messages": SQLITE_RECEIVE_BATCH,
                    },
                    daemon=True,
                ),
            ]
            # The workers' log lines (one per attempt) go to a file, as they
            # would from a local stack whose output is redirected.
            log_file = (workdir / "worker.log").open("w")
            real_stdout, sys.stdout = sys.stdout, log_file
            extra = [
                start_worker_process(db, clock.offset, workers, workdir / f"cpu-{k}")
                for k in range(processes - 1)
            ]
            profiles = ThreadProfiles() if profile else None
            if profiles is not None:
                profiles.__enter__()
            by_thread = ThreadCpu() if thread_cpu else None
            if by_thread is not None:
                by_thread.__enter__()
            cpu_before = time.process_time()
            for thread in threads:
                thread.start()
            check = sqlite3.connect(db)
            deadline = time.monotonic() + LEAD_S + 60 + n / 50
            while True:
                done = check.execute(
                    "SELECT COUNT(*) FROM occurrences WHERE status = 'succeeded'"
                ).fetchone()[0]
                if done >= n:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {done} of {n} runs succeeded in time")
                time.sleep(0.25)
            cpu_s = time.process_time() - cpu_before
            stop.set()
            for thread in threads:
                thread.join(30)
            for k, process in enumerate(extra):
                process.send_signal(signal.SIGTERM)
                process.wait(60)
                cpu_s += float((workdir / f"cpu-{k}").read_text())
            sys.stdout = real_stdout
            log_file.close()
            if profiles is not None:
                profiles.__exit__()
                profiles.print()
            if by_thread is not None:
                by_thread.__exit__()
                by_thread.print(n, time.process_time() - cpu_before)
            rows = check.execute(
                "SELECT occurrence_id, scheduled_at, started_at FROM occurrences"
            ).fetchall()
            check.close()
            ticker.dispatcher.release_all()
        finally:
            receiver.send_signal(signal.SIGTERM)
            receiver.wait(30)
        received = json.loads(arrivals_file.read_text())
        arrivals = received["records"]

    scheduled = {occ: from_us(at) for occ, at, _ in rows}
    start_late = [(from_us(started) - from_us(at)).total_seconds() for _, at, started in rows]
    offset = clock.offset
    first_arrival: dict[str, float] = {}
    for at, key in arrivals:
        first_arrival.setdefault(key, at)
    arrive_late = [
        (datetime.fromtimestamp(at, UTC) + offset - scheduled[key]).total_seconds()
        for key, at in first_arrival.items()
    ]
    assert len(start_late) == n and len(arrive_late) == n, (len(start_late), len(arrive_late))
    last = max(arrive_late)
    return {
        "start_p50": percentile(start_late, 50),
        "start_p99": percentile(start_late, 99),
        "start_max": max(start_late),
        "arrive_p50": percentile(arrive_late, 50),
        "arrive_p99": percentile(arrive_late, 99),
        "arrive_max": last,
        "per_s": n / last if last > 0 else float("inf"),
        "duplicates": len(arrivals) - len(first_arrival),
        "cpu_ms": 1000 * cpu_s / n,
        "receiver_cpu_ms": 1000 * received["cpu_s"] / n,
    }


def parts(n: int) -> None:
    """CPU time per call of each part of a run, one thread, ``n`` runs each:
    the run store's reads and transitions, a whole message handled with a
    target that answers at once, and a webhook delivered to the receiver."""
    from adapters.sqlite.queue import SqliteQueue
    from adapters.sqlite.runs import SqliteRunStore
    from adapters.sqlite.secrets import SqliteSecretStore
    from adapters.targets import AddressPolicy, WebhookSender
    from bootstrap.local import build_sqlite_ticker, build_sqlite_worker
    from bootstrap.settings import Settings
    from domain.delivery import Delivery, Outcome
    from domain.run import RunStatus
    from domain.targets import WebhookTarget
    from handlers.intents import handle_message

    class AtOnce:
        def deliver(self, target: Any, delivery: Any, *, timeout_s: float) -> Outcome:
            return Outcome.succeeded(200, b"{}")

    def cpu_us(call: Any, count: int = n) -> float:
        before = time.process_time()
        call()
        return 1e6 * (time.process_time() - before) / count

    due = datetime(2026, 12, 1, 9, tzinfo=UTC)
    clock = ShiftedClock(due + timedelta(seconds=1) - datetime.now(UTC))
    settings = Settings().model_copy(
        update={"allow_private_targets": True, "tick_budget_s": 0, "lease_ttl_s": 5.0}
    )
    ids = [f"sch_burst{i:08d}" for i in range(n)]
    occurrences = [f"{sid}.v1.20261201T090000Z" for sid in ids]
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="duetime-parts-") as tmp:
        workdir = Path(tmp)
        receiver, port, _ = start_receiver(workdir)
        real_stdout, sys.stdout = sys.stdout, (workdir / "worker.log").open("w")
        try:
            url = f"http://127.0.0.1:{port}/hook"
            for name in ("a", "b"):
                db = workdir / f"{name}.db"
                seed(db, n, url, due)
                queue = SqliteQueue(db, clock=clock)
                ticker = build_sqlite_ticker(db, queue, settings, clock=clock)
                results["tick: admit and enqueue"] = cpu_us(
                    lambda t=ticker, q=queue: [t.tick_once() for _ in range(100) if q.depth() < n]
                )
            runs = SqliteRunStore.open(str(workdir / "a.db"))
            now = clock.now()
            results["run store: get_run"] = cpu_us(lambda: [runs.get_run(o) for o in occurrences])
            results["run store: get_version"] = cpu_us(
                lambda: [runs.get_version(sid, 1) for sid in ids]
            )
            results["run store: start_attempt"] = cpu_us(
                lambda: [
                    runs.start_attempt(
                        o, now=now, lease_until=now + timedelta(seconds=15), run_token_hash="h"
                    )
                    for o in occurrences
                ]
            )
            results["run store: finish"] = cpu_us(
                lambda: [
                    runs.finish(o, attempt=1, status=RunStatus.SUCCEEDED, now=now)
                    for o in occurrences
                ]
            )
            # As the worker writes: from the run it read (transition and
            # compare-and-set, no read first), in a third store.
            db = workdir / "c.db"
            seed(db, n, url, due)
            queue = SqliteQueue(db, clock=clock)
            ticker = build_sqlite_ticker(db, queue, settings, clock=clock)
            for _ in range(100):
                if queue.depth() >= n:
                    break
                ticker.tick_once()
            read_runs = SqliteRunStore.open(str(db))
            seen = [read_runs.get_run(o) for o in occurrences]
            held: list[Any] = []
            results["run store: start_attempt from the run read"] = cpu_us(
                lambda: [
                    held.append(
                        read_runs.start_attempt(
                            o,
                            now=now,
                            lease_until=now + timedelta(seconds=15),
                            run_token_hash="h",
                            seen=r,
                        )
                    )
                    for o, r in zip(occurrences, seen, strict=True)
                ]
            )
            results["run store: finish from the run read"] = cpu_us(
                lambda: [
                    read_runs.finish(o, attempt=1, status=RunStatus.SUCCEEDED, now=now, seen=r)
                    for o, r in zip(occurrences, held, strict=True)
                ]
            )
            db = workdir / "b.db"
            secrets = SqliteSecretStore(db)
            worker, work_queue = build_sqlite_worker(db, secrets, clock=clock, targets=AtOnce())
            messages: list[Any] = []
            results["queue: receive (10 at a time)"] = cpu_us(
                lambda: [messages.extend(work_queue.receive(10, 0)) for _ in range(n // 10)]
            )
            results["a message handled, target answering at once"] = cpu_us(
                lambda: [handle_message(worker, work_queue, m) for m in messages]
            )
            results["queue: delete (50 at a time)"] = cpu_us(
                lambda: [
                    work_queue.delete_batch([m.receipt for m in messages[i : i + 50]])
                    for i in range(0, n, 50)
                ]
            )
            sender = WebhookSender(secrets, AddressPolicy.local())
            target = WebhookTarget(url)
            deliveries = [
                Delivery(o, sid, 1, due, 1, 0.0, {"i": i})
                for i, (o, sid) in enumerate(zip(occurrences, ids, strict=True))
            ]
            results["webhook: one delivery (kept-alive connection)"] = cpu_us(
                lambda: [sender.deliver(target, d, timeout_s=10) for d in deliveries]
            )
        finally:
            sys.stdout.close()
            sys.stdout = real_stdout
            receiver.send_signal(signal.SIGTERM)
            receiver.wait(30)
    print(f"CPU microseconds per call, one thread, {n:,} calls each")
    print()
    print("| part | CPU us |")
    print("| --- | ---: |")
    for name, value in results.items():
        print(f"| {name} | {value:.0f} |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--processes",
        type=int,
        nargs="+",
        default=[1],
        help="worker processes on the one file (the first also ticks)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="profile every thread, print the hottest functions"
    )
    parser.add_argument(
        "--thread-cpu", action="store_true", help="print the CPU time of each thread (this process)"
    )
    parser.add_argument(
        "--parts", type=int, metavar="N", help="only time each part of a run, N calls each"
    )
    args = parser.parse_args(argv)
    if args.parts:
        parts(args.parts)
        return

    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; medians of {args.rounds} "
        "round(s); lateness in seconds after the scheduled 09:00"
    )
    print()
    print(
        "| schedules | workers | start p50 | start p99 | start max "
        "| arrival p50 | arrival p99 | arrival max | deliveries/s | CPU ms/run "
        "| receiver CPU ms/run | load |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in args.sizes:
        for processes in args.processes:
            for workers in args.workers:
                row(n, workers, processes, args.rounds, args.profile, args.thread_cpu)


def row(
    n: int, workers: int, processes: int, rounds: int, profile: bool, thread_cpu: bool = False
) -> None:
    load_before = os.getloadavg()[0]
    results = [
        one_round(n, workers, processes=processes, profile=profile, thread_cpu=thread_cpu)
        for _ in range(rounds)
    ]
    load_after = os.getloadavg()[0]

    def med(name: str) -> float:
        return statistics.median(r[name] for r in results)

    print(
        f"| {n:,} | {workers_text(workers, processes)} | {med('start_p50'):.2f} "
        f"| {med('start_p99'):.2f} | {med('start_max'):.2f} | {med('arrive_p50'):.2f} "
        f"| {med('arrive_p99'):.2f} | {med('arrive_max'):.2f} | {med('per_s'):,.0f} "
        f"| {med('cpu_ms'):.2f} | {med('receiver_cpu_ms'):.3f} "
        f"| {load_before:.1f}-{load_after:.1f} |",
        flush=True,
    )


def workers_text(workers: int, processes: int) -> str:
    return str(workers) if processes == 1 else f"{processes} x {workers}"


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--receiver":
        receiver_main(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 6 and sys.argv[1] == "--worker-process":
        worker_process_main(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        main()
