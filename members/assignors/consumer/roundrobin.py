"""Kafka's ``RoundRobinAssignor`` (``partition.assignment.strategy`` ``roundrobin``).

Every partition of every subscribed topic with metadata, in (topic, partition) order, goes to
the next member in a circle of members sorted by ``MemberInfo`` order (static members by
``group.instance.id`` first, then by member id) that subscribes to its topic. No rack
awareness (Kafka 4.0 has none here).
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.consumer_codec import TopicPartition
from protocol.java_strings import java_sorted_strings

from .model import (
    ClusterTopics,
    ConsumerMember,
    GroupAssignment,
    everyone_subscribes,
    member_info_order,
    member_order,
    topic_lists,
    topic_partitions,
)

__all__ = ["ROUNDROBIN", "assign_roundrobin"]

#: ``RoundRobinAssignor.ROUNDROBIN_ASSIGNOR_NAME``.
ROUNDROBIN = "roundrobin"


def assign_roundrobin(members: Sequence[ConsumerMember], cluster: ClusterTopics) -> GroupAssignment:
    """``RoundRobinAssignor.assign(Cluster, GroupSubscription)``.

    Args:
        members: the JoinGroup members in JoinGroup order (distinct member ids).
        cluster: topic → partitions' replica racks (only the partition count is read).

    Returns:
        Member id → partitions in assignment order, for every member (empty lists included),
        keys in the leader's ``HashMap`` order.
    """
    ordered = member_order(members)
    out: GroupAssignment = {m.member_id: [] for m in ordered}
    circle = member_info_order(ordered)
    topics = java_sorted_strings({t for listed in topic_lists(ordered) for t in listed})
    lists = [out[m.member_id] for m in circle]
    n = len(circle)
    new = tuple.__new__
    if everyone_subscribes(circle, topics):
        # no member is skipped: the k-th partition (topics in order, partitions ascending)
        # goes to circle[k % n], so each member's list is a stride of the whole list
        every: list[TopicPartition] = []
        for topic in topics:
            every += topic_partitions(topic, len(cluster.get(topic, ())))
        for i, mine in enumerate(lists):
            mine += every[i::n]
        return out
    subscribed = [m.subscription.topics for m in circle]
    pos = 0
    for topic in topics:
        for p in range(len(cluster.get(topic, ()))):
            while topic not in subscribed[pos]:
                pos = (pos + 1) % n
            lists[pos].append(new(TopicPartition, (topic, p)))
            pos = (pos + 1) % n
    return out
