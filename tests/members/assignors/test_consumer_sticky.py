"""members/assignors/consumer/sticky*: hand-checked rules of Kafka's sticky assignors.

The differential test against Kafka's classes over multi-generation histories is
tests/kafka_oracle/test_consumer_sticky_differential.py; these pin the rules docs/consumer.md
states, in the default run.
"""

from __future__ import annotations

import struct

import pytest

from members.assignors.consumer import (
    ConsumerMember,
    StickyAssignmentError,
    assign_cooperative_sticky,
    assign_sticky,
)
from members.assignors.consumer.sticky import sticky_assignment
from members.assignors.consumer.sticky_data import (
    MemberData,
    cooperative_member_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    sticky_member_data,
)
from protocol.consumer_codec import Subscription, TopicPartition

NO_RACK = ((None,),)
CLUSTER = {"t0": NO_RACK * 4, "t1": NO_RACK * 2}


def tps(*items: tuple[str, int]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, p in items]


def sticky(mid: str, owned: list[TopicPartition], generation: int, *topics: str) -> ConsumerMember:
    user = encode_sticky_user_data(owned, generation) if generation >= 0 else None
    return ConsumerMember(mid, Subscription(topics or ("t0", "t1"), user, (), generation))


def coop(mid: str, owned: list[TopicPartition], generation: int, *topics: str) -> ConsumerMember:
    sub = Subscription(topics or ("t0", "t1"), None, tuple(owned), generation)
    return ConsumerMember(mid, sub)


def _sizes(out: dict[str, list[TopicPartition]]) -> list[int]:
    return sorted(len(p) for p in out.values())


# ------------------------------------------------------------------------------ user data


def test_sticky_user_data_round_trips_and_falls_back_to_v0() -> None:
    parts = tps(("t1", 1), ("t0", 3), ("t1", 0))
    grouped = tps(("t0", 3), ("t1", 1), ("t1", 0))  # by topic, topics in HashMap order
    data = encode_sticky_user_data(parts, 7)
    assert sticky_member_data(Subscription(("t0",), data)) == MemberData(grouped, 7)
    # V0: the same struct without the generation
    v0 = encode_sticky_user_data(parts, None)
    assert sticky_member_data(Subscription(("t0",), v0)) == MemberData(grouped, None)
    # neither version readable: no partitions at generation -1
    assert sticky_member_data(Subscription(("t0",), b"\x00\x00\x00\x05")) == MemberData([], -1)
    # null or empty user data: nothing, no generation
    assert sticky_member_data(Subscription(("t0",), b"")) == MemberData([], None)


def test_sticky_user_data_groups_topics_in_java_hash_order() -> None:
    # "Aa" and "BB" share String.hashCode: computeIfAbsent puts the later one first
    data = encode_sticky_user_data(tps(("Aa", 0), ("BB", 0)), 1)
    assert data[6:8] == b"BB"


def test_cooperative_generation_comes_from_the_subscription_then_the_user_data() -> None:
    owned = tps(("t0", 1))
    assert cooperative_member_data(
        Subscription(("t0",), encode_cooperative_user_data(3), tuple(owned), 5)
    ) == MemberData(owned, 5)
    assert cooperative_member_data(
        Subscription(("t0",), encode_cooperative_user_data(3), tuple(owned), -1)
    ) == MemberData(owned, 3)
    assert cooperative_member_data(Subscription(("t0",), b"\x01", tuple(owned))) == MemberData(
        owned, -1
    )
    assert cooperative_member_data(Subscription(("t0",), None, tuple(owned))) == MemberData(
        owned, None
    )
    assert encode_cooperative_user_data(-1) == struct.pack(">i", -1)


# ------------------------------------------------------------------------------ constrained


def test_a_new_member_takes_only_the_surplus() -> None:
    first = assign_sticky([sticky("a", [], -1), sticky("b", [], -1)], CLUSTER)
    assert _sizes(first) == [3, 3]
    second = assign_sticky(
        [sticky("a", first["a"], 1), sticky("b", first["b"], 1), sticky("c", [], -1)], CLUSTER
    )
    assert _sizes(second) == [2, 2, 2]
    for m in ("a", "b"):
        assert set(second[m]) <= set(first[m])  # nobody gives up more than its surplus


def test_the_higher_generation_wins_a_double_claim() -> None:
    members = [sticky("a", tps(("t0", 0)), 3), sticky("b", tps(("t0", 0)), 2)]
    out = assign_sticky(members, CLUSTER)
    assert TopicPartition("t0", 0) in out["a"]


def test_a_claim_in_the_same_generation_counts_for_neither() -> None:
    members = [coop("a", tps(("t0", 0)), 2), coop("b", tps(("t0", 0)), 2)]
    result = sticky_assignment(members, CLUSTER, cooperative_member_data)
    assert result.transferring is not None
    assert TopicPartition("t0", 0) in result.transferring


# ------------------------------------------------------------------------------ general


def test_unequal_subscriptions_balance_what_each_can_take() -> None:
    members = [sticky("a", [], -1, "t0"), sticky("b", [], -1, "t0", "t1")]
    out = assign_sticky(members, CLUSTER)
    assert set(out["b"]) >= set(tps(("t1", 0), ("t1", 1)))
    assert _sizes(out) == [3, 3]


def test_max_generation_is_carried_by_the_leaders_instance() -> None:
    members = [sticky("a", tps(("t0", 0)), 4, "t0"), sticky("b", [], -1, "t0", "t1")]
    assert sticky_assignment(members, CLUSTER, sticky_member_data).max_generation == 4
    later = sticky_assignment(members, CLUSTER, sticky_member_data, max_generation=9)
    assert later.max_generation == 9


# ------------------------------------------------------------------------------ cooperative


def test_cooperative_sticky_withholds_partitions_that_change_owner() -> None:
    first = assign_cooperative_sticky([coop("a", [], -1), coop("b", [], -1)], CLUSTER)
    members = [coop("a", first["a"], 1), coop("b", first["b"], 1), coop("c", [], -1)]
    out = assign_cooperative_sticky(members, CLUSTER)
    assert out["c"] == []  # what c will get is still owned: revoked first
    assert _sizes(out) == [0, 2, 2]
    after = [coop("a", out["a"], 2), coop("b", out["b"], 2), coop("c", [], 2)]
    assert _sizes(assign_cooperative_sticky(after, CLUSTER)) == [2, 2, 2]


def test_an_impossible_owned_partition_fails_as_kafka_does() -> None:
    # a partition number past the topic's end kept by its owner: the constrained path runs out
    # of unfilled members for the real partition (Kafka 4.0.2: IllegalStateException "No more
    # unfilled consumers to be assigned.", checked through the oracle)
    members = [coop("a", tps(("t0", 9)), 1, "t0"), coop("b", [], 1, "t0")]
    with pytest.raises(StickyAssignmentError, match="No more unfilled consumers"):
        assign_cooperative_sticky(members, {"t0": NO_RACK * 1})
