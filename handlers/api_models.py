"""The JSON the HTTP API reads and writes, as pydantic models.

Request models check shapes and types (a misspelt field is refused, naming
it); what a value *means* (a cron expression, a zone, a duration, a URL) is
the domain's to decide, so those stay strings here and are handed to the
schedule use cases as the plain JSON object a user wrote.

Response models are built explicitly from domain values by the ``*_out``
functions at the bottom. Instants are UTC ISO 8601 strings ending in ``Z``;
``local`` times carry their offset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from domain.run import Run
from domain.schedule import Schedule, policy_to_dict
from domain.spec import ScheduleSpec, Slot, spec_to_dict
from domain.targets import target_to_dict
from domain.timeparse import format_instant

Instant = Annotated[
    str,
    Field(
        json_schema_extra={"format": "date-time"},
        description="UTC, ISO 8601 with Z",
        examples=["2026-12-01T09:00:00Z"],
    ),
]
LocalTime = Annotated[
    str,
    Field(
        description="the same instant in the schedule's time zone, with its offset",
        examples=["2026-12-01T09:00:00+00:00"],
    ),
]
Duration = Annotated[str, Field(description="ISO 8601 duration", examples=["PT15M"])]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- requests ---------------------------------------------------------------------


class SpecIn(_In):
    """When a schedule fires: exactly one of ``cron``, ``at`` or ``every``."""

    cron: str | None = Field(
        default=None, description="five fields, matched in time_zone", examples=["0 9 * * MON-FRI"]
    )
    at: str | None = Field(
        default=None,
        description="one instant with an offset, or a wall time read in time_zone",
        examples=["2026-12-01T09:00:00Z", "2026-12-01T09:00"],
    )
    every: str | None = Field(
        default=None,
        description="a fixed interval (ISO 8601 duration), from start_at or the creation instant",
        examples=["PT15M"],
    )
    time_zone: str | None = Field(
        default=None, description="IANA zone (default UTC)", examples=["Europe/London"]
    )
    start_at: str | None = Field(default=None, description="inclusive, with an offset")
    end_at: str | None = Field(default=None, description="inclusive, with an offset")


class RetryIn(_In):
    max_attempts: int | None = Field(default=None, description="default 5")
    base: str | None = Field(default=None, description="ISO 8601 duration, default PT1S")
    cap: str | None = Field(default=None, description="ISO 8601 duration, default PT30S")


class PolicyIn(_In):
    """How occurrences behave when things are not on time. Every field is optional."""

    overdue: Literal["catch_up_all", "latest_only", "expire"] | None = Field(
        default=None, description="default latest_only"
    )
    catchup_window: str | None = Field(
        default=None, description="ISO 8601 duration; required with overdue=expire"
    )
    dst_gap: Literal["cron", "shift", "next_valid", "skip"] | None = Field(
        default=None, description="default cron"
    )
    dst_fold: Literal["cron", "first", "second", "both"] | None = Field(
        default=None, description="default cron"
    )
    overlap: Literal["skip", "allow_all"] | None = Field(
        default=None, description="default allow_all"
    )
    retry: RetryIn | None = None
    run_timeout: str | None = Field(default=None, description="ISO 8601 duration, default PT15M")
    grace: str | None = Field(
        default=None, description="how late a success may be before the watchdog says overdue"
    )


class TargetIn(_In):
    """Where occurrences are delivered. Which fields apply depends on ``type``."""

    type: Literal["webhook", "sqs", "lambda", "eventbridge"]
    url: str | None = Field(default=None, description="webhook")
    headers: dict[str, str] | list[tuple[str, str]] | None = Field(
        default=None, description="webhook: extra request headers"
    )
    timeout_s: float | None = Field(default=None, description="webhook: default 10, at most 900")
    queue_url: str | None = Field(default=None, description="sqs")
    message_group_id: str | None = Field(default=None, description="sqs (FIFO queues)")
    function_arn: str | None = Field(default=None, description="lambda")
    invocation_type: Literal["Event", "RequestResponse"] | None = Field(
        default=None, description="lambda: default Event"
    )
    event_bus_name: str | None = Field(default=None, description="eventbridge: name or ARN")
    source: str | None = Field(default=None, description="eventbridge: default duetime")
    detail_type: str | None = Field(
        default=None, description="eventbridge: default duetime.occurrence"
    )


class ScheduleIn(_In):
    """A schedule as a user writes it (POST creates it; PUT replaces it)."""

    name: str
    spec: SpecIn
    target: TargetIn
    payload: dict[str, Any] | None = None
    policy: PolicyIn | None = None

    def definition(self) -> dict[str, Any]:
        """The JSON object the schedule use cases parse (absent fields left out)."""
        body: dict[str, Any] = {
            "name": self.name,
            "spec": self.spec.model_dump(exclude_none=True),
            "target": self.target.model_dump(exclude_none=True),
        }
        if self.payload is not None:
            body["payload"] = self.payload
        if self.policy is not None:
            body["policy"] = self.policy.model_dump(exclude_none=True)
        return body


class PauseIn(_In):
    note: str | None = Field(default=None, max_length=1000, description="why it is paused")


class BackfillIn(_In):
    start_at: str = Field(
        description="inclusive, with an offset", examples=["2026-11-30T00:00:00Z"]
    )
    end_at: str = Field(
        description="inclusive, with an offset, not in the future",
        examples=["2026-12-01T00:00:00Z"],
    )


class ProgressIn(_In):
    """What a long job (its target answered 202) reports while it runs."""

    run_token: str = Field(min_length=1, max_length=512, description="from the delivery body")
    progress: dict[str, Any] = Field(description="anything the job wants shown on the run")


class CompleteIn(_In):
    """A long job's end. A failure it reports fails the run: the job itself decided."""

    run_token: str = Field(min_length=1, max_length=512, description="from the delivery body")
    succeeded: bool = True
    result: dict[str, Any] | None = Field(default=None, description="kept on the run's result")
    error: str | None = Field(default=None, max_length=2000, description="why it failed")


