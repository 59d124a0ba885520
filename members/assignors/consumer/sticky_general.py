"""``AbstractStickyAssignor.GeneralAssignmentBuilder`` (Kafka 4.0): the sticky assignment when
members subscribe to different topics. Valid ownership is kept, each unassigned partition goes
to the least-loaded subscribed member (``TreeSet`` by assigned count, then member id), then
partitions move one by one towards balance (back to their previous-generation owner where that
helps, :class:`~.sticky_movements.PartitionMovements` choosing which), reverting if the
balance score did not improve.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial

from protocol.consumer_codec import Subscription, TopicPartition
from protocol.java_strings import java_string_key

from .model import ConsumerMember, GroupAssignment
from .sticky_data import DEFAULT_GENERATION, MemberData
from .sticky_movements import PartitionMovements
from .sticky_partitions import (
    StickyAssignmentError,
    all_partitions,
    remove_first,
    unassigned_partitions,
)
from .sticky_racks import RackInfo

__all__ = ["GeneralAssignmentBuilder"]


class GeneralAssignmentBuilder:
    """``GeneralAssignmentBuilder``: state of one general-path assignment.

    Args:
        ordered: the members in the leader's member-map order (:func:`.model.member_order`).
        per_topic: subscribed topic → partition count, in the topic map's order.
        racks: the group's :class:`~.sticky_racks.RackInfo`.
        current: member id → the partitions it still owns (changed in place: the result).
        owned_order: the member ids in the owned-partitions ``HashMap``'s order.
    """

    def __init__(
        self,
        ordered: Sequence[ConsumerMember],
        per_topic: dict[str, int],
        racks: RackInfo,
        current: dict[str, list[TopicPartition]],
        owned_order: list[str],
    ) -> None:
        self.per_topic = per_topic
        self.racks = racks
        self.total = sum(per_topic.values())
        self.subscription = {m.member_id: m.subscription.topics for m in ordered}
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in per_topic}
        self.consumer_topics: dict[str, list[str]] = {}
        for m in ordered:
            mine = [t for t in m.subscription.topics if t in per_topic]
            self.consumer_topics[m.member_id] = mine
            for t in mine:
                self.topic_consumers[t].append(m.member_id)
        self.current = current
        self.owned_order = owned_order
        self.partition_consumer: dict[TopicPartition, str] = {}
        for c in owned_order:
            for tp in current[c]:
                self.partition_consumer[tp] = c
        topics = sorted(per_topic, key=self._topic_key)
        self.all_partitions = all_partitions(topics, per_topic)
        self.members: set[str] = set()  # the TreeSet's content; order from _sorted_members
        self.revocation_required = False
        self.movements = PartitionMovements()

    def _topic_key(self, t: str) -> tuple[int, bytes]:
        return (len(self.topic_consumers[t]), java_string_key(t))

    def _sorted_members(self) -> list[str]:
        """``sortedCurrentSubscriptions``: by assigned count, then member id."""
        return sorted(self.members, key=lambda c: (len(self.current[c]), java_string_key(c)))

    def _size(self, consumer: str | None) -> int:
        parts = self.current.get(consumer) if consumer is not None else None
        if parts is None:
            raise StickyAssignmentError(f"no current assignment for {consumer!r} (Kafka: NPE)")
        return len(parts)

    def build(
        self,
        ordered: Sequence[ConsumerMember],
        member_data: Callable[[Subscription], MemberData],
        max_generation: int,
    ) -> GroupAssignment:
        """``GeneralAssignmentBuilder.build``: the assignment (member id → partitions, Kafka's
        list order). ``member_data`` reads a member's previous partitions and generation;
        ``max_generation`` is the assignor's ``maxGeneration`` after this round's reading.

        Raises:
            StickyAssignmentError: where Kafka's builder throws.
        """
        prev: dict[TopicPartition, tuple[str, int]] = {}
        for m in ordered:  # prepopulateCurrentAssignments
            data = member_data(m.subscription)
            if data.generation is not None and data.generation < max_generation:
                self._update_prev(prev, data.partitions, m.member_id, data.generation)
            elif data.generation is None and max_generation > DEFAULT_GENERATION:
                self._update_prev(prev, data.partitions, m.member_id, DEFAULT_GENERATION)
        assigned = self._assign_owned()
        if assigned:
            unassigned = unassigned_partitions(
                self.all_partitions,
                assigned,
                partial(list.sort, key=lambda tp: (*self._topic_key(tp.topic), tp.partition)),
            )
        else:
            unassigned = self.all_partitions  # the same list, as in Kafka
        self.members.update(self.current)
        self._balance(prev, unassigned)
        return self.current

    @staticmethod
    def _update_prev(
        prev: dict[TopicPartition, tuple[str, int]],
        parts: Iterable[TopicPartition],
        consumer: str,
        generation: int,
    ) -> None:
        for tp in parts:
            known = prev.get(tp)
            if known is None or generation > known[1]:
                prev[tp] = (consumer, generation)

    def _assign_owned(self) -> list[TopicPartition]:
        assigned: list[TopicPartition] = []
        for consumer in self.owned_order:
            keep: list[TopicPartition] = []
            for tp in self.current[consumer]:
                if tp.topic not in self.topic_consumers:
                    self.partition_consumer.pop(tp, None)
                elif tp.topic not in self.subscription[consumer] or self.racks.racks_mismatch(
                    consumer, tp
                ):
                    self.revocation_required = True
                else:
                    keep.append(tp)
                    assigned.append(tp)
            self.current[consumer] = keep
        return assigned

    def _max_size(self, topics: list[str]) -> int:
        if len(topics) == len(self.per_topic):
            return self.total
        return sum(self.per_topic[t] for t in topics)

    def _is_balanced(self) -> bool:
        order = self._sorted_members()
        if not order:
            raise StickyAssignmentError("no member left to balance (Kafka: NoSuchElement)")
        if self._size(order[0]) >= self._size(order[-1]) - 1:
            return True
        owner: dict[TopicPartition, str] = {}
        for c, parts in self.current.items():
            for tp in parts:
                owner[tp] = c
        for consumer in order:
            count = len(self.current[consumer])
            topics = self.consumer_topics[consumer]
            if count == self._max_size(topics):
                continue
            mine = set(self.current[consumer])
            for topic in topics:
                for p in range(self.per_topic[topic]):
                    tp = TopicPartition(topic, p)
                    if tp not in mine and count + 1 < self._size(owner.get(tp)):
                        return False
        return True

    @staticmethod
    def _balance_score(assignment: dict[str, list[TopicPartition]]) -> int:
        sizes = [len(p) for p in assignment.values()]
        return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])

    def _maybe_assign_partition(self, tp: TopicPartition, racks: RackInfo | None) -> bool:
        for consumer in self._sorted_members():
            if tp.topic in self.consumer_topics[consumer] and (
                racks is None or not racks.racks_mismatch(consumer, tp)
            ):
                self.current[consumer].append(tp)
                self.partition_consumer[tp] = consumer
                return True
        return False

    def _can_move_consumer(self, consumer: str) -> bool:
        parts = self.current[consumer]
        if len(parts) < self._max_size(self.consumer_topics[consumer]):
            return True
        return any(len(self.topic_consumers[tp.topic]) >= 2 for tp in parts)

    def _balance(
        self, prev: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]
    ) -> None:
        members = self._sorted_members()
        if not members:
            raise StickyAssignmentError("no member to assign to (Kafka: NoSuchElement)")
        initializing = self._size(members[-1]) == 0
        to_assign = unassigned
        if self.racks.consumer_racks:
            to_assign = [
                tp
                for tp in unassigned
                if not (
                    self.topic_consumers[tp.topic] and self._maybe_assign_partition(tp, self.racks)
                )
            ]
        for tp in to_assign:
            if self.topic_consumers[tp.topic]:
                self._maybe_assign_partition(tp, None)

        fixed = {t for t, cs in self.topic_consumers.items() if len(cs) < 2}
        self.all_partitions[:] = [tp for tp in self.all_partitions if tp.topic not in fixed]
        unassigned[:] = [tp for tp in unassigned if tp.topic not in fixed]

        fixed_assignments: dict[str, list[TopicPartition]] = {}
        for consumer in self.consumer_topics:
            if not self._can_move_consumer(consumer):
                self.members.discard(consumer)
                fixed_assignments[consumer] = self.current.pop(consumer)

        before = {c: list(p) for c, p in self.current.items()}
        before_owner = dict(self.partition_consumer)
        if not self.revocation_required:
            self._reassign_all(unassigned, prev)
        moved = self._reassign_all(self.all_partitions, prev)
        if (
            not initializing
            and moved
            and self._balance_score(self.current) >= self._balance_score(before)
        ):
            self.current.clear()
            self.current.update({c: list(p) for c, p in before.items()})
            self.partition_consumer = before_owner
        for consumer, parts in fixed_assignments.items():
            self.current[consumer] = parts
            self.members.add(consumer)

    def _reassign_all(
        self, partitions: list[TopicPartition], prev: dict[TopicPartition, tuple[str, int]]
    ) -> bool:
        """``performReassignments``."""
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                consumer = self.partition_consumer.get(tp)
                size = self._size(consumer)
                assert consumer is not None
                earlier = prev.get(tp)
                if earlier is not None and size > self._size(earlier[0]) + 1:
                    self._reassign(tp, earlier[0])
                    performed = modified = True
                    continue
                rack = self.racks.consumer_racks.get(consumer)
                replicas = self.racks.partition_racks.get(tp, frozenset())
                found = False
                if rack is not None and replicas and rack in replicas:
                    for other in self.topic_consumers[tp.topic]:
                        other_rack = self.racks.consumer_racks.get(other)
                        if other_rack is None or other_rack not in replicas:
                            continue
                        if size > self._size(other) + 1:
                            self._reassign(tp, self._least_loaded_for(tp))
                            performed = modified = found = True
                            break
                if not found:
                    for other in self.topic_consumers[tp.topic]:
                        if size > self._size(other) + 1:
                            self._reassign(tp, self._least_loaded_for(tp))
                            performed = modified = True
                            break
            if not modified:
                return performed

    def _least_loaded_for(self, tp: TopicPartition) -> str:
        for consumer in self._sorted_members():
            if tp.topic in self.consumer_topics[consumer]:
                return consumer
        raise StickyAssignmentError(f"no member for {tp}")

    def _reassign(self, tp: TopicPartition, new: str) -> None:
        """``reassignPartition`` + ``processPartitionMovement``."""
        tp = self.movements.partition_to_move(tp, self.partition_consumer[tp], new)
        old = self.partition_consumer[tp]
        self.movements.move(tp, old, new)
        remove_first(self.current[old], tp)
        self.current[new].append(tp)
        self.partition_consumer[tp] = new
