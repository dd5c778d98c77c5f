"""The run store over the DynamoDB store's occurrence records.

The transitions are the domain's (``domain/transitions.py``); this store
reads a record (strongly) and writes one by compare-and-set: one
``UpdateItem`` of the record (whose key the occurrence id names:
``R#<scheduled_at>#<occurrence_id>``) that sets and removes the attributes
the transition changed (``items.record_changes``), on the condition that the
record exists and its ``revision`` is the one read (an absent ``revision``
is 0: records written before it existed, and fresh ones).

An update, not a put of the whole record: it writes the same write units
(DynamoDB bills an update by the larger of the item before and after), needs
no knowledge of the attributes the tick keeps beside the run (the outbox
keys, the expiry), and sends only what changed. The outbox attributes follow
``pending``: removed when a run ends, written again when a user retries it.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Final

from botocore.config import Config
from botocore.exceptions import ClientError

from adapters.dynamodb import items as it
from adapters.dynamodb.store import DynamoPorts, dynamo_store_from_settings
from adapters.dynamodb.tables import TableSettings
from adapters.sealing import HeaderSeal
from domain.run import Run, RunStatus
from domain.schedule import ScheduleVersion
from service.run_ports import RunStore, ScheduleNow

# How many earlier records of a schedule the overlap check looks through
# (newest first) before it concludes nothing earlier is in progress.
RUNNING_BEFORE_LOOKBACK: Final = 200
_PAGE: Final = 50
_RUNNING: Final = RunStatus.RUNNING.value

# The run store's requests are built here from values it wrote or read, so
# botocore's check of every request against the API's shapes before sending
# it repeats what DynamoDB checks on receipt (a request it would refuse fails
# there instead, as a ClientError): left out, about 4% of a request's CPU
# (the worker makes three a run; docs/cost.md, "The worker's log line and CPU").
_UNCHECKED: Final = Config(parameter_validation=False)


class _UncheckedSession:
    """A boto3 session whose clients skip the client-side parameter validation."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def client(self, service_name: str, *, config: Config | None = None, **kwargs: Any) -> Any:
        config = _UNCHECKED if config is None else config.merge(_UNCHECKED)
        return self._session.client(service_name, config=config, **kwargs)


