"""protocol/consumer_codec.py: the consumer protocol envelope (Kafka ``ConsumerProtocol``).

The differential test against Kafka's own classes is tests/kafka_oracle/
test_consumer_differential.py; these pin the layout, the per-version fields and the errors.
A group's batch (protocol/consumer_batch.py) is pinned by test_consumer_batch.py, the arrays of
topic partitions (protocol/topic_partitions.py) by test_topic_partitions.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.consumer_codec import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import InputError

SUB = Subscription(
    topics=("b", "a"),
    user_data=b"x",
    owned_partitions=(TopicPartition("t", 1), TopicPartition("a", 0)),
    generation_id=5,
    rack_id="r",
)

# version | topics [a, b] (sorted) | user data "x" | owned [(a, [0]), (t, [1])] (sorted) |
# generation 5 | rack "r"
V3 = bytes.fromhex(
    "0003"
    "00000002"
    "000161"
    "000162"
    "00000001"
    "78"
    "00000002"
    "000161"
    "00000001"
    "00000000"
    "000174"
    "00000001"
    "00000001"
    "00000005"
    "000172"
)


def test_v3_layout() -> None:
    assert encode_subscription(SUB) == V3
    assert decode_subscription(V3) == Subscription(
        ("a", "b"), b"x", (TopicPartition("a", 0), TopicPartition("t", 1)), 5, "r"
    )


@pytest.mark.parametrize(
    ("version", "owned", "generation", "rack"),
    [(0, (), -1, None), (1, 2, -1, None), (2, 2, 5, None), (3, 2, 5, "r"), (7, 2, 5, "r")],
)
def test_each_version_carries_its_fields(
    version: int, owned: object, generation: int, rack: str | None
) -> None:
    back = decode_subscription(encode_subscription(SUB, version))
    assert back.topics == ("a", "b") and back.user_data == b"x"
    assert len(back.owned_partitions) == (owned if isinstance(owned, int) else 0)
    assert (back.generation_id, back.rack_id) == (generation, rack)
    assert encode_subscription(SUB, version)[:2] == min(version, 3).to_bytes(2, "big")


def test_assignment_groups_topics_in_first_appearance_order() -> None:
    a = Assignment((TopicPartition("z", 2), TopicPartition("a", 1), TopicPartition("z", 0)), None)
    data = encode_assignment(a, 1)
    assert data == bytes.fromhex(
        "00010000000200017a0000000200000002000000000001610000000100000001ffffffff"
    )
    assert decode_assignment(data).partitions == (
        TopicPartition("z", 2),
        TopicPartition("z", 0),
        TopicPartition("a", 1),
    )


def test_nullable_fields_read_any_negative_length_as_null() -> None:
    data = bytearray(encode_subscription(Subscription(("t",), None, rack_id=None), 3))
    data[-2:] = b"\x80\x00"  # rack id length -32768
    assert decode_subscription(bytes(data)).rack_id is None


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00", b"\xff\xff\x00\x00\x00\x00", b"\x00\x00\xff\xff\xff\xff", V3[:-1]],
)
def test_bad_bytes_raise_a_typed_input_error(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError) as err:
        decode_subscription(data)
    assert isinstance(err.value, InputError)


def test_negative_version_is_refused() -> None:
    with pytest.raises(ConsumerProtocolError, match="unsupported assignment version -1"):
        encode_assignment(Assignment(()), -1)


partitions = st.lists(
    st.builds(TopicPartition, st.text(max_size=4), st.integers(-(2**31), 2**31 - 1))
)


@given(
    st.builds(
        Subscription,
        st.lists(st.text(max_size=4)).map(tuple),
        st.none() | st.binary(max_size=8),
        partitions.map(tuple),
        st.integers(-(2**31), 2**31 - 1),
        st.none() | st.text(max_size=4),
    )
)
def test_v3_subscription_round_trips_up_to_order(s: Subscription) -> None:
    back = decode_subscription(encode_subscription(s))
    assert sorted(back.topics) == sorted(s.topics)
    assert sorted(back.owned_partitions) == sorted(s.owned_partitions)
    assert (back.user_data, back.generation_id, back.rack_id) == (
        s.user_data,
        s.generation_id,
        s.rack_id,
    )


def _writer_assignment(a: Assignment, version: int) -> bytes:
    """The field-by-field encoding (the ``Writer`` path) the fast encoder must equal."""
    from protocol.consumer_codec import _write_grouped
    from protocol.primitives import Writer

    w = Writer()
    w.int16(version, "version")
    _write_grouped(w, a.partitions, "assigned_partitions")
    w.nullable_bytes(a.user_data, "user_data")
    return w.getvalue()


# few topic names, so that runs, repeats and interleavings of one topic all occur
_topic = st.sampled_from(["a", "b", "topic-10", "é", "\U0001f600", ""])
_assignments = st.builds(
    Assignment,
    st.one_of(
        st.lists(st.builds(TopicPartition, _topic, st.integers(-(2**31), 2**31 - 1))),
        # topics in runs (what the assignors produce): grouped by topic, partitions in order
        st.lists(st.tuples(_topic, st.integers(0, 5))).map(
            lambda runs: [TopicPartition(t, p) for t, n in runs for p in range(n)]
        ),
    ).map(tuple),
    st.none() | st.binary(max_size=8),
)


@given(_assignments, st.integers(0, 3))
def test_assignment_encoding_equals_the_field_by_field_writer(a: Assignment, version: int) -> None:
    assert encode_assignment(a, version) == _writer_assignment(a, version)
    back = decode_assignment(encode_assignment(a, version))
    assert back.user_data == a.user_data
    assert sorted(back.partitions) == sorted(a.partitions)


def test_assignment_with_a_partition_beyond_int32_raises_the_writer_error() -> None:
    from protocol.primitives import EncodeError

    with pytest.raises(EncodeError):
        encode_assignment(Assignment((TopicPartition("a", 2**31),)))


def _field_by_field_subscription(data: bytes) -> Subscription:
    """The reader :func:`decode_subscription` falls back to (every field through
    ``FieldReader``), which the layout-remembering fast reads must equal."""
    from protocol.consumer_codec import FieldReader

    c = FieldReader(data)
    version = min(c.int16("version"), 3)
    topics = tuple(c.string(f"topics[{i}]") for i in range(c.count("topics")))
    user = c.nullable_bytes("user_data")
    owned = c.grouped("owned_partitions") if version >= 1 else ()
    generation = c.int32("generation_id") if version >= 2 else -1
    rack = c.nullable_string("rack_id") if version >= 3 else None
    return Subscription(topics, user, owned, generation, rack)


# few names and small counts: consecutive subscriptions share topics arrays and owned-partition
# layouts (first entries alike, later counts or names not), as a leader's members do
_owned = st.lists(
    st.tuples(st.sampled_from(["a", "b", "t-1", "é"]), st.integers(1, 3), st.integers(0, 9))
).map(lambda es: tuple(TopicPartition(t, p + k) for t, n, p in es for k in range(n)))
_subscriptions = st.builds(
    Subscription,
    st.sampled_from([("a", "b"), ("a", "b", "t-1"), ("b",), ()]),
    st.none() | st.binary(max_size=4),
    _owned,
    st.integers(-1, 3),
    st.none() | st.just("r"),
)


@given(st.lists(st.tuples(_subscriptions, st.integers(0, 3)), min_size=2, max_size=12))
def test_subscriptions_read_in_a_row_equal_the_field_by_field_reader(
    subs: list[tuple[Subscription, int]],
) -> None:
    for s, version in subs:
        data = encode_subscription(s, version)
        assert decode_subscription(data) == _field_by_field_subscription(data)
        # a remembered layout or topics array must not be taken for a cut-off copy of it
        for cut in (len(data) - 1, len(data) // 2):
            try:
                expected: object = _field_by_field_subscription(data[:cut])
            except ConsumerProtocolError as e:
                expected = type(e)
            try:
                got: object = decode_subscription(data[:cut])
            except ConsumerProtocolError as e:
                got = type(e)
            assert got == expected


def test_a_long_assignment_is_written_as_the_writer_does_and_its_plan_not_kept() -> None:
    from protocol.consumer_codec import known_assignment_plan

    parts = tuple(TopicPartition(f"t{p % 3}", p) for p in range(3_000))
    a = Assignment(parts, b"u")
    assert encode_assignment(a) == _writer_assignment(a, 3)
    assert known_assignment_plan(tuple(tp.topic for tp in parts)) is None
