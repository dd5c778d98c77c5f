"""Deployment settings from the environment, as the handlers read them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from adapters import definitions as d
from bootstrap.parts import tick_config
from bootstrap.settings import Settings


def test_the_tick_takes_its_windows_from_the_environment() -> None:
    settings = Settings.from_env({d.ENV_LOOKAHEAD_S: "120", d.ENV_PLAN_EARLY: "true"})
    config = tick_config(settings)
    assert config.lookahead == timedelta(seconds=120)
    assert config.reach == timedelta(seconds=420)  # planning early, 300 s beyond


def test_a_crowd_on_the_chain_is_what_a_surge_starts_for() -> None:
    assert tick_config(Settings.from_env({})).crowd_min == 200
    assert tick_config(Settings.from_env({d.ENV_SURGE_MIN: "40"})).crowd_min == 40


def test_planning_early_and_crowds_have_their_own_switches() -> None:
    on = tick_config(Settings.from_env({d.ENV_PLAN_EARLY: "true"}))
    assert on.plans_early and on.crowd_min == 200
    off = Settings.from_env({d.ENV_PLAN_EARLY: "false"})
    assert not tick_config(off).plans_early
    crowd = Settings.from_env({d.ENV_CROWD_MIN: "5000", d.ENV_SURGE_MIN: "40"})
    assert tick_config(crowd).crowd_min == 5000


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_bad_crowd_is_refused_by_name(value: str) -> None:
    with pytest.raises(ValidationError, match="crowd_min"):
        Settings.from_env({d.ENV_CROWD_MIN: value})


def test_a_crowd_of_none_is_refused() -> None:
    from service.planning.config import TickConfig

    with pytest.raises(ValueError, match="crowd_min must be at least 1, got 0"):
        TickConfig(crowd_min=0)


def test_the_secret_store_comes_from_the_environment_and_defaults_to_ssm() -> None:
    assert Settings.from_env({}).secret_store == "ssm"
    chosen = Settings.from_env({d.ENV_SECRET_STORE: "secretsmanager"})
    assert chosen.secret_store == "secretsmanager"


def test_an_unknown_secret_store_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValidationError, match="secret_store"):
        Settings.from_env({d.ENV_SECRET_STORE: "vault"})


def test_the_secrets_table_comes_from_the_environment_with_the_dynamodb_store() -> None:
    chosen = Settings.from_env(
        {d.ENV_SECRET_STORE: "dynamodb", d.ENV_SECRETS_TABLE: "Duetime-WebhookSecrets"}
    )
    assert chosen.secret_store == "dynamodb"
    assert chosen.secrets_table == "Duetime-WebhookSecrets"


def test_the_dynamodb_store_without_its_table_is_refused_naming_the_setting() -> None:
    # Its default stays ssm: the stack always sets the store and, with
    # dynamodb, the table; what runs without the stack has no table.
    with pytest.raises(ValidationError, match=r"secrets_table.*DUETIME_SECRETS_TABLE"):
        Settings.from_env({d.ENV_SECRET_STORE: "dynamodb"})