class DynamoRunStore(RunStore):
    """The worker's and the completion API's writes to a run, on DynamoDB."""

    def __init__(self, store: DynamoPorts) -> None:
        self.store = store
        self.client = store.records.client
        self.table = store.records.tables.occurrences

    @classmethod
    def from_settings(
        cls, settings: TableSettings, session: Any = None, *, seal: HeaderSeal | None = None
    ) -> DynamoRunStore:
        """The run store of a deployment: its tables, a fresh client (without
        client-side parameter validation); ``seal`` opens webhook header values."""
        if session is None:
            import boto3

            session = boto3.session.Session()
        return cls(dynamo_store_from_settings(settings, _UncheckedSession(session), seal=seal))

    def get_run(self, occurrence_id: str) -> Run | None:
        return self.store.records.get_run(occurrence_id)

    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        return self.store.schedules.get_version(schedule_id, version)

    def schedule_now(self, schedule_id: str) -> ScheduleNow | None:
        schedule = self.store.schedules.head(schedule_id)
        if schedule is None:
            return None
        return ScheduleNow.of(schedule)

    def get_run_and_schedule(
        self, occurrence_id: str, schedule_id: str, *, fresh_run: bool = True
    ) -> tuple[Run | None, ScheduleNow | None]:
        """The record and the schedule's HEAD in one ``BatchGetItem``, the HEAD
        strongly consistent, the record too unless ``fresh_run`` is False (then
        half a read unit): one request (one round trip and its CPU) less than
        two ``GetItem``s for every message the worker takes."""
        key = it.record_key_of(occurrence_id)
        if key is None:
            return None, self.schedule_now(schedule_id)
        head_key = it.head_key(schedule_id)
        request: dict[str, Any] = {
            self.store.records.tables.schedules: {"Keys": [head_key], "ConsistentRead": True}
        }
        if self.table == self.store.records.tables.schedules:  # one table: the stronger read
            request[self.table]["Keys"].append(key)
        else:
            request[self.table] = {"Keys": [key], "ConsistentRead": fresh_run}
        found: list[dict[str, Any]] = []
        delay = 0.01
        while request:
            answer = self.client.batch_get_item(RequestItems=request)
            for items in answer.get("Responses", {}).values():
                found.extend(items)
            request = answer.get("UnprocessedKeys") or {}
            if request:
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        record = _item_with_key(found, key)
        head = _item_with_key(found, head_key)
        if record is not None and it.value(record["occurrence_id"]) != occurrence_id:
            record = None  # its instant holds another version's occurrence
        run = None if record is None else it.run_from_item(record)
        if head is None:
            return run, None
        current = self.store.schedules.get_version(schedule_id, int(it.value(head["version"])))
        if current is None:  # its version cannot be read: as the store's own read
            return run, self.schedule_now(schedule_id)
        schedule = it.schedule_from_head(head, current)
        return run, ScheduleNow.of(schedule)

    def compare_and_set(self, before: Run, after: Run) -> bool:
        if before.occurrence_id != after.occurrence_id:
            raise ValueError("compare_and_set writes one run: the occurrence ids differ")
        # The record at the run's instant (what its occurrence id names),
        # without parsing the id again: the condition below checks the id.
        key = it.record_key_of_run(before)
        sets, removes = it.record_changes(before, after)
        names = {f"#a{i}": name for i, name in enumerate([*sets, *removes])}
        alias = {name: placeholder for placeholder, name in names.items()}
        values = {f":v{i}": it.attr(value) for i, value in enumerate(sets.values())}
        parts = []
        if sets:
            parts.append("SET " + ", ".join(f"{alias[n]} = :v{i}" for i, n in enumerate(sets)))
        if removes:
            parts.append("REMOVE " + ", ".join(alias[n] for n in removes))
        rev = alias.get("revision", "#rev")
        names[rev] = "revision"
        # The record at the run's instant, and that run's (another version's
        # occurrence may hold the instant), at the revision it was read.
        names["#oid"] = "occurrence_id"
        values[":oid"] = {"S": before.occurrence_id}
        if before.revision == 0:
            condition = f"#oid = :oid AND attribute_not_exists({rev})"
        else:
            condition = f"#oid = :oid AND {rev} = :rev"
            values[":rev"] = it.attr(before.revision)
        if not parts:  # nothing changed: still a check that the record is that one
            parts.append(f"SET {rev} = {rev}" if before.revision else f"REMOVE {rev}")
        params: dict[str, Any] = {
            "TableName": self.table,
            "Key": key,
            "UpdateExpression": " ".join(parts),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
        }
        if values:
            params["ExpressionAttributeValues"] = values
        try:
            self.client.update_item(**params)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def running_before(self, run: Run, now: datetime) -> Run | None:
        own = it.record_key_of_run(run)["sk"]["S"]
        request: dict[str, Any] = {
            **it.newest_first_request(
                self.store.records.tables.occurrences,
                run.schedule_id,
                before=own,
                consistent=True,
                page=_PAGE,
            ),
            "FilterExpression": ("(#status = :running AND #lease > :now) OR #status = :retrying"),
            "ExpressionAttributeNames": {"#status": "status", "#lease": "run_lease_expires_at"},
        }
        request["ExpressionAttributeValues"] = {
            **request["ExpressionAttributeValues"],
            ":running": {"S": _RUNNING},
            ":retrying": {"S": RunStatus.RETRYING.value},
            ":now": {"S": it.iso(now)},
        }
        looked_at = 0
        while looked_at < RUNNING_BEFORE_LOOKBACK:
            answer = self.client.query(**request)
            for item in answer.get("Items", []):
                if item["sk"]["S"] != own:
                    return it.run_from_item(item)
            looked_at += int(answer.get("ScannedCount", _PAGE))
            last = answer.get("LastEvaluatedKey")
            if not last:
                return None
            request["ExclusiveStartKey"] = last
        return None


def _item_with_key(items: list[dict[str, Any]], key: dict[str, Any]) -> dict[str, Any] | None:
    return next(
        (item for item in items if all(item.get(name) == value for name, value in key.items())),
        None,
    )
