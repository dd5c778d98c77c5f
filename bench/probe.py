"""The worker's CPU time, memory and output, measured in a process of its own
(``bench/worker_probe.py``) against a moto server and a slow webhook receiver on
127.0.0.1 (``probe_worker``), and the figures drawn from it (``summarize_probe``).
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import boto3

from adapters.definitions import WEBHOOK_SECRETS, create_queues, create_table
from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.store import dynamo_store
from adapters.sqs import SqsDeliveryQueue
from adapters.targets.addresses import AddressPolicy
from bench.cost_runs import T0, BenchClock, stack_settings
from bench.prices import MAX_BATCH, PROBE_PHASES, TARGET_MS
from bootstrap.parts import Ticker, tick_config
from domain.partition import Partitioning
from domain.run import DeliveryIntent
from handlers.api_models import definition_of as definition
from handlers.tick_pass import run_tick
from service.schedules import ScheduleService


class _Undelayed(SqsDeliveryQueue):
    """The tick's queue, sending ahead without DelaySeconds: moto holds a
    delayed message back by the wall clock, which this script does not move
    (the requests are the same SendMessageBatch calls)."""

    def send_ahead(
        self, intents: Sequence[DeliveryIntent], now: datetime, early: Collection[datetime] = ()
    ) -> list[str]:
        return self.send_batch(intents)


class _SlowReceiver(http.server.BaseHTTPRequestHandler):
    """A webhook receiver that answers 200 after ``TARGET_MS``."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        time.sleep(TARGET_MS / 1000)
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def probe_worker(schedules: int) -> dict[str, Any]:
    """Run ``schedules`` webhook runs (one slot each) through the worker function in
    a child process (``bench/worker_probe.py``) against a moto server and a
    receiver answering in ``TARGET_MS``, both in this process on 127.0.0.1; the
    child's CPU time, memory and output are the function's alone."""
    from moto.server import ThreadedMotoServer

    from adapters.secrets import aws_secret_store, signing_key_name

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowReceiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        dynamodb = boto3.client("dynamodb", endpoint_url=endpoint)
        sqs = boto3.client("sqs", endpoint_url=endpoint)
        tables = create_store_tables(dynamodb, "probe")
        urls = create_queues(sqs, "probe")
        secrets_table = f"probe-{WEBHOOK_SECRETS.logical_id}"
        create_table(dynamodb, WEBHOOK_SECRETS, secrets_table)
        # The stack's default secret store: each secret an item of its own table.
        settings = stack_settings(
            tables, urls, secret_store="dynamodb", secrets_table=secrets_table
        )
        # The stack's signing key, which each schedule's secret is derived from.
        boto3.client("secretsmanager", endpoint_url=endpoint).create_secret(
            Name=signing_key_name(settings.secrets_prefix), SecretString="k" * 64
        )
        secrets = aws_secret_store(
            settings.secret_store,
            settings.secrets_prefix,
            lambda service: boto3.client(service, endpoint_url=endpoint),
            table=settings.secrets_table,
        )
        clock = BenchClock(T0)
        store = dynamo_store(dynamodb, tables, lease_shards=settings.shards)
        service = ScheduleService(
            store, clock, Partitioning(shards=settings.shards, bucket_s=settings.bucket_s)
        )
        hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        for i in range(schedules):
            schedule, _ = service.create(
                definition(
                    {
                        "name": f"probe {i}",
                        "spec": {"every": "PT1M"},
                        "target": {"type": "webhook", "url": hook},
                        "payload": {"report": "daily", "n": i},
                    },
                    AddressPolicy.local(),
                )
            )
            secrets.put(schedule.schedule_id)
        # A lookahead shorter than a minute: each pass plans one slot of each
        # schedule, so the first phase finds every schedule new to the worker.
        ticker = Ticker(
            store, _Undelayed(sqs, settings.delivery_queue_url), clock,
            tick_config(settings.model_copy(update={"lookahead_s": 30})), owner="probe",
        )  # fmt: skip
        with tempfile.TemporaryDirectory() as folder:
            result_path = Path(folder) / "probe.json"
            log_path = Path(folder) / "probe.log"
            env = {
                **os.environ,
                "AWS_ENDPOINT_URL": endpoint,
                "POWERTOOLS_SERVICE_NAME": "duetime",
                "POWERTOOLS_METRICS_NAMESPACE": "duetime",
            }
            drained_r, drained_w = os.pipe()
            with log_path.open("wb") as log, os.fdopen(drained_r) as drained:
                child = subprocess.Popen(
                    [
                        sys.executable,
                        str(Path(__file__).resolve().parent / "worker_probe.py"),
                        settings.model_dump_json(),
                        str(result_path),
                        str(drained_w),
                    ],
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.PIPE,
                    pass_fds=(drained_w,),
                    text=True,
                )
                os.close(drained_w)
                assert child.stdin is not None
                for _ in range(PROBE_PHASES):
                    clock.advance(60)
                    with contextlib.redirect_stdout(io.StringIO()):
                        run_tick(ticker, 0.0, sleep=lambda s: None)
                    child.stdin.write(f"{(clock.now() + timedelta(seconds=30)).isoformat()}\n")
                    child.stdin.flush()
                    if drained.readline().strip() != "drained":
                        break
                _, errors = child.communicate(timeout=600)
            if child.returncode != 0:
                raise RuntimeError(f"worker probe failed: {errors[-2000:]}")
            probe: dict[str, Any] = json.loads(result_path.read_text())
            output = log_path.read_bytes()
        probe["log_bytes"] = len(output)
        probe["log_lines"] = output.decode().splitlines()
        return probe
    finally:
        receiver.shutdown()
        receiver.server_close()
        server.stop()


def summarize_probe(probe: Mapping[str, Any]) -> dict[str, Any]:
    """The worker probe's figures. Steady state from the warm phases (the median
    CPU seconds per record over their full batches, the AWS requests per record);
    the cold phase (each schedule's secret and version read once) beside it."""
    calls = probe["invocations"]

    def full(phases: Any) -> list[dict[str, Any]]:
        chosen = [c for c in calls if phases(c["phase"])]
        return [c for c in chosen if c["records"] == MAX_BATCH] or chosen

    warm, cold = full(lambda p: p > 0), full(lambda p: p == 0)
    runs = sum(c["records"] for c in calls)
    warm_runs = sum(c["records"] for c in calls if c["phase"] > 0)
    warm_calls: Counter[str] = Counter()
    for c in calls:
        if c["phase"] > 0:
            warm_calls.update(c["calls"])
    return {
        "runs": runs,
        "batches": len(calls),
        "failed": sum(c["failed"] for c in calls),
        "cpu_per_batch_s": statistics.median(c["cpu_s"] for c in warm),
        "cpu_per_record_s": statistics.median(c["cpu_s"] / c["records"] for c in warm),
        "cold_cpu_per_batch_s": statistics.median(c["cpu_s"] for c in cold),
        "wall_per_batch_s": statistics.median(c["wall_s"] for c in warm),
        "calls_per_record": {op: n / warm_runs for op, n in sorted(warm_calls.items())},
        "log_bytes_per_run": probe["log_bytes"] / runs,
        "attempt_line_bytes": statistics.median(
            len(line) + 1 for line in probe["log_lines"] if '"message":"attempt"' in line
        ),
        "emf_bytes_per_batch": statistics.median(
            [len(line) + 1 for line in probe["log_lines"] if '"_aws"' in line] or [0]
        ),
        "init_cpu_s": probe["init_cpu_s"],
        "init_rss_mb": probe["init_rss_mb"],
        "peak_rss_mb": probe["peak_rss_mb"],
    }
