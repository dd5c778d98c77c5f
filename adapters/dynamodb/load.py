"""The load ledger on DynamoDB: items of the runs table, one per minute and shard.

Key ``pk = "L#<minute>#<shard>"``, ``sk = "L"``: attribute ``s<ss>`` counts the
intents due at second ``ss`` of that minute that a sender counted in that
shard (an ``ADD``, so concurrent senders never lose a count), ``f<ss>`` is the
claim of that second's surge (set to 1 once, by a conditional update on shard
0: who claimed it is on the tick's log line, and a full item stays one write
unit).
The items carry no index attribute and expire a day after their minute.

A pass reads the minutes it looks at, every shard, in one eventually
consistent ``BatchGetItem``: a count written moments before may be missed,
which costs that second its surge, never a delivery.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from adapters.dynamodb.tables import conditional
from service.planning.surge import LOAD_SHARDS, LoadLedger

SK: Final = "L"
EXPIRES_AFTER: Final = timedelta(days=1)


def minute_key(minute: datetime, shard: int) -> dict[str, Any]:
    return {"pk": {"S": f"L#{minute:%Y-%m-%dT%H:%M}#{shard}"}, "sk": {"S": SK}}


def _minute(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(second=0, microsecond=0)


class DynamoLoadLedger(LoadLedger):
    def __init__(self, client: Any, table: str, *, shards: int = LOAD_SHARDS) -> None:
        self.client = client
        self.table = table
        self.shards = shards

    def record(self, counts: Mapping[datetime, int], shard: int) -> None:
        by_minute: dict[datetime, dict[int, int]] = {}
        for second, count in counts.items():
            by_minute.setdefault(_minute(second), {})[second.second] = count
        for minute, seconds in sorted(by_minute.items()):
            names = {f"#s{s:02d}": f"s{s:02d}" for s in seconds}
            values: dict[str, Any] = {f":s{s:02d}": {"N": str(n)} for s, n in seconds.items()}
            values[":ttl"] = {"N": str(int((minute + EXPIRES_AFTER).timestamp()))}
            adds = ", ".join(f"#s{s:02d} :s{s:02d}" for s in sorted(seconds))
            self.client.update_item(
                TableName=self.table,
                Key=minute_key(minute, shard % self.shards),
                UpdateExpression=f"ADD {adds} SET expires_at_epoch = :ttl",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )

    def read(self, start: datetime, end: datetime) -> dict[datetime, int]:
        minutes = []
        minute = _minute(start)
        while minute <= end:
            minutes.append(minute)
            minute += timedelta(minutes=1)
        keys = [minute_key(m, shard) for m in minutes for shard in range(self.shards)]
        found: dict[datetime, int] = {}
        while keys:
            batch, keys = keys[:100], keys[100:]
            pending: dict[str, Any] = {self.table: {"Keys": batch}}
            while pending:
                answer = self.client.batch_get_item(RequestItems=pending)
                for item in answer.get("Responses", {}).get(self.table, []):
                    minute = datetime.strptime(
                        item["pk"]["S"].split("#")[1], "%Y-%m-%dT%H:%M"
                    ).replace(tzinfo=UTC)
                    for name, value in item.items():
                        if len(name) == 3 and name[0] == "s" and name[1:].isdigit():
                            second = minute + timedelta(seconds=int(name[1:]))
                            if start <= second <= end:
                                found[second] = found.get(second, 0) + int(value["N"])
                pending = answer.get("UnprocessedKeys") or {}
        return found

    def claim(self, second: datetime, owner: str) -> bool:
        name = f"f{second.second:02d}"
        claimed = conditional(
            self.client.update_item,
            TableName=self.table,
            Key=minute_key(_minute(second), 0),
            UpdateExpression="SET #f = :claimed",
            ConditionExpression="attribute_not_exists(#f)",
            ExpressionAttributeNames={"#f": name},
            ExpressionAttributeValues={":claimed": {"N": "1"}},
        )
        return claimed is not None
