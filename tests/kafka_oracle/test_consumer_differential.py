"""groupsim's consumer-protocol codec and consumer assignors against Kafka's own classes.

* Codec: every Subscription/Assignment groupsim writes (versions 0–3, and out-of-range ones)
  must be byte-identical to ``ConsumerProtocol.serializeSubscription/serializeAssignment``;
  Kafka's bytes (and mutated or truncated bytes) must decode to the same fields, or fail on
  both sides.
* Assignors: one JoinGroup round (members in JoinGroup order, cluster metadata with replica
  racks) through :mod:`members.assignors.consumer` and through Kafka's ``RangeAssignor`` /
  ``RoundRobinAssignor`` (``assign(Cluster, GroupSubscription)`` in ``GroupsimConsumerDriver``);
  every member's partition list must be equal, in order.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from members.assignors import consumer as consumer_assignors
from members.assignors.consumer import ConsumerMember
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
from protocol.java_strings import java_string_key
from tests.kafka_oracle.oracle import KafkaOracle, OracleError, b64, unb64

pytestmark = pytest.mark.kafka

#: Examples per assignor in the ``-m kafka`` run; ``GROUPSIM_ORACLE_EXAMPLES`` sets another.
EXAMPLES = int(os.environ.get("GROUPSIM_ORACLE_EXAMPLES", 0)) or 1000
_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

# ------------------------------------------------------------------------------ strategies

_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-_.éΩ中\U0001f600"
_RACKS = ["r0", "r1", "r2", "r3"]


@st.composite
def names(draw: st.DrawFn, count: int, prefix: str) -> list[str]:
    """``count`` distinct names: indexed, drawn text, or a family sharing one
    ``String.hashCode`` ("Aa" = "BB"), so Kafka's HashMaps crowd one bin."""
    style = draw(st.sampled_from(["plain", "drawn", "same-hash"]))
    bits = max(1, (count - 1).bit_length())
    out: list[str] = []
    for i in range(count):
        if style == "same-hash":
            out.append(prefix + "".join("BB" if i >> b & 1 else "Aa" for b in range(bits)))
        elif style == "plain":
            out.append(f"{prefix}{i}")
        else:
            name = draw(st.text(_CHARS, max_size=5)) + f"{prefix}{i}"
            out.append(name)
    return list(dict.fromkeys(out))


partitions_st = st.lists(
    st.tuples(st.sampled_from(["t0", "t1", "orders", "é中", ""]), st.integers(-1, 60)),
    max_size=12,
)
user_data_st = st.none() | st.binary(max_size=24)
rack_st = st.none() | st.sampled_from(["", "r0", "rack-é"])


@st.composite
def subscriptions(draw: st.DrawFn) -> Subscription:
    topics = draw(st.lists(st.sampled_from(["t0", "t1", "orders", "é中", "z", ""]), max_size=6))
    return Subscription(
        topics=tuple(topics),
        user_data=draw(user_data_st),
        owned_partitions=tuple(TopicPartition(t, p) for t, p in draw(partitions_st)),
        generation_id=draw(st.integers(-1, 2**31 - 1)),
        rack_id=draw(rack_st),
    )


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[ConsumerMember], dict[str, list[list[str | None]]]]:
    """Members (1–50, JoinGroup order) and cluster metadata (0–20 topics × 1–50 partitions,
    replicas on racks or not), subscriptions mixed (and some to topics without metadata)."""
    big = draw(st.integers(0, 9)) == 0
    n_topics = draw(st.integers(0, 20 if big else 6))
    topics = draw(names(n_topics, "topic-")) if n_topics else []
    rack_mode = draw(st.sampled_from(["none", "some", "all"]))
    cluster: dict[str, list[list[str | None]]] = {}
    for t in topics:
        count = draw(st.integers(1, 50 if big else 12))
        parts: list[list[str | None]] = []
        for _ in range(count):
            if rack_mode == "none":
                parts.append([None])
            else:
                n = draw(st.integers(0 if rack_mode == "some" else 1, 3))
                pool: list[str | None] = _RACKS + ([None] if rack_mode == "some" else [])
                parts.append(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
        cluster[t] = parts
    missing = ["no-metadata"] if draw(st.booleans()) else []
    candidates = topics + missing
    n_members = draw(st.integers(1, 50 if big else 8))
    ids = draw(names(n_members, "consumer-"))
    members = []
    same = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else []
    for i, mid in enumerate(ids):
        subs = (
            common
            if same
            else (draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else [])
        )
        instance = f"instance-{draw(st.integers(0, 60))}" if draw(st.booleans()) else None
        racked = rack_mode != "none" or i % 2
        rack = draw(st.none() | st.sampled_from(["", *_RACKS])) if racked else None
        members.append(
            ConsumerMember(mid, Subscription(tuple(sorted(subs)), None, rack_id=rack), instance)
        )
    return members, cluster


# ------------------------------------------------------------------------------ helpers


def _tps(parts: list[list[Any]]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t, p) for t, p in parts)


def _sub_json(s: Subscription) -> dict[str, Any]:
    return {
        "topics": list(s.topics),
        "user_data": None if s.user_data is None else b64(s.user_data),
        "owned": [list(tp) for tp in s.owned_partitions],
        "generation_id": s.generation_id,
        "rack_id": s.rack_id,
    }


