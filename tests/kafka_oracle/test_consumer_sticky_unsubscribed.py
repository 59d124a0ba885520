"""Kafka's StickyAssignor hands a consumer a partition of a topic it no longer subscribes to
(the known behaviour ``sticky-unsubscribed-owner``, docs/chaos.md "Consumer campaigns"), and
groupsim's assignor does the same.

The input is consumer chaos seed 1 run 0 (5 virtual minutes, 2–3 consumers) at its third
generation: ``c2`` missed generation 2 (its poll loop stalled past ``max.poll.interval.ms``),
narrowed its subscription to ``t1, t2`` meanwhile, and rejoins with the user data of
generation 1, which still lists three ``t3`` partitions. ``performReassignments`` moves them
back to their previous-generation owner without checking its subscription; ``c2`` refuses
the assignment (``checkAssignmentMatchedSubscription``) and rejoins without ``onAssignment``,
so the same inputs come back: the group rebalances for ever. One ``consumer.assign`` call.
"""

from __future__ import annotations

import pytest

from members.assignors.consumer import ConsumerMember
from members.assignors.consumer.sticky import sticky_assignment
from members.assignors.consumer.sticky_data import encode_sticky_user_data, sticky_member_data
from protocol.consumer_codec import Subscription, TopicPartition
from tests.kafka_oracle.oracle import KafkaOracle
from tests.kafka_oracle.test_consumer_differential import _sub_json

pytestmark = pytest.mark.kafka

ALL = ("t1", "t2", "t3")
CLUSTER = {"t1": [[None]] * 9, "t2": [[None]] * 8, "t3": [[None]] * 11}


def _parts(labels: str) -> list[TopicPartition]:
    return [TopicPartition(t, int(p)) for t, p in (x.rsplit("-", 1) for x in labels.split())]


def _member(
    mid: str, instance: str | None, topics: tuple[str, ...], gen: int, owned: str
) -> ConsumerMember:
    user = encode_sticky_user_data(_parts(owned), gen)
    return ConsumerMember(mid, Subscription(topics, user, (), gen, None), instance)


MEMBERS = [
    _member(
        "c3",
        "c3-static",
        ALL,
        2,
        "t1-2 t1-5 t1-8 t1-4 t2-2 t2-5 t2-1 t2-7 t3-0 t3-3 t3-6 t3-9 t3-5 t3-8",
    ),
    _member(
        "c1", None, ALL, 2, "t1-0 t1-3 t1-6 t1-1 t1-7 t2-0 t2-3 t2-6 t2-4 t3-1 t3-4 t3-7 t3-10 t3-2"
    ),
    _member("c2", None, ("t1", "t2"), 1, "t1-1 t1-4 t1-7 t2-1 t2-4 t2-7 t3-2 t3-5 t3-8"),
]


def test_kafkas_sticky_assignor_gives_a_partition_of_an_unsubscribed_topic(
    kafka_oracle: KafkaOracle,
) -> None:
    request = [
        {"id": m.member_id, "instance": m.group_instance_id, **_sub_json(m.subscription)}
        for m in MEMBERS
    ]
    kafka = kafka_oracle.call("consumer.assign", assignor="sticky", members=request, topics=CLUSTER)
    ours = sticky_assignment(MEMBERS, CLUSTER, sticky_member_data).assignment
    assert {m: [list(tp) for tp in parts] for m, parts in ours.items()} == kafka
    given_c2 = {t for t, _ in kafka["c2"]}
    assert "t3" in given_c2  # c2 subscribes to t1 and t2 only
    kafka_oracle.compared["consumer sticky unsubscribed owner"] += 1
