"""The bodies of the HTTP API's calls other than a schedule's own: pause,
backfill, acknowledge, trigger, a long job's progress and end, a run's
retry and cancel (the schedule: ``handlers.api_models``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import Field, PrivateAttr, model_validator

from domain.timeparse import MAX_TEXT_CHARS, parse_instant
from handlers.api_fields import (
    INSTANT_DESCRIPTION,
    PAST_YEAR,
    RECENT_YEAR,
    In,
    Text,
    instant_pattern,
)


class PauseIn(In):
    note: Text | None = Field(
        default=None, max_length=1000, description="why it is paused; no control characters"
    )


class BackfillIn(In):
    start_at: str = Field(
        max_length=MAX_TEXT_CHARS,
        description=INSTANT_DESCRIPTION + "; inclusive",
        examples=["2026-11-30T00:00:00Z"],
        json_schema_extra={"pattern": instant_pattern(PAST_YEAR)},
    )
    end_at: str = Field(
        max_length=MAX_TEXT_CHARS,
        description=INSTANT_DESCRIPTION + "; inclusive, not before start_at, not in the future",
        examples=["2026-12-01T00:00:00Z"],
        json_schema_extra={"pattern": instant_pattern(RECENT_YEAR)},
    )
    dry_run: bool = Field(
        default=False,
        strict=True,
        description="true: store nothing, answer the occurrences that would be created",
    )
    _range: tuple[datetime, datetime] = PrivateAttr()

    @model_validator(mode="after")
    def _domain(self) -> Self:
        start_at = parse_instant(self.start_at, "start_at")
        self._range = (start_at, parse_instant(self.end_at, "end_at"))
        return self

    @property
    def range(self) -> tuple[datetime, datetime]:
        """``start_at`` and ``end_at`` as instants."""
        return self._range


class ProgressIn(In):
    """What a long job (its target answered 202) reports while it runs."""

    run_token: str = Field(min_length=1, max_length=512, description="from the delivery body")
    progress: dict[str, Any] = Field(description="anything the job wants shown on the run")


class CompleteIn(In):
    """A long job's end. A failure it reports fails the run: the job itself decided."""

    run_token: str = Field(min_length=1, max_length=512, description="from the delivery body")
    succeeded: bool = True
    result: dict[str, Any] | None = Field(default=None, description="kept on the run's result")
    error: Text | None = Field(
        default=None, max_length=2000, description="why it failed; no control characters"
    )


class AcknowledgeIn(In):
    note: Text | None = Field(
        default=None, max_length=1000, description="why; kept with the acknowledgement"
    )


class EmptyIn(In):
    """A request that takes no fields (a trigger, a secret's rotation): send
    no body, or ``{}``; a field is refused."""


class RetryRunIn(In):
    """A retry takes no fields: send no body, or ``{}``."""


class CancelRunIn(In):
    reason: Text | None = Field(
        default=None,
        max_length=500,
        description="why it is cancelled, recorded after 'cancelled by a user: '; "
        "no control characters",
    )