def _kafka(oracle: KafkaOracle, op: str, **fields: Any) -> Any:
    """Kafka's answer, or ``"error"`` when Kafka throws."""
    try:
        return oracle.call(op, **fields)
    except OracleError:
        return "error"


def _ours(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except ConsumerProtocolError:
        return "error"


def _mutations(data: bytes, cut: int, flip: int, value: int) -> list[bytes]:
    out = [data[: cut % (len(data) + 1)], data + b"\x00\x01"]
    if data:
        i = flip % len(data)
        out.append(data[:i] + bytes([value]) + data[i + 1 :])
    return out


# ------------------------------------------------------------------------------ codec


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SLOW)
@given(
    s=subscriptions(),
    version=st.integers(-1, 5),
    cut=st.integers(0, 400),
    flip=st.integers(0, 400),
    value=st.integers(0, 255),
)
def test_subscription_bytes_equal_kafka(
    kafka_oracle: KafkaOracle, s: Subscription, version: int, cut: int, flip: int, value: int
) -> None:
    kafka = _kafka(kafka_oracle, "consumer.serialize_subscription", version=version, **_sub_json(s))
    ours = _ours(encode_subscription, s, version)
    assert (ours if ours == "error" else b64(ours)) == kafka
    if kafka == "error":
        return
    for data in [unb64(kafka), *_mutations(unb64(kafka), cut, flip, value)]:
        theirs = _kafka(kafka_oracle, "consumer.deserialize_subscription", data=b64(data))
        mine = _ours(decode_subscription, data)
        if theirs == "error" or mine == "error":
            assert mine == theirs, data
            continue
        theirs.pop("version")
        assert _sub_json(mine) == theirs, data
    kafka_oracle.compared["consumer subscription codec"] += 1


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SLOW)
@given(
    parts=partitions_st,
    user=user_data_st,
    version=st.integers(-1, 5),
    cut=st.integers(0, 400),
    flip=st.integers(0, 400),
    value=st.integers(0, 255),
)
def test_assignment_bytes_equal_kafka(
    kafka_oracle: KafkaOracle,
    parts: list[tuple[str, int]],
    user: bytes | None,
    version: int,
    cut: int,
    flip: int,
    value: int,
) -> None:
    a = Assignment(tuple(TopicPartition(t, p) for t, p in parts), user)
    fields = {
        "partitions": [list(tp) for tp in a.partitions],
        "user_data": None if user is None else b64(user),
    }
    kafka = _kafka(kafka_oracle, "consumer.serialize_assignment", version=version, **fields)
    ours = _ours(encode_assignment, a, version)
    assert (ours if ours == "error" else b64(ours)) == kafka
    if kafka == "error":
        return
    for data in [unb64(kafka), *_mutations(unb64(kafka), cut, flip, value)]:
        theirs = _kafka(kafka_oracle, "consumer.deserialize_assignment", data=b64(data))
        mine = _ours(decode_assignment, data)
        if theirs == "error" or mine == "error":
            assert mine == theirs, data
            continue
        assert {
            "version": theirs["version"],
            "partitions": [list(tp) for tp in mine.partitions],
            "user_data": None if mine.user_data is None else b64(mine.user_data),
        } == theirs
    kafka_oracle.compared["consumer assignment codec"] += 1


# ------------------------------------------------------------------------------ assignors


def compare_assignment(
    oracle: KafkaOracle,
    assignor: str,
    members: list[ConsumerMember],
    cluster: dict[str, list[list[str | None]]],
) -> None:
    """One round through both sides; asserts every member's list is equal, in order."""
    request = [
        {"id": m.member_id, "instance": m.group_instance_id, **_sub_json(m.subscription)}
        for m in members
    ]
    kafka = oracle.call("consumer.assign", assignor=assignor, members=request, topics=cluster)
    racks = {t: tuple(tuple(r) for r in parts) for t, parts in cluster.items()}
    ours = consumer_assignors.ASSIGNORS[assignor](members, racks)
    assert {m: [list(tp) for tp in parts] for m, parts in ours.items()} == kafka


@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_assignor_equals_kafka(kafka_oracle: KafkaOracle, assignor: str) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SLOW)
    @given(case=clusters())
    def run(case: tuple[list[ConsumerMember], dict[str, list[list[str | None]]]]) -> None:
        compare_assignment(kafka_oracle, assignor, *case)
        kafka_oracle.compared[f"consumer {assignor}"] += 1

    run()


def test_planted_range_bug_is_caught(
    kafka_oracle: KafkaOracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Range ignoring ``group.instance.id`` in its member order must be told apart."""
    from members.assignors.consumer import range as range_mod

    monkeypatch.setattr(
        range_mod,
        "member_info_order",
        lambda members: sorted(members, key=lambda m: java_string_key(m.member_id)),
    )

    @settings(max_examples=300, deadline=None, suppress_health_check=_SLOW, database=None)
    @given(case=clusters())
    def run(case: tuple[list[ConsumerMember], dict[str, list[list[str | None]]]]) -> None:
        compare_assignment(kafka_oracle, "range", *case)

    with pytest.raises(AssertionError):
        run()
