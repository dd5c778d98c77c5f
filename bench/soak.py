"""kill -9 soak of the local stack: several ``duetime local --only tick,worker``
processes on one data directory, killed with SIGKILL and restarted at random,
while schedules fire every second at a receiver in its own process.

    python bench/soak.py                     # 180 s of kills, then 60 s to settle
    python bench/soak.py --duration 60 --processes 3 --schedules 20 --json

The schedules (``every: PT1S``, ``overdue: catch_up_all``, so every slot must
run) are written straight into the SQLite store; they start a few seconds
after the processes and end when the kills stop. The receiver records each
request's Idempotency-Key, slot and arrival time. Then it reports:

- delivered: occurrences the receiver saw at least once;
- same-key redeliveries: extra arrivals with a key already seen (allowed:
  delivery is at-least-once with one key per occurrence);
- different-key duplicates: one slot delivered under two keys (a violation);
- lost: due slots with no record, or recorded but never delivered;
- stuck: runs not finished when the settle period ends;
- lateness p50/p99/max: first arrival minus the slot's instant.

Everything listens on 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from adapters.targets.addresses import AddressPolicy
from handlers.api_models import definition_of

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# --- the receiver (its own process) ---------------------------------------------------------


def serve_receiver(port: int, log_path: Path) -> None:
    log = log_path.open("a", buffering=1)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            line = {
                "key": self.headers.get("Idempotency-Key"),
                "schedule_id": body.get("schedule_id"),
                "scheduled_at": body.get("scheduled_at"),
                "arrived": time.time(),
            }
            with lock:
                log.write(json.dumps(line) + "\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


# --- the soak -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_local(data_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "POWERTOOLS_METRICS_DISABLED": "true", "PYTHONPATH": str(ROOT)}
    out = log.open("ab")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli.main",
            "local",
            "--only",
            "tick,worker",
            "--data-dir",
            str(data_dir),
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ROOT,
    )


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def create_schedules(db: Path, count: int, url: str, start: datetime, end: datetime) -> list[str]:
    from adapters.sqlite.secrets import SqliteSecretStore
    from bootstrap.local import build_sqlite_services
    from bootstrap.settings import Settings

    secrets = SqliteSecretStore(db)  # a webhook is signed: the API stores a secret per schedule
    # The API's use cases as the stack under test builds them, on its data directory.
    service = build_sqlite_services(Settings(), db.parent, secrets=secrets).schedules
    store = service.store
    ids = []
    for i in range(count):
        schedule, _ = service.create(
            definition_of(
                {
                    "name": f"soak {i}",
                    "spec": {
                        "every": "PT1S",
                        "start_at": start.isoformat(),
                        "end_at": end.isoformat(),
                    },
                    "policy": {"overdue": "catch_up_all", "run_timeout": "PT10S"},
                    "target": {"type": "webhook", "url": url},
                },
                AddressPolicy.local(),  # the receiver is on 127.0.0.1, as the local stack allows
            )
        )
        ids.append(schedule.schedule_id)
        secrets.put(schedule.schedule_id)
    secrets.close()
    store.close()
    return ids


def analyse(db: Path, ids: list[str], arrivals: list[dict[str, Any]]) -> dict[str, Any]:
    from adapters.sqlite.store import SqliteStore
    from domain.run import Run, new_occurrence
    from domain.spec import slots_after

    store = SqliteStore.open(db)
    now = datetime.now(UTC)
    by_key: dict[str, list[float]] = defaultdict(list)
    keys_by_slot: dict[tuple[str, str], set[str]] = defaultdict(set)
    for a in arrivals:
        by_key[a["key"]].append(a["arrived"])
        keys_by_slot[(a["schedule_id"], a["scheduled_at"])].add(a["key"])
    slots = unrecorded = undelivered = stuck = 0
    statuses: dict[str, int] = defaultdict(int)
    lateness: list[float] = []
    for sid in ids:
        schedule = store.schedules.get(sid)
        assert schedule is not None
        runs: list[Run] = []
        token = None
        while True:
            page = store.records.runs(sid, 100, token)
            runs += page.items
            token = page.next_token
            if token is None:
                break
        for run in runs:
            statuses[run.status.value] += 1
            if not run.terminal:
                stuck += 1
        version = schedule.current
        start = version.spec.start_at  # type: ignore[union-attr]
        for slot in slots_after(
            version.spec, version.policy.dst, start - timedelta(microseconds=1)
        ):
            slots += 1
            key = new_occurrence(sid, 1, slot, bucket=0, shard=0, materialized_at=now).business_key
            record = store.records.get_by_business_key(key)
            if record is None:
                unrecorded += 1
            elif record.occurrence_id not in by_key:
                undelivered += 1
            else:
                first = min(by_key[record.occurrence_id])
                lateness.append(first - slot.scheduled_at.timestamp())
    store.close()
    return {
        "due_slots": slots,
        "delivered": sum(1 for k in by_key),
        "arrivals": len(arrivals),
        "same_key_redeliveries": sum(len(v) - 1 for v in by_key.values()),
        "different_key_duplicates": sum(1 for v in keys_by_slot.values() if len(v) > 1),
        "lost_unrecorded": unrecorded,
        "lost_undelivered": undelivered,
        "stuck": stuck,
        "statuses": dict(statuses),
        "lateness_s": {
            "p50": percentile(lateness, 0.5),
            "p99": percentile(lateness, 0.99),
            "max": max(lateness) if lateness else None,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of kills (max 1800)")
    parser.add_argument("--settle", type=float, default=60.0, help="seconds without kills after")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--kill-every", type=float, default=6.0, help="mean seconds between kills")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--receiver", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--receiver-log", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.receiver is not None:
        serve_receiver(args.receiver, args.receiver_log)
        return 0
    duration = min(max(args.duration, 5.0), 1800.0)
    rng = random.Random(args.seed)

    work = Path(tempfile.mkdtemp(prefix="duetime-soak-"))
    data_dir = work / "data"
    data_dir.mkdir()
    db = data_dir / "duetime.db"
    arrivals_log = work / "arrivals.jsonl"
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, __file__, "--receiver", str(port), "--receiver-log", str(arrivals_log)],
        cwd=ROOT,
    )
    processes: list[subprocess.Popen[bytes] | None] = []
    kills = restarts = 0
    try:
        warmup = 5.0
        begin = datetime.now(UTC) + timedelta(seconds=warmup)
        ids = create_schedules(
            db,
            args.schedules,
            f"http://127.0.0.1:{port}/hook",
            begin,
            begin + timedelta(seconds=duration),
        )
        logs = [work / f"local-{i}.log" for i in range(args.processes)]
        processes = [start_local(data_dir, logs[i]) for i in range(args.processes)]
        stop_at = time.monotonic() + warmup + duration
        down: dict[int, float] = {}  # process index -> when it comes back
        while time.monotonic() < stop_at:
            time.sleep(0.1)
            now = time.monotonic()
            for i, back_at in list(down.items()):
                if now >= back_at:
                    processes[i] = start_local(data_dir, logs[i])
                    restarts += 1
                    del down[i]
            if rng.random() < 0.1 / args.kill_every:
                alive = [i for i, p in enumerate(processes) if i not in down and p is not None]
                if alive:
                    i = rng.choice(alive)
                    victim = processes[i]
                    assert victim is not None
                    victim.send_signal(signal.SIGKILL)
                    victim.wait()
                    kills += 1
                    down[i] = now + rng.uniform(0.0, 3.0)
        for i in list(down):
            processes[i] = start_local(data_dir, logs[i])
            restarts += 1
        time.sleep(args.settle)
    finally:
        for process in processes:
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            if process is not None:
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
        receiver.send_signal(signal.SIGTERM)
        try:
            receiver.wait(timeout=10)
        except subprocess.TimeoutExpired:
            receiver.kill()

    arrivals = [json.loads(line) for line in arrivals_log.read_text().splitlines() if line]
    report = {
        "duration_s": duration,
        "settle_s": args.settle,
        "processes": args.processes,
        "schedules": args.schedules,
        "kills": kills,
        "restarts": restarts,
        **analyse(db, ids, arrivals),
    }
    if args.keep:
        report["data_dir"] = str(data_dir)
    else:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        late = report["lateness_s"]

        def fmt(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f} s"

        rows = [
            ("kill -9 / restarts", f"{kills} / {restarts}"),
            ("due slots", report["due_slots"]),
            ("delivered (distinct keys)", report["delivered"]),
            ("same-key redeliveries", report["same_key_redeliveries"]),
            ("different-key duplicates", report["different_key_duplicates"]),
            ("lost: no record", report["lost_unrecorded"]),
            ("lost: never delivered", report["lost_undelivered"]),
            ("stuck (not finished)", report["stuck"]),
            (
                "lateness p50 / p99 / max",
                f"{fmt(late['p50'])} / {fmt(late['p99'])} / {fmt(late['max'])}",
            ),
            ("run statuses", report["statuses"]),
        ]
        for name, value in rows:
            print(f"{name:<28} {value}")
    violated = report["different_key_duplicates"] or report["lost_unrecorded"]
    return 1 if violated else 0


if __name__ == "__main__":
    raise SystemExit(main())
