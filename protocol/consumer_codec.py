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
(:func:`protocol.java.java_utf8`; the generated readers build strings with
``new String(bytes, UTF_8)``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import accumulate, chain, repeat
from operator import getitem, itemgetter, sub
from typing import Any, NamedTuple, cast

import msgspec

from protocol.java import java_sorted_strings, java_string_key, java_utf8
from protocol.primitives import DecodeError, EncodeError, Writer, encoded_string

__all__ = [
    "PROTOCOL_TYPE",
    "LOWEST_VERSION",
    "HIGHEST_VERSION",
    "TopicPartition",
    "Subscription",
    "Assignment",
    "ConsumerProtocolError",
    "FieldReader",
    "read_topic_partitions",
    "read_topic_partition_arrays",
    "encode_subscription",
    "decode_subscription",
    "decode_subscriptions",
    "encode_assignment",
    "encode_assignments",
    "decode_assignment",
    "partition_labels",
]

#: ``ConsumerProtocol.PROTOCOL_TYPE``.
PROTOCOL_TYPE = "consumer"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
#: ``ConsumerProtocolSubscription.LOWEST_SUPPORTED_VERSION`` (same for Assignment).
LOWEST_VERSION = 0
#: ``ConsumerProtocolSubscription.HIGHEST_SUPPORTED_VERSION`` (same for Assignment).
HIGHEST_VERSION = 3


class TopicPartition(NamedTuple):
    """Kafka ``TopicPartition``: ``topic`` and ``partition`` (0-based)."""

    topic: str
    partition: int


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


def _check_version(version: int, what: str) -> int:
    """``ConsumerProtocol.checkSubscriptionVersion`` / ``checkAssignmentVersion``."""
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
    version = _check_version(version, "subscription")
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


_I16_AT = _I16.unpack_from
_I32_AT = _I32.unpack_from
_I32X2_AT = struct.Struct(">ii").unpack_from
_new_tp = partial(tuple.__new__, TopicPartition)

#: Topic names already read, by their STRING bytes: a leader reads the same few names once per
#: member (subscribed topics, owned partitions, the sticky user data); the decoding is a pure
#: function of the bytes, so a name read once is reused. Cleared when it grows past 10,000.
_name_cache: dict[bytes, str] = {}


def _name(raw: bytes) -> str:
    """:func:`protocol.java.java_utf8` of ``raw`` through :data:`_name_cache`."""
    name = _name_cache.get(raw)
    if name is None:
        if len(_name_cache) >= 10_000:
            _name_cache.clear()
        name = _name_cache[raw] = java_utf8(raw)
    return name


def shared_partitions(topic: str, count: int) -> tuple[TopicPartition, ...]:
    """``TopicPartition(topic, 0)`` … ``TopicPartition(topic, count - 1)``.

    The tuples are immutable values, so they are built once per topic (in C) and shared by
    every call (the cluster metadata of a group changes rarely): an assignor listing 10,000
    partitions otherwise spends most of its time constructing them, and the readers below hand
    out these same values for partitions they read (``TopicPartition`` equality is by value, so
    a shared value and a freshly built one are interchangeable). At most
    :data:`_SHARED_PARTITIONS` are kept; past that the cache starts afresh."""
    global _shared_count
    known = _shared.get(topic)
    if known is None or len(known) < count:
        if _shared_count + count > _SHARED_PARTITIONS:
            _shared.clear()
            _shared_count = 0
        known = tuple(map(_new_tp, zip(repeat(topic), range(count))))
        _shared_count += count - len(_shared.get(topic, ()))
        _shared[topic] = known
    return known if len(known) == count else known[:count]


#: How many shared :class:`TopicPartition` values :func:`shared_partitions` keeps at most.
_SHARED_PARTITIONS = 200_000
_shared: dict[str, tuple[TopicPartition, ...]] = {}
_shared_count = 0


def _partitions_of(topics: Sequence[str], numbers: Sequence[int]) -> tuple[TopicPartition, ...]:
    """``TopicPartition(topics[i], numbers[i])`` for each i: the shared values
    (:func:`shared_partitions`) where every topic has them and every number is in range (two
    lookups per partition in C), else new tuples."""
    if numbers and min(numbers) >= 0:
        try:
            return tuple(map(getitem, map(_shared.get, topics), numbers))  # type: ignore[arg-type]
        except (TypeError, IndexError):  # a topic not shared yet, or beyond its shared values
            pass
    return tuple(map(_new_tp, zip(topics, numbers, strict=True)))


def read_topic_partitions(data: bytes, pos: int) -> tuple[tuple[TopicPartition, ...], int] | None:
    """ARRAY(topic STRING, partitions ARRAY(INT32)) at offset ``pos`` of ``data``, read in
    straight-line ``struct`` calls.

    A leader reads one such array per member (owned partitions; the sticky assignor's user
    data too), and after a balanced assignment most are *uniform*: every entry's topic name
    has the same length in bytes and lists the same number of partitions (one partition of
    each topic when members outnumber a topic's partitions, or the same share of each). Such an
    array is read by one compiled ``struct.Struct`` per (entries, name length, count) shape,
    and taken only when every length and count it read is that shape's (then the bytes are
    exactly that layout, and the values are what the entry-by-entry read gives). Any other
    array is read entry by entry.

    Returns:
        The partitions in the order written and the offset after the array; ``None`` for bytes
        :class:`FieldReader` would reject (read them with it for the precise error).

    Raises:
        struct.error: the bytes end inside a count or a length.
    """
    if len(data) - pos >= 10:
        n, size = _I32_I16_AT(data, pos)
        if n == 1 and size >= 0 and len(data) - pos - 6 - size >= 8:
            # one topic of one partition (a member of a group wider than a topic's partitions
            # owns this): the count and the number in one read
            at = pos + 6 + size
            count, first = _I32X2_AT(data, at)
            if count == 1:
                raw = data[pos + 6 : at]
                topic = _name_cache.get(raw) or _name(raw)
                known = _shared.get(topic)
                if known is not None and 0 <= first < len(known):
                    return (known[first],), at + 8
                return (_new_tp((topic, first)),), at + 8
        if n > 1 and 0 <= size <= len(data) - pos - 10:
            (count,) = _I32_AT(data, pos + 6 + size)
            shape = (n, size, count)
            plan = _uniform.get(shape)
            if plan is None and count > 0 and n * count <= _PLANNED_PARTITIONS:
                plan = _uniform_plan(shape)
            if plan is not None and len(data) - pos >= plan.size:
                values = plan.reader.unpack_from(data, pos)
                stride = 3 + count
                if values[1::stride].count(size) == n and values[3::stride].count(count) == n:
                    raws = values[2::stride]
                    numbers = plan.numbers(values)  # read unsigned: a negative one is > 2^31
                    last = _uniform_last.get(shape)
                    if last is not None and last[0] == raws:
                        # the names of the last array of this shape: its partitions' shared
                        # value tuples (one per partition) apply
                        try:
                            return tuple(map(getitem, last[1], numbers)), pos + plan.size
                        except (TypeError, IndexError):  # no shared values, or beyond them
                            pass
                    cached = tuple(map(_name_cache.get, raws))
                    names = tuple(map(_name, raws)) if None in cached else cast(_Names, cached)
                    topics = plan.topics(names)
                    _uniform_last[shape] = (raws, tuple(map(_shared.get, topics)))
                    signed = tuple(x - 2**32 if x >= 2**31 else x for x in numbers)
                    return _partitions_of(topics, signed), pos + plan.size
            laid = _read_by_layout(data, pos, n, size)
            if laid is not None:
                return laid
    return _read_topic_partitions(data, pos)


def _read_by_layout(
    data: bytes, pos: int, n: int, size: int
) -> tuple[tuple[TopicPartition, ...], int] | None:
    """:func:`read_topic_partitions` of an array whose topic names all have ``size`` bytes
    but whose entries list different numbers of partitions (a topic's share is one more for
    some members than for others): one pass reads the counts, then one compiled
    ``struct.Struct`` per (name length, counts) layout reads the whole array, partitions as
    in the uniform case (the last names of a layout reused, numbers read unsigned). ``None``
    when some name has another length, a count is negative, the bytes end early, or the
    layout lists fewer than 2 or more than :data:`_PLANNED_PARTITIONS` partitions (the
    entry-by-entry reader then reads it)."""
    end = len(data)
    step = 6 + size
    at = pos + 4
    counts: list[int] = []
    for _ in range(n):
        if end - at < step or _I16_AT(data, at)[0] != size:
            return None
        (count,) = _I32_AT(data, at + 2 + size)
        if count < 0:
            return None
        counts.append(count)
        at += step + 4 * count
    if at > end:
        return None
    layout = (size, tuple(counts))
    plan = _layouts.get(layout)
    if plan is None:
        if not 2 <= sum(counts) <= _PLANNED_PARTITIONS:
            return None
        plan = _layout_plan(layout)
    reader, names_of, numbers_of, owners_of = plan
    values = reader.unpack_from(data, pos)
    raws = names_of(values)
    numbers = numbers_of(values)
    last = _layout_last.get(layout)
    if last is not None and last[0] == raws:
        try:
            return tuple(map(getitem, last[1], numbers)), at
        except (TypeError, IndexError):  # no shared values, or beyond them
            pass
    cached = tuple(map(_name_cache.get, raws))
    names = tuple(map(_name, raws)) if None in cached else cast(_Names, cached)
    topics = owners_of(names)
    _layout_last[layout] = (raws, tuple(map(_shared.get, topics)))
    signed = tuple(x - 2**32 if x >= 2**31 else x for x in numbers)
    return _partitions_of(topics, signed), at


_Layout = tuple[int, tuple[int, ...]]
_LayoutPlan = tuple[
    struct.Struct,
    Callable[[tuple[Any, ...]], tuple[bytes, ...]],
    Callable[[tuple[Any, ...]], tuple[int, ...]],
    Callable[[tuple[str, ...]], tuple[str, ...]],
]


def _layout_plan(layout: _Layout) -> _LayoutPlan:
    """How :func:`_read_by_layout` reads an array of ``layout`` = (name length, counts): its
    ``Struct`` (partition numbers unsigned) and the getters of the name bytes, of the numbers
    and of each number's topic from the names. Kept in :data:`_layouts` (cleared past 256)."""
    size, counts = layout
    reader = struct.Struct(">i" + "".join(f"h{size}si{c}I" for c in counts))
    name_at: list[int] = []
    number_at: list[int] = []
    owners: list[int] = []
    k = 1
    for entry, count in enumerate(counts):
        name_at.append(k + 1)
        number_at += range(k + 3, k + 3 + count)
        owners += [entry] * count
        k += 3 + count
    plan = (reader, itemgetter(*name_at), itemgetter(*number_at), itemgetter(*owners))
    if len(_layouts) >= 256:
        _layouts.clear()
        _layout_last.clear()
    _layouts[layout] = plan
    return plan


#: (name length, counts per entry) → its :func:`_layout_plan`.
_layouts: dict[_Layout, _LayoutPlan] = {}
#: Per layout, the last array's name bytes and its partitions' shared values (as
#: :data:`_uniform_last`).
_layout_last: dict[_Layout, tuple[tuple[bytes, ...], tuple[Any, ...]]] = {}


_Names = tuple[str, ...]


class _Uniform(NamedTuple):
    """How :func:`read_topic_partitions` reads a uniform array of one shape: the ``Struct``
    of the whole array, its size in bytes, and (several partitions per entry) the getters of
    the partition numbers and of each number's topic from the per-entry names."""

    reader: struct.Struct
    size: int
    numbers: Callable[[tuple[Any, ...]], tuple[int, ...]]
    topics: Callable[[tuple[str, ...]], tuple[str, ...]]


def _uniform_plan(shape: tuple[int, int, int]) -> _Uniform:
    """The :class:`_Uniform` reading of ``shape`` = (entries, name length, count), kept in
    :data:`_uniform` (cleared past 256 shapes)."""
    n, size, count = shape
    stride = 3 + count
    reader = struct.Struct(">i" + f"h{size}si{count}I" * n)
    if count == 1:  # numbers every fourth value; one number per name
        plan = _Uniform(reader, reader.size, itemgetter(slice(4, None, 4)), _same_names)
    else:
        at = [1 + e * stride + 3 + k for e in range(n) for k in range(count)]
        owners = [e for e in range(n) for _ in range(count)]
        plan = _Uniform(reader, reader.size, itemgetter(*at), itemgetter(*owners))
    if len(_uniform) >= 256:
        _uniform.clear()
        _uniform_last.clear()
    _uniform[shape] = plan
    return plan


def _same_names(names: tuple[str, ...]) -> tuple[str, ...]:
    return names


#: (entries, name length, partitions per entry) → its :class:`_Uniform` reading.
_uniform: dict[tuple[int, int, int], _Uniform] = {}
#: Per shape, the STRING bytes of the last uniform array read and, per partition, the shared
#: values (:func:`shared_partitions`) of its topic (``None``: none): members of one group list
#: the same topics in the same order, so the next array of that shape is read with one
#: comparison of the name bytes and one lookup per partition.
_uniform_last: dict[tuple[int, int, int], tuple[tuple[bytes, ...], tuple[Any, ...]]] = {}
#: Arrays of more partitions than this are read entry by entry, and assignments of more are
#: written without keeping their plan (bounding the memory the plans hold).
_PLANNED_PARTITIONS = 1_024
_I32_I16_AT = struct.Struct(">ih").unpack_from


def _read_topic_partitions(data: bytes, pos: int) -> tuple[tuple[TopicPartition, ...], int] | None:
    """:func:`read_topic_partitions` entry by entry."""
    end = len(data)
    (n,) = _I32_AT(data, pos)
    pos += 4
    if n < 0 or n > end - pos:
        return None
    out: list[TopicPartition] = []
    new = tuple.__new__
    for _ in range(n):
        (size,) = _I16_AT(data, pos)
        pos += 2
        if size < 0 or size > end - pos:
            return None
        raw = data[pos : pos + size]
        topic = _name_cache.get(raw) or _name(raw)
        pos += size
        if end - pos >= 8:  # the count and the first partition in one read
            count, first = _I32X2_AT(data, pos)
        else:
            (count,) = _I32_AT(data, pos)
        pos += 4
        if count < 0 or 4 * count > end - pos:
            return None
        known = _shared.get(topic)
        if count == 1:  # one partition per topic: the usual spread of many topics
            if known is not None and 0 <= first < len(known):
                out.append(known[first])
            else:
                out.append(new(TopicPartition, (topic, first)))
        elif count:
            parts = _int32s(count)(data, pos)
            if known is not None and min(parts) >= 0 and max(parts) < len(known):
                out += itemgetter(*parts)(known)
            else:
                out += map(_new_tp, zip(repeat(topic), parts))
        pos += 4 * count
    return tuple(out), pos


def _int32s(count: int) -> Callable[[bytes, int], tuple[int, ...]]:
    """``unpack_from`` of ``count`` big-endian INT32s (compiled once per count up to 4,096)."""
    reader = _int32_readers.get(count)
    if reader is None:
        reader = struct.Struct(f">{count}i").unpack_from
        if count <= 4_096:
            _int32_readers[count] = reader
    return reader


_int32_readers: dict[int, Callable[[bytes, int], tuple[int, ...]]] = {}


#: The topics array (bytes from the count on) of the last subscription read and its names: a
#: leader reads the same array from every member subscribing to the same topics.
_last_topics: tuple[bytes, tuple[str, ...]] = (b"\x00\x00\x00\x00", ())  # an empty array


def _set_last_topics(raw: bytes, topics: tuple[str, ...]) -> None:
    global _last_topics
    _last_topics = (raw, topics)


def _fast_decode_subscription(data: bytes) -> Subscription | None:
    """:func:`decode_subscription` of well-formed bytes in straight-line ``struct`` reads (the
    leader decodes every member's subscription each rebalance); ``None`` when the bytes are not
    well formed, so that the field-by-field reader raises its precise error."""
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
                names.append(_name_cache.get(raw) or _name(raw))
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
    fast = _fast_decode_subscription(data)
    if fast is not None:
        return fast
    c = _Cursor(data)
    version = _check_version(c.int16("version"), "subscription")
    topics = tuple(c.string(f"topics[{i}]") for i in range(c.count("topics")))
    user = c.nullable_bytes("user_data")
    owned = c.grouped("owned_partitions") if version >= 1 else ()
    generation = c.int32("generation_id") if version >= 2 else -1
    rack = c.nullable_string("rack_id") if version >= 3 else None
    return Subscription(topics, user, owned, generation, rack)


def decode_subscriptions(datas: Sequence[bytes]) -> list[Subscription]:
    """:func:`decode_subscription` of each of ``datas`` (a leader's distinct JoinGroup
    subscriptions), in order.

    Members of one group send bytes of one layout: the same version, topics, user data
    length, owned-partition names and counts and rack, differing only in the user data's
    content, the partition numbers and the generation (a settled group's members each own one
    partition of a topic, or ten). When at least :data:`_BATCH_SUBSCRIPTIONS` have one
    length, the first of them is decoded and its layout recorded (:func:`_layout_of`); every
    other one whose bytes equal it outside those fields (compared as rows of one ``numpy``
    array) decodes to the same fields with its own user data, numbers and generation, which
    are read from the array's columns. The others are decoded one by one.

    Raises:
        ConsumerProtocolError: as :func:`decode_subscription`, for the first bad one.
    """
    if len(datas) < _BATCH_SUBSCRIPTIONS or set(map(type, datas)) != {bytes}:
        return list(map(decode_subscription, datas))
    out: list[Subscription | None] = [None] * len(datas)
    for indices in _by_length(datas):
        if len(indices) >= _BATCH_SUBSCRIPTIONS:
            _decode_alike(datas, indices, out)
    for i, decoded in enumerate(out):
        if decoded is None:
            out[i] = decode_subscription(datas[i])
    return cast("list[Subscription]", out)


def _by_length(datas: Sequence[bytes]) -> list[list[int]]:
    """The indices of ``datas`` grouped by length (first appearance order)."""
    lengths = list(map(len, datas))
    if lengths.count(lengths[0]) == len(lengths):
        return [list(range(len(datas)))]
    groups: dict[int, list[int]] = {}
    for i, size in enumerate(lengths):
        at = groups.get(size)
        if at is None:
            groups[size] = [i]
        else:
            at.append(i)
    return list(groups.values())


#: From this many subscriptions of one length, :func:`decode_subscriptions` reads them as rows.
_BATCH_SUBSCRIPTIONS = 32


class _SubscriptionLayout(NamedTuple):
    """Where the fields of one subscription's bytes are (:func:`_layout_of`)."""

    template: Subscription
    #: byte offsets that do not decide the decoding (user data content, partition numbers,
    #: the generation, anything after the last field read)
    free: list[int]
    user: tuple[int, int] | None
    numbers: list[int]
    generation: int | None


def _layout_of(data: bytes) -> _SubscriptionLayout | None:
    """The layout of well-formed subscription bytes (walked as
    :func:`_fast_decode_subscription` reads them), or ``None``."""
    template = _fast_decode_subscription(data)
    if template is None:
        return None
    try:
        (version,) = _I16_AT(data, 0)
        version = min(version, HIGHEST_VERSION)
        (n,) = _I32_AT(data, 2)
        pos = 6
        for _ in range(n):
            (size,) = _I16_AT(data, pos)
            pos += 2 + size
        (size,) = _I32_AT(data, pos)
        pos += 4
        free: list[int] = []
        user = None
        if size >= 0:
            user = (pos, pos + size)
            free += range(pos, pos + size)
            pos += size
        numbers: list[int] = []
        if version >= 1:
            (n,) = _I32_AT(data, pos)
            pos += 4
            for _ in range(n):
                (size,) = _I16_AT(data, pos)
                pos += 2 + size
                (count,) = _I32_AT(data, pos)
                pos += 4
                numbers += range(pos, pos + 4 * count, 4)
                free += range(pos, pos + 4 * count)
                pos += 4 * count
        generation = None
        if version >= 2:
            generation = pos
            free += range(pos, pos + 4)
            pos += 4
        if version >= 3:
            (size,) = _I16_AT(data, pos)
            pos += 2 + max(size, 0)
    except struct.error:
        return None
    if len(numbers) != len(template.owned_partitions) or pos > len(data):
        return None
    free += range(pos, len(data))
    return _SubscriptionLayout(template, free, user, numbers, generation)


def _rows_alike(
    datas: Sequence[bytes], indices: list[int], free: list[int], numbers: list[int]
) -> tuple[list[bool], Any, list[list[int]]] | None:
    """``datas[i]`` for ``i`` in ``indices`` (all of one length) as rows of one ``uint8``
    array: which rows equal the first outside the ``free`` byte offsets, the array, and each
    row's INT32s at the ``numbers`` offsets read unsigned. ``None`` when three rows spread
    over the group (checked first) or half the rows differ (members owning other topics'
    partitions have other names at the same offsets: one by one costs less then)."""
    import numpy as np  # imported here: a Connect-only run never needs it

    first = indices[0]
    size = len(datas[first])
    fixed = np.ones(size, dtype=bool)
    fixed[free] = False
    sample = [datas[indices[len(indices) * k // 4]] for k in (1, 2, 3)]
    picked = np.frombuffer(b"".join(sample), dtype=np.uint8).reshape(3, size)[:, fixed]
    template_fixed = np.frombuffer(datas[first], dtype=np.uint8)[fixed]
    if not (picked == template_fixed).all():
        return None
    rows = np.frombuffer(b"".join([datas[i] for i in indices]), dtype=np.uint8)
    rows = rows.reshape(len(indices), size)
    same = (rows[:, fixed] == template_fixed).all(axis=1)
    if 2 * int(same.sum()) < len(indices):
        return None
    values: list[list[int]] = []
    if numbers:
        columns = (np.array(numbers)[:, None] + np.arange(4)).ravel()
        values = rows[:, columns].copy().view(">u4").reshape(len(indices), -1).tolist()
    return same.tolist(), rows, values


def _shared_or_new(
    lists: tuple[Any, ...], topics: tuple[str, ...], numbers: list[int]
) -> tuple[TopicPartition, ...]:
    """The partitions (``topics[k]``, ``numbers[k]``) with numbers read unsigned: the shared
    values (``lists``: each partition's topic's :func:`shared_partitions`, or ``None``) when
    all are in range, else built from the signed numbers."""
    try:
        return tuple(map(getitem, lists, numbers))
    except (TypeError, IndexError):  # no shared values, beyond them, or negative
        signed = tuple(x - 2**32 if x >= 2**31 else x for x in numbers)
        return _partitions_of(topics, signed)


def _decode_alike(datas: Sequence[bytes], indices: list[int], out: list[Any]) -> None:
    """:func:`decode_subscriptions` of ``datas[i]`` for ``i`` in ``indices`` (all of one
    length) into ``out``: those laid out as the first one; the others are left ``None``."""
    layout = _layout_of(datas[indices[0]])
    if layout is None:
        return
    extra = [] if layout.generation is None else [layout.generation]
    read = _rows_alike(datas, indices, layout.free, layout.numbers + extra)
    if read is None:
        return
    alike, _, values = read
    template = layout.template
    count = len(layout.numbers)
    topics = tuple(tp.topic for tp in template.owned_partitions)
    lists: tuple[Any, ...] = tuple(map(_shared.get, topics))
    user = layout.user
    new = Subscription
    for row, i in enumerate(indices):
        if not alike[row]:
            continue
        data = datas[i]
        got = values[row] if values else []
        generation = -1
        if extra:
            generation = got[count]
            generation = generation - 2**32 if generation >= 2**31 else generation
        out[i] = new(
            template.topics,
            None if user is None else data[user[0] : user[1]],
            _shared_or_new(lists, topics, got[:count]) if count else (),
            generation,
            template.rack_id,
        )


def read_topic_partition_arrays(
    datas: Sequence[bytes],
) -> list[tuple[tuple[TopicPartition, ...], int] | None]:
    """:func:`read_topic_partitions` at offset 0 of each of ``datas`` (the sticky assignor's
    user data of every member), for those it can read together; ``None`` for the others
    (read them with :func:`read_topic_partitions`).

    As :func:`decode_subscriptions`: 32 or more arrays of one length whose bytes equal the
    first's outside its partition numbers (and whatever follows the array) are rows of one
    ``numpy`` array, their numbers read from its columns.
    """
    out: list[tuple[tuple[TopicPartition, ...], int] | None] = [None] * len(datas)
    if len(datas) < _BATCH_SUBSCRIPTIONS or set(map(type, datas)) != {bytes}:
        return out
    for indices in _by_length(datas):
        if len(indices) < _BATCH_SUBSCRIPTIONS:
            continue
        template = datas[indices[0]]
        try:
            first = read_topic_partitions(template, 0)
            offsets = _number_offsets(template) if first is not None else None
        except struct.error:
            continue
        if first is None or offsets is None or len(offsets) != len(first[0]):
            continue
        parts, end = first
        free = [k for at in offsets for k in range(at, at + 4)] + list(range(end, len(template)))
        read = _rows_alike(datas, indices, free, offsets)
        if read is None:
            continue
        alike, _, values = read
        topics = tuple(tp.topic for tp in parts)
        lists: tuple[Any, ...] = tuple(map(_shared.get, topics))
        for row, i in enumerate(indices):
            if alike[row]:
                got = values[row] if values else []
                out[i] = (_shared_or_new(lists, topics, got) if got else (), end)
    return out


def _number_offsets(data: bytes) -> list[int] | None:
    """The byte offsets of the partition numbers of the well-formed array at offset 0."""
    (n,) = _I32_AT(data, 0)
    pos = 4
    offsets: list[int] = []
    for _ in range(n):
        (size,) = _I16_AT(data, pos)
        pos += 2 + size
        (count,) = _I32_AT(data, pos)
        pos += 4
        if count < 0:
            return None
        offsets += range(pos, pos + 4 * count, 4)
        pos += 4 * count
    return offsets


def encode_assignment(a: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """``ConsumerProtocol.serializeAssignment(assignment, version)``.

    Raises:
        ConsumerProtocolError: ``version`` is negative.
        EncodeError: a value the wire cannot carry.
    """
    version = _check_version(version, "assignment")
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
    distinct sequence (:func:`_assignment_plan`) and applied by one ``itemgetter`` that
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
            plan = _assignment_plan(topics)
        packer, gather, constants = plan
        if user is None:
            return packer.pack(version, *gather(numbers + constants), -1)
        return packer.pack(version, *gather(numbers + constants), len(user)) + user
    except (struct.error, EncodeError):
        return None


def encode_assignments(
    assignments: Iterable[Sequence[TopicPartition]], version: int = HIGHEST_VERSION
) -> list[bytes]:
    """The leader's encoding of every member's assignment (``ConsumerCoordinator
    .onLeaderElected``: ``ConsumerProtocol.serializeAssignment`` per member, user data null).

    Args:
        assignments: each member's partitions, in the order the assignor listed them.
        version: 0–3 (higher is written as 3).

    Returns:
        Per member, in order, the bytes of ``encode_assignment(Assignment(tuple(parts)),
        version)``: one call for the whole group, each member one ``struct`` pack through the
        plan of its topic sequence (members dealt alike share it); a member whose values do
        not fit goes through :func:`encode_assignment`, which raises its precise error.

    Raises:
        ConsumerProtocolError: ``version`` is negative.
        EncodeError: a value the wire cannot carry.
    """
    version = _check_version(version, "assignment")
    lists = list(assignments)
    total = sum(map(len, lists))
    if total >= _BATCH_PARTITIONS and total <= _BATCH_SHARE * len(lists):
        batched = _encode_batched(lists, version)
        if batched is not None:
            return batched
    return _encode_each(lists, version)


def _encode_each(lists: Sequence[Sequence[TopicPartition]], version: int) -> list[bytes]:
    """:func:`encode_assignments` member by member: one ``struct`` pack each."""
    empty = _EMPTY_NULL.pack(version, 0, -1)
    plans = _plans
    out: list[bytes] = []
    append = out.append
    for parts in lists:
        if not parts:
            append(empty)
            continue
        try:
            topics, numbers = zip(*parts, strict=True)
            plan = plans.get(topics) or _assignment_plan(topics)
            packer, gather, constants = plan
            append(packer.pack(version, *gather(numbers + constants), -1))
        except (struct.error, EncodeError):
            append(encode_assignment(Assignment(tuple(parts)), version))
    return out


#: From this many partitions in all, :func:`encode_assignments` writes members that share a
#: topic sequence together (:func:`_encode_batched`).
_BATCH_PARTITIONS = 512
#: ... and at most this many per member on average (longer lists: one ``struct`` pack per
#: member costs less than taking the partitions apart once more).
_BATCH_SHARE = 32
#: A topic sequence shared by fewer members than this is written member by member.
_BATCH_MEMBERS = 8
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_TOPIC_OF = itemgetter(0)
_NUMBER_OF = itemgetter(1)


def _encode_batched(lists: list[Sequence[TopicPartition]], version: int) -> list[bytes] | None:
    """:func:`encode_assignments` for many partitions: members whose partitions run through
    the same sequence of topics (a group dealt in strides: usually all of them) get bytes that
    differ only in the partition numbers, so each such set is written as rows of one
    ``numpy`` array: the bytes of one member with its numbers as zeros
    (:func:`_assignment_plan`), repeated, the members' big-endian numbers put in at their
    offsets (:func:`_number_columns`). Members of a sequence fewer than
    :data:`_BATCH_MEMBERS` share are packed one by one. ``None`` when some value does not fit
    an INT32 or a partition is not a (topic, number) pair (:func:`_encode_each` then raises
    the precise error or writes it)."""
    import numpy as np  # imported here: a Connect-only run never needs it

    try:
        flat = list(chain.from_iterable(lists))
        topics = tuple(map(_TOPIC_OF, flat))
        wide = np.array(list(map(_NUMBER_OF, flat)))
    except (TypeError, ValueError, OverflowError):
        return None
    if wide.dtype.kind != "i" or wide.min() < _INT32_MIN or wide.max() > _INT32_MAX:
        return None
    values = wide.astype(">i4")
    sizes = list(map(len, lists))
    ends = list(accumulate(sizes))
    starts = list(map(sub, ends, sizes))
    by_topics: dict[tuple[str, ...], list[int]] = {}
    for i, key in enumerate(map(topics.__getitem__, map(slice, starts, ends))):
        at = by_topics.get(key)
        if at is None:
            by_topics[key] = [i]
        else:
            at.append(i)
    out: list[bytes] = [b""] * len(lists)
    first = np.array(starts, dtype=np.intp)
    for key, members in by_topics.items():
        if len(members) < _BATCH_MEMBERS or not key:
            try:
                few = _encode_each([lists[i] for i in members], version)
            except (EncodeError, ConsumerProtocolError):
                return None  # raised again in member order, as the first member's error
            for i, encoded in zip(members, few, strict=True):
                out[i] = encoded
            continue
        try:
            packer, gather, constants = _plans.get(key) or _assignment_plan(key)
            template = packer.pack(version, *gather((0,) * len(key) + constants), -1)
        except (struct.error, EncodeError):
            return None
        order, columns = _number_columns(key, len(template))
        rows = np.empty((len(members), len(template)), dtype=np.uint8)
        rows[:] = np.frombuffer(template, dtype=np.uint8)
        taken = values[first[members][:, None] + order]
        rows[:, columns] = taken.view(np.uint8).reshape(len(members), -1)
        raw = rows.tobytes()
        size = len(template)
        for row, i in enumerate(members):
            out[i] = raw[row * size : row * size + size]
    return out


def _number_columns(topics: tuple[str, ...], size: int) -> tuple[Any, Any]:
    """For an assignment whose partitions run through ``topics`` (written in ``size`` bytes
    by :func:`_assignment_plan`'s layout): which partition goes in each INT32 slot, in the
    order written (per topic in first-appearance order, list order within it), and the byte
    columns of those slots (four per slot, in order). Kept per sequence as the plans are."""
    import numpy as np

    known = _columns.get(topics)
    if known is not None:
        return known
    groups: dict[str, list[int]] = {}
    for i, topic in enumerate(topics):
        groups.setdefault(topic, []).append(i)
    order: list[int] = []
    offsets: list[int] = []
    at = 2 + 4  # version INT16, topic count INT32
    for topic, indices in groups.items():
        at += len(encoded_string(topic, "assigned_partitions.topic")) + 4
        for i in indices:
            order.append(i)
            offsets.append(at)
            at += 4
    if at + 4 != size:
        raise AssertionError(f"assignment layout of {size} bytes, counted {at + 4}")
    plan = (
        np.array(order, dtype=np.intp),
        (np.array(offsets, dtype=np.intp)[:, None] + np.arange(4)).ravel(),
    )
    if len(topics) <= _PLANNED_PARTITIONS:
        if len(_columns) >= 1_024:
            _columns.clear()
        _columns[topics] = plan
    return plan


#: A topic sequence → its :func:`_number_columns` (as :data:`_plans`).
_columns: dict[tuple[str, ...], tuple[Any, Any]] = {}


_AssignmentPlan = tuple[
    struct.Struct, Callable[[tuple[object, ...]], tuple[object, ...]], tuple[object, ...]
]
#: A partitions' topic sequence (at most :data:`_PLANNED_PARTITIONS` long) → its
#: :func:`_assignment_plan` (cleared past 1,024 plans).
_plans: dict[tuple[str, ...], _AssignmentPlan] = {}
_EMPTY_NULL = struct.Struct(">hii")


def _assignment_plan(topics: tuple[str, ...]) -> _AssignmentPlan:
    """How :func:`_fast_encode_assignment` writes partitions of these topics (in this order):
    the ``struct.Struct`` of ``version INT16``, the topic count, per topic (first appearance
    order) its STRING bytes, the count and the partitions, then the user data length; the
    ``itemgetter`` that takes those values, in that order, from ``numbers + constants``; and
    the constants (topic count, then per topic its STRING bytes and count).

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
    if n <= _PLANNED_PARTITIONS:  # a longer list's plan is used once and not kept
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
    _check_version(c.int16("version"), "assignment")
    parts = c.grouped("assigned_partitions")
    return Assignment(parts, c.nullable_bytes("user_data"))


def partition_labels(parts: Sequence[TopicPartition]) -> list[str]:
    """``"<topic>-<partition>"`` labels (Kafka ``TopicPartition.toString``), in order."""
    return [f"{tp.topic}-{tp.partition}" for tp in parts]
