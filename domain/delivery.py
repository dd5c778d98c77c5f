"""One attempt to hand an occurrence to its target, and what the target said.

A ``Delivery`` is what every target receives, whatever its kind: the
occurrence's identity, which attempt this is, when it was due and how late it
is, and the schedule's payload. ``occurrence_id`` is the idempotency key: it is
the same on every attempt, redelivery and worker restart, so a target can
recognise a repeat.

An ``Outcome`` is the target's answer, reduced to what the run needs:
- ``succeeded``: the target took the occurrence and the job is done;
- ``accepted``: a webhook answered 202; the job goes on and reports progress
  and completion through the API with the run token it was given;
- ``transient``: it may work later (timeout, connection error, throttling,
  HTTP 429 or 5xx); retried under the schedule's retry policy, no sooner than
  ``retry_after_s`` when the target asked for a pause;
- ``permanent``: it will not work by retrying (another 4xx, a refused
  address, a missing queue or function, no permission); the run fails now;
- ``skipped``: the target declined to start this occurrence for a reason that
  is not a failure (a command whose job is still running holds its lock): the
  run ends skipped with that reason, and is not retried.

``details`` is what a target adds to the run's result besides the excerpt
(a command's exit code, duration and output tails).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

from domain.targets import Target

# How much of a target's answer a run keeps.
EXCERPT_LIMIT_BYTES: Final = 1024

OutcomeKind = Literal["succeeded", "accepted", "transient", "permanent", "skipped"]
OUTCOME_KINDS: Final[tuple[str, ...]] = (
    "succeeded",
    "accepted",
    "transient",
    "permanent",
    "skipped",
)


@dataclass(frozen=True)
class Delivery:
    """What a target receives for one attempt of one occurrence.

    ``attempt`` counts from 1. ``late_by_s`` is how long after
    ``scheduled_at`` this attempt started, so a receiver can decide for itself
    whether the work is still worth doing. ``run_token`` is present when the
    run expects the target to report completion through the API.
    """

    occurrence_id: str
    schedule_id: str
    version: int
    scheduled_at: datetime
    attempt: int
    late_by_s: float
    payload: dict[str, Any] = field(default_factory=dict)
    run_token: str | None = None
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        if not self.occurrence_id:
            raise ValueError("occurrence_id is required")
        if not self.schedule_id:
            raise ValueError("schedule_id is required")
        if self.version < 1:
            raise ValueError(f"version must be 1 or more, not {self.version}")
        if self.scheduled_at.tzinfo is None or self.scheduled_at.utcoffset() is None:
            raise ValueError("scheduled_at must be timezone-aware")
        if self.attempt < 1:
            raise ValueError(f"attempt counts from 1, not {self.attempt}")
        if not math.isfinite(self.late_by_s) or self.late_by_s < 0:
            raise ValueError(f"late_by_s must be a finite number >= 0, not {self.late_by_s}")

    @property
    def idempotency_key(self) -> str:
        """The key a target sees for this occurrence: the same on every attempt."""
        return self.occurrence_id

    def to_dict(self) -> dict[str, Any]:
        """The JSON object every target receives."""
        body: dict[str, Any] = {
            "occurrence_id": self.occurrence_id,
            "schedule_id": self.schedule_id,
            "version": self.version,
            "scheduled_at": format_instant(self.scheduled_at),
            "attempt": self.attempt,
            "late_by_s": round(self.late_by_s, 3),
            "payload": self.payload,
        }
        if self.run_token is not None:
            body["run_token"] = self.run_token
        return body

    def to_json_body(self) -> bytes:
        """``to_dict`` as compact UTF-8 JSON, byte-for-byte the same for the same delivery.

        These exact bytes are what a webhook signature covers.
        """
        return json.dumps(
            self.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode("utf-8")


def format_instant(at: datetime) -> str:
    """An aware instant as ISO 8601 in UTC with a ``Z``: ``2026-03-29T01:00:00Z``."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def excerpt(data: bytes | str | None, limit: int = EXCERPT_LIMIT_BYTES) -> str:
    """At most ``limit`` bytes of ``data`` as text, cut on a character boundary."""
    if data is None:
        return ""
    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else data
    if len(raw) <= limit:
        return raw.decode("utf-8", errors="replace")
    return raw[:limit].decode("utf-8", errors="ignore")


@dataclass(frozen=True)
class Outcome:
    """A target's answer to one attempt. ``excerpt`` is cut to ``EXCERPT_LIMIT_BYTES``."""

    kind: OutcomeKind
    status_code: int | None = None
    excerpt: str = ""
    error: str | None = None
    retry_after_s: float | None = None
    details: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in OUTCOME_KINDS:
            raise ValueError(f"kind must be one of {', '.join(OUTCOME_KINDS)}, not {self.kind!r}")
        if self.retry_after_s is not None and (
            not math.isfinite(self.retry_after_s) or self.retry_after_s < 0
        ):
            raise ValueError("retry_after_s must be a finite number >= 0")
        bounded = excerpt(self.excerpt)
        if bounded != self.excerpt:
            object.__setattr__(self, "excerpt", bounded)
        if self.error is not None:
            bounded_error = excerpt(self.error)
            if bounded_error != self.error:
                object.__setattr__(self, "error", bounded_error)

    @property
    def delivered(self) -> bool:
        """The target took the occurrence (``succeeded`` or ``accepted``)."""
        return self.kind in ("succeeded", "accepted")

    @property
    def retryable(self) -> bool:
        return self.kind == "transient"

    @classmethod
    def succeeded(cls, status_code: int | None = None, body: bytes | str | None = None) -> Outcome:
        return cls("succeeded", status_code, excerpt(body))

    @classmethod
    def accepted(cls, status_code: int | None = 202, body: bytes | str | None = None) -> Outcome:
        return cls("accepted", status_code, excerpt(body))

    @classmethod
    def transient(
        cls,
        error: str,
        status_code: int | None = None,
        body: bytes | str | None = None,
        retry_after_s: float | None = None,
    ) -> Outcome:
        return cls("transient", status_code, excerpt(body), error, retry_after_s)

    @classmethod
    def permanent(
        cls, error: str, status_code: int | None = None, body: bytes | str | None = None
    ) -> Outcome:
        return cls("permanent", status_code, excerpt(body), error)

    @classmethod
    def skipped(cls, reason: str) -> Outcome:
        """Not started, and not a failure: the run ends skipped with ``reason``."""
        return cls("skipped", error=reason)


class TargetPort(Protocol):
    """Delivers one attempt to one target and reports what happened.

    An implementation never raises for anything the target or the network did:
    it answers with an ``Outcome``. ``timeout_s`` bounds the call; a target's
    own, shorter timeout wins.
    """

    def deliver(self, target: Target, delivery: Delivery, *, timeout_s: float) -> Outcome: ...
