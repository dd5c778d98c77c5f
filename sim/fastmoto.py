"""moto's hot paths made cheap for a simulation, with the same answers.

moto is a test double for small data; a burst of 10,000 occurrences is not
small. Several of its costs grew with the square of a burst's size, and each is
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
- A ``Query`` reads every item of the table, sorted (for a table's own key
  too, whose items moto holds by partition already), to keep those of one
  partition key value. Here it is handed only those: a table's partition, or
  an index's bucket of items with that value, kept up to date by every write
  (put, update, delete, a transaction's, a batch's, and a cancelled
  transaction's undoing). moto's own query code then filters, sorts, pages
  and projects them as it would have.
- SQS finds a message by its receipt handle (every delete and visibility
  change) by asking every message of the queue whether it ever had that
  handle, twice for a delete: here each handle moto gives is remembered with
  its message. ``Queue.messages`` (every receive, every count of visible
  messages) judges each message with two property calls that each read the
  clock: here one reading, and the same comparisons. The same for the counts
  of delayed and in-flight messages, which moto computes over the whole queue
  for every message sent (it reads one attribute of the queue's, and computes
  them all): a burst's sends grew with the square of the queue.

Each patch is undone when the simulation ends.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from sim.index_lag import IndexLag


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


def _transact(original: Callable[..., None], lag: IndexLag | None) -> Callable[..., None]:
    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        before = [
            (table, h, r, copy.deepcopy(_stored(table, h, r)))
            for table, h, r in _touched(backend, transact_items)
        ]
        if lag is not None:
            lag.begin()
        try:
            original(backend, transact_items)
        except BaseException:
            if lag is not None:
                lag.end(committed=False)  # an index never sees a cancelled transaction
            # moto put its "copy" of each table back: the table itself (see _shared).
            # Undo what the transaction wrote, last write first.
            for table, h, r, item in reversed(before):
                _put_back(table, h, r, item)
                _reindex(table, h, r)
            raise
        if lag is not None:
            lag.end(committed=True)

    return transact_write_items


# --- SQS: a message found by its receipt handle, and the visible ones read cheaply ----------


def _visible_messages(clock: Callable[[], float]) -> property:
    """``Queue.messages``: the messages neither in flight nor delayed, as moto's
    ``Message.visible`` and ``Message.delayed`` judge them (the same instant, in
    milliseconds, for every message), without a call per message."""

    def messages(queue: Any) -> list[Any]:
        now_ms = round(clock() * 1000.0, 3)
        return [m for m in queue._messages if now_ms > m.visible_at and now_ms >= m.delayed_until]

    return property(messages)


def _delayed_count(clock: Callable[[], float]) -> property:
    """``Queue.approximate_number_of_messages_delayed``, as ``Message.delayed`` judges."""

    def count(queue: Any) -> int:
        now_ms = round(clock() * 1000.0, 3)
        return sum(1 for m in queue._messages if now_ms < m.delayed_until)

    return property(count)


def _in_flight_count(clock: Callable[[], float]) -> property:
    """``Queue.approximate_number_of_messages_not_visible``, as ``Message.visible`` judges."""

    def count(queue: Any) -> int:
        now_ms = round(clock() * 1000.0, 3)
        return sum(1 for m in queue._messages if not now_ms > m.visible_at)

    return property(count)


class _Handles:
    """Every receipt handle moto has given, to the message it was given for (a
    message keeps its older handles, as moto's ``had_receipt_handle`` does)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.message_of: dict[str, Any] = {}

    def received(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def mark_received(message: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(message, *args, **kwargs)
            self.message_of[message.receipt_handle] = message
            return result

        return mark_received

    def find(self, queue: Any, receipt_handle: str) -> Any:
        """The message of the queue that ever had this handle, or None."""
        message = self.message_of.get(receipt_handle)
        if message is None or message not in queue._messages:  # by identity: no __eq__
            return None
        return message

    def deleter(self) -> Callable[..., None]:
        def delete_message(queue: Any, receipt_handle: str) -> None:
            from moto.sqs.exceptions import ReceiptHandleIsInvalid

            if receipt_handle in queue.deleted_messages:
                return  # already deleted: moto lets it be deleted again
            message = self.find(queue, receipt_handle)
            if message is None:
                raise ReceiptHandleIsInvalid()
            queue.pending_messages.discard(message)
            queue.deleted_messages.update(message.all_receipt_handles)
            messages = list(queue._messages)
            messages.remove(message)
            queue._messages = messages
            for handle in message.all_receipt_handles:
                self.message_of.pop(handle, None)

        return delete_message

    def visibility_changer(self) -> Callable[..., None]:
        def change_message_visibility(
            backend: Any, queue_name: str, receipt_handle: str, visibility_timeout: int
        ) -> None:
            from moto.sqs.exceptions import InvalidParameterValue, ReceiptHandleIsInvalid

            queue = backend.get_queue(queue_name)
            message = self.find(queue, receipt_handle)
            if message is None:
                raise ReceiptHandleIsInvalid
            visibility_timeout_ms = int(visibility_timeout) * 1000
            given = round(self.clock() * 1000.0, 3) + visibility_timeout_ms
            if given - message.sent_timestamp > 43200 * 1000:
                raise InvalidParameterValue(
                    f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. "
                    "Reason: Total VisibilityTimeout for the message is beyond the limit "
                    "[43200 seconds]"
                )
            message.change_visibility(visibility_timeout)
            if message.visible and message in queue.pending_messages:
                queue.pending_messages.remove(message)

        return change_message_visibility


# --- DynamoDB queries: the items of one key value, not the whole table ----------------------


class _Buckets:
    """A table's items by the value of one attribute (an index's partition key), kept
    up to date by every write moto makes to the table (``_reindexed``)."""

    def __init__(self, table: Any, attribute: str) -> None:
        self.attribute = attribute
        self.by_value: dict[Any, dict[tuple[Any, Any], Any]] = {}
        self.value_of: dict[tuple[Any, Any], Any] = {}
        for item in _every_item(table):
            self.put((item.hash_key, item.range_key), item)

    def put(self, key: tuple[Any, Any], item: Any) -> None:
        old = self.value_of.pop(key, None)
        if old is not None:
            bucket = self.by_value[old]
            bucket.pop(key, None)
            if not bucket:
                del self.by_value[old]
        value = None if item is None else item.attrs.get(self.attribute)
        if value is None:
            return
        self.by_value.setdefault(value, {})[key] = item  # TypeError if unhashable
        self.value_of[key] = value


def _every_item(table: Any) -> Iterator[Any]:
    for partition in table.items.values():
        if table.range_key_attr:
            yield from partition.values()
        else:
            yield partition


def _buckets(table: Any) -> dict[str, _Buckets | None]:
    """The attribute buckets built so far on ``table`` (None: an attribute moto holds
    a value of that cannot be a key, where the query is left to moto whole)."""
    found = table.__dict__.get("_sim_buckets")
    if found is None:
        found = {}
        table.__dict__["_sim_buckets"] = found
    return found  # type: ignore[no-any-return]


def _reindex(table: Any, hash_value: Any, range_value: Any) -> None:
    """After a write to one item: move it to the bucket of its value now."""
    buckets = _buckets(table)
    for attribute, built in list(buckets.items()):
        if built is None:
            continue
        try:
            built.put((hash_value, range_value), _stored(table, hash_value, range_value))
        except TypeError:
            buckets[attribute] = None


def _key_of(table: Any, key: Any) -> tuple[Any, Any] | None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    if not isinstance(key, dict) or table.hash_key_attr not in key:
        return None
    range_attr = table.range_key_attr
    if range_attr is not None and range_attr not in key:
        return None
    try:
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = DynamoType(key[range_attr]) if range_attr is not None else None
    except Exception:  # moto refuses such a key itself
        return None
    return hash_value, range_value


def _reindexed(
    original: Callable[..., Any], key_argument: str, lag: IndexLag | None
) -> Callable[..., Any]:
    """A backend write (``put_item``, ``update_item``, ``delete_item``: each takes the
    table's name, then the item or its key) that moves the item it names to its
    bucket afterwards, whether it wrote or was refused; and, with ``lag``, tells the
    index lag what the item was before and is after."""

    def write(backend: Any, *args: Any, **kwargs: Any) -> Any:
        name = args[0] if args else kwargs.get("table_name")
        key = args[1] if len(args) > 1 else kwargs.get(key_argument)
        table = backend.tables.get(name)
        found = _key_of(table, key) if table is not None else None
        before = None
        if lag is not None and found is not None:
            before = lag.before_write(table, found, _stored(table, *found))
        try:
            answer = original(backend, *args, **kwargs)
        finally:
            if found is not None and "_sim_buckets" in table.__dict__:
                _reindex(table, *found)
        if before is not None and found is not None:
            lag.written(table, found, before, _stored(table, *found))  # type: ignore[union-attr]
        return answer

    return write


def _candidates(
    table: Any, hash_key: Any, index_name: Any, conditions: Any, lag: IndexLag | None = None
) -> list[Any] | None:
    """The items a query can answer with: those of its partition key value (moto then
    reads them as it reads the whole table). None: the query is left to moto whole."""
    if not index_name:
        if hash_key is None:
            return None
        partition = table.items.get(hash_key)
        if partition is None:
            return []
        return list(partition.values()) if table.range_key_attr else [partition]
    if not conditions or index_name not in {i.name for i in table.all_indexes()}:
        return None  # moto answers (or refuses) it as it would
    attribute, value = conditions[0]
    buckets = _buckets(table)
    if attribute not in buckets:
        try:
            buckets[attribute] = _Buckets(table, attribute)
        except TypeError:
            buckets[attribute] = None
    built = buckets[attribute]
    if built is None:
        return None
    try:
        current = list(built.by_value.get(value, {}).values())
    except TypeError:
        return None
    return current if lag is None else lag.candidates(table, index_name, attribute, value, current)


def _query(original: Callable[..., Any], lag: IndexLag | None) -> Callable[..., Any]:
    """``Table.query`` over the items of the key value asked for. moto reads every item
    of the table (sorted, for a table query too) to find those of one partition key
    value; here it reads only those, and filters, sorts, pages and projects them with
    its own code, so it answers the same."""
    import inspect

    signature = inspect.signature(original)

    def query(table: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(table, *args, **kwargs).arguments
        candidates = _candidates(
            table,
            bound.get("hash_key"),
            bound.get("index_name"),
            bound.get("hash_key_conditions"),
            lag,
        )
        if candidates is None:
            return original(table, *args, **kwargs)
        table.__dict__["all_items"] = lambda: candidates
        try:
            return original(table, *args, **kwargs)
        finally:
            del table.__dict__["all_items"]

    return query


# --- DynamoDB answers: an item's attribute values are written as they are -------------------

_SCALARS = {"S": str, "N": str, "BOOL": bool, "NULL": bool}


def _plain(value: Any) -> bool:
    """An attribute value moto's JSON serializer would write out unchanged: one type key,
    its value already what the wire carries (no binary, which it would encode)."""
    if type(value) is not dict or len(value) != 1:
        return False
    [(kind, inner)] = value.items()
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return type(inner) is scalar
    if kind in ("SS", "NS"):
        return type(inner) is list and all(type(v) is str for v in inner)
    if kind == "L":
        return type(inner) is list and all(_plain(v) for v in inner)
    if kind == "M":
        return type(inner) is dict and all(type(k) is str and _plain(v) for k, v in inner.items())
    return False


def _attribute_values(original: Callable[..., None]) -> Callable[..., None]:
    """moto serializes an answer by walking its shape, member by member: an item's
    attribute value, ten members of which one is set, costs ten lookups through its
    attribute pickers, for every attribute of every item answered. A plain value
    (``_plain``) is what that walk writes out: it is written as it is."""

    def serialize_structure(
        serializer: Any, serialized: Any, value: Any, shape: Any, key: str
    ) -> None:
        if key and shape.name == "AttributeValue" and _plain(value):
            serialized[serializer.get_serialized_name(shape, key)] = value
            return
        original(serializer, serialized, value, shape, key)

    return serialize_structure


def _shared(table: Any, memo: dict[int, Any]) -> Any:
    """A table's deep copy, in a simulation: the table itself (see ``_transact``)."""
    return table


@contextmanager
def faster_moto(clock: Callable[[], float], lag: IndexLag | None = None) -> Iterator[None]:
    """moto's quadratic paths replaced while the simulation runs (``clock``: the
    simulated instant, seconds since the epoch); with ``lag``, GSIs that lag their
    table (``sim.index_lag``)."""
    from moto.core.serialize import JSONSerializer
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models import DynamoDBBackend as Backend
    from moto.dynamodb.models.table import Table
    from moto.sqs import models as sqs_models

    handles = _Handles(clock)
    patches: list[tuple[Any, str, Any]] = [
        (sqs_models.Queue, "messages", _visible_messages(clock)),
        (sqs_models.Queue, "approximate_number_of_messages_delayed", _delayed_count(clock)),
        (sqs_models.Queue, "approximate_number_of_messages_not_visible", _in_flight_count(clock)),
        (sqs_models.Message, "mark_received", handles.received(sqs_models.Message.mark_received)),
        (sqs_models.Queue, "delete_message", handles.deleter()),
        (sqs_models.SQSBackend, "change_message_visibility", handles.visibility_changer()),
        (Table, "query", _query(Table.query, lag)),
        (
            JSONSerializer,
            "_serialize_type_structure",
            _attribute_values(JSONSerializer._serialize_type_structure),
        ),
        (Backend, "put_item", _reindexed(Backend.put_item, "item_attrs", lag)),
        (Backend, "update_item", _reindexed(Backend.update_item, "key", lag)),
        (Backend, "delete_item", _reindexed(Backend.delete_item, "key", lag)),
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
            _transact(DynamoDBBackend.transact_write_items, lag),
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
