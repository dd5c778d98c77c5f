"""The schedules (``ScheduleStore``'s reads and edits) in the Schedules table.

A schedule is a HEAD item (its current version, state and next slot) and one
immutable item per version. Every rule is a condition expression on the
write that applies it, never a read followed by a blind write:

- create: the HEAD, version 1 and the idempotency record are put together,
  each on ``attribute_not_exists``;
- edit: the HEAD update (conditioned on the version read, ``next_due`` and
  not deleted) and the put of the new version item, in one transaction;
- pause, resume, quarantine, delete: one conditional update of the HEAD.

A HEAD in the ``due`` index names its next slot (a seed); one without
``due_key`` but with ``next_due`` leaves its schedule to its chain (the plan
log, plan_log.py), and ``get`` shows the next slot its newest planned record
names. Versions never change: they are kept decoded in a bounded cache, the
only state a ``DynamoSchedules`` holds besides its client and settings.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from adapters.dynamodb import items as it
from adapters.dynamodb.tables import DynamoTables, TableNames, _untoken
from adapters.sealing import HeaderSeal
from domain.schedule import (
    Quarantine,
    QuarantineComponent,
    Schedule,
    ScheduleVersion,
    quarantine_to_text,
)
from service.ports import (
    Page,
)

# How many partitions of the "due" index the HEADs spread over. A deployment
# constant: every writer and reader of one table must use the same value.
DUE_SHARDS: Final = 16
# Versions kept decoded in memory (immutable once written; bounded, so a
# tick's memory does not grow with the number of schedules).
VERSION_CACHE_SIZE: Final = 4096

_log = logging.getLogger("duetime")


class DynamoSchedules(DynamoTables):
    """The HEADs and versions of the Schedules table, and the version cache."""

    def __init__(
        self,
        client: Any,
        tables: TableNames,
        *,
        due_shards: int = DUE_SHARDS,
        concurrency: int = 1,
        seal: HeaderSeal | None = None,
    ) -> None:
        """``seal``: webhook header values are sealed in the version items this
        store writes and opened in those it reads (adapters.sealing); without
        it they are written in the body, and sealed ones read as names with
        empty values."""
        if due_shards < 1:
            raise ValueError("due_shards must be at least 1")
        DynamoTables.__init__(self, client, tables, concurrency=concurrency)
        self.seal = seal
        self.due_shards = due_shards
        self._versions: OrderedDict[tuple[str, int], ScheduleVersion] = OrderedDict()
        self._versions_lock = threading.Lock()
        # Versions whose stored form no rule reads any more, with the error (bounded).
        self._unreadable: dict[tuple[str, int], Exception] = {}

    def create(
        self, schedule: Schedule, idempotency_key: str | None = None
    ) -> tuple[Schedule, bool]:
        t = self.tables.schedules
        operations = [
            self._put_new(t, it.head_item(schedule, self.due_shards)),
            self._put_new(t, it.version_item(schedule.current, self.seal)),
        ]
        if idempotency_key is not None:
            record = {
                **it.create_key(idempotency_key),
                **it.attrs(
                    {"schedule_id": schedule.schedule_id, "created_at": it.iso(schedule.created_at)}
                ),
            }
            operations.insert(0, self._put_new(t, record))
        reasons = self._transact(operations)
        if reasons is None:
            self._remember(schedule.current)
            return schedule, True
        if idempotency_key is not None and reasons[0] == "ConditionalCheckFailed":
            answer = self.client.get_item(
                TableName=t, Key=it.create_key(idempotency_key), ConsistentRead=True
            )
            first_id = str(it.plain(answer["Item"])["schedule_id"])
            first = self.get(first_id)
            assert first is not None, "a create key and its schedule are written together"
            return first, False
        raise ValueError(f"schedule {schedule.schedule_id} exists")

    def _schedules(
        self, heads: Sequence[Mapping[str, Any]], *, quarantine: bool = False
    ) -> list[Schedule]:
        """The schedules of ``heads``, leaving out one whose stored version can no
        longer be read (logged by ``get_versions``); with ``quarantine``, that
        one is quarantined."""
        pairs = [(str(it.value(h["schedule_id"])), int(it.value(h["version"]))) for h in heads]
        versions = self.get_versions(pairs)
        found: list[Schedule] = []
        for head, pair in zip(heads, pairs, strict=True):
            version = versions.get(pair)
            if version is not None:
                found.append(it.schedule_from_head(head, version))
            elif quarantine and pair in self._unreadable:
                error = self._unreadable[pair]
                now = datetime.now(UTC)
                self.quarantine(*pair, Quarantine.of(error, QuarantineComponent.PLAN, now))
        return found

    def get(self, schedule_id: str) -> Schedule | None:
        """The schedule, its ``next_due`` the first slot not planned yet: named
        by its HEAD, or by its newest planned record (``_with_chain``)."""
        head = self._head(schedule_id)
        return None if head is None else self._with_chain(self._schedules([head]), [head])[0]

    def head(self, schedule_id: str) -> Schedule | None:
        """The schedule as its HEAD stores it (one read; ``next_due`` may be
        behind, when its chain of records carries it): for checks of its
        version and state."""
        head = self._head(schedule_id)
        return None if head is None else self._schedules([head])[0]

    def _head(self, schedule_id: str) -> dict[str, Any] | None:
        answer = self.client.get_item(
            TableName=self.tables.schedules, Key=it.head_key(schedule_id), ConsistentRead=True
        )
        head: dict[str, Any] | None = answer.get("Item")
        return head

    def _with_chain(
        self, schedules: list[Schedule], heads: Sequence[Mapping[str, Any]]
    ) -> list[Schedule]:
        """``schedules`` (read from ``heads``), each one its chain carries
        given the ``next_due`` its newest planned record names."""
        chained = {
            str(it.value(h["schedule_id"]))
            for h in heads
            if "due_key" not in h and "next_due" in h and "deleted_at" not in h
        }
        if not chained:
            return schedules

        def one(schedule: Schedule) -> Schedule:
            if schedule.schedule_id not in chained:
                return schedule
            found = self._chain_head(schedule.schedule_id)
            if found is None:
                return schedule
            next_due, last_at = found
            return replace(schedule, next_due=next_due, last_materialized_at=last_at)

        return self._each(one, schedules)

    def _chain_head(self, schedule_id: str) -> tuple[datetime | None, datetime] | None:
        """What the schedule's newest planned record says: the next slot (None:
        its spec had no slot after it) and its own instant, the last planned;
        None when none of the newest records says."""
        request = {
            **it.newest_first_request(
                self.tables.occurrences, schedule_id, consistent=True, page=25
            ),
            "ProjectionExpression": "#next_due, #chain_end, #scheduled_at",
            "ExpressionAttributeNames": {
                "#next_due": "next_due",
                "#chain_end": "chain_end",
                "#scheduled_at": "scheduled_at",
            },
        }
        for seen, item in enumerate(self._query(request)):
            if "next_due" in item or "chain_end" in item:
                last_at = it.from_iso(str(it.value(item["scheduled_at"])))
                if "chain_end" in item:
                    return None, last_at
                return it.from_iso(str(it.value(item["next_due"]))), last_at
            if seen >= 100:
                break
        return None

    def get_version(self, schedule_id: str, version: int) -> ScheduleVersion | None:
        return self.get_versions([(schedule_id, version)]).get((schedule_id, version))

    def get_versions(
        self, keys: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], ScheduleVersion]:
        wanted = set(keys)
        found = {k: v for k in wanted if (v := self._versions.get(k)) is not None}
        missing = sorted(wanted - found.keys())
        if missing:
            for item in self._batch_get(
                self.tables.schedules, [it.version_key(sid, v) for sid, v in missing]
            ):
                try:
                    value = it.version_from_item(item, self.seal)
                except Exception as error:  # a rule tightened since it was saved
                    key = (str(it.value(item["schedule_id"])), int(it.value(item["version"])))
                    _log.error(
                        "stored schedule cannot be read",
                        extra={"schedule_id": key[0], "version": key[1], "error": repr(error)},
                    )
                    with self._versions_lock:
                        self._unreadable[key] = error
                        while len(self._unreadable) > VERSION_CACHE_SIZE:
                            self._unreadable.pop(next(iter(self._unreadable)))
                    continue
                self._remember(value)
                found[(value.schedule_id, value.version)] = value
        return found

    def versions(
        self, schedule_id: str, limit: int, token: str | None = None
    ) -> Page[ScheduleVersion]:
        """One query on the schedule's partition, version items (``V#...``) in
        key order, which is version order (the number is zero-padded)."""
        pk = it.schedule_pk(schedule_id)
        if token is not None:
            start = _untoken(token)
            if set(start) != {"pk", "sk"} or start.get("pk") != {"S": pk}:
                raise ValueError("not a page token from this store")
            sk = start["sk"]
            if not isinstance(sk, dict) or not str(sk.get("S", "")).startswith("V#"):
                raise ValueError("not a page token from this store")
        found, next_token = self._query_page(
            {
                "TableName": self.tables.schedules,
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :v)",
                "ExpressionAttributeValues": {":pk": {"S": pk}, ":v": {"S": "V#"}},
                "ConsistentRead": True,
            },
            limit,
            token,
            ("pk", "sk"),
        )
        items: list[ScheduleVersion] = []
        for item in found:
            value = it.version_from_item(item, self.seal)
            self._remember(value)
            items.append(value)
        return Page(tuple(items), next_token)

    def _remember(self, version: ScheduleVersion) -> None:
        with self._versions_lock:
            self._versions[(version.schedule_id, version.version)] = version
            while len(self._versions) > VERSION_CACHE_SIZE:
                self._versions.popitem(last=False)

    def list_schedules(
        self, limit: int, token: str | None = None, *, next_due: bool = True
    ) -> Page[Schedule]:
        found, next_token = self._query_page(
            {
                "TableName": self.tables.schedules,
                "IndexName": "listing",
                "KeyConditionExpression": "#entity = :entity",
                "ExpressionAttributeNames": {"#entity": "entity"},
                "ExpressionAttributeValues": {":entity": {"S": it.ENTITY_SCHEDULE}},
            },
            limit,
            token,
            ("pk", "sk", "entity", "created_key"),
        )
        heads = {
            str(it.value(h["pk"])): h
            for h in self._batch_get(
                self.tables.schedules, [{"pk": f["pk"], "sk": f["sk"]} for f in found]
            )
        }
        ordered = [
            heads[pk]
            for f in found
            if (pk := str(it.value(f["pk"]))) in heads and "deleted_at" not in heads[pk]
        ]
        schedules = self._schedules(ordered)
        if next_due:  # one query of the newest records per schedule its chain carries
            schedules = self._with_chain(schedules, ordered)
        return Page(tuple(schedules), next_token)

    @staticmethod
    def _next_due_condition(expected: datetime | None) -> tuple[str, dict[str, Any]]:
        """The HEAD still names ``expected`` (the ``next_due`` the caller read),
        or leaves its schedule to the chain, where no planner moves the HEAD."""
        chain = "attribute_not_exists(#due_key) AND attribute_exists(#next_due)"
        if expected is None:
            return f"(attribute_not_exists(#next_due) OR ({chain}))", {}
        return (
            f"(#next_due = :expected_due OR ({chain}))",
            {":expected_due": {"S": it.iso(expected)}},
        )

    @staticmethod
    def _next_due_fields(schedule_id: str, next_due: datetime | None) -> dict[str, Any]:
        return {
            "next_due": it.opt_iso(next_due),
            "due_key": None if next_due is None else it.due_key(next_due, schedule_id),
        }

    def save_version(
        self,
        new: ScheduleVersion,
        *,
        expected_next_due: datetime | None,
        next_due: datetime | None,
        now: datetime,
    ) -> bool:
        due_condition, due_values = self._next_due_condition(expected_next_due)
        t = self.tables.schedules
        reasons = self._transact(
            [
                self._update_op(
                    t,
                    it.head_key(new.schedule_id),
                    set_={
                        "version": new.version,
                        "updated_at": it.iso(now),
                        **self._next_due_fields(new.schedule_id, next_due),
                    },
                    remove=("quarantine",),
                    condition=(
                        "attribute_exists(pk) AND #version = :expected_version AND "
                        f"{due_condition} AND attribute_not_exists(#deleted_at)"
                    ),
                    names={"#deleted_at": "deleted_at"},
                    values={":expected_version": {"N": str(new.version - 1)}, **due_values},
                ),
                self._put_new(t, it.version_item(new, self.seal)),
            ]
        )
        if reasons is not None:
            return False
        self._remember(new)
        return True

    def pause(self, schedule_id: str, note: str | None, now: datetime) -> bool:
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_={"paused": True, "note": note, "updated_at": it.iso(now)},
                remove=("due_shard",),
                condition="attribute_exists(pk) AND attribute_not_exists(#deleted_at)",
                names={"#deleted_at": "deleted_at"},
            )
            is not None
        )

    def resume(
        self,
        schedule_id: str,
        *,
        expected_next_due: datetime | None,
        next_due: datetime | None,
        now: datetime,
    ) -> bool:
        due_condition, due_values = self._next_due_condition(expected_next_due)
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_={
                    "paused": False,
                    "note": None,
                    "updated_at": it.iso(now),
                    "due_shard": it.due_shard(schedule_id, self.due_shards),
                    **self._next_due_fields(schedule_id, next_due),
                },
                remove=("quarantine",),
                condition=(
                    "attribute_exists(pk) AND #paused = :true AND "
                    f"attribute_not_exists(#deleted_at) AND {due_condition}"
                ),
                names={"#deleted_at": "deleted_at"},
                values={":true": {"BOOL": True}, **due_values},
            )
            is not None
        )

    def quarantine(self, schedule_id: str, version: int, quarantine: Quarantine) -> bool:
        # Out of the due index by removing due_key (due_shard says paused or
        # not, and stays); save_version and resume set due_key again.
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_={"quarantine": quarantine_to_text(quarantine)},
                remove=("due_key",),
                condition=(
                    "attribute_exists(pk) AND #version = :version "
                    "AND attribute_not_exists(#deleted_at)"
                ),
                names={"#version": "version", "#deleted_at": "deleted_at"},
                values={":version": {"N": str(version)}},
            )
            is not None
        )

    def delete(self, schedule_id: str, now: datetime) -> bool:
        return (
            self._update(
                self.tables.schedules,
                it.head_key(schedule_id),
                set_={"deleted_at": it.iso(now), "updated_at": it.iso(now)},
                remove=("next_due", "due_key", "due_shard", "entity"),
                condition="attribute_exists(pk) AND attribute_not_exists(#deleted_at)",
            )
            is not None
        )
