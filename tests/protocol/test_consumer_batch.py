"""protocol/consumer_batch.py: a leader's group read and written together equals each
message through protocol/consumer_codec.py alone (Kafka's ``ConsumerProtocol``
``serializeAssignment`` / ``deserializeSubscription`` per member), value for value and byte
for byte, including the members that do not fit the shared layout, and the errors.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.consumer_batch import (
    decode_subscriptions,
    encode_assignments,
    read_topic_partition_arrays,
)
from protocol.consumer_codec import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    TopicPartition,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.primitives import EncodeError
from protocol.topic_partitions import read_topic_partitions

BEYOND = TopicPartition("a", 2**31)


def test_assignments_with_a_partition_beyond_int32_or_a_negative_version_raise() -> None:
    with pytest.raises(EncodeError):
        encode_assignments([[TopicPartition("a", 1)], [TopicPartition("a", 2**31)]])
    with pytest.raises(EncodeError):  # the batched path (512 partitions or more) too
        encode_assignments([[TopicPartition("a", p)] for p in range(599)] + [[BEYOND]])
    with pytest.raises(ConsumerProtocolError, match="unsupported assignment version -1"):
        encode_assignments([[]], -1)


_topic = st.sampled_from(["a", "b", "topic-10", "é", "\U0001f600", ""])
_partitions = st.one_of(
    st.lists(st.builds(TopicPartition, _topic, st.integers(-(2**31), 2**31 - 1))),
    st.lists(st.tuples(_topic, st.integers(0, 5))).map(
        lambda runs: [TopicPartition(t, p) for t, n in runs for p in range(n)]
    ),
).map(tuple)


@given(st.lists(_partitions, max_size=8), st.integers(0, 5))
def test_assignments_encoded_together_equal_each_encoded_alone(
    parts: list[tuple[TopicPartition, ...]], version: int
) -> None:
    """The leader's batch (members alike share a plan) writes each member's bytes as
    ``encode_assignment`` with null user data does, in order."""
    alike = parts + parts[:2]  # members dealt the same topic sequence
    assert encode_assignments(alike, version) == [
        encode_assignment(Assignment(p), version) for p in alike
    ]


@settings(max_examples=30, deadline=None)
@given(
    st.integers(520, 640),
    st.lists(st.sampled_from(["a", "b", "topic-10", "é"]), min_size=1, max_size=4, unique=True),
    st.integers(1, 4),
    st.lists(_partitions, max_size=3),
    st.integers(0, 3),
)
def test_a_dealt_group_written_as_rows_equals_each_member_alone(
    members: int,
    topics: list[str],
    share: int,
    odd: list[tuple[TopicPartition, ...]],
    version: int,
) -> None:
    """512 partitions or more, at most 32 a member: members dealt in strides (one topic
    sequence shared by all, written as ``numpy`` rows), plus a few members dealt otherwise."""
    dealt = [
        tuple(TopicPartition(t, m + k * members) for t in topics for k in range(share))
        for m in range(members)
    ]
    lists = dealt + odd
    assert encode_assignments(lists, version) == [
        encode_assignment(Assignment(p), version) for p in lists
    ]


_owned = st.lists(st.sampled_from(["ab", "cd", "é"]), min_size=0, max_size=3, unique=True)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(32, 70),
    st.sampled_from([("ab", "cd"), ("ab", "cd", "é"), ("cd",)]),
    _owned,
    st.integers(1, 3),
    st.integers(0, 3),
    st.none() | st.integers(0, 6),
    st.lists(st.tuples(st.integers(0, 69), st.integers(0, 40)), max_size=4),
)
def test_a_settled_groups_subscriptions_read_as_rows_equal_each_alone(
    members: int,
    topics: tuple[str, ...],
    owned_topics: list[str],
    count: int,
    version: int,
    user_size: int | None,
    damage: list[tuple[int, int]],
) -> None:
    """32 or more subscriptions of one layout (differing in user data content, partition
    numbers and generation), some damaged (a byte changed, cut short): each decodes, or fails,
    as ``decode_subscription`` alone."""
    datas = []
    for m in range(members):
        owned = tuple(
            TopicPartition(t, -1 if (m, k) == (7, 0) else m * count + k)  # one negative
            for t in owned_topics
            for k in range(count)
        )
        user = None if user_size is None else bytes([m % 256]) * user_size
        sub = Subscription(topics, user, owned, generation_id=m - 1, rack_id="r")
        datas.append(bytearray(encode_subscription(sub, version)))
    for member, at in damage:
        data = datas[member % members]
        if at < len(data):
            data[at] ^= 0xFF
        else:
            del data[len(data) // 2 :]
    raw = [bytes(d) for d in datas]
    expected: list[object] = []
    for data in raw:
        try:
            expected.append(decode_subscription(data))
        except ConsumerProtocolError as e:
            expected.append(type(e))
    try:
        got: object = decode_subscriptions(raw)
    except ConsumerProtocolError as e:
        got = type(e)
    first_error = next((e for e in expected if isinstance(e, type)), None)
    assert got == (first_error or expected)


def _array(entries: list[tuple[str, list[int]]]) -> bytes:
    import struct

    out = struct.pack(">i", len(entries))
    for topic, parts in entries:
        raw = topic.encode()
        out += struct.pack(f">h{len(raw)}si{len(parts)}i", len(raw), raw, len(parts), *parts)
    return out


@settings(max_examples=30, deadline=None)
@given(
    st.integers(32, 70),
    st.lists(st.sampled_from(["ab", "cd", "é"]), min_size=1, max_size=3, unique=True),
    st.integers(1, 3),
    st.binary(max_size=3),
    st.lists(st.tuples(st.integers(0, 69), st.integers(0, 40)), max_size=4),
)
def test_arrays_read_as_rows_equal_each_read_alone(
    members: int,
    topics: list[str],
    count: int,
    tail: bytes,
    damage: list[tuple[int, int]],
) -> None:
    """The sticky user data's arrays of a settled group (one layout, other numbers, bytes
    after the array), some damaged: each one read together is what ``read_topic_partitions``
    reads alone; ``None`` leaves it to that reader."""
    import struct

    datas = [
        bytearray(_array([(t, [m * count + k for k in range(count)]) for t in topics]) + tail)
        for m in range(members)
    ]
    for member, at in damage:
        data = datas[member % members]
        if at < len(data):
            data[at] ^= 0xFF
        else:
            del data[len(data) // 2 :]
    raw = [bytes(d) for d in datas]
    together = read_topic_partition_arrays(raw)
    assert len(together) == len(raw)
    assert any(r is not None for r in together) or damage
    for data, read in zip(raw, together, strict=True):
        if read is None:
            continue
        try:
            alone = read_topic_partitions(data, 0)
        except struct.error:
            alone = None
        assert read == alone
