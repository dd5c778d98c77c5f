"""The real stores the model drives: SQLite files, and DynamoDB + SQS on moto.

Each ``open_*`` builds a new object over the same durable state, as a
restarted process would (a new SQLite connection, a new DynamoDB adapter).
``drain`` takes what the dispatchers sent out of the real queue, for the
test's transit to deliver.

On moto, the global secondary indexes lag their table as DynamoDB's may
(``lag_index``): a write reaches them a chosen number of model seconds
later, and until then a Query on an index answers from the item as it was
(the simulator's ``sim.index_lag``, over moto's query seam in
``sim.fastmoto``). SQLite reads its own writes: it has no lag to inject.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol

from adapters.definitions import DELIVERY_QUEUE
from service.ports import DeliveryQueue, Store
from service.run_ports import RunStore
from sim.index_lag import IndexLag
from tests.conftest import FakeClock


class Backend(Protocol):
    name: str
    lags: bool  # whether ``lag_index`` does anything

    def lag_index(self, seconds: float, table: str = "all") -> None:
        """From now, writes to ``table``'s items ("schedules", "runs" or "all")
        reach its secondary indexes ``seconds`` later."""
        ...

    def indexes_current(self) -> bool:
        """No write is still on its way to a secondary index."""
        ...

    def plan_held(self) -> bool:
        """A pass that died holds the store's plan lease (which runs on the
        wall clock, not the model's): the next passes plan without it."""
        ...

    def expire_plan_lease(self) -> None:
        """The plan lease's time has passed (on the model's clock)."""
        ...

    def open_store(self) -> Store: ...

    def open_runs(self, store: Store) -> RunStore: ...

    def open_queue(self) -> DeliveryQueue: ...

    def drain(self) -> list[str]: ...

    def close(self) -> None: ...


class SqliteBackend:
    name = "sqlite"
    lags = False

    def lag_index(self, seconds: float, table: str = "all") -> None:
        """SQLite has no secondary index that lags its table."""

    def indexes_current(self) -> bool:
        return True

    def plan_held(self) -> bool:
        return False

    def expire_plan_lease(self) -> None:
        """SQLite plans under the shard leases alone."""

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

        store = SqliteStore.open(self.path)
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


class ModelIndexLag(IndexLag):
    """``IndexLag`` with the lag the model chose instead of a drawn one: every
    write from now to a table's items reaches its indexes ``lag_s[table]``
    model seconds later (0, or no entry: at once). An item's writes still
    reach them in order. Each table's indexes lag on their own, as
    DynamoDB's do: a write to one table may show in its index before an
    earlier write to another shows in its own."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(lambda: clock.now().timestamp())
        self.lag_s: dict[str, float] = {}

    def delay_s(self, table_name: str) -> float:
        return self.lag_s.get(table_name, 0.0)

    def before_write(self, table: Any, key: Any, stored: Any) -> Any:
        # Without lag, and no earlier write of the item in flight, there is
        # nothing to hold back (and nothing to copy).
        if self.delay_s(table.name) <= 0 and key not in self.pending.get(table.name, {}):
            return None
        return super().before_write(table, key, stored)


class MotoBackend:
    """DynamoDB and SQS on moto, in process. Small data only."""

    name = "dynamodb"
    lags = True

    def __init__(self, clock: FakeClock) -> None:
        import boto3
        from moto import mock_aws

        from adapters.definitions import create_queues
        from adapters.dynamodb.local import create_store_tables
        from sim.fastmoto import faster_moto

        self.clock = clock
        self.lag = ModelIndexLag(clock)
        self._stack = ExitStack()
        self._stack.enter_context(mock_aws())
        self._stack.enter_context(faster_moto(lambda: clock.now().timestamp(), self.lag))
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
        from adapters.dynamodb.store import dynamo_store

        # Few due shards: on moto every index query reads the whole table.
        return dynamo_store(self.dynamodb, self.names, due_shards=2)

    def open_runs(self, store: Store) -> RunStore:
        from adapters.dynamodb.runs import DynamoRunStore
        from adapters.dynamodb.store import DynamoPorts

        assert isinstance(store, DynamoPorts)
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

    def lag_index(self, seconds: float, table: str = "all") -> None:
        names = {"schedules": [self.names.schedules], "runs": [self.names.occurrences]}
        for name in names.get(table, [self.names.schedules, self.names.occurrences]):
            self.lag.lag_s[name] = seconds

    def indexes_current(self) -> bool:
        return not any(self.lag._catch_up(table) for table in list(self.lag.pending))

    def plan_held(self) -> bool:
        from adapters.dynamodb.plan_lease import PLAN_CURSOR

        cursor = self.dynamodb.get_item(
            TableName=self.names.leases, Key={"pk": {"S": PLAN_CURSOR}}, ConsistentRead=True
        ).get("Item", {})
        return "owner" in cursor

    def expire_plan_lease(self) -> None:
        from adapters.dynamodb.plan_lease import PLAN_CURSOR

        if self.plan_held():
            self.dynamodb.update_item(
                TableName=self.names.leases,
                Key={"pk": {"S": PLAN_CURSOR}},
                UpdateExpression="SET held_until = :past",
                ExpressionAttributeValues={":past": {"S": "2000-01-01T00:00:00.000000Z"}},
            )

    def close(self) -> None:
        self._stack.close()
