"""The JSON the HTTP API writes, as pydantic models, and the functions that
build them from domain values (explicitly: a domain value never dumps itself).

Instants are UTC ISO 8601 strings ending in ``Z``; ``local`` times carry
their offset. The request models are ``handlers.api_models``,
``handlers.api_target`` and ``handlers.api_bodies``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from domain.run import AttemptRecord, Run, is_planned, shown_status
from domain.schedule import Schedule, ScheduleVersion, policy_to_dict
from domain.spec import ScheduleSpec, Slot, spec_to_dict
from domain.targets import Target, target_to_dict
from domain.timeparse import (
    format_instant,
)
from service.overview import ScheduleView
from service.run_views import DeadLetter
from service.schedules import local_time

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


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- responses --------------------------------------------------------------------


class ErrorDetail(_Out):
    code: str = Field(examples=["validation_error"])
    message: str
    field: str | None = Field(default=None, examples=["spec.cron"])
    deleted_at: str | None = Field(
        default=None,
        description="only in a schedule_deleted error: when the schedule was deleted",
        examples=["2026-12-01T09:00:00Z"],
    )


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

    type: Literal["webhook", "sqs", "lambda", "eventbridge", "command"]
    url: str | None = None
    headers: dict[str, None] | None = Field(
        default=None,
        description=(
            "webhook: the names of its extra headers, each with null: their values "
            "(often credentials) are never shown. An edit that sends a header back "
            "as null keeps its value"
        ),
    )
    timeout_s: float | None = None
    queue_url: str | None = None
    message_group_id: str | None = None
    function_arn: str | None = None
    invocation_type: Literal["Event", "RequestResponse"] | None = None
    event_bus_name: str | None = None
    source: str | None = None
    detail_type: str | None = None
    job: str | None = None


class OccurrenceOut(_Out):
    scheduled_at: Instant
    local: LocalTime
    version: int = Field(description="the schedule version it will run under")
    dst_note: str | None = Field(
        default=None,
        description=(
            "set when its wall time falls in a daylight-saving gap or fold: what "
            "happens to it by policy.dst_gap / dst_fold"
        ),
        examples=["02:30 does not exist (clocks jumped forward); runs at the first valid time"],
    )


ScheduleStatusName = Literal["active", "paused", "ended", "deleted", "quarantined"]


class ScheduleOut(_Out):
    id: str
    name: str
    version: int
    status: ScheduleStatusName = Field(
        description=(
            "the schedule as a whole: ended when no occurrence will come (a one-off "
            "that came due, an end_at gone by); deleted, quarantined, paused, else active"
        )
    )
    state: StateOut
    spec: SpecOut
    policy: PolicyOut
    target: TargetOut
    payload: dict[str, Any]
    next_occurrences: list[OccurrenceOut] = Field(
        description="the next few occurrences not planned yet (none when paused)"
    )
    next_due: Instant | None
    created_at: Instant
    updated_at: Instant
    deleted_at: Instant | None = None
    webhook_secret: str | None = Field(
        default=None,
        description=(
            "the webhook signing secret, in the Standard Webhooks form (whsec_ and base64): "
            "only in the answer that created it, never again"
        ),
        examples=["whsec_c2VjcmV0LXNpZ25pbmcta2V5LWV4YW1wbGUtZm9yLWRvY3M="],
    )
    watch: WatchOut | None = Field(
        default=None,
        description="the watchdog's last verdict on this schedule (none before its first pass)",
    )
    quarantine: QuarantineOut | None = Field(
        default=None,
        description="why duetime set this schedule aside (null when healthy); an edit clears it",
    )
    recent_runs: list[RunOut] | None = Field(
        default=None,
        description=(
            "GET /schedules/{id} only (null elsewhere, list items included): its last 5 "
            "runs, newest first, occurrences still to come left out"
        ),
    )
    planned_under_older_versions: list[RunOut] | None = Field(
        default=None,
        description=(
            "GET /schedules/{id} only (null elsewhere): occurrences materialized under a "
            "version older than the current one and not handed to a worker yet, oldest "
            "first; they run with their own version's parameters"
        ),
    )


class QuarantineOut(_Out):
    reason: str = Field(description="the error that set the schedule aside")
    component: Literal["plan", "dispatch", "watch"]
    at: Instant


class WatchOut(_Out):
    status: Literal["ok", "late", "overdue", "paused", "ended", "unknown"] = Field(
        description="unknown: the watchdog could not judge the schedule (see error)"
    )
    checked_at: Instant
    expected_at: Instant | None = Field(
        default=None, description="the occurrence that should succeed next"
    )
    last_success_at: Instant | None = Field(
        default=None, description="scheduled_at of the newest successful run"
    )
    grace_s: float | None = None
    error: str | None = Field(default=None, description="why it could not be judged")


class ScheduleListOut(_Out):
    schedules: list[ScheduleOut]
    next_token: str | None


RunStatusName = Literal[
    "planned",
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
    attempts_log: list[AttemptOut] = Field(
        default_factory=list, description="every attempt, oldest first (from the stored log)"
    )
    late_s: float | None = Field(
        default=None,
        description="first attempt's start minus scheduled_at, in seconds (null before it)",
    )


class RunListOut(_Out):
    runs: list[RunOut]
    next_token: str | None


class BackfillOut(_Out):
    runs: list[RunOut] = Field(
        description="the occurrences this call created (with dry_run: would create, not stored)"
    )
    created: int = Field(description="how many were stored: 0 with dry_run")
    dry_run: bool


class VersionOut(_Out):
    """One saved version of a schedule, as it was written (kept forever)."""

    version: int
    created_at: Instant
    name: str
    spec: SpecOut
    policy: PolicyOut
    target: TargetOut
    payload: dict[str, Any]
    changed: list[str] = Field(
        description=(
            "the fields this version changed from the one before, sorted "
            "(empty for version 1); an every spec's anchor_at moves with each version"
        ),
        examples=[["name", "spec.cron"]],
    )


class VersionListOut(_Out):
    versions: list[VersionOut] = Field(description="oldest first")
    next_token: str | None


class HealthOut(_Out):
    status: Literal["ok"]
    time: Instant


# --- from domain values -----------------------------------------------------------


def _instant(value: datetime | None) -> str | None:
    return None if value is None else format_instant(value)


def occurrence_out(
    slot: Slot, local: Callable[[datetime], datetime], version: int, dst_note: str | None = None
) -> OccurrenceOut:
    return OccurrenceOut(
        scheduled_at=format_instant(slot.scheduled_at),
        local=local(slot.scheduled_at).isoformat(),
        version=version,
        dst_note=dst_note,
    )


def schedule_out(
    schedule: Schedule,
    upcoming: Sequence[Slot],
    local: Callable[[datetime], datetime],
    *,
    status: ScheduleStatusName,
    dst_notes: Sequence[str | None] = (),
    webhook_secret: str | None = None,
) -> ScheduleOut:
    """A schedule; ``upcoming`` run under its current version, ``dst_notes``
    (when given) say what DST does to each of them, in the same order."""
    current = schedule.current
    notes = list(dst_notes) or [None] * len(upcoming)
    return ScheduleOut(
        id=schedule.schedule_id,
        name=current.name,
        version=schedule.version,
        status=status,
        state=StateOut(paused=schedule.state.paused, note=schedule.state.note),
        spec=SpecOut.model_validate(spec_to_dict(current.spec)),
        policy=PolicyOut.model_validate(policy_to_dict(current.policy)),
        target=target_out(current.target),
        payload=dict(current.payload),
        next_occurrences=[
            occurrence_out(slot, local, schedule.version, note)
            for slot, note in zip(upcoming, notes, strict=True)
        ],
        next_due=_instant(schedule.next_due),
        created_at=format_instant(schedule.created_at),
        updated_at=format_instant(schedule.updated_at),
        deleted_at=_instant(schedule.deleted_at),
        webhook_secret=webhook_secret,
        quarantine=None
        if (q := schedule.quarantine) is None
        else QuarantineOut(reason=q.reason, component=q.component.value, at=format_instant(q.at)),
    )


def schedule_view_out(view: ScheduleView, webhook_secret: str | None = None) -> ScheduleOut:
    """A schedule as ``overview.shown`` sees it, in its zone's local times."""
    spec = view.schedule.current.spec
    return schedule_out(
        view.schedule,
        [item.slot for item in view.upcoming],
        lambda instant: local_time(spec, instant),
        status=view.status.value,
        dst_notes=[item.dst_note for item in view.upcoming],
        webhook_secret=webhook_secret,
    )


