"""Deployment settings: parsed once from the environment where a process starts (a
handler, ``duetime local``), and what the composition root builds the application from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapters import definitions as d
from domain.alerts import DEFAULT_MIN_INTERVAL
from service.planning.surge import DEFAULT_SURGE_MIN

if TYPE_CHECKING:  # the tick and the watchdog, which read these settings, deliver nothing
    from adapters.targets.addresses import AddressPolicy


class Settings(BaseModel):
    """What a deployment decides. Defaults suit the AWS stack; the local stack overrides."""

    model_config = ConfigDict(frozen=True)

    schedules_table: str = ""
    occurrences_table: str = ""
    leases_table: str = ""
    delivery_queue_url: str = ""
    delivery_dlq_url: str = ""
    shards: int = Field(default=16, ge=1, le=1024)
    bucket_s: int = Field(default=60, ge=1, le=3600)
    lookahead_s: int = Field(default=90, ge=0, le=7 * 86400)
    # How long ``run_tick`` repeats passes; the Lambda handler runs one pass
    # per invocation, and the stack sizes the tick's timeout from it.
    tick_budget_s: float = Field(default=50.0, ge=0)
    lease_ttl_s: float = Field(default=30.0, gt=0, le=3600)
    allow_private_targets: bool = False
    # The worker function the tick starts drains of (service/planning/surge.py), and the
    # intents due in one second that earn a surge. No name: no surges.
    worker_function: str = ""
    surge_min: int = Field(default=DEFAULT_SURGE_MIN, ge=1)
    # Whether a pass with time left in its budget plans early (seeds and crowds
    # beyond the lookahead; service/planning/early.py), and the schedules next
    # due at one instant that make a crowd (None: ``surge_min``; a number above
    # any instant's turns crowds off). Off unless set: the stack sets it (on by
    # default); the local store keeps no seeds apart nor a chain to plan early.
    plan_early: bool = False
    crowd_min: int | None = Field(default=None, ge=1)
    # Webhook signing secrets (adapters.secrets.aws_secret_store): items of the
    # table ``secrets_table`` ("dynamodb", reading the SSM parameters and then
    # the Secrets Manager secrets stored before), SSM parameters
    # /<prefix without its slashes>/<schedule_id> (reading Secrets Manager
    # <prefix><schedule_id> for ones stored before), or Secrets Manager alone.
    # The stack always sets the store (its default is "dynamodb", with the
    # table); the default here, "ssm", is for what runs without the stack's
    # environment (the emulator, tests), which has no secrets table.
    secrets_prefix: str = "duetime/webhooks/"
    secret_store: Literal["dynamodb", "ssm", "ssm-intelligent-tiering", "secretsmanager"] = "ssm"
    secrets_table: str = ""
    # How long the local (SQLite) store keeps finished runs and dead letters
    # (`duetime local --retention`); the AWS tables expire theirs by TTL after
    # the same 90 days.
    history_retention_s: int = Field(default=90 * 86400, ge=3600, le=3650 * 86400)
    # The watchdog's notification channel on AWS: the alarm topic (none: no
    # messages per schedule), and the least time between two about one schedule.
    alert_topic_arn: str = ""
    alert_min_interval_s: int = Field(
        default=int(DEFAULT_MIN_INTERVAL.total_seconds()), ge=1, le=7 * 86400
    )

    @model_validator(mode="after")
    def _dynamodb_secrets_need_their_table(self) -> Settings:
        if self.secret_store == "dynamodb" and not self.secrets_table:
            raise ValueError(
                f"secrets_table: the secret store dynamodb needs its table's name "
                f"({d.ENV_SECRETS_TABLE})"
            )
        return self

    def address_policy(self) -> AddressPolicy:
        """The webhook address rule of a deployment on AWS: the worker's at each
        delivery and the API's at each save (the local stack's is
        ``AddressPolicy.local()``)."""
        from adapters.targets.addresses import AddressPolicy

        return AddressPolicy.from_settings(self.allow_private_targets)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        pairs = {
            "schedules_table": d.SCHEDULES.env_var,
            "occurrences_table": d.OCCURRENCES.env_var,
            "leases_table": d.LEASES.env_var,
            "delivery_queue_url": d.DELIVERY_QUEUE.env_var,
            "delivery_dlq_url": d.DELIVERY_QUEUE.dlq_env_var,
            "shards": d.ENV_SHARDS,
            "bucket_s": d.ENV_BUCKET_S,
            "lookahead_s": d.ENV_LOOKAHEAD_S,
            "tick_budget_s": d.ENV_TICK_BUDGET_S,
            "lease_ttl_s": "DUETIME_LEASE_TTL_S",
            "allow_private_targets": d.ENV_ALLOW_PRIVATE_TARGETS,
            "worker_function": d.ENV_WORKER_FUNCTION,
            "surge_min": d.ENV_SURGE_MIN,
            "plan_early": d.ENV_PLAN_EARLY,
            "crowd_min": d.ENV_CROWD_MIN,
            "secrets_prefix": d.ENV_SECRETS_PREFIX,
            "secret_store": d.ENV_SECRET_STORE,
            "secrets_table": d.ENV_SECRETS_TABLE,
            "alert_topic_arn": d.ENV_ALERT_TOPIC_ARN,
            "alert_min_interval_s": d.ENV_ALERT_MIN_INTERVAL_S,
        }
        return cls.model_validate({field: env[key] for field, key in pairs.items() if key in env})
