"""Kafka's ``RangeAssignor`` (``partition.assignment.strategy`` ``range``), rack-aware per KIP-881.

Per topic, the members subscribing to it are sorted (``MemberInfo`` order: static members by
``group.instance.id`` first, then by member id) and each takes a contiguous range:
``partitions // members`` each, the first ``partitions % members`` one more.

Rack awareness (KIP-881, Kafka 3.5+): when some member of a topic has a rack, some partition
replica is on one of those racks, and the partitions' rack sets are not all equal
(``AbstractPartitionAssignor.useRackAwareAssignment``), partitions are first given, within the
same per-member quotas, only to members on a replica's rack; topics with the same subscribers
and partition count ("co-partitioned") are matched together, partition ``p`` of each going to
one member. The ordinary range pass then places what is left, and every member's list is
sorted by (topic, partition).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice
from operator import iadd

from protocol.consumer_codec import TopicPartition

from .model import (
    ClusterTopics,
    ConsumerMember,
    GroupAssignment,
    PartitionRacks,
    everyone_subscribes,
    member_info_order,
    member_order,
    partition_racks,
    partition_sort_key,
    subscribed_topic_order,
    topic_partitions,
)

__all__ = ["RANGE", "assign_range", "use_rack_aware_assignment"]

#: ``RangeAssignor.RANGE_ASSIGNOR_NAME``.
RANGE = "range"


def use_rack_aware_assignment(
    consumer_racks: set[str], all_partition_racks: set[str], racks: Sequence[frozenset[str]]
) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment`` (``preferRackAwareLogic`` off):
    some member rack holds a replica, and not every partition has the same rack set."""
    if not consumer_racks or consumer_racks.isdisjoint(all_partition_racks):
        return False
    return not all(r == all_partition_racks for r in racks)


class _TopicState:
    """``RangeAssignor.TopicAssignmentState``: one topic's quotas and unassigned partitions."""

    def __init__(
        self, topic: str, replicas: PartitionRacks, consumers: list[tuple[str, str | None]]
    ) -> None:
        self.topic = topic
        #: (member id, rack) in sorted member order (Java: ``LinkedHashMap``)
        self.consumers = consumers
        self.rack_of = dict(consumers)
        count = len(replicas)
        self.unassigned: dict[TopicPartition, None] = dict.fromkeys(topic_partitions(topic, count))
        self.assigned = dict.fromkeys(self.rack_of, 0)
        self.per_consumer = count // len(consumers) if consumers else 0
        self.with_extra = count % len(consumers) if consumers else 0
        consumer_racks = {r for _, r in consumers if r is not None}
        # partitions' rack sets are read only when some member of the topic has a rack
        self.racks: list[frozenset[str]] = partition_racks(replicas) if consumer_racks else []
        all_racks: set[str] = set().union(*self.racks) if self.racks else set()
        self.needs_rack_aware = use_rack_aware_assignment(consumer_racks, all_racks, self.racks)

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.rack_of[consumer]
        return rack is None or (tp.partition < len(self.racks) and rack in self.racks[tp.partition])

    def max_assignable(self, consumer: str) -> int:
        extra = 1 if self.with_extra > 0 else 0
        return max(0, self.per_consumer + extra - self.assigned[consumer])

    def on_assigned(self, consumer: str, parts: list[TopicPartition]) -> None:
        self.assigned[consumer] += len(parts)
        if self.assigned[consumer] > self.per_consumer:
            self.with_extra -= 1
        for tp in parts:
            del self.unassigned[tp]


def _assign(
    out: GroupAssignment, state: _TopicState, consumer: str, parts: list[TopicPartition]
) -> None:
    out[consumer].extend(parts)
    state.on_assigned(consumer, parts)


def _assign_ranges(
    out: GroupAssignment,
    state: _TopicState,
    may_assign: Callable[[str, TopicPartition], bool] | None,
) -> None:
    """``RangeAssignor.assignRanges``: each consumer takes the first ``maxAssignable`` of the
    unassigned partitions it may take (``may_assign``; ``None``: any). Lazy, as Kafka's
    ``stream().filter().limit()``: a consumer reads only as far as its quota, not every
    unassigned partition."""
    if may_assign is None:
        _assign_ranges_any(out, state)
        return
    for consumer, _ in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        parts = list(islice((tp for tp in state.unassigned if may_assign(consumer, tp)), limit))
        if parts:
            _assign(out, state, consumer, parts)


def _assign_ranges_any(out: GroupAssignment, state: _TopicState) -> None:
    """``assignRanges`` when every consumer may take every partition: each takes the next
    ``maxAssignable`` unassigned partitions in order (the same steps over a list cursor
    instead of a filtered stream per consumer)."""
    pending = list(state.unassigned)
    taken = 0
    assigned = state.assigned
    per_consumer = state.per_consumer
    if not any(assigned.values()):
        # nothing placed yet (no rack-matching pass): the first ``numConsumersWithExtra``
        # consumers take ``per + 1``, the others ``per``, each from where the last stopped
        extra = state.with_extra
        for consumer, _ in state.consumers:
            n = per_consumer + 1 if extra > 0 else per_consumer
            if n:
                out[consumer] += pending[taken : taken + n]
                taken += n
                assigned[consumer] = n
            if extra > 0:
                extra -= 1
        state.with_extra = extra
        state.unassigned = {}
        return
    for consumer, _ in state.consumers:
        if taken >= len(pending):
            break
        limit = per_consumer + (1 if state.with_extra > 0 else 0) - assigned[consumer]
        if limit <= 0:
            continue
        parts = pending[taken : taken + limit]
        taken += len(parts)
        out[consumer] += parts
        assigned[consumer] += len(parts)
        if assigned[consumer] > per_consumer:
            state.with_extra -= 1
    if taken:
        state.unassigned = dict.fromkeys(pending[taken:])


