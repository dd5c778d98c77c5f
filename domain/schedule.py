"""A saved schedule: its versions, its policy and its state.

A schedule is the user's saved preference. Every edit of its spec, policy,
target or payload writes a new, immutable ``ScheduleVersion`` (N+1); earlier
versions stay readable forever, because an occurrence always runs with the
parameters of the version it was created under. Pausing and resuming change
the ``ScheduleState``, not the version.

The policy says how occurrences behave when things are not on time:

- ``overdue``: what to do with an occurrence found after its instant has
  passed (a dispatcher was down, or a schedule was materialized late):
  ``catch_up_all`` admits every missed occurrence, oldest first;
  ``latest_only`` admits only the most recent one and records the rest as
  skipped (superseded); ``expire`` admits an occurrence only while it is late
  by at most ``catchup_window`` and records it as expired after that.
  The default is ``latest_only``: after an outage a cron job runs once, as a
  Kubernetes CronJob does, and nothing is lost silently (the rest are records).
- ``overlap``: ``allow_all`` (the default) lets occurrences of one schedule
  run side by side; ``skip`` records an occurrence as skipped (overlap) while
  the previous one is still running.
- ``dst``: how wall times in a daylight-saving gap or fold become instants.
- ``retry``: attempts and backoff for transient delivery failures.
- ``run_timeout``: how long one attempt may take before it counts as failed.
- ``grace``: how late a success may be before the watchdog calls the
  schedule overdue (``None``: the expected interval, at least two minutes,
  at most the run timeout plus two minutes; see ``domain.watch``).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Final

from domain.backoff import MAX_DELAY_S, RetryPolicy
from domain.errors import InvalidSchedule, parse_choice
from domain.run import build
from domain.spec import (
    DstPolicy,
    ScheduleSpec,
    WrittenSpec,
    parse_dst_policy,
    parse_spec,
    saved_spec,
    spec_to_dict,
)
from domain.targets import Target, keep_header_values, parse_target, target_to_dict
from domain.text import check_text
from domain.timeparse import format_duration, parse_duration, parse_instant

MAX_NAME_CHARS: Final = 200
MIN_RUN_TIMEOUT: Final = timedelta(seconds=1)
MAX_RUN_TIMEOUT: Final = timedelta(days=1)
MAX_CATCHUP_WINDOW: Final = timedelta(days=366)


class Overdue(enum.StrEnum):
    CATCH_UP_ALL = "catch_up_all"
    LATEST_ONLY = "latest_only"
    EXPIRE = "expire"


class Overlap(enum.StrEnum):
    SKIP = "skip"
    ALLOW_ALL = "allow_all"


# A schedule's retries, unless it says otherwise: five attempts, 1 s base, 30 s cap.
SCHEDULE_RETRY_DEFAULT: Final = RetryPolicy(max_attempts=5, base_s=1.0, cap_s=30.0)


@dataclass(frozen=True)
class SchedulePolicy:
    overdue: Overdue = Overdue.LATEST_ONLY
    catchup_window: timedelta | None = None
    dst: DstPolicy = field(default_factory=DstPolicy)
    overlap: Overlap = Overlap.ALLOW_ALL
    retry: RetryPolicy = SCHEDULE_RETRY_DEFAULT
    run_timeout: timedelta = timedelta(minutes=15)
    grace: timedelta | None = None

    def __post_init__(self) -> None:
        if self.overdue is Overdue.EXPIRE:
            if self.catchup_window is None:
                raise InvalidSchedule(
                    "policy.catchup_window", "is required when policy.overdue is 'expire'"
                )
        elif self.catchup_window is not None:
            raise InvalidSchedule(
                "policy.catchup_window", "only applies when policy.overdue is 'expire'"
            )
        if self.catchup_window is not None and not (
            timedelta(0) <= self.catchup_window <= MAX_CATCHUP_WINDOW
        ):
            raise InvalidSchedule("policy.catchup_window", "must be between PT0S and P366D")
        if not MIN_RUN_TIMEOUT <= self.run_timeout <= MAX_RUN_TIMEOUT:
            raise InvalidSchedule("policy.run_timeout", "must be between PT1S and P1D")
        if self.grace is not None and not timedelta(0) <= self.grace <= MAX_CATCHUP_WINDOW:
            raise InvalidSchedule("policy.grace", "must be between PT0S and P366D")


@dataclass(frozen=True)
class ScheduleState:
    paused: bool = False
    note: str | None = None


class QuarantineComponent(enum.StrEnum):
    """The part of duetime that could not handle a schedule."""

    PLAN = "plan"
    DISPATCH = "dispatch"
    WATCH = "watch"


# The reason of the records a quarantine closes (as a pause closes them as "paused").
QUARANTINED: Final = "quarantined"
MAX_QUARANTINE_REASON_CHARS: Final = 500


@dataclass(frozen=True)
class Quarantine:
    """Why duetime stopped planning, dispatching and watching one schedule.

    Set when computing a schedule's slots, judging its occurrences or watching
    it raised: that schedule is set aside so that every other one carries on.
    A new version (an edit) clears it, and so does a resume after a pause.
    """

    reason: str  # the error, as text
    component: QuarantineComponent
    at: datetime

    def __post_init__(self) -> None:
        if self.at.tzinfo is None:
            raise ValueError("at must be aware")

    @classmethod
    def of(cls, error: BaseException, component: QuarantineComponent, at: datetime) -> Quarantine:
        """The quarantine an error causes, its message bounded in length."""
        return cls(error_text(error), component, at.astimezone(UTC))


def error_text(error: BaseException) -> str:
    """An error as a quarantine or a verdict records it: its type and message, bounded."""
    text = f"{type(error).__name__}: {error}"
    if len(text) > MAX_QUARANTINE_REASON_CHARS:
        text = text[: MAX_QUARANTINE_REASON_CHARS - 3] + "..."
    return text


def quarantine_to_text(quarantine: Quarantine | None) -> str | None:
    """The stored form of a quarantine: JSON text, None when healthy."""
    if quarantine is None:
        return None
    return dumps(
        {
            "reason": quarantine.reason,
            "component": quarantine.component.value,
            "at": quarantine.at.astimezone(UTC).isoformat(),
        }
    )


def quarantine_from_text(text: str | None) -> Quarantine | None:
    if text is None:
        return None
    data = json.loads(text)
    return Quarantine(
        str(data["reason"]),
        QuarantineComponent(data["component"]),
        datetime.fromisoformat(data["at"]).astimezone(UTC),
    )


_LATEST: Final = datetime.max.replace(tzinfo=UTC)
_EARLIEST: Final = datetime.min.replace(tzinfo=UTC)


def add_clamped(instant: datetime, delta: timedelta) -> datetime:
    """``instant + delta``, held at the first or last representable instant
    (year 1, year 9999) instead of raising ``OverflowError``: an instant that
    close to the end of time only ever meets comparisons."""
    try:
        return instant + delta
    except OverflowError:
        return _LATEST if delta > timedelta(0) else _EARLIEST


@dataclass(frozen=True)
class ScheduleVersion:
    """The parameters of one version of a schedule. Immutable, kept forever."""

    schedule_id: str
    version: int
    name: str
    spec: ScheduleSpec
    policy: SchedulePolicy
    target: Target
    payload: Mapping[str, Any]
    created_at: datetime

    def __post_init__(self) -> None:
        if self.version < 1:
            raise ValueError("version starts at 1")
        if self.created_at.tzinfo is None:
            raise ValueError("created_at must be aware")

    @classmethod
    def of(cls, **values: Any) -> ScheduleVersion:
        """``ScheduleVersion(**values)``, cheaper (see ``domain.run.build``): a
        store reads one per schedule it plans."""
        return build(cls, values)


@dataclass(frozen=True)
class Schedule:
    """The head of a schedule: its current version, state and planning position.

    ``next_due`` is the instant of the first slot not materialized yet (None
    when the spec has no more slots, or the schedule is deleted);
    ``last_materialized_at`` the instant of the latest materialized one.
    A quarantined schedule keeps its ``next_due`` but is not planned, dispatched
    or watched until an edit or a resume clears the quarantine.
    """

    schedule_id: str
    version: int
    state: ScheduleState
    current: ScheduleVersion
    next_due: datetime | None
    last_materialized_at: datetime | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None
    quarantine: Quarantine | None = None  # set aside after an error (see Quarantine)

    def __post_init__(self) -> None:
        if self.current.version != self.version or self.current.schedule_id != self.schedule_id:
            raise ValueError("current must be this schedule's version")

    @classmethod
    def of(cls, **values: Any) -> Schedule:
        """``Schedule(**values)``, cheaper (see ``domain.run.build``): a store
        reads one per schedule it plans."""
        return build(cls, values)

    @property
    def active(self) -> bool:
        return not self.state.paused and self.deleted_at is None

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None


# --- the JSON form of a policy ----------------------------------------------------

_POLICY_FIELDS: Final = frozenset(
    {"overdue", "catchup_window", "dst_gap", "dst_fold", "overlap", "retry", "run_timeout", "grace"}
)
_RETRY_FIELDS: Final = frozenset({"max_attempts", "base", "cap"})


def parse_policy(data: object) -> SchedulePolicy:
    """A policy from its JSON object (a stored one: ``policy_to_dict``); every
    field is optional. Refusals name the field (``policy.overdue``...)."""
    if data is None:
        return SchedulePolicy()
    if not isinstance(data, Mapping):
        raise InvalidSchedule("policy", "must be an object")
    unknown = sorted(str(key) for key in data if key not in _POLICY_FIELDS)
    if unknown:
        raise InvalidSchedule(f"policy.{unknown[0]}", "is not a policy field")
    fields = dict(data)
    fields["retry"] = _parse_retry(fields.get("retry"))
    return policy_of(**fields)


def policy_of(
    *,
    overdue: str | None = None,
    catchup_window: str | None = None,
    dst_gap: str | None = None,
    dst_fold: str | None = None,
    overlap: str | None = None,
    retry: RetryPolicy | None = None,
    run_timeout: str | None = None,
    grace: str | None = None,
) -> SchedulePolicy:
    """The policy a user wrote, its fields as JSON values (None: the default).

    Durations are ISO 8601 (``"PT1H"``). Refusals name the field
    (``policy.overdue``, ``policy.run_timeout``...).
    """
    window = _optional_duration(catchup_window, "policy.catchup_window")
    timeout = _optional_duration(run_timeout, "policy.run_timeout")
    return SchedulePolicy(
        overdue=parse_choice(Overdue, overdue, Overdue.LATEST_ONLY, "policy.overdue"),
        catchup_window=window,
        dst=parse_dst_policy(dst_gap, dst_fold),
        overlap=parse_choice(Overlap, overlap, Overlap.ALLOW_ALL, "policy.overlap"),
        retry=SCHEDULE_RETRY_DEFAULT if retry is None else retry,
        run_timeout=timedelta(minutes=15) if timeout is None else timeout,
        grace=_optional_duration(grace, "policy.grace"),
    )


def policy_to_dict(policy: SchedulePolicy) -> dict[str, Any]:
    """The JSON form of a policy, defaults included; ``parse_policy`` reads it back."""
    return {
        "overdue": policy.overdue.value,
        "catchup_window": _fmt(policy.catchup_window),
        "dst_gap": policy.dst.gap.value,
        "dst_fold": policy.dst.fold.value,
        "overlap": policy.overlap.value,
        "retry": {
            "max_attempts": policy.retry.max_attempts,
            "base": format_duration(timedelta(seconds=policy.retry.base_s)),
            "cap": format_duration(timedelta(seconds=policy.retry.cap_s)),
        },
        "run_timeout": format_duration(policy.run_timeout),
        "grace": _fmt(policy.grace),
    }


def _fmt(value: timedelta | None) -> str | None:
    return None if value is None else format_duration(value)


def _parse_retry(data: object) -> RetryPolicy | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise InvalidSchedule("policy.retry", "must be an object")
    unknown = sorted(str(key) for key in data if key not in _RETRY_FIELDS)
    if unknown:
        raise InvalidSchedule(f"policy.retry.{unknown[0]}", "is not a retry setting")
    return retry_of(**data)


def retry_of(
    *, max_attempts: int | None = None, base: str | None = None, cap: str | None = None
) -> RetryPolicy:
    """The retries a user wrote (``policy.retry``): base and cap as ISO 8601
    durations; a base above the default cap raises the cap to it."""
    default = SCHEDULE_RETRY_DEFAULT
    base_d = _optional_duration(base, "policy.retry.base")
    cap_d = _optional_duration(cap, "policy.retry.cap")
    base_s = default.base_s if base_d is None else base_d.total_seconds()
    cap_s = default.cap_s if cap_d is None else cap_d.total_seconds()
    if base_d is not None and cap_d is None and base_s > cap_s:
        cap_s = min(base_s, MAX_DELAY_S)
    try:
        return RetryPolicy(
            max_attempts=default.max_attempts if max_attempts is None else max_attempts,
            base_s=base_s,
            cap_s=cap_s,
        )
    except InvalidSchedule as error:
        # RetryPolicy names its fields base_s/cap_s; the API calls them base/cap.
        name = error.field.removesuffix("_s")
        raise InvalidSchedule(name, error.reason) from None


def _optional_duration(value: object, name: str) -> timedelta | None:
    if value is None:
        return None
    duration = parse_duration(value, name)
    if duration < timedelta(0):
        raise InvalidSchedule(name, "must not be negative")
    return duration


def check_name(name: object) -> str:
    """A schedule's name: 1-200 characters of text."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidSchedule("name", "is required: a short text such as 'sales report'")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidSchedule("name", f"must be at most {MAX_NAME_CHARS} characters")
    return check_text(name, "name")


