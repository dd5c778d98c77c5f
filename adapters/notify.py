"""Notification channels for the watchdog's changed verdicts (service/alerts.py).

- ``WebhookNotifier``: one machine's channel. A POST of the alert as JSON, or
  as a Slack-compatible ``{"text": ...}`` body (Slack's incoming webhooks,
  and the chat tools that accept theirs). A timeout on each attempt, and
  two retries with back-off on a connection error, a timeout, 429 or 5xx.
- ``SnsNotifier``: the AWS stack's alarm topic, one message per schedule
  whose verdict changed, beside the aggregate alarm. Email subscribers get
  the text; every other protocol the JSON document.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

import urllib3

from domain.alerts import Alert
from service.alerts import Notifier, NotifyFailed

NotifyFormat = Literal["json", "slack"]
FORMATS: Final = ("json", "slack")
TIMEOUT_S: Final = 5.0
RETRIES: Final = 2
BACKOFF_S: Final = 0.5  # then 1 s: urllib3 doubles it
# SNS refuses a subject over 100 characters.
MAX_SUBJECT: Final = 100


def body(alert: Alert, format: NotifyFormat) -> dict[str, Any]:
    if format == "slack":
        return {"text": alert.text()}
    return alert.document()


class WebhookNotifier(Notifier):
    def __init__(
        self,
        url: str,
        format: NotifyFormat = "json",
        *,
        timeout_s: float = TIMEOUT_S,
        retries: int = RETRIES,
        backoff_s: float = BACKOFF_S,
    ) -> None:
        self.url = url
        self.format = format
        self.http = urllib3.PoolManager(
            timeout=urllib3.Timeout(total=timeout_s),
            retries=urllib3.Retry(
                total=retries,
                backoff_factor=backoff_s,
                status_forcelist=(429, 500, 502, 503, 504),
                allowed_methods=None,  # POST too: a receiver sees one alert at most twice
                redirect=False,
                raise_on_status=False,
            ),
        )

    def send(self, alert: Alert) -> None:
        try:
            answer = self.http.request(
                "POST",
                self.url,
                body=json.dumps(body(alert, self.format)).encode(),
                headers={"Content-Type": "application/json", "User-Agent": "duetime-alerts"},
            )
        except urllib3.exceptions.HTTPError as error:
            raise NotifyFailed(f"notification webhook {self.url}: {error}") from error
        if not 200 <= answer.status < 300:
            raise NotifyFailed(f"notification webhook {self.url} answered {answer.status}")


class SnsNotifier(Notifier):
    def __init__(self, topic_arn: str, client: Any) -> None:
        self.topic_arn = topic_arn
        self.client = client

    def send(self, alert: Alert) -> None:
        document = json.dumps(alert.document())
        try:
            self.client.publish(
                TopicArn=self.topic_arn,
                Subject=_subject(alert.title),
                MessageStructure="json",
                Message=json.dumps({"default": document, "email": alert.text()}),
                MessageAttributes={
                    "schedule_id": {"DataType": "String", "StringValue": alert.schedule_id},
                    "verdict": {"DataType": "String", "StringValue": alert.status.value},
                },
            )
        except Exception as error:  # botocore's ClientError and connection errors alike
            raise NotifyFailed(f"alarm topic {self.topic_arn}: {error}") from error


def _subject(title: str) -> str:
    # ASCII printable only, no newline, at most 100 characters (SNS's rules).
    text = "".join(c if 32 <= ord(c) < 127 else "?" for c in title)
    return text if len(text) <= MAX_SUBJECT else text[: MAX_SUBJECT - 3] + "..."
