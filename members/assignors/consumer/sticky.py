"""Kafka's sticky consumer assignors: ``sticky`` (KIP-54, eager) and ``cooperative-sticky``
(KIP-429), both ``AbstractStickyAssignor`` of Kafka 4.0, rack-aware per KIP-881.

The assignment is balanced (partition counts differ by at most one where subscriptions allow)
and keeps as many previously owned partitions as balance permits. What a member owned, and in
which generation, comes from :mod:`.sticky_data` (KIP-341 generations settle claims of two
members on one partition: the higher generation keeps it; two claims in one generation drop
it from both).

Two paths, as in Kafka:

* **constrained** (``ConstrainedAssignmentBuilder``) when every member subscribes to the same
  topics: each member keeps up to its quota of owned partitions (sorted by partition, then
  topic), the rest are dealt round-robin to members under quota (sorted by member id), first
  to members on a replica's rack when rack-aware;
* **general** (``GeneralAssignmentBuilder``) otherwise: keep valid ownership, give each
  unassigned partition to the least-loaded subscribed member, then move partitions one by one
  towards balance (back to their previous-generation owner where that helps), reverting if the
  balance score did not improve.

``cooperative-sticky`` then removes from the result every partition that changes owner
(``CooperativeStickyAssignor.adjustAssignment``): its current owner must revoke it first, and
the follow-up rebalance hands it over.

Java's ``HashMap``/``HashSet``/``TreeSet`` orders that reach the result are replayed: the
leader's member map (:func:`.model.member_order`), the topic map, ``TreeSet`` of members by
(assigned count, member id), and the ``HashSet`` of moved partitions whose first element
``PartitionMovements`` picks (``TopicPartition.hashCode``). Checked against Kafka's classes on
multi-generation examples in ``tests/kafka_oracle/test_consumer_sticky_differential.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import chain, filterfalse
from operator import attrgetter, itemgetter

from protocol.consumer_codec import Subscription, TopicPartition
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash, topic_partition_hash
from protocol.java_hashmap import JavaHashMap
from protocol.java_strings import java_sorted_strings, java_string_key

from .model import (
    ClusterTopics,
    ConsumerMember,
    GroupAssignment,
    member_order,
    partition_racks,
    subscribed_topic_order,
    topic_partitions,
)
from .range import use_rack_aware_assignment
from .sticky_data import (
    BATCHED_READERS,
    DEFAULT_GENERATION,
    MemberData,
    cooperative_member_data,
    sticky_member_data,
    subscription_generation,
)

__all__ = [
    "STICKY",
    "COOPERATIVE_STICKY",
    "StickyAssignmentError",
    "StickyResult",
    "assign_sticky",
    "assign_cooperative_sticky",
    "sticky_assignment",
]

#: ``StickyAssignor.STICKY_ASSIGNOR_NAME``.
STICKY = "sticky"
#: ``CooperativeStickyAssignor.COOPERATIVE_STICKY_ASSIGNOR_NAME``.
COOPERATIVE_STICKY = "cooperative-sticky"


class StickyAssignmentError(RuntimeError):
    """Kafka's sticky assignor fails on these inputs (an ``IllegalStateException`` such as "No
    more unfilled consumers to be assigned", or a ``NullPointerException`` on owned partitions
    it cannot place); the leader's ``assign`` throws and the group gets no assignment."""


