"""How duetime's values become DynamoDB items, and back.

- Instants are ISO 8601 UTC strings of one fixed width with microseconds and a
  ``Z`` (``2026-12-01T09:00:00.000000Z``), so string order is time order and a
  condition such as ``expires_at <= :now`` compares instants. The TTL attribute
  is the one epoch number.
- Wall times are naive ISO text; they are never stored without their zone
  (the zone is in the schedule version).
- Free-form values (a version's parameters, a run's result and progress, a
  heartbeat's detail) are JSON text, so a float in a payload never meets
  DynamoDB's number rules.
- A run's attempt log is a list of maps (text and integers only), so the run
  store appends an attempt and closes the last one inside one conditional
  update, without reading the record first.
- An attribute whose value is None is left out of the item.

Keys, per table:

=============  ======================  ==============================
table          pk                      sk
=============  ======================  ==============================
Schedules      ``S#<schedule_id>``     ``HEAD`` / ``V#<version:08d>``
Schedules      ``K#<idempotency key>`` ``CREATE``
Runs           ``<schedule_id>``       ``R#<scheduled_at>#`` (record)
Runs           ``P#<due hour>``        ``<minute>#<token>#<chunk>`` (plan page)
Leases         ``L#<shard:06d>`` / ``H#<component>``
=============  ======================  ==============================

An occurrence is one item, its *record*, written once by a conditional put
(``attribute_not_exists``) and then changed only by transitions. It is keyed
by its schedule and instant, not by its id: one put refuses both a second
write of the same occurrence and another version's occurrence at the same
instant (a slot planned under the old version keeps it). The one duplicate a
key by instant cannot refuse is a slot's wall time at two instants, which
only an edit that changes the zone can make; the store checks those slots by
their business key before it writes them (``DynamoRunRecords._slot_taken``). A
schedule's records are listed by time from the table itself.

While a record is pending it has ``pending_shard`` and ``outbox_key``
(``<bucket:012d>#<scheduled_at>#<occurrence_id>``), the keys of the sparse
``outbox`` index.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from adapters.sealing import HeaderSeal
from domain.errors import InvalidSchedule
from domain.identity import parse_occurrence_id
from domain.run import AttemptRecord, Run, RunKind, RunStatus
from domain.schedule import (
    Schedule,
    ScheduleState,
    ScheduleVersion,
    add_clamped,
    quarantine_from_text,
    quarantine_to_text,
    version_from_dict,
    version_to_dict,
)
from service.ports import Heartbeat, Lease

Item = dict[str, Any]  # a low-level attribute map: {"name": {"S": "..."}}

HEAD: Final = "HEAD"
CREATE: Final = "CREATE"
ENTITY_SCHEDULE: Final = "schedule"
# Greater than every character of a schedule or occurrence id: "<instant>#~"
# is an upper bound for every key "<instant>#<id>" at that instant.
KEY_CEILING: Final = "~"

_ISO: Final = "%Y-%m-%dT%H:%M:%S.%fZ"
_ISO_WIDTH: Final = len("2026-12-01T09:00:00.000000Z")
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


# --- values -------------------------------------------------------------------------------


def iso(instant: datetime) -> str:
    """An aware instant as fixed-width ISO UTC text."""
    if instant.tzinfo is None:
        raise ValueError("instants are stored aware")
    return instant.astimezone(UTC).strftime(_ISO)


def opt_iso(instant: datetime | None) -> str | None:
    return None if instant is None else iso(instant)


def from_iso(text: str) -> datetime:
    """The instant ``iso`` wrote. Read by ``fromisoformat`` once the text has
    ``iso``'s width and ``Z``: 0.1 us against strptime's 5, and a run or
    schedule read has about five of them (the worker reads both every run)."""
    if len(text) != _ISO_WIDTH or text[-1] != "Z":
        raise ValueError(f"{text!r} is not a stored instant like 2026-12-01T09:00:00.000000Z")
    return datetime.fromisoformat(text)


def _opt_from_iso(text: Any) -> datetime | None:
    return None if text is None else from_iso(str(text))


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True)


def attrs(values: Mapping[str, Any]) -> Item:
    """Plain values (str, int, bool) as an attribute map; None values are left out."""
    return {name: _serializer.serialize(v) for name, v in values.items() if v is not None}


def attr(plain_value: Any) -> dict[str, Any]:
    """One plain value as an attribute value (``{"S": ...}``, ``{"N": ...}``...)."""
    return dict(_serializer.serialize(plain_value))


def value(attribute: Mapping[str, Any]) -> Any:
    return _deserializer.deserialize(attribute)


def plain(item: Mapping[str, Any]) -> dict[str, Any]:
    """An attribute map as plain values (numbers come back as Decimal)."""
    return {name: _deserializer.deserialize(v) for name, v in item.items()}


# --- keys -------------------------------------------------------------------------------


def schedule_pk(schedule_id: str) -> str:
    return f"S#{schedule_id}"


def head_key(schedule_id: str) -> Item:
    return attrs({"pk": schedule_pk(schedule_id), "sk": HEAD})


def head_active(head: Mapping[str, Any], version: int | None = None) -> bool:
    """Whether a HEAD's schedule may start runs (at ``version``, if given): not
    paused, deleted or quarantined. What planning and admission read; the
    writes that plan check the same as their condition (``ACTIVE_CONDITION``)."""
    return (
        (version is None or head.get("version") == {"N": str(version)})
        and head.get("paused", {"BOOL": False}) == {"BOOL": False}
        and "deleted_at" not in head
        and "quarantine" not in head
    )


# The same rule as a condition on a HEAD at ``:expected_version``.
ACTIVE_CONDITION = (
    "#version = :expected_version AND #paused = :false AND "
    "attribute_not_exists(#deleted_at) AND attribute_not_exists(#quarantine)"
)
ACTIVE_NAMES: dict[str, str] = {
    "#version": "version",
    "#paused": "paused",
    "#deleted_at": "deleted_at",
    "#quarantine": "quarantine",
}


def version_key(schedule_id: str, version: int) -> Item:
    return attrs({"pk": schedule_pk(schedule_id), "sk": f"V#{version:08d}"})


def create_key(idempotency_key: str) -> Item:
    return attrs({"pk": f"K#{idempotency_key}", "sk": CREATE})


def schedule_of_business_key(business_key: str) -> str:
    """A business key starts with its schedule id (which holds no ``#``)."""
    return business_key.split("#", 1)[0]


RECORD_PREFIX: Final = "R#"


def record_sort_key(scheduled_at: datetime) -> str:
    """``R#<scheduled_at>#``: one record per instant of a schedule, whatever
    its version or kind (see the module's docstring)."""
    return f"{RECORD_PREFIX}{iso(scheduled_at)}#"


def record_bound(instant: datetime) -> str:
    """``R#<instant>``: after every record key before ``instant``, before every
    record key at or after it (no record key is this text itself)."""
    return f"{RECORD_PREFIX}{iso(instant)}"


def record_key(schedule_id: str, scheduled_at: datetime) -> Item:
    """The record of a schedule's occurrence at ``scheduled_at``."""
    return {"pk": {"S": schedule_id}, "sk": {"S": record_sort_key(scheduled_at)}}


def record_key_of(occurrence_id: str) -> Item | None:
    """The record key an occurrence id names (its schedule and instant), or
    None for text that is not an occurrence id. The record there may hold
    another occurrence (another version's at that instant): compare ids."""
    try:
        identity = parse_occurrence_id(occurrence_id)
    except InvalidSchedule:
        return None
    return record_key(identity.schedule_id, identity.scheduled_at)


def record_key_of_run(run: Run) -> Item:
    return record_key(run.schedule_id, run.scheduled_at)


def newest_first_request(
    table: str,
    schedule_id: str,
    *,
    before: str | None = None,
    up_to: datetime | None = None,
    consistent: bool = False,
    page: int = 100,
) -> dict[str, Any]:
    """The query of a schedule's records in the occurrences ``table``, newest
    instant first: up to the record sort key ``before`` (itself included: the
    caller skips it), or up to the instant ``up_to``."""
    high = RECORD_PREFIX + KEY_CEILING
    if before is not None:
        high = before
    elif up_to is not None:
        high = f"{RECORD_PREFIX}{iso(up_to)}#{KEY_CEILING}"
    return {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk AND sk BETWEEN :low AND :high",
        "ExpressionAttributeValues": {
            ":pk": {"S": schedule_id},
            ":low": {"S": RECORD_PREFIX},
            ":high": {"S": high},
        },
        "ScanIndexForward": False,
        "ConsistentRead": consistent,
        "Limit": page,
    }


def lease_key(shard: int) -> Item:
    return attrs({"pk": f"L#{shard:06d}"})


def heartbeat_key(component: str) -> Item:
    return attrs({"pk": f"H#{component}"})


def due_shard(schedule_id: str, due_shards: int) -> str:
    """Which partition of the "due" index a schedule sits in (stable, CRC-32)."""
    return str(zlib.crc32(schedule_id.encode("utf-8")) % due_shards)


def due_key(next_due: datetime, schedule_id: str) -> str:
    return f"{iso(next_due)}#{schedule_id}"


# --- plan pages -----------------------------------------------------------------------
#
# A planning pass writes the next slots of the schedules it plans as pages,
# read back with strong consistency (no index): one item per due minute
# (chunked), in the Runs table under a partition of its own per due hour,
# ``P#<hour>`` / ``<minute>#<token>#<chunk>``. An entry is
# ``<schedule_id>#<version>``, with ``#<microseconds past the minute>`` when
# the slot is not on the minute's start; entries are separated by newlines.
# Schedule ids hold neither ``#`` nor a newline.

PAGE_PREFIX: Final = "P#"
PAGE_ENTRIES: Final = 4000  # entries an item holds at most (about 100 KB)


def page_minute(instant: datetime) -> datetime:
    return instant.astimezone(UTC).replace(second=0, microsecond=0)


def page_pk(minute: datetime) -> str:
    """The partition of a due hour's pages: ``P#2026-12-01T10``."""
    return f"{PAGE_PREFIX}{iso(minute)[:13]}"


def page_items(
    entries: Iterable[tuple[datetime, str, int]], token: str, retention: timedelta
) -> list[Item]:
    """The items that hold ``entries`` (next slot, schedule, version), one or
    more per due minute, in due order; ``token`` tells apart the pages of two
    writers of one minute. Each expires ``retention`` after its minute."""
    by_minute: dict[datetime, list[str]] = {}
    for at, schedule_id, version in sorted(set(entries)):
        minute = page_minute(at)
        offset = at - minute
        text = f"{schedule_id}#{version}"
        if offset:
            text += f"#{offset // timedelta(microseconds=1)}"
        by_minute.setdefault(minute, []).append(text)
    found: list[Item] = []
    for minute, texts in sorted(by_minute.items()):
        for chunk, start in enumerate(range(0, len(texts), PAGE_ENTRIES)):
            found.append(
                attrs(
                    {
                        "pk": page_pk(minute),
                        "sk": f"{iso(minute)}#{token}#{chunk:04d}",
                        "entries": "\n".join(texts[start : start + PAGE_ENTRIES]),
                        "expires_at_epoch": int((minute + retention).timestamp()),
                    }
                )
            )
    return found


def item_units(item: Mapping[str, Any]) -> int:
    """The write units of an item (1 KB each), by the length of its names and
    values: a bound above DynamoDB's own size for these plain items."""
    size = sum(len(name) + len(str(value(v))) for name, v in item.items())
    return max(1, -(-size // 1024))


def page_entries(item: Mapping[str, Any]) -> list[tuple[datetime, str, int]]:
    """The (next slot, schedule, version) entries of a page item."""
    minute = from_iso(str(value(item["sk"])).split("#", 1)[0])
    found: list[tuple[datetime, str, int]] = []
    for text in str(value(item["entries"])).split("\n"):
        parts = text.split("#")
        offset = timedelta(microseconds=int(parts[2])) if len(parts) > 2 else timedelta(0)
        found.append((minute + offset, parts[0], int(parts[1])))
    return found


def outbox_bucket(bucket: int) -> str:
    """A bucket as the fixed-width prefix of an ``outbox_key`` (text order is bucket order)."""
    return f"{bucket:012d}"


def outbox_key(bucket: int, scheduled_at: datetime, occurrence_id: str) -> str:
    return f"{outbox_bucket(bucket)}#{iso(scheduled_at)}#{occurrence_id}"


# --- schedules ----------------------------------------------------------------------------


def head_item(schedule: Schedule, due_shards: int) -> Item:
    sid = schedule.schedule_id
    live = schedule.deleted_at is None
    return attrs(
        {
            "pk": schedule_pk(sid),
            "sk": HEAD,
            "schedule_id": sid,
            "version": schedule.version,
            "paused": schedule.state.paused,
            "note": schedule.state.note,
            "next_due": opt_iso(schedule.next_due),
            # Out of the due index while quarantined (the store's quarantine
            # removes due_key, an edit or a resume sets it again).
            "due_key": (
                None
                if schedule.next_due is None or schedule.quarantine is not None
                else due_key(schedule.next_due, sid)
            ),
            "due_shard": due_shard(sid, due_shards) if schedule.active else None,
            "last_materialized_at": opt_iso(schedule.last_materialized_at),
            "created_at": iso(schedule.created_at),
            "updated_at": iso(schedule.updated_at),
            "deleted_at": opt_iso(schedule.deleted_at),
            "entity": ENTITY_SCHEDULE if live else None,
            "created_key": f"{iso(schedule.created_at)}#{sid}",
            "quarantine": quarantine_to_text(schedule.quarantine),
        }
    )


def schedule_from_head(item: Mapping[str, Any], current: ScheduleVersion) -> Schedule:
    v = plain(item)
    return Schedule(
        schedule_id=str(v["schedule_id"]),
        version=int(v["version"]),
        state=ScheduleState(paused=bool(v.get("paused", False)), note=v.get("note")),
        current=current,
        next_due=_opt_from_iso(v.get("next_due")),
        last_materialized_at=_opt_from_iso(v.get("last_materialized_at")),
        created_at=from_iso(v["created_at"]),
        updated_at=from_iso(v["updated_at"]),
        deleted_at=_opt_from_iso(v.get("deleted_at")),
        quarantine=quarantine_from_text(v.get("quarantine")),
    )


# A version's webhook header values, sealed (adapters.sealing), when the store has a seal.
SEALED_HEADERS: Final = "sealed_headers"


def version_item(version: ScheduleVersion, seal: HeaderSeal | None = None) -> Item:
    """The version's item. With ``seal``, a webhook's header values leave the
    body (each name keeps an empty value) for ``sealed_headers``."""
    body = version_to_dict(version)
    sealed: str | None = None
    target = body.get("target")
    if seal is not None and isinstance(target, dict) and target.get("headers"):
        headers: dict[str, str] = target["headers"]
        sealed = seal.seal(version.schedule_id, version.version, headers)
        body = {**body, "target": {**target, "headers": dict.fromkeys(headers, "")}}
    return {
        **version_key(version.schedule_id, version.version),
        **attrs(
            {
                "schedule_id": version.schedule_id,
                "version": version.version,
                "created_at": iso(version.created_at),
                "body": _json(body),
                SEALED_HEADERS: sealed,
            }
        ),
    }


def version_from_item(item: Mapping[str, Any], seal: HeaderSeal | None = None) -> ScheduleVersion:
    """The version of an item. Sealed header values are opened with ``seal``;
    without one (the tick, the watchdog) the names keep their empty values."""
    v = plain(item)
    schedule_id, number = str(v["schedule_id"]), int(v["version"])
    body = json.loads(v["body"])
    sealed = v.get(SEALED_HEADERS)
    if sealed and seal is not None:
        target = body["target"]
        values = seal.open(schedule_id, number, str(sealed))
        body["target"] = {**target, "headers": {n: values[n] for n in target["headers"]}}
    return version_from_dict(schedule_id, number, from_iso(v["created_at"]), body)


# --- occurrences ----------------------------------------------------------------------------


def attempt_entry(attempt: AttemptRecord, *, numbered: bool = True) -> dict[str, Any]:
    """One attempt as an element of the record's ``attempt_log`` list (a map;
    None fields left out). An attempt's number is also its position in the
    list (from 1): the run store appends entries without it."""
    entry = {
        "number": attempt.number if numbered else None,
        "started_at": iso(attempt.started_at),
        "finished_at": opt_iso(attempt.finished_at),
        "outcome": attempt.outcome,
        "error": attempt.error,
    }
    return {name: v for name, v in entry.items() if v is not None}


def record_item(run: Run, retention: timedelta) -> Item:
    """A run's record. ``outbox_key`` and ``pending_shard`` exist only while it is pending."""
    expires = add_clamped(run.scheduled_at, retention)  # year 9999 does not overflow
    return {
        **record_key_of_run(run),
        **attrs(
            {
                "occurrence_id": run.occurrence_id,
                "business_key": run.business_key,
                "schedule_id": run.schedule_id,
                "version": run.version,
                "kind": run.kind.value,
                "scheduled_at": iso(run.scheduled_at),
                "wall": run.wall.isoformat(),
                "fold": run.fold,
                "bucket": run.bucket,
                "shard": run.shard,
                "outbox_key": (
                    outbox_key(run.bucket, run.scheduled_at, run.occurrence_id)
                    if run.pending
                    else None
                ),
                "pending_shard": run.shard if run.pending else None,
                "status": run.status.value,
                "materialized_at": opt_iso(run.materialized_at),
                "attempts": run.attempts,
                "admitted_at": opt_iso(run.admitted_at),
                "sent_at": opt_iso(run.sent_at),
                "started_at": opt_iso(run.started_at),
                "finished_at": opt_iso(run.finished_at),
                "reason": run.reason,
                "result": _json(None if run.result is None else dict(run.result)),
                "run_lease_expires_at": opt_iso(run.run_lease_expires_at),
                "attempt_log": [attempt_entry(a) for a in run.attempt_log] or None,
                "run_token_hash": run.run_token_hash,
                "progress": _json(None if run.progress is None else dict(run.progress)),
                "revision": run.revision or None,  # absent: 0
                "expires_at_epoch": int(expires.timestamp()),
            }
        ),
    }


def run_from_item(item: Mapping[str, Any]) -> Run:
    v = plain(item)
    entries = v.get("attempt_log") or []
    if isinstance(entries, str):  # the attempt log as JSON text, as it was first stored
        entries = json.loads(entries)
    attempt_log = tuple(
        AttemptRecord(
            number=int(a.get("number", position)),
            started_at=from_iso(a["started_at"]),
            finished_at=_opt_from_iso(a.get("finished_at")),
            outcome=a.get("outcome"),
            error=a.get("error"),
        )
        for position, a in enumerate(entries, start=1)
    )
    return Run(
        occurrence_id=str(v["occurrence_id"]),
        business_key=str(v["business_key"]),
        schedule_id=str(v["schedule_id"]),
        version=int(v["version"]),
        kind=RunKind(v["kind"]),
        scheduled_at=from_iso(v["scheduled_at"]),
        wall=datetime.fromisoformat(v["wall"]),
        fold=int(v["fold"]),
        bucket=int(v["bucket"]),
        shard=int(v["shard"]),
        status=RunStatus(v["status"]),
        pending="outbox_key" in v,
        materialized_at=_opt_from_iso(v.get("materialized_at")),
        attempts=int(v.get("attempts", 0)),
        admitted_at=_opt_from_iso(v.get("admitted_at")),
        sent_at=_opt_from_iso(v.get("sent_at")),
        started_at=_opt_from_iso(v.get("started_at")),
        finished_at=_opt_from_iso(v.get("finished_at")),
        reason=v.get("reason"),
        result=None if v.get("result") is None else json.loads(v["result"]),
        run_lease_expires_at=_opt_from_iso(v.get("run_lease_expires_at")),
        attempt_log=attempt_log,
        run_token_hash=v.get("run_token_hash"),
        progress=None if v.get("progress") is None else json.loads(v["progress"]),
        revision=int(v.get("revision", 0)),
    )


def _opt_text(value: Mapping[str, Any] | None) -> str | None:
    return _json(None if value is None else dict(value))


def _log_list(log: tuple[AttemptRecord, ...]) -> list[dict[str, Any]] | None:
    # An element's number is its position from 1 (written only when it is not).
    entries = [attempt_entry(a, numbered=a.number != i) for i, a in enumerate(log, 1)]
    return entries or None


def _plain(value: Any) -> Any:
    return value


# Each field of a Run a transition may change, with its attribute's plain
# value (as ``record_item`` writes it; None: the attribute is absent).
# ``pending`` is not an attribute: it is the outbox attributes' presence.
_CHANGEABLE: Final = (
    ("status", lambda status: status.value),
    ("bucket", _plain),
    ("attempts", _plain),
    ("admitted_at", opt_iso),
    ("sent_at", opt_iso),
    ("started_at", opt_iso),
    ("finished_at", opt_iso),
    ("reason", _plain),
    ("result", _opt_text),
    ("run_lease_expires_at", opt_iso),
    ("attempt_log", _log_list),
    ("run_token_hash", _plain),
    ("progress", _opt_text),
    ("revision", _plain),
)
_FIXED: Final = (
    "occurrence_id",
    "business_key",
    "schedule_id",
    "version",
    "kind",
    "scheduled_at",
    "wall",
    "fold",
    "shard",
    "materialized_at",
)
OUTBOX_ATTRIBUTES: Final = ("outbox_key", "pending_shard")


def record_changes(before: Run, after: Run) -> tuple[dict[str, Any], list[str]]:
    """The attributes of the record ``after`` changes from ``before``: those
    to set (plain values) and those to remove. The outbox attributes follow
    ``pending`` (and the bucket while pending)."""
    old, new = before.__dict__, after.__dict__
    for name in _FIXED:
        if old[name] is not new[name] and old[name] != new[name]:
            raise ValueError(f"a transition does not change a run's {name}")
    sets: dict[str, Any] = {}
    removes: list[str] = []
    for name, encode in _CHANGEABLE:
        value = new[name]
        if value is old[name] or value == old[name]:
            continue
        plain_value = encode(value)
        if plain_value is None:
            removes.append(name)
        else:
            sets[name] = plain_value
    if after.pending and (not before.pending or after.bucket != before.bucket):
        sets["outbox_key"] = outbox_key(after.bucket, after.scheduled_at, after.occurrence_id)
        sets["pending_shard"] = after.shard
    elif before.pending and not after.pending:
        removes.extend(OUTBOX_ATTRIBUTES)
    return sets, removes


# --- leases and heartbeats ----------------------------------------------------------------


def lease_from_item(item: Mapping[str, Any]) -> Lease:
    v = plain(item)
    return Lease(
        shard=int(v["shard"]),
        owner=str(v["owner"]),
        epoch=int(v["epoch"]),
        expires_at=from_iso(v["expires_at"]),
    )


def heartbeat_item(heartbeat: Heartbeat) -> Item:
    return {
        **heartbeat_key(heartbeat.component),
        **attrs(
            {
                "component": heartbeat.component,
                "at": iso(heartbeat.at),
                "detail": _json(dict(heartbeat.detail)),
            }
        ),
    }


def heartbeat_from_item(item: Mapping[str, Any]) -> Heartbeat:
    v = plain(item)
    return Heartbeat(str(v["component"]), from_iso(v["at"]), json.loads(v["detail"]))
