"""`duetime local`: the whole scheduler on one machine, over SQLite, on 127.0.0.1.

One process runs the HTTP API (each request turned into an API Gateway event
for the same handler the Lambda runs), the tick loop, the worker loop and the
watchdog loop, over the SQLite store in ``--data-dir``. Stopping and starting
it loses nothing. ``--only`` runs a subset, so several processes can share one
data directory: kill -9 the tick/worker process, start it again (or two at
once), and nothing is duplicated or lost.

On a machine with more than one core, delivery runs in two processes by
default (``--worker-processes``): this one and a child ``--only worker`` on
the same data directory, supervised like every part, stopped with the stack
and, on Linux, killed with it.

``--store emulator`` runs the API, tick, worker and watchdog over moto in
server mode with the DynamoDB and SQS adapters (webhook secrets in a table), to try the
AWS code paths locally. Moto keeps its data in memory: it lives only as long
as the process, and the banner says so.

``--jobs FILE`` (default: ``jobs.toml`` in the data directory, when there is
one) declares the commands that schedules with a command target may run
(docs/commands.md); it is read and checked once, at start.

Each part runs under a supervisor: a part that fails is logged and restarted
after 0.5 s, 1 s, 2 s ... up to 30 s (back to 0.5 s after a minute of good
running). Exit status: 0 after Ctrl-C or SIGTERM; 1 when the stack cannot
start (the API port is in use, the data directory or the jobs file is unusable); 2 for bad
options; 3 when a part failed 10 times in a row at the 30 s cap.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from cli.echo import HOST, EchoReceiver
from cli.local_options import (
    PARTS,
    _parse_retention,
    default_worker_processes,
    option_error,
    parse_interval,
    parse_parts,
    parse_worker_processes,
    parse_workers,
    worker_processes,
)
from cli.supervisor import Loop, Restart, last_frames, log, supervise

SQLITE_FILE = "duetime.db"

# Exit statuses (docs/runbook.md). 2 is argparse's, for bad options.
EXIT_STOPPED = 0
EXIT_CANNOT_START = 1
EXIT_GAVE_UP = 3


# How long a stopping worker process may take before it is killed: its
# workers finish what they run (WorkerPool's drain, 10 s) first.
WORKER_PROCESS_STOP_S = 15.0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "local",
        help="run duetime on this machine (API, tick, worker, watchdog over SQLite)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=8080, help="API port on 127.0.0.1")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".duetime"),
        help="the SQLite store's directory (.duetime)",
    )
    parser.add_argument("--only", type=parse_parts, default=PARTS, help="api,tick,worker,watchdog")
    parser.add_argument(
        "--tick-interval", type=parse_interval, default=1.0, help="time between tick passes (1s)"
    )
    parser.add_argument(
        "--watchdog-interval",
        type=parse_interval,
        default=60.0,
        help="watchdog pass interval (60s)",
    )
    parser.add_argument(
        "--echo-port",
        type=int,
        default=None,
        help="a webhook receiver on 127.0.0.1 that logs what it gets (default: API port + 1; "
        "0 turns it off)",
    )
    parser.add_argument(
        "--store",
        choices=("sqlite", "emulator"),
        default="sqlite",
        help="sqlite (default): one file in --data-dir, kept across restarts; emulator: "
        "the AWS adapters over moto, in memory, lost when the process stops",
    )
    parser.add_argument(
        "--emulator-port", type=int, default=4566, help="the AWS emulator's port (--store emulator)"
    )
    parser.add_argument(
        "--workers",
        type=parse_workers,
        default=8,
        metavar="N",
        help="delivery worker threads (1-256, default 8) in each worker process: a slow "
        "target holds one of them",
    )
    parser.add_argument(
        "--worker-processes",
        type=parse_worker_processes,
        default=None,
        metavar="N",
        help="processes running delivery workers over the SQLite store (1-64; default: the "
        f"number of cores up to 2, here {default_worker_processes()}); the first is this "
        "process, the others are its children, restarted if they die",
    )
    # A worker process started by a stack: it ends when that stack's process does.
    parser.add_argument("--child-of", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--metrics", action="store_true", help="also print the CloudWatch EMF metric lines"
    )
    parser.add_argument(
        "--access-log", action="store_true", help="log one JSON line per API request"
    )
    from cli import notify

    notify.add_arguments(parser, parse_interval)
    parser.add_argument(
        "--jobs",
        type=Path,
        default=None,
        metavar="FILE",
        help="the jobs file: the commands that command targets may run (default: jobs.toml "
        "in --data-dir when it exists; docs/commands.md)",
    )
    parser.add_argument(
        "--retention",
        type=_parse_retention,
        default=None,
        help="how long the SQLite store keeps finished runs and dead letters, such as 90d "
        "(the default, as the AWS tables' TTL), 7d or 36h",
    )
    parser.set_defaults(run=run)


class CannotStart(Exception):
    """The stack cannot run here as asked; the message says what to change."""


class WorkerProcessExited(Exception):
    """A worker process of the stack ended while the stack was running."""


def die_with_parent(parent_pid: int) -> None:
    """A worker process started by a stack ends with it, even when the stack's
    process is killed (SIGKILL): on Linux the kernel kills it then; elsewhere a
    stack started from this process's parent is watched by ``LocalStack``."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:  # the stack was gone before that took effect
        os._exit(EXIT_STOPPED)


