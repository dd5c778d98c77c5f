"""Context settings: defaults that synthesize, values from cdk.json or the command line."""

from __future__ import annotations

from typing import Any

import pytest

from infra.settings import SettingError, Settings


def from_context(values: dict[str, Any]) -> Settings:
    return Settings.from_context(values.get)


def test_no_context_gives_the_documented_defaults() -> None:
    settings = from_context({})
    assert settings == Settings()
    assert settings.retain is True
    assert settings.target_arns == ()
    assert settings.alarm_email == ""
    assert settings.webhook_secrets_prefix == "duetime/Duetime/webhooks/"
    assert settings.surge_min == 200
    assert settings.worker_max_concurrency == 100
    assert settings.start_lateness_p99_threshold_s == 10


def test_command_line_strings_are_parsed() -> None:
    settings = from_context(
        {
            "duetime:retain": "false",
            "duetime:shards": "32",
            "duetime:targetArns": "arn:aws:sqs:eu-west-1:1:a,arn:aws:lambda:eu-west-1:1:function:f",
            "duetime:logLevel": "debug",
            "duetime:stackName": "DuetimeDev",
        }
    )
    assert settings.retain is False
    assert settings.shards == 32
    assert settings.target_arns == (
        "arn:aws:sqs:eu-west-1:1:a",
        "arn:aws:lambda:eu-west-1:1:function:f",
    )
    assert settings.log_level == "DEBUG"
    assert settings.webhook_secrets_prefix == "duetime/DuetimeDev/webhooks/"


def test_cdk_json_values_are_taken_as_they_are() -> None:
    settings = from_context(
        {"duetime:retain": False, "duetime:targetArns": ["*"], "duetime:tickBudgetS": 40}
    )
    assert settings.retain is False
    assert settings.targets_wildcard
    assert settings.tick_budget_s == 40


def test_a_json_list_on_the_command_line_is_accepted() -> None:
    settings = from_context({"duetime:targetArns": '["arn:aws:events:eu-west-1:1:event-bus/b"]'})
    assert settings.target_arns == ("arn:aws:events:eu-west-1:1:event-bus/b",)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("duetime:retain", "maybe"),
        ("duetime:shards", "many"),
        ("duetime:shards", 0),
        ("duetime:tickBudgetS", 60),
        ("duetime:lookaheadS", 59),
        ("duetime:lookaheadS", 901),
        ("duetime:alarmEmail", "not-an-address"),
        ("duetime:targetArns", ["arn:aws:s3:::bucket"]),
        ("duetime:targetArns", ["*", "arn:aws:sqs:eu-west-1:1:a"]),
        ("duetime:logLevel", "LOUD"),
        ("duetime:secretsPrefix", "no-trailing-slash"),
        ("duetime:stackName", "1st"),
        ("duetime:surgeMin", -1),
        ("duetime:surgeMin", "lots"),
        ("duetime:crowdMin", -1),
        ("duetime:crowdMin", "many"),
        ("duetime:planEarly", "sometimes"),
        ("duetime:tickMemoryMB", 127),
        ("duetime:tickMemoryMB", 10241),
        ("duetime:tickMemoryMB", "big"),
        ("duetime:workerMaxConcurrency", 1),
        ("duetime:workerMaxConcurrency", 1001),
        ("duetime:workerMaxConcurrency", "all"),
        ("duetime:startLatenessP99ThresholdS", 0),
    ],
)
def test_bad_values_are_refused_naming_the_setting(key: str, value: Any) -> None:
    with pytest.raises(SettingError, match=key):
        from_context({key: value})


@pytest.mark.parametrize("key", ["duetime:planBlockS", "duetime:directWindowS"])
def test_a_retired_setting_is_refused_naming_it(key: str) -> None:
    with pytest.raises(SettingError, match=f"{key}: no longer a setting"):
        from_context({key: 300})


def test_webhook_secrets_go_to_the_table_unless_another_store_is_chosen() -> None:
    assert Settings.from_context(lambda _: None).secret_store == "dynamodb"
    assert Settings.from_context({"duetime:secretStore": "SSM"}.get).secret_store == "ssm"
    chosen = Settings.from_context({"duetime:secretStore": "SecretsManager"}.get)
    assert chosen.secret_store == "secretsmanager"
    tiered = Settings.from_context({"duetime:secretStore": "ssm-intelligent-tiering"}.get)
    assert tiered.secret_store == "ssm-intelligent-tiering"


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"duetime:secretStore": "vault"},
            "duetime:secretStore: 'vault' is not one of dynamodb, ssm, "
            "ssm-intelligent-tiering, secretsmanager",
        ),
        ({"duetime:secretStore": ""}, "duetime:secretStore: '' is not one of"),
        ({"duetime:secretStore": "dynamo"}, "duetime:secretStore: 'dynamo' is not one of"),
        ({"duetime:secretsPrefix": "team+a/webhooks/"}, "SSM parameter names"),
        # The table's store still reads the parameters stored before, by the same path.
        (
            {"duetime:secretStore": "dynamodb", "duetime:secretsPrefix": "team+a/webhooks/"},
            "duetime:secretsPrefix: with secretStore dynamodb",
        ),
        (
            {"duetime:secretStore": "ssm", "duetime:secretsPrefix": "aws-hooks/"},
            "duetime:secretsPrefix: with secretStore ssm it cannot start with aws or ssm",
        ),
        ({"duetime:secretsPrefix": "aws-hooks/"}, "cannot start with aws or ssm"),
        ({"duetime:secretsPrefix": "SSM/hooks/"}, "cannot start with aws or ssm"),
    ],
)
def test_a_secret_store_setting_ssm_cannot_use_is_refused_by_name(
    context: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingError, match=message):
        Settings.from_context(context.get)


def test_secrets_manager_keeps_its_wider_prefix_alphabet() -> None:
    context = {"duetime:secretStore": "secretsmanager", "duetime:secretsPrefix": "team+a/hooks/"}
    assert Settings.from_context(context.get).webhook_secrets_prefix == "team+a/hooks/"


def test_the_tick_has_512_mb_unless_told() -> None:
    assert from_context({}).tick_memory_mb == 512
    assert from_context({"duetime:tickMemoryMB": "1769"}).tick_memory_mb == 1769


def test_planning_early_and_its_crowd_are_settings() -> None:
    assert from_context({}).plan_early is True
    assert from_context({"duetime:planEarly": "false"}).plan_early is False
    assert from_context({}).crowd == 200  # as surgeMin
    assert from_context({"duetime:surgeMin": 40}).crowd == 40
    assert from_context({"duetime:surgeMin": 0}).crowd == 200  # surges off: the default
    assert from_context({"duetime:crowdMin": 5000, "duetime:surgeMin": 40}).crowd == 5000