def check_payload(payload: object) -> dict[str, Any]:
    """A payload is a JSON object (or absent, which is an empty one)."""
    if payload is None:
        return {}
    if not isinstance(payload, Mapping):
        raise InvalidSchedule("payload", "must be a JSON object")
    return dict(payload)


@dataclass(frozen=True)
class Definition:
    """A schedule as a user writes it, every part checked: what a create or
    an edit saves as a version.

    ``kept_headers`` names the webhook headers an edit sent as null: they keep
    the value the schedule has (``domain.targets.keep_header_values``).
    """

    name: str
    spec: WrittenSpec
    target: Target
    policy: SchedulePolicy = field(default_factory=SchedulePolicy)
    payload: Mapping[str, Any] = field(default_factory=dict)
    kept_headers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_name(self.name)
        check_payload(self.payload)

    def version(
        self, schedule_id: str, number: int, saved_at: datetime, current: Target | None
    ) -> ScheduleVersion:
        """Version ``number`` of the schedule, saved at ``saved_at`` over a
        schedule whose target is ``current`` (None for a new one)."""
        return ScheduleVersion(
            schedule_id=schedule_id,
            version=number,
            name=self.name,
            spec=saved_spec(self.spec, saved_at),
            policy=self.policy,
            target=keep_header_values(self.target, self.kept_headers, current),
            payload=dict(self.payload),
            created_at=saved_at,
        )


