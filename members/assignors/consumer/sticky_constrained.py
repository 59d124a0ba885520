"""``AbstractStickyAssignor.ConstrainedAssignmentBuilder`` (Kafka 4.0): the sticky assignment
when every member subscribes to the same topics. Each member keeps up to its quota of owned
partitions (sorted by partition, then topic), the rest are dealt round-robin to members under
quota (sorted by member id), first to members on a replica's rack when rack-aware (KIP-881).
"""

from __future__ import annotations

from functools import partial
from operator import itemgetter

from protocol.consumer_codec import TopicPartition
from protocol.java_strings import java_sorted_strings, java_string_key

from .model import GroupAssignment
from .sticky_partitions import (
    StickyAssignmentError,
    all_partitions,
    remove_first,
    unassigned_partitions,
)
from .sticky_racks import RackInfo

__all__ = ["constrained_assignment"]

_PARTITION = itemgetter(1)


def constrained_assignment(
    per_topic: dict[str, int],
    racks: RackInfo,
    owned: dict[str, list[TopicPartition]],
    owned_order: list[str],
    doubly: set[TopicPartition],
) -> tuple[GroupAssignment, dict[TopicPartition, str]]:
    """``ConstrainedAssignmentBuilder.build``.

    Args:
        per_topic: subscribed topic → partition count, in the topic map's order.
        racks: the group's :class:`~.sticky_racks.RackInfo`.
        owned: member id → the partitions it still owns (:func:`.sticky_owned.collect_owned`).
        owned_order: the member ids in the owned-partitions ``HashMap``'s order.
        doubly: partitions claimed twice in one generation (owned by nobody now).

    Returns:
        The assignment (member id → partitions, Kafka's list order) and
        ``partitionsTransferringOwnership`` (partition → new owner).

    Raises:
        StickyAssignmentError: where Kafka's builder throws (no unfilled member left).
    """
    total = sum(per_topic.values())
    n = len(owned)
    min_quota, max_quota = total // n, -(-total // n)
    expected_over = total % n
    over = 0
    assignment: GroupAssignment = {c: [] for c in owned_order}
    assigned: list[TopicPartition] = []
    maybe_revoked: dict[TopicPartition, str] = {}
    transferring: dict[TopicPartition, str] = {}
    under: list[str] = []
    exactly: list[str] = []

    # Java string order of each topic, computed once (owned partitions are of these topics).
    # Without characters beyond U+FFFF, Java's UTF-16 order is Python's code point order, so
    # the sorts below compare the (topic, partition) tuples natively instead of through keys.
    topic_key = {t: java_string_key(t) for t in per_topic}
    plain = all(len(k) == 2 * len(t) for t, k in topic_key.items())
    # Nobody keeps a partition (a fresh group) and no member has a rack: the loop below puts
    # every member, in ``owned_order``, into ``under`` (minQuota > 0) or else into ``exactly``
    # (some partitions, fewer than members), and keeps, revokes and assigns nothing.
    fresh = not racks.consumer_racks and not any(owned.values())
    if fresh and min_quota > 0:
        under = list(owned_order)
    elif fresh and total > 0:
        exactly = list(owned_order)
    for consumer in owned_order if not fresh else ():
        if consumer in racks.consumer_racks:
            keep: list[TopicPartition] = []
            for tp in owned[consumer]:
                if racks.racks_mismatch(consumer, tp):
                    maybe_revoked[tp] = consumer
                else:
                    keep.append(tp)
        else:  # a member without a rack never mismatches
            keep = list(owned[consumer])
        if len(keep) < 2:
            pass
        elif plain:  # by (topic, partition), then stably by partition: (partition, topic)
            keep.sort()
            keep.sort(key=_PARTITION)
        else:
            keep.sort(key=lambda tp: (tp.partition, topic_key[tp.topic]))
        if keep and doubly:
            for tp in doubly:
                remove_first(keep, tp)
        mine = assignment[consumer]
        if len(keep) < min_quota:
            mine.extend(keep)
            assigned.extend(keep)
            under.append(consumer)
        elif len(keep) >= max_quota and over < expected_over:
            over += 1
            if over == expected_over:
                exactly.clear()
            mine.extend(keep[:max_quota])
            assigned.extend(keep[:max_quota])
            for tp in keep[max_quota:]:
                maybe_revoked[tp] = consumer
        else:
            mine.extend(keep[:min_quota])
            assigned.extend(keep[:min_quota])
            for tp in keep[min_quota:]:
                maybe_revoked[tp] = consumer
            if over < expected_over:
                exactly.append(consumer)

    topics_sorted = sorted(per_topic, key=topic_key.__getitem__)
    every = all_partitions(topics_sorted, per_topic)
    if assigned:
        unassigned = unassigned_partitions(
            every,
            assigned,
            list.sort
            if plain
            else partial(list.sort, key=lambda tp: (topic_key[tp.topic], tp.partition)),
        )
    else:
        unassigned = every
    under = java_sorted_strings(under)
    exactly = java_sorted_strings(exactly)
    unassigned = racks.sort_by_rack_consumers(unassigned)

    if not assigned and not maybe_revoked and not doubly and not racks.consumer_racks:
        # Nobody keeps a partition (a fresh group): every member starts empty in ``under``
        # (or, when there are fewer partitions than members, in ``exactly``), in member
        # order. The round robin below then gives member i (of n) partitions i, i + n, …: each
        # full round fills every member by one, all reach minQuota in the same round and
        # move to ``exactly`` in order, and the last ``total % n`` partitions go to its
        # first members. No transfer is recorded (nothing was owned or revoked).
        order = under or exactly
        if len(order) == n:
            for i, consumer in enumerate(order):
                assignment[consumer] += unassigned[i::n]
            return assignment, transferring

    def give(tp: TopicPartition, consumer: str) -> int:
        mine = assignment[consumer]
        mine.append(tp)
        previous = maybe_revoked.get(tp)
        if (previous is not None and previous != consumer) or tp in doubly:
            transferring[tp] = consumer
        return len(mine)

    # assignRackAwareRoundRobin
    if racks.consumer_racks:
        rest: list[TopicPartition] = []
        next_index = 0
        for tp in unassigned:
            chosen: str | None = None
            index = racks.next_rack_consumer(tp, under, next_index)
            if index >= 0:
                chosen = under[index]
                count = len(assignment[chosen]) + 1
                if count >= min_quota:
                    under.remove(chosen)
                    if count < max_quota and over < expected_over:
                        exactly.append(chosen)
                else:
                    index += 1
                next_index = 0 if not under else index % len(under)
            elif exactly:
                first = racks.next_rack_consumer(tp, exactly, 0)
                if first >= 0:
                    chosen = exactly[first]
                    if len(assignment[chosen]) + 1 == max_quota:
                        del exactly[first]
                        over += 1
                        if over == expected_over:
                            exactly.clear()
            if chosen is not None:
                give(tp, chosen)
            else:
                rest.append(tp)
        unassigned = rest

    # assignRoundRobin: ``cursor`` is Java's iterator over ``under`` (index of its next element)
    cursor = 0
    check_transfer = bool(maybe_revoked or doubly)  # else give() never records a transfer
    for tp in unassigned:
        from_iterator = False
        if cursor < len(under):
            consumer = under[cursor]
            cursor += 1
            from_iterator = True
        elif not under and not exactly:
            raise StickyAssignmentError("No more unfilled consumers to be assigned.")
        elif not under:
            consumer = exactly.pop(0)
        else:
            cursor = 1
            consumer = under[0]
            from_iterator = True
        mine = assignment[consumer]  # give(), inlined: one call per partition is the cost here
        mine.append(tp)
        if check_transfer:
            previous = maybe_revoked.get(tp)
            if (previous is not None and previous != consumer) or tp in doubly:
                transferring[tp] = consumer
        count = len(mine)
        if count == min_quota:
            if not from_iterator:
                raise StickyAssignmentError("iterator remove without next (Kafka: IllegalState)")
            cursor -= 1
            del under[cursor]
            exactly.append(consumer)
        elif count == max_quota:
            over += 1

    # verifyUnfilledMembers
    if under:
        if over != expected_over:
            raise StickyAssignmentError(
                "We haven't reached the expected number of members with more than the minQuota"
                " partitions, but no more partitions to be assigned"
            )
        for consumer in under:
            if len(assignment[consumer]) != min_quota:
                raise StickyAssignmentError(
                    f"Consumer: [{consumer}] doesn't reach minQuota partitions, and no more"
                    " partitions to be assigned"
                )
    return assignment, transferring
