"""``AbstractStickyAssignor.RackInfo`` (Kafka 4.0, KIP-881): which member and partition racks
the sticky assignors match, and the rack-aware choices both assignment builders make.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from protocol.consumer_codec import TopicPartition

from .model import ClusterTopics, ConsumerMember, partition_racks
from .range import use_rack_aware_assignment

__all__ = ["RackInfo"]

_RACK_ID = attrgetter("subscription.rack_id")


class RackInfo:
    """``AbstractStickyAssignor.RackInfo``: member racks and partition racks, both empty unless
    rack-aware assignment applies (``useRackAwareAssignment``); partitions' counts of members on
    their replicas' racks whenever some member has a rack."""

    def __init__(
        self, ordered: Sequence[ConsumerMember], per_topic: dict[str, int], cluster: ClusterTopics
    ) -> None:
        by_rack: dict[str, int] = {}
        member_rack: dict[str, str] = {}
        # most groups have no rack at all: one C-level scan instead of a property per member
        for m in ordered if any(map(_RACK_ID, ordered)) else ():
            if m.rack:
                by_rack[m.rack] = by_rack.get(m.rack, 0) + 1
                member_rack[m.member_id] = m.rack
        all_racks: dict[TopicPartition, frozenset[str]] = {}
        if by_rack:
            for topic in per_topic:
                for p, racks in enumerate(partition_racks(cluster[topic])):
                    all_racks[TopicPartition(topic, p)] = racks
        union: set[str] = set().union(*all_racks.values()) if all_racks else set()
        aware = use_rack_aware_assignment(set(by_rack), union, list(all_racks.values()))
        self.consumer_racks: dict[str, str] = member_rack if aware else {}
        self.partition_racks: dict[TopicPartition, frozenset[str]] = all_racks if aware else {}
        self.num_consumers = {
            tp: sum(by_rack.get(r, 0) for r in racks) for tp, racks in all_racks.items()
        }

    def racks_mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        """``RackInfo.racksMismatch``: ``consumer`` has a rack (rack-aware assignment on) and
        no replica of ``tp`` is on it."""
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        replicas = self.partition_racks.get(tp)
        return replicas is None or rack not in replicas

    def sort_by_rack_consumers(self, parts: list[TopicPartition]) -> list[TopicPartition]:
        """``RackInfo.sortPartitionsByRackConsumers``: ``parts`` by ascending count of members
        on their replicas' racks (a stable sort; ``parts`` itself when no member has a rack)."""
        if not self.num_consumers:
            return parts
        return sorted(parts, key=lambda tp: self.num_consumers.get(tp, 0))

    def next_rack_consumer(self, tp: TopicPartition, consumers: list[str], first: int) -> int:
        """``RackInfo.nextRackConsumer``: the index in ``consumers``, walking round from
        ``first``, of the first member on a rack of ``tp``'s replicas; -1 if none is."""
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        for i in range(len(consumers)):
            index = (first + i) % len(consumers)
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1
