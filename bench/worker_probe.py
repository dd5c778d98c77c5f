"""The worker function as deployed, in a process of its own: its CPU time and memory.

``bench/cost.py`` starts this script with ``AWS_ENDPOINT_URL`` pointing at a
moto server in its own process and a webhook receiver that answers after a
fixed delay, so everything this process spends is the worker's: importing
``handlers.worker`` and building its clients (a cold start), then one
``handler`` invocation per batch of up to 10 messages, each record through
the real webhook sender (signing secret from Secrets Manager, HMAC, HTTP).

    python bench/worker_probe.py '<settings JSON>' <result path> <report fd>

Each line on standard input is a phase: the instant the queued intents are
due (ISO 8601). The script receives the messages on the queue the way
Lambda's event source mapping does (not counted: Lambda's pollers make those
calls), invokes the handler for each batch, and when the queue is empty
writes the line ``drained`` to the report file descriptor. The first phase
finds a cold worker (each schedule's secret and version read once), the
next ones a warm one. At the end of input it writes to ``<result path>`` as
JSON: the cold start's CPU seconds (and the imports' and the clients' apart)
and resident memory, then per invocation its phase, record count, CPU
seconds (user + system, all threads), wall seconds and the worker's AWS
requests by operation, and the peak resident memory. Its standard output
is what the function would log: the process has the variables Lambda sets
(``AWS_LAMBDA_FUNCTION_NAME``, and a new ``_X_AMZN_TRACE_ID`` each
invocation), so the log lines are the deployed ones.

moto's server answers every request with ``Connection: close``, so each AWS
request here opens a TCP connection (on Lambda the SDK keeps one open, and
pays TLS instead): a little CPU a request that the deployed function spends
differently.

With ``DUETIME_PROBE_PROFILE`` set to a path, the warm invocations also run
under cProfile, timed by each thread's CPU clock (the invocation's thread
and each record's thread, merged), and the statistics are written there
(``python -m pstats <path>``). The profiler's own overhead inflates the CPU
seconds several times over: compare shares within a profile, and take CPU
figures from a run without it.
"""

from __future__ import annotations

import cProfile
import json
import os
import resource
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

