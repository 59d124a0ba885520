"""members/assignors/consumer: hand-checked cases of Kafka's range and roundrobin assignors.

The differential test against Kafka's classes is tests/kafka_oracle/
test_consumer_differential.py; these pin the rules docs/consumer.md states.
"""

from __future__ import annotations

from members.assignors.consumer import ConsumerMember, assign_range, assign_roundrobin
from protocol.consumer_codec import Subscription, TopicPartition


def member(mid: str, *topics: str, instance: str | None = None, rack: str | None = None):
    return ConsumerMember(mid, Subscription(tuple(topics), rack_id=rack), instance)


def tps(*items: tuple[str, int]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, p in items]


NO_RACK = ((None,),)


def test_range_gives_contiguous_ranges_extra_to_the_first() -> None:
    out = assign_range([member("c2", "t"), member("c1", "t")], {"t": NO_RACK * 3})
    assert out == {"c1": tps(("t", 0), ("t", 1)), "c2": tps(("t", 2))}


def test_range_ranks_static_members_first_by_instance_id() -> None:
    members = [member("a", "t"), member("b", "t", instance="i2"), member("c", "t", instance="i1")]
    out = assign_range(members, {"t": NO_RACK * 3})
    assert out == {"a": tps(("t", 2)), "b": tps(("t", 1)), "c": tps(("t", 0))}


def test_range_skips_topics_without_metadata() -> None:
    out = assign_range([member("c1", "t", "missing")], {"t": NO_RACK})
    assert out == {"c1": tps(("t", 0))}


def test_range_matches_racks_when_partitions_differ_in_racks() -> None:
    cluster = {"t": (("r1",), ("r0",))}
    out = assign_range([member("c0", "t", rack="r0"), member("c1", "t", rack="r1")], cluster)
    assert out == {"c0": tps(("t", 1)), "c1": tps(("t", 0))}


def test_range_ignores_racks_when_every_partition_has_every_rack() -> None:
    cluster = {"t": (("r0", "r1"), ("r0", "r1"))}
    out = assign_range([member("c0", "t", rack="r1"), member("c1", "t", rack="r0")], cluster)
    assert out == {"c0": tps(("t", 0)), "c1": tps(("t", 1))}


def test_roundrobin_circles_over_subscribers_only() -> None:
    members = [member("c0", "a", "b"), member("c1", "b")]
    out = assign_roundrobin(members, {"a": NO_RACK * 2, "b": NO_RACK * 2})
    # a-0 c0, a-1 c0 (c1 does not subscribe to a), b-0 c1, b-1 c0
    assert out == {"c0": tps(("a", 0), ("a", 1), ("b", 1)), "c1": tps(("b", 0))}
