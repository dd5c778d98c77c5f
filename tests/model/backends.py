"""The real stores the model drives: SQLite files, and DynamoDB + SQS on moto.

Each ``open_*`` builds a new object over the same durable state, as a
restarted process would (a new SQLite connection, a new DynamoDB adapter).
``drain`` takes what the dispatchers sent out of the real queue, for the
test's transit to deliver.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Protocol

from adapters.definitions import DELIVERY_QUEUE
from service.ports import DeliveryQueue, Store
from service.run_ports import RunStore
from tests.conftest import FakeClock


class Backend(Protocol):
    name: str

    def open_store(self) -> Store: ...

    def open_runs(self, store: Store) -> RunStore: ...

    def open_queue(self) -> DeliveryQueue: ...

    def drain(self) -> list[str]: ...

    def close(self) -> None: ...


class SqliteBackend:
    name = "sqlite"

    def __init__(self, clock: FakeClock) -> None:
        from adapters.sqlite.queue import SqliteQueue

        self.clock = clock
        # In memory where the machine has it: the examples create thousands of
        # small databases, and their fsyncs are not what is under test.
        shm = Path("/dev/shm")
        where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
        self.dir = Path(tempfile.mkdtemp(prefix="duetime-model-", dir=where))
        self.path = self.dir / "duetime.db"
        self._opened: list[Any] = []
        self._reader = SqliteQueue(self.path, clock=clock)
        self._opened.append(self._reader)

    def open_store(self) -> Store:
        from adapters.sqlite.store import SqliteStore

        store = SqliteStore(self.path)
        self._opened.append(store)
        return store

    def open_runs(self, store: Store) -> RunStore:
        from adapters.sqlite.runs import SqliteRunStore
        from adapters.sqlite.store import SqliteStore

        assert isinstance(store, SqliteStore)
        return SqliteRunStore(store)

    def open_queue(self) -> DeliveryQueue:
        from adapters.sqlite.queue import SqliteQueue

        queue = SqliteQueue(self.path, clock=self.clock)
        self._opened.append(queue)
        return queue

    def drain(self) -> list[str]:
        bodies: list[str] = []
        while messages := self._reader.receive(10, 0):
            for message in messages:
                bodies.append(message.body)
                self._reader.delete(message.receipt)
        return bodies

    def close(self) -> None:
        for opened in self._opened:
            opened.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class MotoBackend:
    """DynamoDB and SQS on moto, in process. Small data only."""

    name = "dynamodb"

    def __init__(self, clock: FakeClock) -> None:
        import boto3
        from moto import mock_aws

        from adapters.definitions import create_queues
        from adapters.dynamodb.local import create_store_tables

        self.clock = clock
        self._mock = mock_aws()
        self._mock.start()
        options = {
            "region_name": "us-east-1",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        self.dynamodb = boto3.client("dynamodb", **options)
        self.sqs = boto3.client("sqs", **options)
        self.names = create_store_tables(self.dynamodb, "model")
        self.queue_url = create_queues(self.sqs, "model")[DELIVERY_QUEUE.env_var]

    def open_store(self) -> Store:
        from adapters.dynamodb.store import DynamoStore

        # Few due shards: on moto every index query reads the whole table.
        return DynamoStore(self.dynamodb, self.names, due_shards=2)

    def open_runs(self, store: Store) -> RunStore:
        from adapters.dynamodb.runs import DynamoRunStore
        from adapters.dynamodb.store import DynamoStore

        assert isinstance(store, DynamoStore)
        return DynamoRunStore(store)

    def open_queue(self) -> DeliveryQueue:
        from adapters.sqs import SqsDeliveryQueue

        return SqsDeliveryQueue(self.sqs, self.queue_url)

    def drain(self) -> list[str]:
        bodies: list[str] = []
        while True:
            answer = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            messages = answer.get("Messages", [])
            if not messages:
                return bodies
            for message in messages:
                bodies.append(message["Body"])
                self.sqs.delete_message(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )

    def close(self) -> None:
        self._mock.stop()
