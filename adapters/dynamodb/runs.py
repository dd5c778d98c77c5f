"""The run transitions over the DynamoDB store's occurrence records.

Each transition is one conditional ``UpdateItem`` on the record (whose key
the occurrence id names: ``R#<scheduled_at>#<occurrence_id>``) that repeats
the port's condition (status, attempt number, run lease, token hash) in its
``ConditionExpression`` and returns the record as written (``ALL_NEW``); a
failed condition answers None. No transition reads the record before it
writes, except:

- ``start_attempt`` over a run whose worker is gone: the first update (from
  ``admitted`` or ``retrying``) fails and returns the record as it was
  (``ReturnValuesOnConditionCheckFailure``); when that record is ``running``
  under an expired lease, a second update takes it over, conditioned on that
  attempt number and the lease still being expired;
- ``retry`` reads the record for its shard and ``scheduled_at`` (the outbox
  entry it writes back is keyed by them), then writes on the condition that
  it is still failed or expired;
- ``complete`` merges the job's result into the result stored at 202, which
  is JSON text: it reads the record, then writes on the condition that the
  status, attempt, token, live lease and that result are still what it read.

The attempt log is a list attribute: an attempt starts with ``list_append``
and ends by setting fields of its element, whose index is its number minus
one (every attempt started appends exactly one element).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import ClientError

from adapters.dynamodb import items as it
from adapters.dynamodb.store import OUTBOX_ATTRIBUTES, DynamoStore, TableSettings
from domain.run import AttemptRecord, Run, RunStatus
from domain.schedule import ScheduleVersion
from service.run_ports import (
    ATTEMPT_ACCEPTED,
    ATTEMPT_LOST,
    FINISHED,
    RETRYABLE,
    RunStore,
    ScheduleNow,
)

# How many earlier records of a schedule the overlap check looks through
# (newest first) before it concludes nothing earlier is in progress.
RUNNING_BEFORE_LOOKBACK: Final = 200
_PAGE: Final = 50
_RUNNING: Final = RunStatus.RUNNING.value
_LEASE_EXPIRED_ERROR: Final = "run lease expired"


def _text(value: Mapping[str, Any] | None) -> str | None:
    """Free-form values are JSON text on the record (as ``items`` writes them)."""
    if value is None:
        return None
    return json.dumps(dict(value), separators=(",", ":"), sort_keys=True)


class _Update:
    """One UpdateExpression and ConditionExpression, every name and value aliased."""

    def __init__(self) -> None:
        self.sets: list[str] = []
        self.removes: list[str] = []
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def n(self, name: str) -> str:
        self.names[f"#{name}"] = name
        return f"#{name}"

    def v(self, plain_value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = it.attr(plain_value)
        return placeholder

    def field(self, name: str, plain_value: Any) -> None:
        """Set ``name``, or remove it when the value is None."""
        if plain_value is None:
            self.removes.append(self.n(name))
        else:
            self.sets.append(f"{self.n(name)} = {self.v(plain_value)}")

    def remove(self, *names: str) -> None:
        self.removes.extend(self.n(name) for name in names)

    def entry(self, number: int, name: str, plain_value: Any) -> None:
        """Set (or remove) a field of attempt ``number``'s element of the log."""
        path = f"{self.n('attempt_log')}[{number - 1}].{self.n(name)}"
        if plain_value is None:
            self.removes.append(path)
        else:
            self.sets.append(f"{path} = {self.v(plain_value)}")

    def close_attempt(
        self, number: int, now: datetime, outcome: str | None, error: str | None
    ) -> None:
        self.entry(number, "finished_at", it.iso(now))
        self.entry(number, "outcome", outcome)
        self.entry(number, "error", error)

    def expression(self) -> str:
        parts = []
        if self.sets:
            parts.append("SET " + ", ".join(self.sets))
        if self.removes:
            parts.append("REMOVE " + ", ".join(self.removes))
        return " ".join(parts)