def _assign_co_partitioned(
    out: GroupAssignment, consumers: list[str], num_partitions: int, states: list[_TopicState]
) -> None:
    """``RangeAssignor.assignCoPartitionedWithRackMatching``."""
    remaining = list(consumers)
    for p in range(num_partitions):
        match = next(
            (
                c
                for c in remaining
                if all(
                    s.racks_match(c, TopicPartition(s.topic, p)) and s.max_assignable(c) > 0
                    for s in states
                )
            ),
            None,
        )
        if match is None:
            continue
        for s in states:
            _assign(out, s, match, [TopicPartition(s.topic, p)])
        if not any(s.max_assignable(match) > 0 for s in states):
            remaining.remove(match)
            if not remaining:
                break


def _assign_without_racks(
    out: GroupAssignment,
    by_info: list[ConsumerMember],
    topic_order: list[str],
    cluster: ClusterTopics,
) -> None:
    """``assignPartitions`` when no member has a rack (``useRackAwareAssignment`` needs one, so
    no topic is rack-matched): per topic, the ordinary range pass over an empty topic state,
    as :func:`_assign_ranges_any` does it, without building that state. The first
    ``partitions % consumers`` consumers take ``partitions // consumers + 1`` partitions, the
    others ``partitions // consumers``; when that is 0, the consumers after the first
    ``partitions % consumers`` take nothing and are not visited."""
    every = [out[m.member_id] for m in by_info]
    shared = everyone_subscribes(by_info, topic_order)
    for topic in topic_order:
        lists = (
            every
            if shared
            else [out[m.member_id] for m in by_info if topic in m.subscription.topics]
        )
        parts = topic_partitions(topic, len(cluster[topic]))
        # each consumer's list extended by its range, the loop over consumers run in C
        deque(map(iadd, lists, map(parts.__getitem__, _range_cuts(len(parts), len(lists)))), 0)


@functools.lru_cache(maxsize=256)
def _range_cuts(partitions: int, consumers: int) -> tuple[slice, ...]:
    """The ranges ``RangeAssignor`` gives consumers 0, 1, … of a topic (none of them placed
    yet): ``partitions // consumers + 1`` for the first ``partitions % consumers``, then
    ``partitions // consumers``; only the consumers that take something (when the quotient is
    0, the first ``partitions % consumers``)."""
    per, extra = divmod(partitions, consumers)
    cuts = []
    start = 0
    for i in range(consumers if per else extra):
        n = per + 1 if i < extra else per
        cuts.append(slice(start, start + n))
        start += n
    return tuple(cuts)


def assign_range(members: Sequence[ConsumerMember], cluster: ClusterTopics) -> GroupAssignment:
    """``RangeAssignor.assign(Cluster, GroupSubscription)`` (via ``assignPartitions``).

    Args:
        members: the JoinGroup members in JoinGroup order (distinct member ids).
        cluster: topic → partitions' replica racks.

    Returns:
        Member id → partitions, for every member; without rack matching each list runs topic
        by topic in the leader's ``HashMap`` topic order, partitions ascending; with it, each
        list is sorted by (topic, partition).
    """
    ordered = member_order(members)
    out: GroupAssignment = {m.member_id: [] for m in ordered}
    states: list[_TopicState] = []
    # MemberInfo order once for all topics: each topic's subscribers are that order filtered
    # (Java sorts each topic's list; the sort is stable and the filter keeps relative order)
    by_info = member_info_order(ordered)
    topic_order = subscribed_topic_order(ordered, cluster)
    if not any(m.rack for m in by_info):
        _assign_without_racks(out, by_info, topic_order, cluster)
        return out
    info = [(m.member_id, m.rack, m.subscription.topics) for m in by_info]
    for topic in topic_order:
        consumers = [(c, rack) for c, rack, topics in info if topic in topics]
        states.append(_TopicState(topic, cluster[topic], consumers))
    rack_aware = any(s.needs_rack_aware for s in states)
    if rack_aware:
        # Java groups by (subscribers, partition-rack count) in HashMap order; each group only
        # touches its own topics and the lists are sorted at the end, so any order is the same.
        groups: dict[tuple[tuple[tuple[str, str | None], ...], int], list[_TopicState]] = {}
        for s in states:
            groups.setdefault((tuple(s.consumers), len(s.racks)), []).append(s)
        for (members_racks, num_partitions), group in groups.items():
            if len(group) > 1:
                ids = [c for c, _ in members_racks]
                _assign_co_partitioned(out, ids, num_partitions, group)
            elif group[0].needs_rack_aware:
                _assign_ranges(out, group[0], group[0].racks_match)
    for s in states:
        _assign_ranges(out, s, None)
    if rack_aware:
        for parts in out.values():
            parts.sort(key=partition_sort_key)
    return out
