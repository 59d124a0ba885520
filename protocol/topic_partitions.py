"""Kafka's ``TopicPartition`` and the consumer protocol's arrays of them, read fast.

``ARRAY(topic STRING, partitions ARRAY(INT32))`` is the field a leader reads most: every
member's ``owned_partitions`` (``ConsumerProtocolSubscription`` v1+, Kafka's
``clients/src/main/resources/common/message/ConsumerProtocolSubscription.json``), the
``assigned_partitions`` of a ``ConsumerProtocolAssignment``, and the partitions in the sticky
assignors' user data (``StickyAssignor`` / ``CooperativeStickyAssignor``'s
``ConsumerProtocol``-style structs). This module reads one such array at a given offset in
straight-line ``struct`` calls (:func:`read_topic_partitions`: one compiled ``Struct`` per
shape or layout of the array, kept between reads) and hands out shared, immutable
:class:`TopicPartition` values (:func:`shared_partitions`) and topic names decoded once per
distinct STRING bytes (:func:`topic_name`, Java's ``new String(bytes, UTF_8)`` through
:func:`protocol.java_strings.java_utf8`).

The values read are exactly what the field-by-field reader reads
(``protocol.consumer_codec.FieldReader.grouped``); bytes it would reject read as ``None``
here, so that the caller reads them with it for the precise error.
:mod:`protocol.consumer_codec` (one message) and :mod:`protocol.consumer_batch` (a group's
messages) read through this module.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import partial
from itertools import repeat
from operator import getitem, itemgetter
from typing import Any, NamedTuple, cast

from protocol.java_strings import java_utf8

__all__ = [
    "TopicPartition",
    "PLANNED_PARTITIONS",
    "topic_name",
    "shared_partitions",
    "shared_partitions_of",
    "partitions_of",
    "read_topic_partitions",
]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class TopicPartition(NamedTuple):
    """Kafka ``TopicPartition``: ``topic`` and ``partition`` (0-based)."""

    topic: str
    partition: int


_I16_AT = _I16.unpack_from
_I32_AT = _I32.unpack_from
_I32X2_AT = struct.Struct(">ii").unpack_from
_new_tp = partial(tuple.__new__, TopicPartition)

#: Topic names already read, by their STRING bytes: a leader reads the same few names once per
#: member (subscribed topics, owned partitions, the sticky user data); the decoding is a pure
#: function of the bytes, so a name read once is reused. Cleared when it grows past 10,000.
_name_cache: dict[bytes, str] = {}


def topic_name(raw: bytes) -> str:
    """The topic name whose STRING bytes (after the INT16 length) are ``raw``:
    :func:`protocol.java_strings.java_utf8` of them (U+FFFD per malformed unit, as Java's
    ``new String(bytes, UTF_8)`` in Kafka's generated readers), kept in :data:`_name_cache`."""
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
#: ``shared_partitions_of(topic)``: the shared values :func:`shared_partitions` built for
#: ``topic`` so far (index = partition number), or ``None``. The dict's own ``get`` (a lookup in
#: C, mapped over many topics at once); the dict is only ever cleared, never replaced.
shared_partitions_of: Callable[[str], tuple[TopicPartition, ...] | None] = _shared.get


def partitions_of(topics: Sequence[str], numbers: Sequence[int]) -> tuple[TopicPartition, ...]:
    """``TopicPartition(topics[i], numbers[i])`` for each i: the shared values
    (:func:`shared_partitions`) where every topic has them and every number is in range (two
    lookups per partition in C), else new tuples.

    Raises:
        ValueError: ``topics`` and ``numbers`` differ in length (and a value is new)."""
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
        :class:`protocol.consumer_codec.FieldReader` would reject (read them with it for the
        precise error).

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
                topic = _name_cache.get(raw) or topic_name(raw)
                known = _shared.get(topic)
                if known is not None and 0 <= first < len(known):
                    return (known[first],), at + 8
                return (_new_tp((topic, first)),), at + 8
        if n > 1 and 0 <= size <= len(data) - pos - 10:
            (count,) = _I32_AT(data, pos + 6 + size)
            shape = (n, size, count)
            plan = _uniform.get(shape)
            if plan is None and count > 0 and n * count <= PLANNED_PARTITIONS:
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
                    names = tuple(map(topic_name, raws)) if None in cached else cast(_Names, cached)
                    topics = plan.topics(names)
                    _uniform_last[shape] = (raws, tuple(map(_shared.get, topics)))
                    signed = tuple(x - 2**32 if x >= 2**31 else x for x in numbers)
                    return partitions_of(topics, signed), pos + plan.size
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
    layout lists fewer than 2 or more than :data:`PLANNED_PARTITIONS` partitions (the
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
        if not 2 <= sum(counts) <= PLANNED_PARTITIONS:
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
    names = tuple(map(topic_name, raws)) if None in cached else cast(_Names, cached)
    topics = owners_of(names)
    _layout_last[layout] = (raws, tuple(map(_shared.get, topics)))
    signed = tuple(x - 2**32 if x >= 2**31 else x for x in numbers)
    return partitions_of(topics, signed), at


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
#: written without keeping their plan (:mod:`protocol.consumer_codec`,
#: :mod:`protocol.consumer_batch`), bounding the memory the plans hold.
PLANNED_PARTITIONS = 1_024
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
        topic = _name_cache.get(raw) or topic_name(raw)
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
