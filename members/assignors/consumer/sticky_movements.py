"""``AbstractStickyAssignor.PartitionMovements`` (Kafka 4.0): the general builder's bookkeeping
of moved partitions, which lets a partition moved away and back return the one Java's
``HashSet`` iterates first (``TopicPartition.hashCode`` order).
"""

from __future__ import annotations

from protocol.consumer_codec import TopicPartition
from protocol.java_hashing import topic_partition_hash
from protocol.java_hashmap import JavaHashMap

__all__ = ["PartitionMovements"]


def _tp_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode`` (:func:`protocol.java_hashing.topic_partition_hash`)."""
    return topic_partition_hash(tp.topic, tp.partition)


class PartitionMovements:
    """``AbstractStickyAssignor.PartitionMovements``: where each moved partition came from,
    and per topic the partitions moved between each (source, destination) pair, each a Java
    ``HashSet`` whose first element is the one moved back."""

    def __init__(self) -> None:
        self.moves: dict[TopicPartition, tuple[str, str]] = {}
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashMap[TopicPartition]]] = {}

    def _remove(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        per_pair = self.by_topic[tp.topic]
        per_pair[pair].discard(tp)
        if not len(per_pair[pair]):
            del per_pair[pair]
        if not per_pair:
            del self.by_topic[tp.topic]
        return pair

    def _add(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        per_pair = self.by_topic.setdefault(tp.topic, {})
        if pair not in per_pair:
            per_pair[pair] = JavaHashMap(_tp_hash)
        per_pair[pair].add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        """``movePartition``: record ``tp`` moving from ``old`` to ``new`` (a move back to
        where it first came from cancels the record)."""
        if tp in self.moves:
            src, _ = self._remove(tp)
            if src != new:
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """``getTheActualPartitionToBeMoved``: when a partition of ``tp``'s topic was moved
        from ``new`` to ``tp``'s original owner, move that one back instead (the first of its
        ``HashSet``); else ``tp``."""
        per_pair = self.by_topic.get(tp.topic)
        if per_pair is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        moved_back = per_pair.get((new, old))
        if moved_back is None:
            return tp
        return next(iter(moved_back))