class DynamoRunStore(RunStore):
    """The worker's and the completion API's writes to a run, on DynamoDB."""

    def __init__(self, store: DynamoStore) -> None:
        self.store = store
        self.client = store.client
        self.table = store.tables.occurrences

    @classmethod
    def from_settings(cls, settings: TableSettings, session: Any = None) -> DynamoRunStore:
        """The run store of a deployment: its tables, a fresh client."""
        return cls(DynamoStore.from_settings(settings, session))

    def get_run(self, occurrence_id: str) -> Run | None:
        return self.store.get_run(occurrence_id)

    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        return self.store.get_version(schedule_id, version)

    def schedule_now(self, schedule_id: str) -> ScheduleNow | None:
        schedule = self.store.get(schedule_id)
        if schedule is None:
            return None
        return ScheduleNow(schedule.version, schedule.state.paused, schedule.deleted)

    # --- one conditional update -------------------------------------------------------

    def _write(
        self, occurrence_id: str, update: _Update, condition: str, *, old_on_failure: bool = False
    ) -> tuple[Run | None, dict[str, Any] | None]:
        """Apply ``update`` if ``condition`` holds: (the run as written, None),
        or (None, the item as it was, when asked for and it exists)."""
        key = it.record_key_of(occurrence_id)
        if key is None:
            return None, None
        params: dict[str, Any] = {
            "TableName": self.table,
            "Key": key,
            "UpdateExpression": update.expression(),
            # The record exists: an update never creates one.
            "ConditionExpression": f"attribute_exists(pk) AND ({condition})",
            "ExpressionAttributeNames": update.names,
            "ReturnValues": "ALL_NEW",
        }
        if update.values:
            params["ExpressionAttributeValues"] = update.values
        if old_on_failure:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        try:
            answer = self.client.update_item(**params)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            old = error.response.get("Item") if old_on_failure else None
            return None, (dict(old) if old else None)
        return it.run_from_item(answer["Attributes"]), None

    @staticmethod
    def _held_by(u: _Update, attempt: int) -> str:
        """The condition that attempt ``attempt`` holds the run."""
        return f"{u.n('status')} = {u.v(_RUNNING)} AND {u.n('attempts')} = {u.v(attempt)}"

    @staticmethod
    def _ended(u: _Update, status: RunStatus, now: datetime, reason: str | None) -> None:
        """The fields every end of a run sets: it is no longer pending or leased."""
        u.field("status", status.value)
        u.field("finished_at", it.iso(now))
        u.field("reason", reason)
        u.remove("run_lease_expires_at", "run_token_hash", *OUTBOX_ATTRIBUTES)

    # --- transitions ------------------------------------------------------------------

    def start_attempt(
        self,
        occurrence_id: str,
        *,
        now: datetime,
        lease_until: datetime,
        run_token_hash: str | None,
    ) -> Run | None:
        new = AttemptRecord(number=0, started_at=now)
        u = _Update()
        u.field("status", _RUNNING)
        u.field("run_lease_expires_at", it.iso(lease_until))
        u.field("run_token_hash", run_token_hash)
        attempts, started, log = u.n("attempts"), u.n("started_at"), u.n("attempt_log")
        u.sets += [
            f"{attempts} = if_not_exists({attempts}, {u.v(0)}) + {u.v(1)}",
            f"{started} = if_not_exists({started}, {u.v(it.iso(now))})",
            f"{log} = list_append(if_not_exists({log}, {u.v([])}), "
            f"{u.v([it.attempt_entry(new, numbered=False)])})",
        ]
        condition = (
            f"{u.n('status')} IN ({u.v(RunStatus.ADMITTED.value)}, {u.v(RunStatus.RETRYING.value)})"
        )
        run, old = self._write(occurrence_id, u, condition, old_on_failure=True)
        if run is not None or old is None:
            return run
        # Not startable: taken over only if it is running and its worker is gone.
        was = it.run_from_item(old)
        lease = was.run_lease_expires_at
        if was.status is not RunStatus.RUNNING or (lease is not None and lease > now):
            return None
        return self._take_over(occurrence_id, was.attempts, now, lease_until, run_token_hash)

    def _take_over(
        self,
        occurrence_id: str,
        held: int,
        now: datetime,
        lease_until: datetime,
        run_token_hash: str | None,
    ) -> Run | None:
        """Close attempt ``held`` as lost and start attempt ``held + 1``, while
        ``held`` is still the attempt and its lease still expired."""
        u = _Update()
        u.field("attempts", held + 1)
        u.field("run_lease_expires_at", it.iso(lease_until))
        u.field("run_token_hash", run_token_hash)
        u.close_attempt(held, now, ATTEMPT_LOST, _LEASE_EXPIRED_ERROR)
        # Setting the element one past the end appends it (the list has ``held`` elements).
        new = AttemptRecord(number=held + 1, started_at=now)
        u.sets.append(f"{u.n('attempt_log')}[{held}] = {u.v(it.attempt_entry(new))}")
        lease = u.n("run_lease_expires_at")
        condition = (
            f"{self._held_by(u, held)} AND "
            f"(attribute_not_exists({lease}) OR {lease} <= {u.v(it.iso(now))})"
        )
        return self._write(occurrence_id, u, condition)[0]

    def finish(
        self,
        occurrence_id: str,
        *,
        attempt: int | None,
        status: RunStatus,
        now: datetime,
        reason: str | None = None,
        result: Mapping[str, Any] | None = None,
        outcome: str | None = None,
        error: str | None = None,
    ) -> Run | None:
        if status not in FINISHED:
            raise ValueError(f"finish ends a run as {sorted(FINISHED)}, not {status.value}")
        u = _Update()
        self._ended(u, status, now, reason)
        u.field("result", _text(result))
        if attempt is None:
            condition = (
                f"{u.n('status')} IN ({u.v(RunStatus.ADMITTED.value)}, "
                f"{u.v(RunStatus.RETRYING.value)})"
            )
        else:
            u.close_attempt(attempt, now, outcome or status.value, error)
            condition = self._held_by(u, attempt)
        return self._write(occurrence_id, u, condition)[0]

    def record_retry(
        self,
        occurrence_id: str,
        *,
        attempt: int,
        now: datetime,
        outcome: str,
        error: str | None,
        result: Mapping[str, Any] | None = None,
    ) -> Run | None:
        u = _Update()
        u.field("status", RunStatus.RETRYING.value)
        u.field("result", _text(result))
        u.remove("run_lease_expires_at", "run_token_hash")
        u.close_attempt(attempt, now, outcome, error)
        return self._write(occurrence_id, u, self._held_by(u, attempt))[0]

    def mark_accepted(
        self,
        occurrence_id: str,
        *,
        attempt: int,
        now: datetime,
        deadline: datetime,
        result: Mapping[str, Any] | None,
    ) -> Run | None:
        u = _Update()
        u.field("run_lease_expires_at", it.iso(deadline))
        u.field("result", _text(result))
        u.entry(attempt, "outcome", ATTEMPT_ACCEPTED)
        return self._write(occurrence_id, u, self._held_by(u, attempt))[0]

    def extend_lease(self, occurrence_id: str, *, attempt: int, until: datetime) -> bool:
        u = _Update()
        u.field("run_lease_expires_at", it.iso(until))
        lease = u.n("run_lease_expires_at")
        condition = (
            f"{self._held_by(u, attempt)} AND "
            f"(attribute_not_exists({lease}) OR {lease} < {u.v(it.iso(until))})"
        )
        return self._write(occurrence_id, u, condition)[0] is not None

    def report_progress(
        self, occurrence_id: str, *, run_token_hash: str, progress: Mapping[str, Any]
    ) -> Run | None:
        u = _Update()
        u.field("progress", _text(progress))
        condition = (
            f"{u.n('status')} = {u.v(_RUNNING)} AND {u.n('run_token_hash')} = {u.v(run_token_hash)}"
        )
        return self._write(occurrence_id, u, condition)[0]

    def complete(
        self,
        occurrence_id: str,
        *,
        run_token_hash: str,
        succeeded: bool,
        now: datetime,
        result: Mapping[str, Any] | None,
        error: str | None,
    ) -> Run | None:
        run = self.get_run(occurrence_id)
        if (
            run is None
            or run.status is not RunStatus.RUNNING
            or run.run_token_hash != run_token_hash
            or run.run_lease_expires_at is None
            or run.run_lease_expires_at <= now
        ):
            return None
        status = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
        u = _Update()
        self._ended(
            u,
            status,
            now,
            None if succeeded else f"the job reported failure: {error or 'no detail'}",
        )
        u.field("result", _text({**dict(run.result or {}), **dict(result or {})}))
        u.close_attempt(run.attempts, now, status.value, error)
        stored = u.n("result")
        same_result = (
            f"attribute_not_exists({stored})"
            if run.result is None
            else f"{stored} = {u.v(_text(run.result))}"
        )
        condition = (
            f"{self._held_by(u, run.attempts)} AND "
            f"{u.n('run_token_hash')} = {u.v(run_token_hash)} AND "
            f"{u.n('run_lease_expires_at')} > {u.v(it.iso(now))} AND {same_result}"
        )
        return self._write(occurrence_id, u, condition)[0]

    def retry(self, occurrence_id: str, *, now: datetime, bucket: int, reason: str) -> Run | None:
        # Back in the outbox, as ``items.record_item`` puts a pending record:
        # its entry is keyed by the record's shard and instant, read here
        # (both are fixed when the record is written, so the condition need
        # not repeat them).
        found = self.store.get_run(occurrence_id)
        if found is None or found.status not in RETRYABLE:
            return None
        u = _Update()
        u.field("status", RunStatus.ADMITTED.value)
        u.field("admitted_at", it.iso(now))
        u.field("reason", reason)
        u.field("bucket", bucket)
        u.field("outbox_key", it.outbox_key(bucket, found.scheduled_at, found.occurrence_id))
        u.field("pending_shard", found.shard)
        u.remove("finished_at", "sent_at", "run_lease_expires_at", "run_token_hash")
        statuses = ", ".join(u.v(status.value) for status in sorted(RETRYABLE))
        return self._write(occurrence_id, u, f"{u.n('status')} IN ({statuses})")[0]

    def running_before(self, run: Run, now: datetime) -> Run | None:
        own = it.record_key_of_run(run)["sk"]["S"]
        request: dict[str, Any] = {
            **self.store.records_newest_first(
                run.schedule_id, before=own, consistent=True, page=_PAGE
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
