"""Each kind of wrong field in a schedule body, refused by the request models
(which ask the domain), with the message a person reads: the field by its path
in the body, then why. Nothing is stored, on a create or an edit."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.api_models import ScheduleIn
from tests.handlers import test_api
from tests.handlers.test_api import REPORT, WEBHOOK, Api

api, unchanged = test_api.api, test_api.unchanged  # the fixtures

# (the body's changed part, the field named, the message in full)
REFUSED: list[Any] = [
    pytest.param(
        {"name": "   "},
        "name",
        "name: is required: a short text such as 'sales report'",
        id="name-blank",
    ),
    pytest.param(
        {"spec": {"cron": "61 9 * * *"}},
        "spec.cron.minute",
        "spec.cron.minute: 61 is outside 0-59",
        id="cron-field",
    ),
    pytest.param(
        {"spec": {"cron": "0 9 * *"}},
        "spec.cron",
        "spec.cron: has 4 fields; expected 5 (minute hour day_of_month month day_of_week)",
        id="cron-shape",
    ),
    pytest.param(
        {"spec": {"cron": "0 9 * * *", "time_zone": "Europe/Londn"}},
        "spec.time_zone",
        "spec.time_zone: unknown zone 'Europe/Londn'; did you mean 'Europe/London'?",
        id="zone",
    ),
    pytest.param(
        {"spec": {"every": "P1M"}},
        "spec.every",
        "spec.every: 'P1M': years and months are not fixed lengths; use a cron spec",
        id="every-months",
    ),
    pytest.param(
        {"spec": {"every": "PT0.5S"}},
        "spec.every",
        "spec.every: must be a whole number of seconds, at least PT1S",
        id="every-fraction",
    ),
    pytest.param(
        {"spec": {"every": "P367D"}},
        "spec.every",
        "spec.every: 'P367D' is longer than P366D",
        id="every-long",
    ),
    pytest.param(
        {"spec": {"at": "2030-01-01T09:00"}},
        "spec.at",
        "spec.at: a wall time without an offset needs spec.time_zone",
        id="at-wall-no-zone",
    ),
    pytest.param(
        {
            "spec": {
                "cron": "0 9 * * *",
                "start_at": "2031-01-01T00:00:00Z",
                "end_at": "2030-01-01T00:00:00Z",
            }
        },
        "spec.end_at",
        "spec.end_at: must not be before spec.start_at",
        id="end-before-start",
    ),
    pytest.param(
        {"spec": {"cron": "0 9 * * *", "every": "PT1M"}},
        "spec",
        "spec: must have exactly one of cron, at or every (got cron, every)",
        id="two-kinds",
    ),
    pytest.param(
        {"target": {**WEBHOOK, "queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q"}},
        "target.queue_url",
        "target.queue_url: is not a field of a webhook target",
        id="field-of-another-type",
    ),
    pytest.param(
        {"target": {"type": "webhook", "url": "https://user:pw@example.com/hook"}},
        "target.url",
        "target.url: must not carry a user name or password; send credentials in a header",
        id="url-credentials",
    ),
    pytest.param(
        {"target": {**WEBHOOK, "headers": {"Host": "example.org"}}},
        "target.headers.Host",
        "target.headers.Host: is set by duetime and cannot be set",
        id="header-reserved",
    ),
    pytest.param(
        {"target": {**WEBHOOK, "headers": {"X-Team": None}}},
        "target.headers.X-Team",
        "target.headers.X-Team: is null, which keeps the value the schedule had for it, "
        "and it had none: send its value",
        id="header-null-not-kept",
    ),
    pytest.param(
        {"target": {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/q"}},
        "target.queue_url",
        "target.queue_url: must look like "
        "https://sqs.<region>.amazonaws.com/<account id>/<queue name>",
        id="queue-url",
    ),
    pytest.param(
        {"target": {"type": "lambda", "function_arn": "my-job"}},
        "target.function_arn",
        "target.function_arn: must be a Lambda function ARN such as "
        "arn:aws:lambda:eu-west-1:123456789012:function:my-job",
        id="function-arn",
    ),
    pytest.param(
        {"target": {"type": "eventbridge", "event_bus_name": "bus", "source": "aws.events"}},
        "target.source",
        "target.source: may not start with 'aws.' (reserved by AWS)",
        id="eventbridge-source",
    ),
    pytest.param(
        {"policy": {"overdue": "latest_only", "catchup_window": "PT1H"}},
        "policy.catchup_window",
        "policy.catchup_window: only applies when policy.overdue is 'expire'",
        id="window-without-expire",
    ),
    pytest.param(
        {"policy": {"catchup_window": "soon", "overdue": "expire"}},
        "policy.catchup_window",
        "policy.catchup_window: 'soon' is not an ISO 8601 duration such as 'PT15M'",
        id="window-garbage",
    ),
    pytest.param(
        {"policy": {"run_timeout": "PT0S"}},
        "policy.run_timeout",
        "policy.run_timeout: must be between PT1S and P1D",
        id="run-timeout",
    ),
    pytest.param(
        {"policy": {"retry": {"base": "PT2H", "cap": "PT1H"}}},
        "policy.retry.cap",
        "policy.retry.cap: must be at least base_s (7200), not 3600",
        id="retry-cap-below-base",
    ),
    pytest.param(
        {"policy": {"retry": {"base": "PT0S"}}},
        "policy.retry.base",
        "policy.retry.base: must be more than 0, not 0.0",
        id="retry-base-zero",
    ),
]


@pytest.mark.parametrize(("change", "field", "message"), REFUSED)
def test_a_create_with_a_wrong_field_is_422_naming_it_and_stores_nothing(
    api: Api, unchanged: None, change: dict[str, Any], field: str, message: str
) -> None:
    answer = api.call("POST", "/schedules", {**REPORT, **change})

    assert answer.status == 422, answer.body
    assert answer.error == {"code": "validation_error", "message": message, "field": field}


@pytest.mark.parametrize(("change", "field", "message"), REFUSED)
def test_an_edit_with_a_wrong_field_is_422_naming_it_and_changes_nothing(
    api: Api, change: dict[str, Any], field: str, message: str
) -> None:
    created = api.create().body
    before = api.snapshot()

    answer = api.call(
        "PUT", f"/schedules/{created['id']}", {**REPORT, **change}, headers={"If-Match": "1"}
    )

    assert answer.status == 422, answer.body
    assert answer.error == {"code": "validation_error", "message": message, "field": field}
    assert api.snapshot() == before


def test_a_valid_body_validates_to_the_domains_values() -> None:
    """What the use cases receive: the domain's values, not a JSON object."""
    body = {
        **REPORT,
        "target": {**WEBHOOK, "headers": {"X-Team": "sales"}},
        "policy": {"overdue": "expire", "catchup_window": "PT5M", "retry": {"base": "PT45S"}},
    }

    definition = ScheduleIn.model_validate(body).definition()

    assert definition.spec.time_zone == "America/New_York"
    assert definition.target.type == "webhook"
    assert definition.policy.catchup_window is not None
    assert definition.policy.catchup_window.total_seconds() == 300
    # A base above the default cap (30 s) raises the cap to it.
    assert (definition.policy.retry.base_s, definition.policy.retry.cap_s) == (45.0, 45.0)
