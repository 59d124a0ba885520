"""Property tests and fuzzing for the Kafka primitives and the Connect codec.

Round trips: ``decode(encode(x))`` equals ``x`` modulo the documented normalisation (computed
here by a plain model of Kafka's ``asMap`` / ``revokedAsMap``), and ``encode(decode(b)) == b``
for every canonical ``b``. Fuzzing: random and mutated bytes make every decoder either succeed
or raise :class:`DecodeError`, never anything else.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.connect import ConnectAssignment, ConnectorTaskId, ConnectProtocol, WorkerSubscription
from protocol.connect_codec import (
    decode_assignment,
    decode_assignment_v0,
    decode_assignment_v1,
    decode_subscription,
    decode_subscription_v0,
    decode_subscription_v1,
    encode_assignment,
    encode_subscription,
    join_group_protocols,
)
from protocol.connect_json import (
    assignment_from_json,
    assignment_to_json,
    subscription_from_json,
    subscription_to_json,
)
from protocol.java_capacity import presized_capacity
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash
from protocol.primitives import (
    INT16_MAX,
    INT16_MIN,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    DecodeError,
    EncodeError,
    Reader,
    Writer,
)


def _examples(n: int) -> settings:
    """At least ``n`` examples, more under a deeper profile (``HYPOTHESIS_PROFILE=long``)."""
    return settings(
        max_examples=max(n, settings.default.max_examples),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


# The whole file stays around 10 s with the default profile.
SETTINGS = _examples(250)
FUZZ = _examples(600)

int16s = st.integers(INT16_MIN, INT16_MAX)
int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
# A small pool makes duplicates, shared entries and HashSet bucket collisions likely ("Aa" and
# "BB" have the same Java hash); free text adds non-ASCII and non-BMP names.
names = st.one_of(
    st.sampled_from(["c1", "c2", "connector1", "connector3", "Aa", "BB", "a-b", "\U0001f600", ""]),
    st.text(max_size=12),
)
task_numbers = st.one_of(st.integers(0, 20), st.integers(0, INT32_MAX))
tasks = st.builds(ConnectorTaskId, names, task_numbers)


@st.composite
def assignments(draw: st.DrawFn) -> Any:
    return ConnectAssignment(
        version=draw(st.integers(0, 3)),
        error=draw(st.one_of(st.sampled_from([0, 1]), int16s)),
        leader=draw(names),
        leader_url=draw(names),
        config_offset=draw(st.one_of(st.integers(-1, 1000), int64s)),
        connectors=tuple(draw(st.lists(names, max_size=20))),
        tasks=tuple(draw(st.lists(tasks, max_size=30))),
        revoked_connectors=tuple(draw(st.lists(names, max_size=5))),
        revoked_tasks=tuple(draw(st.lists(tasks, max_size=8))),
        delay_ms=draw(st.one_of(st.integers(0, 300_000), int32s)),
    )


@st.composite
def subscriptions(draw: st.DrawFn) -> Any:
    return WorkerSubscription(
        version=draw(st.integers(0, 3)),
        url=draw(names),
        config_offset=draw(int64s),
        allocation=draw(st.none() | assignments()),
        static_connectors=tuple(draw(st.lists(names, max_size=5))),
        static_tasks=tuple(draw(st.lists(tasks, max_size=8))),
    )


# ----------------------------------------------------------------------------------------------
# A plain model of what the writers put on the wire


def _entries(head: list[str], task_list: tuple[ConnectorTaskId, ...]) -> dict[str, list[int]]:
    entries: dict[str, list[int]] = {name: [-1] for name in head}
    for connector, number in task_list:
        entries.setdefault(connector, []).append(number)
    return entries


def _split(entries: dict[str, list[int]]) -> tuple[tuple[str, ...], tuple[ConnectorTaskId, ...]]:
    connectors = tuple(c for c, numbers in entries.items() for n in numbers if n == -1)
    found = tuple(
        ConnectorTaskId(c, n) for c, numbers in entries.items() for n in numbers if n != -1
    )
    return connectors, found


def normalized(a: ConnectAssignment, version: int) -> ConnectAssignment:
    """What the v1 reader returns for ``encode_assignment(a, version)``."""
    order = hash_order(a.connectors, string_hash, presized_capacity(len(a.connectors)))
    connectors, assigned = _split(_entries(order, a.tasks))
    revoked_connectors: tuple[str, ...] = ()
    revoked: tuple[ConnectorTaskId, ...] = ()
    delay = 0
    if version >= 1:
        revoked_connectors, revoked = _split(
            _entries(list(dict.fromkeys(a.revoked_connectors)), a.revoked_tasks)
        )
        delay = a.delay_ms
    return ConnectAssignment(
        version=version,
        error=a.error,
        leader=a.leader,
        leader_url=a.leader_url,
        config_offset=a.config_offset,
        connectors=connectors,
        tasks=assigned,
        revoked_connectors=revoked_connectors,
        revoked_tasks=revoked,
        delay_ms=delay,
    )


def presize_stable(a: ConnectAssignment) -> bool:
    """False for the documented exception to ``encode(decode(b)) == b``.

    Kafka presizes ``new HashSet<>(connectors)`` from the list length, duplicates included;
    when collapsing duplicates crosses the n = 12 boundary the decoded list implies a smaller
    table, so the re-encoded connector order can differ (same content).
    """
    return presized_capacity(len(a.connectors)) == presized_capacity(len(set(a.connectors)))


def without_cooperative_fields(a: ConnectAssignment) -> ConnectAssignment:
    return ConnectAssignment(
        version=a.version,
        error=a.error,
        leader=a.leader,
        leader_url=a.leader_url,
        config_offset=a.config_offset,
        connectors=a.connectors,
        tasks=a.tasks,
    )


# ----------------------------------------------------------------------------------------------
# Primitives


@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("int16"), int16s),
            st.tuples(st.just("int32"), int32s),
            st.tuples(st.just("int64"), int64s),
            st.tuples(st.just("string"), st.text(max_size=30)),
            st.tuples(st.just("nullable_bytes"), st.none() | st.binary(max_size=30)),
            st.tuples(st.just("int32_array"), st.lists(int32s, max_size=10).map(tuple)),
            st.tuples(st.just("string_array"), st.lists(st.text(max_size=5), max_size=5)),
        ),
        max_size=12,
    )
)
def test_primitives_round_trip(ops: list[tuple[str, Any]]) -> None:
    w = Writer()
    for kind, value in ops:
        getattr(w, kind)(value, kind)
    data = w.getvalue()
    r = Reader(data)
    for kind, value in ops:
        assert getattr(r, kind)(kind) == value
    assert r.remaining == 0


@SETTINGS
@given(st.integers(), st.sampled_from(["int16", "int32", "int64"]))
def test_writer_rejects_out_of_range_ints(value: int, kind: str) -> None:
    low, high = {"int16": (INT16_MIN, INT16_MAX), "int32": (INT32_MIN, INT32_MAX),
                 "int64": (INT64_MIN, INT64_MAX)}[kind]  # fmt: skip
    w = Writer()
    if low <= value <= high:
        getattr(w, kind)(value, "f")
    else:
        try:
            getattr(w, kind)(value, "f")
        except EncodeError as exc:
            assert exc.field == "f"
        else:
            raise AssertionError("out-of-range value was written")


# ----------------------------------------------------------------------------------------------
# Round trips


@SETTINGS
@given(assignments(), st.integers(0, 3))
def test_assignment_encode_decode(a: ConnectAssignment, version: int) -> None:
    data = encode_assignment(a, version)
    expected = normalized(a, version)
    assert decode_assignment_v1(data) == expected
    assert decode_assignment(data) == expected
    assert decode_assignment_v0(data) == without_cooperative_fields(expected)
    again = encode_assignment(decode_assignment(data))
    if presize_stable(a):
        # canonical bytes: decode -> encode is the identity (HashSet order is idempotent)
        assert again == data
        if version == 0:
            assert encode_assignment(decode_assignment_v0(data)) == data
    else:
        # The documented exception: duplicates collapsed across the n = 12 presizing
        # boundary, so Kafka's table was larger than the decoded list implies. Same content.
        assert decode_assignment(again) == normalized(expected, version)


@SETTINGS
@given(subscriptions(), st.integers(0, 3))
def test_subscription_encode_decode(s: WorkerSubscription, version: int) -> None:
    data = encode_subscription(s, version)
    decoded = decode_subscription(data)
    allocation = None
    if version >= 1 and s.allocation is not None:
        allocation = normalized(s.allocation, version)  # re-serialized with the outer header
    assert (decoded.version, decoded.url, decoded.config_offset) == (
        version,
        s.url,
        s.config_offset,
    )
    assert decoded.allocation == allocation
    if version >= 3:
        assert decoded.static_connectors == s.static_connectors
        assert decoded.static_tasks == _split(_entries([], s.static_tasks))[1]
    else:
        assert decoded.static_connectors == () and decoded.static_tasks == ()
    if s.allocation is None or presize_stable(s.allocation):
        assert encode_subscription(decoded) == data
    # Kafka's readers: v0 reads url/offset of anything, v1 (a v2 worker) reads v1..v3 alike
    v0 = decode_subscription_v0(data)
    assert (v0.version, v0.url, v0.config_offset, v0.allocation) == (
        version, s.url, s.config_offset, None,
    )  # fmt: skip
    v1 = decode_subscription_v1(data)
    assert (v1.version, v1.url, v1.config_offset, v1.allocation) == (
        version, s.url, s.config_offset, allocation,
    )  # fmt: skip


@SETTINGS
@given(
    st.sampled_from(list(ConnectProtocol)),
    names,
    int64s,
    st.none() | assignments(),
    st.lists(names, max_size=3),
    st.lists(tasks, max_size=3),
)
def test_join_group_protocols_entries(
    protocol: ConnectProtocol,
    url: str,
    offset: int,
    allocation: ConnectAssignment | None,
    static_connectors: list[str],
    static_tasks: list[ConnectorTaskId],
) -> None:
    got = join_group_protocols(protocol, url, offset, allocation, static_connectors, static_tasks)
    assert [name for name, _ in got] == [p.protocol_name for p in protocol.advertised()]
    for (_, data), p in zip(got, protocol.advertised(), strict=True):
        expected = WorkerSubscription(p.version, url, offset, allocation, tuple(static_connectors),
                                      tuple(static_tasks))  # fmt: skip
        assert data == encode_subscription(expected)


def _json_safe(value: Any) -> bool:
    """False where the JSON form or the bytes cannot round-trip, by documented design.

    "<connector>-<n>" cannot express a task whose connector name is empty or ends in '-'
    (from_json reads "c--1" as a negative number), and duplicate connectors that crossed the
    n = 12 presizing boundary do not re-encode to the same bytes (see connect_codec).
    """
    if isinstance(value, WorkerSubscription):
        assignment = value.allocation
        items = value.static_tasks
    else:
        assignment, items = value, ()
    if assignment is not None:
        items += assignment.tasks + assignment.revoked_tasks
        if not presize_stable(assignment):
            return False
    return not any(t.connector.endswith("-") or not t.connector for t in items)


@SETTINGS
@given(assignments())
def test_assignment_json_round_trip(a: ConnectAssignment) -> None:
    if not _json_safe(a):
        return
    data = encode_assignment(a)
    decoded = decode_assignment(data)
    if not _json_safe(decoded):
        return
    obj = json.loads(json.dumps(assignment_to_json(decoded)))
    assert assignment_from_json(obj) == decoded
    assert encode_assignment(assignment_from_json(obj)) == data


@SETTINGS
@given(subscriptions())
def test_subscription_json_round_trip(s: WorkerSubscription) -> None:
    if not _json_safe(s):
        return
    data = encode_subscription(s)
    decoded = decode_subscription(data)
    if not _json_safe(decoded):
        return
    obj = json.loads(json.dumps(subscription_to_json(decoded)))
    assert subscription_from_json(obj) == decoded
    assert encode_subscription(subscription_from_json(obj)) == data


# ----------------------------------------------------------------------------------------------
# Fuzzing

DECODERS = [
    decode_assignment,
    decode_assignment_v0,
    decode_assignment_v1,
    decode_subscription,
    decode_subscription_v0,
    decode_subscription_v1,
]


def decode_everything(data: bytes) -> None:
    for decoder in DECODERS:
        try:
            decoder(data)
        except DecodeError as exc:
            assert 0 <= exc.offset <= len(data)
            assert exc.field.startswith(("assignment.", "subscription."))
            assert str(exc).startswith(exc.field + ": ")


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_decode_error(data: bytes) -> None:
    decode_everything(data)


@st.composite
def valid_messages(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        return encode_assignment(draw(assignments()))
    return encode_subscription(draw(subscriptions()))


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(valid_messages()))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "count"]))
        at = draw(st.integers(0, len(data)))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "count":  # a length/count field turned huge, negative or null
            value = draw(st.sampled_from([-1, -2, 0x7FFF, 0x7FFFFFFF, -(2**31), 2**20]))
            data[at : at + 4] = value.to_bytes(4, "big", signed=True)
    return bytes(data)


@pytest.mark.slow  # deep fuzzing (~5 s): `pytest -m slow`, and in .ci/run
@FUZZ
@given(mutated())
def test_mutated_bytes_only_raise_decode_error(data: bytes) -> None:
    decode_everything(data)


@_examples(100)
@given(valid_messages())
def test_every_truncation_only_raises_decode_error(data: bytes) -> None:
    for end in range(len(data)):
        decode_everything(data[:end])


def test_huge_claims_do_not_allocate_or_hang() -> None:
    # count 2**31-1 of entries, tasks and strings; and a megabyte of 0xff
    for tail in (b"\x7f\xff\xff\xff", b"\x00\x00\x00\x01\x7f\xff", b"\xff" * 1_000_000):
        decode_everything(b"\x00\x01\x00\x00\x00\x00\x00\x00" + bytes(8) + tail)
