"""A webhook receiver inside the simulation, put in place of the HTTP call itself.

The worker's whole path runs (the signing secret read from the deployment's
secret store, the signature, the outcome rules for each status, Retry-After); only the
socket is replaced. The URL says how the receiver behaves:

    https://<name>.target.example/?ms=200&status=200&fail_first=0

``ms`` is how long it takes to answer (simulated time; past the worker's
deadline for the call the sender sees a timeout), ``status`` what it answers,
``fail_first`` how many first attempts of each occurrence answer 503,
``fail_until_s`` until when (simulated seconds from the start) every attempt
answers 500: a target that is down, then back.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sim.engine import Engine


@dataclass
class Delivery:
    schedule_id: str
    scheduled_at: str
    key: str
    attempt: int
    started_s: float
    status: int | None  # None: the sender gave up (timeout)
    run_token: str | None = None  # what a job answering 202 reports back with


@dataclass
class Receiver:
    engine: Engine
    deliveries: list[Delivery] = field(default_factory=list)
    attempts: Counter[str] = field(default_factory=Counter)

    def post(self, url: str, headers: dict[str, str], body: bytes, deadline: float) -> Any:
        from adapters.targets.webhook import _Answer

        query = {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}
        latency_s = float(query.get("ms", "200")) / 1000
        status = int(query.get("status", "200"))
        fail_first = int(query.get("fail_first", "0"))
        document = json.loads(body)
        key = headers.get("Idempotency-Key", document.get("occurrence_id", ""))
        self.attempts[key] += 1
        if self.attempts[key] <= fail_first:
            status = 503
        if self.engine.elapsed_s() < float(query.get("fail_until_s", "0")):
            status = 500
        record = Delivery(
            schedule_id=document["schedule_id"],
            scheduled_at=document["scheduled_at"],
            key=key,
            attempt=int(document.get("attempt", 0)),
            started_s=self.engine.elapsed_s(),
            status=None,
            run_token=document.get("run_token"),
        )
        self.deliveries.append(record)
        remaining = deadline - time.monotonic()
        if latency_s > remaining:
            time.sleep(max(0.0, remaining))
            raise TimeoutError("the receiver did not answer in time")
        time.sleep(latency_s)
        record.status = status
        return _Answer(status=status, location=None, retry_after=None, body=b'{"ok":true}')
