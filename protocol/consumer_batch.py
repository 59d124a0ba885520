"""A consumer group leader's batch: every member's ``ConsumerProtocolSubscription`` decoded in
one pass, and every member's ``ConsumerProtocolAssignment`` written in one call.

Kafka's leader (``ConsumerCoordinator.onLeaderElected``) deserializes each member's
JoinGroup metadata (``ConsumerProtocol.deserializeSubscription``), runs the assignor, and
serializes each member's assignment (``ConsumerProtocol.serializeAssignment``); the schemas
are ``clients/src/main/resources/common/message/ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json`` (:mod:`protocol.consumer_codec`, which writes and reads
one message). The members of one group send and get bytes of one layout, differing only in
a few fields (partition numbers, the user data's content, the generation), so this module
reads and writes them together: bytes of one length that equal a template outside those
fields are rows of one ``numpy`` array, their fields read from or written into its columns
(:func:`decode_subscriptions`, :func:`read_topic_partition_arrays`,
:func:`encode_assignments`). Every result equals, value for value and byte for byte, what
:mod:`protocol.consumer_codec` gives for each message alone; a message that does not fit the
template goes through it, which also raises its precise error.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain
from operator import getitem, itemgetter, sub
from typing import Any, NamedTuple, cast

from protocol.consumer_codec import (
    HIGHEST_VERSION,
    Assignment,
    ConsumerProtocolError,
    Subscription,
    assignment_plan,
    decode_subscription,
    decode_subscription_or_none,
    encode_assignment,
    known_assignment_plan,
    supported_version,
)
from protocol.primitives import EncodeError, encoded_string
from protocol.topic_partitions import (
    PLANNED_PARTITIONS,
    TopicPartition,
    partitions_of,
    read_topic_partitions,
    shared_partitions_of,
)

__all__ = ["decode_subscriptions", "read_topic_partition_arrays", "encode_assignments"]

_I16_AT = struct.Struct(">h").unpack_from
_I32_AT = struct.Struct(">i").unpack_from


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
    :func:`decode_subscription_or_none` reads them), or ``None``."""
    template = decode_subscription_or_none(data)
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
    values (``lists``: each partition's topic's
    :func:`protocol.topic_partitions.shared_partitions`, or ``None``) when all are in range,
    else built from the signed numbers."""
    try:
        return tuple(map(getitem, lists, numbers))
    except (TypeError, IndexError):  # no shared values, beyond them, or negative
        signed = tuple(x - 2**32 if x >= 2**31 else x for x in numbers)
        return partitions_of(topics, signed)


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
    lists: tuple[Any, ...] = tuple(map(shared_partitions_of, topics))
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
        lists: tuple[Any, ...] = tuple(map(shared_partitions_of, topics))
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
    version = supported_version(version, "assignment")
    lists = list(assignments)
    total = sum(map(len, lists))
    if total >= _BATCH_PARTITIONS and total <= _BATCH_SHARE * len(lists):
        batched = _encode_batched(lists, version)
        if batched is not None:
            return batched
    return _encode_each(lists, version)


def _encode_each(lists: Sequence[Sequence[TopicPartition]], version: int) -> list[bytes]:
    """:func:`encode_assignments` member by member: one ``struct`` pack each."""
    empty = encode_assignment(Assignment(()), version)
    known = known_assignment_plan
    out: list[bytes] = []
    append = out.append
    for parts in lists:
        if not parts:
            append(empty)
            continue
        try:
            topics, numbers = zip(*parts, strict=True)
            plan = known(topics) or assignment_plan(topics)
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
    (:func:`assignment_plan`), repeated, the members' big-endian numbers put in at their
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
            packer, gather, constants = known_assignment_plan(key) or assignment_plan(key)
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
    by :func:`assignment_plan`'s layout): which partition goes in each INT32 slot, in the
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
    if len(topics) <= PLANNED_PARTITIONS:
        if len(_columns) >= 1_024:
            _columns.clear()
        _columns[topics] = plan
    return plan


#: A topic sequence → its :func:`_number_columns` (as :func:`assignment_plan`'s plans).
_columns: dict[tuple[str, ...], tuple[Any, Any]] = {}