def target_out(target: Target) -> TargetOut:
    """A target as answers show it: a webhook's header names, never their values."""
    data = target_to_dict(target)
    if data.get("headers"):
        data["headers"] = dict.fromkeys(data["headers"])
    return TargetOut.model_validate(data)


def run_out(
    run: Run,
    spec: ScheduleSpec | None,
    local: Callable[[ScheduleSpec, datetime], datetime],
    now: datetime,
) -> RunOut:
    """A run; ``local`` is its instant in its version's zone (UTC when the version
    is gone). A planned run shows as ``planned``, not admitted yet."""
    shown = run.scheduled_at if spec is None else local(spec, run.scheduled_at)
    planned = is_planned(run, now)
    return RunOut(
        occurrence_id=run.occurrence_id,
        schedule_id=run.schedule_id,
        version=run.version,
        status=shown_status(run, now),
        kind=run.kind.value,
        attempts=run.attempts,
        scheduled_at=format_instant(run.scheduled_at),
        admitted_at=None if planned else _instant(run.admitted_at),
        started_at=_instant(run.started_at),
        finished_at=_instant(run.finished_at),
        local=shown.isoformat(),
        reason=run.reason,
        result=None if run.result is None else dict(run.result),
        progress=None if run.progress is None else dict(run.progress),
        attempts_log=attempts_out(run),
        late_s=None
        if run.started_at is None
        else round((run.started_at - run.scheduled_at).total_seconds(), 6),
    )