def spec_from_stored(data: Mapping[str, Any]) -> ScheduleSpec:
    """Read back a spec written by ``spec_to_dict`` (an ``every`` keeps its anchor)."""
    fields = dict(data)
    anchor = fields.pop("anchor_at", None)
    if anchor is None:
        if "every" in fields:
            raise InvalidSchedule("spec.anchor_at", "a stored every spec keeps its anchor")
        # cron and at specs do not read the creation instant.
        return parse_spec(fields, created_at=datetime(1970, 1, 1, tzinfo=UTC))
    return parse_spec(fields, created_at=parse_instant(anchor, "spec.anchor_at"))


def version_to_dict(version: ScheduleVersion) -> dict[str, Any]:
    """The stored form of a version's parameters (JSON-ready)."""
    return {
        "name": version.name,
        "spec": spec_to_dict(version.spec),
        "policy": policy_to_dict(version.policy),
        "target": target_to_dict(version.target),
        "payload": dict(version.payload),
    }


def version_from_dict(
    schedule_id: str, version: int, created_at: datetime, data: Mapping[str, Any]
) -> ScheduleVersion:
    return ScheduleVersion(
        schedule_id=schedule_id,
        version=version,
        name=str(data["name"]),
        spec=spec_from_stored(data["spec"]),
        policy=parse_policy(data["policy"]),
        target=parse_target(data["target"]),
        payload=dict(data.get("payload") or {}),
        created_at=created_at,
    )


# Stored specs, policies and targets are read back far more often than they are
# written, and many schedules share one ("0 9 * * MON-FRI"); parsing is pure,
# so the parsed values are kept by their stored JSON text.


@lru_cache(maxsize=4096)
def stored_spec(text: str) -> ScheduleSpec:
    return spec_from_stored(json.loads(text))


@lru_cache(maxsize=4096)
def stored_policy(text: str) -> SchedulePolicy:
    return parse_policy(json.loads(text))


@lru_cache(maxsize=4096)
def stored_target(text: str) -> Target:
    return parse_target(json.loads(text))


def dumps(value: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces): equal values, equal text."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
