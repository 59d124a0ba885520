"""Kafka's consumer protocol envelope: ``ConsumerProtocolSubscription`` and
``ConsumerProtocolAssignment`` versions 0–3, as ``ConsumerProtocol`` writes and reads them.

Every member of a group with protocol type ``consumer`` (plain consumers and Kafka Streams
alike) puts a Subscription in its JoinGroup metadata and gets an Assignment in its SyncGroup
answer. Layouts (big-endian, ``clients/src/main/resources/common/message/
ConsumerProtocolSubscription.json`` / ``ConsumerProtocolAssignment.json``; never flexible):

* Subscription: ``version INT16``, ``topics ARRAY(STRING)``, ``user_data NULLABLE_BYTES``;
  v1+ ``owned_partitions ARRAY(topic STRING, partitions ARRAY(INT32))``; v2+
  ``generation_id INT32`` (default -1); v3+ ``rack_id NULLABLE_STRING`` (default null).
* Assignment: ``version INT16``, ``assigned_partitions ARRAY(topic STRING,
  partitions ARRAY(INT32))``, ``user_data NULLABLE_BYTES`` (the same in every version).

What ``ConsumerProtocol.serializeSubscription`` / ``serializeAssignment`` (Kafka 4.0) do and
:func:`encode_subscription` / :func:`encode_assignment` repeat: topics are written sorted (Java
string order); owned partitions are sorted by (topic, partition) and grouped per topic;
assigned partitions are grouped per topic in order of each topic's first appearance,
partitions in the given order; a version above 3 is written as 3; a negative version is
refused. Decoding reads a version above 3 as 3 and ignores bytes after the last field of the
version read; a negative length reads as null for a nullable field and fails for another;
malformed UTF-8 becomes U+FFFD per malformed unit as Java's decoder cuts them
(:func:`protocol.java_strings.java_utf8`; the generated readers build strings with
``new String(bytes, UTF_8)``).

This module is the codec of one message: the types, Kafka's schema, and each message's
straight-line ``struct`` read or write (with the field-by-field reader and writer behind them
for the precise error). The topic-partition arrays inside are read by
:mod:`protocol.topic_partitions` (where :class:`TopicPartition` lives; re-exported here); a
leader's whole group (every member's subscription decoded in one pass, every assignment
written as rows of one ``numpy`` array) by :mod:`protocol.consumer_batch`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter

import msgspec

from protocol.java_strings import java_sorted_strings, java_string_key, java_utf8
from protocol.primitives import DecodeError, EncodeError, Writer, encoded_string
from protocol.topic_partitions import (
    PLANNED_PARTITIONS,
    TopicPartition,
    read_topic_partitions,
    topic_name,
)

__all__ = [
    "PROTOCOL_TYPE",
    "LOWEST_VERSION",
    "HIGHEST_VERSION",
    "TopicPartition",
    "Subscription",
    "Assignment",
    "ConsumerProtocolError",
    "FieldReader",
    "supported_version",
    "encode_subscription",
    "decode_subscription",
    "decode_subscription_or_none",
    "encode_assignment",
    "AssignmentPlan",
    "assignment_plan",
    "known_assignment_plan",
    "decode_assignment",
    "partition_labels",
]

#: ``ConsumerProtocol.PROTOCOL_TYPE``.
PROTOCOL_TYPE = "consumer"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I16_AT = _I16.unpack_from
_I32_AT = _I32.unpack_from
#: ``ConsumerProtocolSubscription.LOWEST_SUPPORTED_VERSION`` (same for Assignment).
LOWEST_VERSION = 0
#: ``ConsumerProtocolSubscription.HIGHEST_SUPPORTED_VERSION`` (same for Assignment).
HIGHEST_VERSION = 3


class Subscription(msgspec.Struct, frozen=True):
    """One member's ``ConsumerProtocolSubscription`` (Kafka's ``Subscription``).

    Attributes:
        topics: subscribed topics (written sorted).
        user_data: the assignor's opaque bytes, or ``None`` (null on the wire).
        owned_partitions: partitions the member holds (v1+; dropped by v0).
        generation_id: the generation those were assigned in, -1 if none (v2+).
        rack_id: the member's ``client.rack``, ``None`` for null (v3+).
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


class Assignment(msgspec.Struct, frozen=True):
    """One member's ``ConsumerProtocolAssignment`` (Kafka's ``Assignment``).

    Attributes:
        partitions: assigned partitions, in the order the assignor listed them.
        user_data: the assignor's opaque bytes, or ``None`` (null on the wire).
    """

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