# --- responses --------------------------------------------------------------------


class ErrorDetail(_Out):
    code: str = Field(examples=["validation_error"])
    message: str
    field: str | None = Field(default=None, examples=["spec.cron"])


class ErrorOut(_Out):
    error: ErrorDetail


class StateOut(_Out):
    paused: bool
    note: str | None


class SpecOut(_Out):
    """The fields that do not apply to the spec's kind are null."""

    cron: str | None = None
    at: str | None = None
    every: str | None = None
    anchor_at: Instant | None = Field(
        default=None, description="every: the instant the interval is counted from"
    )
    time_zone: str | None = None
    start_at: Instant | None = None
    end_at: Instant | None = None


class RetryOut(_Out):
    max_attempts: int
    base: Duration
    cap: Duration


class PolicyOut(_Out):
    overdue: Literal["catch_up_all", "latest_only", "expire"]
    catchup_window: Duration | None
    dst_gap: Literal["cron", "shift", "next_valid", "skip"]
    dst_fold: Literal["cron", "first", "second", "both"]
    overlap: Literal["skip", "allow_all"]
    retry: RetryOut
    run_timeout: Duration
    grace: Duration | None


class TargetOut(_Out):
    """The fields that do not apply to the target's type are null."""

    type: Literal["webhook", "sqs", "lambda", "eventbridge"]
    url: str | None = None
    headers: dict[str, str] | None = None
    timeout_s: float | None = None
    queue_url: str | None = None
    message_group_id: str | None = None
    function_arn: str | None = None
    invocation_type: Literal["Event", "RequestResponse"] | None = None
    event_bus_name: str | None = None
    source: str | None = None
    detail_type: str | None = None


class OccurrenceOut(_Out):
    scheduled_at: Instant
    local: LocalTime


class ScheduleOut(_Out):
    id: str
    name: str
    version: int
    state: StateOut
    spec: SpecOut
    policy: PolicyOut
    target: TargetOut
    payload: dict[str, Any]
    next_occurrences: list[OccurrenceOut] = Field(
        description="the next few occurrences not materialized yet (none when paused)"
    )
    next_due: Instant | None
    created_at: Instant
    updated_at: Instant
    deleted_at: Instant | None = None
    webhook_secret: str | None = Field(
        default=None,
        description=("the webhook signing secret: only in the answer that created it, never again"),
    )
    watch: WatchOut | None = Field(
        default=None,
        description="the watchdog's last verdict on this schedule (none before its first pass)",
    )
    quarantine: QuarantineOut | None = Field(
        default=None,
        description="why duetime set this schedule aside (null when healthy); an edit clears it",
    )


