"""Property tests and fuzzing for the Streams SubscriptionInfo / AssignmentInfo codec.

Round trips for every version of both messages: ``decode(encode(x, v))`` equals ``x`` as seen
through version ``v`` (the fields ``v`` lacks at their defaults, v1-6 offset sums as -2/-3), and
``encode(decode(b)) == b``. Fuzzing: random bytes and mutations of valid encodings make the
decoders succeed or raise :class:`DecodeError`, nothing else; whatever they decode re-encodes or
raises :class:`EncodeError`.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.primitives import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, DecodeError, EncodeError
from protocol.streams_assignment import decode_assignment, encode_assignment
from protocol.streams_subscription import (
    decode_subscription,
    encode_future_subscription,
    encode_subscription,
)
from protocol.streams_types import (
    LATEST_OFFSET,
    NO_NEXT_REBALANCE,
    UNKNOWN_OFFSET_SUM,
    HostInfo,
    StreamsAssignment,
    StreamsSubscription,
    StreamsTaskId,
)
from protocol.streams_versions import (
    LATEST_SUPPORTED_VERSION,
    MIN_NAMED_TOPOLOGY_VERSION,
    MIN_VERSION_OFFSET_SUM_SUBSCRIPTION,
    UNKNOWN,
)
from protocol.topic_partitions import TopicPartition


def _examples(n: int) -> settings:
    return settings(
        max_examples=max(n, settings.default.max_examples),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


SETTINGS = _examples(200)
FUZZ = _examples(500)

int32s = st.integers(INT32_MIN, INT32_MAX)
small = st.one_of(st.integers(0, 20), int32s)
# Offset sums lean on Kafka's markers -2 / -3 and the Long extremes.
offset_sums = st.one_of(
    st.sampled_from([LATEST_OFFSET, UNKNOWN_OFFSET_SUM, 0, INT64_MAX]),
    st.integers(INT64_MIN, INT64_MAX),
)
# "Aa"/"BB" share a Java hash; free text brings NUL, non-BMP characters and lone surrogates
# for the UTF-16 / modified UTF-8 fields.
# (Free text has no surrogate code points: two of them in a row would be one Java character.)
utf8_texts = st.text(st.characters(blacklist_categories=["Cs"]), max_size=8)
texts = st.one_of(
    st.sampled_from(["t0", "t1", "Aa", "BB", "\x00", "\U0001f600", "né", "x\udc00"]), utf8_texts
)
topologies = st.one_of(st.none(), st.sampled_from(["top", "Aa", "BB"]), utf8_texts.filter(bool))
utf16_topologies = st.one_of(st.none(), texts.filter(bool))


def plain_tasks() -> st.SearchStrategy[StreamsTaskId]:
    return st.tuples(small, small).map(lambda sp: StreamsTaskId(*sp))


def named_tasks(topology: st.SearchStrategy[str | None]) -> st.SearchStrategy[StreamsTaskId]:
    return st.tuples(small, small, topology).map(lambda spt: StreamsTaskId(*spt))


def _latest(draw: st.DrawFn, version: int) -> int:
    if version < 3:
        return draw(st.sampled_from([UNKNOWN, version, LATEST_SUPPORTED_VERSION]))
    return draw(
        st.one_of(st.integers(version, LATEST_SUPPORTED_VERSION), st.integers(version, INT32_MAX))
    )


@st.composite
def subscriptions(draw: st.DrawFn) -> tuple[StreamsSubscription, int]:
    """A subscription in the shape of its own version, and a version to encode it with."""
    target = draw(st.integers(1, LATEST_SUPPORTED_VERSION))
    own = draw(st.integers(1, LATEST_SUPPORTED_VERSION))
    latest = _latest(draw, target)
    task_strategy = (
        named_tasks(topologies) if target >= MIN_NAMED_TOPOLOGY_VERSION else plain_tasks()
    )
    fields: dict[str, Any] = {
        "user_endpoint": draw(st.one_of(st.none(), utf8_texts)),
        "unique_field": draw(st.integers(-128, 127)),
        "error_code": draw(st.one_of(st.integers(0, 4), int32s)),
        "client_tags": draw(st.dictionaries(utf8_texts, utf8_texts, max_size=4)),
    }
    if own >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        fields["task_offset_sums"] = draw(st.dictionaries(task_strategy, offset_sums, max_size=12))
    else:
        fields["prev_tasks"] = tuple(draw(st.lists(plain_tasks(), max_size=8)))
        fields["standby_tasks"] = tuple(draw(st.lists(plain_tasks(), max_size=8)))
    pid = draw(
        st.one_of(st.integers(0, (1 << 128) - 1), st.builds(uuid.UUID, int=st.integers(0, 3)))
    )
    return StreamsSubscription(own, latest, pid, **fields), target


def expected_subscription(s: StreamsSubscription, v: int) -> dict[str, Any]:
    sums = s.offset_sums()
    if v < MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        sums = {
            t: LATEST_OFFSET if x == LATEST_OFFSET else UNKNOWN_OFFSET_SUM for t, x in sums.items()
        }
    return {
        "version": v,
        "latest_supported_version": s.latest_supported_version if v >= 3 else UNKNOWN,
        "process_id": s.process_id,
        "offset_sums": sums,
        "user_endpoint": (s.user_endpoint or None) if v >= 2 else None,
        "unique_field": s.unique_field if v >= 8 else 0,
        "error_code": s.error_code if v >= 9 else 0,
        "client_tags": s.client_tags if v >= 11 else {},
    }


def seen(d: StreamsSubscription) -> dict[str, Any]:
    return {
        "version": d.version,
        "latest_supported_version": d.latest_supported_version,
        "process_id": d.process_id,
        "offset_sums": d.offset_sums(),
        "user_endpoint": d.user_endpoint,
        "unique_field": d.unique_field,
        "error_code": d.error_code,
        "client_tags": d.client_tags,
    }


@SETTINGS
@given(subscriptions())
def test_subscription_round_trip_every_version(case: tuple[StreamsSubscription, int]) -> None:
    s, v = case
    data = encode_subscription(s, v)
    decoded = decode_subscription(data)
    assert seen(decoded) == expected_subscription(s, v)
    if v < MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
        assert decoded.task_offset_sums == {}
        # prev/standby come back as Java HashSets: no duplicates.
        assert len(set(decoded.prev_tasks)) == len(decoded.prev_tasks)
    else:
        assert decoded.prev_tasks == () == decoded.standby_tasks
    again = encode_subscription(decoded)
    if MIN_VERSION_OFFSET_SUM_SUBSCRIPTION <= v < MIN_NAMED_TOPOLOGY_VERSION:
        # v7-9 regroup by subtopology through HashMap.computeIfAbsent, which puts colliding
        # subtopologies newest first: the wire order need not survive a decode (nor in Kafka)
        assert seen(decode_subscription(again)) == seen(decoded)
    else:
        assert again == data
    assert encode_subscription(decoded, v) == again


@SETTINGS
@given(st.integers(LATEST_SUPPORTED_VERSION + 1, INT32_MAX), st.data())
def test_future_subscription_round_trip(version: int, data: st.DataObject) -> None:
    latest = data.draw(st.integers(version, INT32_MAX))
    decoded = decode_subscription(
        encode_future_subscription(version, latest) + data.draw(st.binary(max_size=20))
    )
    assert (decoded.version, decoded.latest_supported_version, decoded.is_future) == (
        version,
        latest,
        True,
    )


partitions = st.builds(TopicPartition, texts, small)
partition_lists = st.lists(partitions, max_size=4).map(tuple)
hosts = st.builds(HostInfo, texts, small)


@st.composite
def assignments(draw: st.DrawFn) -> tuple[StreamsAssignment, int]:
    v = draw(st.integers(1, LATEST_SUPPORTED_VERSION))
    tasks = named_tasks(utf16_topologies) if v >= MIN_NAMED_TOPOLOGY_VERSION else plain_tasks()
    a = StreamsAssignment(
        version=draw(st.integers(1, LATEST_SUPPORTED_VERSION)),
        commonly_supported_version=draw(st.one_of(st.integers(-1, 11), int32s)),
        active_tasks=tuple(draw(st.lists(tasks, max_size=8))),
        standby_tasks=draw(st.dictionaries(tasks, partition_lists, max_size=4)),
        partitions_by_host=draw(st.dictionaries(hosts, partition_lists, max_size=3)),
        standby_partitions_by_host=draw(st.dictionaries(hosts, partition_lists, max_size=3)),
        error_code=draw(st.one_of(st.integers(0, 4), int32s)),
        next_rebalance_ms=draw(
            st.one_of(st.just(NO_NEXT_REBALANCE), st.integers(INT64_MIN, INT64_MAX))
        ),
    )
    return a, v


def _task(t: StreamsTaskId, v: int) -> StreamsTaskId:
    return StreamsTaskId(t.subtopology, t.partition, (t.topology or None) if v >= 10 else None)


@SETTINGS
@given(assignments())
def test_assignment_round_trip_every_version(case: tuple[StreamsAssignment, int]) -> None:
    a, v = case
    data = encode_assignment(a, v)
    decoded = decode_assignment(data)
    assert decoded.version == v
    assert decoded.commonly_supported_version == (
        a.commonly_supported_version if v >= 3 else UNKNOWN
    )
    assert decoded.active_tasks == tuple(_task(t, v) for t in a.active_tasks)
    assert decoded.standby_tasks == {_task(t, v): p for t, p in a.standby_tasks.items()}
    assert decoded.partitions_by_host == (a.partitions_by_host if v >= 2 else {})
    assert decoded.standby_partitions_by_host == (a.standby_partitions_by_host if v >= 6 else {})
    assert decoded.error_code == (a.error_code if v >= 4 else 0)
    assert decoded.next_rebalance_ms == (a.next_rebalance_ms if v >= 7 else NO_NEXT_REBALANCE)
    assert encode_assignment(decoded) == data


# ----------------------------------------------------------------------------------------------
# Fuzzing

_SEEDS: list[bytes] = []
for _v in range(1, LATEST_SUPPORTED_VERSION + 1):
    _SEEDS.append(
        encode_subscription(
            StreamsSubscription(
                11,
                11,
                7,
                user_endpoint="h:1",
                task_offset_sums={
                    StreamsTaskId(0, 1, "x" if _v >= 10 else None): 5,
                    StreamsTaskId(1, 0): -2,
                },
                client_tags={"k": "v"},
            ),
            _v,
        )
    )
_A_SEEDS = [
    encode_assignment(
        StreamsAssignment(
            11,
            11,
            (StreamsTaskId(0, 1, "né" if _v >= 10 else None),),
            {StreamsTaskId(1, 1): (TopicPartition("t\x00", 1),)},
            {HostInfo("h", 1): (TopicPartition("a", 0), TopicPartition("b", 2))},
            {HostInfo("h", 1): (TopicPartition("b", 1),)},
        ),
        _v,
    )
    for _v in range(1, LATEST_SUPPORTED_VERSION + 1)
]


def _check(data: bytes) -> None:
    for decode, encode in (
        (decode_subscription, encode_subscription),
        (decode_assignment, encode_assignment),
    ):
        try:
            value = decode(data)
        except DecodeError as exc:
            assert 0 <= exc.offset <= len(data), exc
            continue
        if getattr(value, "is_future", False):
            continue
        with contextlib.suppress(EncodeError):
            encode(value)  # type: ignore[operator]


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data: bytes) -> None:
    _check(data)


@FUZZ
@given(st.sampled_from(_SEEDS + _A_SEEDS), st.data())
def test_fuzz_mutated_encodings(seed: bytes, data: st.DataObject) -> None:
    buf = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "int"]))
        pos = data.draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "set" and buf:
            buf[pos] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xC0, 0xE0, 0xED, 0xF0, 0xFF]))
        elif op == "insert":
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and buf:
            del buf[pos : pos + data.draw(st.integers(1, 4))]
        elif op == "truncate":
            del buf[pos:]
        elif op == "int" and len(buf) >= pos + 4:
            value = data.draw(st.sampled_from([-1, -2, 0x7FFFFFFF, 0x8000, 0xFFFF, 65536]))
            buf[pos : pos + 4] = (value & 0xFFFFFFFF).to_bytes(4, "big")
    _check(bytes(buf))


def test_every_prefix_of_every_seed_fails_cleanly() -> None:
    for seed in _SEEDS + _A_SEEDS:
        for end in range(len(seed)):
            _check(seed[:end])


def test_huge_counts_do_not_hang() -> None:
    # Counts and lengths are checked against the remaining bytes before any loop or allocation.
    start = time.perf_counter()
    for head in (
        (11).to_bytes(4, "big") * 2 + bytes(16) + b"\x00\x00\x00\x00" + b"\x7f\xff\xff\xff",
        (6).to_bytes(4, "big") * 2 + bytes(16) + b"\x7f\xff\xff\xff",
        (9).to_bytes(4, "big") * 2
        + bytes(16)
        + bytes(4)
        + b"\x00\x00\x00\x01"
        + bytes(4)
        + b"\x7f\xff\xff\xff",
        (11).to_bytes(4, "big") * 2 + b"\x7f\xff\xff\xff" + bytes(12),
        (10).to_bytes(4, "big") * 2 + b"\x00\x00\x00\x01" + bytes(8) + b"\x7f\xff\xff\xff",
        (4).to_bytes(4, "big") * 2 + bytes(8) + b"\x7f\xff\xff\xff" + bytes(100),
        (6).to_bytes(4, "big") * 2 + bytes(8) + b"\x7f\xff\xff\xff",
    ):
        _check(head)
    assert time.perf_counter() - start < 1.0
