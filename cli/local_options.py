"""The options of `duetime local` that take parsing of their own, and the
checks of their combinations (cli/local.py builds the parser)."""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

PARTS = ("api", "tick", "worker", "watchdog")


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


def _parse_retention(text: str) -> Any:
    from adapters.sqlite.janitor import parse_retention

    return parse_retention(text)


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


MAX_WORKER_PROCESSES = 64


def default_worker_processes() -> int:
    """Delivery runs in as many processes as there are cores, up to two: one
    process is bound to one core by Python's GIL (bench/burst.py)."""
    return max(1, min(2, os.cpu_count() or 1))


def parse_worker_processes(text: str) -> int:
    """``--worker-processes``: a whole number of processes running delivery workers, 1 to 64."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_WORKER_PROCESSES:
        raise argparse.ArgumentTypeError(
            f"--worker-processes takes a whole number from 1 to {MAX_WORKER_PROCESSES} "
            f"(got {text!r})"
        )
    return count


def worker_processes(args: argparse.Namespace) -> int:
    """How many processes run delivery workers, ``--worker-processes`` or its default."""
    chosen: int | None = getattr(args, "worker_processes", None)
    if chosen is not None:
        return chosen
    return default_worker_processes() if getattr(args, "store", "sqlite") == "sqlite" else 1


def option_error(args: argparse.Namespace) -> str | None:
    """What is wrong with a combination of options (each one alone was parsed)."""
    chosen = getattr(args, "worker_processes", None)
    if getattr(args, "store", "sqlite") == "emulator" and chosen is not None and chosen > 1:
        return (
            f"--worker-processes {chosen}: over the emulator the worker runs in one process "
            "(use --workers for more threads)"
        )
    return None
