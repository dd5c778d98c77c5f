"""The leases and heartbeats (``LeaseStore``) in the leases table.

- a lease: conditional updates (free, expired or mine); a takeover increments
  the epoch; a checkpoint write is conditioned on owner and epoch;
- a heartbeat: a put of its item, or of one attribute of its group's item
  (below); ``beat_if`` is conditioned on the beat it replaces.

``DynamoLeases`` holds a client, the table names and its settings, no
state: it can serve on its own, and ``DynamoStore`` inherits it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from botocore.exceptions import ClientError

from adapters.dynamodb import items as it
from adapters.dynamodb.tables import DynamoTables, TableNames, _failed_condition
from service.ports import Heartbeat, Lease, LeaseStore

# A heartbeat item not beaten for this long leaves the leases table by TTL
# (the verdict of a deleted schedule, a group nobody beats any more).
HEARTBEAT_RETENTION: Final = timedelta(days=7)
# A member of a heartbeat group this much older than the group's newest beat
# has gone away (a Lambda container that was recycled): its attribute is dropped.
MEMBER_RETENTION: Final = timedelta(hours=1)
LEASES_TTL_ATTRIBUTE: Final = "expires_at_epoch"
_MEMBER: Final = "m#"


class DynamoLeases(DynamoTables, LeaseStore):
    """The shards' leases and the components' heartbeats of the leases table."""

    def __init__(self, client: Any, tables: TableNames, *, lease_shards: int | None = None) -> None:
        """``lease_shards``: the deployment's shard count, so the leases are
        read by key rather than by a scan."""
        super().__init__(client, tables)
        self.lease_shards = lease_shards

    def acquire(self, shard: int, owner: str, now: datetime, ttl: timedelta) -> Lease | None:
        key = it.lease_key(shard)
        expires = it.iso(now + ttl)
        # Renew: mine and still live, the epoch stays.
        renewed = self._update(
            self.tables.leases,
            key,
            set_={"expires_at": expires},
            condition="#owner = :owner AND #expires_at > :now",
            names={"#owner": "owner"},
            values={":owner": {"S": owner}, ":now": {"S": it.iso(now)}},
            return_new=True,
        )
        if renewed is not None:
            return it.lease_from_item(renewed)
        # Take: free or expired (mine or another's), the epoch grows.
        taken = self._update(
            self.tables.leases,
            key,
            set_={"owner": owner, "expires_at": expires, "shard": shard},
            condition="attribute_not_exists(pk) OR #expires_at <= :now",
            values={":now": {"S": it.iso(now)}},
            increment=("epoch",),
            return_new=True,
        )
        return None if taken is None else it.lease_from_item(taken)

    def release(self, shard: int, owner: str, epoch: int, now: datetime) -> bool:
        return (
            self._update(
                self.tables.leases,
                it.lease_key(shard),
                set_={"expires_at": it.iso(now)},
                condition="#owner = :owner AND #epoch = :epoch",
                names={"#owner": "owner", "#epoch": "epoch"},
                values={":owner": {"S": owner}, ":epoch": {"N": str(epoch)}},
            )
            is not None
        )

    def set_checkpoint(self, shard: int, owner: str, epoch: int, checkpoint: int) -> bool:
        return (
            self._update(
                self.tables.leases,
                it.lease_key(shard),
                set_={"checkpoint": checkpoint},
                condition=(
                    "#owner = :owner AND #epoch = :epoch AND "
                    "(attribute_not_exists(#checkpoint) OR #checkpoint <= :set_checkpoint)"
                ),
                names={"#owner": "owner", "#epoch": "epoch"},
                values={":owner": {"S": owner}, ":epoch": {"N": str(epoch)}},
            )
            is not None
        )

    def leases(self) -> list[Lease]:
        """Every lease record, by shard: one key read per shard when the store
        knows the deployment's shard count (``lease_shards``), else a scan (a
        store built by hand in a test or a tool).

        Eventually consistent: every decision taken on a lease read is a
        conditional write (take, renew, checkpoint), so a stale read costs at
        most a refused write, at half the read units of a strong one."""
        if self.lease_shards is None:
            found: Iterable[dict[str, Any]] = self._scan_prefix("L#")
        else:
            keys = [it.lease_key(shard) for shard in range(self.lease_shards)]
            found = self._batch_get(self.tables.leases, keys, consistent=False)
        return sorted((it.lease_from_item(item) for item in found), key=lambda x: x.shard)

    def _scan_prefix(self, prefix: str) -> Iterator[dict[str, Any]]:
        request: dict[str, Any] = {
            "TableName": self.tables.leases,
            "FilterExpression": "begins_with(pk, :prefix)",
            "ExpressionAttributeValues": {":prefix": {"S": prefix}},
            "ConsistentRead": True,
        }
        while True:
            answer = self.client.scan(**request)
            yield from answer.get("Items", [])
            last = answer.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last

    # Heartbeats. A component without "/" ("tick", "watch:<schedule_id>") is one
    # item, overwritten by each beat. A component "<group>/<member>" (the tick
    # processes: "tick/<owner>") is one attribute of its group's item
    # ("H#tick/"), so members are counted with one key read, and a process
    # that goes away leaves no item behind: its attribute is dropped once it
    # is MEMBER_RETENTION older than the group's newest beat. Every heartbeat
    # item carries a TTL (HEARTBEAT_RETENTION after its last beat), so the
    # verdicts of deleted schedules and a group nobody beats any more leave
    # the table.

    def beat(self, heartbeat: Heartbeat) -> None:
        expires = {"N": str(int((heartbeat.at + HEARTBEAT_RETENTION).timestamp()))}
        group, member = _member(heartbeat.component)
        if member is None:
            item = {**it.heartbeat_item(heartbeat), LEASES_TTL_ATTRIBUTE: expires}
            self.client.put_item(TableName=self.tables.leases, Item=item)
            return
        self.client.update_item(
            TableName=self.tables.leases,
            Key=it.heartbeat_key(group),
            UpdateExpression="SET #member = :beat, #ttl = :expires",
            ExpressionAttributeNames={"#member": _MEMBER + member, "#ttl": LEASES_TTL_ATTRIBUTE},
            ExpressionAttributeValues={
                ":beat": {"M": _member_value(heartbeat)},
                ":expires": expires,
            },
        )

    def heartbeat(self, component: str) -> Heartbeat | None:
        group, member = _member(component)
        if member is not None:
            found = [h for h in self.heartbeats(group) if h.component == component]
            return found[0] if found else None
        answer = self.client.get_item(
            TableName=self.tables.leases, Key=it.heartbeat_key(component), ConsistentRead=True
        )
        item = answer.get("Item")
        return None if item is None else it.heartbeat_from_item(item)

    def heartbeats(self, prefix: str) -> list[Heartbeat]:
        """The members of a group whose component starts with ``prefix``; the
        prefix names the group ("tick/"): heartbeats are not listed across
        groups (that would be a scan)."""
        group, _ = _member(prefix)
        if "/" not in prefix:
            raise ValueError(f"heartbeats are listed within a group (e.g. 'tick/'), not {prefix!r}")
        answer = self.client.get_item(TableName=self.tables.leases, Key=it.heartbeat_key(group))
        item = answer.get("Item") or {}
        beats = sorted(
            (
                _member_beat(group, name, value)
                for name, value in item.items()
                if name.startswith(_MEMBER)
            ),
            key=lambda beat: beat.component,
        )
        self._forget_departed(group, item, beats)
        return [beat for beat in beats if beat.component.startswith(prefix)]

    def heartbeats_of(self, components: Sequence[str]) -> dict[str, Heartbeat]:
        """BatchGetItem, 100 keys a request, eventually consistent (half the read units)."""
        found: dict[str, Heartbeat] = {}
        for start in range(0, len(components), 100):
            keys = [it.heartbeat_key(c) for c in dict.fromkeys(components[start : start + 100])]
            request: dict[str, Any] = {self.tables.leases: {"Keys": keys}}
            while request:
                answer = self.client.batch_get_item(RequestItems=request)
                for item in answer.get("Responses", {}).get(self.tables.leases, []):
                    beat = it.heartbeat_from_item(item)
                    found[beat.component] = beat
                request = answer.get("UnprocessedKeys") or {}
        return found

    def beat_if(self, heartbeat: Heartbeat, expected_at: datetime | None) -> bool:
        expires = {"N": str(int((heartbeat.at + HEARTBEAT_RETENTION).timestamp()))}
        condition: dict[str, Any] = (
            {"ConditionExpression": "attribute_not_exists(pk)"}
            if expected_at is None
            else {
                "ConditionExpression": "#at = :at",
                "ExpressionAttributeNames": {"#at": "at"},
                "ExpressionAttributeValues": {":at": {"S": it.iso(expected_at)}},
            }
        )
        try:
            self.client.put_item(
                TableName=self.tables.leases,
                Item={**it.heartbeat_item(heartbeat), LEASES_TTL_ATTRIBUTE: expires},
                **condition,
            )
        except ClientError as error:
            if _failed_condition(error):
                return False
            raise
        return True

    def _forget_departed(
        self, group: str, item: Mapping[str, Any], beats: Sequence[Heartbeat]
    ) -> None:
        """Drop the members not seen for MEMBER_RETENTION before the newest beat,
        unless one of them beat again meanwhile (a condition on each ``at``)."""
        if not beats:
            return
        newest = max(beat.at for beat in beats)
        gone = [
            _MEMBER + beat.component[len(group) :]
            for beat in beats
            if beat.at < newest - MEMBER_RETENTION
        ]
        if not gone:
            return
        names = {f"#m{i}": name for i, name in enumerate(gone)}
        values = {f":at{i}": item[name]["M"]["at"] for i, name in enumerate(gone)}
        try:
            self.client.update_item(
                TableName=self.tables.leases,
                Key=it.heartbeat_key(group),
                UpdateExpression="REMOVE " + ", ".join(names),
                ConditionExpression=" AND ".join(f"#m{i}.#at = :at{i}" for i in range(len(gone))),
                ExpressionAttributeNames={**names, "#at": "at"},
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if not _failed_condition(error):
                raise


def _member(component: str) -> tuple[str, str | None]:
    """("tick/", "owner") for "tick/owner"; (component, None) without a "/"."""
    group, slash, member = component.partition("/")
    return (group + slash, member) if slash else (component, None)


def _member_value(heartbeat: Heartbeat) -> dict[str, Any]:
    return {
        "at": {"S": it.iso(heartbeat.at)},
        "detail": {"S": json.dumps(dict(heartbeat.detail), sort_keys=True)},
    }


def _member_beat(group: str, name: str, value: Mapping[str, Any]) -> Heartbeat:
    fields = value["M"]
    return Heartbeat(
        group + name[len(_MEMBER) :],
        it.from_iso(fields["at"]["S"]),
        json.loads(fields["detail"]["S"]),
    )
