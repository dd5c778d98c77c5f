"""The worker's DynamoDB client (moto): built without botocore's client-side
parameter validation, with the store's own settings kept, and nothing else of
the session changed; a request DynamoDB refuses still fails, and writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ParamValidationError
from moto import mock_aws

from adapters.dynamodb.local import create_store_tables
from adapters.dynamodb.runs import DynamoRunStore
from adapters.dynamodb.store import dynamo_store_from_settings
from adapters.dynamodb.tables import TableNames


@dataclass(frozen=True)
class TableSettings:
    schedules_table: str
    occurrences_table: str
    leases_table: str


@pytest.fixture
def tables() -> Iterator[TableNames]:
    with mock_aws():
        yield create_store_tables(boto3.client("dynamodb", region_name="us-east-1"), "client")


def deployed(tables: TableNames, session: boto3.session.Session) -> DynamoRunStore:
    settings = TableSettings(tables.schedules, tables.occurrences, tables.leases)
    return DynamoRunStore.from_settings(settings, session)


def bad_put(client: Any, table: str) -> None:
    """A put whose ``ReturnValues`` is a number: botocore refuses it before
    sending when it validates; DynamoDB refuses it on receipt."""
    client.put_item(
        TableName=table,
        Item={"pk": {"S": "sch_x"}, "sk": {"S": "R#x"}},
        ReturnValues=7,
    )


def test_the_worker_store_leaves_validation_to_dynamodb_and_nothing_is_written(
    tables: TableNames,
) -> None:
    session = boto3.session.Session(region_name="us-east-1")
    runs = deployed(tables, session)
    with pytest.raises(ClientError) as refused:
        bad_put(runs.client, tables.occurrences)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert runs.client.scan(TableName=tables.occurrences)["Count"] == 0


def test_the_other_clients_of_the_session_still_validate_before_sending(
    tables: TableNames,
) -> None:
    session = boto3.session.Session(region_name="us-east-1")
    deployed(tables, session)
    with pytest.raises(ParamValidationError):
        bad_put(session.client("dynamodb"), tables.occurrences)
    with pytest.raises(ParamValidationError):
        session.client("sqs").send_message(QueueUrl="q", MessageBody=5)


def test_the_worker_store_keeps_the_store_client_settings(tables: TableNames) -> None:
    session = boto3.session.Session(region_name="us-east-1")
    settings = TableSettings(tables.schedules, tables.occurrences, tables.leases)
    store = dynamo_store_from_settings(settings, session).records.client.meta.config
    worker = deployed(tables, session).client.meta.config
    # bounded calls, botocore's standard retries, the pool size (client_config)
    for name in ("connect_timeout", "read_timeout", "retries", "max_pool_connections"):
        assert getattr(worker, name) == getattr(store, name), name
    assert (worker.connect_timeout, worker.retries["mode"]) == (3, "standard")