class ConsumerProtocolError(DecodeError):
    """A consumer-protocol message that Kafka's ``ConsumerProtocol`` rejects with a
    ``SchemaException``: a negative version, or bytes that end before the version's last field.
    An :class:`protocol.errors.InputError` (via :class:`protocol.primitives.DecodeError`)."""


def supported_version(version: int, what: str) -> int:
    """``ConsumerProtocol.checkSubscriptionVersion`` / ``checkAssignmentVersion``: the version
    a message of ``version`` is written or read as (above :data:`HIGHEST_VERSION`: that).

    Args:
        version: the version asked for.
        what: ``"subscription"`` or ``"assignment"`` (for the error).

    Raises:
        ConsumerProtocolError: ``version`` is negative."""
    if version < LOWEST_VERSION:
        raise ConsumerProtocolError("version", 0, f"unsupported {what} version {version}")
    return min(version, HIGHEST_VERSION)


def _write_grouped(w: Writer, parts: Iterable[TopicPartition], field: str) -> None:
    """ARRAY(topic STRING, partitions ARRAY(INT32)): one entry per topic in first-appearance
    order (the generated ``find(topic)`` on an insertion-ordered collection)."""
    by_topic: dict[str, list[int]] = {}
    for tp in parts:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    w.array_count(len(by_topic), field)
    for topic, ps in by_topic.items():
        w.string(topic, f"{field}.topic")
        w.int32_array(ps, f"{field}.partitions")


