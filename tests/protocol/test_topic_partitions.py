"""protocol/topic_partitions.py: ARRAY(topic STRING, partitions ARRAY(INT32)) read in
compiled ``struct`` calls (uniform shapes, layouts, shared values) equals the field-by-field
reader (``protocol.consumer_codec.FieldReader.grouped``, Kafka's generated
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` readers)."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from protocol.consumer_codec import ConsumerProtocolError, FieldReader


def _topic_partitions_array(entries: list[tuple[str, list[int]]]) -> bytes:
    """ARRAY(topic STRING, partitions ARRAY(INT32)) written entry by entry."""
    out = struct.pack(">i", len(entries))
    for topic, parts in entries:
        raw = topic.encode()
        out += struct.pack(f">h{len(raw)}si{len(parts)}i", len(raw), raw, len(parts), *parts)
    return out


# names of one length in bytes (and "é", two bytes like "ab"): arrays of one shape, some not
_uniform_entries = st.integers(1, 3).flatmap(
    lambda count: st.lists(
        st.tuples(
            st.sampled_from(["ab", "cd", "é", "ef"]),
            st.lists(st.integers(-(2**31), 2**31 - 1), min_size=count, max_size=count),
        ),
        min_size=1,
        max_size=6,
    )
)


@given(st.lists(st.tuples(_uniform_entries, st.booleans(), st.integers(0, 4)), max_size=6))
def test_uniform_arrays_read_as_the_field_by_field_reader(
    arrays: list[tuple[list[tuple[str, list[int]]], bool, int]],
) -> None:
    """Arrays read in a row (a shape's ``Struct`` is kept from one to the next), some with one
    entry off the shape (a longer name or another count), and cut-off copies: each read as
    ``FieldReader.grouped`` reads it, or refused where it refuses."""
    from protocol.topic_partitions import read_topic_partitions

    for entries, off_shape, where in arrays:
        if off_shape:
            topic, parts = entries[where % len(entries)]
            entries[where % len(entries)] = (topic + "x", parts) if where % 2 else (topic, [])
        data = _topic_partitions_array(entries) + b"\x00\x01"
        for cut in (len(data), len(data) - 3, len(data) // 2):
            c = FieldReader(data[:cut])
            try:
                expected: object = (c.grouped("a"), c.pos)
            except ConsumerProtocolError:
                expected = None
            try:
                got: object = read_topic_partitions(data[:cut], 0)
            except struct.error:
                got = None
            assert got == expected


@given(
    st.lists(
        st.tuples(st.sampled_from(["ab", "cd", "é"]), st.lists(st.integers(-3, 12), max_size=3)),
        min_size=1,
        max_size=5,
    ),
    st.integers(0, 10),
)
def test_partitions_read_where_shared_values_exist_are_those_values(
    entries: list[tuple[str, list[int]]], shared: int
) -> None:
    """With shared values for some topics (fewer than some numbers read; none for negative
    numbers), an array reads as the field-by-field reader reads it; when every partition read
    has a shared value, they are those values themselves."""
    from protocol.topic_partitions import read_topic_partitions, shared_partitions

    # twice: the shared values start afresh once the tests before this one have filled them
    # (shared_partitions' bound), and a restart between the two topics' calls drops the
    # first; the second round finds both
    for _ in range(2):
        known = shared_partitions("ab", shared) + shared_partitions("é", shared)
    data = _topic_partitions_array(entries)
    got = read_topic_partitions(data, 0)
    assert got is not None
    assert got == (FieldReader(data).grouped("a"), len(data))
    if all(tp.topic != "cd" and 0 <= tp.partition < shared for tp in got[0]):
        assert all(any(tp is k for k in known) for tp in got[0])