class QuarantineOut(_Out):
    reason: str = Field(description="the error that set the schedule aside")
    component: Literal["plan", "dispatch", "watch"]
    at: Instant


class WatchOut(_Out):
    status: Literal["ok", "late", "overdue", "paused", "ended"]
    checked_at: Instant
    expected_at: Instant | None = Field(
        default=None, description="the occurrence that should succeed next"
    )
    last_success_at: Instant | None = Field(
        default=None, description="scheduled_at of the newest successful run"
    )
    grace_s: float | None = None


class ScheduleListOut(_Out):
    schedules: list[ScheduleOut]
    next_token: str | None


RunStatusName = Literal[
    "scheduled",
    "admitted",
    "running",
    "retrying",
    "succeeded",
    "failed",
    "expired",
    "skipped",
    "cancelled",
]


RunKindName = Literal["scheduled", "trigger", "backfill", "summary"]


class RunOut(_Out):
    occurrence_id: str
    schedule_id: str
    version: int
    status: RunStatusName
    kind: RunKindName
    attempts: int
    scheduled_at: Instant
    admitted_at: Instant | None
    started_at: Instant | None
    finished_at: Instant | None
    local: LocalTime
    reason: str | None
    result: dict[str, Any] | None
    progress: dict[str, Any] | None


class RunListOut(_Out):
    runs: list[RunOut]
    next_token: str | None


class BackfillOut(_Out):
    runs: list[RunOut] = Field(description="the occurrences this call created")
    created: int


class HealthOut(_Out):
    status: Literal["ok"]
    time: Instant


# --- from domain values -----------------------------------------------------------


def _instant(value: datetime | None) -> str | None:
    return None if value is None else format_instant(value)


def occurrence_out(slot: Slot, local: Callable[[datetime], datetime]) -> OccurrenceOut:
    return OccurrenceOut(
        scheduled_at=format_instant(slot.scheduled_at), local=local(slot.scheduled_at).isoformat()
    )


def schedule_out(
    schedule: Schedule,
    upcoming: Sequence[Slot],
    local: Callable[[datetime], datetime],
    *,
    webhook_secret: str | None = None,
) -> ScheduleOut:
    current = schedule.current
    return ScheduleOut(
        id=schedule.schedule_id,
        name=current.name,
        version=schedule.version,
        state=StateOut(paused=schedule.state.paused, note=schedule.state.note),
        spec=SpecOut.model_validate(spec_to_dict(current.spec)),
        policy=PolicyOut.model_validate(policy_to_dict(current.policy)),
        target=TargetOut.model_validate(target_to_dict(current.target)),
        payload=dict(current.payload),
        next_occurrences=[occurrence_out(slot, local) for slot in upcoming],
        next_due=_instant(schedule.next_due),
        created_at=format_instant(schedule.created_at),
        updated_at=format_instant(schedule.updated_at),
        deleted_at=_instant(schedule.deleted_at),
        webhook_secret=webhook_secret,
        quarantine=None
        if (q := schedule.quarantine) is None
        else QuarantineOut(reason=q.reason, component=q.component.value, at=format_instant(q.at)),
    )


def run_out(
    run: Run, spec: ScheduleSpec | None, local: Callable[[ScheduleSpec, datetime], datetime]
) -> RunOut:
    """A run; ``local`` is its instant in its version's zone (UTC when the version is gone)."""
    shown = run.scheduled_at if spec is None else local(spec, run.scheduled_at)
    return RunOut(
        occurrence_id=run.occurrence_id,
        schedule_id=run.schedule_id,
        version=run.version,
        status=run.status.value,
        kind=run.kind.value,
        attempts=run.attempts,
        scheduled_at=format_instant(run.scheduled_at),
        admitted_at=_instant(run.admitted_at),
        started_at=_instant(run.started_at),
        finished_at=_instant(run.finished_at),
        local=shown.isoformat(),
        reason=run.reason,
        result=None if run.result is None else dict(run.result),
        progress=None if run.progress is None else dict(run.progress),
    )
