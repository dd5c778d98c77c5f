"""Where near-term occurrences wait: partitions ``(time bucket, shard)``.

- ``shard`` = a stable hash (CRC-32) of the schedule id, mod the shard count:
  the same in every process and every Python (``hash()`` is salted per
  process, so it is never used).
- ``bucket`` = floor(instant / bucket width), counted from the Unix epoch.

An occurrence is placed in the bucket of ``max(scheduled_at, materialized_at)``.
A dispatcher walks a shard's buckets from the earliest that holds pending work
up to the bucket of its reach.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def shard_of(schedule_id: str, shards: int) -> int:
    """The shard a schedule's occurrences live in: CRC-32 of its id, mod ``shards``."""
    if shards < 1:
        raise ValueError("shards must be at least 1")
    return zlib.crc32(schedule_id.encode("utf-8")) % shards


def bucket_of(instant: datetime, bucket_s: int) -> int:
    """The time bucket an instant falls in."""
    if instant.tzinfo is None:
        raise ValueError("instant must be aware")
    micros = (instant - _EPOCH) // timedelta(microseconds=1)
    return micros // (bucket_s * 1_000_000)


def bucket_start(bucket: int, bucket_s: int) -> datetime:
    return _EPOCH + timedelta(seconds=bucket * bucket_s)


def partition_key(bucket: int, shard: int) -> str:
    """The partition ``"<bucket>#<shard>"`` (the pending index's partition key)."""
    return f"{bucket}#{shard}"


@dataclass(frozen=True)
class Partitioning:
    """A deployment's partition settings."""

    shards: int = 16
    bucket_s: int = 60

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise ValueError("shards must be at least 1")
        if self.bucket_s < 1:
            raise ValueError("bucket_s must be at least 1")

    def shard(self, schedule_id: str) -> int:
        return shard_of(schedule_id, self.shards)

    def bucket(self, instant: datetime) -> int:
        return bucket_of(instant, self.bucket_s)

    def placement(self, scheduled_at: datetime, materialized_at: datetime) -> int:
        """The bucket an occurrence waits in: that of max(scheduled_at, materialized_at)."""
        return self.bucket(max(scheduled_at, materialized_at))