def encode_subscription(s: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """``ConsumerProtocol.serializeSubscription(subscription, version)``.

    Args:
        s: the subscription.
        version: 0–3 (higher is written as 3).

    Returns:
        The version-prefixed bytes; fields newer than ``version`` are left out.

    Raises:
        ConsumerProtocolError: ``version`` is negative.
        EncodeError: a value the wire cannot carry (e.g. a string over 32,767 bytes).
    """
    version = supported_version(version, "subscription")
    w = Writer()
    w.int16(version, "version")
    w.string_array(java_sorted_strings(s.topics), "topics")
    w.nullable_bytes(s.user_data, "user_data")
    if version >= 1:
        owned = sorted(s.owned_partitions, key=lambda tp: (java_string_key(tp.topic), tp.partition))
        _write_grouped(w, owned, "owned_partitions")
    if version >= 2:
        w.int32(s.generation_id, "generation_id")
    if version >= 3:
        if s.rack_id is None:
            w.int16(-1, "rack_id")
        else:
            w.string(s.rack_id, "rack_id")
    return w.getvalue()


class _Cursor:
    """Reads the big-endian fields of a consumer-protocol message as Kafka's generated
    ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` readers do: a negative
    length of a nullable field is null, of a non-nullable one an error; strings are decoded
    with U+FFFD for malformed UTF-8 (Java's ``new String(bytes, UTF_8)``)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, size: int, field: str) -> bytes:
        if size > len(self.data) - self.pos:
            raise ConsumerProtocolError(field, self.pos, f"needs {size} bytes, buffer underflow")
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out

    def int16(self, field: str) -> int:
        return int(_I16.unpack(self._take(2, field))[0])

    def int32(self, field: str) -> int:
        return int(_I32.unpack(self._take(4, field))[0])

    def count(self, field: str) -> int:
        start = self.pos
        n = self.int32(field)
        if n < 0:
            raise ConsumerProtocolError(field, start, "non-nullable array serialized as null")
        if n > len(self.data) - self.pos:
            raise ConsumerProtocolError(field, start, f"array of {n} exceeds the bytes left")
        return n

    def string(self, field: str) -> str:
        start = self.pos
        size = self.int16(field)
        if size < 0:
            raise ConsumerProtocolError(field, start, "non-nullable string serialized as null")
        return java_utf8(self._take(size, field))

    def nullable_string(self, field: str) -> str | None:
        size = self.int16(field)
        return None if size < 0 else java_utf8(self._take(size, field))

    def nullable_bytes(self, field: str) -> bytes | None:
        size = self.int32(field)
        return None if size < 0 else self._take(size, field)

    def grouped(self, field: str) -> tuple[TopicPartition, ...]:
        out: list[TopicPartition] = []
        for i in range(self.count(field)):
            topic = self.string(f"{field}[{i}].topic")
            n = self.count(f"{field}[{i}].partitions")
            raw = self._take(4 * n, f"{field}[{i}].partitions")
            out.extend(TopicPartition(topic, p) for p in struct.unpack(f">{n}i", raw))
        return tuple(out)


#: The reader of Kafka's ``protocol.types`` fields (big-endian; ``ConsumerProtocolError`` on bad
#: bytes), also used for the sticky assignors' user data structs.
FieldReader = _Cursor


#: The topics array (bytes from the count on) of the last subscription read and its names: a
#: leader reads the same array from every member subscribing to the same topics.
_last_topics: tuple[bytes, tuple[str, ...]] = (b"\x00\x00\x00\x00", ())  # an empty array


def _set_last_topics(raw: bytes, topics: tuple[str, ...]) -> None:
    global _last_topics
    _last_topics = (raw, topics)


def decode_subscription_or_none(data: bytes) -> Subscription | None:
    """:func:`decode_subscription` of well-formed bytes in straight-line ``struct`` reads (the
    leader decodes every member's subscription each rebalance; owned partitions through
    :func:`protocol.topic_partitions.read_topic_partitions`); ``None`` when the bytes are not
    well formed, so that the field-by-field reader raises its precise error. Never raises."""
    try:
        end = len(data)
        (version,) = _I16_AT(data, 0)
        if version < 0:
            return None
        version = min(version, HIGHEST_VERSION)
        seen, topics = _last_topics
        if data.startswith(seen, 2):
            # the same topics array as the last subscription read: its bytes decode the same
            pos = 2 + len(seen)
        else:
            (n,) = _I32_AT(data, 2)
            pos = 6
            if n < 0 or n > end - pos:
                return None
            names: list[str] = []
            for _ in range(n):
                (size,) = _I16_AT(data, pos)
                pos += 2
                if size < 0 or size > end - pos:
                    return None
                raw = data[pos : pos + size]
                names.append(topic_name(raw))
                pos += size
            topics = tuple(names)
            _set_last_topics(data[2:pos], topics)
        (size,) = _I32_AT(data, pos)
        pos += 4
        user: bytes | None = None
        if size >= 0:
            if size > end - pos:
                return None
            user = data[pos : pos + size]
            pos += size
        owned: tuple[TopicPartition, ...] = ()
        if version >= 1:
            grouped = read_topic_partitions(data, pos)
            if grouped is None:
                return None
            owned, pos = grouped
        generation = -1
        if version >= 2:
            (generation,) = _I32_AT(data, pos)
            pos += 4
        rack: str | None = None
        if version >= 3:
            (size,) = _I16_AT(data, pos)
            pos += 2
            if size >= 0:
                if size > end - pos:
                    return None
                rack = java_utf8(data[pos : pos + size])
        return Subscription(topics, user, owned, generation, rack)
    except struct.error:
        return None


def decode_subscription(data: bytes) -> Subscription:
    """``ConsumerProtocol.deserializeConsumerProtocolSubscription(buffer)``: the message as
    written (an empty ``rack_id`` stays ``""``; Kafka's ``Subscription`` view would make it
    empty).

    Raises:
        ConsumerProtocolError: negative version, the bytes end too early, or a non-nullable
            field is null.
    """
    data = bytes(data)
    fast = decode_subscription_or_none(data)
    if fast is not None:
        return fast
    c = _Cursor(data)
    version = supported_version(c.int16("version"), "subscription")
    topics = tuple(c.string(f"topics[{i}]") for i in range(c.count("topics")))
    user = c.nullable_bytes("user_data")
    owned = c.grouped("owned_partitions") if version >= 1 else ()
    generation = c.int32("generation_id") if version >= 2 else -1
    rack = c.nullable_string("rack_id") if version >= 3 else None
    return Subscription(topics, user, owned, generation, rack)


def encode_assignment(a: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """``ConsumerProtocol.serializeAssignment(assignment, version)``.

    Raises:
        ConsumerProtocolError: ``version`` is negative.
        EncodeError: a value the wire cannot carry.
    """
    version = supported_version(version, "assignment")
    fast = _fast_encode_assignment(a, version)
    if fast is not None:
        return fast
    w = Writer()
    w.int16(version, "version")
    _write_grouped(w, a.partitions, "assigned_partitions")
    w.nullable_bytes(a.user_data, "user_data")
    return w.getvalue()


def _fast_encode_assignment(a: Assignment, version: int) -> bytes | None:
    """:func:`encode_assignment` in one compiled ``struct.Struct`` call: the partitions split
    into topics and numbers by ``zip`` (in C); the grouping per topic (first appearance order,
    partitions in list order) depends only on the sequence of topics, so it is planned once per
    distinct sequence (:func:`assignment_plan`) and applied by one ``itemgetter`` that
    gathers the numbers and the topics' STRING bytes and counts into the order written.
    ``None`` when a value does not fit (the :class:`Writer` path then raises its precise
    error)."""
    user = a.user_data
    if user is not None and not isinstance(user, bytes):
        return None
    parts = a.partitions
    try:
        if not parts:
            if user is None:
                return _EMPTY_NULL.pack(version, 0, -1)
            return _EMPTY_NULL.pack(version, 0, len(user)) + user
        topics, numbers = zip(*parts, strict=True)
        plan = _plans.get(topics)
        if plan is None:
            plan = assignment_plan(topics)
        packer, gather, constants = plan
        if user is None:
            return packer.pack(version, *gather(numbers + constants), -1)
        return packer.pack(version, *gather(numbers + constants), len(user)) + user
    except (struct.error, EncodeError):
        return None


#: How an assignment whose partitions run through one sequence of topics is written
#: (:func:`assignment_plan`): its ``Struct``, the getter of its values, and the constants.
AssignmentPlan = tuple[
    struct.Struct, Callable[[tuple[object, ...]], tuple[object, ...]], tuple[object, ...]
]
#: A partitions' topic sequence (at most :data:`protocol.topic_partitions.PLANNED_PARTITIONS`
#: long) → its :func:`assignment_plan` (cleared past 1,024 plans).
_plans: dict[tuple[str, ...], AssignmentPlan] = {}
#: ``known_assignment_plan(topics)``: the kept :func:`assignment_plan` of that topic sequence,
#: or ``None`` (the dict's own ``get``, a lookup in C; the dict is only cleared, never replaced).
known_assignment_plan: Callable[[tuple[str, ...]], AssignmentPlan | None] = _plans.get
_EMPTY_NULL = struct.Struct(">hii")


def assignment_plan(topics: tuple[str, ...]) -> AssignmentPlan:
    """How :func:`encode_assignment` writes partitions of these topics (in this order):
    the ``struct.Struct`` of ``version INT16``, the topic count, per topic (first appearance
    order) its STRING bytes, the count and the partitions, then the user data length; the
    ``itemgetter`` that takes those values, in that order, from ``numbers + constants``; and
    the constants (topic count, then per topic its STRING bytes and count). Packed as
    ``packer.pack(version, *gather(numbers + constants), user_data_length)``, then the user
    data. Kept for :func:`known_assignment_plan` when at most
    :data:`protocol.topic_partitions.PLANNED_PARTITIONS` long.

    Raises:
        EncodeError: a topic name the wire cannot carry."""
    groups: dict[str, list[int]] = {}
    for i, topic in enumerate(topics):
        at = groups.get(topic)
        if at is None:
            groups[topic] = [i]
        else:
            at.append(i)
    n = len(topics)
    fmt = [">hi"]
    constants: list[object] = [len(groups)]
    gather = [n]
    for topic, indices in groups.items():
        head = encoded_string(topic, "assigned_partitions.topic")
        fmt.append(f"{len(head)}si{len(indices)}i")
        gather += (n + len(constants), n + len(constants) + 1)
        constants += (head, len(indices))
        gather += indices
    fmt.append("i")
    plan = (struct.Struct("".join(fmt)), itemgetter(*gather), tuple(constants))
    if n <= PLANNED_PARTITIONS:  # a longer list's plan is used once and not kept
        if len(_plans) >= 1_024:
            _plans.clear()
        _plans[topics] = plan
    return plan


def decode_assignment(data: bytes) -> Assignment:
    """``ConsumerProtocol.deserializeConsumerProtocolAssignment(buffer)``.

    Raises:
        ConsumerProtocolError: negative version, the bytes end too early, or a non-nullable
            field is null.
    """
    c = _Cursor(bytes(data))
    supported_version(c.int16("version"), "assignment")
    parts = c.grouped("assigned_partitions")
    return Assignment(parts, c.nullable_bytes("user_data"))


def partition_labels(parts: Sequence[TopicPartition]) -> list[str]:
    """``"<topic>-<partition>"`` labels (Kafka ``TopicPartition.toString``), in order."""
    return [f"{tp.topic}-{tp.partition}" for tp in parts]