INIT_STARTED = resource.getrusage(resource.RUSAGE_SELF)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def cpu_s(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    """This process's peak resident memory (``VmHWM``: unlike ``ru_maxrss``, not
    inherited from the parent that forked it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class FixedClock:
    """The bench's clock: the instant the intents are due."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 140_000


def _record(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": message["Attributes"]["ApproximateReceiveCount"]},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
    }


def count_requests(calls: Counter[str]) -> None:
    """Count every AWS request any client of this process makes, by operation."""
    from botocore.client import BaseClient

    lock = threading.Lock()
    make_api_call = BaseClient._make_api_call

    def counted(self: Any, operation_name: str, api_params: Any) -> Any:
        with lock:
            calls[operation_name] += 1
        return make_api_call(self, operation_name, api_params)

    BaseClient._make_api_call = counted  # type: ignore[method-assign]


class Profiles:
    """cProfile for a multi-threaded invocation: one profiler per thread
    (a ``cProfile.Profile`` follows only the thread that enabled it), merged
    at the end."""

    def __init__(self) -> None:
        self.done: list[cProfile.Profile] = []
        self.on = False
        self._lock = threading.Lock()

    def wrap(self, call: Any) -> Any:
        def profiled(*args: Any, **kwargs: Any) -> Any:
            if not self.on:
                return call(*args, **kwargs)
            profile = cProfile.Profile(time.thread_time)  # this thread's CPU, not its waits
            profile.enable()
            try:
                return call(*args, **kwargs)
            finally:
                profile.disable()
                with self._lock:
                    self.done.append(profile)

        return profiled

    def dump(self, path: str) -> None:
        import pstats

        if self.done:
            stats = pstats.Stats(self.done[0])
            for profile in self.done[1:]:
                stats.add(profile)
            stats.dump_stats(path)


def lambda_environment() -> None:
    """The variables Lambda gives the function's process (what the worker's
    logger and botocore read of them: the function's name, and a trace id
    per invocation, X-Ray on or not)."""
    os.environ.setdefault("AWS_LAMBDA_FUNCTION_NAME", "duetime-worker")
    new_trace_id()


def new_trace_id() -> None:
    os.environ["_X_AMZN_TRACE_ID"] = (
        f"Root=1-{int(time.time()):08x}-{os.urandom(12).hex()};"
        f"Parent={os.urandom(8).hex()};Sampled=0;Lineage=1:{os.urandom(4).hex()}:0"
    )


def main(settings_json: str, result_path: str, report_fd: int) -> None:
    # The cold start: the module imported, then the clients built. On Lambda both are the
    # init phase (``handlers.worker.init_container``); here the module is imported before
    # the process looks like Lambda, so that it does not build the deployment's worker
    # itself, and the probe builds its own (its clock, its address rule), timed apart.
    import random

    from adapters.targets import AddressPolicy
    from bootstrap.aws import build_aws_worker
    from bootstrap.settings import Settings
    from handlers import worker as worker_handler

    lambda_environment()
    imported = resource.getrusage(resource.RUSAGE_SELF)
    settings = Settings.model_validate_json(settings_json)
    clock = FixedClock(datetime.now(UTC))
    worker, queue = build_aws_worker(
        settings,
        telemetry=worker_handler.PowertoolsTelemetry(),
        address_policy=AddressPolicy.local(),
        rng=random.Random(0),
        clock=clock,
    )
    init = resource.getrusage(resource.RUSAGE_SELF)
    result: dict[str, Any] = {
        "init_cpu_s": cpu_s(init) - cpu_s(INIT_STARTED),
        "import_cpu_s": cpu_s(imported) - cpu_s(INIT_STARTED),
        "build_cpu_s": cpu_s(init) - cpu_s(imported),
        "init_rss_mb": peak_rss_mb(),
        "invocations": [],
    }

    import boto3

    calls: Counter[str] = Counter()
    count_requests(calls)
    sqs = boto3.client("sqs")  # the event source mapping's, not the function's
    report = os.fdopen(report_fd, "w")
    profile_path = os.environ.get("DUETIME_PROBE_PROFILE")
    profiles = Profiles()
    if profile_path:
        worker_handler.handle_message = profiles.wrap(worker_handler.handle_message)
        invoke = profiles.wrap(worker_handler.handler)
    else:
        invoke = worker_handler.handler
    for phase, line in enumerate(sys.stdin):
        clock.at = datetime.fromisoformat(line.strip())
        profiles.on = phase > 0
        while True:
            answer = sqs.receive_message(
                QueueUrl=settings.delivery_queue_url,
                MaxNumberOfMessages=10,
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            )
            messages = answer.get("Messages", [])
            if not messages:
                break
            event = {"Records": [_record(m) for m in messages]}
            calls.clear()
            new_trace_id()
            before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            response = invoke(event, Context(), worker=worker, queue=queue)
            wall = time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_SELF)
            failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
            result["invocations"].append(
                {
                    "phase": phase,
                    "records": len(messages),
                    "failed": len(failed),
                    "cpu_s": cpu_s(after) - cpu_s(before),
                    "wall_s": wall,
                    "calls": dict(calls),
                }
            )
            done = [m for m in messages if m["MessageId"] not in failed]
            if done:
                sqs.delete_message_batch(
                    QueueUrl=settings.delivery_queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                        for i, m in enumerate(done)
                    ],
                )
        sys.stdout.flush()
        report.write("drained\n")
        report.flush()
    sys.stdout.flush()
    result["peak_rss_mb"] = peak_rss_mb()
    if profile_path:
        profiles.dump(profile_path)
    Path(result_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
