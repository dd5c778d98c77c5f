"""The leases and heartbeats (``LeaseStore``) in the leases table.

- a lease: conditional updates (free, expired or mine); a takeover increments
  the epoch; a release is conditioned on owner and epoch;
- a heartbeat: a put of its item (with a TTL, HEARTBEAT_RETENTION after its
  last beat, so the verdicts of deleted schedules leave the table);
  ``beat_if`` is conditioned on the beat it replaces.

``DynamoLeases`` holds a client, the table names and its settings, no
state: it is one of the three port objects ``dynamo_store`` builds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from adapters.dynamodb import items as it
from adapters.dynamodb.tables import DynamoTables, TableNames, conditional
from service.ports import Heartbeat, Lease, LeaseStore

# A heartbeat item not beaten for this long leaves the leases table by TTL
# (the verdict of a deleted schedule).
HEARTBEAT_RETENTION: Final = timedelta(days=7)
LEASES_TTL_ATTRIBUTE: Final = "expires_at_epoch"


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

    def leases(self) -> list[Lease]:
        """Every lease record, by shard: one key read per shard when the store
        knows the deployment's shard count (``lease_shards``), else a scan (a
        store built by hand in a test or a tool).

        Eventually consistent: every decision taken on a lease read is a
        conditional write (take, renew, release), so a stale read costs at
        most a refused write, at half the read units of a strong one."""
        if self.lease_shards is None:
            scan = {
                "TableName": self.tables.leases,
                "FilterExpression": "begins_with(pk, :prefix)",
                "ExpressionAttributeValues": {":prefix": {"S": "L#"}},
                "ConsistentRead": True,
            }
            found: Iterable[dict[str, Any]] = self._query(scan, scan=True)
        else:
            keys = [it.lease_key(shard) for shard in range(self.lease_shards)]
            found = self._batch_get(self.tables.leases, keys, consistent=False)
        return sorted((it.lease_from_item(item) for item in found), key=lambda x: x.shard)

    def beat(self, heartbeat: Heartbeat) -> None:
        expires = {"N": str(int((heartbeat.at + HEARTBEAT_RETENTION).timestamp()))}
        item = {**it.heartbeat_item(heartbeat), LEASES_TTL_ATTRIBUTE: expires}
        self.client.put_item(TableName=self.tables.leases, Item=item)

    def heartbeat(self, component: str) -> Heartbeat | None:
        answer = self.client.get_item(
            TableName=self.tables.leases, Key=it.heartbeat_key(component), ConsistentRead=True
        )
        item = answer.get("Item")
        return None if item is None else it.heartbeat_from_item(item)

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
        item = {**it.heartbeat_item(heartbeat), LEASES_TTL_ATTRIBUTE: expires}
        table = self.tables.leases
        return (
            conditional(self.client.put_item, TableName=table, Item=item, **condition) is not None
        )