class _Server(Protocol):
    def serve_forever(self) -> None: ...
    def shutdown(self) -> None: ...
    def server_close(self) -> None: ...


class LocalStack:
    """The parts of ``duetime local``, each in a supervised thread.

    ``loops`` adds parts (or replaces a built one of the same name): a
    name and the loop to run, which returns once ``stop`` is set.
    """

    def __init__(
        self,
        args: argparse.Namespace,
        *,
        restart: Restart | None = None,
        loops: Mapping[str, Loop] | None = None,
    ) -> None:
        self.args = args
        self.parts: tuple[str, ...] = args.only
        self.data_dir: Path = args.data_dir
        self.db_path = self.data_dir / SQLITE_FILE
        self.stop = threading.Event()
        self.restart = restart or Restart()
        self.loops = dict(loops or {})
        self.gave_up: str | None = None
        self.threads: list[threading.Thread] = []
        self.servers: list[_Server] = []
        self.closers: list[Callable[[], None]] = []
        self.api_url: str | None = None
        self.echo_url: str | None = None
        self.emulator: Any = None
        self.worker_processes = worker_processes(args)
        # The running worker processes this stack started, by part name.
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.jobs: Any = None  # the jobs file's jobs (adapters.targets.jobs.Jobs), if any

    # --- composition ----------------------------------------------------------------

    def _settings(self) -> Any:
        from bootstrap.settings import Settings

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
        """Start every part; ``CannotStart`` says why the stack cannot run here."""
        self._check_data_dir()
        self._load_jobs()
        if self.args.store == "emulator":
            self._start_emulator()
        if "api" in self.parts:
            self._start_api()
            echo_port = self.args.echo_port
            if echo_port is None:
                echo_port = self.args.port + 1 if self.args.port else 0
            if echo_port or self.args.echo_port is None:
                self._start_echo(echo_port)
        builders = {
            "tick": self._tick_loop,
            "worker": self._worker_loop,
            "watchdog": self._watchdog_loop,
        }
        for part in ("tick", "worker", "watchdog"):
            if part in self.parts and part not in self.loops:
                self._spawn(part, builders[part]())
        # More worker processes beside the built worker part (not one a caller replaced).
        if "worker" in self.parts and "worker" not in self.loops and self.args.store == "sqlite":
            for number in range(2, self.worker_processes + 1):
                name = f"worker-{number}"
                self._spawn(name, self._worker_process_loop(name))
        parent = getattr(self.args, "child_of", None)
        if parent is not None:
            self._spawn("parent-watch", self._parent_watch_loop(parent))
        for part, loop in self.loops.items():
            self._spawn(part, loop)
        if self.args.store == "sqlite" and {"tick", "watchdog"} & set(self.parts):
            self._spawn("janitor", self._janitor_loop())

    def _check_data_dir(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except FileExistsError as error:
            raise CannotStart(f"the data directory {self.data_dir} is a file") from error
        except OSError as error:
            raise CannotStart(
                f"the data directory {self.data_dir} cannot be created: {error.strerror or error}"
            ) from error
        if not os.access(self.data_dir, os.W_OK | os.X_OK) or (
            self.db_path.exists() and not os.access(self.db_path, os.R_OK | os.W_OK)
        ):
            raise CannotStart(f"the data directory {self.data_dir} is not writable")

    def _load_jobs(self) -> None:
        """Read and check the jobs file (``--jobs``, or jobs.toml in the data directory)."""
        from adapters.targets.jobs import JobsFileError, find_jobs

        try:
            self.jobs = find_jobs(getattr(self.args, "jobs", None), self.data_dir)
        except JobsFileError as error:
            raise CannotStart(f"the jobs file is not usable: {error}") from error
        if self.jobs is not None and self.args.store == "emulator":
            raise CannotStart("command targets run over the SQLite store only (drop --jobs)")

    def _command_runner(self) -> Any:
        """The command target's adapter over the jobs file, after killing what a
        stack that died left holding a job's lock; None without a jobs file."""
        if self.jobs is None:
            return None
        from adapters.targets.command import CommandRunner

        runner = CommandRunner(self.jobs, self.data_dir, log=lambda fields: log(**fields))
        runner.reap_orphans()
        return runner

    def _spawn(self, name: str, loop: Loop) -> None:
        def run() -> None:
            supervise(name, loop, self.stop, self.restart, self._give_up)

        thread = threading.Thread(target=run, name=f"duetime-{name}", daemon=True)
        thread.start()
        self.threads.append(thread)

    def _give_up(self, part: str) -> None:
        self.gave_up = self.gave_up or part
        self.stop.set()

    def _secrets(self) -> Any:
        from adapters.sqlite.secrets import SqliteSecretStore

        store = SqliteSecretStore(self.db_path)
        self.closers.append(store.close)
        return store

    def _start_api(self) -> None:
        from cli.console import console_page
        from cli.local_http import ApiServer
        from handlers import api

        def call(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return api.handler(event, context, service=services)

        # The port first: a port in use stops the start before anything is opened.
        try:
            access_log = getattr(self.args, "access_log", False)
            server = ApiServer(
                call, HOST, self.args.port, log=log, access_log=access_log, pages=console_page
            )
        except OSError as error:
            raise CannotStart(
                f"the API cannot listen on {HOST}:{self.args.port}: {error.strerror or error}"
                " (is another duetime local running? choose another --port)"
            ) from error
        self.servers.append(server)
        if self.args.store == "emulator":
            # Webhook signing secrets in the emulator's secrets table, where the
            # worker reads them, as on AWS; webhook addresses judged as its worker does.
            from adapters.targets import AddressPolicy
            from bootstrap.aws import build_aws_services

            services = build_aws_services(self._settings(), address_policy=AddressPolicy.local())
        else:
            from bootstrap.local import build_sqlite_services
            from bootstrap.parts import sqlite_targets

            jobs = None if self.jobs is None else self.jobs.names
            services = build_sqlite_services(
                self._settings(),
                self.data_dir,
                secrets=self._secrets(),
                target_support=sqlite_targets(jobs),
            )
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
        from bootstrap.aws import build_aws_ticker
        from bootstrap.local import build_sqlite_ticker

        if self.args.store == "emulator":
            ticker = build_aws_ticker(self._settings()).ticker
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
        from bootstrap.aws import build_aws_worker
        from bootstrap.local import build_sqlite_worker
        from cli.worker_pool import SQLITE_RECEIVE_BATCH, run_worker_loop
        from service.run_ports import HELD_VISIBILITY_S

        batch = 10  # SQS's most
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
            worker, queue = build_sqlite_worker(
                self.db_path, self._secrets(), command=self._command_runner()
            )
            wait_s = 0.5
            batch = SQLITE_RECEIVE_BATCH
        workers = self.args.workers

        def loop() -> None:
            log("worker started", workers=workers, pid=os.getpid())
            run_worker_loop(
                worker, queue, stop=self.stop, wait_s=wait_s, workers=workers, max_messages=batch
            )

        return loop

    def _worker_process_loop(self, name: str) -> Loop:
        """A child process running a worker pool on the same SQLite file (the
        queue's claims are safe across processes); the supervisor restarts it
        if it dies, and the stack's stop ends it (SIGTERM, then SIGKILL)."""
        command = [
            sys.executable,
            "-m",
            "cli.main",
            "local",
            "--data-dir",
            str(self.data_dir),
            "--only",
            "worker",
            "--workers",
            str(self.args.workers),
            "--worker-processes",
            "1",
            "--child-of",
            str(os.getpid()),
        ]
        if getattr(self.args, "metrics", False):
            command.append("--metrics")
        if self.jobs is not None and self.jobs.source is not None:
            command += ["--jobs", str(Path(self.jobs.source).resolve())]
        root = str(Path(__file__).resolve().parent.parent)
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path}

        def loop() -> None:
            process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
            self.children[name] = process
            log("worker process started", part=name, pid=process.pid)
            try:
                while process.poll() is None and not self.stop.wait(0.2):
                    pass
            finally:
                if process.poll() is None:
                    process.terminate()  # its workers finish what they run
                    try:
                        process.wait(WORKER_PROCESS_STOP_S)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
                self.children.pop(name, None)
            if not self.stop.wait(0.2):  # a Ctrl-C reaches the children first
                raise WorkerProcessExited(
                    f"worker process {process.pid} exited with status {process.returncode}"
                )

        return loop

    def _parent_watch_loop(self, parent_pid: int) -> Loop:
        def loop() -> None:
            while not self.stop.wait(1.0):
                if os.getppid() != parent_pid:
                    log("the stack that started this worker process is gone; stopping")
                    self.stop.set()

        return loop

    def _watchdog_loop(self) -> Callable[[], None]:
        from bootstrap.aws import build_aws_watchdog
        from bootstrap.local import build_sqlite_watchdog
        from cli import notify
        from handlers.watchdog import run_watchdog

        alerting = notify.alerting(self.args)
        if self.args.store == "emulator":
            # The --notify-url channel, not the deployment's alarm topic.
            watchdog = build_aws_watchdog(
                self._settings().model_copy(update={"alert_topic_arn": ""}), alerting
            )
        else:
            watchdog = build_sqlite_watchdog(self.db_path, alerting)
            self.closers.append(watchdog.store.close)  # type: ignore[attr-defined]
        interval = self.args.watchdog_interval

        def loop() -> None:
            while not self.stop.wait(min(5.0, interval)):
                run_watchdog(watchdog)
                self.stop.wait(max(0.0, interval - 5.0))

        return loop

    def _janitor_loop(self) -> Callable[[], None]:
        """Retention for the SQLite store: a janitor pass shortly after start,
        then every few minutes (adapters/sqlite/janitor.py)."""
        from datetime import timedelta

        from adapters.sqlite.janitor import JANITOR_INTERVAL_S
        from adapters.targets.command import logs_dir
        from bootstrap.local import build_housekeeping

        retention = self.args.retention or timedelta(seconds=self._settings().history_retention_s)
        # The dead-letter sweep, as the worker runs it on AWS: a run whose intent
        # the queue's redrive moved is closed (service/dead_letter_sweep.py).
        housekeeping = build_housekeeping(self.db_path, retention, logs=logs_dir(self.data_dir))
        self.closers.append(housekeeping.close)
        janitor = housekeeping.janitor

        def loop() -> None:
            log(
                "janitor started",
                retention_s=int(retention.total_seconds()),
                interval_s=JANITOR_INTERVAL_S,
            )
            wait_s = 10.0  # the first pass shortly after start
            while not self.stop.wait(wait_s):
                report = janitor.run_once()
                if report.runs or report.dead_letters or report.heartbeats or report.logs:
                    log(
                        "janitor",
                        runs=report.runs,
                        dead_letters=report.dead_letters,
                        heartbeats=report.heartbeats,
                        logs=report.logs,
                    )
                swept = housekeeping.sweep()
                if swept.found or swept.left:
                    log(
                        "dead-letter sweep", found=swept.found, closed=swept.closed, left=swept.left
                    )
                wait_s = JANITOR_INTERVAL_S

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
        # Webhook signing secrets in their own table, as the stack keeps them.
        secrets_table = f"duetime-local-{d.WEBHOOK_SECRETS.logical_id.lower()}"
        if secrets_table not in existing:
            d.create_table(dynamodb, d.WEBHOOK_SECRETS, secrets_table)
        os.environ[d.ENV_SECRETS_TABLE] = secrets_table
        os.environ[d.ENV_SECRET_STORE] = "dynamodb"
        # and the signing key they are derived from, which the stack generates.
        from adapters.secrets import create_signing_key
        from bootstrap.settings import Settings

        create_signing_key(
            boto3.client("secretsmanager", endpoint_url=endpoint),
            os.environ.get(d.ENV_SECRETS_PREFIX, Settings().secrets_prefix),
        )
        urls = d.create_queues(boto3.client("sqs", endpoint_url=endpoint), "duetime-local")
        os.environ.update(urls)
        log("emulator started", endpoint=endpoint)

    # --- running -------------------------------------------------------------------

    def banner(self) -> str:
        lines = ["duetime local stack"]
        store = (
            f"moto server at http://{HOST}:{self.args.emulator_port} (DynamoDB + SQS adapters; "
            "in memory)"
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
                if self.args.notify_url:
                    running[-1] += f", telling {self.args.notify_url}"
            elif part == "worker":
                from cli.render import plural

                processes = self.worker_processes if self.args.store == "sqlite" else 1
                running.append(
                    f"worker ({plural(self.args.workers, 'thread')}"
                    + (f" in each of {processes} processes)" if processes > 1 else ")")
                )
            else:
                running.append(part)
        lines.append(f"  running:  {', '.join(running)}")
        if self.jobs is not None:
            lines.append(f"  jobs:     {len(self.jobs)} from {self.jobs.source} (command targets)")
        if self.api_url:
            lines.append(f"  api:      {self.api_url}  (OpenAPI at {self.api_url}/openapi.json)")
            lines.append(f"  console:  {self.api_url}/console  (in your browser)")
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
                "Then see it whole, and follow its runs as they happen (Ctrl-C stops):",
                f"  .venv/bin/duetime schedules describe <id> --api-url {self.api_url}",
                f"  .venv/bin/duetime runs follow <id> --api-url {self.api_url}",
                "",
                self._persistence(),
            ]
        return "\n".join(lines)

    def _persistence(self) -> str:
        """What a restart keeps: the SQLite file does; the emulator keeps nothing."""
        if self.args.store == "emulator":
            return (
                "Ctrl-C stops. The emulator holds its data in memory: it lives only as long "
                "as this process, and a restart starts empty (use the SQLite store, the "
                "default, for data that lasts)."
            )
        return "Ctrl-C stops; starting again with the same --data-dir loses nothing."

    def shutdown(self) -> None:
        self.stop.set()
        for server in self.servers:
            server.shutdown()  # in-flight requests finish first
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


def run(args: argparse.Namespace, stack: LocalStack | None = None) -> int:
    """Run until Ctrl-C or SIGTERM (0), or until the stack cannot go on (1 or 3)."""
    if not args.metrics:
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "duetime")
    problem = option_error(args)
    if problem is not None:
        print(f"duetime local: error: {problem}", file=sys.stderr)
        return 2
    parent = getattr(args, "child_of", None)
    if parent is not None:
        die_with_parent(parent)
    stack = stack or LocalStack(args)

    def on_signal(signum: int, frame: Any) -> None:
        stack.stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    code = EXIT_STOPPED
    try:
        stack.start()
        if parent is None:
            print(stack.banner(), flush=True)
        while not stack.stop.wait(0.5):
            pass
        if stack.gave_up is not None:
            print(
                f"duetime local: the {stack.gave_up} part kept failing; stopping (see the log)",
                file=sys.stderr,
            )
            code = EXIT_GAVE_UP
    except CannotStart as error:
        log("cannot start", error=str(error))
        print(f"duetime local: {error}", file=sys.stderr)
        code = EXIT_CANNOT_START
    except Exception as error:  # anything else that stops the start is fatal too
        log("cannot start", error=repr(error), traceback=last_frames(error))
        print(f"duetime local: could not start: {error!r}", file=sys.stderr)
        code = EXIT_CANNOT_START
    finally:
        log("stopping")
        stack.shutdown()
        log("stopped", exit_status=code)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code
