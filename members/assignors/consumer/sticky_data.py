"""What the sticky assignors read back from a member's subscription: its previous partitions and
the generation they belong to (Kafka's ``AbstractStickyAssignor.MemberData``).

* ``sticky`` (``StickyAssignor``, KIP-54, eager) carries both in the subscription's user data:
  the ``STICKY_ASSIGNOR_USER_DATA_V1`` struct (``previous_assignment``: array of (topic STRING,
  partitions ARRAY(INT32)), then ``generation`` INT32, KIP-341). A V0 struct (no generation) is
  still read; bytes neither version can read count as no partitions at generation -1.
* ``cooperative-sticky`` (``CooperativeStickyAssignor``, KIP-429) takes the owned partitions
  from the subscription (v1+) and the generation from its ``generationId`` field (v2+, KIP-792);
  before v2 the generation comes from a one-field user data struct (``generation`` INT32), -1
  when unreadable.

Both encoders write the bytes Kafka's ``subscriptionUserData`` writes (checked against Kafka in
``tests/kafka_oracle/test_consumer_sticky_differential.py``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple

from protocol.consumer_batch import read_topic_partition_arrays
from protocol.consumer_codec import ConsumerProtocolError, FieldReader, Subscription
from protocol.java_hashing import string_hash
from protocol.java_hashmap import JavaHashMap
from protocol.topic_partitions import TopicPartition, read_topic_partitions

__all__ = [
    "DEFAULT_GENERATION",
    "MemberData",
    "encode_sticky_user_data",
    "encode_cooperative_user_data",
    "sticky_member_data",
    "sticky_member_datas",
    "BATCHED_READERS",
    "cooperative_member_data",
    "subscription_generation",
]

#: ``AbstractStickyAssignor.DEFAULT_GENERATION``: no generation known.
DEFAULT_GENERATION = -1

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")


class MemberData(NamedTuple):
    """``AbstractStickyAssignor.MemberData``: previous partitions (in the order the member
    listed them) and their generation (``None`` = ``Optional.empty()``)."""

    partitions: list[TopicPartition]
    generation: int | None


#: ``MemberData(partitions, generation)`` built in C (``tuple.__new__``), without the
#: NamedTuple's Python-level constructor: the leader builds one per member.
_member_data = partial(tuple.__new__, MemberData)
_I32_AT = _I32.unpack_from


def subscription_generation(s: Subscription) -> int | None:
    """``Subscription.generationId()``: the v2 field, empty (``None``) when negative."""
    return s.generation_id if s.generation_id >= 0 else None


def encode_sticky_user_data(partitions: Sequence[TopicPartition], generation: int | None) -> bytes:
    """``StickyAssignor.subscriptionUserData`` after ``onAssignment``: the V1 struct, topics in
    the order of ``CollectionUtils.groupPartitionsByTopic``'s ``HashMap`` (``computeIfAbsent``
    puts a new key at the head of its bin), partitions in list
    order; ``generation`` ``None`` writes no generation field (a V0 struct)."""
    by_topic: dict[str, list[int]] = {}
    order = JavaHashMap(string_hash)
    for tp in partitions:
        if order.compute_if_absent(tp.topic):
            by_topic[tp.topic] = []
        by_topic[tp.topic].append(tp.partition)
    out = bytearray(_I32.pack(len(by_topic)))
    for topic in order:
        raw = topic.encode("utf-8")
        out += _I16.pack(len(raw)) + raw + _I32.pack(len(by_topic[topic]))
        out += struct.pack(f">{len(by_topic[topic])}i", *by_topic[topic])
    if generation is not None:
        out += _I32.pack(generation)
    return bytes(out)


def encode_cooperative_user_data(generation: int) -> bytes:
    """``CooperativeStickyAssignor.subscriptionUserData``: the generation as one INT32."""
    return _I32.pack(generation)


def _read_previous_assignment(data: bytes, with_generation: bool) -> MemberData:
    r = FieldReader(data)
    partitions: list[TopicPartition] = []
    for i in range(r.count("previous_assignment")):
        topic = r.string(f"previous_assignment[{i}].topic")
        for _ in range(r.count(f"previous_assignment[{i}].partitions")):
            partitions.append(TopicPartition(topic, r.int32("partition")))
    return MemberData(partitions, r.int32("generation") if with_generation else None)


def sticky_member_data(s: Subscription) -> MemberData:
    """``StickyAssignor.memberData``: the user data's V1 struct, else its V0 struct, else no
    partitions at generation -1; null or empty user data: no partitions, no generation."""
    if not s.user_data:
        return MemberData([], None)
    data = bytes(s.user_data)
    try:  # well-formed bytes in straight-line reads; anything else field by field below
        read = read_topic_partitions(data, 0)
    except struct.error:
        read = None
    if read is not None:
        partitions, pos = read
        if len(data) - pos >= 4:  # V1 (trailing bytes are not read)
            return _member_data((list(partitions), _I32_AT(data, pos)[0]))
        return _member_data((list(partitions), None))  # V1 fails on the generation; V0 reads
    for with_generation in (True, False):
        try:
            return _read_previous_assignment(s.user_data, with_generation)
        except ConsumerProtocolError:
            continue
    return MemberData([], DEFAULT_GENERATION)


def sticky_member_datas(subs: Sequence[Subscription]) -> list[MemberData] | None:
    """:func:`sticky_member_data` of each of ``subs`` (a leader's distinct subscriptions), the
    user data arrays of one layout read together
    (:func:`protocol.consumer_batch.read_topic_partition_arrays`), the others one by one;
    ``None`` when none can be read together (then read each with :func:`sticky_member_data`)."""
    if len(subs) < 32:
        return None
    users = [s.user_data or b"" for s in subs]  # null and empty: read one by one below
    read = read_topic_partition_arrays(users)
    if read.count(None) == len(read):
        return None
    out: list[MemberData] = []
    for s, data, got in zip(subs, users, read, strict=True):
        if got is None or not data:
            out.append(sticky_member_data(s))
            continue
        partitions, pos = got
        if len(data) - pos >= 4:  # V1 (trailing bytes are not read)
            out.append(_member_data((list(partitions), _I32_AT(data, pos)[0])))
        else:  # V1 fails on the generation; V0 reads
            out.append(_member_data((list(partitions), None)))
    return out


#: The readers :func:`members.assignors.consumer.sticky.sticky_assignment` can run for many
#: members at once (the same values as the one-member reader's, member by member).
BATCHED_READERS: dict[object, Callable[[Sequence[Subscription]], list[MemberData] | None]] = {
    sticky_member_data: sticky_member_datas,
}


def cooperative_member_data(s: Subscription) -> MemberData:
    """``CooperativeStickyAssignor.memberData``: owned partitions, and the subscription's
    generation (v2+) or else the user data's (``None`` without user data, -1 if unreadable)."""
    owned = list(s.owned_partitions)
    if s.generation_id >= 0:  # subscription_generation(s), inlined: one call per member
        return _member_data((owned, s.generation_id))
    if s.user_data is None:
        return MemberData(owned, None)
    if len(s.user_data) < 4:
        return MemberData(owned, DEFAULT_GENERATION)
    return MemberData(owned, int(_I32.unpack_from(s.user_data)[0]))
