"""Deployment settings, read once from CDK context (``-c duetime:<name>=<value>``).

Every setting has a default so that a plain ``cdk synth`` works. Values given
on the command line arrive as strings; values in cdk.json arrive as JSON. Both
are accepted. docs/deploy.md lists each setting with its default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from adapters.secrets import DYNAMODB, SECRETS_MANAGER, STORE_KINDS
from domain.alerts import DEFAULT_MIN_INTERVAL
from service.planning.surge import DEFAULT_SURGE_MIN

PREFIX: Final = "duetime:"
# Settings of earlier releases that mean nothing now: refused by name, so a
# deployment that relied on one learns it at synthesis, not from behaviour.
RETIRED: Final = {
    "planBlockS": "the plan block is gone: a pass fills up to its lookahead",
    "directWindowS": "the tick has one admission mode, queued ahead",
}

# Target ARNs the worker may call. "*" is the documented wildcard: any Lambda
# function, SQS queue or EventBridge bus in any account the resource policies
# allow. The default is none: only webhook targets work until ARNs are listed.
WILDCARD: Final = "*"
TARGET_SERVICES: Final = ("lambda", "sqs", "events", "kms")

_ARN = re.compile(r"^arn:[a-z0-9-]+:(?P<service>[a-z0-9-]+):[a-z0-9-]*:[0-9]*:.+$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
_T = TypeVar("_T")
# What Lambda accepts as an SQS event source's MaximumConcurrency.
WORKER_MAX_CONCURRENCY: Final = (2, 1000)


class SettingError(ValueError):
    """A context setting has a value that cannot be used; the message names it."""


@dataclass(frozen=True)
class Settings:
    stack_name: str = "Duetime"
    # Tables keep their data when the stack is destroyed (deletion protection
    # on, removal policy RETAIN). Set false in a sandbox to destroy cleanly.
    retain: bool = True
    alarm_email: str = ""
    dispatch_lag_p99_threshold_s: int = 60
    # Per schedule, the least time between two messages about its verdict on
    # the alarm topic (domain/alerts.py): a change inside it is sent when it ends.
    alert_min_interval_s: int = int(DEFAULT_MIN_INTERVAL.total_seconds())
    # The StartLatenessHigh alarm: p99 of started_at - scheduled_at of first
    # attempts, over two 5-minute periods. A run aims to start within a second.
    start_lateness_p99_threshold_s: int = 10
    target_arns: tuple[str, ...] = ()
    allow_private_targets: bool = False
    secrets_prefix: str = ""  # empty: "duetime/<stack name>/webhooks/"
    # Where webhook signing secrets live (adapters.secrets.STORE_KINDS): a
    # DynamoDB table of the stack's (one read unit a read, no KMS request),
    # SSM standard parameters (no fee, 10,000 an account and region, a KMS
    # request a read), SSM with intelligent tiering (advanced parameters past
    # those), or Secrets Manager.
    secret_store: str = DYNAMODB
    shards: int = 16
    bucket_s: int = 60
    lookahead_s: int = 90
    tick_budget_s: int = 50
    # The tick's memory, hence its share of a vCPU (a full one at 1769 MB): a
    # planning pass's CPU is what bounds how many occurrences one pass plans.
    tick_memory_mb: int = 512
    # Reserved concurrency of the tick. 0 leaves it unreserved, for accounts
    # whose concurrency quota is still the new-account default of 10.
    tick_reserved_concurrency: int = 2
    # Intents due in one second that earn a surge: drains of the worker started
    # before the instant (service/planning/surge.py). 0 turns surges off.
    surge_min: int = DEFAULT_SURGE_MIN
    # Whether the tick plans early with the time its budget leaves: seeds up to
    # 300 s beyond the lookahead, and the chain up to the latest crowd there
    # (service/planning/early.py).
    plan_early: bool = True
    # Schedules next due at one instant that make a crowd the tick plans early
    # (0: as many as surgeMin, or 200 with surges off).
    crowd_min: int = 0
    # MaximumConcurrency of the worker's queue trigger: at most this many
    # worker invocations take batches from the delivery queue at once, so a
    # burst cannot take the account's whole unreserved concurrency (surge
    # drains are invoked apart from it). Lambda's range is 2 to 1000.
    worker_max_concurrency: int = 100
    api_throttle_rate: int = 50
    api_throttle_burst: int = 100
    manage_api_gateway_account: bool = True
    log_level: str = "INFO"
    log_retention_days: int = 30
    asset_dir: str = ""  # empty: build/lambda in the project

    @property
    def crowd(self) -> int:
        """The schedules at one instant the tick plans early as a crowd: crowdMin,
        else surgeMin, else (surges off) the default surgeMin."""
        return self.crowd_min or self.surge_min or DEFAULT_SURGE_MIN

    def __post_init__(self) -> None:
        if not _STACK_NAME.match(self.stack_name):
            raise SettingError(f"{PREFIX}stackName: {self.stack_name!r} is not a stack name")
        if self.alarm_email and not _EMAIL.match(self.alarm_email):
            raise SettingError(f"{PREFIX}alarmEmail: {self.alarm_email!r} is not an address")
        if self.log_level not in _LOG_LEVELS:
            raise SettingError(f"{PREFIX}logLevel: must be one of {', '.join(_LOG_LEVELS)}")
        if not 1 <= self.tick_budget_s <= 55:
            # The tick fires every minute; one pass must end before the next.
            raise SettingError(f"{PREFIX}tickBudgetS: must be between 1 and 55 seconds")
        if not 128 <= self.tick_memory_mb <= 10240:
            # Lambda's range of memory sizes.
            raise SettingError(f"{PREFIX}tickMemoryMB: must be between 128 and 10240 MB")
        if not 60 <= self.lookahead_s <= 900:
            # The tick plans once a minute what falls due before the next pass and
            # queues it with SQS's DelaySeconds, at most 15 minutes.
            raise SettingError(f"{PREFIX}lookaheadS: must be between 60 and 900 seconds")
        if self.tick_reserved_concurrency < 0:
            raise SettingError(f"{PREFIX}tickReservedConcurrency: must be 0 or more")
        if (
            not WORKER_MAX_CONCURRENCY[0]
            <= self.worker_max_concurrency
            <= WORKER_MAX_CONCURRENCY[1]
        ):
            raise SettingError(
                f"{PREFIX}workerMaxConcurrency: must be between {WORKER_MAX_CONCURRENCY[0]} and "
                f"{WORKER_MAX_CONCURRENCY[1]} (Lambda's range for a queue trigger)"
            )
        if self.surge_min < 0:
            raise SettingError(f"{PREFIX}surgeMin: must be 0 (no surges) or more")
        if self.crowd_min < 0:
            raise SettingError(f"{PREFIX}crowdMin: must be 0 (as surgeMin) or more")
        for name, value in (
            ("shards", self.shards),
            ("bucketS", self.bucket_s),
            ("lookaheadS", self.lookahead_s),
            ("dispatchLagP99ThresholdS", self.dispatch_lag_p99_threshold_s),
            ("alertMinIntervalS", self.alert_min_interval_s),
            ("startLatenessP99ThresholdS", self.start_lateness_p99_threshold_s),
            ("apiThrottleRate", self.api_throttle_rate),
            ("apiThrottleBurst", self.api_throttle_burst),
            ("logRetentionDays", self.log_retention_days),
        ):
            if value < 1:
                raise SettingError(f"{PREFIX}{name}: must be a positive integer")
        if self.secrets_prefix and not re.match(r"^[A-Za-z0-9/_+=.@-]+/$", self.secrets_prefix):
            raise SettingError(
                f"{PREFIX}secretsPrefix: use letters, digits and /_+=.@- and end with '/'"
            )
        if self.secret_store not in STORE_KINDS:
            raise SettingError(
                f"{PREFIX}secretStore: {self.secret_store!r} is not one of {', '.join(STORE_KINDS)}"
            )
        if self.secret_store != SECRETS_MANAGER:
            # SSM names are narrower than Secrets Manager's: no +=@, and no first
            # segment starting aws or ssm. The dynamodb store reads the parameters
            # stored before under the same path.
            path = self.webhook_secrets_prefix.strip("/")
            if not re.fullmatch(r"[A-Za-z0-9/_.-]+", path) or "//" in path:
                raise SettingError(
                    f"{PREFIX}secretsPrefix: with secretStore {self.secret_store} use letters, "
                    "digits and /_.- (SSM parameter names)"
                )
            if path.split("/")[0].lower().startswith(("aws", "ssm")):
                raise SettingError(
                    f"{PREFIX}secretsPrefix: with secretStore {self.secret_store} it cannot "
                    "start with aws or ssm (SSM keeps those names)"
                )
        for arn in self.target_arns:
            if arn == WILDCARD:
                if len(self.target_arns) > 1:
                    raise SettingError(f"{PREFIX}targetArns: '*' cannot be combined with ARNs")
                continue
            match = _ARN.match(arn)
            if match is None or match["service"] not in TARGET_SERVICES:
                raise SettingError(
                    f"{PREFIX}targetArns: {arn!r} is not a Lambda, SQS, EventBridge or KMS ARN"
                )

    @property
    def webhook_secrets_prefix(self) -> str:
        return self.secrets_prefix or f"duetime/{self.stack_name}/webhooks/"

    @property
    def targets_wildcard(self) -> bool:
        return self.target_arns == (WILDCARD,)

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> Settings:
        """Read every setting through ``get`` (``node.try_get_context``)."""

        def read(name: str, parse: Callable[[str, Any], _T], default: _T) -> _T:
            value = get(PREFIX + name)
            return default if value is None else parse(PREFIX + name, value)

        for name, why in RETIRED.items():
            if get(PREFIX + name) is not None:
                raise SettingError(f"{PREFIX}{name}: no longer a setting ({why}); remove it")
        d = cls()
        return cls(
            stack_name=read("stackName", _str, d.stack_name),
            retain=read("retain", _bool, d.retain),
            alarm_email=read("alarmEmail", _str, d.alarm_email),
            dispatch_lag_p99_threshold_s=read(
                "dispatchLagP99ThresholdS", _int, d.dispatch_lag_p99_threshold_s
            ),
            alert_min_interval_s=read("alertMinIntervalS", _int, d.alert_min_interval_s),
            start_lateness_p99_threshold_s=read(
                "startLatenessP99ThresholdS", _int, d.start_lateness_p99_threshold_s
            ),
            target_arns=read("targetArns", _str_list, d.target_arns),
            allow_private_targets=read("allowPrivateTargets", _bool, d.allow_private_targets),
            secrets_prefix=read("secretsPrefix", _str, d.secrets_prefix),
            secret_store=read("secretStore", _str, d.secret_store).lower(),
            shards=read("shards", _int, d.shards),
            bucket_s=read("bucketS", _int, d.bucket_s),
            lookahead_s=read("lookaheadS", _int, d.lookahead_s),
            tick_budget_s=read("tickBudgetS", _int, d.tick_budget_s),
            tick_memory_mb=read("tickMemoryMB", _int, d.tick_memory_mb),
            tick_reserved_concurrency=read(
                "tickReservedConcurrency", _int, d.tick_reserved_concurrency
            ),
            surge_min=read("surgeMin", _int, d.surge_min),
            plan_early=read("planEarly", _bool, d.plan_early),
            crowd_min=read("crowdMin", _int, d.crowd_min),
            worker_max_concurrency=read("workerMaxConcurrency", _int, d.worker_max_concurrency),
            api_throttle_rate=read("apiThrottleRate", _int, d.api_throttle_rate),
            api_throttle_burst=read("apiThrottleBurst", _int, d.api_throttle_burst),
            manage_api_gateway_account=read(
                "manageApiGatewayAccount", _bool, d.manage_api_gateway_account
            ),
            log_level=read("logLevel", _str, d.log_level).upper(),
            log_retention_days=read("logRetentionDays", _int, d.log_retention_days),
            asset_dir=read("assetDir", _str, d.asset_dir),
        )


def _str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise SettingError(f"{name}: expected a string, got {value!r}")
    return value.strip()


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SettingError(f"{name}: expected true or false, got {value!r}")


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise SettingError(f"{name}: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value)
    raise SettingError(f"{name}: expected an integer, got {value!r}")


def _str_list(name: str, value: Any) -> tuple[str, ...]:
    """A JSON list, or (on the command line) a comma-separated string."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise SettingError(f"{name}: not a JSON list: {exc}") from None
        else:
            value = [part for part in (p.strip() for p in text.split(",")) if part]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingError(f"{name}: expected a list of strings, got {value!r}")
    return tuple(v.strip() for v in value)
