"""An API call that plans a slot queues its intent early (its delay rounded
down, the worker holding it until its time): the call sees one intent and
cannot tell whether its second is crowded, and a delay rounded up would make
the slot visible up to a second after its time."""

from __future__ import annotations

from datetime import timedelta

import boto3
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.secrets import InMemorySecretStore
from adapters.sqs import SqsDeliveryQueue, entry
from bootstrap.settings import Settings
from domain.run import DeliveryIntent
from handlers.api import build_services
from service.planning.surge import LoadRecordingQueue
from service.planning.ticker import PlanNow
from tests.conftest import FakeClock, utc

NOW = utc("2026-12-01T08:00:00.300")


def test_an_api_call_sends_every_intent_it_queues_ahead_early() -> None:
    with mock_aws():
        tables = create_store_tables(boto3.client("dynamodb"), "early")
        queue_url = boto3.client("sqs").create_queue(QueueName="delivery")["QueueUrl"]
        settings = Settings(
            schedules_table=tables.schedules,
            occurrences_table=tables.occurrences,
            leases_table=tables.leases,
            delivery_queue_url=queue_url,
            worker_function="duetime-worker",
        )
        services = build_services(settings, clock=FakeClock(NOW), secrets=InMemorySecretStore())
        planning = services.schedules.planning
        assert isinstance(planning, PlanNow)
        recording = planning.queue
        assert isinstance(recording, LoadRecordingQueue)
        assert isinstance(recording.queue, SqsDeliveryQueue)

        # What that queue sends for one intent due 10.7 s after the call.
        sent: list[list[dict[str, object]]] = []

        class Recorder:
            def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, object]]) -> dict:
                sent.append(Entries)
                return {}

        recording.queue.client = Recorder()
        recording.queue.clock = lambda: NOW
        due = NOW + timedelta(seconds=10.7)
        intent = DeliveryIntent(
            occurrence_id="s1.1.20261201T080011Z",
            schedule_id="s1",
            version=1,
            scheduled_at=due,
        )
        recording.send_ahead([intent], NOW)
        [[sent_entry]] = sent
        # Rounded down: visible at 08:00:10.300, before the slot; rounded up, 08:00:11.300.
        assert sent_entry["DelaySeconds"] == 10
        assert entry(0, intent, NOW)["DelaySeconds"] == 11  # what an uncrowded tick send does
