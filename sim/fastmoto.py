"""moto's hot paths made cheap for a simulation, with the same answers.

moto is a test double for small data; a burst of 10,000 occurrences is not
small. Three of its costs grew with the square of a burst's size, and each is
replaced here, while a simulation runs, by one that answers the same:

- ``TransactWriteItems`` deep-copies every table it touches before it writes,
  to put the copy back if the transaction is cancelled: a burst's creations
  each copied tables as large as the burst. Here it keeps a copy of the items
  the transaction names (before it writes) and puts those back instead. A
  cancelled transaction leaves every table as it found it, as before: an item
  it put is gone, an item it updated or deleted is as it was.
- SQS reads the clock through ``datetime.now`` (which time-machine answers in
  Python, slowly) twice per message per receive: here the simulated clock is
  read directly. It is the instant time-machine holds, to the microsecond.
- SQS checks each received message's retention by computing *every*
  attribute of its queue, three of which count its messages: here it reads
  the retention period alone.

Each patch is undone when the simulation ends.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any


def _now_s(clock: Callable[[], float]) -> Callable[..., float]:
    from moto.core.utils import unix_time

    def unix_time_fast(dt: Any = None) -> float:
        return clock() if dt is None else unix_time(dt)

    return unix_time_fast


def _now_ms(clock: Callable[[], float]) -> Callable[..., float]:
    from moto.core.utils import unix_time_millis

    def unix_time_millis_fast(dt: Any = None) -> float:
        return round(clock() * 1000.0, 3) if dt is None else unix_time_millis(dt)

    return unix_time_millis_fast


def _retention_valid(clock: Callable[[], float]) -> Callable[..., bool]:
    def is_message_valid_based_on_retention_period(
        backend: Any, queue_name: str, message: Any
    ) -> bool:
        queue = backend.get_queue(queue_name)
        retain_until = int(queue.message_retention_period) + message.sent_timestamp / 1000
        return bool(retain_until > clock())

    return is_message_valid_based_on_retention_period


def _touched(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    """(table, hash value, range value) of each item a transaction names, on known tables."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    found = []
    for entry in transact_items:
        if len(entry) != 1:
            continue  # moto refuses it before it writes anything
        _, op = next(iter(entry.items()))
        table = backend.tables.get(op.get("TableName"))
        if table is None:
            continue
        key = op.get("Key") if "Key" in op else op.get("Item")
        if not isinstance(key, dict) or table.hash_key_attr not in key:
            continue
        range_attr = table.range_key_attr
        if range_attr is not None and range_attr not in key:
            continue
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = DynamoType(key[range_attr]) if range_attr is not None else None
        found.append((table, hash_value, range_value))
    return found


def _stored(table: Any, hash_value: Any, range_value: Any) -> Any:
    if range_value is not None:
        return table.items.get(hash_value, {}).get(range_value)
    return table.items.get(hash_value)


def _put_back(table: Any, hash_value: Any, range_value: Any, item: Any) -> None:
    if range_value is not None:
        partition = table.items[hash_value]
        if item is None:
            partition.pop(range_value, None)
        else:
            partition[range_value] = item
    elif item is None:
        table.items.pop(hash_value, None)
    else:
        table.items[hash_value] = item


def _transact(original: Callable[..., None]) -> Callable[..., None]:
    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        before = [
            (table, h, r, copy.deepcopy(_stored(table, h, r)))
            for table, h, r in _touched(backend, transact_items)
        ]
        try:
            original(backend, transact_items)
        except BaseException:
            # moto put its "copy" of each table back: the table itself (see _shared).
            # Undo what the transaction wrote, last write first.
            for table, h, r, item in reversed(before):
                _put_back(table, h, r, item)
            raise

    return transact_write_items


def _shared(table: Any, memo: dict[int, Any]) -> Any:
    """A table's deep copy, in a simulation: the table itself (see ``_transact``)."""
    return table


@contextmanager
def faster_moto(clock: Callable[[], float]) -> Iterator[None]:
    """moto's quadratic paths replaced while the simulation runs (``clock``: the
    simulated instant, seconds since the epoch)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table
    from moto.sqs import models as sqs_models

    patches: list[tuple[Any, str, Any]] = [
        (sqs_models, "unix_time", _now_s(clock)),
        (sqs_models, "unix_time_millis", _now_ms(clock)),
        (
            sqs_models.SQSBackend,
            "is_message_valid_based_on_retention_period",
            _retention_valid(clock),
        ),
        (
            DynamoDBBackend,
            "transact_write_items",
            _transact(DynamoDBBackend.transact_write_items),
        ),
        (Table, "__deepcopy__", _shared),
    ]
    missing = object()
    with ExitStack() as stack:
        for owner, name, replacement in patches:
            saved = owner.__dict__.get(name, missing)

            def restore(owner: Any = owner, name: str = name, saved: Any = saved) -> None:
                if saved is missing:
                    delattr(owner, name)
                else:
                    setattr(owner, name, saved)

            setattr(owner, name, replacement)
            stack.callback(restore)
        yield