def version_out(version: ScheduleVersion, changed: Sequence[str]) -> VersionOut:
    return VersionOut(
        version=version.version,
        created_at=format_instant(version.created_at),
        name=version.name,
        spec=SpecOut.model_validate(spec_to_dict(version.spec)),
        policy=PolicyOut.model_validate(policy_to_dict(version.policy)),
        target=target_out(version.target),
        payload=dict(version.payload),
        changed=list(changed),
    )


# --- runs: attempts and dead letters -------------------------------------


class AttemptOut(_Out):
    number: int = Field(description="from 1; numbers go on across a retry")
    started_at: Instant
    finished_at: Instant | None = Field(description="null while the attempt is in flight")
    outcome: str | None = Field(
        description=(
            'how it ended: "succeeded", "failed", "transient" (failed, retried), '
            '"permanent", "accepted" (202: the job reports completion), '
            '"lost" (its worker stopped or timed out), "skipped" (a command whose job '
            "still runs); null while in flight"
        )
    )
    status_code: int | None = Field(
        description="the target's HTTP status, where the store kept it (the latest attempt)"
    )
    error: str | None
    wait_s: float | None = Field(
        description="seconds from this attempt's end to the next one's start (null for the last)"
    )


def attempts_out(run: Run) -> list[AttemptOut]:
    """The attempt log as served. The store keeps the target's status code once,
    in the run's ``result``, for the latest attempt: earlier ones show null."""
    log: tuple[AttemptRecord, ...] = run.attempt_log
    code = (run.result or {}).get("status_code")
    latest_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    out: list[AttemptOut] = []
    for position, attempt in enumerate(log):
        following = log[position + 1] if position + 1 < len(log) else None
        wait_s = None
        if following is not None and attempt.finished_at is not None:
            gap = (following.started_at - attempt.finished_at).total_seconds()
            wait_s = round(max(0.0, gap), 6)
        out.append(
            AttemptOut(
                number=attempt.number,
                started_at=format_instant(attempt.started_at),
                finished_at=_instant(attempt.finished_at),
                outcome=attempt.outcome,
                status_code=latest_code if following is None else None,
                error=attempt.error,
                wait_s=wait_s,
            )
        )
    return out


class DeadLetterOut(_Out):
    id: str = Field(description="the queue's message id")
    occurrence_id: str | None = Field(description="the run it was for, when the body names one")
    schedule_id: str | None
    reason: str | None = Field(description="why it was dead-lettered")
    dead_lettered_at: Instant | None
    receive_count: int
    body: str = Field(description="the message body as sent (a delivery intent, JSON)")


class DeadLetterListOut(_Out):
    dead_letters: list[DeadLetterOut]
    next_token: str | None


def dead_letter_out(letter: DeadLetter) -> DeadLetterOut:
    return DeadLetterOut(
        id=letter.id,
        occurrence_id=letter.occurrence_id,
        schedule_id=letter.schedule_id,
        reason=letter.reason,
        dead_lettered_at=_instant(letter.dead_lettered_at),
        receive_count=letter.receive_count,
        body=letter.body,
    )


RunOut.model_rebuild()
