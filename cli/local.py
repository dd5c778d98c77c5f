"""`duetime local`: the whole scheduler on one machine, over SQLite, on 127.0.0.1.

One process runs the HTTP API (each request turned into an API Gateway event
for the same handler the Lambda runs), the tick loop, the worker loop and the
watchdog loop, over the SQLite store in ``--data-dir``. Stopping and starting
it loses nothing. ``--only`` runs a subset, so several processes can share one
data directory: kill -9 the tick/worker process, start it again (or two at
once), and nothing is duplicated or lost.

``--store emulator`` runs the API, tick, worker and watchdog over moto in
server mode with the DynamoDB, SQS and Secrets Manager adapters, to try the
AWS code paths locally.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PARTS = ("api", "tick", "worker", "watchdog")
SQLITE_FILE = "duetime.db"
HOST = "127.0.0.1"


def parse_interval(text: str) -> float:
    """``500ms``, ``1s``, ``2m``, ``1h`` or a plain number of seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an interval such as 1s, 500ms or 2m")
    value = float(match[1]) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match[2]]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the interval must be positive")
    return value


def parse_parts(text: str) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise argparse.ArgumentTypeError(
            f"--only takes a comma list of {', '.join(PARTS)} (got {text!r})"
        )
    return parts


MAX_WORKERS = 256


def parse_workers(text: str) -> int:
    """``--workers``: a whole number of delivery worker threads, 1 to 256."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"--workers takes a whole number from 1 to {MAX_WORKERS} (got {text!r})"
        )
    return count


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "local",
        help="run duetime on this machine (API, tick, worker, watchdog over SQLite)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=8080, help="API port on 127.0.0.1")
    parser.add_argument("--data-dir", type=Path, default=Path(".duetime"))
    parser.add_argument("--only", type=parse_parts, default=PARTS, help="api,tick,worker,watchdog")
    parser.add_argument("--tick-interval", type=parse_interval, default=1.0)
    parser.add_argument("--watchdog-interval", type=parse_interval, default=60.0)
    parser.add_argument(
        "--echo-port",
        type=int,
        default=None,
        help="a webhook receiver on 127.0.0.1 that logs what it gets (default: API port + 1; "
        "0 turns it off)",
    )
    parser.add_argument("--store", choices=("sqlite", "emulator"), default="sqlite")
    parser.add_argument("--emulator-port", type=int, default=4566)
    parser.add_argument(
        "--workers",
        type=parse_workers,
        default=8,
        metavar="N",
        help="delivery worker threads (1-256, default 8): a slow target holds one of them",
    )
    parser.add_argument(
        "--metrics", action="store_true", help="also print the CloudWatch EMF metric lines"
    )
    parser.set_defaults(run=run)


def log(event: str, **fields: Any) -> None:
    """One structured line on stderr: the local stack's own events."""
    line = {"at": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event, **fields}
    print(json.dumps(line, default=str), file=sys.stderr, flush=True)


class EchoReceiver(ThreadingHTTPServer):
    """A webhook receiver for trying duetime out: logs each delivery, answers 200."""

    daemon_threads = True

    def __init__(self, port: int) -> None:
        super().__init__((HOST, port), _EchoHandler)


