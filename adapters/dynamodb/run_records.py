"""The run records (``OccurrenceStore``) in the occurrences table.

Every rule is a condition expression on the write that applies it, never a
read followed by a blind write:

- an occurrence: one conditional put of its record, keyed by schedule and
  instant (``attribute_not_exists``), which refuses a second write of it and
  another version's occurrence at that instant; a slot whose wall time
  another instant may hold (only within a day of an edit that changed the
  zone) is first looked up by its business key (see items);
- admission, closing and mark-sent: one conditional update of the record
  each (``status = scheduled`` for the first two), so a pause that closes
  pending records and a tick that admits them cannot both win;
- a withdrawal (of a slot planned but not started): a delete conditioned on
  the record being the one written and unchanged, or on it not having started.

The outbox index is sparse and KEYS_ONLY: a record is in it while it has
``outbox_key`` and ``pending_shard``, which it gets when stored (and again
when a user retries it: ``DynamoRunStore.retry``) and loses when ``mark_sent``
or a closure removes them; admission does not touch it. Index reads are
eventually consistent; the records they lead to are read consistently, and
every decision taken on them is re-checked by a conditional write.

``DynamoRunRecords`` holds a client, the table names and its settings, no
state: the schedules port (materialize.py) holds one and stores slots
through it; ``dynamo_store`` hands the same one to the service.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from botocore.exceptions import ClientError

from adapters.dynamodb import items as it
from adapters.dynamodb import run_listing
from adapters.dynamodb.tables import DynamoTables, TableNames, _failed_condition, conditional
from domain.run import PendingOccurrence, Run, RunKind, RunStatus
from domain.schedule import ScheduleVersion, add_clamped
from domain.spec import spec_zone_name
from service.ports import Closure, OccurrenceStore, Page, RunQuery

VersionReader = Callable[[Iterable[tuple[str, int]]], dict[tuple[str, int], ScheduleVersion]]

# How many of a schedule's newest records a pause or delete reads consistently
# besides the outbox (whose index may lag a record written just before).
NEWEST_CHECKED: Final = 25
# A record's attributes that put it in the outbox index (see items).
OUTBOX_ATTRIBUTES: Final = it.OUTBOX_ATTRIBUTES
HISTORY_RETENTION: Final = timedelta(days=90)
_SCHEDULED: Final = RunStatus.SCHEDULED.value

# How far apart two instants of one wall time can be, in two zones (UTC-12 to
# UTC+14, and an hour to spare): the reach of a zone change over slots.
ZONE_CHANGE_REACH: Final = timedelta(hours=27)

# Why a record stored and sent is closed when its schedule's advance is refused.
WITHDRAWN: Final = "the schedule changed while this slot was being planned"


class DynamoRunRecords(DynamoTables, OccurrenceStore):
    """The occurrence records of the occurrences table."""

    def __init__(
        self,
        client: Any,
        tables: TableNames,
        *,
        history_retention: timedelta = HISTORY_RETENTION,
        concurrency: int = 1,
        versions: VersionReader,
    ) -> None:
        """``history_retention``: a record expires (TTL) this long after its
        slot. ``concurrency``: see ``DynamoTables``. ``versions``: where the
        schedule versions are read (the schedules port's ``get_versions``,
        over its cache)."""
        super().__init__(client, tables, concurrency=concurrency)
        self.history_retention = history_retention
        self.versions = versions

    def _write_occurrence(
        self, run: Run, *, sending: bool, extra: Mapping[str, Any] | None = None
    ) -> tuple[bool, Run | None]:
        """Write one occurrence by a conditional put of its record: whether
        this call wrote it, and the run whose intent to send now (with
        ``sending``), if any.

        The put refuses an instant of the schedule already written, by this
        occurrence or by another version's. A slot whose wall time another
        instant may hold (``_slot_taken``) is looked up first.

        With ``sending`` (the caller sends the intents before the HEAD
        advances), an admitted occurrence is written out of the outbox,
        stamped sent: the send follows. A record found already written for this very
        occurrence, admitted, not started and out of the outbox was stored by
        a pass that died before its advance (or by a planner racing this
        one): its intent is sent again (``sending``) or it is put in the
        outbox, so it is sent at least once either way.
        """
        direct = sending and run.status is RunStatus.ADMITTED
        if direct:
            run = replace(run, pending=False, sent_at=run.materialized_at)
        if self._slot_taken(run):
            return False, None
        found: Run | None = None
        old = self._put_record(run, "attribute_not_exists(pk)", {}, extra)
        written = old is None
        if old is not None and it.value(old["occurrence_id"]) != run.occurrence_id:
            # The instant is another occurrence's: taken, unless that one was
            # withdrawn unstarted (its planner lost to an edit), which frees it.
            if not _withdrawn(old):
                return False, None
            replaced = self._put_record(
                run,
                "#occurrence_id = :withdrawn_id AND #reason = :withdrawn",
                {
                    ":withdrawn_id": old["occurrence_id"],
                    ":withdrawn": {"S": WITHDRAWN},
                },
                extra,
            )
            if replaced is not None:
                return False, None
            written = True
        elif old is not None and _unsent(old):
            found = it.run_from_item(old)
        if found is not None and not sending:
            self.into_outbox([found])
            return written, None
        return written, (run if written and direct else found)

    def _put_record(
        self,
        run: Run,
        condition: str,
        values: Mapping[str, Any],
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Put ``run``'s record (with ``extra`` attributes) on ``condition``:
        None if it was written, else the item that refused it."""
        names = {n: n[1:] for n in ("#occurrence_id", "#reason") if n in condition}
        item = it.record_item(run, self.history_retention)
        if extra:
            item.update(it.attrs(extra))
        try:
            self.client.put_item(
                TableName=self.tables.occurrences,
                Item=item,
                ConditionExpression=condition,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **({"ExpressionAttributeNames": names} if names else {}),
                **({"ExpressionAttributeValues": dict(values)} if values else {}),
            )
        except ClientError as error:
            if not _failed_condition(error):
                raise
            return dict(error.response.get("Item") or {"occurrence_id": {"S": ""}})
        return None

    def _slot_taken(self, run: Run) -> bool:
        """Whether another occurrence of the schedule, at another instant,
        fills ``run``'s slot (its business key). Only possible within
        ``ZONE_CHANGE_REACH`` after a version whose zone differs from the one
        before it: otherwise one wall time is one instant, and the record's
        key refuses the duplicate. Looked up (not written) for those slots
        alone: the records of that reach, filtered by business key."""
        if run.kind not in (RunKind.SCHEDULED, RunKind.BACKFILL) or run.version < 2:
            return False
        changed = self._zone_changed_at(run.schedule_id, run.version)
        if changed is None or run.scheduled_at >= changed + ZONE_CHANGE_REACH:
            return False
        found = self._with_business_key(run.schedule_id, run.business_key, run.scheduled_at)
        return any(it.value(item["occurrence_id"]) != run.occurrence_id for item in found)

    def _zone_changed_at(self, schedule_id: str, version: int) -> datetime | None:
        """When the schedule last changed its zone, as of ``version``: the
        ``created_at`` of the oldest version of the same zone since the last
        one of another zone, or None if every version up to it has one zone
        (a version missing from ``versions`` ends the look back)."""
        found = self.versions([(schedule_id, v) for v in range(1, version + 1)])
        current = found.get((schedule_id, version))
        if current is None:
            return None
        zone, since = spec_zone_name(current.spec), current.created_at
        for older in range(version - 1, 0, -1):
            before = found.get((schedule_id, older))
            if before is None:
                return None
            if spec_zone_name(before.spec) != zone:
                return since
            since = before.created_at
        return None

    def _with_business_key(
        self, schedule_id: str, business_key: str, near: datetime
    ) -> list[dict[str, Any]]:
        """The schedule's records within ``ZONE_CHANGE_REACH`` of ``near``
        whose business key is ``business_key`` (read consistently)."""
        request = {
            "TableName": self.tables.occurrences,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :low AND :high",
            "FilterExpression": "#business_key = :business_key",
            "ExpressionAttributeNames": {"#business_key": "business_key"},
            "ExpressionAttributeValues": {
                ":pk": {"S": schedule_id},
                ":low": {"S": it.record_bound(add_clamped(near, -ZONE_CHANGE_REACH))},
                ":high": {"S": it.record_bound(add_clamped(near, ZONE_CHANGE_REACH))},
                ":business_key": {"S": business_key},
            },
            "ConsistentRead": True,
        }
        return list(self._query(request))

    def _delete(self, key: Mapping[str, Any], condition: str, values: Mapping[str, Any]) -> bool:
        names = {n: n[1:] for n in ("#occurrence_id", "#status") if n in condition}
        deleted = conditional(
            self.client.delete_item,
            TableName=self.tables.occurrences,
            Key=dict(key),
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=dict(values),
        )
        return deleted is not None

    def _withdraw(self, runs: Sequence[Run], *, sent: Iterable[str] = ()) -> None:
        """Delete occurrences this store wrote, as it wrote them (one that
        something changed since, a dispatcher that admitted it in between,
        stays). One whose intent was ``sent`` is closed as skipped instead
        (its worker then finds it ended, not missing)."""
        sent = set(sent)
        for run in runs:
            if run.occurrence_id in sent:
                self._close_withdrawn(run)
                continue
            self._delete(
                it.record_key_of_run(run),
                "#occurrence_id = :occurrence_id AND #status = :status",
                {":occurrence_id": {"S": run.occurrence_id}, ":status": {"S": run.status.value}},
            )

    def _close_withdrawn(self, run: Run) -> bool:
        return (
            self._update(
                self.tables.occurrences,
                it.record_key_of_run(run),
                set_={
                    "status": RunStatus.SKIPPED.value,
                    "reason": WITHDRAWN,
                    "finished_at": it.iso(datetime.now(UTC)),
                },
                remove=OUTBOX_ATTRIBUTES,
                condition=_UNSTARTED,
                names=_UNSTARTED_NAMES,
                values=_unstarted_values(run),
            )
            is not None
        )

    def insert(self, runs: Sequence[Run]) -> list[str]:
        return [r.occurrence_id for r in runs if self._write_occurrence(r, sending=False)[0]]

    def get_run(self, occurrence_id: str) -> Run | None:
        key = it.record_key_of(occurrence_id)
        if key is None:
            return None
        answer = self.client.get_item(
            TableName=self.tables.occurrences, Key=key, ConsistentRead=True
        )
        record = answer.get("Item")
        if record is None or it.value(record["occurrence_id"]) != occurrence_id:
            return None  # nothing at that instant, or another version's occurrence
        return it.run_from_item(record)

    def get_by_business_key(self, key: str) -> Run | None:
        """The records near the instant the key names, filtered by the key (a
        wall time is within ``ZONE_CHANGE_REACH`` of its instant in any zone)."""
        near = _instant_of_business_key(key)
        if near is None:
            return None
        found = self._with_business_key(it.schedule_of_business_key(key), key, near)
        return it.run_from_item(found[0]) if found else None

    def runs(self, schedule_id: str, limit: int, token: str | None = None) -> Page[Run]:
        found, next_token = self._query_page(
            it.newest_first_request(self.tables.occurrences, schedule_id),
            limit,
            token,
            ("pk", "sk"),
        )
        return Page(tuple(it.run_from_item(item) for item in found), next_token)

    def find_runs(self, query: RunQuery, limit: int, token: str | None = None) -> Page[Run]:
        """See adapters/dynamodb/run_listing.py (no index of its own: no write cost)."""
        return run_listing.find_runs(self, query, limit, token)

    def pending_due(
        self, shard: int, from_bucket: int, to_bucket: int, due_by: datetime, limit: int
    ) -> list[PendingOccurrence]:
        tail = f"#{it.iso(due_by)}#{it.KEY_CEILING}"

        def one(bucket: int) -> list[dict[str, Any]]:
            prefix = it.outbox_bucket(bucket)
            request = {
                "TableName": self.tables.occurrences,
                "IndexName": "outbox",
                "KeyConditionExpression": (
                    "#pending_shard = :shard AND #outbox_key BETWEEN :low AND :high"
                ),
                "ExpressionAttributeNames": {
                    "#pending_shard": "pending_shard",
                    "#outbox_key": "outbox_key",
                },
                "ExpressionAttributeValues": {
                    ":shard": {"N": str(shard)},
                    ":low": {"S": prefix + "#"},
                    ":high": {"S": prefix + tail},
                },
                "Limit": limit,
            }
            found: list[dict[str, Any]] = []
            for item in self._query(request):
                found.append(item)
                if len(found) >= limit:
                    break
            return found

        buckets = range(from_bucket, to_bucket + 1)
        found = [item for items in self._each(one, buckets) for item in items]
        # Oldest first by (scheduled_at, occurrence_id): the key after "<bucket>#".
        found.sort(key=lambda item: item["outbox_key"]["S"].split("#", 1)[1])
        chosen = found[:limit]
        if not chosen:
            return []
        records = {
            (item["pk"]["S"], item["sk"]["S"]): item
            for item in self._batch_get(
                self.tables.occurrences, [{"pk": i["pk"], "sk": i["sk"]} for i in chosen]
            )
        }
        # Left out: a record that left the outbox since the index was read.
        waiting = [
            record
            for entry in chosen
            if (record := records.get((entry["pk"]["S"], entry["sk"]["S"]))) is not None
            and record.get("outbox_key") == entry["outbox_key"]
        ]
        return [PendingOccurrence.of(it.run_from_item(r)) for r in waiting]

    def earliest_pending_bucket(self, shard: int, from_bucket: int | None = None) -> int | None:
        names = {"#pending_shard": "pending_shard"}
        values: dict[str, Any] = {":shard": {"N": str(shard)}}
        condition = "#pending_shard = :shard"
        if from_bucket is not None:
            names["#outbox_key"] = "outbox_key"
            values[":from"] = {"S": it.outbox_bucket(from_bucket)}
            condition += " AND #outbox_key >= :from"
        answer = self.client.query(
            TableName=self.tables.occurrences,
            IndexName="outbox",
            KeyConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            Limit=1,
        )
        found = answer.get("Items", [])
        return int(found[0]["outbox_key"]["S"].split("#", 1)[0]) if found else None

    def _transition(
        self,
        occurrence_ids: Sequence[str],
        *,
        set_: Callable[[str], Mapping[str, Any]],
        remove: Iterable[str] = (),
        condition: str,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """One conditional update of each occurrence's record (the one at its
        instant, if it is that occurrence's); the ids it changed, in order."""

        def one(occurrence_id: str) -> str | None:
            key = it.record_key_of(occurrence_id)
            if key is None:
                return None
            item = self._update(
                self.tables.occurrences,
                key,
                set_=set_(occurrence_id),
                remove=remove,
                condition=f"#record_id = :record_id AND ({condition})",
                names={**(names or {}), "#record_id": "occurrence_id"},
                values={**(values or {}), ":record_id": {"S": occurrence_id}},
            )
            return None if item is None else occurrence_id

        return [oid for oid in self._each(one, list(occurrence_ids)) if oid is not None]

    def admit(self, occurrences: Sequence[PendingOccurrence], now: datetime) -> list[str]:
        """Admit waiting records whose schedule is active now (as SQLite's
        admission checks; an edit does not stop a slot made under an earlier
        version): the HEADs are read strongly first (one ``BatchGetItem``), and
        a record of a schedule paused, deleted or quarantined is left waiting,
        refused, for the caller to close as the start decision says.
        A pause or delete landing between that read and the write is met by
        the API's own closing of waiting records (``close_scheduled``), which
        the write's ``status = scheduled`` condition then honours."""
        heads = {
            str(it.value(head["schedule_id"])): head
            for head in self._batch_get(
                self.tables.schedules,
                [it.head_key(sid) for sid in {o.schedule_id for o in occurrences}],
            )
        }
        runnable = [
            o
            for o in occurrences
            if (head := heads.get(o.schedule_id)) is not None and it.head_active(head)
        ]
        # Admitted as of now, or of its instant for one admitted ahead of it.
        at = {o.occurrence_id: it.iso(max(now, o.scheduled_at)) for o in runnable}
        return self._transition(
            list(at),
            set_=lambda oid: {"status": RunStatus.ADMITTED.value, "admitted_at": at[oid]},
            condition="#status = :scheduled",
            values={":scheduled": {"S": _SCHEDULED}},
        )

    def close_runs(self, closures: Sequence[Closure], now: datetime) -> list[str]:
        by_id = {closure.occurrence_id: closure for closure in closures}
        return self._transition(
            [closure.occurrence_id for closure in closures],
            set_=lambda oid: {
                "status": by_id[oid].status.value,
                "reason": by_id[oid].reason,
                "finished_at": it.iso(now),
            },
            remove=OUTBOX_ATTRIBUTES,
            condition="#status = :scheduled",
            values={":scheduled": {"S": _SCHEDULED}},
        )

    def close_scheduled(
        self, schedule_id: str, status: RunStatus, reason: str, now: datetime
    ) -> int:
        """Waiting records are in the outbox: the schedule's shard's part of it
        (the shard read off its newest record), filtered to the schedule. The
        index lags its writes a little, so the newest records are also read
        consistently: one written just before a pause is closed by it too.
        So is what the last pass that stored the schedule's slots may have
        left unsent (``_left_unsent``: if it died before its send, no pass
        plans those slots again once the schedule is paused or deleted),
        stored admitted and still not started: the worker's start decision
        would close it so."""
        newest = self._newest(schedule_id)
        if not newest:
            return 0
        entries = self._query(
            {
                "TableName": self.tables.occurrences,
                "IndexName": "outbox",
                "KeyConditionExpression": "#pending_shard = :shard",
                "ExpressionAttributeNames": {"#pending_shard": "pending_shard"},
                "ExpressionAttributeValues": {":shard": {"N": str(it.value(newest[0]["shard"]))}},
            }
        )
        # Filtered here: a filter expression may not name a key attribute (the
        # table's ``pk`` is one), and a filter would read the same units.
        outboxed = self._batch_get(
            self.tables.occurrences,
            [{"pk": e["pk"], "sk": e["sk"]} for e in entries if e["pk"] == {"S": schedule_id}],
        )
        closing = dict.fromkeys(
            str(it.value(record["occurrence_id"]))
            for record in (*newest, *outboxed)
            if record.get("status") == {"S": _SCHEDULED}
        )
        closing.update(
            dict.fromkeys(str(it.value(r["occurrence_id"])) for r in _left_unsent(newest))
        )
        return len(
            self._transition(
                list(closing),
                set_=lambda _: {
                    "status": status.value,
                    "reason": reason,
                    "finished_at": it.iso(now),
                },
                remove=OUTBOX_ATTRIBUTES,
                condition=(
                    "#status = :scheduled OR (#status = :admitted AND "
                    "(attribute_not_exists(#attempts) OR #attempts = :zero))"
                ),
                names={"#status": "status", "#attempts": "attempts"},
                values={
                    ":scheduled": {"S": _SCHEDULED},
                    ":admitted": {"S": RunStatus.ADMITTED.value},
                    ":zero": {"N": "0"},
                },
            )
        )

    def requeue_unsent(self, schedule_id: str) -> int:
        """Put back in the outbox what the last pass that stored the
        schedule's slots may have left unsent (``_left_unsent``), for an
        edit, which stops the planning of the old version's slots. A record
        stored admitted is out of the outbox from its write, stamped sent
        (``_write_occurrence``); if the pass that wrote it died before the
        send, the next pass plans its slot again and sends it, unless the
        schedule changed meanwhile. Dispatch then sends it, and the worker's
        start decision runs it (an edit keeps a planned slot's version). A
        pause or a delete closes it instead (``close_scheduled``). Returns
        how many."""
        left = _left_unsent(self._newest(schedule_id))
        return self.into_outbox([it.run_from_item(record) for record in left])

    def _newest(self, schedule_id: str) -> list[dict[str, Any]]:
        """The schedule's newest records, read consistently: ``NEWEST_CHECKED``
        of them, then on while they are the last pass's left unsent
        (``_left_unsent``)."""
        records = self._query(
            it.newest_first_request(
                self.tables.occurrences, schedule_id, consistent=True, page=NEWEST_CHECKED
            )
        )
        newest = list(itertools.islice(records, NEWEST_CHECKED))
        left = _left_unsent(newest)
        if left and len(newest) == NEWEST_CHECKED:
            pass_of = left[0]
            newest += itertools.takewhile(
                lambda record: _unsent(record) and _same_pass(record, pass_of), records
            )
        return newest

    def withdraw_planned(self, schedule_id: str, after: datetime) -> int:
        """The schedule's records after ``after`` (one strongly consistent
        query of its partition), each deleted on the condition that it has
        still not started."""
        request = it.newest_first_request(
            self.tables.occurrences, schedule_id, consistent=True, page=500
        )
        request["ExpressionAttributeValues"] = {
            ":pk": {"S": schedule_id},
            ":low": {"S": f"{it.RECORD_PREFIX}{it.iso(after)}#{it.KEY_CEILING}"},
            ":high": {"S": it.RECORD_PREFIX + it.KEY_CEILING},
        }
        condition = (
            "#status IN (:scheduled, :admitted) AND kind = :slot AND "
            "(attribute_not_exists(attempts) OR attempts = :zero)"
        )
        values = {
            ":scheduled": {"S": _SCHEDULED},
            ":admitted": {"S": RunStatus.ADMITTED.value},
            ":zero": {"N": "0"},
            ":slot": {"S": RunKind.SCHEDULED.value},
        }
        keys = [{"pk": i["pk"], "sk": i["sk"]} for i in self._query(request)]
        return sum(self._each(lambda key: self._delete(key, condition, values), keys))

    def mark_sent(self, occurrence_ids: Sequence[str], now: datetime) -> int:
        return len(
            self._transition(
                occurrence_ids,
                set_=lambda _: {"sent_at": it.iso(now)},
                remove=OUTBOX_ATTRIBUTES,
                condition="attribute_exists(#outbox_key) AND #status <> :scheduled",
                names={"#status": "status"},
                values={":scheduled": {"S": _SCHEDULED}},
            )
        )

    def into_outbox(self, runs: Sequence[Run]) -> int:
        return sum(self._each(self._into_outbox, runs))

    def _into_outbox(self, run: Run) -> bool:
        """A record stored admitted whose intent could not be sent: into the
        outbox (unless it started, or is there already)."""
        return (
            self._update(
                self.tables.occurrences,
                it.record_key_of_run(run),
                set_={
                    "outbox_key": it.outbox_key(run.bucket, run.scheduled_at, run.occurrence_id),
                    "pending_shard": run.shard,
                },
                remove=("sent_at",),
                condition=f"{_UNSTARTED} AND attribute_not_exists(#outbox_key)",
                names={**_UNSTARTED_NAMES, "#outbox_key": "outbox_key"},
                values=_unstarted_values(run),
            )
            is not None
        )


# A record stored admitted that no worker has started: what a withdrawal
# closes and what a failed send puts back in the outbox.
_UNSTARTED: Final = "#occurrence_id = :occurrence_id AND #status = :admitted AND #attempts = :zero"
_UNSTARTED_NAMES: Final = {
    "#occurrence_id": "occurrence_id",
    "#status": "status",
    "#attempts": "attempts",
}


def _unstarted_values(run: Run) -> dict[str, Any]:
    return {
        ":occurrence_id": {"S": run.occurrence_id},
        ":admitted": {"S": RunStatus.ADMITTED.value},
        ":zero": {"N": "0"},
    }


def _left_unsent(newest: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Of a schedule's newest records (newest first), what the last pass that
    stored its slots may have left unsent: its records (stamped by it, one
    ``materialized_at``) stored admitted and never started, from the newest
    on. A pass that died is the last to store the schedule's slots: nothing
    planned them since. One that did not sent them already: they are sent
    again, a pass's worth at most."""
    left: list[Mapping[str, Any]] = []
    for record in newest:
        if not _unsent(record):
            continue
        if left and not _same_pass(record, left[0]):
            break
        left.append(record)
    return left


def _same_pass(record: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    return record.get("materialized_at") == other.get("materialized_at")


def _unsent(record: Mapping[str, Any]) -> bool:
    """A record stored admitted whose intent may never have been sent: not
    started, not in the outbox (which dispatch sends from)."""
    return (
        record.get("status") == {"S": RunStatus.ADMITTED.value}
        and record.get("attempts", {"N": "0"}) == {"N": "0"}
        and "outbox_key" not in record
    )


def _withdrawn(record: Mapping[str, Any]) -> bool:
    """A record closed unstarted because its schedule moved while it was planned."""
    reason = record.get("reason")
    attempts = record.get("attempts", {"N": "0"})
    return reason == {"S": WITHDRAWN} and attempts == {"N": "0"}


def _instant_of_business_key(key: str) -> datetime | None:
    """About when a business key's slot falls: its wall time read as UTC (a
    trigger's key holds its UTC instant), or None for text of no such form."""
    parts = key.split("#")
    if len(parts) == 3:
        text = parts[1]
    elif len(parts) >= 3 and parts[1] in ("trigger", "summary"):
        text = parts[2]
    else:
        return None
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        return None
    return instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant.astimezone(UTC)
