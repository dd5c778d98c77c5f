"""Least privilege: each function may do what its job needs and nothing more."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.definitions import (
    ENV_ALERT_MIN_INTERVAL_S,
    ENV_ALERT_TOPIC_ARN,
    ENV_SURGE_MIN,
    ENV_WORKER_FUNCTION,
)
from domain.alerts import DEFAULT_MIN_INTERVAL
from infra.secrets import (
    LEGACY_READ_ACTIONS,
    LEGACY_SSM_READ_ACTIONS,
    LEGACY_SSM_WRITE_ACTIONS,
    LEGACY_WRITE_ACTIONS,
    SSM_READ_ACTIONS,
)
from infra.secrets import READ_ACTIONS as SECRET_READ
from infra.secrets import SSM_WRITE_ACTIONS as PARAMETER_WRITE
from infra.secrets import WRITE_ACTIONS as SECRET_WRITE
from infra.tables import READ_ACTIONS, WRITE_ACTIONS
from tests.infra.conftest import SANDBOX_TARGETS, Synthesized
from tests.infra.helpers import (
    _as_list,
    actions,
    can,
    dumps,
    function,
    function_role,
    logical_id,
    resources,
    statements,
)

SECRETS = "secret:duetime/Duetime/webhooks/*"
SIGNING_KEY = "secret:duetime/Duetime/webhooks-signing-key-??????"
PARAMETERS = ":parameter/duetime/Duetime/webhooks/*"
SSM_SECRETS = "secret:duetime/DuetimeWildcard/webhooks/*"
SSM_PARAMETERS = ":parameter/duetime/DuetimeWildcard/webhooks/*"
MARKERS = (PARAMETERS, SECRETS, SIGNING_KEY)
TARGET_ACTIONS = ("lambda:InvokeFunction", "sqs:SendMessage", "events:PutEvents")


class Ids:
    def __init__(self, template: dict[str, Any]) -> None:
        self.schedules = logical_id(template, "AWS::DynamoDB::Table", "TablesSchedules")
        self.occurrences = logical_id(template, "AWS::DynamoDB::Table", "TablesRuns")
        self.leases = logical_id(template, "AWS::DynamoDB::Table", "TablesLeases")
        self.secrets = logical_id(template, "AWS::DynamoDB::Table", "SecretsWebhookSecrets")
        queues = resources(template, "AWS::SQS::Queue")
        self.delivery = next(k for k, q in queues.items() if "RedrivePolicy" in q["Properties"])
        self.dlq = logical_id(template, "AWS::SQS::Queue", "DeliveryDeliveryDlq")
        self.smoke = logical_id(template, "AWS::SQS::Queue", "SmokeQueue")
        self.api = function_role(template, "handlers.api.handler")
        self.tick = function_role(template, "handlers.tick.handler")
        self.worker = function_role(template, "handlers.worker.handler")
        self.watchdog = function_role(template, "handlers.watchdog.handler")


@pytest.fixture(scope="module")
def ids(template: dict[str, Any]) -> Ids:
    return Ids(template)


def reads(t: dict[str, Any], role: str, table: str) -> bool:
    return all(can(t, role, a, table) for a in READ_ACTIONS)


def writes(t: dict[str, Any], role: str, table: str) -> bool:
    return all(can(t, role, a, table) for a in WRITE_ACTIONS)


def writes_any(t: dict[str, Any], role: str, table: str) -> bool:
    return any(can(t, role, a, table) for a in WRITE_ACTIONS)


def touches(t: dict[str, Any], role: str, resource: str) -> bool:
    return any(can(t, role, a, resource) for a in actions(t, role))


def test_api_manages_schedules_and_runs_and_writes_only_two_heartbeats_of_leases(
    template: dict[str, Any], ids: Ids
) -> None:
    t = template
    assert reads(t, ids.api, ids.schedules) and writes(t, ids.api, ids.schedules)
    assert reads(t, ids.api, ids.occurrences) and writes(t, ids.api, ids.occurrences)
    assert reads(t, ids.api, ids.leases)
    # Acknowledging a failure (POST /schedules/{id}/acknowledge) records the
    # acknowledgement and the verdict judged again: PutItem of the items
    # "H#ack:<id>" and "H#watch:<id>", by a condition on the partition key.
    # Leases, the tick's heartbeats and the alert records stay out of reach.
    writes_leases = [
        s
        for s in statements(t, ids.api)
        if s["Resource"] == {"Fn::GetAtt": [ids.leases, "Arn"]}
        and set(_as_list(s["Action"])) & {*WRITE_ACTIONS, "dynamodb:DeleteItem"}
    ]
    assert [(s["Action"], s.get("Condition")) for s in writes_leases] == [
        (
            "dynamodb:PutItem",
            {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["H#ack:*", "H#watch:*"]}},
        )
    ]


def secret_grants(t: dict[str, Any], role: str) -> set[tuple[str, str]]:
    """(action, resource) of every SSM and Secrets Manager grant of the role."""
    return {
        (action, dumps(resource))
        for s in statements(t, role)
        for action in _as_list(s["Action"])
        if action.startswith(("ssm:", "secretsmanager:", "kms:"))
        for resource in _as_list(s["Resource"])
    }


def only_on(grants: set[tuple[str, str]], marker: str) -> set[str]:
    """The actions granted on resources that mention ``marker``."""
    return {action for action, resource in grants if marker in resource}


def table_grants(t: dict[str, Any], role: str, table: str) -> set[str]:
    """The actions of every statement of the role that names the table (or its indexes)."""
    return {
        action
        for s in statements(t, role)
        if table in dumps(s["Resource"])
        for action in _as_list(s["Action"])
    }


def test_api_keeps_signing_secrets_in_the_secrets_table_and_only_there(
    template: dict[str, Any], ids: Ids
) -> None:
    # Update (a new or rotated secret's generation), Get (a retried create, an
    # edit), Delete (with the schedule), on the table itself: no index, no
    # query, no scan.
    assert table_grants(template, ids.api, ids.secrets) == {
        "dynamodb:UpdateItem",
        "dynamodb:GetItem",
        "dynamodb:DeleteItem",
    }
    tables = [s for s in statements(template, ids.api) if ids.secrets in dumps(s["Resource"])]
    assert [s["Resource"] for s in tables] == [{"Fn::GetAtt": [ids.secrets, "Arn"]}]


def test_api_only_reads_and_deletes_the_secrets_stored_before_in_ssm_and_secrets_manager(
    template: dict[str, Any], ids: Ids
) -> None:
    # A schedule made before the table still has its parameter (or, older, its
    # Secrets Manager secret): read until a new secret replaces it, deleted then.
    grants = secret_grants(template, ids.api)
    assert only_on(grants, PARAMETERS) == set(LEGACY_SSM_WRITE_ACTIONS)
    assert only_on(grants, SECRETS) == set(LEGACY_WRITE_ACTIONS)
    # and the signing key every new secret is derived from: read it, nothing else.
    assert only_on(grants, SIGNING_KEY) == {"secretsmanager:GetSecretValue"}
    assert {a for a, r in grants if not any(m in r for m in MARKERS)} == set()
    assert not can(template, ids.api, "ssm:PutParameter", PARAMETERS)
    assert not can(template, ids.api, "secretsmanager:CreateSecret", SECRETS)


def test_worker_gets_signing_secrets_from_the_table_and_reads_those_stored_before(
    template: dict[str, Any], ids: Ids
) -> None:
    # No KMS grant: DynamoDB encrypts with its AWS managed key, and the aws/ssm
    # key's policy lets the account's principals decrypt through SSM.
    assert table_grants(template, ids.worker, ids.secrets) == {"dynamodb:GetItem"}
    grants = secret_grants(template, ids.worker)
    assert only_on(grants, PARAMETERS) == set(LEGACY_SSM_READ_ACTIONS)
    assert only_on(grants, SECRETS) == set(LEGACY_READ_ACTIONS)
    assert only_on(grants, SIGNING_KEY) == {"secretsmanager:GetSecretValue"}
    assert {a for a, r in grants if not any(m in r for m in MARKERS)} == set()


@pytest.mark.parametrize("role", ["tick", "watchdog"])
def test_no_other_function_may_touch_the_secrets_table(
    template: dict[str, Any], ids: Ids, role: str
) -> None:
    assert table_grants(template, getattr(ids, role), ids.secrets) == set()
    assert not touches(template, getattr(ids, role), ids.secrets)


def test_no_role_but_the_api_and_the_worker_names_the_secrets_table(
    template: dict[str, Any], ids: Ids
) -> None:
    # Every policy of the stack, whichever role it is attached to.
    holders = {
        role["Ref"]
        for policy in resources(template, "AWS::IAM::Policy").values()
        if ids.secrets in dumps(policy["Properties"]["PolicyDocument"])
        for role in policy["Properties"]["Roles"]
    }
    assert holders == {ids.api, ids.worker}


@pytest.mark.parametrize(
    ("handler", "parameters", "legacy"),
    [
        # Put (a new or rotated secret), Get (a retried create, an edit), Delete
        # (with the schedule) on the stack's parameter path; of Secrets Manager,
        # what the secrets stored before need: read them, delete them once moved.
        ("handlers.api.handler", PARAMETER_WRITE, LEGACY_WRITE_ACTIONS),
        ("handlers.worker.handler", SSM_READ_ACTIONS, LEGACY_READ_ACTIONS),
    ],
)
def test_with_ssm_chosen_a_role_holds_its_calls_under_the_path_only(
    synthesized: Synthesized, handler: str, parameters: Any, legacy: Any
) -> None:
    t = synthesized.template("DuetimeWildcard")
    role = function_role(t, handler)
    grants = secret_grants(t, role)
    assert only_on(grants, SSM_PARAMETERS) == set(parameters)
    assert only_on(grants, SSM_SECRETS) == set(legacy)
    assert {a for a, r in grants if SSM_PARAMETERS not in r and SSM_SECRETS not in r} == set()
    assert not can(t, role, "secretsmanager:CreateSecret", SSM_SECRETS)


@pytest.mark.parametrize("stack", ["DuetimeWildcard", "DuetimeSandbox"])
def test_only_the_dynamodb_store_makes_a_secrets_table(
    synthesized: Synthesized, stack: str
) -> None:
    t = synthesized.template(stack)
    tables = resources(t, "AWS::DynamoDB::Table")
    assert tables and all(k.startswith("Tables") for k in tables)


def test_with_secrets_manager_chosen_no_function_touches_ssm(
    synthesized: Synthesized,
) -> None:
    t = synthesized.template("DuetimeSandbox")
    api = function_role(t, "handlers.api.handler")
    worker = function_role(t, "handlers.worker.handler")
    sandbox = "secret:duetime/DuetimeSandbox/webhooks/*"
    assert only_on(secret_grants(t, api), sandbox) == set(SECRET_WRITE)
    assert only_on(secret_grants(t, worker), sandbox) == set(SECRET_READ)
    for role in (api, worker):
        assert not [a for a in actions(t, role) if a.startswith(("ssm:", "kms:"))]
        assert not can(t, role, "dynamodb:GetItem", "Secrets")


def test_api_sends_delivery_intents_and_only_peeks_at_the_dlq(
    template: dict[str, Any], ids: Ids
) -> None:
    # A create, edit or resume whose next slot is within the lookahead, a
    # trigger, and POST /runs/{id}/retry queue their intents from the call
    # itself (docs/decisions.md); GET /dead-letters receives from the DLQ with
    # visibility 0, and a retry settles the run's dead letters there (deletes
    # them, makes the others it saw visible again). Nothing else of a queue.
    t = template
    assert {a for a in actions(t, ids.api) if a.startswith("sqs:")} == {
        "sqs:SendMessage",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
    }
    assert can(t, ids.api, "sqs:SendMessage", ids.delivery)
    assert not can(t, ids.api, "sqs:SendMessage", ids.dlq)
    for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"):
        assert can(t, ids.api, action, ids.dlq)
        assert not can(t, ids.api, action, ids.delivery)


def test_tick_reads_and_writes_all_tables_and_sends_intents(
    template: dict[str, Any], ids: Ids
) -> None:
    t = template
    for table in (ids.schedules, ids.occurrences, ids.leases):
        assert reads(t, ids.tick, table) and writes(t, ids.tick, table)
    assert can(t, ids.tick, "sqs:SendMessage", ids.delivery)
    assert not can(t, ids.tick, "sqs:SendMessage", ids.dlq)
    assert not can(t, ids.tick, "sqs:ReceiveMessage", ids.delivery)
    assert not any(a.startswith(("secretsmanager:", "ssm:")) for a in actions(t, ids.tick))


def test_worker_runs_occurrences_without_touching_leases(
    template: dict[str, Any], ids: Ids
) -> None:
    t = template
    assert reads(t, ids.worker, ids.occurrences) and writes(t, ids.worker, ids.occurrences)
    assert reads(t, ids.worker, ids.schedules) and not writes_any(t, ids.worker, ids.schedules)
    assert not touches(t, ids.worker, ids.leases)


def test_worker_consumes_the_queue_retries_by_sending_and_sweeps_the_dlq(
    template: dict[str, Any], ids: Ids
) -> None:
    t = template
    for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"):
        assert can(t, ids.worker, action, ids.delivery)
    # A retry's wait is a new, delayed message (not one held in flight).
    assert can(t, ids.worker, "sqs:SendMessage", ids.delivery)
    # Dead-letters a message it cannot run; the sweep receives, re-sends, deletes.
    for action in ("sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage"):
        assert can(t, ids.worker, action, ids.dlq)
    assert not can(t, ids.worker, "sqs:PurgeQueue", ids.dlq)


def test_worker_reads_signing_secrets_and_cannot_change_them(
    template: dict[str, Any], ids: Ids
) -> None:
    t = template
    assert all(can(t, ids.worker, a, SECRETS) for a in SECRET_READ)
    assert all(can(t, ids.worker, a, PARAMETERS) for a in SSM_READ_ACTIONS)
    for action in (
        "secretsmanager:CreateSecret",
        "secretsmanager:PutSecretValue",
        "secretsmanager:DeleteSecret",
    ):
        assert not can(t, ids.worker, action, SECRETS)
    for action in ("ssm:PutParameter", "ssm:DeleteParameter"):
        assert not can(t, ids.worker, action, PARAMETERS)
    for action in ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"):
        assert not can(t, ids.worker, action, ids.secrets)


def test_by_default_the_worker_may_call_no_aws_target_but_the_smoke_queue(
    template: dict[str, Any], ids: Ids
) -> None:
    assert not {"lambda:InvokeFunction", "events:PutEvents"} & actions(template, ids.worker)
    senders = [s for s in statements(template, ids.worker) if "sqs:SendMessage" in s["Action"]]
    # Its own queues (a retry's delayed message, a dead letter) and the smoke queue.
    assert sorted((s["Resource"] for s in senders), key=str) == sorted(
        [
            {"Fn::GetAtt": [ids.delivery, "Arn"]},
            {"Fn::GetAtt": [ids.dlq, "Arn"]},
            {"Fn::GetAtt": [ids.smoke, "Arn"]},
        ],
        key=str,
    )


@pytest.mark.parametrize("role", ["api", "tick", "watchdog"])
def test_only_the_worker_may_send_to_the_smoke_queue(
    template: dict[str, Any], ids: Ids, role: str
) -> None:
    assert can(template, ids.worker, "sqs:SendMessage", ids.smoke)
    assert not touches(template, getattr(ids, role), ids.smoke)


def test_watchdog_reads_what_it_judges_and_writes_verdicts_and_heartbeats_to_leases_only(
    template: dict[str, Any], ids: Ids
) -> None:
    # A watchdog pass records each verdict and reads the tick's heartbeat in
    # the leases table (store.leases.beat is a PutItem there); schedules and runs it
    # only reads.
    t = template
    for table in (ids.schedules, ids.occurrences, ids.leases):
        assert reads(t, ids.watchdog, table)
    assert can(t, ids.watchdog, "dynamodb:PutItem", ids.leases)
    assert writes(t, ids.watchdog, ids.leases)
    assert not writes_any(t, ids.watchdog, ids.schedules)
    assert not writes_any(t, ids.watchdog, ids.occurrences)
    assert not any(
        a.startswith(("sqs:", "secretsmanager:", "ssm:")) for a in actions(t, ids.watchdog)
    )


def test_the_watchdog_publishes_changed_verdicts_to_the_alarm_topic_and_nowhere_else(
    template: dict[str, Any], ids: Ids
) -> None:
    topic = logical_id(template, "AWS::SNS::Topic", "AlarmsTopic")
    published = [
        s for s in statements(template, ids.watchdog) if "sns:Publish" in _as_list(s["Action"])
    ]
    assert [(s["Action"], s["Resource"], s.get("Condition")) for s in published] == [
        ("sns:Publish", {"Ref": topic}, None)
    ]
    assert {a for a in actions(template, ids.watchdog) if a.startswith("sns:")} == {"sns:Publish"}
    for role in (ids.api, ids.tick, ids.worker):
        assert not any(a.startswith("sns:") for a in actions(template, role))
    _, fn = function(template, "handlers.watchdog.handler")
    env = fn["Properties"]["Environment"]["Variables"]
    assert env[ENV_ALERT_TOPIC_ARN] == {"Ref": topic}
    assert env[ENV_ALERT_MIN_INTERVAL_S] == str(int(DEFAULT_MIN_INTERVAL.total_seconds()))


@pytest.mark.parametrize("role", ["api", "tick", "worker", "watchdog"])
def test_only_the_runs_tables_writers_may_delete_and_only_there(
    template: dict[str, Any], ids: Ids, role: str
) -> None:
    # api and tick withdraw refused occurrences (a conditional delete); the
    # worker and watchdog never delete, and no table but the runs table (and,
    # for the api alone, a deleted schedule's item in the secrets table).
    role_id = getattr(ids, role)
    may = role in ("api", "tick")
    assert can(template, role_id, "dynamodb:DeleteItem", ids.occurrences) is may
    for other in (ids.schedules, ids.leases):
        assert not can(template, role_id, "dynamodb:DeleteItem", other)
    assert can(template, role_id, "dynamodb:DeleteItem", ids.secrets) is (role == "api")


@pytest.mark.parametrize("role", ["api", "tick", "worker", "watchdog"])
def test_no_function_may_scan_or_describe_a_table(
    template: dict[str, Any], ids: Ids, role: str
) -> None:
    # The stores read by key and query, and old records leave by TTL: a grant
    # of these would be unused.
    unused = {
        "dynamodb:Scan",
        "dynamodb:BatchWriteItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DescribeTable",
    }
    assert not actions(template, getattr(ids, role)) & unused


@pytest.mark.parametrize("role", ["api", "tick", "worker", "watchdog"])
def test_no_function_has_wildcard_actions_admin_actions_or_managed_policies(
    template: dict[str, Any], ids: Ids, role: str
) -> None:
    role_id = getattr(ids, role)
    granted = actions(template, role_id)
    assert not [a for a in granted if "*" in a]
    assert not granted & {"dynamodb:DeleteTable", "dynamodb:UpdateTable", "dynamodb:CreateTable"}
    assert not template["Resources"][role_id]["Properties"].get("ManagedPolicyArns")
    for statement in statements(template, role_id):
        assert statement["Resource"] != "*"


def test_listed_target_arns_are_granted_one_action_each(synthesized: Synthesized) -> None:
    t = synthesized.template("DuetimeSandbox")
    worker = function_role(t, "handlers.worker.handler")
    lambdas = [a for a in SANDBOX_TARGETS if ":lambda:" in a]
    for arn in lambdas:
        assert can(t, worker, "lambda:InvokeFunction", arn)
    assert can(t, worker, "sqs:SendMessage", "arn:aws:sqs:eu-west-1:111111111111:nightly-jobs")
    assert can(t, worker, "events:PutEvents", "event-bus/ops")
    assert not can(t, worker, "lambda:InvokeFunction", "nightly-jobs")
    assert not can(t, worker, "events:PutEvents", "function:report-builder")
    for action in TARGET_ACTIONS:
        assert not can(t, worker, action, "*")


def test_the_target_wildcard_grants_the_three_target_actions_on_everything(
    synthesized: Synthesized,
) -> None:
    t = synthesized.template("DuetimeWildcard")
    worker = function_role(t, "handlers.worker.handler")
    for action in TARGET_ACTIONS:
        assert can(t, worker, action, "*")


def test_secrets_grants_are_the_calls_the_secret_store_makes(
    template: dict[str, Any], ids: Ids
) -> None:
    # The stores never describe a secret nor list parameters.
    for role in (ids.api, ids.worker):
        assert not can(template, role, "secretsmanager:DescribeSecret", SECRETS)
        assert not can(template, role, "ssm:GetParametersByPath", PARAMETERS)
    smoke_statements = [
        s for s in statements(template, ids.worker) if ids.smoke in json.dumps(s["Resource"])
    ]
    assert [s["Action"] for s in smoke_statements] == ["sqs:SendMessage"]


def _environment(template: dict[str, Any], handler: str) -> dict[str, Any]:
    _, fn = function(template, handler)
    return dict(fn["Properties"]["Environment"]["Variables"])


def test_tick_may_start_drains_of_the_worker_function_itself_and_nothing_else(
    template: dict[str, Any], ids: Ids
) -> None:
    worker_fn, _ = function(template, "handlers.worker.handler")
    invokes = [
        s
        for s in statements(template, ids.tick)
        if "lambda:InvokeFunction" in _as_list(s["Action"])
    ]
    assert [_as_list(s["Resource"]) for s in invokes] == [[{"Fn::GetAtt": [worker_fn, "Arn"]}]]
    for role in (ids.api, ids.worker, ids.watchdog):
        assert not can(template, role, "lambda:InvokeFunction", worker_fn)


def test_the_api_and_the_tick_know_the_worker_and_the_surge_threshold(
    template: dict[str, Any],
) -> None:
    worker_fn, _ = function(template, "handlers.worker.handler")
    for handler in ("handlers.api.handler", "handlers.tick.handler"):
        env = _environment(template, handler)
        assert env[ENV_WORKER_FUNCTION] == {"Ref": worker_fn}
        assert env[ENV_SURGE_MIN] == "200"
    for handler in ("handlers.worker.handler", "handlers.watchdog.handler"):
        assert ENV_WORKER_FUNCTION not in _environment(template, handler)


def test_surges_turned_off_leave_no_invoke_grant_and_no_worker_name(
    synthesized: Synthesized,
) -> None:
    t = synthesized.template("DuetimeSandbox")
    tick = function_role(t, "handlers.tick.handler")
    worker_fn, _ = function(t, "handlers.worker.handler")
    assert not can(t, tick, "lambda:InvokeFunction", worker_fn)
    for handler in ("handlers.api.handler", "handlers.tick.handler"):
        assert ENV_WORKER_FUNCTION not in _environment(t, handler)