class _EchoHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        try:
            data = json.loads(body)
        except ValueError:
            data = {}
        log(
            "webhook received",
            path=self.path,
            idempotency_key=self.headers.get("Idempotency-Key"),
            attempt=data.get("attempt"),
            scheduled_at=data.get("scheduled_at"),
            late_by_s=data.get("late_by_s"),
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok": true}')

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LocalStack:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.parts: tuple[str, ...] = args.only
        self.data_dir: Path = args.data_dir
        self.db_path = self.data_dir / SQLITE_FILE
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.servers: list[ThreadingHTTPServer] = []
        self.closers: list[Callable[[], None]] = []
        self.api_url: str | None = None
        self.echo_url: str | None = None
        self.emulator: Any = None

    # --- composition ----------------------------------------------------------------

    def _settings(self) -> Any:
        from handlers.settings import Settings

        # A dead tick process's shards are free again after the lease TTL: a
        # few tick intervals here, so a kill -9 and restart resumes quickly.
        lease_ttl_s = max(5.0, 5 * self.args.tick_interval)
        # Over the emulator, table names and queue URLs come from the
        # environment the emulator set up, as they do on Lambda.
        base = Settings.from_env() if self.args.store == "emulator" else Settings()
        return base.model_copy(
            update={"allow_private_targets": True, "tick_budget_s": 0, "lease_ttl_s": lease_ttl_s}
        )

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.args.store == "emulator":
            self._start_emulator()
        if "api" in self.parts:
            self._start_api()
            echo_port = self.args.echo_port
            if echo_port is None:
                echo_port = self.args.port + 1 if self.args.port else 0
            if echo_port or self.args.echo_port is None:
                self._start_echo(echo_port)
        if "tick" in self.parts:
            self._spawn("tick", self._tick_loop())
        if "worker" in self.parts:
            self._spawn("worker", self._worker_loop())
        if "watchdog" in self.parts:
            self._spawn("watchdog", self._watchdog_loop())

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                target()
            except BaseException as error:  # a loop that dies stops the stack, loudly
                log("loop failed", part=name, error=repr(error))
                self.stop.set()
                raise

        thread = threading.Thread(target=guarded, name=f"duetime-{name}", daemon=True)
        thread.start()
        self.threads.append(thread)

    def _secrets(self) -> Any:
        from adapters.sqlite.secrets import SqliteSecretStore

        store = SqliteSecretStore(self.db_path)
        self.closers.append(store.close)
        return store

    def _start_api(self) -> None:
        from handlers import api
        from handlers.local_http import ApiServer

        if self.args.store == "emulator":
            # Webhook signing secrets in Secrets Manager on the emulator, where
            # the worker reads them, as on AWS.
            services = api.build_services(self._settings())
        else:
            services = api.build_services(
                self._settings(), data_dir=self.data_dir, secrets=self._secrets()
            )

        def call(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return api.handler(event, context, service=services)

        server = ApiServer(call, HOST, self.args.port)
        self.servers.append(server)
        self.api_url = server.url
        self._spawn("api", server.serve_forever)

    def _start_echo(self, port: int) -> None:
        try:
            server = EchoReceiver(port)
        except OSError as error:
            log("echo receiver not started", port=port, error=str(error))
            return
        self.servers.append(server)
        host, bound = server.server_address[:2]
        self.echo_url = f"http://{host!s}:{bound}/hook"
        self._spawn("echo", server.serve_forever)

    def _tick_loop(self) -> Callable[[], None]:
        from handlers.tick import build_aws_ticker, build_sqlite_ticker

        if self.args.store == "emulator":
            ticker = build_aws_ticker(self._settings())
        else:
            from adapters.sqlite.queue import SqliteQueue

            queue = SqliteQueue(self.db_path)
            self.closers.append(queue.close)
            ticker = build_sqlite_ticker(self.db_path, queue, self._settings())
        interval = self.args.tick_interval

        def loop() -> None:
            log("tick started", owner=ticker.owner, interval_s=interval)
            while not self.stop.is_set():
                report = ticker.tick_once()
                plan, dispatch = report.plan, report.dispatch
                if plan.materialized or dispatch.admitted or dispatch.skipped or dispatch.expired:
                    log(
                        "tick",
                        materialized=plan.materialized,
                        admitted=dispatch.admitted,
                        skipped=plan.skipped + dispatch.skipped,
                        expired=plan.expired + dispatch.expired,
                        sent=dispatch.sent,
                        max_lag_s=dispatch.max_lag_s,
                    )
                self.stop.wait(interval)
            ticker.dispatcher.release_all()

        return loop

    def _worker_loop(self) -> Callable[[], None]:
        from adapters.sqlite.queue import HELD_VISIBILITY_S
        from handlers.worker import build_aws_worker, build_sqlite_worker, run_worker_loop

        if self.args.store == "emulator":
            from adapters.targets import AddressPolicy

            # The DynamoDB run store and the SQS queue, as on Lambda; webhooks
            # may call 127.0.0.1 here, as in the SQLite local stack. Messages
            # and run leases are held briefly and extended by the pool's
            # heartbeat, as over SQLite.
            worker, queue = build_aws_worker(
                self._settings(),
                address_policy=AddressPolicy.local(),
                held_visibility_s=HELD_VISIBILITY_S,
            )
            wait_s = 1.0  # an SQS long poll of a second between empty receives
        else:
            worker, queue = build_sqlite_worker(self.db_path, self._secrets())
            wait_s = 0.5
        workers = self.args.workers

        def loop() -> None:
            log("worker started", workers=workers)
            run_worker_loop(worker, queue, stop=self.stop, wait_s=wait_s, workers=workers)

        return loop

    def _watchdog_loop(self) -> Callable[[], None]:
        from handlers.watchdog import build_aws_store, run_watchdog
        from service.clock import SystemClock
        from service.watchdog import Watchdog

        if self.args.store == "emulator":
            store = build_aws_store(self._settings())
        else:
            from adapters.sqlite.store import SqliteStore

            store = SqliteStore(self.db_path)
            self.closers.append(store.close)
        watchdog = Watchdog(store, SystemClock())
        interval = self.args.watchdog_interval

        def loop() -> None:
            while not self.stop.wait(min(5.0, interval)):
                run_watchdog(watchdog)
                self.stop.wait(max(0.0, interval - 5.0))

        return loop

    def _start_emulator(self) -> None:
        import boto3
        from moto.server import ThreadedMotoServer

        from adapters import definitions as d

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        server = ThreadedMotoServer(ip_address=HOST, port=self.args.emulator_port, verbose=False)
        server.start()
        self.emulator = server
        endpoint = f"http://{HOST}:{self.args.emulator_port}"
        os.environ.update(
            {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
            }
        )
        names = {t.logical_id: f"duetime-local-{t.logical_id.lower()}" for t in d.TABLES}
        dynamodb = boto3.client("dynamodb", endpoint_url=endpoint)
        existing = set(dynamodb.list_tables()["TableNames"])
        if not set(names.values()) <= existing:
            d.create_tables(dynamodb, names)
        for table in d.TABLES:
            os.environ[table.env_var] = names[table.logical_id]
        urls = d.create_queues(boto3.client("sqs", endpoint_url=endpoint), "duetime-local")
        os.environ.update(urls)
        log("emulator started", endpoint=endpoint)

    # --- running -------------------------------------------------------------------

    def banner(self) -> str:
        lines = ["duetime local stack"]
        store = (
            f"moto server at http://{HOST}:{self.args.emulator_port} (DynamoDB + SQS adapters)"
            if self.args.store == "emulator"
            else f"{self.db_path} (SQLite)"
        )
        lines.append(f"  store:    {store}")
        running = []
        for part in self.parts:
            if part == "tick":
                running.append(f"tick (every {self.args.tick_interval:g}s)")
            elif part == "watchdog":
                running.append(f"watchdog (every {self.args.watchdog_interval:g}s)")
            else:
                running.append(part)
        lines.append(f"  running:  {', '.join(running)}")
        if self.api_url:
            lines.append(f"  api:      {self.api_url}  (OpenAPI at {self.api_url}/openapi.json)")
        if self.echo_url:
            lines.append(f"  receiver: {self.echo_url}  (logs each webhook it gets)")
        if self.api_url:
            target = self.echo_url or "http://127.0.0.1:9000/hook"
            body = json.dumps(
                {
                    "name": "hello",
                    "spec": {"every": "PT10S"},
                    "target": {"type": "webhook", "url": target},
                    "payload": {"hello": "world"},
                }
            )
            lines += [
                "",
                "Create a first schedule:",
                f"  curl -s -X POST {self.api_url}/schedules \\",
                "    -H 'Content-Type: application/json' \\",
                f"    -d '{body}'",
                "Then watch its runs:",
                f"  .venv/bin/duetime runs list <id> --api-url {self.api_url}",
                "",
                "Ctrl-C stops; starting again with the same --data-dir loses nothing.",
            ]
        return "\n".join(lines)

    def shutdown(self) -> None:
        self.stop.set()
        for server in self.servers:
            server.shutdown()
            server.server_close()
        for thread in self.threads:
            thread.join(timeout=10)
        for close in self.closers:
            try:
                close()
            except Exception as error:  # closing is best effort on the way out
                log("close failed", error=repr(error))
        if self.emulator is not None:
            self.emulator.stop()


def run(args: argparse.Namespace) -> int:
    if not args.metrics:
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "duetime")
    stack = LocalStack(args)

    def on_signal(signum: int, frame: Any) -> None:
        stack.stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        stack.start()
        print(stack.banner(), flush=True)
        while not stack.stop.wait(0.5):
            pass
    finally:
        log("stopping")
        stack.shutdown()
        log("stopped")
    return 0
