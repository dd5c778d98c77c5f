"""How the local stack keeps its parts running: each part's loop under a
supervisor that logs a failure and restarts it with backoff, and the stack's
own log lines."""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Loop = Callable[[], None]


def log(event: str, **fields: Any) -> None:
    """One structured line on stderr: the local stack's own events."""
    line = {"at": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event, **fields}
    print(json.dumps(line, default=str), file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Restart:
    """How a failed part is restarted.

    The delay doubles from ``first_s`` up to ``cap_s`` and is back to
    ``first_s`` once a run lasted ``healthy_after_s``. A part that fails
    ``give_up_after`` times in a row with the delay at the cap stops the
    stack (exit status 3): it is not coming back on its own.
    """

    first_s: float = 0.5
    cap_s: float = 30.0
    healthy_after_s: float = 60.0
    give_up_after: int = 10

    def __post_init__(self) -> None:
        if not 0 < self.first_s <= self.cap_s or self.give_up_after < 1:
            raise ValueError("Restart needs 0 < first_s <= cap_s and give_up_after >= 1")


def last_frames(error: BaseException) -> list[str]:
    """The last frames of a traceback, one short string each."""
    frames = traceback.extract_tb(error.__traceback__)[-5:]
    return [f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames]


def supervise(
    part: str,
    loop: Loop,
    stop: threading.Event,
    restart: Restart,
    give_up: Callable[[str], None],
) -> None:
    """Run ``loop`` until ``stop``; restart it with backoff when it fails or returns."""
    delay = restart.first_s
    at_cap = 0
    while not stop.is_set():
        started = time.monotonic()
        fields: dict[str, Any]
        try:
            loop()
        except BaseException as error:  # a thread has no one else to report to
            fields = {"error": repr(error), "traceback": last_frames(error)}
        else:
            fields = {"error": "the loop returned while the stack was running"}
        if stop.is_set():
            return
        if time.monotonic() - started >= restart.healthy_after_s:
            delay, at_cap = restart.first_s, 0
        if delay >= restart.cap_s:
            at_cap += 1
        if at_cap >= restart.give_up_after:
            log("part failed", part=part, **fields, giving_up=True, failures_at_cap=at_cap)
            give_up(part)
            return
        log("part failed", part=part, **fields, restart_in_s=delay)
        if stop.wait(delay):
            return
        log("part restarted", part=part)
        delay = min(restart.cap_s, delay * 2)