def _tp_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode`` (:func:`protocol.java_hashing.topic_partition_hash`)."""
    return topic_partition_hash(tp.topic, tp.partition)


def _remove_first(items: list[TopicPartition], tp: TopicPartition) -> None:
    """``List.remove(Object)``: drop the first occurrence, if any."""
    if tp in items:
        items.remove(tp)


def _generation_or_default(g: int | None) -> int:
    return DEFAULT_GENERATION if g is None else g


class StickyResult:
    """One ``assign`` call's outcome.

    Attributes:
        assignment: member id → partitions, in the order Kafka lists them.
        max_generation: the assignor's ``maxGeneration()`` after the call (it never decreases:
            a leader's assignor instance keeps the highest generation it has seen).
        transferring: partition → new owner for partitions that change owner
            (``partitionsTransferringOwnership``), or ``None`` when the general path ran (the
            cooperative assignor then derives them from owned and assigned partitions).
    """

    __slots__ = ("assignment", "max_generation", "transferring")

    def __init__(
        self,
        assignment: GroupAssignment,
        max_generation: int,
        transferring: dict[TopicPartition, str] | None,
    ) -> None:
        self.assignment = assignment
        self.max_generation = max_generation
        self.transferring = transferring


# ------------------------------------------------------------------------------ racks


class _RackInfo:
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
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        replicas = self.partition_racks.get(tp)
        return replicas is None or rack not in replicas

    def sort_by_rack_consumers(self, parts: list[TopicPartition]) -> list[TopicPartition]:
        if not self.num_consumers:
            return parts
        return sorted(parts, key=lambda tp: self.num_consumers.get(tp, 0))

    def next_rack_consumer(self, tp: TopicPartition, consumers: list[str], first: int) -> int:
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        for i in range(len(consumers)):
            index = (first + i) % len(consumers)
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1


# ------------------------------------------------------------------------------ owned partitions


def _collect_owned(
    ordered: Sequence[ConsumerMember],
    per_topic: dict[str, int],
    member_data: Callable[[Subscription], MemberData],
    max_generation: int,
) -> tuple[bool, dict[str, list[TopicPartition]], set[TopicPartition], int]:
    """``allSubscriptionsEqual``: whether every member lists the same topics, each member's
    owned partitions still valid (higher generation wins a double claim, equal generations lose
    it both), the partitions claimed twice in one generation, and the new ``maxGeneration``.

    Each distinct subscription is read once (members sending the same bytes share one decoded
    :class:`Subscription`). When no partition is claimed twice and every claimed topic is
    still subscribed (a group that settled), Kafka's walk keeps every claim in order: that is
    checked once over all claims (one set of them, in C) instead of member by member."""
    equal = True
    topics: set[str] = set()
    same: tuple[str, ...] | None = None  # a topics tuple already found equal to ``topics``
    read: dict[int, tuple[MemberData, int]] = {}
    reads: list[tuple[MemberData, int]] = []
    # many distinct subscriptions (a settled group): their member data read together
    batch = BATCHED_READERS.get(member_data)
    ahead: dict[int, MemberData] = {}
    if batch is not None and len(ordered) >= 32:
        distinct = list({id(s): s for s in map(_SUBSCRIPTION, ordered)}.values())
        together = batch(distinct) if len(distinct) >= 32 else None
        if together is not None:
            ahead = dict(zip(map(id, distinct), together, strict=True))
    for sub in map(_SUBSCRIPTION, ordered):
        known = read.get(id(sub))
        if known is None:
            sub_topics = sub.topics
            if sub_topics is not same:  # members alike share one topics tuple too
                if not topics:
                    topics.update(sub_topics)
                elif equal and not (
                    len(sub_topics) == len(topics) and topics.issuperset(sub_topics)
                ):
                    equal = False
                if equal:
                    same = sub_topics
            data = ahead.get(id(sub)) or member_data(sub)
            generation = DEFAULT_GENERATION if data.generation is None else data.generation
            known = read[id(sub)] = (data, generation)
            if generation > max_generation:
                max_generation = generation
        reads.append(known)
    claims = [data.partitions for data, _ in reads]
    claimed = list(chain.from_iterable(claims))
    if len(set(claimed)) == len(claimed) and set(per_topic).issuperset(map(_TOPIC, claimed)):
        owned = dict(zip(map(_MEMBER_ID, ordered), map(list, claims), strict=True))
        return equal, owned, set(), max_generation
    owned, doubly = _settle_claims(ordered, per_topic, reads)
    return equal, owned, doubly, max_generation


def _settle_claims(
    ordered: Sequence[ConsumerMember],
    per_topic: dict[str, int],
    reads: list[tuple[MemberData, int]],
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]]:
    """``AbstractStickyAssignor.allSubscriptionsEqual``'s walk over the members' claims
    (``reads``: each member's :class:`MemberData` and generation, in ``ordered``'s order): a
    partition claimed again goes to the higher generation, and is dropped from both claims in
    the same generation (returned as claimed twice); claims of unknown topics are skipped."""
    owned: dict[str, list[TopicPartition]] = {}
    owner_of: dict[TopicPartition, str] = {}
    doubly: set[TopicPartition] = set()
    by_id = {m.member_id: m for m in ordered}
    all_known = set(per_topic)
    for m, (data, generation) in zip(ordered, reads, strict=True):
        mine: list[TopicPartition] = []
        owned[m.member_id] = mine
        partitions = data.partitions
        if not partitions:  # nothing claimed (a member joining empty)
            continue
        if not all_known.issuperset(map(_TOPIC, partitions)):
            partitions = [tp for tp in partitions if tp.topic in per_topic]
        claims = dict.fromkeys(partitions, m.member_id)
        if len(claims) == len(partitions) and owner_of.keys().isdisjoint(claims):
            # no partition claimed twice: the loop below would keep each one, in order
            mine += partitions
            owner_of.update(claims)
            continue
        for tp in partitions:
            if tp.topic not in per_topic:
                continue
            other = owner_of.get(tp)
            if other is None:
                mine.append(tp)
                owner_of[tp] = m.member_id
                continue
            other_generation = _generation_or_default(
                subscription_generation(by_id[other].subscription)
            )
            if generation == other_generation:
                doubly.add(tp)
                _remove_first(owned[other], tp)
                owner_of[tp] = m.member_id
            elif generation > other_generation:
                mine.append(tp)
                _remove_first(owned[other], tp)
                owner_of[tp] = m.member_id
    return owned, doubly


_SUBSCRIPTION = attrgetter("subscription")
_MEMBER_ID = attrgetter("member_id")
_TOPIC = itemgetter(0)
_RACK_ID = attrgetter("subscription.rack_id")
_PARTITION = itemgetter(1)
_new_tp = partial(tuple.__new__, TopicPartition)


def _all_partitions(topics: Iterable[str], per_topic: dict[str, int]) -> list[TopicPartition]:
    """Every partition of ``topics`` in that order, partitions ascending (the tuples built by
    ``tuple.__new__`` in C, without ``TopicPartition``'s Python-level constructor)."""
    out: list[TopicPartition] = []
    for t in topics:
        out += topic_partitions(t, per_topic[t])
    return out


def _unassigned(
    all_sorted: list[TopicPartition],
    assigned: list[TopicPartition],
    sort_assigned: Callable[[list[TopicPartition]], None],
) -> list[TopicPartition]:
    """``getUnassignedPartitions``: ``all_sorted`` minus ``assigned`` by Kafka's two-pointer
    walk over both in one order (``sort_assigned`` sorts ``assigned`` into it); once the
    assigned list is used up, the rest is taken as is.

    When the assigned partitions are distinct and all in ``all_sorted`` (the usual case), the
    walk matches each of them in turn, so the result is ``all_sorted`` without them, in order:
    taken with one set lookup per partition in C, without sorting ``assigned``. Otherwise (an
    owned partition beyond its topic's count stalls Kafka's walk) the walk itself runs."""
    taken = set(assigned)
    if len(taken) == len(assigned):
        rest = list(filterfalse(taken.__contains__, all_sorted))
        if len(rest) + len(taken) == len(all_sorted):
            return rest
    sort_assigned(assigned)
    out: list[TopicPartition] = []
    it = iter(assigned)
    nxt = next(it)
    direct = False
    for tp in all_sorted:
        if direct or nxt != tp:
            out.append(tp)
        else:
            try:
                nxt = next(it)
            except StopIteration:
                direct = True
    return out


# ------------------------------------------------------------------------------ constrained


def _constrained(
    per_topic: dict[str, int],
    racks: _RackInfo,
    owned: dict[str, list[TopicPartition]],
    owned_order: list[str],
    doubly: set[TopicPartition],
) -> tuple[GroupAssignment, dict[TopicPartition, str]]:
    """``ConstrainedAssignmentBuilder.build``; returns the assignment and
    ``partitionsTransferringOwnership``."""
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
                _remove_first(keep, tp)
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
    every = _all_partitions(topics_sorted, per_topic)
    if assigned:
        unassigned = _unassigned(
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


# ------------------------------------------------------------------------------ general


class _Movements:
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
        if tp in self.moves:
            src, _ = self._remove(tp)
            if src != new:
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        per_pair = self.by_topic.get(tp.topic)
        if per_pair is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        moved_back = per_pair.get((new, old))
        if moved_back is None:
            return tp
        return next(iter(moved_back))


class _General:
    """``GeneralAssignmentBuilder``: state of one general-path assignment."""

    def __init__(
        self,
        ordered: Sequence[ConsumerMember],
        per_topic: dict[str, int],
        racks: _RackInfo,
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
        self.all_partitions = _all_partitions(topics, per_topic)
        self.members: set[str] = set()  # the TreeSet's content; order from _sorted_members
        self.revocation_required = False
        self.movements = _Movements()

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
        prev: dict[TopicPartition, tuple[str, int]] = {}
        for m in ordered:  # prepopulateCurrentAssignments
            data = member_data(m.subscription)
            if data.generation is not None and data.generation < max_generation:
                self._update_prev(prev, data.partitions, m.member_id, data.generation)
            elif data.generation is None and max_generation > DEFAULT_GENERATION:
                self._update_prev(prev, data.partitions, m.member_id, DEFAULT_GENERATION)
        assigned = self._assign_owned()
        if assigned:
            unassigned = _unassigned(
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

    def _maybe_assign_partition(self, tp: TopicPartition, racks: _RackInfo | None) -> bool:
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
        _remove_first(self.current[old], tp)
        self.current[new].append(tp)
        self.partition_consumer[tp] = new


# ------------------------------------------------------------------------------ entry points


def sticky_assignment(
    members: Sequence[ConsumerMember],
    cluster: ClusterTopics,
    member_data: Callable[[Subscription], MemberData],
    max_generation: int = DEFAULT_GENERATION,
) -> StickyResult:
    """``AbstractStickyAssignor.assignPartitions`` reached through ``assign(Cluster,
    GroupSubscription)``.

    Args:
        members: the JoinGroup members in JoinGroup order (distinct member ids).
        cluster: topic → partitions' replica racks.
        member_data: how the assignor reads a member's previous partitions and generation
            (:func:`.sticky_data.sticky_member_data` or ``cooperative_member_data``).
        max_generation: the assignor instance's ``maxGeneration`` before the call (-1 for a
            fresh instance).

    Raises:
        StickyAssignmentError: where Kafka's assignor throws.
    """
    ordered = member_order(members)
    per_topic = {t: len(cluster[t]) for t in subscribed_topic_order(ordered, cluster)}
    racks = _RackInfo(ordered, per_topic, cluster)
    equal, owned, doubly, max_generation = _collect_owned(
        ordered, per_topic, member_data, max_generation
    )
    # the HashMap of owned partitions, filled in ``ordered``'s order, iterates in this order
    owned_order = hash_order([m.member_id for m in ordered], string_hash)
    if equal:
        assignment, transferring = _constrained(per_topic, racks, owned, owned_order, doubly)
        return StickyResult(assignment, max_generation, transferring)
    general = _General(ordered, per_topic, racks, owned, owned_order)
    return StickyResult(general.build(ordered, member_data, max_generation), max_generation, None)


def assign_sticky(members: Sequence[ConsumerMember], cluster: ClusterTopics) -> GroupAssignment:
    """``StickyAssignor.assign(Cluster, GroupSubscription)`` of a fresh assignor: previous
    partitions and generations from each member's user data (:mod:`.sticky_data`).

    Returns:
        Member id → partitions in Kafka's list order, for every member.

    Raises:
        StickyAssignmentError: where Kafka's assignor throws.
    """
    return sticky_assignment(members, cluster, sticky_member_data).assignment


def cooperative_adjust(members: Sequence[ConsumerMember], result: StickyResult) -> GroupAssignment:
    """``CooperativeStickyAssignor.assignPartitions``' second half: drop from the assignment
    every partition moving to a new owner (``adjustAssignment``); after the general path the
    moving partitions are those assigned to a member that did not own them and owned by a member
    no longer assigned them (``computePartitionsTransferringOwnership``)."""
    assignment = result.assignment
    transferring = result.transferring
    if transferring is None:
        owned = {m.member_id: m.subscription.owned_partitions for m in members}
        added: dict[TopicPartition, str] = {}
        revoked: set[TopicPartition] = set()
        for consumer, parts in assignment.items():
            mine = set(owned[consumer])
            for tp in parts:
                if tp not in mine:
                    added[tp] = consumer
            now = set(parts)
            revoked.update(tp for tp in owned[consumer] if tp not in now)
        transferring = {tp: c for tp, c in added.items() if tp in revoked}
    for tp, consumer in transferring.items():
        _remove_first(assignment[consumer], tp)
    return assignment


def assign_cooperative_sticky(
    members: Sequence[ConsumerMember], cluster: ClusterTopics
) -> GroupAssignment:
    """``CooperativeStickyAssignor.assign(Cluster, GroupSubscription)`` of a fresh assignor:
    owned partitions from the subscriptions, generations from ``generationId`` (v2+) or the
    user data, and partitions changing owner left out until their owner revoked them.

    Raises:
        StickyAssignmentError: where Kafka's assignor throws.
    """
    result = sticky_assignment(members, cluster, cooperative_member_data)
    return cooperative_adjust(members, result)
